"""GatherBlockQuantized: a Gather from a block-quantized constant table, as onnxruntime's
MatMulNBitsQuantizer writes for the token embedding of an int4 LLM
(`op_types_to_quantize=("MatMul", "Gather")`).

The table is dequantized at compile time ((q - zero_point) * scale per block of
`block_size` along `quantize_axis`; uint8 data packs 8 / bits values per byte along the last
axis, low bits first; FP8/FP4 data is float(q) * scale), then gathered by ONNX Gather. An
index outside [-s, s) gives a zero slice, as onnxruntime defines for this op (ONNX Gather
would stop the run): the gather reads index 0 there and a Where zeroes the slice.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx

from onnxc.dialects.graph_weight_quant import unpack_bits
from onnxc.frontend.onnx_context import NodeContext, Result
from onnxc.frontend.onnx_ops_math import Converter
from onnxc.frontend.onnx_ops_microsoft import onnx_node

_FLOAT_CODES = (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e4m3fnuz, ml_dtypes.float8_e5m2,
                ml_dtypes.float8_e5m2fnuz, ml_dtypes.float4_e2m1fn)


def _unpacked(ctx: NodeContext, data: np.ndarray, bits: int, what: str) -> np.ndarray:
    """uint8 `data` with 8 / bits values per byte along the last axis, as int32 values."""
    if bits == 8:
        return data.astype(np.int32)
    flat = data.reshape(-1, 1, data.shape[-1])
    values = unpack_bits(flat, bits, data.shape[-1] * (8 // bits))
    return values.reshape(*data.shape[:-1], -1)


def dequantized_table(ctx: NodeContext) -> np.ndarray:
    """The table of input 0 dequantized by scales (input 2) and zero points (input 3)."""
    data = ctx.constant(0, "data")
    scales = ctx.constant(2, "scales")
    bits = int(ctx.attr("bits", 4))
    block = int(ctx.attr("block_size", 128))
    rank = data.ndim
    axis = int(ctx.attr("quantize_axis", 1))
    if not -rank <= axis < rank:
        raise ctx.invalid(f"quantize_axis {axis} is out of range for rank {rank}")
    axis %= rank
    is_float = data.dtype.type in _FLOAT_CODES
    if is_float:
        if ctx.has_input(3):
            raise ctx.invalid("zero_points must be omitted for FP8 and FP4 data")
        values = data.astype(np.float32)
    elif data.dtype == np.uint8:
        if bits not in (2, 4, 8):
            raise ctx.invalid(f"bits must be 2, 4 or 8 for uint8 data, got {bits}")
        values = _unpacked(ctx, data, bits, "data")
    elif data.dtype.type in (ml_dtypes.int4, ml_dtypes.uint4):
        values = data.astype(np.int32)
    else:
        raise ctx.unsupported(f"data of element type {data.dtype}")
    size = values.shape[axis]
    if block == 0 and is_float:
        block = size
    if block < 16 or block & (block - 1):
        raise ctx.invalid(f"block_size must be a power of 2 of at least 16, got {block}")
    blocks = -(-size // block)
    want = [*values.shape[:axis], blocks, *values.shape[axis + 1:]]
    if scales.ndim != rank or any(s not in (w, 1) if is_float else s != w
                                  for s, w in zip(scales.shape, want)):
        raise ctx.invalid(f"scales {list(scales.shape)} must be {want} (blocks of {block} "
                          f"along axis {axis})")
    if not is_float:
        if ctx.has_input(3):
            zero = ctx.constant(3, "zero_points")
            zero = _unpacked(ctx, zero, bits, "zero_points") if zero.dtype == np.uint8 \
                else zero.astype(np.int32)
            if list(zero.shape) != want:
                raise ctx.invalid(f"zero_points {list(zero.shape)} must be {want}")
        else:
            zero = np.full(want, 1 << (bits - 1) if data.dtype == np.uint8 else 0, np.int32)
        values = values - np.repeat(zero, block, axis=axis).take(range(size), axis=axis)
    scale = np.repeat(scales.astype(np.float32), block, axis=axis).take(range(size), axis=axis)
    return (values.astype(np.float32) * scale).astype(scales.dtype)


def convert_gather_block_quantized(ctx: NodeContext) -> list[Result]:
    """GatherBlockQuantized: Gather(dequantized table, indices) along gather_axis, zero
    slices for indices outside [-s, s)."""
    table = dequantized_table(ctx)
    rank = table.ndim
    axis = int(ctx.attr("gather_axis", 0))
    if not -rank <= axis < rank:
        raise ctx.invalid(f"gather_axis {axis} is out of range for rank {rank}")
    axis %= rank
    size = table.shape[axis]
    indices = onnx_node(ctx, "Cast", [ctx.tensor(1)], {"to": onnx.TensorProto.INT64},
                        opset=13)[0]
    low = onnx_node(ctx, "GreaterOrEqual", [indices, np.array(-size, np.int64)], opset=16)[0]
    high = onnx_node(ctx, "Less", [indices, np.array(size, np.int64)], opset=13)[0]
    valid = onnx_node(ctx, "And", [low, high], opset=7)[0]
    safe = onnx_node(ctx, "Where", [valid, indices, np.array(0, np.int64)], opset=16)[0]
    gathered = onnx_node(ctx, "Gather", [table, safe], {"axis": axis}, opset=13)[0]
    after = rank - 1 - axis
    if after:
        valid = onnx_node(ctx, "Unsqueeze", [valid, np.arange(-after, 0, dtype=np.int64)],
                          opset=13)[0]
    return onnx_node(ctx, "Where", [valid, gathered, np.zeros((), table.dtype)], opset=16)


CONVERTERS: dict[str, Converter] = {"GatherBlockQuantized": convert_gather_block_quantized}
"""The block-quantized gather, by op type (com.microsoft)."""
