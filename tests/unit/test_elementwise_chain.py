"""fuse-elementwise on the elementwise_chain benchmark: relu(x * a + b) * c + x becomes one
graph.fused_elementwise (the algebra passes first turn x * a + b into graph.weighted_sum,
which must still fuse), so the compiled model makes one pass with no intermediate buffer."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort

import onnxc
from onnxc.zoo_micro import elementwise_chain


def test_chain_is_one_fused_loop_without_intermediates():
    model = elementwise_chain(4096 + 3)
    kinds = [op.name for op in onnxc.optimize(model, 3).walk()
             if op.name.startswith("graph.") and op.name not in ("graph.constant", "graph.yield")]
    assert kinds == ["graph.fused_elementwise"], kinds
    compiled = onnxc.compile(model, cache_dir=False)
    assert compiled.intermediate_bytes == 0
    x = np.random.default_rng(0).standard_normal(4096 + 3).astype(np.float32)
    expected = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]
    np.testing.assert_allclose(compiled(x)[0], expected, rtol=1e-6, atol=1e-6)


def test_weighted_sum_fuses_into_its_consumer():
    from xdsl.dialects.builtin import f32
    from xdsl.ir import Block

    from onnxc.passes.fusion_scalar import BodyBuilder, scalar_meaning
    from tests.ir_helpers import module

    m = module({"x": (8,), "z": (8,)},
               [("%w = graph.weighted_sum(%x, %z) {coefficients = array<f64: 2.0, 1.0>}"
                " : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>")], [("w", (8,))])
    (op,) = [o for o in m.walk() if o.name == "graph.weighted_sum"]
    inputs, emit = scalar_meaning(op)
    assert inputs == list(op.operands)
    block = Block(arg_types=[f32, f32])
    result = emit(BodyBuilder(block), block.args)
    two, mul, add = block.ops
    assert [o.name for o in block.ops] == ["arith.constant", "arith.mulf", "arith.addf"]
    assert two.value.value.data == 2.0
    assert list(mul.operands) == [block.args[0], two.result]  # 2 x
    assert list(add.operands) == [mul.result, block.args[1]]  # + z (coefficient 1: as is)
    assert result is add.result


def test_pow_by_small_integer_is_a_product():
    """x ** 2, x ** 3 and x ** -1 (a constant exponent) need no powf call; values match."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    for exponent in (1.0, 2.0, 3.0, -1.0, 0.5):
        g = helper.make_graph(
            [helper.make_node("Pow", ["x", "e"], ["y"])], "pow",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [67])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [67])],
            [numpy_helper.from_array(np.array(exponent, np.float32), "e")])
        model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        onnx.checker.check_model(model)
        x = np.random.default_rng(1).uniform(0.5, 2.0, 67).astype(np.float32)
        expected = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]
        got = onnxc.compile(model, cache_dir=False, num_threads=1)(x)[0]
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=0)
