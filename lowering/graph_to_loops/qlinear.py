"""Generic kernels of graph.qlinear_conv and graph.qlinear_matmul (any case the contract allows).

Each output element is one i32 reduction of `(x - input_zero_point) * (w - weight_zero_point[m])`
over its window (conv: input channels of the group times kernel taps, padding skipped: a
padded input equals the zero point and adds nothing) or over K (matmul), plus the bias; then
`requantize` gives it the result type. Per-channel output scales and weight zero points come
in as constant tables after the operands (`qlinear_constants`). A qlinear_conv_add's conv
adds its residual to each requantized element (`residual_sum`).

These are the reference-shaped kernels every case falls back to; the packed int8 kernels
(int8_gemm.py) take the common shapes. The conv reads its input and writes its output in
their layouts (plain, or a permutation such as NHWC); the weight is plain.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float32Type,
    IntegerType,
    Signedness,
    f32,
    i32,
)
from xdsl.ir import SSAValue

from onnxc.dialects.dense_data import from_numpy
from onnxc.dialects.graph_base import int_of, ints_of, shape_of
from onnxc.dialects.graph_shapes import broadcast_shapes
from onnxc.dialects.graph_qlinear import (
    QLinearConvAddOp,
    QLinearConvOp,
    QLinearMatMulOp,
    QuantizedProductOp,
    is_i32,
)
from onnxc.dialects.layout import layout_of, parse_spec, physical_permutation
from onnxc.dialects.symbolic_dims import Dim, num_elements
from onnxc.errors import LoweringError
from onnxc.lowering.graph_to_loops.loops import (
    Index,
    KernelBuilder,
    broadcast_indices,
    may_exceed,
)

MIN_PARALLEL_MACS = 1 << 16
"""Below this many multiply-adds a product runs on one thread (a region costs ~1 us)."""


def output_scales(op: QuantizedProductOp) -> tuple[float, ...]:
    return () if op.output_scale is None else tuple(float(v) for v in op.output_scale.get_values())


def qlinear_constants(op: QuantizedProductOp) -> list[DenseIntOrFPElementsAttr]:
    """The per-channel tables the kernel reads: output_scale (f32) when it has one value per
    channel, then weight_zero_point (i32) when it has one per channel and they differ."""
    tables = []
    scales = output_scales(op)
    if len(scales) > 1:
        tables.append(from_numpy(np.asarray(scales, np.float32), f32))
    zps = ints_of(op.weight_zero_point)
    if len(set(zps)) > 1:
        tables.append(from_numpy(np.asarray(zps, np.int32), i32))
    return tables


class ChannelParams:
    """Per-output-channel values of one kernel: constants, or loads from the tables."""

    def __init__(self, op: QuantizedProductOp, kb: KernelBuilder, tables: Sequence[SSAValue]):
        self.op, self.kb = op, kb
        tables = list(tables)
        scales = output_scales(op)
        self.scale_table = tables.pop(0) if len(scales) > 1 else None
        self.scale = scales[0] if len(scales) == 1 else None
        zps = ints_of(op.weight_zero_point)
        self.zp_table = tables.pop(0) if len(set(zps)) > 1 else None
        self.zp = zps[0]
        self.x_zp = int_of(op.input_zero_point)

    def weight_zero_point(self, m: Index) -> SSAValue:
        if self.zp_table is None:
            return self.kb.constant(self.zp, i32)
        return self.kb.load(self.zp_table, [m])

    def output_scale(self, m: Index) -> SSAValue:
        if self.scale_table is None:
            return self.kb.constant(self.scale, f32)
        return self.kb.load(self.scale_table, [m])


def widen(kb: KernelBuilder, v: SSAValue) -> SSAValue:
    """A ui8 / i8 value as i32 (zero- or sign-extended)."""
    t = v.type
    assert isinstance(t, IntegerType)
    unsigned = t.signedness.data == Signedness.UNSIGNED
    return kb.insert((arith.ExtUIOp if unsigned else arith.ExtSIOp)(v, i32))


def requantize(kb: KernelBuilder, op: QuantizedProductOp, acc: SSAValue,
               scale: SSAValue | None, element) -> SSAValue:
    """The i32 accumulator `acc` as the result's element type (the module rule of
    graph_qlinear): itself, `acc * scale` in f32 (then f16), or
    clamp(roundeven(acc * scale) + output_zero_point, output_min, output_max) as ui8 / i8.
    Clamping in f32 before fptosi keeps the conversion in range; the bounds are integers,
    so clamping after rounding equals MLAS's clamp-then-round."""
    if is_i32(element):
        return acc
    assert scale is not None
    real = kb.insert(arith.MulfOp(kb.insert(arith.SIToFPOp(acc, f32)), scale))
    if not isinstance(element, IntegerType):
        return real if isinstance(element, Float32Type) else kb.insert(
            arith.TruncFOp(real, element))
    return _quantized(kb, real, int_of(op.output_zero_point), op.output_range(), element)


