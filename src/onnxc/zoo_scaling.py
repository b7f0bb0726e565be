"""Models for measuring how compilation scales (benchmarks/compile_scaling.py and the tests
that keep the graph passes linear): long and wide graphs, a tiny model to compile many
times, and models with about 100 MB of weights.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8  # onnxruntime 1.31 refuses onnx 1.23's default


def _model(nodes, inputs, outputs, initializers=(), name="scaling") -> onnx.ModelProto:
    graph = helper.make_graph(nodes, name, inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    return model


def add_chain(n: int, size: int = 16) -> onnx.ModelProto:
    """y = (((x + x) + x) + ...) + x: n Adds, each reading the previous one."""
    nodes, prev = [], "x"
    for i in range(n):
        out = "y" if i == n - 1 else f"t{i}"
        nodes.append(helper.make_node("Add", [prev, "x"], [out], name=f"add{i}"))
        prev = out
    value = helper.make_tensor_value_info
    return _model(nodes, [value("x", TensorProto.FLOAT, [size])],
                  [value("y", TensorProto.FLOAT, [size])], name="add_chain")


def wide_graph(n: int, branches: int | None = None, seed: int = 0) -> onnx.ModelProto:
    """About n nodes in parallel branches of mixed ops (about 100 nodes each unless
    `branches` says how many), concatenated at the end."""
    branches = branches or max(2, n // 100)
    rng = np.random.default_rng(seed)
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []

    def const(array: np.ndarray) -> str:
        name = f"c{len(inits)}"
        inits.append(numpy_helper.from_array(array, name))
        return name

    def node(op: str, inputs: list[str], **attrs) -> str:
        out = f"v{len(nodes)}"
        nodes.append(helper.make_node(op, inputs, [out], name=f"n{len(nodes)}", **attrs))
        return out

    def f32(*shape: int, scale: float = 0.1, offset: float = 0.0) -> np.ndarray:
        return (rng.standard_normal(shape) * scale + offset).astype(np.float32)

    outs = []
    for b in range(branches):
        end = (b + 1) * (n // branches) - 8
        if b % 2 == 0:
            h = "x2"
            while True:
                h = node("MatMul", [h, const(f32(64, 64))])
                h = node("Relu", [node("Add", [h, const(f32(64))])])
                h = node("Transpose", [node("Transpose", [h], perm=[1, 0])], perm=[1, 0])
                h = node("Sigmoid", [node("Mul", [h, const(np.array(0.5, np.float32))])])
                h = node("Sub", [h, "x2"])
                if len(nodes) >= end:
                    break
            outs.append(node("ReduceMean", [h], axes=[1], keepdims=1))
        else:
            h = "x4"
            while True:
                c = node("Conv", [h, const(f32(8, 8, 3, 3))], pads=[1, 1, 1, 1])
                stats = [const(np.abs(f32(8, offset=1.0))), const(f32(8)), const(f32(8)),
                         const(np.abs(f32(8, offset=1.0)))]
                c = node("Relu", [node("BatchNormalization", [c, *stats])])
                h = node("Add", [c, h])
                h = node("Reshape", [h, const(np.array([1, 8, 64], np.int64))])
                h = node("Reshape", [h, const(np.array([1, 8, 8, 8], np.int64))])
                if len(nodes) >= end:
                    break
            pooled = node("GlobalAveragePool", [h])
            outs.append(node("Reshape", [pooled, const(np.array([1, 8], np.int64))]))
    node("Concat", outs, axis=1)
    nodes[-1].output[0] = "y"
    value = helper.make_tensor_value_info
    return _model(nodes, [value("x2", TensorProto.FLOAT, [1, 64]),
                          value("x4", TensorProto.FLOAT, [1, 8, 8, 8])],
                  [value("y", TensorProto.FLOAT, [1, (branches + 1) // 2 + 8 * (branches // 2)])],
                  inits, name="wide_graph")


def small_model() -> onnx.ModelProto:
    """MatMul by a constant + Relu: every compile stage runs, each in milliseconds."""
    w = numpy_helper.from_array(np.linspace(-1, 1, 64, dtype=np.float32).reshape(8, 8), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["t"]), helper.make_node("Relu", ["t"], ["y"])]
    value = helper.make_tensor_value_info
    return _model(nodes, [value("x", TensorProto.FLOAT, [4, 8])],
                  [value("y", TensorProto.FLOAT, [4, 8])], [w], name="small")


def weights_model(kind: str, megabytes: float, seed: int = 0) -> onnx.ModelProto:
    """About `megabytes` of f32 weights: 5 square MatMuls, or 512-channel 3x3 Convs."""
    rng = np.random.default_rng(seed)
    nodes, inits, prev = [], [], "x"
    value = helper.make_tensor_value_info
    if kind == "matmul":
        layers = 5
        n = int((megabytes * 2**20 / 4 / layers) ** 0.5) // 16 * 16
        for i in range(layers):
            w = (rng.standard_normal((n, n), dtype=np.float32) * 0.01)
            inits.append(numpy_helper.from_array(w, f"w{i}"))
            out = "y" if i == layers - 1 else f"h{i}"
            nodes += [helper.make_node("MatMul", [prev, f"w{i}"], [f"m{i}"]),
                      helper.make_node("Relu", [f"m{i}"], [out])]
            prev = out
        shape = [4, n]
        return _model(nodes, [value("x", TensorProto.FLOAT, shape)],
                      [value("y", TensorProto.FLOAT, shape)], inits, name="matmuls")
    c = 512
    layers = max(1, round(megabytes * 2**20 / (c * c * 9 * 4)))
    for i in range(layers):
        w = rng.standard_normal((c, c, 3, 3), dtype=np.float32) * 0.01
        inits += [numpy_helper.from_array(w, f"w{i}"),
                  numpy_helper.from_array(np.zeros(c, np.float32), f"b{i}")]
        out = "y" if i == layers - 1 else f"h{i}"
        nodes += [helper.make_node("Conv", [prev, f"w{i}", f"b{i}"], [f"c{i}"], pads=[1] * 4),
                  helper.make_node("Relu", [f"c{i}"], [out])]
        prev = out
    shape = [1, c, 8, 8]
    return _model(nodes, [value("x", TensorProto.FLOAT, shape)],
                  [value("y", TensorProto.FLOAT, shape)], inits, name="convs")
