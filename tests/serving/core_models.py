"""Tiny seeded models and a started InferenceServer for the serving core's tests.

The MLP has a symbolic batch ("N", so the derived config batches); the fixed model has
none. `serve` runs a test body on its own event loop (asyncio.run) and always shuts the
server down. Expected answers come from onnx.reference (in tests only).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from onnxc.serving.server_core import InferenceServer

TOL = {"rtol": 1e-5, "atol": 1e-5}


def mlp_model(seed: int) -> onnx.ModelProto:
    """x[N,4] -> relu(x @ w1 + b1) @ w2 -> y[N,3]; `seed` picks the weights (a "version")."""
    rng = np.random.default_rng(seed)
    weights = [numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)
               for name, shape in (("w1", (4, 8)), ("b1", (8,)), ("w2", (8, 3)))]
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w1"], ["h"]),
         helper.make_node("Add", ["h", "b1"], ["h2"]),
         helper.make_node("Relu", ["h2"], ["h3"]),
         helper.make_node("MatMul", ["h3", "w2"], ["y"])],
        "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])], weights)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def fixed_model() -> onnx.ModelProto:
    """a[2,3] f32, b[2,3] f32 -> sum = a + b, prod = a * b (no batch dimension)."""
    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["sum"]),
         helper.make_node("Mul", ["a", "b"], ["prod"])],
        "fixed", [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3]) for n in "ab"],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3]) for n in ("sum", "prod")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def add_version(repo: Path, name: str, version: int, model: onnx.ModelProto) -> None:
    folder = repo / name / str(version)
    folder.mkdir(parents=True, exist_ok=True)
    onnx.save(model, folder / "model.onnx")


def reference(model: onnx.ModelProto, feeds: dict) -> list[np.ndarray]:
    return ReferenceEvaluator(model).run(None, feeds)


def serve(repo: Path, body, **options):
    """Run `body(server)` (a coroutine function) on a started server, then shut it down."""
    async def main():
        server = InferenceServer(repo, **options)
        await server.start()
        try:
            return await body(server)
        finally:
            await server.shutdown(drain_timeout_s=10)
    return asyncio.run(main())


def gather_model() -> onnx.ModelProto:
    """i[N] int64 -> rows of a constant 5x2 table: an index past 4 fails onnxc's run-time
    check."""
    table = numpy_helper.from_array(np.arange(10, dtype=np.float32).reshape(5, 2), "table")
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "i"], ["y"])], "gather",
        [helper.make_tensor_value_info("i", TensorProto.INT64, ["N"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2])], [table])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def single_sample_model() -> onnx.ModelProto:
    """x[1,4] -> x * 2: a batch fixed at 1 (served with max_batch_size > 0 per sample)."""
    two = numpy_helper.from_array(np.full((1, 4), 2, np.float32), "two")
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "two"], ["y"])], "single",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], [two])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def strings_model() -> onnx.ModelProto:
    """s[N] strings -> lower[N], lower-cased (StringNormalizer)."""
    graph = helper.make_graph(
        [helper.make_node("StringNormalizer", ["s"], ["lower"], case_change_action="LOWER")],
        "strings", [helper.make_tensor_value_info("s", TensorProto.STRING, ["N"])],
        [helper.make_tensor_value_info("lower", TensorProto.STRING, ["N"])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
