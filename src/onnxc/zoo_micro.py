"""Two micro-benchmark models of the performance work: one large MatMul, one elementwise chain.

`matmul_model(n)` is a single n x n x n MatMul of two graph inputs (the GEMM yardstick);
`elementwise_chain(elements)` is y = relu(x * a + b) * c + x on a flat tensor, five
elementwise nodes that a fusing compiler runs as one pass over memory.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8  # onnxruntime 1.31 refuses onnx 1.23's default


def matmul_model(n: int = 512) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["y"], name="matmul")],
        f"matmul_{n}",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [n, n]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [n, n])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, n])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    return model


def elementwise_chain(elements: int = 16 * 2**20) -> onnx.ModelProto:
    scalars = {name: numpy_helper.from_array(np.array(v, np.float32), name)
               for name, v in (("a", 1.5), ("b", -0.25), ("c", 0.5))}
    nodes = [
        helper.make_node("Mul", ["x", "a"], ["t0"], name="scale"),
        helper.make_node("Add", ["t0", "b"], ["t1"], name="shift"),
        helper.make_node("Relu", ["t1"], ["t2"], name="relu"),
        helper.make_node("Mul", ["t2", "c"], ["t3"], name="rescale"),
        helper.make_node("Add", ["t3", "x"], ["y"], name="residual"),
    ]
    graph = helper.make_graph(
        nodes, "elementwise_chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [elements])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [elements])],
        list(scalars.values()),
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    return model
