"""Kernels of linear quantization: per tensor, per axis and blocked, every quantized type.

QuantizeLinear divides in the op's division type, then for an integer result saturates,
rounds half to even (`math.roundeven`) and adds the zero point in float before converting
(`round_saturate`: NaN gives the type's minimum, as onnxruntime), so the integer conversion
never overflows; for a float8/float4 result it converts as ONNX Cast does
(`elementwise.convert`, which reuses cast_formats). DequantizeLinear widens the integer,
subtracts the zero point exactly in i32 and scales in f32.

Per-tensor parameters are constants of the kernel; per-axis and blocked ones come as two
constant tables (scale f32, zero point i32 or f32) shaped [outer', blocks, inner'] for the
input viewed as [outer, D, inner] around the axis (per axis: [1, D, 1], block size 1). The
loops run outer, block, position in block, inner: the scale is loop-invariant in the two
innermost loops unless a blocked axis is not the last, where it is contiguous in `inner`.
"""

from __future__ import annotations

import math as pymath

import numpy as np
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import (
    BFloat16Type,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float64Type,
    f32,
    i32,
)
from xdsl.ir import SSAValue

from onnxc.dialects import graph
from onnxc.dialects.dense_data import from_numpy
from onnxc.dialects.graph import shape_of
from onnxc.dialects.graph_quant import is_float_quantized, quantized_range
from onnxc.lowering.graph_to_loops.elementwise import (
    MIN_PARALLEL_ELEMENTS,
    convert,
    map_elementwise,
)
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder
from onnxc.lowering.graph_to_loops.rules import KernelRule
from onnxc.target import Target


def _compute_type(t):
    """Where x / scale is computed: f16 natively (LLVM rounds each op once), f64 natively,
    everything else (f32, bf16) in f32."""
    return t if isinstance(t, Float16Type | Float64Type) else f32


def _divide(kb: KernelBuilder, x: SSAValue, scale: SSAValue, div_type) -> SSAValue:
    """x / scale rounded as `div_type` computes it, returned in f32 or f64 (exact)."""
    ct = _compute_type(div_type)
    q = kb.div(convert(kb, x, ct), convert(kb, scale, ct))
    if isinstance(div_type, BFloat16Type):
        q = convert(kb, convert(kb, q, div_type), f32)
    return q if isinstance(q.type, Float64Type) else convert(kb, q, f32)


def quantize_value(kb: KernelBuilder, op: graph.QuantizeLinearOp, x: SSAValue,
                   scale: SSAValue, zero: SSAValue | None) -> SSAValue:
    """One element: `scale` in any float type, `zero` an f32 (None: 0)."""
    dst = op.quantized_type()
    q = _divide(kb, x, scale, op.division_type())
    if zero is not None:
        zero = convert(kb, zero, q.type)
    if is_float_quantized(dst):
        if zero is not None:
            q = kb.add(q, zero)
        return convert(kb, q, dst, op.saturates())
    return round_saturate(kb, q, zero, dst)


def round_saturate(kb: KernelBuilder, q: SSAValue, zero: SSAValue | None, dst) -> SSAValue:
    """clamp(round_half_even(q) + zero, lo, hi) as the integer type `dst`, computed as
    onnxruntime's MLAS does: clamp q to [lo - zero, hi - zero] first (equal, the bounds
    being integers), with `q > b ? q : b` and `q < b ? q : b`, which x86 does in one
    vmaxps / vminps each and which send NaN to lo."""
    lo, hi = quantized_range(dst)
    low, high = kb.constant(float(lo), q.type), kb.constant(float(hi), q.type)
    if zero is not None:
        low, high = kb.sub(low, zero), kb.sub(high, zero)
    q = kb.select(kb.insert(arith.CmpfOp(q, low, "ogt")), q, low)
    q = kb.select(kb.insert(arith.CmpfOp(q, high, "olt")), q, high)
    q = kb.insert(math.RoundEvenOp(q))
    if zero is not None:
        q = kb.add(q, zero)
    return convert(kb, kb.insert(arith.FPToSIOp(q, i32)), dst)


def dequantize_value(kb: KernelBuilder, op: graph.DequantizeLinearOp, x: SSAValue,
                     scale: SSAValue, zero: SSAValue | None) -> SSAValue:
    """One element: `scale` f32 (or f64), `zero` i32 for integer inputs, f32 for float
    ones; the arithmetic in f32, as onnx.reference."""
    src = x.type
    if is_float_quantized(src) or src.width.data == 32:  # type: ignore[union-attr]
        centred = convert(kb, x, f32)
        if zero is not None:
            centred = kb.sub(centred, convert(kb, zero, f32))
    else:
        wide = convert(kb, x, i32)
        if zero is not None:
            wide = kb.sub(wide, zero)
        centred = convert(kb, wide, f32)
    return convert(kb, kb.mul(centred, convert(kb, scale, f32)), op.real_type())


