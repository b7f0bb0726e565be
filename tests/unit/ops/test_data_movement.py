"""Gather/Scatter (Elements, ND, opset-10 Scatter), TensorScatter, Tile, DepthToSpace,
SpaceToDepth, ReverseSequence, Compress, CenterCropPad, Pad (wrap) and NonZero: one-node
models compiled natively by onnxc.compile against onnx.reference.ReferenceEvaluator, and by
the numpy evaluator on the imported graph (tests/single_op.py's `check_single_op`).

Data movement must match exactly; the scatter reductions use rtol 1e-4 / atol 1e-5.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import onnxc
from tests.single_op import check_single_op as check
from tests.single_op import graph_model, numbered, single_op_model

RNG = np.random.default_rng(11)
F32 = np.float32


def _f(*shape) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def test_gather_scatter_elements():
    idx = np.array([[1, -1, 0], [2, 0, 1]], np.int64)
    check("GatherElements", [_f(3, 3), idx], attrs={"axis": 0}, exact=True)
    check("GatherElements", [_f(2, 4), idx[:, :2].astype(np.int32)], attrs={"axis": 1}, exact=True)
    for reduction in ("none", "add", "mul", "max", "min"):
        upd = _f(2, 3)
        idx2 = np.array([[1, 0, 2], [0, 2, 1]], np.int64)
        check("ScatterElements", [_f(3, 3), idx2, upd], attrs={"axis": 1, "reduction": reduction},
              opset=18)
    # onnx.reference has no Scatter (opset 9-10): it is ScatterElements without reduction
    data, idx3, upd = _f(3, 3), np.array([[1, 0, 2]], np.int64), _f(1, 3)
    model = single_op_model("Scatter", numbered([data, idx3, upd]), attrs={"axis": 0}, opset=10,
                            infer_shapes=True)
    (got,) = onnxc.compile(model).run(None, {"x0": data, "x1": idx3, "x2": upd})
    expected = data.copy()
    expected[idx3[0], [0, 1, 2]] = upd[0]
    np.testing.assert_array_equal(got, expected)


def test_gather_scatter_nd():
    data = _f(2, 3, 4)
    check("GatherND", [data, np.array([[0, 1], [1, -1]], np.int64)], exact=True)
    check("GatherND", [data, np.array([[[2]], [[0]]], np.int64)], attrs={"batch_dims": 1},
          exact=True)
    for reduction in ("none", "add", "mul", "max", "min"):
        check("ScatterND", [data, np.array([[1, 2], [0, 0]], np.int64), _f(2, 4)],
              attrs={"reduction": reduction}, opset=18)


def test_static_movement():
    check("Tile", [_f(2, 3, 2)], [np.array([2, 1, 3], np.int64)], exact=True)
    for mode in ("DCR", "CRD"):
        check("DepthToSpace", [_f(1, 8, 2, 3)], attrs={"blocksize": 2, "mode": mode}, exact=True)
    check("SpaceToDepth", [_f(1, 2, 4, 6)], attrs={"blocksize": 2}, exact=True)
    check("ReverseSequence", [_f(4, 3, 2), np.array([4, 1, 3], np.int64)],
          attrs={"batch_axis": 1, "time_axis": 0}, exact=True)
    check("ReverseSequence", [_f(3, 4), np.array([1, 2, 3], np.int64)],
          attrs={"batch_axis": 0, "time_axis": 1}, exact=True)
    check("Compress", [_f(3, 4)], [np.array([0, 1, 1], bool)], {"axis": 0}, exact=True)
    check("Compress", [_f(3, 2)], [np.array([1, 0, 0, 1, 1], bool)], exact=True)
    check("CenterCropPad", [_f(5, 4, 3)], [np.array([3, 7], np.int64)], {"axes": [0, 1]},
          opset=18, exact=True)


def test_non_zero_of_run_time_data():
    """The count is a run symbol (graph_dynamic.py): none, some and all elements nonzero."""
    for x in (np.zeros((2, 3), np.float32), np.array([[1, 0, -2], [0, 0, 3]], np.float32),
              _f(2, 3)):
        check("NonZero", [x], opset=13, exact=True)


def test_pad_wrap_and_space_to_depth_crd():
    check("Pad", [_f(3, 4)], [np.array([1, 2, 2, 5], np.int64)], {"mode": "wrap"}, opset=19,
          exact=True)
    check("SpaceToDepth", [_f(1, 2, 4, 6)], attrs={"blocksize": 2, "mode": "CRD"}, opset=25,
          exact=True)


def test_non_zero_of_a_constant_folds():
    x = np.array([[1, 0, 3], [0, 5, 0]], np.float32)
    model = graph_model(
        [helper.make_node("NonZero", ["c"], ["y"]), helper.make_node("Identity", ["x0"], ["z"])],
        {"x0": (np.float32, [1])}, ["y", "z"], initializers={"c": x}, opset=13)
    compiled = onnxc.compile(model)
    got, _ = compiled.run(None, {"x0": _f(1)})
    np.testing.assert_array_equal(got, np.array(np.nonzero(x)))


@pytest.mark.parametrize("mode", ["linear", "circular"])
def test_tensor_scatter(mode):
    past, update = _f(2, 3, 6, 4), _f(2, 3, 3, 4)
    starts = np.array([1, 3] if mode == "linear" else [4, 5], np.int64)
    check("TensorScatter", [past, update, starts], attrs={"mode": mode}, opset=24, exact=True)
    check("TensorScatter", [_f(2, 5, 3), _f(2, 2, 3)], attrs={"axis": 1}, opset=24, exact=True)
