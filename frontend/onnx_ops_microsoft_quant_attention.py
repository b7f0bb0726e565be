"""QAttention and QEmbedLayerNormalization: what onnxruntime's `quantize_dynamic` writes for
a BERT its transformer optimizer fused first (Attention with int8 weights fed by a
DynamicQuantizeLinear, EmbedLayerNormalization with uint8 tables).

Each is its float contrib op (com.microsoft Attention / EmbedLayerNormalization, by their
own converters) on dequantized operands: the constant weights and tables are dequantized
at compile time, (q - zero_point) * scale in f32, per tensor or per column; QAttention's
input, quantized in the run, is dequantized by graph ops. onnxruntime sums the input
projection exactly in int32 and scales once; onnxc sums the dequantized products in f32,
within a few f32 ulps of it (tests/unit/ops/test_microsoft_quant_attention.py).
"""

from __future__ import annotations

import numpy as np
import onnx

from onnxc.frontend.onnx_context import NodeContext, Result
from onnxc.frontend.onnx_ops_math import Converter
from onnxc.frontend.onnx_ops_microsoft import onnx_node

_INTEGER_TABLES = (np.int8, np.uint8)


def _dequantized_constant(ctx: NodeContext, q: int, scale: int, zero: int | None,
                          what: str, per_column_axis: int | None = None) -> np.ndarray:
    """Constant input `q` dequantized with constant `scale` and `zero` (inputs; zero may be
    omitted): per tensor, or per column along `per_column_axis` when the scale has that
    many elements."""
    data = ctx.constant(q, what)
    if data.dtype.type not in _INTEGER_TABLES:
        raise ctx.unsupported(f"{what} of element type {data.dtype} (int8 or uint8 only)")
    s = ctx.constant(scale, f"{what} scale").astype(np.float32)
    z = (ctx.constant(zero, f"{what} zero point") if zero is not None and ctx.has_input(zero)
         else np.zeros(1, data.dtype))
    if not np.all(np.isfinite(s)) or np.any(s == 0):
        raise ctx.invalid(f"{what} scale must be finite and nonzero")
    if z.dtype != data.dtype:
        raise ctx.invalid(f"{what} zero point is {z.dtype}, the data {data.dtype}")
    shape = [1] * data.ndim
    for name, v in (("scale", s), ("zero point", z)):
        if v.size == 1:
            continue
        if per_column_axis is None or v.size != data.shape[per_column_axis]:
            raise ctx.invalid(f"{what} {name} has {v.size} elements: one, or one per column "
                              f"of {list(data.shape)}")
    if per_column_axis is not None:
        shape[per_column_axis] = -1
    s = s.reshape(shape if s.size > 1 else [1] * data.ndim)
    z = z.astype(np.int32).reshape(shape if z.size > 1 else [1] * data.ndim)
    return ((data.astype(np.int32) - z).astype(np.float32) * s).astype(np.float32)


def _dequantized_input(ctx: NodeContext, q: int, scale: int, zero: int) -> Result:
    """Run-time input `q` (8-bit) as f32: (q - zero) * scale, scale and zero scalars."""
    value = onnx_node(ctx, "Cast", [ctx.tensor(q)], {"to": onnx.TensorProto.FLOAT},
                      opset=13)[0]
    if ctx.has_input(zero):
        z = onnx_node(ctx, "Cast", [ctx.tensor(zero)], {"to": onnx.TensorProto.FLOAT},
                      opset=13)[0]
        value = onnx_node(ctx, "Sub", [value, z], opset=14)[0]
    return onnx_node(ctx, "Mul", [value, ctx.tensor(scale)], opset=14)[0]


def convert_qattention(ctx: NodeContext) -> list[Result]:
    """QAttention: com.microsoft Attention of the dequantized input (8-bit, quantized in the
    run) and weights (8-bit constants, scale per tensor or per column), with its bias, key
    mask and past state."""
    for i, what in ((3, "input_scale"), (0, "input")):
        if not ctx.has_input(i):
            raise ctx.invalid(f"input {i} ({what}) is required")
    x = _dequantized_input(ctx, 0, 3, 6)
    weights = _dequantized_constant(ctx, 1, 4, 7, "weight", per_column_axis=1)
    bias = ctx.tensor(2) if ctx.has_input(2) else None
    mask = ctx.tensor(5) if ctx.has_input(5) else None
    past = ctx.tensor(8) if ctx.has_input(8) else None
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in ctx.node.attribute}
    used = [i for i in range(len(ctx.node.output)) if ctx.output_used(i)]
    return onnx_node(ctx, "Attention", [x, weights, bias, mask, past], attrs,
                     outputs=len(ctx.node.output), used=used, opset=1, domain="com.microsoft")


def convert_qembed_layer_normalization(ctx: NodeContext) -> list[Result]:
    """QEmbedLayerNormalization: com.microsoft EmbedLayerNormalization of the dequantized
    tables (word, position, segment embeddings, gamma, beta; 8-bit constants)."""
    tables = [_dequantized_constant(ctx, q, s, z, what) if ctx.has_input(q) else None
              for q, s, z, what in ((2, 8, 13, "word_embedding"),
                                    (3, 9, 14, "position_embedding"),
                                    (4, 10, 15, "segment_embedding"),
                                    (5, 11, 16, "gamma"), (6, 12, 17, "beta"))]
    word, position, segment, gamma, beta = tables
    ids = [ctx.tensor(i) if ctx.has_input(i) else None for i in (0, 1, 7)]
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in ctx.node.attribute}
    used = [i for i in range(len(ctx.node.output)) if ctx.output_used(i)]
    return onnx_node(ctx, "EmbedLayerNormalization",
                     [ids[0], ids[1], word, position, segment, gamma, beta, ids[2]], attrs,
                     outputs=len(ctx.node.output), used=used, opset=1, domain="com.microsoft")


CONVERTERS: dict[str, Converter] = {
    "QAttention": convert_qattention,
    "QEmbedLayerNormalization": convert_qembed_layer_normalization,
}
"""onnxruntime's dynamically quantized transformer ops, by op type."""
