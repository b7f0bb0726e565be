"""Slices whose bounds are run-time values a constant apart (`x[t:t+k]`, as torch exports
indexing by a loop counter): the result's shape is static, so they compile, as a Gather of
`t + arange(k)` checked to stay in [0, dim).

Against onnx.reference.ReferenceEvaluator, rtol 1e-6 / atol 1e-6 (tanh and matmul in f32).
Starts that ONNX would clamp (a slice running past the end) or count from the end stop the
run with InvalidInputError naming the Slice: onnxc never returns a slice of another length.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import onnxc
from onnxc.errors import InvalidInputError, UnsupportedOpError
from tests.single_op import graph_model

F32, I64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
RTOL = ATOL = 1e-6


def _vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def _model(nodes, inputs, outputs, initializers=()):
    m = graph_model(nodes, inputs, outputs, initializers=list(initializers), opset=17)
    onnx.checker.check_model(m, full_check=True)
    return m


def _run_both(model, feeds):
    expected = ReferenceEvaluator(model).run(None, feeds)
    for compiled in (onnxc.compile(model), onnxc.compile(model)):  # cold, then a cache hit
        for got, want in zip(compiled(*feeds.values()), expected):
            np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def test_recurrence_reading_row_t_by_slicing():
    """torch's `for t in range(x.size(0)): h = tanh(cell(cat([x[t:t+1], h], 1)))`."""
    body = helper.make_graph([
        helper.make_node("Identity", ["cond"], ["cond_next"]),
        helper.make_node("Add", ["t", "one"], ["t1"]),
        helper.make_node("Unsqueeze", ["t", "axis0"], ["start"]),
        helper.make_node("Unsqueeze", ["t1", "axis0"], ["end"]),
        helper.make_node("Slice", ["x", "start", "end", "axis0"], ["row"]),
        helper.make_node("Concat", ["row", "h"], ["joined"], axis=1),
        helper.make_node("Gemm", ["joined", "w", "b"], ["pre"], transB=1),
        helper.make_node("Tanh", ["pre"], ["h_next"]),
    ], "body", [_vi("t", I64, []), _vi("cond", BOOL, []), _vi("h", F32, [1, 8])],
        [_vi("cond_next", BOOL, []), _vi("h_next", F32, [1, 8])])
    rng = np.random.default_rng(0)
    m = _model([helper.make_node("Loop", ["steps", "yes", "h0"], ["h"], body=body)],
               [_vi("x", F32, [5, 8]), _vi("h0", F32, [1, 8])], [_vi("h", F32, [1, 8])], [
                   helper.make_tensor("steps", I64, [], [5]),
                   helper.make_tensor("yes", BOOL, [], [True]),
                   helper.make_tensor("one", I64, [], [1]),
                   helper.make_tensor("axis0", I64, [1], [0]),
                   helper.make_tensor("w", F32, [8, 16], rng.standard_normal(128) * 0.3),
                   helper.make_tensor("b", F32, [8], rng.standard_normal(8) * 0.1)])
    _run_both(m, {"x": rng.standard_normal((5, 8)).astype(np.float32),
                  "h0": np.zeros((1, 8), np.float32)})


def _window_model():
    """y = x[1:3, i+1:i+3] for a run-time i (int32, so the start is cast to int64)."""
    nodes = [
        helper.make_node("Add", ["i", "one"], ["lo"]),
        helper.make_node("Add", ["i", "three"], ["hi"]),
        helper.make_node("Concat", ["fixed_lo", "lo"], ["starts"], axis=0),
        helper.make_node("Concat", ["fixed_hi", "hi"], ["ends"], axis=0),
        helper.make_node("Slice", ["x", "starts", "ends"], ["y"], name="window"),
    ]
    return _model(nodes, [_vi("x", F32, [4, 6]), _vi("i", TensorProto.INT32, [1])],
                  [_vi("y", F32, [2, 2])], [
                      helper.make_tensor("one", TensorProto.INT32, [1], [1]),
                      helper.make_tensor("three", TensorProto.INT32, [1], [3]),
                      helper.make_tensor("fixed_lo", TensorProto.INT32, [1], [1]),
                      helper.make_tensor("fixed_hi", TensorProto.INT32, [1], [3])])


@pytest.mark.parametrize("i", [-1, 0, 2, 3])
def test_static_and_run_time_axes_together(i):
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    _run_both(_window_model(), {"x": x, "i": np.array([i], np.int32)})


@pytest.mark.parametrize("i", [4, -4, 100])
def test_a_start_onnx_would_clamp_or_wrap_is_an_error(i):
    compiled = onnxc.compile(_window_model())
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    with pytest.raises(InvalidInputError, match="window"):
        compiled(x, np.array([i], np.int32))
    (y,) = compiled(x, np.array([0], np.int32))
    np.testing.assert_array_equal(y, x[1:3, 1:3])


def test_run_time_bounds_with_a_negative_step_are_refused():
    """Bounds a run computes without a constant distance become run sizes
    (test_data_dependent_sizes.py), for positive steps only."""
    m = _model([helper.make_node("Slice", ["x", "a", "b", "axes", "steps"], ["y"], name="free")],
               [_vi("x", F32, [6]), _vi("a", I64, [1]), _vi("b", I64, [1])],
               [_vi("y", F32, [None])],
               [numpy_helper.from_array(np.array([0], np.int64), "axes"),
                numpy_helper.from_array(np.array([-1], np.int64), "steps")])
    with pytest.raises(UnsupportedOpError, match="free.*starts; with a negative step.*'a'.*must be a constant"):
        onnxc.compile(m)
