"""Depthwise 2-D f32 convolution in NHWC (group == C == Cout): vectors along channels.

There is no reduction over channels, so a GEMM does not fit: each output pixel's VW
channels are one vector, the sum over the KH x KW taps of a weight vector times an input
vector. Weights are re-laid at compile time as [kh, kw, C] (a tap's channels contiguous)
and kept in registers across a row; a register tile of TW output pixels along W shares
them. With 16 vector registers (AVX2) the row runs pixel-major instead, weights loaded as
used (`HELD_WEIGHT_REGISTERS`). Rows (n, oh) are independent: the outer loop is a
parallel_for.

Padding: with static H and W the input is read in place (`depthwise_in_place`). A row whose
kernel rows all fall inside the input runs the plain tiles; a border row tests each kernel
row at run time and skips those outside. Along W the outputs whose taps all read real
columns run in tiles; the few at each end (`pl / sw` and `pr / sw` of them) are single
pixels whose taps outside the input are left out at compile time. The sums are those of
the zero-padded form without its zero products. With symbolic sizes the input is first
copied into the zero-padded NHWC scratch of conv_nhwc (no bounds tests).

The row code (`DepthwiseRows`) takes each kernel row's input row as a base of its own
(`KernelRows`), so the fused 1x1 + depthwise kernel (depthwise_fused.py) runs it on its
ring of expanded rows.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, VectorType, f32
from xdsl.ir import Operation, SSAValue

from onnxc.dialects import graph
from onnxc.dialects.dense_data import from_numpy
from onnxc.dialects.graph_epilogue import epilogue_of
from onnxc.dialects.symbolic_dims import Dim
from onnxc.lowering.graph_to_loops.branches import choose, each_remainder
from onnxc.lowering.graph_to_loops.conv_nhwc import (
    ConvGeometry,
    geometry,
    weight_value,
)
from onnxc.lowering.graph_to_loops.conv_padded_input import pad_input
from onnxc.lowering.graph_to_loops.epilogue import activate, clamp_vectors, on_vectors
from onnxc.lowering.graph_to_loops.gemm_tiles import tiling_for
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder

TW = 8
"""Output pixels per register tile: TW accumulators + up to 16 tap weights fit 32 registers."""
MAX_HELD_TAPS = 16
"""Up to this many taps, a channel block's weight vectors stay in registers for the row."""
MIN_LANES = 4
"""The narrowest vector the channels after the last whole vector take (then lane by lane)."""
HELD_WEIGHT_REGISTERS = 32
"""Targets with fewer vector registers (AVX2's 16 ymm) cannot hold TW accumulators and a
3x3 kernel's 9 weights: LLVM spills. There the row runs pixel-major (`row_channels`): each
tile loops over all channel blocks, loading a tap's weights from L1 as it uses them, and the
input is read pixel by pixel, contiguously. Zen 3, 2026-12-06 (benchmarks/conv_bench.py,
T=1): MobileNetV2's stride-2 96-channel layer 0.28-0.31 -> 0.16 ms, its stride-1 144-channel
one level (0.18 ms)."""


def tap_major_weights(op: Operation) -> DenseIntOrFPElementsAttr:
    """W[c, 0, kh, kw] as [kh, kw, c], flat."""
    w = weight_value(op)
    assert w is not None
    return from_numpy(w[:, 0].transpose(1, 2, 0).reshape(-1), f32)


KernelRows = list[tuple[Index, int]]
"""Where each kernel row of an output row reads: (pixel index of the input row's column 0,
pixels to add), one per kernel row. One base for all rows and constant offsets when the
input rows are consecutive (the plain kernel: each tap a constant offset from one address);
the fused kernel's ring of expanded rows (depthwise_fused.py) gives each row its own base."""


