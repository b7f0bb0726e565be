"""Inverse-pair rows: lit cases keep their results, positives really rewrite, Quantize then
Dequantize is a real numeric change (hence the option), and the new ops run natively."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper
from xdsl.context import Context

import onnxc
from onnxc.lowering.graph_to_loops.interpreter import interpret
from onnxc.lowering.graph_to_loops.convert_graph_to_loops import ConvertGraphToLoopsPass
from onnxc.passes.verify_numerics import check_pass_equivalence
from tests.ir_helpers import parse_graph as parse
from tests.ir_helpers import split_lit_cases

LIT = Path(__file__).parents[1] / "lit" / "passes"
ROWS = [
    "cancel-squeeze-unsqueeze", "cancel-transposes", "cancel-layout-conversions",
    "cancel-quant-dequant", "cancel-concat-slice",
]
ROUNDING = "cancel-quant-dequant{allow-rounding-change=true}"



def lit_cases(row: str) -> list[str]:
    return split_lit_cases(LIT / f"{row}.mlir")


def op_names(module) -> list[str]:
    return sorted(op.name for op in module.walk())




QUANT_DEQUANT = """
func.func @main(%x: tensor<64xf32>) -> tensor<64xf32> {
  %0 = graph.quantize_linear(%x) {scale = 5.000000e-02 : f32, zero_point = -3 : i64} : (tensor<64xf32>) -> tensor<64xi8>
  %1 = graph.dequantize_linear(%0) {scale = 5.000000e-02 : f32, zero_point = -3 : i64} : (tensor<64xi8>) -> tensor<64xf32>
  func.return %1 : tensor<64xf32>
}"""


def test_quant_dequant_cancels_only_with_rounding_allowed():
    module = parse(QUANT_DEQUANT)
    assert op_names(check_pass_equivalence(module, "cancel-quant-dequant")) == op_names(module)
    # Dropping the pair changes results by up to scale / 2: a real change of numerics...
    with pytest.raises(AssertionError, match="changed the results"):
        check_pass_equivalence(module, ROUNDING)
    # ...within the rounding the option allows.
    after = check_pass_equivalence(module, ROUNDING, rtol=0.0, atol=0.025 + 1e-6)
    assert not any(op.name.startswith("graph.") for op in after.walk())


@settings(max_examples=30, deadline=None)
@given(st.permutations(range(4)), st.permutations(range(4)))
def test_transposes_compose_on_random_permutations(p1, p2):
    shape = (2, 3, 4, 5)
    s1 = [shape[p] for p in p1]
    s2 = [s1[p] for p in p2]
    t = lambda s: "tensor<" + "x".join(map(str, s)) + "xf32>"
    a = lambda p: ", ".join(map(str, p))
    text = f"""
func.func @main(%x: {t(shape)}) -> {t(s2)} {{
  %0 = graph.transpose(%x) {{perm = array<i64: {a(p1)}>}} : ({t(shape)}) -> {t(s1)}
  %1 = graph.transpose(%0) {{perm = array<i64: {a(p2)}>}} : ({t(s1)}) -> {t(s2)}
  func.return %1 : {t(s2)}
}}"""
    after = check_pass_equivalence(parse(text), "cancel-transposes")
    assert sum(op.name == "graph.transpose" for op in after.walk()) <= 1


def _quant_model(zero: np.ndarray) -> onnx.ModelProto:
    qtype = helper.np_dtype_to_tensor_dtype(zero.dtype)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])]
    g = helper.make_graph(
        nodes, "q", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 40])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 40]),
         helper.make_tensor_value_info("q", qtype, [3, 40])],
        [numpy_helper.from_array(np.array(0.05, np.float32), "s"),
         numpy_helper.from_array(zero, "z")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 9
    return model


@pytest.mark.parametrize("zero", [np.array(-3, np.int8), np.array(128, np.uint8)])
def test_quantize_dequantize_run_natively_like_onnxruntime(zero):
    model = _quant_model(zero)
    x = (np.random.default_rng(0).standard_normal((3, 40)) * 4).astype(np.float32)
    x[0, :6] = [0.025, 0.075, -0.025, -0.125, 100.0, -100.0]  # ties to even, saturation
    expected = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    actual = onnxc.compile(model, opt_level=0)(x)
    for a, e in zip(actual, expected):
        assert a.dtype == e.dtype
        np.testing.assert_array_equal(a, e)


def test_layout_convert_lowers_to_a_permutation():
    """NCHW -> NHWC: the result buffer holds the data in NHWC memory order."""
    module = parse("""
func.func @main(%x: tensor<2x3x4x5xf32>) -> tensor<2x3x4x5xf32, #layout.spec<"NHWC">> {
  %0 = layout.convert %x : tensor<2x3x4x5xf32> -> tensor<2x3x4x5xf32, #layout.spec<"NHWC">>
  func.return %0 : tensor<2x3x4x5xf32, #layout.spec<"NHWC">>
}""")
    ConvertGraphToLoopsPass().apply(Context(), module)
    x = np.random.default_rng(1).standard_normal((2, 3, 4, 5)).astype(np.float32)
    (y,) = interpret(module, [x])
    np.testing.assert_array_equal(y, np.transpose(x, (0, 2, 3, 1)))


def test_run_time_per_axis_quantization_is_reported_unsupported():
    from onnxc.errors import UnsupportedOpError
    from onnxc.frontend import import_onnx

    g = helper.make_graph(
        [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=1)], "q",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("s", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("q", TensorProto.UINT8, [2, 3])],
        [numpy_helper.from_array(np.zeros(3, np.uint8), "z")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(UnsupportedOpError, match="must be a constant"):
        import_onnx(model)
