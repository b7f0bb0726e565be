"""Numerics of the matmul/gemm, conv, pooling and normalization kernels against ONNX.

Same method as test_graph_to_loops_elementwise.py: lower a one-op function, interpret it,
compare with onnx.reference.ReferenceEvaluator at rtol=1e-5, atol=1e-6. Where ONNX's
reference is known to be wrong, onnxruntime or numpy is the reference instead: with
ceil_mode, onnx 1.23 pads the input by half the extra window overhang at the start, which
shifts AveragePool windows (a 4x4 input, 3x3 kernel, stride 3 gives 2.5 instead of 5).
"""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator
from xdsl.dialects.builtin import DenseArrayBase, FloatAttr, IntegerAttr, f32, i64

from onnxc.dialects import graph
from onnxc.lowering.graph_to_loops.interpreter import run_single_op

RTOL, ATOL = 1e-5, 1e-6
rng = np.random.default_rng(1)


def rand(*shape, low=-1.0, high=1.0):
    return rng.uniform(low, high, shape).astype(np.float32)


def ints(*values):
    return DenseArrayBase.from_list(i64, values)


def i(v):
    return IntegerAttr(v, 64)


def f(v):
    return FloatAttr(v, f32)


def _onnxruntime(node, feeds):
    names = [n for n in node.input if n]
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, a.shape)
              for n, a in zip(names, feeds)]
    outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in node.output]
    model = helper.make_model(helper.make_graph([node], "g", inputs, outputs),
                              opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    session = onnxruntime.InferenceSession(model.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    return session.run(None, dict(zip(names, feeds)))


def check(node, feeds, op_type, props=None, operands=None, use_ort=False):
    if use_ort:
        expected = _onnxruntime(node, feeds)
    else:
        expected = ReferenceEvaluator(node).run(
            None, {name: a for name, a in zip(node.input, feeds) if name}
        )
    args = feeds if operands is None else [feeds[k] for k in operands]
    actual = run_single_op(op_type, args, [(e.shape, e.dtype) for e in expected], props)
    for a, e in zip(actual, expected):
        assert a.dtype == e.dtype and a.shape == e.shape
        np.testing.assert_allclose(a, e, rtol=RTOL, atol=ATOL)


# --------------------------------------------------------------------------- matmul / gemm


@pytest.mark.parametrize("a_shape, b_shape", [
    ((2, 3), (3, 4)),
    ((3,), (3, 2)),
    ((2, 3), (3,)),
    ((4,), (4,)),
    ((2, 2, 3), (3, 2)),
    ((2, 1, 2, 3), (3, 3, 2)),
    ((1, 2, 3), (2, 3, 2)),
])
def test_matmul(a_shape, b_shape):
    check(helper.make_node("MatMul", ["a", "b"], ["y"]), [rand(*a_shape), rand(*b_shape)],
          graph.MatMulOp)


def test_matmul_int64():
    a = rng.integers(-5, 5, (2, 3)).astype(np.int64)
    b = rng.integers(-5, 5, (3, 2)).astype(np.int64)
    check(helper.make_node("MatMul", ["a", "b"], ["y"]), [a, b], graph.MatMulOp)


@pytest.mark.parametrize("trans_a, trans_b", [(0, 0), (1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("c_shape", [None, (4,), (3, 1), (3, 4), (1,)])
def test_gemm(trans_a, trans_b, c_shape):
    m, k, n = 3, 5, 4
    a = rand(k, m) if trans_a else rand(m, k)
    b = rand(n, k) if trans_b else rand(k, n)
    feeds = [a, b] + ([rand(*c_shape)] if c_shape else [])
    names = ["a", "b"] + (["c"] if c_shape else [])
    alpha, beta = 0.5, 2.0
    node = helper.make_node("Gemm", names, ["y"], alpha=alpha, beta=beta, transA=trans_a,
                            transB=trans_b)
    props = {"alpha": f(alpha), "beta": f(beta), "transA": i(trans_a), "transB": i(trans_b)}
    check(node, feeds, graph.GemmOp, props)


# --------------------------------------------------------------------------- conv


CONVS = [
    # x shape, w shape, strides, pads, dilations, group, bias
    ((1, 2, 5, 5), (3, 2, 3, 3), (1, 1), (0, 0, 0, 0), (1, 1), 1, False),
    ((1, 2, 5, 5), (3, 2, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, True),
    ((2, 1, 6, 5), (2, 1, 3, 2), (2, 1), (1, 0, 2, 1), (1, 1), 1, True),
    ((1, 2, 7, 7), (2, 2, 3, 3), (2, 2), (1, 1, 1, 1), (2, 2), 1, False),
    ((1, 4, 5, 5), (4, 2, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 2, True),
    ((1, 3, 4, 4), (3, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 3, True),  # depthwise
    ((1, 2, 7), (3, 2, 3), (2,), (1, 2), (1,), 1, True),  # 1-D
    ((1, 1, 3, 4, 4), (2, 1, 2, 2, 2), (1, 2, 1), (0, 1, 0, 1, 0, 0), (1, 1, 2), 1, True),
    ((1, 1, 2, 2), (1, 1, 3, 3), (1, 1), (2, 2, 2, 2), (1, 1), 1, False),  # pads > input
    # pointwise trailing dims are merged with the previous stride-1 dim
    ((2, 4, 3, 5), (6, 2, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 2, True),
    ((1, 2, 4, 5), (3, 2, 3, 1), (1, 1), (1, 0, 1, 0), (2, 1), 1, False),
    ((1, 2, 5, 4), (2, 2, 1, 1), (2, 1), (0, 0, 0, 0), (1, 1), 1, True),  # stride 2 blocks
    # stride 1 with rows as long in the output as in the input: the masked flat-plane loop
    ((1, 2, 4, 6), (2, 2, 3, 3), (1, 1), (2, 2, 2, 2), (2, 2), 1, True),
    ((1, 1, 3, 5), (2, 1, 3, 3), (1, 1), (0, 0, 2, 2), (1, 1), 1, False),
    ((1, 1, 2, 2), (1, 1, 5, 5), (1, 1), (2, 2, 2, 2), (1, 1), 1, True),  # empty offsets
]


@pytest.mark.parametrize("x_shape, w_shape, strides, pads, dilations, group, bias", CONVS)
def test_conv(x_shape, w_shape, strides, pads, dilations, group, bias):
    feeds = [rand(*x_shape), rand(*w_shape)] + ([rand(w_shape[0])] if bias else [])
    names = ["x", "w"] + (["b"] if bias else [])
    node = helper.make_node("Conv", names, ["y"], strides=strides, pads=pads,
                            dilations=dilations, group=group,
                            kernel_shape=w_shape[2:])
    props = {"strides": ints(*strides), "pads": ints(*pads), "dilations": ints(*dilations),
             "group": i(group)}
    check(node, feeds, graph.ConvOp, props)


# --------------------------------------------------------------------------- pooling


POOLS = [
    # x shape, kernel, strides, pads, ceil_mode
    ((1, 2, 5, 5), (2, 2), (2, 2), (0, 0, 0, 0), 0),
    ((1, 1, 5, 5), (3, 3), (1, 1), (1, 1, 1, 1), 0),
    ((2, 1, 6, 5), (3, 2), (2, 1), (1, 0, 1, 1), 0),
    ((1, 1, 7), (3,), (2,), (1, 1), 0),
    ((1, 1, 3, 3, 4), (2, 2, 2), (1, 1, 2), (0, 0, 0, 1, 1, 0), 0),
]
CEIL_POOLS = [
    ((1, 1, 5, 5), (2, 2), (2, 2), (0, 0, 0, 0), 1),
    ((1, 2, 6, 6), (3, 3), (2, 2), (1, 1, 1, 1), 1),
    ((1, 1, 4, 4), (3, 3), (3, 3), (0, 0, 0, 0), 1),  # the reference shifts these windows
]


def _pool_props(kernel, strides, pads, ceil):
    return {"kernel_shape": ints(*kernel), "strides": ints(*strides), "pads": ints(*pads),
            "ceil_mode": i(ceil)}


@pytest.mark.parametrize("x_shape, kernel, strides, pads, ceil", POOLS + CEIL_POOLS)
@pytest.mark.parametrize("count_include_pad", [0, 1])
def test_average_pool(x_shape, kernel, strides, pads, ceil, count_include_pad):
    node = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=kernel, strides=strides,
                            pads=pads, ceil_mode=ceil, count_include_pad=count_include_pad)
    props = _pool_props(kernel, strides, pads, ceil)
    props["count_include_pad"] = i(count_include_pad)
    check(node, [rand(*x_shape)], graph.AveragePoolOp, props, use_ort=bool(ceil))


@pytest.mark.parametrize("x_shape, kernel, strides, pads, ceil", POOLS + CEIL_POOLS)
def test_max_pool(x_shape, kernel, strides, pads, ceil):
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=kernel, strides=strides,
                            pads=pads, ceil_mode=ceil)
    props = _pool_props(kernel, strides, pads, ceil)
    props["dilations"] = ints(*(1,) * len(kernel))
    check(node, [rand(*x_shape)], graph.MaxPoolOp, props, use_ort=bool(ceil))


def test_max_pool_dilated():
    kernel, strides, pads, dilations = (2, 2), (1, 1), (1, 1, 1, 1), (2, 2)
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=kernel, strides=strides,
                            pads=pads, dilations=dilations)
    props = _pool_props(kernel, strides, pads, 0)
    props["dilations"] = ints(*dilations)
    check(node, [rand(1, 2, 5, 5)], graph.MaxPoolOp, props)


@pytest.mark.parametrize("shape", [(1, 3, 4, 4), (2, 2, 5), (1, 2, 1, 1)])
def test_global_pools(shape):
    # onnx 1.23's reference drops the trailing 1 of 3-D inputs: compare with numpy.
    x = rand(*shape)
    axes = tuple(range(2, len(shape)))
    out = [(shape[:2] + (1,) * len(axes), np.float32)]
    (avg,) = run_single_op(graph.GlobalAveragePoolOp, [x], out)
    (top,) = run_single_op(graph.GlobalMaxPoolOp, [x], out)
    np.testing.assert_allclose(avg, x.mean(axis=axes, keepdims=True), rtol=RTOL, atol=ATOL)
    np.testing.assert_array_equal(top, x.max(axis=axes, keepdims=True))


# --------------------------------------------------------------------------- normalization


@pytest.mark.parametrize("shape", [(2, 3, 4, 4), (2, 3), (1, 2, 5)])
def test_batch_normalization(shape):
    c = shape[1]
    feeds = [rand(*shape), rand(c), rand(c), rand(c), rand(c, low=0.1, high=2)]
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"],
                            epsilon=1e-3)
    check(node, feeds, graph.BatchNormalizationOp, {"epsilon": f(1e-3)})


def test_batch_normalization_f64_statistics():
    x = rand(1, 2, 3)
    stats = [rng.uniform(0.1, 2, 2) for _ in range(4)]
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"])
    check(node, [x, *stats], graph.BatchNormalizationOp, {"epsilon": f(1e-5)})


def _lrn_reference(x, size, alpha, beta, bias):
    """The ONNX LRN formula (onnx 1.23's reference loops over the batch instead of the
    channels, and onnxruntime accepts odd sizes only)."""
    square_sum = np.zeros_like(x)
    for c in range(x.shape[1]):
        begin, end = max(0, c - (size - 1) // 2), min(x.shape[1], c + -(-(size - 1) // 2) + 1)
        square_sum[:, c] = np.sum(x[:, begin:end] ** 2, axis=1)
    return (x / (bias + alpha / size * square_sum) ** beta).astype(x.dtype)


@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_lrn(size):
    alpha, beta, bias = 1e-2, 0.75, 2.0
    props = {"size": i(size), "alpha": f(alpha), "beta": f(beta), "bias": f(bias)}
    x = rand(2, 5, 3, 3, low=-3, high=3)
    (y,) = run_single_op(graph.LRNOp, [x], [(x.shape, np.float32)], props)
    np.testing.assert_allclose(y, _lrn_reference(x, size, alpha, beta, bias), rtol=RTOL,
                               atol=ATOL)
    if size % 2:
        node = helper.make_node("LRN", ["x"], ["y"], size=size, alpha=alpha, beta=beta,
                                bias=bias)
        check(node, [x], graph.LRNOp, props, use_ort=True)


@pytest.mark.parametrize("shape, axis", [((2, 5), -1), ((2, 5), 0), ((2, 3, 4), 1),
                                         ((3, 2, 2), -3), ((4,), 0)])
def test_softmax(shape, axis):
    x = rand(*shape, low=-20, high=20)
    check(helper.make_node("Softmax", ["x"], ["y"], axis=axis), [x], graph.SoftmaxOp,
          {"axis": i(axis)})


def test_softmax_large_inputs_are_stable():
    x = np.array([[1000.0, 1001.0, 999.0]], np.float32)
    (y,) = run_single_op(graph.SoftmaxOp, [x], [((1, 3), np.float32)], {"axis": i(1)})
    e = np.exp(x - x.max())
    np.testing.assert_allclose(y, e / e.sum(), rtol=RTOL, atol=ATOL)