# --------------------------------------------------------------------------- per tensor


def _table_type(op):
    """The type scales are held in: f32 (exact for f16, bf16 and f32 scales), f64 for f64."""
    return op.scale_type() if isinstance(op.scale_type(), Float64Type) else f32


def _per_tensor(op, kb: KernelBuilder, ins, outs, element) -> None:
    float_q = is_float_quantized(op.quantized_type())
    zero_value = op.zero_points().item()
    # f16 and bf16 scales are exact in f32
    scale = kb.constant(float(op.scales()), _table_type(op))
    if isinstance(op, graph.QuantizeLinearOp):
        zero = None if zero_value == 0 else kb.constant(float(zero_value), f32)
    else:
        zero = None if zero_value == 0 else kb.constant(zero_value, f32 if float_q else i32)
    map_elementwise(kb, ins[:1], outs[0], lambda kb, args: element(kb, op, args[0], scale, zero))


# --------------------------------------------------------------------------- tables


def _geometry(op) -> tuple[int, int, int, int, int, tuple[int, int, int]]:
    """(outer, D, inner, block, blocks, table shape) of a per-axis or blocked op."""
    shape = shape_of(op.input)
    axis = op.axis_of()
    outer, d, inner = pymath.prod(shape[:axis]), shape[axis], pymath.prod(shape[axis + 1:])
    block = op.block_size_of()
    if block == 0:
        return outer, d, inner, 1, d, (1, d, 1)
    blocks = -(-d // block)
    return outer, d, inner, block, blocks, (outer, blocks, inner)


def quant_constants(op, target: Target) -> list[DenseIntOrFPElementsAttr]:
    """The scale and zero-point tables of a per-axis or blocked op (none per tensor)."""
    if op.is_per_tensor():
        return []
    table = _geometry(op)[5]
    scale_el = _table_type(op)
    scales = op.scales().astype(np.float64).reshape(table)
    float_q = is_float_quantized(op.quantized_type())
    zeros = op.zero_points().reshape(table)
    return [from_numpy(scales, scale_el), from_numpy(zeros, f32 if float_q else i32)]


def _tabled(op, kb: KernelBuilder, ins, outs, element) -> None:
    outer, d, inner, block, blocks, (t_outer, _, t_inner) = _geometry(op)
    x = kb.view(ins[0], [outer, d, inner])
    y = kb.view(outs[0], [outer, d, inner])
    scales, zeros = ins[1], ins[2]
    ragged = d % block != 0

    def at(o: Index, b: Index, i: Index) -> list[Index]:
        return [o if t_outer > 1 else 0, b, i if t_inner > 1 else 0]

    def per_block(o: Index, b: Index) -> None:
        first = kb.imul(b, block)
        length: Index = kb.imin(block, kb.isub(d, first)) if ragged else block

        def per_position(j: Index) -> None:
            def per_element(i: Index) -> None:
                where = at(o, b, i)
                scale, zero = kb.load(scales, where), kb.load(zeros, where)
                index = [o, kb.iadd(first, j), i]
                kb.store(element(kb, op, kb.load(x, index), scale, zero), y, index)

            kb.for_(0, inner, per_element)

        kb.for_(0, length, per_position)

    def per_outer(o: Index) -> None:
        kb.for_(0, blocks, lambda b: per_block(o, b))

    total = outer * d * inner
    if isinstance(total, int) and total < MIN_PARALLEL_ELEMENTS:
        kb.for_(0, outer, per_outer)
    elif not isinstance(outer, int) or outer > 1:
        kb.parallel_for(0, outer, per_outer)
    else:
        kb.parallel_for(0, blocks, lambda b: per_block(0, b))


def quantize_kernel(op: graph.QuantizeLinearOp, kb, ins, outs):
    (_per_tensor if op.is_per_tensor() else _tabled)(op, kb, ins, outs, quantize_value)


def dequantize_kernel(op: graph.DequantizeLinearOp, kb, ins, outs):
    (_per_tensor if op.is_per_tensor() else _tabled)(op, kb, ins, outs, dequantize_value)


RULES = (
    KernelRule(graph.QuantizeLinearOp, quantize_kernel, constants=quant_constants,
               symbolic=True),
    KernelRule(graph.DequantizeLinearOp, dequantize_kernel, constants=quant_constants,
               symbolic=True),
)
"""symbolic: the quantized tensor's sizes may be symbolic (the scales and zero points are
tables of the static axis)."""
