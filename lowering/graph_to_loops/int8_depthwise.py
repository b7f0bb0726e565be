"""Depthwise int8 convolution in NHWC (graph.qlinear_conv, group == C == Cout): i32 vectors
along channels.

A depthwise conv has no reduction over channels, so the packed GEMM (int8_gemm.py) does not
fit, and the generic kernel (qlinear.py) runs it one scalar at a time. Here each output
pixel's 16 channels are one <16 x i32> accumulator: per tap, 16 input bytes are widened to
i32 and multiplied by the tap's 16 centred weights. The weights, centred at compile time,
are a table [kh * kw, Cpad] so one vector load gives one tap of 16 channels.

Output pixels whose whole window lies inside the input (the interior) take no bounds tests:
their taps are unrolled (when few), a tile of TW pixels along W shares the tap weights, and
the input zero point is folded into the starting value, corr[c] = bias[c] - x_zp * sum_t
w[t, c], so the inner step is load, widen, multiply, add. The border pixels (rows above and
below the interior, columns left and right of it) loop over their valid taps only and
subtract the zero point per tap: padding adds nothing, as the contract says.

Channels come in whole vectors; when C is not a multiple of 16 the last vector is shifted back
to end at channel C - 1 (it recomputes a few channels of the one before, with the same
values), so there is no partial vector at all. That needs C >= 16; smaller convs stay on the
generic kernel. The output rule is int8_requantize's, as in the packed GEMM. Everything that
differs between the depthwise convs of one shape (weights, bias, zero points, scales, bounds)
is in the tables, so they share a kernel (`depthwise_key`). Threads split output rows.

QDQ MobileNetV2 (zoo_mobilenet, 10 depthwise convs, 9 kernels) at one thread: 8.0 ms with
the generic kernel, 1.7 ms with this one (onnxruntime: 2.3 ms); ~1 s of compile per kernel.

Batch and image sizes may be symbolic: the interior's bounds are then run-time values, and a
row's interior columns take whole tiles only (no shifted last tile: a run may have fewer
than TW of them), the rest going with the right border's pixels.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    IntegerType,
    MemRefType,
    VectorType,
    f32,
    i32,
)
from xdsl.ir import SSAValue

from onnxc.dialects import graph
from onnxc.dialects.dense_data import from_numpy, values_in_shape
from onnxc.dialects.graph_base import int_of, ints_of, shape_of
from onnxc.dialects.graph_qlinear import QLinearConvOp, QuantizedProductOp, is_i32
from onnxc.dialects.layout import layout_of
from onnxc.dialects.symbolic_dims import Dim, sym_max, sym_min
from onnxc.lowering.graph_to_loops import int8_gemm
from onnxc.lowering.graph_to_loops.conv_nhwc import ConvGeometry, geometry
from onnxc.lowering.graph_to_loops.int8_requantize import (
    load_output_rule,
    output_clamp,
    requantize_vector,
    widened_bytes,
)
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder, is_nonzero, may_exceed
from onnxc.lowering.graph_to_loops.qlinear import MIN_PARALLEL_MACS, output_scales, tap_range
from onnxc.lowering.to_llvm.llvm_ext import FPToSIOp
from onnxc.target import Target

VW = 16
TW = 8
"""Output pixels per interior tile: TW accumulators + 9 held weights fit 32 registers."""
MAX_HELD_TAPS = 9
"""Up to this many taps, a channel block's weight vectors are loaded once per row."""
MAX_UNROLLED_TAPS = 25
"""Up to this many taps (5x5) the tap loop is unrolled; larger kernels loop over rows."""


def _weight(op: QLinearConvOp) -> np.ndarray | None:
    owner = op.weight.owner
    if not isinstance(owner, graph.ConstantOp):
        return None
    return values_in_shape(owner.value, shape_of(op.weight)).astype(np.int64)


def applies(op, target: Target) -> bool:
    """A rank-4 NHWC depthwise qlinear_conv (channel multiplier 1, C >= 16) with a constant
    weight, for a `target` with SIMD."""
    if not isinstance(op, QLinearConvOp) or target.vector_bits < 128:
        return False
    if (len(shape_of(op.input)) != 4 or layout_of(op.input.type) != "NHWC"
            or layout_of(op.output.type) != "NHWC" or layout_of(op.weight.type) is not None
            or op.bias is not None and layout_of(op.bias.type) is not None):
        return False
    g = geometry(op)
    return (g.depthwise and g.c >= VW and shape_of(op.weight)[1] == 1
            and may_exceed(g.pixels, 0) and _weight(op) is not None)