def _quantized(kb: KernelBuilder, real: SSAValue, zero_point: int, bounds: tuple[int, int],
               element) -> SSAValue:
    """clamp(roundeven(real) + zero_point, *bounds) as the byte type `element`."""
    q = kb.insert(math.RoundEvenOp(real))
    q = kb.insert(arith.AddfOp(q, kb.constant(float(zero_point), f32)))
    q = kb.insert(arith.MaximumfOp(q, kb.constant(float(bounds[0]), f32)))
    q = kb.insert(arith.MinimumfOp(q, kb.constant(float(bounds[1]), f32)))
    return kb.insert(arith.TruncIOp(kb.insert(arith.FPToSIOp(q, i32)), element))


def residual_sum(kb: KernelBuilder, op: QLinearConvAddOp, q: SSAValue,
                 addend: SSAValue) -> SSAValue:
    """qlinear_conv_add's result from the conv's byte result `q` and the addend's element
    (graph_qlinear's rule: the DQ, Add and Q steps in f32, rounded half to even, clamped)."""
    s_q, s_a, s_y = (kb.constant(float(s), f32) for s in op.sum_scales.get_values())
    terms = [kb.insert(arith.MulfOp(kb.insert(arith.SIToFPOp(_centred(kb, v, zp), f32)), s))
             for v, zp, s in ((q, int_of(op.output_zero_point), s_q),
                              (addend, int_of(op.addend_zero_point), s_a))]
    total = kb.insert(arith.DivfOp(kb.insert(arith.AddfOp(*terms)), s_y))
    return _quantized(kb, total, int_of(op.sum_zero_point), op.sum_range(),
                      op.output.type.get_element_type())


def _centred(kb: KernelBuilder, v: SSAValue, zero_point: SSAValue | int) -> SSAValue:
    wide = widen(kb, v)
    if isinstance(zero_point, int):
        return wide if zero_point == 0 else kb.sub(wide, kb.constant(zero_point, i32))
    return kb.sub(wide, zero_point)


def _physical_index(spec: str | None, logical: list[Index]) -> list[Index]:
    if spec is None:
        return logical
    if parse_spec(spec)[2] is not None:
        raise LoweringError(f"graph.qlinear_conv: no kernel for the blocked layout {spec}")
    return [logical[d] for d in physical_permutation(spec, len(logical))]


# --------------------------------------------------------------------------- conv


