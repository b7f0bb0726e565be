"""Run-time indices into axes of symbolic size: checked against the run's size, end to end.

`insert-runtime-checks` puts a `graph.check_indices` with a symbolic bound before each
Gather / GatherElements / GatherND / ScatterElements / ScatterND that indexes a `seq` axis
(a torch loop's `x[t:t+1]`, a token lookup); its kernel compares against the size the run
binds, and the consumer clamps with the same size. Each model here is compiled once, cold
then warm from the cache, and run at two sizes against onnxruntime (exact: gathers and
scatters move values, they compute nothing). Out-of-range indices raise InvalidInputError
naming the node, the bad value and the range of that run: an index valid at the larger size
is refused at the smaller one, which proves the bound is the run's, not a compile-time one.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper
from xdsl.utils.exceptions import VerifyException

import onnxc
from onnxc.dialects.check_failures import check_failure
from onnxc.errors import InvalidInputError, ModelLoadError
from onnxc.passes.insert_checks import InsertRuntimeChecksPass
from onnxc.pipeline import make_context
from tests.ir_helpers import compile_graph, parse_graph
from tests.single_op import graph_model, single_op_model

F, I = TensorProto.FLOAT, TensorProto.INT64
SIZES = (3, 9)
"""two run sizes of `seq`: an index in [3, 9) is valid only at the larger"""


def make_model(op: str, inputs, output_shape, initializers=(), **attrs) -> onnx.ModelProto:
    """One `op` node named `pick` (plus constant initializers) with a `seq` dim_param:
    `inputs` are (name, element type, shape) triples, `initializers` (name, value) pairs."""
    return single_op_model(op, {n: (t, s) for n, t, s in inputs}, {"y": (F, output_shape)},
                           attrs=attrs, initializers=dict(initializers), node_name="pick",
                           opset=18, graph_name="g")


def compile_cold_and_warm(model, tmp_path):
    cold = onnxc.compile(model, cache_dir=tmp_path)
    warm = onnxc.compile(model, cache_dir=tmp_path)
    assert not cold.from_cache and warm.from_cache
    return cold, warm


def run_ort(model, feeds):
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]


def assert_matches_ort(models, model, feeds) -> None:
    want = run_ort(model, feeds)
    for compiled in models:
        (got,) = compiled.run(None, feeds)
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def assert_refused(models, feeds, value, seq) -> None:
    """Every model refuses `feeds` naming the node, `value` and the range at this `seq`."""
    for compiled in models:
        with pytest.raises(InvalidInputError) as info:
            compiled.run(None, feeds)
        message = str(info.value)
        assert "node 'pick'" in message and f"value {value} at position" in message
        assert f"(seq = {seq})" in message, message


rng = np.random.default_rng(11)


def floats(*shape):
    return rng.standard_normal(shape).astype(np.float32)


# --------------------------------------------------------------------------- Gather


def test_gather_rows_of_a_symbolic_axis(tmp_path):
    """Token rows of [seq, 8] at run-time positions, negative ones wrapping (ONNX)."""
    model = make_model("Gather", [("x", F, ["seq", 8]), ("i", I, [4])], [4, 8], axis=0)
    models = compile_cold_and_warm(model, tmp_path)
    for seq in SIZES:
        indices = np.array([0, seq - 1, -1, -seq])
        assert_matches_ort(models, model, {"x": floats(seq, 8), "i": indices})
        assert_matches_ort(models, model, {"x": floats(seq, 8),
                                           "i": rng.integers(-seq, seq, 4)})
    x = floats(3, 8)
    for bad in (3, 5, -4):  # valid at seq = 9, not at 3
        assert_refused(models, {"x": x, "i": np.array([0, 1, bad, 2])}, bad, 3)
        assert_matches_ort(models, model, {"x": floats(9, 8), "i": np.array([0, 1, bad, 2])})
    with pytest.raises(InvalidInputError, match=r"indices value 5 at position 2 is out of "
                                                r"range \[-3, 2\] \(seq = 3\)"):
        models[0].run(None, {"x": x, "i": np.array([0, 1, 5, 2])})


def test_gather_of_a_step_of_a_loop(tmp_path):
    """torch's `x[t:t+1]` (Slice with run-time starts, ends = starts + 1): starts in
    [0, seq), checked against this run's seq."""
    one, axes = np.array([1]), np.array([0])
    nodes = [helper.make_node("Add", ["t", "one"], ["e"], name="plus"),
             helper.make_node("Slice", ["x", "t", "e", "axes"], ["y"], name="pick")]
    model = graph_model(nodes, {"x": (F, ["seq", 8]), "t": (I, [1])}, {"y": (F, [1, 8])},
                        initializers={"one": one, "axes": axes}, opset=18)
    models = compile_cold_and_warm(model, tmp_path)
    for seq in SIZES:
        for t in (0, seq // 2, seq - 1):
            assert_matches_ort(models, model, {"x": floats(seq, 8), "t": np.array([t])})
    assert_refused(models, {"x": floats(3, 8), "t": np.array([5])}, 5, 3)
    with pytest.raises(InvalidInputError, match=r"starts value -1 .* \[0, 2\] \(seq = 3\)"):
        models[1].run(None, {"x": floats(3, 8), "t": np.array([-1])})


def test_constant_index_some_sizes_admit_is_checked_at_run_time():
    """Row 4 of a `seq` axis (a constant: graph IR, as the importer settles an ONNX Gather's
    constant indices itself): fine at seq = 9, refused at 3; -1 (valid at every size) needs
    no check. Compared with numpy (the model is not ONNX)."""
    x_type = 'tensor<?x8xf32, #graph.dims<["seq"]>>'
    model = compile_graph(f"""
func.func @main(%x: {x_type}) -> tensor<2x8xf32> {{
  %i = graph.constant {{value = dense<[-1, 4]> : tensor<2xi64>}} : tensor<2xi64>
  %y = graph.gather(%x, %i) {{onnx.node = "pick", axis = 0 : i64}} : ({x_type}, tensor<2xi64>) -> tensor<2x8xf32>
  func.return %y : tensor<2x8xf32>
}}""")
    x = floats(9, 8)
    np.testing.assert_array_equal(model(x)[0], x[[-1, 4]])
    with pytest.raises(InvalidInputError, match=r"node 'pick' \(Gather\): indices value 4 at "
                                                r"position 1 is out of range \[-3, 2\] "
                                                r"\(seq = 3\)"):
        model(floats(3, 8))


# ----------------------------------------------------------------- GatherElements / GatherND


def test_gather_elements_along_a_symbolic_axis(tmp_path):
    model = make_model("GatherElements", [("x", F, [4, "seq"]), ("i", I, [4, 3])], [4, 3],
                       axis=1)
    models = compile_cold_and_warm(model, tmp_path)
    for seq in SIZES:
        indices = rng.integers(-seq, seq, (4, 3))
        indices[0] = [-seq, -1, seq - 1]
        assert_matches_ort(models, model, {"x": floats(4, seq), "i": indices})
    indices = np.zeros((4, 3), np.int64)
    indices[2, 1] = 7  # position 7
    assert_refused(models, {"x": floats(4, 3), "i": indices}, 7, 3)
    assert_matches_ort(models, model, {"x": floats(4, 9), "i": indices})


def test_gather_nd_of_a_symbolic_and_a_static_axis(tmp_path):
    """Tuples (row of `seq`, column of 4): each column against its own extent."""
    model = make_model("GatherND", [("x", F, ["seq", 4]), ("i", I, [3, 2])], [3])
    models = compile_cold_and_warm(model, tmp_path)
    for seq in SIZES:
        indices = np.stack([rng.integers(-seq, seq, 3), rng.integers(-4, 4, 3)], 1)
        assert_matches_ort(models, model, {"x": floats(seq, 4), "i": indices})
    indices = np.array([[0, 0], [1, 3], [6, 1]])
    assert_refused(models, {"x": floats(3, 4), "i": indices}, 6, 3)
    assert_matches_ort(models, model, {"x": floats(9, 4), "i": indices})
    with pytest.raises(InvalidInputError, match=r"value 4 at position 3 is out of range "
                                                r"\[-4, 3\] \(seq = 9\)"):
        models[0].run(None, {"x": floats(9, 4), "i": np.array([[0, 0], [1, 4], [2, 1]])})


# --------------------------------------------------------------------------- scatters


@pytest.mark.parametrize("reduction", ["none", "add"])
def test_scatter_elements_into_a_symbolic_axis(reduction, tmp_path):
    model = make_model("ScatterElements", [("x", F, [2, "seq"]), ("i", I, [2, 2]),
                                           ("u", F, [2, 2])], [2, "seq"], axis=1,
                       reduction=reduction)
    models = compile_cold_and_warm(model, tmp_path)
    for seq in SIZES:
        indices = np.array([[0, -1], [seq - 1, -seq]]) if seq > 1 else np.zeros((2, 2))
        assert_matches_ort(models, model, {"x": floats(2, seq), "i": indices,
                                           "u": floats(2, 2)})
    indices = np.array([[0, 1], [-8, 2]])
    assert_refused(models, {"x": floats(2, 3), "i": indices, "u": floats(2, 2)}, -8, 3)
    assert_matches_ort(models, model, {"x": floats(2, 9), "i": indices, "u": floats(2, 2)})


def test_scatter_nd_rows_of_a_symbolic_axis(tmp_path):
    """A KV-cache style write: rows of [2, seq, 4] at run-time (batch, position) pairs."""
    model = make_model("ScatterND", [("x", F, [2, "seq", 4]), ("i", I, [2, 2]),
                                     ("u", F, [2, 4])], [2, "seq", 4])
    models = compile_cold_and_warm(model, tmp_path)
    for seq in SIZES:
        indices = np.array([[0, seq - 1], [-1, -seq]])
        assert_matches_ort(models, model, {"x": floats(2, seq, 4), "i": indices,
                                           "u": floats(2, 4)})
    indices = np.array([[0, 0], [1, 4]])
    assert_refused(models, {"x": floats(2, 3, 4), "i": indices, "u": floats(2, 4)}, 4, 3)
    assert_matches_ort(models, model, {"x": floats(2, 9, 4), "i": indices, "u": floats(2, 4)})


# --------------------------------------------------------------------------- IR and messages


def _insert_checks(text: str):
    module = parse_graph(text)
    InsertRuntimeChecksPass().apply(make_context(), module)
    return module


def test_check_op_names_its_symbols_and_describes_its_range():
    module = _insert_checks("""
func.func @main(%x: tensor<2x?xf32, #graph.dims<["past+seq"]>>, %i: tensor<3x2xi64>) -> tensor<3xf32> {
  %y = graph.gather_nd(%x, %i) {batch_dims = 0 : i64} : (tensor<2x?xf32, #graph.dims<["past+seq"]>>, tensor<3x2xi64>) -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}""")
    (check,) = [op for op in module.walk() if op.name == "graph.check_indices"]
    assert check.size_symbols() == {"past", "seq"}
    assert check.allowed(0) == (-2, 1)
    assert [str(d) for d in check.allowed(1)] == ["-past-seq", "past+seq-1"]
    assert check.allowed(1, {"past": 4, "seq": 3}) == (-7, 6)
    site = check.site()
    assert "ranges" not in site and site["symbolic_ranges"] == "-2,1;-past-seq,past+seq-1"
    sized = check_failure(site, 3, 9, sizes={"past": 4, "seq": 3})
    assert str(sized).endswith("value 9 at position 3 is out of range [-7, 6] "
                               "(past = 4, seq = 3)")
    unsized = check_failure(site, 3, 9)  # no run's sizes: the polynomials
    assert str(unsized).endswith("out of range [-past-seq, past+seq-1]")


def test_symbolic_bounds_must_match_the_minus_ones():
    text = """
func.func @main(%i: tensor<2xi64>) {{
  graph.check_indices(%i) {{{props}, negative = 1 : i64, node = "n", op_type = "Gather", operand = "indices"}} : tensor<2xi64>
  func.return
}}"""
    module = parse_graph(text.format(
        props='bounds = array<i64: -1>, symbolic_bounds = #graph.dims<["seq"]>'))
    module.verify()
    for props in ('bounds = array<i64: -1>',
                  'bounds = array<i64: 4>, symbolic_bounds = #graph.dims<["seq"]>',
                  'bounds = array<i64: -2>'):
        with pytest.raises(VerifyException, match="bounds"):
            parse_graph(text.format(props=props)).verify()


def test_negative_constant_where_none_is_allowed_is_a_load_error():
    """A constant sequence length of -1 is out of range at every size of `seq`."""
    with pytest.raises(ModelLoadError, match=r"node 'rev' \(ReverseSequence\): constant "
                                             r"sequence_lens value -1 .* at every size"):
        _insert_checks("""
func.func @main(%x: tensor<?x2xf32, #graph.dims<["seq"]>>) -> tensor<?x2xf32, #graph.dims<["seq"]>> {
  %l = graph.constant {value = dense<[1, -1]> : tensor<2xi64>} : tensor<2xi64>
  %y = graph.reverse_sequence(%x, %l) {onnx.node = "rev", batch_axis = 1 : i64, time_axis = 0 : i64} : (tensor<?x2xf32, #graph.dims<["seq"]>>, tensor<2xi64>) -> tensor<?x2xf32, #graph.dims<["seq"]>>
  func.return %y : tensor<?x2xf32, #graph.dims<["seq"]>>
}""")