class DepthwiseRows:
    """The depthwise kernel's row code, over an input `x` (flat) read in place (taps
    outside skipped) or zero-padded, into `y` (flat); `build` runs every row."""

    def __init__(self, op: Operation, kb: KernelBuilder, geo: ConvGeometry, x: SSAValue,
                 y: SSAValue, wt: SSAValue, bias: SSAValue | None, z: SSAValue | None,
                 in_place: bool):
        self.op, self.kb, self.geo = op, kb, geo
        self.x, self.y, self.wt, self.bias, self.z = x, y, wt, bias, z
        self.in_place = in_place
        # the input's row length and where output column 0's first tap reads, in pixels
        self.row_len: Dim = geo.w if in_place else geo.wp
        self.shift = -geo.pl if in_place else 0
        self.vw = tiling_for(kb.target).vw
        self.pixel_major = kb.target.vector_registers < HELD_WEIGHT_REGISTERS
        epilogue = epilogue_of(op)
        self.act = epilogue[0] if epilogue is not None else None

    def consecutive(self, x_row: Index) -> KernelRows:
        """Kernel rows of an input whose rows follow each other from pixel `x_row`."""
        g = self.geo
        return [(x_row, th * g.dh * self.row_len) for th in range(g.kh)]

    def build(self) -> None:
        g, kb = self.geo, self.kb

        def row(r: Index) -> None:
            n = kb.idiv(r, g.oh)
            oh = kb.isub(r, kb.imul(n, g.oh))
            y_row = kb.imul(r, g.ow)
            if not self.in_place:
                x_row = kb.imul(kb.iadd(kb.imul(n, g.hp), kb.imul(oh, g.sh)), g.wp)
                self.row_channels(self.consecutive(x_row), y_row, None)
                return
            ih0 = kb.isub(kb.imul(oh, g.sh), g.pt)  # the first kernel row's input row
            x_row = kb.imul(kb.iadd(kb.imul(n, g.h), ih0), g.w)  # < 0 above the input
            self.row_or_border(self.consecutive(x_row), y_row, ih0)

        kb.parallel_for(0, g.n * g.oh, row)

    def row_or_border(self, rows: KernelRows, y_row: Index, ih0: Index) -> None:
        """One output row whose first kernel row reads input row `ih0` (in place): the
        plain tiles when all its kernel rows are inside the input, else the border form."""
        g, kb = self.geo, self.kb
        live = [self.row_inside(kb.iadd(ih0, th * g.dh)) for th in range(g.kh)]
        inside = live[0]
        for cond in live[1:]:
            inside = kb.insert(arith.AndIOp(inside, cond))
        choose(kb, inside, lambda: self.row_channels(rows, y_row, None) or [],
               lambda: self.row_channels(rows, y_row, live) or [])

    def row_inside(self, ih: Index) -> SSAValue:
        """0 <= ih < H, one unsigned compare."""
        kb = self.kb
        return kb.insert(arith.CmpiOp(kb.idx(ih), kb.idx(self.geo.h), "ult"))

    def row_channels(self, rows: KernelRows, y_row: Index, live: list[SSAValue] | None) -> None:
        """The row's outputs, vector channel blocks, then the remaining channels in
        narrower vectors (8 of 72 channels in one of 8 lanes: they took as long as the 64
        before them lane by lane) and one by one; `live`: whether each kernel row reads the
        input (None: all do)."""
        g, kb, vw = self.geo, self.kb, self.vw
        nvec = g.c // vw
        if self.pixel_major:
            def all_blocks(ow0: Index, tw: int) -> None:
                kb.for_(0, nvec, lambda cb: self.tile(rows, y_row, kb.imul(cb, vw), vw,
                                                      live, None, ow0, tw))
            self.each_tile(all_blocks)
        else:
            kb.for_(0, nvec, lambda cb: self.channels(rows, y_row, kb.imul(cb, vw), vw, live))
        c = nvec * vw
        for lanes in (vw // 2, vw // 4):
            if lanes >= MIN_LANES and g.c - c >= lanes:
                self.channels(rows, y_row, c, lanes, live)
                c += lanes
        kb.for_(c, g.c, lambda c: self.channels(rows, y_row, c, 1, live))

    def column_range(self) -> tuple[int, int]:
        """Outputs [lo, hi) along W whose taps all read input columns (in place; the
        padded copy's are all of them)."""
        g = self.geo
        if not self.in_place:
            return 0, g.ow
        span = (g.kw - 1) * g.dw
        lo = min(g.ow, -(-g.pl // g.sw))
        hi = max(lo, min(g.ow, (g.w - 1 - span + g.pl) // g.sw + 1))
        return lo, hi

    def each_tile(self, tile: Callable[[Index, int], None]) -> None:
        """tile(ow0, tw) over the row: the left border's single pixels (in place), tiles of
        TW, the remainder, the right border's single pixels."""
        g, kb = self.geo, self.kb
        lo, hi = self.column_range()
        for ow in range(lo):
            tile(ow, 1)
        full, rem = divmod(hi - lo, TW)
        kb.for_(0, full, lambda b: tile(kb.iadd(lo, kb.imul(b, TW)), TW))
        each_remainder(kb, rem, TW, lambda r: tile(kb.iadd(lo, kb.imul(full, TW)), r))
        if self.in_place:
            for ow in range(hi, g.ow):
                tile(ow, 1)

    def channels(self, rows: KernelRows, y_row: Index, c: Index, lanes: int,
                 live: list[SSAValue] | None) -> None:
        """Outputs of one row for channels [c, c + lanes) (one vector; 1: a scalar)."""
        g, kb = self.geo, self.kb
        load = self.loader(lanes)
        held = g.taps <= MAX_HELD_TAPS
        weights = [load(self.wt, kb.iadd(t * g.c, c)) for t in range(g.taps)] if held else None
        self.each_tile(lambda ow0, tw: self.tile(rows, y_row, c, lanes, live, weights, ow0,
                                                 tw))

    def tile(self, rows: KernelRows, y_row: Index, c: Index, lanes: int,
             live: list[SSAValue] | None, weights: list[SSAValue] | None, ow0: Index,
             tw: int) -> None:
        """`tw` output pixels from `ow0` of one row, channels [c, c + lanes)."""
        g, kb = self.geo, self.kb
        load = self.loader(lanes)
        # one base address per tile (per distinct row base), and each tap's input a
        # constant offset from it: the address ops per tile fall from ~7 per tap to 1, and
        # a pixel that two taps read (stride 1) is loaded once
        x_bases: dict[Index, Index] = {}
        for base, _ in rows:
            if base not in x_bases:
                x_bases[base] = kb.iadd(kb.imul(kb.iadd(base, kb.iadd(kb.imul(ow0, g.sw),
                                                                      self.shift)), g.c), c)
        y_base = kb.iadd(kb.imul(kb.iadd(y_row, ow0), g.c), c)
        loaded: dict[tuple[Index, int], SSAValue] = {}

        def kernel_row(th: int, acc: list[SSAValue]) -> list[SSAValue]:
            acc = list(acc)
            for tv in range(g.kw):
                t = th * g.kw + tv
                wv = weights[t] if weights is not None else load(self.wt, kb.iadd(t * g.c, c))
                for i in range(tw):
                    col = i * g.sw + tv * g.dw  # from the tile's first tap column
                    if (self.in_place and isinstance(ow0, int)
                            and not 0 <= ow0 * g.sw + self.shift + col < g.w):
                        continue  # a border pixel's tap left of or right of the input
                    base, pixels = rows[th]
                    at = (base, (pixels + col) * g.c)
                    if at not in loaded:
                        loaded[at] = load(self.x, kb.iadd(x_bases[base], at[1]))
                    acc[i] = self.fma(loaded[at], wv, acc[i], lanes)
            return acc

        acc = [self.initial(c, lanes)] * tw
        for th in range(g.kh):
            if live is None:
                acc = kernel_row(th, acc)
            else:  # a border row: loads of a kernel row above or below the input skipped
                acc = choose(kb, live[th], lambda th=th, a=acc: kernel_row(th, a),
                             lambda a=acc: a)
                loaded.clear()  # values loaded in a branch do not dominate what follows
        for i in range(tw):
            at = kb.iadd(y_base, i * g.c)
            self.store(self.finish(acc[i], at, lanes), at, lanes)

    # ------------------------------------------------------------ helpers

    def loader(self, lanes: int) -> Callable[[SSAValue, Index], SSAValue]:
        """Loads of `lanes` channels as a vector, or of one channel's value."""
        if lanes == 1:
            return lambda mem, at: self.kb.load(mem, [at])
        return lambda mem, at: self.kb.vload(mem, [self.kb.idx(at)], self.vector(lanes))

    def vector(self, lanes: int) -> VectorType:
        return VectorType(f32, [lanes])

    def fma(self, a: SSAValue, b: SSAValue, c: SSAValue, lanes: int) -> SSAValue:
        return self.kb.vfma(a, b, c) if lanes > 1 else self.kb.muladd(a, b, c)

    def initial(self, c: Index, lanes: int) -> SSAValue:
        kb = self.kb
        if self.bias is not None:
            return self.loader(lanes)(self.bias, c)
        zero = kb.constant(0.0, f32)
        return kb.vsplat(zero, self.vector(lanes)) if lanes > 1 else zero

    def finish(self, acc: SSAValue, at: Index, lanes: int) -> SSAValue:
        """Residual and relu/clip on the accumulator (other activations after the store)."""
        kb = self.kb
        if self.z is not None:
            acc = kb.float_op(arith.AddfOp, acc, self.loader(lanes)(self.z, at))
        if lanes == 1:
            return activate(kb, self.op, acc)
        return clamp_vectors(kb, self.op, [acc], self.vector(lanes))[0]

    def store(self, v: SSAValue, at: Index, lanes: int) -> None:
        kb = self.kb
        if lanes == 1:
            kb.store(v, self.y, [at])
            return
        kb.vstore(v, self.y, [kb.idx(at)])
        if self.act is not None and not on_vectors(self.act):
            kb.for_(0, lanes, lambda i: kb.store(
                activate(kb, self.op, kb.load(self.y, [kb.iadd(at, i)])), self.y,
                [kb.iadd(at, i)]))


def depthwise_kernel(op: Operation, kb: KernelBuilder, ins, outs) -> None:
    """ins: x, weight (unused), [bias], [residual], [kh, kw, C] weights, [padded scratch]."""
    g = geometry(op)
    has_bias = op.bias is not None
    residual = isinstance(op, graph.ConvAddOp)
    n_ops = 2 + has_bias + residual
    z = kb.view(ins[n_ops - 1], [g.pixels * g.c]) if residual else None
    if g.padded and not g.depthwise_in_place:
        x = pad_input(kb, g, ins[0], ins[n_ops + 1])
    else:
        x = kb.view(ins[0], [g.n * g.h * g.w * g.c])
    DepthwiseRows(op, kb, g, x, kb.view(outs[0], [g.pixels * g.c]), ins[n_ops],
                  ins[2] if has_bias else None, z, g.depthwise_in_place).build()