def qlinear_conv_kernel(op: QLinearConvOp | QLinearConvAddOp, kb: KernelBuilder, ins,
                        outs) -> None:
    """Per output element: a reduction over the group's input channels and the valid taps
    of each spatial dimension (`tap_range`), so no padding test sits in the inner loop."""
    x, w = ins[0], ins[1]
    bias = ins[2] if op.bias is not None else None
    rest = list(ins[3 if bias is not None else 2:])
    addend = rest.pop(0) if isinstance(op, QLinearConvAddOp) else None
    if addend is not None and layout_of(op.addend.type) != layout_of(op.output.type):
        raise LoweringError("graph.qlinear_conv_add: the addend must be in the result's "
                            "layout")
    params = ChannelParams(op, kb, rest)
    y = outs[0]
    x_shape, w_shape, y_shape = shape_of(op.input), shape_of(op.weight), shape_of(op.output)
    x_spec, y_spec = layout_of(op.input.type), layout_of(op.output.type)
    if layout_of(op.weight.type) is not None or (
            bias is not None and layout_of(op.bias.type) is not None):
        raise LoweringError("graph.qlinear_conv: the weight and bias must be plain")
    spatial = len(x_shape) - 2
    strides, dilations = ints_of(op.strides), ints_of(op.dilations)
    pads = ints_of(op.pads)
    groups = int_of(op.group, 1)
    c_per_group, m_per_group = w_shape[1], w_shape[0] // groups
    element = y.type.get_element_type()
    x_zp = params.x_zp

    def per_channel(n: Index, m: Index) -> None:
        g = kb.idiv(m, m_per_group)
        c0 = kb.imul(g, c_per_group)
        w_zp = params.weight_zero_point(m)
        init = kb.load(bias, [m]) if bias is not None else kb.constant(0, i32)
        scale = None if is_i32(element) else params.output_scale(m)

        def per_output(o: list[Index]) -> None:
            starts = [kb.isub(kb.imul(o[d], strides[d]), pads[d]) for d in range(spatial)]
            ranges = [tap_range(kb, starts[d], dilations[d], x_shape[2 + d], w_shape[2 + d])
                      for d in range(spatial)]

            def taps(c: Index, d: int, ks: list[Index], acc: SSAValue) -> SSAValue:
                if d == spatial:
                    xi = [kb.iadd(starts[e], kb.imul(ks[e], dilations[e]))
                          for e in range(spatial)]
                    xv = kb.load(x, _physical_index(x_spec, [n, kb.iadd(c0, c), *xi]))
                    wv = kb.load(w, [m, c, *ks])
                    return kb.add(acc, kb.mul(_centred(kb, xv, x_zp), _centred(kb, wv, w_zp)))
                lo, hi = ranges[d]
                return kb.reduce(lo, hi, [acc],
                                 lambda k, a: [taps(c, d + 1, [*ks, k], a)])[0]

            acc = kb.reduce(0, c_per_group, [init], lambda c, a: [taps(c, 0, [], a)])[0]
            at = _physical_index(y_spec, [n, m, *o])
            value = requantize(kb, op, acc, scale, element)
            if addend is not None:
                value = residual_sum(kb, op, value, kb.load(addend, at))
            kb.store(value, y, at)

        kb.nest(list(y_shape[2:]), per_output)

    macs = num_elements(y_shape) * c_per_group * int(np.prod(w_shape[2:]))
    large = not isinstance(macs, int) or macs >= MIN_PARALLEL_MACS  # symbolic: any size

    def per_image(n: Index) -> None:
        if large and may_exceed(y_shape[1], 1):
            kb.parallel_for(0, y_shape[1], lambda m: per_channel(n, m))
        else:
            kb.for_(0, y_shape[1], lambda m: per_channel(n, m))

    kb.for_(0, y_shape[0], per_image)


def tap_range(kb: KernelBuilder, start: Index, dilation: int, size: int,
               kernel: int) -> tuple[Index, Index]:
    """Taps k in [lo, hi) with 0 <= start + k * dilation < size (every numerator of the
    divisions is non-negative, so divsi is the floor division)."""
    lo = kb.idiv(kb.iadd(kb.imax(kb.isub(0, start), 0), dilation - 1), dilation)
    hi = kb.idiv(kb.iadd(kb.imax(kb.isub(size, start), 0), dilation - 1), dilation)
    return lo, kb.imin(hi, kernel)


# --------------------------------------------------------------------------- matmul


