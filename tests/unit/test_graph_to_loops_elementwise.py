"""Numerics of the elementwise kernels of convert-graph-to-loops against ONNX's reference.

Each case lowers a one-op graph function, runs it in xDSL's interpreter and compares with
onnx.reference.ReferenceEvaluator at rtol=1e-5, atol=1e-6 (f32). Shapes are tiny: the
interpreter executes every scalar op in Python.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, FloatAttr, TensorType, f32, i32, i64

from onnxc.dialects import graph
from onnxc.errors import LoweringError
from onnxc.lowering.graph_to_loops.interpreter import run_single_op

RTOL, ATOL = 1e-5, 1e-6
rng = np.random.default_rng(0)


def rand(*shape, dtype=np.float32, low=-2.0, high=2.0):
    return rng.uniform(low, high, shape).astype(dtype)


def check(node, feeds, op_type, props=None, operands=None):
    """Lower op_type(feeds[operands]) with props and compare with the ONNX node."""
    expected = ReferenceEvaluator(node).run(
        None, {name: a for name, a in zip(node.input, feeds) if name}
    )
    args = feeds if operands is None else [feeds[i] for i in operands]
    actual = run_single_op(op_type, args, [(e.shape, e.dtype) for e in expected], props)
    for a, e in zip(actual, expected):
        assert a.dtype == e.dtype and a.shape == e.shape
        np.testing.assert_allclose(a, e, rtol=RTOL, atol=ATOL)


UNARY = [
    ("Relu", graph.ReluOp, rand(2, 3)),
    ("Sigmoid", graph.SigmoidOp, rand(7, low=-30, high=30)),
    ("Tanh", graph.TanhOp, rand(2, 2, 2)),
    ("Exp", graph.ExpOp, rand(5)),
    ("Log", graph.LogOp, rand(2, 3, low=0.1, high=5)),
    ("Sqrt", graph.SqrtOp, rand(4, low=0.0, high=9)),
    ("Neg", graph.NegOp, rand(3, 1)),
    ("Abs", graph.AbsOp, rand(6)),
    ("Reciprocal", graph.ReciprocalOp, rand(5, low=0.5, high=3)),
]


@pytest.mark.parametrize("onnx_op, op_type, x", UNARY, ids=[u[0] for u in UNARY])
def test_unary(onnx_op, op_type, x):
    check(helper.make_node(onnx_op, ["x"], ["y"]), [x], op_type)


def test_unary_f64():
    check(helper.make_node("Sigmoid", ["x"], ["y"]), [rand(2, 3, dtype=np.float64)],
          graph.SigmoidOp)


def test_relu_scalar_tensor():
    check(helper.make_node("Relu", ["x"], ["y"]), [np.array(-1.5, np.float32)], graph.ReluOp)


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_integer_neg_abs(dtype):
    x = rng.integers(-9, 9, (5,)).astype(dtype)
    check(helper.make_node("Neg", ["x"], ["y"]), [x], graph.NegOp)
    check(helper.make_node("Abs", ["x"], ["y"]), [x], graph.AbsOp)


@pytest.mark.parametrize("alpha", [0.01, 0.3])
def test_leaky_relu(alpha):
    check(helper.make_node("LeakyRelu", ["x"], ["y"], alpha=alpha), [rand(2, 4)],
          graph.LeakyReluOp, {"alpha": FloatAttr(alpha, f32)})


@pytest.mark.parametrize("low, high", [(-0.5, 0.5), (0.0, None), (None, 1.0), (None, None)])
def test_clip(low, high):
    bounds = [np.array(v, np.float32) if v is not None else None for v in (low, high)]
    names = ["x", "min" if low is not None else "", "max" if high is not None else ""]
    props = {k: FloatAttr(v, f32) for k, v in (("min", low), ("max", high)) if v is not None}
    feeds = [rand(3, 3), *(b if b is not None else np.zeros(0) for b in bounds)]
    check(helper.make_node("Clip", names, ["y"]), feeds, graph.ClipOp, props, operands=[0])


def test_clip_int64():
    x = rng.integers(-10, 10, (6,)).astype(np.int64)
    feeds = [x, np.array(-3, np.int64), np.array(4, np.int64)]
    props = {"min": FloatAttr(-3.0, f32), "max": FloatAttr(4.0, f32)}
    check(helper.make_node("Clip", ["x", "lo", "hi"], ["y"]), feeds, graph.ClipOp, props,
          operands=[0])


CASTS = [
    (np.float32, TensorProto.INT64, rand(7, low=-5, high=5)),
    (np.float32, TensorProto.INT32, rand(7, low=-5, high=5)),
    (np.float32, TensorProto.BOOL, np.array([0.0, -0.0, 1.5, -2.0, 0.0], np.float32)),
    (np.float32, TensorProto.DOUBLE, rand(3)),
    (np.float64, TensorProto.FLOAT, rand(3, dtype=np.float64)),
    (np.int64, TensorProto.FLOAT, np.array([-3, 0, 7, 1 << 40], np.int64)),
    (np.int64, TensorProto.INT32, np.array([-3, 0, 7, 1 << 20], np.int64)),
    (np.int32, TensorProto.INT64, np.array([-3, 0, 7], np.int32)),
    (np.int64, TensorProto.BOOL, np.array([-3, 0, 7], np.int64)),
    (np.bool_, TensorProto.FLOAT, np.array([True, False, True])),
    (np.bool_, TensorProto.INT64, np.array([True, False, True])),
]


@pytest.mark.parametrize("src, to, x", CASTS, ids=[f"{c[0].__name__}-{c[1]}" for c in CASTS])
def test_cast(src, to, x):
    check(helper.make_node("Cast", ["x"], ["y"], to=to), [x], graph.CastOp)


BROADCASTS = [
    ((2, 3), (2, 3)),
    ((2, 3), (3,)),
    ((2, 3, 4), (3, 1)),
    ((1, 3, 1), (2, 1, 4)),
    ((2, 3), ()),
    ((1,), (2, 2)),
]
BINARY = [("Add", graph.AddOp), ("Sub", graph.SubOp), ("Mul", graph.MulOp),
          ("Div", graph.DivOp)]


@pytest.mark.parametrize("a_shape, b_shape", BROADCASTS)
@pytest.mark.parametrize("onnx_op, op_type", BINARY, ids=[b[0] for b in BINARY])
def test_binary_broadcast(onnx_op, op_type, a_shape, b_shape):
    a, b = rand(*a_shape), rand(*b_shape, low=0.5, high=2)
    check(helper.make_node(onnx_op, ["a", "b"], ["y"]), [a, b], op_type)


def test_pow():
    a, b = rand(2, 3, low=0.1, high=3), rand(3, low=-2, high=2)
    check(helper.make_node("Pow", ["a", "b"], ["y"]), [a, b], graph.PowOp)


@pytest.mark.parametrize("onnx_op, op_type", BINARY[:3] + [("Div", graph.DivOp)])
def test_binary_int64(onnx_op, op_type):
    a = rng.integers(-20, 20, (2, 3)).astype(np.int64)
    b = rng.integers(1, 5, (3,)).astype(np.int64)
    check(helper.make_node(onnx_op, ["a", "b"], ["y"]), [a, b], op_type)


VARIADIC = [("Sum", graph.SumOp), ("Max", graph.MaxOp), ("Min", graph.MinOp)]


@pytest.mark.parametrize("onnx_op, op_type", VARIADIC, ids=[v[0] for v in VARIADIC])
@pytest.mark.parametrize("shapes", [[(2, 3)], [(2, 3), (3,), (2, 1)], [(4,), (4,)]])
def test_variadic(onnx_op, op_type, shapes):
    feeds = [rand(*s) for s in shapes]
    names = [f"x{i}" for i in range(len(feeds))]
    check(helper.make_node(onnx_op, names, ["y"]), feeds, op_type)


def test_max_int32():
    feeds = [rng.integers(-9, 9, (2, 3)).astype(np.int32) for _ in range(2)]
    check(helper.make_node("Max", ["a", "b"], ["y"]), feeds, graph.MaxOp)


def test_max_propagates_nan():
    a = np.array([1.0, np.nan, -1.0], np.float32)
    b = np.array([np.nan, 0.0, 2.0], np.float32)
    (y,) = run_single_op(graph.MaxOp, [a, b], [((3,), np.float32)])
    np.testing.assert_array_equal(y, np.maximum(a, b))


@pytest.mark.parametrize("value, dtype", [(1.5, np.float32), (7, np.int64), (0, np.int32)])
def test_constant_of_shape(value, dtype):
    tensor = helper.make_tensor("v", {np.float32: TensorProto.FLOAT, np.int64: TensorProto.INT64,
                                      np.int32: TensorProto.INT32}[dtype], [1], [value])
    shape = np.array([2, 3], np.int64)
    node = helper.make_node("ConstantOfShape", ["s"], ["y"], value=tensor)
    element = {np.float32: f32, np.int64: i64, np.int32: i32}[dtype]
    props = {"value": DenseIntOrFPElementsAttr.from_list(TensorType(element, [1]), [value])}
    check(node, [shape], graph.ConstantOfShapeOp, props, operands=[])


def test_float_only_op_on_integers_raises():
    with pytest.raises(LoweringError, match="graph.sigmoid: element type i64 is not a float"):
        run_single_op(graph.SigmoidOp, [np.zeros(3, np.int64)], [((3,), np.int64)])