def _cpad(g: ConvGeometry) -> int:
    return -(-g.c // VW) * VW


def _tables(op: QLinearConvOp) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(centred weights [taps, Cpad] i32, starts [2, Cpad] i32: the interior's corr and the
    border's bias, output scales [Cpad] f32, rule f32: output zero point, min - zero point,
    max - zero point, input zero point)."""
    g, cpad = geometry(op), _cpad(geometry(op))
    w = _weight(op)
    assert w is not None
    centred = w[:, 0].reshape(g.c, g.taps) - np.asarray(ints_of(op.weight_zero_point))[:, None]
    weights = np.zeros((g.taps, cpad), np.int64)
    weights[:, :g.c] = centred.T
    x_zp = int_of(op.input_zero_point)
    bias = np.zeros(g.c, np.int64)
    if int8_gemm.folded_bias(op):
        bias[:] = values_in_shape(op.bias.owner.value, shape_of(op.bias))
    starts = np.zeros((2, cpad), np.int64)
    starts[0, :g.c] = bias - x_zp * centred.sum(axis=1)
    starts[1, :g.c] = bias
    scale = np.ones(cpad, np.float32)
    scale[:g.c] = np.asarray(output_scales(op) or (1.0,), np.float32)
    rule = np.zeros(4, np.float32)
    rule[3] = x_zp
    el = op.output.type.get_element_type()
    if isinstance(el, IntegerType) and not is_i32(el):
        zp = int_of(op.output_zero_point)
        rule[:3] = (zp, *(bound - zp for bound in op.output_range()))
    # sums past i32 wrap: the accumulation is modulo 2**32, exact where the result fits
    return (weights.astype(np.int32), starts.astype(np.int32), scale, rule)


def depthwise_constants(op: QuantizedProductOp,
                        target: Target) -> list[DenseIntOrFPElementsAttr]:
    assert isinstance(op, QLinearConvOp)
    tables = []
    for array in _tables(op):
        element = f32 if array.dtype == np.float32 else i32
        tables.append(from_numpy(array.reshape(-1), element))
    return tables


def depthwise_scratch(op: QuantizedProductOp, target: Target) -> list[MemRefType]:
    return []


def depthwise_key(op: QuantizedProductOp, target: Target) -> tuple:
    """The window and types decide the code; zero points, scales and bounds are tabled."""
    props = tuple(sorted((k, str(v)) for k, v in op.properties.items()
                         if k not in (*int8_gemm.TABLE_PROPERTIES, "input_zero_point")))
    return ("int8_depthwise", int8_gemm.folded_bias(op), props, output_clamp(op))


def interior(out: Dim, pad: int, stride: int, dilation: int, size: Dim,
             kernel: int) -> tuple[Dim, Dim]:
    """Outputs [lo, hi) whose every tap o * stride - pad + k * dilation is inside [0, size)
    (symbolic sizes: bounds computed in the run)."""
    lo = sym_min(out, -(-pad // stride))
    last = size - 1 + pad - (kernel - 1) * dilation  # a negative one leaves no interior
    return lo, sym_max(lo, sym_min(out, last // stride + 1))


class _Depthwise:
    def __init__(self, op: QLinearConvOp, kb: KernelBuilder, ins, outs):
        self.op, self.kb = op, kb
        self.g = g = geometry(op)
        self.cpad = _cpad(g)
        has_bias = op.bias is not None
        self.bias = ins[2] if has_bias and not int8_gemm.folded_bias(op) else None
        self.wt, self.starts, self.scale, rule = ins[3 if has_bias else 2:]
        self.x = kb.view(ins[0], [g.n * g.h * g.w * g.c])
        self.y = kb.view(outs[0], [g.pixels * g.c])
        self.v32 = VectorType(i32, [VW])
        self.in_element = op.input.type.get_element_type()
        self.element = outs[0].type.get_element_type()
        out_zp, lo, hi, x_zp = (kb.load(rule, [i]) for i in range(4))
        self.x_zp = kb.insert(FPToSIOp(x_zp, i32))
        self.rule = load_output_rule(kb, out_zp, lo, hi, output_clamp(op))
        self.rows = interior(g.oh, g.pt, g.sh, g.dh, g.h, g.kh)
        self.cols = interior(g.ow, g.pl, g.sw, g.dw, g.w, g.kw)
        lo, hi = self.cols
        self.tiled = hi  # the interior columns in tiles end here, the right border begins
        if not isinstance(hi - lo, int):  # whole tiles only (see the module docstring)
            self.tiled = lo + (hi - lo) // TW * TW

    # ------------------------------------------------------------------ structure

    def build(self) -> None:
        """Interior rows (their middle columns tiled, no bounds tests), then the border
        rows; each loop over rows is split between threads when the conv is large."""
        kb, g = self.kb, self.g
        lo, hi = self.rows
        inner, outer = hi - lo, g.oh - (hi - lo)
        large = may_exceed(g.pixels * g.c * g.taps, MIN_PARALLEL_MACS - 1)
        loop = kb.parallel_for if large else (lambda a, b, body: kb.for_(a, b, body))

        def interior_row(r: Index) -> None:
            n = kb.idiv(r, inner)
            oh = kb.iadd(kb.isub(r, kb.imul(n, inner)), lo)
            self.channel_blocks(lambda c: self.interior_span(n, oh, c))
            self.border_pixels(n, oh, 0, self.cols[0])
            self.border_pixels(n, oh, self.tiled, g.ow)

        def border_row(r: Index) -> None:
            n = kb.idiv(r, outer)
            k = kb.isub(r, kb.imul(n, outer))
            if lo == 0:
                oh = kb.iadd(k, inner)
            elif hi == g.oh:
                oh = k
            else:  # rows [0, lo) then [hi, OH)
                below = kb.insert(arith.CmpiOp(kb.idx(k), kb.idx(lo), "slt"))
                oh = kb.select(below, kb.idx(k), kb.idx(kb.iadd(k, inner)))
            self.border_pixels(n, oh, 0, g.ow)

        if is_nonzero(inner):  # a run-time count may be 0: no iteration divides by it
            loop(0, g.n * inner, interior_row)
        if is_nonzero(outer):
            loop(0, g.n * outer, border_row)

    def channel_blocks(self, body) -> None:
        """body(c) for the 16-channel blocks; a last partial one is shifted to end at C."""
        kb, c = self.kb, self.g.c
        kb.for_(0, c // VW, lambda b: body(kb.imul(b, VW)))
        if c % VW:
            body(c - VW)

    def taps(self, acc: list[SSAValue], step) -> list[SSAValue]:
        """acc = step(kh, kw, acc) over all taps: unrolled up to MAX_UNROLLED_TAPS, else a
        loop over kernel rows (its columns unrolled while they are few)."""
        kb, g = self.kb, self.g

        def columns(kh: Index, acc: list[SSAValue]) -> list[SSAValue]:
            if g.kw > MAX_UNROLLED_TAPS:
                return list(kb.for_(0, g.kw, lambda kw, *a: step(kh, kw, list(a)),
                                    iter_args=acc))
            for kw in range(g.kw):
                acc = step(kh, kw, acc)
            return acc

        if g.taps <= MAX_UNROLLED_TAPS:
            for kh in range(g.kh):
                acc = columns(kh, acc)
            return acc
        return list(kb.for_(0, g.kh, lambda kh, *a: columns(kh, list(a)), iter_args=acc))

    # ------------------------------------------------------------------ interior

    def interior_span(self, n: Index, oh: Index, c: Index) -> None:
        """Channels [c, c + 16) of the interior columns of row (n, oh), TW pixels a tile; the
        last tile is shifted back to end at the last interior column (it recomputes a few
        pixels of the one before, with the same values), so one tile form serves the row."""
        kb, g = self.kb, self.g
        ih = kb.isub(kb.imul(oh, g.sh), g.pt)
        x_row = kb.imul(kb.iadd(kb.imul(n, g.h), ih), g.w)  # pixel of tap (0, 0), column 0
        y_row = kb.imul(kb.iadd(kb.imul(n, g.oh), oh), g.ow)
        start = self.start(c, 0)
        held = None
        if g.taps <= MAX_HELD_TAPS:
            held = {(kh, kw): self.weight(kh, kw, c) for kh in range(g.kh) for kw in range(g.kw)}
        lo, hi = self.cols
        shifted = isinstance(hi - lo, int)  # else whole tiles, up to self.tiled
        tw = min(TW, hi - lo) if shifted else TW
        last = hi - tw

        def tile(b: Index) -> None:
            ow0 = kb.iadd(lo, kb.imul(b, tw))
            if shifted:
                ow0 = kb.imin(ow0, last)
            # element of x under tap (0, 0) of the tile's first pixel; the rest are offsets
            base = kb.iadd(kb.imul(kb.iadd(x_row, kb.isub(kb.imul(ow0, g.sw), g.pl)), g.c), c)

            loaded: dict[int, SSAValue] = {}  # unrolled taps: one load per input pixel

            def x_at(offset: Index) -> SSAValue:
                if not isinstance(offset, int):
                    return self.input(kb.iadd(base, offset))
                if offset not in loaded:
                    loaded[offset] = self.input(kb.iadd(base, offset))
                return loaded[offset]

            def step(kh: Index, kw: Index, acc: list[SSAValue]) -> list[SSAValue]:
                wv = held[kh, kw] if held is not None else self.weight(kh, kw, c)
                tap = kb.iadd(kb.imul(kh, g.dh * g.w * g.c), kb.imul(kw, g.dw * g.c))
                return [kb.insert(arith.AddiOp(acc[i], kb.insert(arith.MuliOp(
                    x_at(kb.iadd(tap, i * g.sw * g.c)), wv)))) for i in range(tw)]

            acc = self.taps([start] * tw, step)
            out = kb.iadd(kb.imul(kb.iadd(y_row, ow0), g.c), c)
            for i in range(tw):
                self.store(acc[i], kb.iadd(out, i * g.c), c)

        if shifted:
            kb.for_(0, -(-(hi - lo) // tw) if tw else 0, tile)
        else:
            kb.for_(0, (hi - lo) // TW, tile)

    # ------------------------------------------------------------------ border

    def border_pixels(self, n: Index, oh: Index, ow_lo: Index, ow_hi: Index) -> None:
        """Pixels [ow_lo, ow_hi) of row (n, oh), each summing only its valid taps."""
        kb, g = self.kb, self.g
        ih0 = kb.isub(kb.imul(oh, g.sh), g.pt)
        kh_lo, kh_hi = tap_range(kb, ih0, g.dh, g.h, g.kh)
        y_row = kb.imul(kb.iadd(kb.imul(n, g.oh), oh), g.ow)

        def pixel(ow: Index) -> None:
            iw0 = kb.isub(kb.imul(ow, g.sw), g.pl)
            kw_lo, kw_hi = tap_range(kb, iw0, g.dw, g.w, g.kw)

            def block(c: Index) -> None:
                zp = kb.vsplat(self.x_zp, self.v32)

                def step(kh: Index, kw: Index, acc: SSAValue) -> list[SSAValue]:
                    ih = kb.iadd(ih0, kb.imul(kh, g.dh))
                    iw = kb.iadd(iw0, kb.imul(kw, g.dw))
                    pix = kb.iadd(kb.imul(kb.iadd(kb.imul(n, g.h), ih), g.w), iw)
                    at = kb.iadd(kb.imul(pix, g.c), c)
                    xv = kb.insert(arith.SubiOp(self.input(at), zp))
                    wv = self.weight(kh, kw, c)
                    return [kb.insert(arith.AddiOp(acc, kb.insert(arith.MuliOp(xv, wv))))]

                acc = kb.for_(kh_lo, kh_hi, lambda kh, a: kb.for_(
                    kw_lo, kw_hi, lambda kw, b: step(kh, kw, b), iter_args=[a]),
                    iter_args=[self.start(c, 1)])[0]
                self.store(acc, kb.iadd(kb.imul(kb.iadd(y_row, ow), g.c), c), c)

            self.channel_blocks(block)

        kb.for_(ow_lo, ow_hi, pixel)

    # ------------------------------------------------------------------ memory

    def input(self, at: Index) -> SSAValue:
        """x's elements [at, at + 16) (16 channels of a pixel) widened to <16 x i32> (zero-
        or sign-extended)."""
        return widened_bytes(self.kb, self.x, [at], self.in_element)

    def weight(self, kh: Index, kw: Index, c: Index) -> SSAValue:
        kb = self.kb
        tap = kb.iadd(kb.imul(kh, self.g.kw), kw)
        at = kb.iadd(kb.imul(tap, self.cpad), c)
        return kb.vload(self.wt, [kb.idx(at)], self.v32)

    def start(self, c: Index, which: int) -> SSAValue:
        """The accumulators' first value: corr (interior, which 0) or the bias (border, 1),
        plus a bias that is not a constant."""
        kb = self.kb
        value = kb.vload(self.starts, [kb.idx(kb.iadd(which * self.cpad, c))],
                                        self.v32)
        if self.bias is not None:
            bias = kb.vload(self.bias, [kb.idx(c)], self.v32)
            value = kb.insert(arith.AddiOp(value, bias))
        return value

    def store(self, acc: SSAValue, at: Index, c: Index) -> None:
        """The requantized accumulators of channels [c, c + 16) to y's elements at `at`."""
        kb = self.kb
        scale = None
        if not is_i32(self.element):
            scale = kb.vload(self.scale, [kb.idx(c)], VectorType(f32, [VW]))
        value = requantize_vector(self.kb, self.element, self.rule, acc, scale)
        kb.vstore(value, self.y, [kb.idx(at)])


def depthwise_kernel(op: QuantizedProductOp, kb: KernelBuilder, ins, outs) -> None:
    """ins: x, weight (unused), [bias], weights, starts, scales, rule (the tables above)."""
    assert isinstance(op, QLinearConvOp)
    _Depthwise(op, kb, ins, outs).build()
