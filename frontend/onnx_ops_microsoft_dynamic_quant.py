"""What onnxruntime's `quantize_dynamic` writes beside MatMulInteger: QAttention and
QEmbedLayerNormalization for a BERT its transformer optimizer fused first (Attention with
int8 weights fed by a DynamicQuantizeLinear, EmbedLayerNormalization with uint8 tables), and
DynamicQuantizeLSTM for an LSTM (int8 W and R, transposed to [directions, in, 4 * hidden]).

Each is its float op (com.microsoft Attention / EmbedLayerNormalization, ONNX LSTM, by their
own converters) on dequantized operands: the constant weights and tables are dequantized
at compile time, (q - zero_point) * scale in f32, per tensor or per column; QAttention's
input, quantized in the run, is dequantized by graph ops. onnxruntime sums QAttention's
input projection exactly in int32 and scales once; onnxc sums the dequantized products in
f32, within a few f32 ulps of it. onnxruntime's DynamicQuantizeLSTM also quantizes X and
each step's hidden state to 8 bits on the fly, an approximation of its own that the op's
definition leaves open: onnxc computes those products in f32, within that quantization's
error of onnxruntime (tests/unit/ops/test_microsoft_dynamic_quant.py).
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


def _lstm_weights(ctx: NodeContext, q: int, scale: int, zero: int, what: str) -> np.ndarray:
    """DynamicQuantizeLSTM's W or R, [directions, in, 4 * hidden] 8-bit with a scale and
    zero point per direction (or per direction and column), as ONNX LSTM's [directions,
    4 * hidden, in] floats."""
    data = ctx.constant(q, what)
    if data.ndim != 3:
        raise ctx.invalid(f"{what} must be 3-D, got {list(data.shape)}")
    directions, _, columns = data.shape
    s = ctx.constant(scale, f"{what} scale").astype(np.float32)
    z = ctx.constant(zero, f"{what} zero point")
    if s.size not in (directions, directions * columns) or z.size != s.size:
        raise ctx.invalid(f"{what} scale and zero point must have {directions} or "
                          f"{directions * columns} elements, got {s.size} and {z.size}")
    if not np.all(np.isfinite(s)) or np.any(s == 0):
        raise ctx.invalid(f"{what} scale must be finite and nonzero")
    shape = (directions, 1, -1 if s.size > directions else 1)
    values = (data.astype(np.int32) - z.astype(np.int32).reshape(shape)).astype(np.float32)
    return np.ascontiguousarray((values * s.reshape(shape)).transpose(0, 2, 1))


def convert_dynamic_quantize_lstm(ctx: NodeContext) -> list[Result]:
    """DynamicQuantizeLSTM: ONNX LSTM (opset 14) with its dequantized W and R."""
    w = _lstm_weights(ctx, 1, 8, 9, "W")
    r = _lstm_weights(ctx, 2, 10, 11, "R")
    rest = [ctx.tensor(i) if ctx.has_input(i) else None for i in (3, 4, 5, 6, 7)]
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in ctx.node.attribute}
    used = [i for i in range(len(ctx.node.output)) if ctx.output_used(i)]
    return onnx_node(ctx, "LSTM", [ctx.tensor(0), w, r, *rest], attrs,
                     outputs=len(ctx.node.output), used=used, opset=14)


CONVERTERS: dict[str, Converter] = {
    "QAttention": convert_qattention,
    "QEmbedLayerNormalization": convert_qembed_layer_normalization,
    "DynamicQuantizeLSTM": convert_dynamic_quantize_lstm,
}
"""The com.microsoft ops of onnxruntime's quantize_dynamic, by op type."""
