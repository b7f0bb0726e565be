"""In-place elementwise kernels: a chain of elementwise ops shares one buffer, results unchanged."""

import numpy as np
import onnx
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import onnxc


def _chain_model() -> onnx.ModelProto:
    """x -> Add(x, b) -> Relu -> Mul(., x) -> Sigmoid -> Sub(., c): each intermediate dies at once,
    except x, which the Mul reads again (so the Add must not write over x)."""
    b = helper.make_tensor("b", TensorProto.FLOAT, [64], np.linspace(-1, 1, 64).astype(np.float32))
    c = helper.make_tensor("c", TensorProto.FLOAT, [1], [0.25])
    nodes = [
        helper.make_node("Add", ["x", "b"], ["t0"]),
        helper.make_node("Relu", ["t0"], ["t1"]),
        helper.make_node("Mul", ["t1", "x"], ["t2"]),
        helper.make_node("Sigmoid", ["t2"], ["t3"]),
        helper.make_node("Sub", ["t3", "c"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [32, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [32, 64])],
        [b, c],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_chain_runs_in_one_buffer_and_matches_reference():
    model = _chain_model()
    compiled = onnxc.compile(model, opt_level=0)
    x = np.random.default_rng(0).standard_normal((32, 64)).astype(np.float32)
    (y,) = compiled(x)
    (expected,) = ReferenceEvaluator(model).run(None, {"x": x})
    np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-6)
    # t0..t3 are 8 KiB each; in place, all four live in one buffer.
    assert compiled.intermediate_bytes == 4 * 32 * 64 * 4
    assert compiled.arena_bytes == 32 * 64 * 4
