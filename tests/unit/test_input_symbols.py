"""A dim_param shared by inputs no path reads together names independent sizes
(frontend/input_symbols.py), as optimum's merged Whisper decoder needs at prefill: an empty
encoder cache read in one If branch, the encoder states of the same dim_param in the other.

Checked: which inputs split (If branches, nesting, a read outside the If, a Loop body, an
input returned as it is), a compiled If whose branches read the two inputs at different
sizes against onnxruntime (exact: Relu and Neg), and that inputs meeting in one op keep one
symbol whose mismatch the run refuses naming both inputs.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnx.parser
import onnxruntime as ort
import pytest

import onnxc
from onnxc.errors import InvalidArgumentError, InvalidInputError
from onnxc.frontend.batch_axes import check_fixed_shapes
from onnxc.frontend.input_symbols import split_symbols

HEADER = '<ir_version: 8, opset_import: ["" : 17]>\n'


def parse(text: str) -> onnx.ModelProto:
    return onnx.parser.parse_model(HEADER + text)


SPLIT = parse("""
g (bool c, float[n, 4] a, float[n, 4] b) => (float[m, 4] y) {
  y = If (c) <
    then_branch = t () => (float[k, 4] ya) { ya = Relu (a) },
    else_branch = e () => (float[k, 4] yb) { yb = Neg (b) }>
}""")

MEET = parse("""
g (bool c, float[n, 4] a, float[n, 4] b) => (float[n, 4] y) {
  y = If (c) <
    then_branch = t () => (float[n, 4] ya) { ya = Add (a, b) },
    else_branch = e () => (float[n, 4] yb) { yb = Neg (b) }>
}""")


def split(m: onnx.ModelProto) -> dict[str, dict[str, str]]:
    return split_symbols(m.graph, m.graph.input)


def test_inputs_read_only_in_different_branches_split():
    assert split(SPLIT) == {"b": {"n": "n_2"}}
    assert split(MEET) == {}


def test_a_read_outside_the_if_or_in_a_loop_body_keeps_one_symbol():
    outside = parse("""
g (bool c, float[n, 4] a, float[n, 4] b, float[n, 4] d) => (float[m, 4] y, float[n, 4] z) {
  y = If (c) <
    then_branch = t () => (float[k, 4] ya) { ya = Relu (a) },
    else_branch = e () => (float[k, 4] yb) { yb = Neg (b) }>
  z = Relu (d)
}""")
    assert split(outside) == {}  # d may meet a (then) and b (else): n == n for all three
    loop = parse("""
g (int64 trips, bool c, float[n, 4] a, float[n, 4] b) => (float[s, n, 4] y) {
  y = Loop (trips, c) <body = l (int64 i, bool ci) => (bool co, float[n, 4] yo) {
    co = Not (ci)
    yo = If (ci) <
      then_branch = t () => (float[n, 4] ya) { ya = Relu (a) },
      else_branch = e () => (float[n, 4] yb) { yb = Neg (b) }>
  }>
}""")
    assert split(loop) == {}  # iterations take both branches into one scan output


def test_nested_ifs_and_an_input_returned_as_it_is():
    nested = parse("""
g (bool c, float[n] a, float[n] b, float[n] d) => (float[m] y) {
  y = If (c) <
    then_branch = t () => (float[k] ya) {
      ya = If (c) <
        then_branch = t2 () => (float[j] yt) { yt = Relu (a) },
        else_branch = e2 () => (float[j] ye) { ye = Identity (b) }> },
    else_branch = e () => (float[k] yb) { yb = Neg (d) }>
}""")
    assert split(nested) == {"b": {"n": "n_2"}, "d": {"n": "n_3"}}
    returned = parse("""
g (bool c, float[n] a, float[n] b) => (float[m] y, float[n] r) {
  y = If (c) <
    then_branch = t () => (float[n] ya) { ya = Identity (a) },
    else_branch = e () => (float[n] yb) { yb = Identity (b) }>
  r = Identity (b)
}""")
    assert split(returned) == {}


def test_split_inputs_run_at_different_sizes_as_onnxruntime(tmp_path):
    """One compile; each branch's input at its own size, the If's output the taken one's."""
    compiled = onnxc.compile(SPLIT, cache_dir=tmp_path)
    session = ort.InferenceSession(SPLIT.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    for c, na, nb in ((False, 0, 5), (True, 3, 0), (True, 6, 2), (False, 1, 1)):
        feeds = {"c": np.array(c), "a": rng.standard_normal((na, 4)).astype(np.float32),
                 "b": rng.standard_normal((nb, 4)).astype(np.float32)}
        (ours,), (theirs,) = compiled.run(None, feeds), session.run(None, feeds)
        assert ours.shape == theirs.shape == ((na if c else nb), 4)
        np.testing.assert_array_equal(ours, theirs)


def test_inputs_that_meet_in_one_op_are_still_checked_equal(tmp_path):
    compiled = onnxc.compile(MEET, cache_dir=tmp_path)
    a, b = np.ones((3, 4), np.float32), np.ones((5, 4), np.float32)
    with pytest.raises(InvalidInputError, match=r"input 'b' has 5 .* input 'a' gives 'n' = 3"):
        compiled.run(None, {"c": np.array(False), "a": a, "b": b})
    (y,) = compiled.run(None, {"c": np.array(True), "a": a, "b": a})
    np.testing.assert_array_equal(y, 2 * a)


def test_fixed_input_shapes_follow_the_same_groups():
    check_fixed_shapes(SPLIT.graph, {"a": (0, 4), "b": (5, 4)})
    with pytest.raises(InvalidArgumentError, match="names both 'n'"):
        check_fixed_shapes(MEET.graph, {"a": (0, 4), "b": (5, 4)})
