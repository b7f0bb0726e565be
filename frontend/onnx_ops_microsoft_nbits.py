"""com.microsoft MatMulNBits: weight-only quantized matmul (onnxruntime's int4/int8 format).

onnxruntime's `MatMulNBitsQuantizer` (and onnxruntime-genai, Olive, optimum, which use it)
replaces a MatMul by a float weight with MatMulNBits(A, B, scales, zero_points?, g_idx?,
bias?): B the weight's columns quantized to `bits` (2, 4 or 8) unsigned bits in blocks of
`block_size` rows along K, packed [N, k_blocks, block_size * bits / 8] (low bits first);
scales [N, k_blocks] (or flat), of A's type, of any sign; zero_points packed uint8
([N, ceil(k_blocks * bits / 8)], low bits first) or of the scales' type ([N, k_blocks]),
2^(bits-1) when absent; g_idx the block of each k row (act order); bias [N]. The semantics
are onnxruntime's CPU kernel's (contrib_ops/cpu/quantization/matmul_nbits.cc and its
CheckInputs): y = A @ dequantized(B)^T + bias, with B[n, k] = (q - zp) * scale of block
g_idx[k] (or k // block_size).

It imports as one graph.matmul_weight_quantized (dialects/graph_weight_quant.py) that keeps B
packed; the zero points are unpacked to floats at import, a g_idx that is just
k // block_size is dropped. B, scales, zero points and g_idx must be constants (the kernel
repacks them at compile time); A and bias may be anything. float and float16 A are taken
(as onnxruntime's CPU kernel registers), float16 computed in f32 between casts
(widen-half-precision). accuracy_level is kept: levels 0-3 compute in f32; level 4 lets A
be quantized to int8 per block, which the kernel does as onnxruntime does for 4-bit weights
on AVX512-VNNI (weight_quant_int8.py) and elsewhere computes in f32, more accurately.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import DenseArrayBase, Float16Type, Float32Type, IntegerAttr, i64

from onnxc.dialects import graph
from onnxc.dialects.graph_base import tensor_type
from onnxc.dialects.graph_weight_quant import WEIGHT_BITS, blob_size, unpack_bits
from onnxc.frontend.onnx_context import NodeContext, Result, Tensor
from onnxc.frontend.onnx_ops_math import Converter

_ATTRIBUTES = ("K", "N", "bits", "block_size", "accuracy_level", "weight_prepacked")


def _shape_is(array: np.ndarray, n: int, per_row: int) -> bool:
    """[n * per_row] or [n, per_row] (the 1-D form onnxruntime keeps for old models)."""
    return tuple(array.shape) in ((n * per_row,), (n, per_row))


def _attributes(ctx: NodeContext) -> tuple[int, int, int, int, int]:
    for attr in ctx.node.attribute:
        if attr.name not in _ATTRIBUTES:
            raise ctx.unsupported(f"attribute '{attr.name}' (the op takes "
                                  f"{', '.join(_ATTRIBUTES)})")
    if int(ctx.attr("weight_prepacked", 0)) != 0:
        raise ctx.unsupported("weight_prepacked B (an execution provider's own layout); "
                              "only the portable layout (0) is read")
    k, n = int(ctx.attr("K")), int(ctx.attr("N"))
    bits, block = int(ctx.attr("bits", 4)), int(ctx.attr("block_size"))
    level = int(ctx.attr("accuracy_level", 0))
    if bits not in WEIGHT_BITS:
        raise ctx.invalid(f"bits must be 2, 4 or 8, got {bits}")
    if block < 16 or block & (block - 1):
        raise ctx.invalid(f"block_size must be a power of 2 >= 16, got {block}")
    if k < 1 or n < 1:
        raise ctx.invalid(f"K and N must be positive, got K = {k}, N = {n}")
    if not 0 <= level <= 4:
        raise ctx.invalid(f"accuracy_level must be in [0, 4], got {level}")
    return k, n, bits, block, level


def _zero_points(ctx: NodeContext, n: int, k_blocks: int, bits: int,
                 dtype: np.dtype) -> np.ndarray:
    """[N, k_blocks] zero points of the scales' dtype, unpacked from uint8 nibbles."""
    if not ctx.has_input(3):
        return np.full((n, k_blocks), 2 ** (bits - 1), dtype)
    zp = ctx.constant(3, "zero_points")
    if zp.dtype == np.uint8:
        per_row = -(-k_blocks * bits // 8)
        if not _shape_is(zp, n, per_row):
            raise ctx.invalid(f"uint8 zero_points of shape {list(zp.shape)}, expected "
                              f"[{n}, {per_row}] (or [{n * per_row}])")
        return unpack_bits(zp.reshape(n, 1, per_row), bits, k_blocks).astype(dtype)
    if zp.dtype != dtype:
        raise ctx.invalid(f"zero_points of type {zp.dtype} are neither uint8 nor the "
                          f"scales' type {dtype}")
    if not _shape_is(zp, n, k_blocks):
        raise ctx.invalid(f"zero_points of shape {list(zp.shape)}, expected [{n}, {k_blocks}]")
    return zp.reshape(n, k_blocks)


def _groups(ctx: NodeContext, k: int, k_blocks: int, block: int) -> np.ndarray | None:
    """g_idx truncated to K; None when absent or just k // block_size."""
    if not ctx.has_input(4):
        return None
    g = ctx.constant(4, "g_idx")
    if g.dtype != np.int32 or g.ndim != 1 or len(g) not in (k, k_blocks * block):
        raise ctx.invalid(f"g_idx must be int32 [K = {k}] or [{k_blocks * block}], got "
                          f"{g.dtype} {list(g.shape)}")
    if g.size and (g.min() < 0 or g.max() >= k_blocks):
        raise ctx.invalid(f"g_idx values must be blocks in [0, {k_blocks})")
    g = g[:k].astype(np.int64)
    return None if np.array_equal(g, np.arange(k) // block) else g


def convert_matmul_nbits(ctx: NodeContext) -> list[Result]:
    """MatMulNBits -> graph.matmul_weight_quantized (the module docstring)."""
    k, n, bits, block, level = _attributes(ctx)
    el = ctx.element_type(0)
    if not isinstance(el, Float32Type | Float16Type):
        raise ctx.unsupported(f"A of type {el} (float and float16, as onnxruntime's CPU "
                              "kernel)")
    a_shape = ctx.shape(0)
    if not a_shape or a_shape[-1] != k:
        raise ctx.invalid(f"A of shape {list(a_shape)} does not end in K = {k}")
    k_blocks, blob = -(-k // block), blob_size(block, bits)
    b = ctx.constant(1, "B")
    if b.dtype != np.uint8 or tuple(b.shape) != (n, k_blocks, blob):
        raise ctx.invalid(f"B must be uint8 [N, k_blocks, blob_size] = [{n}, {k_blocks}, "
                          f"{blob}], got {b.dtype} {list(b.shape)}")
    scales = ctx.constant(2, "scales")
    if ctx.element_type(2) != el or not _shape_is(scales, n, k_blocks):
        raise ctx.invalid(f"scales must be {el} [{n}, {k_blocks}], got "
                          f"{ctx.element_type(2)} {list(scales.shape)}")
    zero = _zero_points(ctx, n, k_blocks, bits, scales.dtype)
    groups = _groups(ctx, k, k_blocks, block)
    operands = [ctx.operand(0), ctx.materialize(Tensor.of_array(b)),
                ctx.materialize(Tensor.of_array(scales.reshape(n, k_blocks))),
                ctx.materialize(Tensor.of_array(zero))]
    if ctx.has_input(5):
        if ctx.element_type(5) != el or tuple(ctx.shape(5)) != (n,):
            raise ctx.invalid(f"bias must be {el} [{n}], got {ctx.element_type(5)} "
                              f"{list(ctx.shape(5))}")
        operands.append(ctx.operand(5))
    properties = {"bits": IntegerAttr(bits, i64), "block_size": IntegerAttr(block, i64)}
    if level:
        properties["accuracy_level"] = IntegerAttr(level, i64)
    if groups is not None:
        properties["group_index"] = DenseArrayBase.from_list(i64, groups.tolist())
    op = graph.MatMulWeightQuantizedOp.create(
        operands=operands, result_types=[tensor_type((*a_shape[:-1], n), el)],
        properties=properties)
    return [ctx.emit1(op)]


CONVERTERS: dict[str, Converter] = {
    "MatMulNBits": convert_matmul_nbits,
}
