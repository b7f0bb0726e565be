"""Fused graphs compiled to native code against onnxruntime on the unfused ONNX model.

The activation epilogues of graph.conv / graph.gemm / graph.matmul and the
graph.fused_elementwise kernel only exist after fusion, so these tests compile small models
with the fusion rows in the pipeline, check that the fused form was really produced, and
compare the native results with onnxruntime.
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import helper

import onnxc
from tests.single_op import graph_model

RTOL, ATOL = 1e-4, 1e-5


def _model(nodes, inputs, outputs, inits, opset=20):
    """float inputs ((name, shape) pairs) and outputs (names), IR version 8."""
    return graph_model(nodes, {n: (np.float32, s) for n, s in inputs},
                       {n: (np.float32, None) for n in outputs}, initializers=inits,
                       opset=opset, ir_version=8)


def _compare(model, feeds, pipeline: str, expect_in_ir: list[str]):
    optimized = str(onnxc.optimize(model, pass_pipeline=pipeline))
    for text in expect_in_ir:
        assert text in optimized, f"'{text}' missing after {pipeline}:\n{optimized}"
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, feeds)
    actual = onnxc.compile(model, pass_pipeline=pipeline).run(None, feeds)
    for e, a in zip(expected, actual):
        np.testing.assert_allclose(a, e, rtol=RTOL, atol=ATOL)


def _conv_epilogue_model(rng, activation_nodes, opset=20):
    w = rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.3
    b = rng.standard_normal(8).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1])]
    return _model(nodes + activation_nodes, [("x", [1, 3, 9, 7])], ["y"],
                  {"w": w, "b": b, "lo": np.array(0.0, np.float32),
                   "hi": np.array(6.0, np.float32)}, opset)


ACTIVATIONS = {
    "relu": ([helper.make_node("Relu", ["c"], ["y"])], 'activation = "relu"'),
    "clip": ([helper.make_node("Clip", ["c", "lo", "hi"], ["y"])], 'activation = "clip"'),
    "leaky_relu": ([helper.make_node("LeakyRelu", ["c"], ["y"], alpha=0.2)],
                   'activation = "leaky_relu"'),
    "sigmoid": ([helper.make_node("Sigmoid", ["c"], ["y"])], 'activation = "sigmoid"'),
    "tanh": ([helper.make_node("Tanh", ["c"], ["y"])], 'activation = "tanh"'),
    "hard_swish": ([helper.make_node("HardSwish", ["c"], ["y"])], 'activation = "hard_swish"'),
    "gelu": ([helper.make_node("Gelu", ["c"], ["y"])], 'activation = "gelu"'),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_conv_epilogue_matches_onnxruntime(name: str):
    rng = np.random.default_rng(0)
    nodes, marker = ACTIVATIONS[name]
    model = _conv_epilogue_model(rng, nodes)
    x = rng.standard_normal((1, 3, 9, 7)).astype(np.float32) * 2
    _compare(model, {"x": x}, "fuse-activation", [marker])


@pytest.mark.parametrize("trans_b", [0, 1])
def test_gemm_and_matmul_epilogues_match_onnxruntime(trans_b: int):
    rng = np.random.default_rng(1)
    w = rng.standard_normal((6, 5) if trans_b else (5, 6)).astype(np.float32)
    nodes = [
        helper.make_node("Gemm", ["a", "w", "c"], ["g"], transB=trans_b),
        helper.make_node("Clip", ["g", "lo", "hi"], ["y1"]),
        helper.make_node("MatMul", ["a", "m"], ["p"]),
        helper.make_node("Relu", ["p"], ["y2"]),
    ]
    inits = {"w": w, "c": rng.standard_normal(6).astype(np.float32),
             "m": rng.standard_normal((5, 4)).astype(np.float32),
             "lo": np.array(-0.5, np.float32), "hi": np.array(0.5, np.float32)}
    model = _model(nodes, [("a", [3, 5])], ["y1", "y2"], inits)
    a = rng.standard_normal((3, 5)).astype(np.float32)
    _compare(model, {"a": a}, "fuse-activation", ['activation = "clip"', 'activation = "relu"'])


def test_fused_elementwise_matches_onnxruntime():
    rng = np.random.default_rng(2)
    nodes = [
        helper.make_node("Add", ["x", "bias"], ["t0"]),
        helper.make_node("Sigmoid", ["r"], ["t1"]),
        helper.make_node("Mul", ["t0", "t1"], ["t2"]),
        helper.make_node("Clip", ["t2", "lo", "hi"], ["t3"]),
        helper.make_node("LeakyRelu", ["t3"], ["t4"], alpha=0.1),
        helper.make_node("Sub", ["t4", "x"], ["t5"]),
        helper.make_node("Mul", ["t5", "third"], ["y"]),
    ]
    inits = {"bias": rng.standard_normal((4, 1, 1)).astype(np.float32),
             "lo": np.array(-1.0, np.float32), "hi": np.array(2.0, np.float32),
             "third": np.array(1 / 3, np.float32)}
    model = _model(nodes, [("x", [2, 4, 3, 5]), ("r", [2, 4, 3, 5])], ["y"], inits)
    feeds = {n: rng.standard_normal((2, 4, 3, 5)).astype(np.float32) * 2 for n in ("x", "r")}
    # the scalar Mul becomes a mul_scalar, in the body a product with a constant
    pipeline = "fold-scalar-binary,fuse-elementwise"
    _compare(model, feeds, pipeline, ["graph.fused_elementwise",
                                      "arith.constant 0.333333343 : f32", "arith.mulf"])
    optimized = onnxc.optimize(model, pass_pipeline=pipeline)
    kernels = [op.name for op in optimized.walk() if op.name.startswith("graph.")
               and op.name not in ("graph.constant", "graph.yield")]
    assert kernels == ["graph.fused_elementwise"]


def test_conv_bn_relu6_chain_matches_onnxruntime():
    """Conv + BN + Clip(0, 6) + residual Add, the MobileNetV2 pattern, fully fused."""
    rng = np.random.default_rng(3)
    c = 4
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], group=c),
        helper.make_node("BatchNormalization", ["c", "g", "b", "m", "v"], ["n"]),
        helper.make_node("Clip", ["n", "lo", "hi"], ["r"]),
        helper.make_node("Add", ["r", "x"], ["y"]),
    ]
    inits = {"w": rng.standard_normal((c, 1, 3, 3)).astype(np.float32),
             "g": rng.uniform(0.5, 1.5, c).astype(np.float32),
             "b": rng.standard_normal(c).astype(np.float32),
             "m": rng.standard_normal(c).astype(np.float32),
             "v": rng.uniform(0.5, 1.5, c).astype(np.float32),
             "lo": np.array(0.0, np.float32), "hi": np.array(6.0, np.float32)}
    model = _model(nodes, [("x", [1, c, 6, 6])], ["y"], inits, opset=13)
    x = rng.standard_normal((1, c, 6, 6)).astype(np.float32) * 3
    _compare(model, {"x": x}, "fuse-conv-bn,fuse-activation",
             ['group = 4 : i64, activation = "clip"'])


@pytest.mark.parametrize("kernel", [1, 3])
def test_conv_residual_relu_matches_onnxruntime(kernel: int):
    """ResNet's Relu(Conv(x) + shortcut) as one graph.conv_add with a relu epilogue (the
    3x3 case runs the masked flat-plane loop, the 1x1 case the merged contiguous one)."""
    rng = np.random.default_rng(4)
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[kernel // 2] * 4),
        helper.make_node("Add", ["s", "c"], ["t"]),
        helper.make_node("Relu", ["t"], ["y"]),
    ]
    inits = {"w": rng.standard_normal((6, 4, kernel, kernel)).astype(np.float32) * 0.3,
             "b": rng.standard_normal(6).astype(np.float32)}
    model = _model(nodes, [("x", [2, 4, 9, 7]), ("s", [2, 6, 9, 7])], ["y"], inits)
    feeds = {"x": rng.standard_normal((2, 4, 9, 7)).astype(np.float32),
             "s": rng.standard_normal((2, 6, 9, 7)).astype(np.float32)}
    _compare(model, feeds, "fuse-conv-add,fuse-activation",
             ["graph.conv_add(%x, %", 'activation = "relu"'])
