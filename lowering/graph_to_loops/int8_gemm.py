"""u8 x s8 -> s32 packed GEMM (AVX512-VNNI, AVX2 or portable) for qlinear_conv and qlinear_matmul.

One kernel shape serves both ops: Y[p, m] = requantize(sum_k A[p, k] * B[k, m] + corr[m]).
The conv is an implicit GEMM over NHWC data (p = (n, oh, ow), k = (kh, kw, c)); the matmul
is its 1x1 case (p a row of the lhs). K is counted in words of 4 bytes (4 channels), or of
two i16 (2 channels) in the "pairs" form:

- A: the input is first copied into an i32 scratch [N, HP, WP, CW] (CW = words per pixel),
  the border and the channel tail filled with the input zero point. An s8 input is shifted
  to u8 on the way (x ^ 0x80, zero point + 128), since the products take unsigned bytes of
  A and signed ones of B. In the pairs form each channel is widened to i16 on the way. A
  row of A is then read in place, one word broadcast to a vector per row per k step. A ui8
  input with no padding and C % 4 == 0 (most 1x1 convs, the matmuls) already has the byte
  forms' layout: it is read directly, with no copy (`reads_input_in_place`). A stem over
  3 channels packs each kernel row's taps as one run of bytes instead (int8_layout.py
  `packs_runs`: the scratch holds bytes, A words are read at byte offsets).
  Row blocks skip the kernel rows that read only the border, and blocks that are whole
  output rows the kernel columns each of their rows reads only the border through
  (padding_taps.py).
- B: the weight minus its zero point (which must then fit s8), packed at compile time into
  panels of NR columns: word (k, m) of panel j at `j * KW + k * w + (m - j)` (w the panel's
  width), so one vector load feeds 16 columns of one k-word.
- corr[m] = bias[m] - x_zp * sum_k B[k, m] folds the input zero point (A holds raw bytes)
  and a constant bias at compile time; a bias that is not a constant is added at run time.

MR x NR/16 <16 x i32> accumulators start at corr, live in registers through the whole K
loop, then are requantized (graph_qlinear's rule: int8_requantize.py, whose instruction
count per vector decides the speed of the convs with small K) and stored once, a 64-column
row of bytes packed into one store (`packed_row`) on AVX-512; int8_epilogue.py does this,
for 1x1 convs inside the next tile's K loop. Threads split chunks of row
blocks; inside a chunk the loop is panel -> row block -> micro-kernel, so one panel of B is
reused by every row block of the chunk.

The multiply step follows the target (int8_layout.py: `target_int8_isa`,
`Int8Tiling.form`): AVX512-VNNI's vpdpbusd on 6 x 64 tiles (7 x 48 for convs over small
maps), AVX2's vpmaddubsw (or, where a weight pair could saturate it, the exact vpmaddwd on
i16 pairs) on 6 x 16, AArch64's sdot, else portable i32 arithmetic on 4 x 16;
int8_multiply.py holds the steps, with their measurements. The kernel needs a constant weight whose centred values fit s8, no groups, and
a constant bias unless Cout is a multiple of 16; other cases run the generic kernels of
qlinear.py.

A qlinear_conv_add adds its residual in the same epilogue (int8_requantize's
`residual_sum_wide`: 16 addend bytes read per output vector, the conv's byte result never
stored; in the cheapest `sum_form` that gives the division's bytes).

Everything that differs between the convs of one shape (weights, bias, scales, output zero
point and bounds, a residual sum's scales and zero points) is in the constant tables, so they
share one kernel (`int8_gemm_key`): ResNet-50's 53 convs compile 23 kernels.
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
    i8,
    i32,
)
from xdsl.ir import SSAValue

from onnxc.dialects import graph
from onnxc.dialects.dense_data import from_numpy, values_in_shape
from onnxc.dialects.graph_base import int_of, shape_of
from onnxc.dialects.graph_qlinear import (
    QLINEAR_CONV_OPS,
    QLinearConvAddOp,
    QLinearMatMulOp,
    QuantizedProductOp,
    is_i32,
)
from onnxc.dialects.layout import layout_of
from onnxc.dialects.symbolic_dims import ceildiv
from onnxc.lowering.graph_to_loops.branches import when
from onnxc.lowering.graph_to_loops.buffer_types import RunTimeScratch
from onnxc.lowering.graph_to_loops.int8_epilogue import Int8Epilogue, Pending, drain_spread
from onnxc.lowering.graph_to_loops.int8_input import (
    input_offset,
    load_word,
    pack_input,
    pack_input_bytes,
)
from onnxc.lowering.graph_to_loops.int8_layout import (
    VW,
    gemm_of,
    packed_rows,
    tiled_gemm,
    tiling,
    weight_matrix,
)
from onnxc.lowering.graph_to_loops.int8_multiply import STEPS
from onnxc.lowering.graph_to_loops.int8_requantize import (
    output_clamp,
    sum_clamp,
    sum_form,
    sum_table,
)
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder
from onnxc.lowering.graph_to_loops.padding_taps import (
    dead_columns,
    live_kernel_rows,
    skipped_row_sums,
    skips_rows,
)
from onnxc.lowering.graph_to_loops.parallel_split import grid_split
from onnxc.lowering.graph_to_loops.qlinear import output_scales
from onnxc.target import Target

CHUNK_ROW_BLOCKS = 16
"""Row blocks per parallel iteration at most (a chunk's A rows stay in L2)."""
DRAIN_UNROLL = 4
"""K steps unrolled between two requantized rows of a pipelined epilogue at most: the
spreads of 7x7 maps' 1x1 convs (18 and 73 steps) unrolled whole made QDQ ResNet-50 5.6 s
to compile against 3.2 s, and ran no faster."""


def _int32_values(value: SSAValue) -> np.ndarray | None:
    owner = value.owner
    if not isinstance(owner, graph.ConstantOp):
        return None
    return values_in_shape(owner.value, shape_of(value)).astype(np.int64)


def folded_bias(op: QuantizedProductOp) -> bool:
    """Whether the bias is a constant, folded into corr at compile time."""
    return op.bias is not None and _int32_values(op.bias) is not None


def applies(op, target: Target) -> bool:
    """Whether `op` runs on this kernel for `target` (else the generic kernels of
    qlinear.py)."""
    if not isinstance(op, (*QLINEAR_CONV_OPS, QLinearMatMulOp)) or target.vector_bits < 128:
        return False
    if isinstance(op, QLINEAR_CONV_OPS):
        if (len(shape_of(op.input)) != 4 or int_of(op.group, 1) != 1
                or layout_of(op.input.type) != "NHWC" or layout_of(op.output.type) != "NHWC"
                or layout_of(op.weight.type) is not None):
            return False
        if isinstance(op, QLinearConvAddOp) and (
                layout_of(op.addend.type) != "NHWC" or shape_of(op.output)[1] % VW):
            return False  # the addend is read by whole vectors, in the result's layout
    elif (len(shape_of(op.lhs)) < 2 or len(shape_of(op.rhs)) != 2
          or any(layout_of(v.type) is not None for v in op.operands)):
        return False
    if op.bias is not None and layout_of(op.bias.type) is not None:
        return False
    g = gemm_of(op, 4)
    if min(g.c, g.cout) < 1 or (isinstance(g.pixels, int) and g.pixels < 1):
        return False
    if g.cout % VW and op.bias is not None and _int32_values(op.bias) is None:
        return False  # a run-time bias is read by whole vectors
    b = weight_matrix(op)
    return b is not None and int(b.min(initial=0)) >= -128 and int(b.max(initial=0)) <= 127


def int8_constants(op: QuantizedProductOp, target: Target) -> list[DenseIntOrFPElementsAttr]:
    """[packed B (i32 words), corr (i32), output scales (f32, one per channel), the output
    rule (f32: output zero point, min - zero point, max - zero point)] for `target`'s tiling,
    and a qlinear_conv_add's sum (f32: the three scales, the addend's zero point, the sum's
    rule): convs that differ only in these values share one kernel
    (`int8_gemm_key`)."""
    t = tiling(op, target)
    g = tiled_gemm(op, t)
    b = weight_matrix(op)
    assert b is not None
    words = packed_rows(op, t)
    panels = [words[:, j:j + t.nr].reshape(-1) for j in range(0, g.npad, t.nr)]
    packed = np.concatenate(panels).astype("<i4")
    x_zp, _ = input_offset(op)
    corr = np.zeros(g.npad, np.int64)
    corr[:g.cout] = (t.a_offset - x_zp) * b.sum(axis=0, dtype=np.int64)
    if folded_bias(op):
        corr[:g.cout] += _int32_values(op.bias)
    pad = skipped_tap_value(op, target)
    if pad:  # the prefix sums that put back a skipped kernel row's padding products
        columns = np.zeros((b.shape[0], g.npad), np.int64)
        columns[:, :g.cout] = b
        corr = np.concatenate([corr, skipped_row_sums(columns, g.kh, pad).reshape(-1)])
    scales = output_scales(op) or (1.0,)
    scale = np.ones(g.npad, np.float32)
    scale[:g.cout] = np.asarray(scales, np.float32)
    el = op.output.type.get_element_type()
    rule = np.zeros(3, np.float32)
    if isinstance(el, IntegerType) and not is_i32(el):
        zp = int_of(op.output_zero_point)
        rule[:] = (zp, *(bound - zp for bound in op.output_range()))
    tables = [from_numpy(packed, i32), from_numpy(corr.astype(np.int32), i32),
              from_numpy(scale, f32), from_numpy(rule, f32)]
    if isinstance(op, QLinearConvAddOp):
        tables.append(from_numpy(sum_table(op), f32))
    return tables


def skipped_tap_value(op: QuantizedProductOp, target: Target) -> int | None:
    """None when every row block runs every kernel row; else row blocks skip the kernel
    rows that read only the border (padding_taps.py), and this is what each skipped product
    added per unit of weight: the border's value minus the multiply step's offset (0 for the
    usual zero point of a Relu's output on VNNI: nothing to put back)."""
    if not isinstance(op, QLINEAR_CONV_OPS):
        return None
    t = tiling(op, target)
    if not skips_rows(tiled_gemm(op, t)):
        return None
    return input_offset(op)[0] - t.a_offset


def reads_input_in_place(op: QuantizedProductOp, target: Target) -> bool:
    """Whether A is the input itself: ui8 bytes, no padding and whole words of channels
    are already the scratch's layout (most 1x1 convs, and matmuls with K % 4 == 0), so
    the copy is skipped (and its parallel region, and the scratch's memory traffic)."""
    g = tiled_gemm(op, tiling(op, target))
    return (g.per_word == 4 and not input_offset(op)[1] and g.c % 4 == 0
            and g.pt + g.pl + g.pb + g.pr == 0)


def int8_scratch(op: QuantizedProductOp, target: Target) -> list[MemRefType | RunTimeScratch]:
    """The word-packed, zero-point-bordered copy of the input (none when read in place;
    in the dynamic arena for a symbolic M)."""
    if reads_input_in_place(op, target):
        return []
    g = tiled_gemm(op, tiling(op, target))
    if g.runs:  # bytes, and the slack a kernel row's last word reads past the map
        size = g.n * g.hp * g.wp * g.c + g.per_word - 1
        return [MemRefType(i8, [size]) if isinstance(size, int) else RunTimeScratch(i8, size)]
    words = g.n * g.hp * g.wp * g.c_words
    return [MemRefType(i32, [words]) if isinstance(words, int) else RunTimeScratch(i32, words)]


# ----------------------------------------------------------------------- GEMM


class _Kernel:
    """Emits the GEMM of one op (see the module docstring for the data layout)."""

    def __init__(self, op: QuantizedProductOp, kb: KernelBuilder, ins, outs):
        self.op, self.kb, self.t = op, kb, tiling(op, kb.target)
        self.g = tiled_gemm(op, self.t)
        g = self.g
        has_bias = op.bias is not None
        self.bias = ins[2] if has_bias and not folded_bias(op) else None
        rest = list(ins[3 if has_bias else 2:])
        addend = None
        if isinstance(op, QLinearConvAddOp):
            addend = kb.view(rest.pop(0), [g.pixels, g.cout])
        self.in_place = reads_input_in_place(op, kb.target)
        if self.in_place:
            rest.append(kb.view(ins[0], [g.n * g.h * g.w * g.c]))
        self.bp, self.corr, scale, rule = rest[:4]
        self.skipped_tap = skipped_tap_value(op, kb.target)
        self.scratch = rest[-1]
        self.y = kb.view(outs[0], [g.pixels, g.cout])
        self.epilogue = Int8Epilogue(op, kb, scale, rule, rest[4] if addend is not None else None,
                                     addend, self.y)
        self.x = ins[0]
        self.v32 = VectorType(i32, [VW])

    def vload(self, mem: SSAValue, at: Index, vt: VectorType) -> SSAValue:
        return self.kb.vload(mem, [self.kb.idx(at)], vt)

    def build(self) -> None:
        """Row blocks of MR pixels, the last one shifted back to end at the last pixel
        (it recomputes a few rows of the one before, with the same values): no remainder
        pass after the parallel loop, and one micro-kernel form fewer to compile. Each
        parallel iteration runs a chunk of row blocks over a group of full panels, the last
        group the tail panels too; the sizes are `grid_split`'s, which balances the threads
        (7x7 and 14x14 maps have few row chunks: their panels are split into groups). A
        pipelined epilogue (int8_epilogue.py) runs an iteration's full-panel tiles in one
        sequence, a tile's requantization inside the next one's K loop."""
        kb, g, nr = self.kb, self.g, self.t.nr
        if not self.in_place:
            (pack_input_bytes if g.runs else pack_input)(kb, self.op, g, self.x, self.scratch)
        full = g.cout // nr
        if not isinstance(g.pixels, int):
            self.build_symbolic()
            return
        mr = min(self.t.mr, g.pixels)
        row_blocks = -(-g.pixels // mr)
        last = g.pixels - mr
        split = grid_split(row_blocks, full, (g.npad - full * nr) / nr, CHUNK_ROW_BLOCKS)
        per_chunk, per_group, groups = split.per_chunk, split.per_group, split.groups

        def block(r: Index) -> Index:
            """Row block r's first row."""
            return kb.imin(kb.imul(r, mr), last)

        def chunk(c: Index) -> tuple[Index, Index]:
            lo = kb.imul(c, per_chunk)
            return lo, kb.imin(kb.iadd(lo, per_chunk), row_blocks)

        def rows(c: Index, j: Index, w: int) -> None:
            kb.for_(*chunk(c), lambda r: self.micro(block(r), mr, j, w))

        def tail(c: Index) -> None:
            self.tail_panels(lambda j, w: rows(c, j, w))

        def pipelined(c: Index, p0: Index, p1: Index) -> None:
            """Full panels [p0, p1) of chunk c, each tile requantizing the one before
            (the last panel's last block, at a panel's first block), the last drained
            after them."""
            lo, hi = chunk(c)

            def tile(p: Index, r: Index) -> None:
                j = kb.imul(p, nr)
                first = kb.insert(arith.CmpiOp(kb.idx(r), kb.idx(lo), "eq"))
                not_first_tile = kb.insert(arith.OrIOp(  # a tile before it in the iteration
                    kb.insert(arith.CmpiOp(kb.idx(r), kb.idx(lo), "ne")),
                    kb.insert(arith.CmpiOp(kb.idx(p), kb.idx(p0), "ne"))))
                pending = Pending(
                    kb.select(first, kb.idx(block(kb.isub(hi, 1))),
                              kb.idx(block(kb.isub(r, 1)))),
                    kb.select(first, kb.idx(kb.isub(j, nr)), kb.idx(j)), not_first_tile)
                self.micro(block(r), mr, j, nr, pending)

            kb.for_(p0, p1, lambda p: kb.for_(lo, hi, lambda r: tile(p, r)))
            last_tile = Pending(block(kb.isub(hi, 1)), kb.imul(kb.isub(p1, 1), nr), True)
            when(kb, kb.insert(arith.CmpiOp(kb.idx(p1), kb.idx(p0), "sgt")),
                 lambda: self.epilogue.drain(0, mr, last_tile))

        def iteration(it: Index) -> None:
            c = kb.idiv(it, groups)
            group = kb.isub(it, kb.imul(c, groups))
            p0 = kb.imul(group, per_group)
            p1 = kb.imin(kb.iadd(p0, per_group), full)
            if self.epilogue.buffer is not None:
                pipelined(c, p0, p1)
            else:
                kb.for_(p0, p1, lambda p: rows(c, kb.imul(p, nr), nr))
            if full * nr == g.npad:
                return
            if groups == 1:
                tail(c)
                return
            is_last = kb.insert(arith.CmpiOp(kb.idx(group), kb.idx(groups - 1), "eq"))
            kb.for_(0, kb.select(is_last, kb.idx(1), kb.idx(0)), lambda _: tail(c))

        kb.parallel_for(0, split.trips, iteration)

    def build_symbolic(self) -> None:
        """A run-time number of rows (a dynamically quantized activation of symbolic
        length, one row when decoding; a conv's pixels over symbolic image sizes): MR-row
        blocks in parallel chunks, the last one shifted back to end at the last row as in
        `build`; fewer rows than MR (a decode step's one) run the one-row micro-kernel row by
        row. Two micro-kernel forms, MR rows and one: a form per remainder row count (MR - 1
        of them) made a QOperator MobileNetV3 over symbolic image sizes 28 s to compile."""
        kb, g, nr, mr = self.kb, self.g, self.t.nr, self.t.mr
        full = g.cout // nr
        pixels = kb.idx(kb.dim(g.pixels))
        wide = kb.insert(arith.CmpiOp(pixels, kb.idx(mr), "sge"))
        last = kb.isub(pixels, mr)  # the last block's first row (when wide)
        row_blocks = kb.select(wide, kb.idx(kb.dim(ceildiv(g.pixels, mr))), kb.idx(0))

        def panels(i0: Index, rows: int) -> None:
            kb.for_(0, full, lambda p: self.micro(i0, rows, kb.imul(p, nr), nr))
            self.tail_panels(lambda j, w: self.micro(i0, rows, j, w))

        def chunk(c: Index) -> None:
            lo = kb.imul(c, CHUNK_ROW_BLOCKS)
            hi = kb.imin(kb.iadd(lo, CHUNK_ROW_BLOCKS), row_blocks)
            kb.for_(lo, hi, lambda r: panels(kb.imin(kb.imul(r, mr), last), mr))

        kb.parallel_for(0, kb.dim(ceildiv(g.pixels, mr * CHUNK_ROW_BLOCKS)), chunk)
        kb.for_(0, kb.select(wide, kb.idx(0), pixels), lambda p: panels(p, 1))

    def tail_panels(self, fn) -> None:
        """The columns after the full panels, static (a partial last vector is stored by
        lanes)."""
        g, nr = self.g, self.t.nr
        j = g.cout // nr * nr
        while j < g.npad:
            fn(j, min(nr, g.npad - j))
            j += nr

    def row_base(self, p: Index) -> Index:
        """Word offset of pixel p's first tap in the scratch."""
        kb, g = self.kb, self.g
        if g.oh * g.ow == 1:
            n, oh, ow = p, 0, 0
        else:
            n = kb.idiv(p, g.oh * g.ow)
            rest = kb.isub(p, kb.imul(n, g.oh * g.ow))
            oh = kb.idiv(rest, g.ow)
            ow = kb.isub(rest, kb.imul(oh, g.ow))
        hp = kb.iadd(kb.imul(n, g.hp), kb.imul(oh, g.sh))
        return kb.imul(kb.iadd(kb.imul(hp, g.wp), kb.imul(ow, g.sw)), g.pixel_units)

    def micro(self, i0: Index, mr: int, j: Index, w: int,
              pending: Pending | None = None) -> None:
        """The tile [i0, i0 + mr) x [j, j + w). With `pending` (int8_epilogue.py), the
        previous tile's rows are requantized inside this one's K loop, and this one's
        accumulators are left in the buffer."""
        kb, g = self.kb, self.g
        nv = w // VW
        bases = [self.row_base(kb.iadd(i0, r)) for r in range(mr)]
        panel = kb.imul(j, g.k_words)
        lo, hi = (0, g.kh) if self.skipped_tap is None else live_kernel_rows(kb, g, i0, mr)
        # the accumulators start at corr (+ the run-time bias, + the skipped rows' padding
        # products): no add per one at the end
        corrs = []
        for v in range(nv):
            col = kb.iadd(j, v * VW)
            corr = self.vload(self.corr, col, self.v32)
            if self.bias is not None:
                corr = kb.insert(arith.AddiOp(corr, self.vload(self.bias, col, self.v32)))
            if self.skipped_tap:
                sums = [self.vload(self.corr, kb.iadd(kb.imul(kb.iadd(rows, 1), g.npad), col),
                                   self.v32) for rows in (lo, g.kh, hi)]
                corr = kb.insert(arith.AddiOp(corr, kb.insert(arith.SubiOp(
                    kb.insert(arith.AddiOp(sums[0], sums[1])), sums[2]))))
            corrs.append(corr)
        # a kernel row's taps are one contiguous run of words when dilation_w is 1
        run = g.run_words if g.dw == 1 else g.c_words
        # (k steps per row, rows) of the pending tile requantized inside the K loop
        spread, drained = drain_spread(run, mr) if pending is not None else (1, 0)
        # the rows of a block (a whole output row) that read real input through each
        # kernel column (padding_taps.py)
        columns = (dead_columns(g, mr) if self.skipped_tap == 0 and g.dw == 1 and not g.runs
                   else None)
        # (words [lo, hi) of a kernel row's run, rows [r0, r1) of the block) to multiply
        spans = ([(k0 * g.c_words, k1 * g.c_words, a, b) for k0, k1, a, b in columns]
                 if columns else [(0, run, 0, mr)])
        outer = [(kh, 0) for kh in range(g.kh)] if g.dw == 1 else [
            (kh, kw) for kh in range(g.kh) for kw in range(g.kw)]

        def tap_loop(t: Index, *acc: SSAValue) -> list[SSAValue]:
            kh = kb.idiv(t, len(outer) // g.kh) if g.dw != 1 else t
            kw = kb.isub(t, kb.imul(kh, g.kw)) if g.dw != 1 else 0
            a_off = kb.iadd(kb.imul(kb.imul(kh, g.dh), g.wp * g.pixel_units),
                            kb.imul(kb.imul(kw, g.dw), g.pixel_units))
            b_off = kb.iadd(panel, kb.imul(kb.imul(t, run), w))

            def words(w0: int, w1: int, r0: int, r1: int, acc: list) -> list[SSAValue]:
                """The run's words [w0, w1) into the accumulators of rows [r0, r1)."""
                if w0 >= w1 or r0 >= r1:
                    return list(acc)

                def step(kk: Index, *part: SSAValue) -> list[SSAValue]:
                    at = kb.iadd(b_off, kb.imul(kk, w))
                    bv = [self.vload(self.bp, kb.iadd(at, v * VW), self.v32)
                          for v in range(nv)]
                    unit = kb.imul(kk, g.word_units)
                    a = [self.a_word(kb.iadd(bases[r], kb.iadd(a_off, unit)))
                         for r in range(r0, r1)]
                    return STEPS[self.t.form](kb, list(part), a, bv)

                part = acc[r0 * nv:r1 * nv]
                if pending is not None:  # a 1x1 conv: its only run
                    part = self.drain_in(pending, w0, spread, drained, step, part)
                    w0 += drained * spread
                part = kb.for_(w0, w1, step, iter_args=part)
                return [*acc[:r0 * nv], *part, *acc[r1 * nv:]]

            acc = list(acc)
            for span in spans:
                acc = words(*span, acc)
            return acc

        per_row = len(outer) // g.kh
        acc = kb.for_(kb.imul(lo, per_row), kb.imul(hi, per_row), tap_loop,
                      iter_args=[corrs[v] for _ in range(mr) for v in range(nv)])
        if pending is None:
            self.epilogue.store_tile(list(acc), i0, mr, j, nv)
            return
        if drained < mr:  # a K loop shorter than the tile: the pending tile's last rows
            when(kb, pending.live, lambda: self.epilogue.drain(drained, mr, pending))
        self.epilogue.keep(list(acc))

    def drain_in(self, pending: Pending, w0: int, spread: int, rows: int, step,
                 acc: list[SSAValue]) -> tuple[SSAValue, ...]:
        """K steps [w0, w0 + rows * spread) of `step` with the pending tile's rows
        [0, rows) requantized among them, one before each `spread` steps
        (`drain_spread`)."""
        kb = self.kb

        def steps(row: Index, *part: SSAValue) -> list[SSAValue]:
            when(kb, pending.live, lambda: self.epilogue.drain(row, kb.iadd(row, 1), pending))
            k0 = kb.iadd(kb.imul(row, spread), w0)
            return list(kb.unrolled_for(spread, lambda q, *p: step(kb.iadd(k0, q), *p),
                                        DRAIN_UNROLL, part))

        return kb.for_(0, rows, steps, iter_args=acc)

    def a_word(self, at: Index) -> SSAValue:
        """The word of A at scratch element `at`: a word of the scratch, 4 bytes of the
        byte scratch (packed runs), or 4 bytes of the input read in place (`at` its word)."""
        if self.in_place:
            return load_word(self.kb, self.scratch, self.kb.imul(at, 4))
        if self.g.runs:
            return load_word(self.kb, self.scratch, at)
        return self.kb.load(self.scratch, [at])


def int8_gemm_kernel(op: QuantizedProductOp, kb: KernelBuilder, ins, outs) -> None:
    _Kernel(op, kb, ins, outs).build()


def int8_gemm_key(op: QuantizedProductOp, target: Target) -> tuple:
    """The properties but the tabled ones, the multiply form for `target` (it decides B's
    packing) and whether the bias is folded: ResNet-50's 53 convs then share one kernel per
    shape and zero points (~0.6 s of LLVM each)."""
    props = tuple(sorted((k, str(v)) for k, v in op.properties.items()
                         if k not in TABLE_PROPERTIES))
    sums = (sum_form(op)[0], sum_clamp(op)) if isinstance(op, QLinearConvAddOp) else None
    return (tiling(op, target).form, folded_bias(op), props, output_clamp(op), sums)


TABLE_PROPERTIES = ("output_scale", "weight_zero_point", "output_zero_point", "output_min",
                    "output_max", "addend_zero_point", "sum_scales", "sum_zero_point", "sum_min",
                    "sum_max")
"""Properties this kernel reads from its tables (scale, rule; B and corr), not its code."""

