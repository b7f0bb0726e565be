"""Shape rules whose sizes divide, clamp or must agree, compiled once with symbolic sizes.

Each model is compiled once and run at several sizes (0 included where the model is
valid there) against onnxruntime; where a shape rule needed something of the sizes that
they leave open (a squeezed axis is 1, the inner dimensions of a MatMul agree, an equal
split divides), a run at sizes that break it is an InvalidInputError naming the node and
the condition, before any kernel runs. Outputs must be equal within 1e-5 (the same f32
operations in the same order as onnxruntime, or none: these are data movements).
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import onnxc
from onnxc.errors import InvalidInputError
from onnxc.frontend.onnx_model import parse_text

CASES = {
    "slice_from_2": (
        "g (float[1,seq,4] x) => (y) <int64[1] two = {2}, int64[1] end = {100}, "
        "int64[1] ax = {1}> { y = Slice(x, two, end, ax) }",
        [{"x": (1, 5, 4)}, {"x": (1, 1, 4)}, {"x": (1, 0, 4)}]),
    "slice_to_a_size": (
        "g (float[seq,4] x, float[1,64,8] bias) => (y) <int64[1] zero = {0}, "
        "int64[1] ax = {1}> { s = Shape(x) n = Slice(s, zero, ax) y = Slice(bias, zero, n, ax) }",
        [{"x": (3, 4), "bias": (1, 64, 8)}, {"x": (100, 4), "bias": (1, 64, 8)},
         {"x": (0, 4), "bias": (1, 64, 8)}]),
    "slice_between_sizes": (
        "g (float[1,total,4] x, float[past,2] p) => (y) <int64[1] zero = {0}, int64[1] ax = {1},"
        " int64[1] two = {2}> { s = Shape(p) a = Slice(s, zero, ax) t = Shape(x) "
        "b = Slice(t, ax, two) y = Slice(x, a, b, ax) }",
        [{"x": (1, 7, 4), "p": (3, 2)}, {"x": (1, 2, 4), "p": (5, 2)}]),
    "range_from_past": (
        "g (float[1,2,past,4] pk, int64[1,seq] ids) => (y) <int64 one = {1}, int64 two = {2}> "
        "{ s = Shape(pk) p = Gather(s, two) t = Shape(ids) q = Gather(t, one) e = Add(p, q) "
        "y = Range(p, e, one) }",
        [{"pk": (1, 2, 3, 4), "ids": (1, 2)}, {"pk": (1, 2, 0, 4), "ids": (1, 5)}]),
    "equal_of_sizes": (
        "g (float[1,seq] x) => (y) <int64[1] one = {1}> "
        "{ s = Shape(x) e = Equal(s, one) y = Where(e, s, s) }",
        [{"x": (1, 3)}, {"x": (1, 1)}]),
    "reshape_infers": (
        "g (float[1,seq,6] x) => (y) <int64[2] s = {-1, 4}> { y = Reshape(x, s) }",
        [{"x": (1, 2, 6)}, {"x": (1, 4, 6)}, {"x": (1, 0, 6)}]),
    "split_equal_parts": (
        "g (float[seq,6] x) => (a, b, c) { a, b, c = Split<axis = 0>(x) }",
        [{"x": (6, 6)}, {"x": (9, 6)}]),
    "squeeze": (
        "g (float[1,seq,8] x) => (y) <int64[1] ax = {1}> { y = Squeeze(x, ax) }",
        [{"x": (1, 1, 8)}]),
    "matmul_of_unknowns": (
        "g (float[1,seq] x, float[4,3] w) => (y) { y = MatMul(x, w) }",
        [{"x": (1, 4), "w": (4, 3)}]),
}

BROKEN = {  # sizes the model is not valid at: (feeds, the node, what the error says)
    "reshape_infers": ({"x": (1, 3, 6)}, "Reshape_0", "cannot reshape"),
    "split_equal_parts": ({"x": (7, 6)}, "Split_0", "equal parts"),
    "squeeze": ({"x": (1, 2, 8)}, "Squeeze_0", "cannot squeeze axis 1"),
    "matmul_of_unknowns": ({"x": (1, 5), "w": (4, 3)}, "MatMul_0", "inner dimensions"),
}


def _model(text: str):
    return parse_text(f'<ir_version: 8, opset_import: ["" : 17]>\n{text}')


def _feeds(session, shapes, rng):
    feeds = {}
    for i in session.get_inputs():
        shape = shapes[i.name]
        feeds[i.name] = (rng.standard_normal(shape).astype(np.float32) if "float" in i.type
                         else rng.integers(0, 5, shape))
    return feeds


@pytest.fixture(scope="module")
def compiled():
    cache: dict[str, object] = {}

    def get(name: str):
        if name not in cache:
            cache[name] = onnxc.compile(_model(CASES[name][0]), cache_dir=False, quiet=True,
                                        num_threads=1)
        return cache[name]

    return get


@pytest.mark.parametrize("name", sorted(CASES))
def test_one_compile_runs_at_every_size(name, compiled):
    text, sizes = CASES[name]
    session = ort.InferenceSession(_model(text).SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    model = compiled(name)
    rng = np.random.default_rng(0)
    for shapes in sizes:
        feeds = _feeds(session, shapes, rng)
        ours, theirs = model.run(None, feeds), session.run(None, feeds)
        for a, b in zip(ours, theirs, strict=True):
            assert a.shape == b.shape, (name, shapes)
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=f"{name} {shapes}")


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_sizes_that_break_a_condition_are_refused_naming_the_node(name, compiled):
    shapes, node, detail = BROKEN[name]
    session = ort.InferenceSession(_model(CASES[name][0]).SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    with pytest.raises(InvalidInputError) as info:
        compiled(name).run(None, _feeds(session, shapes, np.random.default_rng(0)))
    assert f"node '{node}'" in str(info.value) and detail in str(info.value)