def qlinear_matmul_kernel(op: QLinearMatMulOp, kb: KernelBuilder, ins, outs) -> None:
    """numpy.matmul with 1-D promotion and batch broadcasting; a reduction over K per output
    element, the rows split between threads."""
    if any(layout_of(v.type) is not None for v in op.operands):
        raise LoweringError("graph.qlinear_matmul: operands must be plain")
    a_shape, b_shape = shape_of(op.lhs), shape_of(op.rhs)
    a2 = (1, *a_shape) if len(a_shape) == 1 else a_shape
    b2 = (*b_shape, 1) if len(b_shape) == 1 else b_shape
    batch = tuple(broadcast_shapes(a2[:-2], b2[:-2]))
    m_rows, k_depth, n_cols = a2[-2], a2[-1], b2[-1]
    a = kb.view(ins[0], list(a2))
    b = kb.view(ins[1], list(b2))
    y = kb.view(outs[0], [*batch, m_rows, n_cols])
    bias = ins[2] if op.bias is not None else None
    params = ChannelParams(op, kb, ins[3 if bias is not None else 2:])
    element = y.type.get_element_type()

    def row(lead: list[Index], i: Index) -> None:
        def column(j: Index) -> None:
            w_zp = params.weight_zero_point(j)
            init = kb.load(bias, [j]) if bias is not None else kb.constant(0, i32)

            def step(k: Index, acc: SSAValue) -> list[SSAValue]:
                av = kb.load(a, [*broadcast_indices(lead, a2[:-2]), i, k])
                bv = kb.load(b, [*broadcast_indices(lead, b2[:-2]), k, j])
                return [kb.add(acc, kb.mul(_centred(kb, av, params.x_zp),
                                           _centred(kb, bv, w_zp)))]

            acc = kb.reduce(0, kb.dim(k_depth), [init], step)[0]
            scale = None if is_i32(element) else params.output_scale(j)
            kb.store(requantize(kb, op, acc, scale, element), y, [*lead, i, j])

        kb.for_(0, kb.dim(n_cols), column)

    sizes = (*batch, m_rows, n_cols, k_depth)
    if all(isinstance(d, int) for d in sizes):
        rows = int(np.prod(batch, dtype=np.int64)) * m_rows
        parallel = rows > 1 and rows * n_cols * k_depth >= MIN_PARALLEL_MACS
    else:  # sizes known in the run: split the rows (the pool runs small ranges inline)
        parallel = True
    if parallel and not batch:
        kb.parallel_for(0, kb.dim(m_rows), lambda i: row([], i))
    elif parallel:
        total = kb.dim(m_rows)
        for d in batch:
            total = kb.imul(total, kb.dim(d))
        kb.parallel_for(0, total, lambda r: row(*_split_row(kb, r, batch, m_rows)))
    else:
        kb.nest([*batch, m_rows], lambda ivs: row(ivs[:-1], ivs[-1]))


def _mod(kb: KernelBuilder, a: Index, b: Index) -> Index:
    return kb.isub(a, kb.imul(kb.idiv(a, b), b))


def _split_row(kb: KernelBuilder, r: Index, batch: tuple[Dim, ...],
               m_rows: Dim) -> tuple[list[Index], Index]:
    """Flat row index r -> (batch indices, row)."""
    i = _mod(kb, r, kb.dim(m_rows))
    rest = kb.idiv(r, kb.dim(m_rows))
    lead: list[Index] = []
    for d in reversed(batch):
        lead.insert(0, _mod(kb, rest, kb.dim(d)))
        rest = kb.idiv(rest, kb.dim(d))
    return lead, i


KERNELS = {
    QLinearConvOp: qlinear_conv_kernel,
    QLinearConvAddOp: qlinear_conv_kernel,
    QLinearMatMulOp: qlinear_matmul_kernel,
}

KERNEL_CONSTANTS = {
    QLinearConvOp: qlinear_constants,
    QLinearConvAddOp: qlinear_constants,
    QLinearMatMulOp: qlinear_constants,
}
