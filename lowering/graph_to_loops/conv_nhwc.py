"""2-D f32 convolution in NHWC as an implicit GEMM on the packed micro-kernel.

Per group g: Y[p, g*Mg + m] = sum_k A[p, k] * B_g[k, m] with p = (n, oh, ow) and k ordered
(kh, kw, c). B_g is the weight packed at compile time into the micro-kernel's panels (one
constant for all groups). A is never built: the input is first copied into a zero-padded
NHWC scratch (skipped without pads), so A[p, (kh, kw, c)] = Xpad[n, oh*s + kh*d, ow*s + kw*d,
g*Cg + c] needs no bounds checks; each row block computes its MR row offsets once, and for
each tap the channel loop reads A contiguously (for a whole kernel row when there is one
group and dilation_w is 1: kw and c are then adjacent in memory). K-blocks are aligned to
taps: whole kernel rows or taps when they fit kc, else one tap split into equal channel
chunks. Bias, the residual of graph.conv_add and the activation are applied to the
accumulators before the one store. A 1x1, stride-1 unpadded conv is a plain GEMM with
A = X seen as [N*H*W, C]. Threads split the pixels (PackedGemm.build); the padding copy
splits input rows.

Depthwise convolutions (group == C == Cout) have their own kernel (depthwise.py).

bf16 compute (gemm_bf16.py, `precision="bf16"`): the same implicit GEMM on a geometry whose
channels count bf16 pairs (`pair_geometry`), reading an input scratch of pairs that
`convert_input` fills (zero-padded, rounded to bf16) and weights packed as pairs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float32Type,
    MemRefType,
    TensorType,
    f32,
    i32,
)
from xdsl.ir import Operation, SSAValue

from onnxc.dialects import graph
from onnxc.dialects.dense_data import from_numpy, values_in_shape, zeros
from onnxc.dialects.graph import int_of, ints_of, shape_of
from onnxc.dialects.layout import layout_of
from onnxc.dialects.symbolic_dims import Dim
from onnxc.lowering.graph_to_loops import gemm_bf16
from onnxc.lowering.graph_to_loops.buffer_types import RunTimeScratch
from onnxc.lowering.graph_to_loops.conv_padded_input import (
    pad_input,
    padded_scratch,
    scratch_of,
)
from onnxc.lowering.graph_to_loops.gemm_microkernel import PackedGemm
from onnxc.lowering.graph_to_loops.gemm_tiles import GemmShape, pack, tiling_for
from onnxc.lowering.graph_to_loops.k_blocks import Flag, KBlock, block_sequence
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder
from onnxc.target import Target

NHWC = "NHWC"
GROUPS_SPLIT_B_BYTES = 128 << 10
"""Packed B of all groups (counted in f32) from which a grouped conv's parallel iterations
are each one group's rows (`ConvGemm.parallel_groups`): regnet_y_800mf's 49 groups of 16
(451 KB) 5% faster at T=1 and 11% at T=2, its 20 groups (184 KB) 0-5% (Zen 3, standalone,
alternating); its 9 groups (83 KB) were level and keep every group in each chunk."""


@dataclass(frozen=True)
class ConvGeometry:
    """Shape of a 2-D conv: input [n, c, h, w], output [n, cout, oh, ow]. The batch and the
    spatial sizes may be symbolic (SymDims, run-time values in the kernel: KernelBuilder
    takes them as indices); channels, kernel, strides and pads are constants."""

    n: Dim
    c: int
    h: Dim
    w: Dim
    cout: int
    oh: Dim
    ow: Dim
    kh: int
    kw: int
    sh: int
    sw: int
    dh: int
    dw: int
    pt: int
    pl: int
    pb: int
    pr: int
    groups: int
    group_planes: bool = False
    """The padded copy holds each group's channels as a plane of its own, [groups, n, hp,
    wp, cg] (`implicit_gemm_geometry`: a padded grouped conv in f32): a group then reads
    whole cache lines, one after the other, instead of cg floats of every pixel's C
    (regnet's groups of 16 channels read one line in 4 to 49, every 512 bytes to 6 KiB
    with stride 2), and its taps along a kernel row are contiguous."""

    @property
    def cg(self) -> int:
        return self.c // self.groups

    @property
    def mg(self) -> int:
        return self.cout // self.groups

    @property
    def taps(self) -> int:
        return self.kh * self.kw

    @property
    def padded(self) -> bool:
        return any((self.pt, self.pl, self.pb, self.pr))

    @property
    def reads_in_place(self) -> bool:
        """Padded and dilated over symbolic H/W (not depthwise): the kernel reads the input
        itself, testing at run time which taps each row block reads (conv_border_taps.py),
        instead of a zero-padded copy whose borders an atrous conv mostly multiplies."""
        return (self.padded and (self.dh > 1 or self.dw > 1) and not self.depthwise
                and not (isinstance(self.h, int) and isinstance(self.w, int)))

    @property
    def depthwise_in_place(self) -> bool:
        """A padded depthwise conv of static H/W reads its input in place, taps outside it
        skipped (depthwise.py), instead of through a zero-padded copy: the copy was most of
        a depthwise layer's time (it does 9 multiply-adds per element it reads)."""
        return (self.depthwise and self.padded and isinstance(self.h, int)
                and isinstance(self.w, int))

    @property
    def hp(self) -> Dim:
        return self.h + self.pt + self.pb

    @property
    def wp(self) -> Dim:
        return self.w + self.pl + self.pr

    @property
    def pointwise(self) -> bool:
        """1x1, stride 1, no pads: pixel p's row of A starts at p * C."""
        return self.taps == 1 and self.sh == self.sw == 1 and not self.padded

    @property
    def depthwise(self) -> bool:
        return self.groups == self.c == self.cout and self.groups > 1

    @property
    def pixels(self) -> Dim:
        return self.n * self.oh * self.ow

    @property
    def pixel_stride(self) -> int:
        """Floats from one pixel of the kernel's input to the next."""
        return self.cg if self.group_planes else self.c

    @property
    def plane(self) -> Dim:
        """Floats of one group's plane of the padded copy (`group_planes`)."""
        return self.n * self.hp * self.wp * self.cg


def geometry(op: Operation) -> ConvGeometry:
    n, c, h, w = shape_of(op.input)
    cout, _, kh, kw = shape_of(op.weight)
    _, _, oh, ow = shape_of(op.output)
    sh, sw = ints_of(op.strides)
    dh, dw = ints_of(op.dilations)
    pt, pl, pb, pr = ints_of(op.pads)
    return ConvGeometry(n, c, h, w, cout, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr,
                        int_of(op.group, 1))


def implicit_gemm_geometry(op: Operation) -> ConvGeometry:
    """`geometry(op)` as the f32 implicit GEMM reads its input: a padded grouped conv's
    copy in one plane per group (`group_planes`)."""
    g = geometry(op)
    planes = g.groups > 1 and not g.depthwise and g.padded and not g.reads_in_place
    return replace(g, group_planes=True) if planes else g


def weight_value(op: Operation) -> np.ndarray | None:
    owner = op.weight.owner
    if not isinstance(owner, graph.ConstantOp):
        return None
    return values_in_shape(owner.value, shape_of(op.weight))


def supports_nhwc(op: Operation) -> bool:
    """Whether the NHWC kernels can run `op` (read on its logical types, whatever their
    layout): a 2-D f32 conv or conv_add with a constant weight."""
    if not isinstance(op, graph.ConvOp | graph.ConvAddOp):
        return False
    types = [*op.operand_types, *op.result_types]
    if not all(isinstance(t, TensorType) and isinstance(t.element_type, Float32Type)
               for t in types):
        return False
    return len(shape_of(op.input)) == 4 and isinstance(op.weight.owner, graph.ConstantOp)


def is_nhwc(op: Operation) -> bool:
    """Whether `op` was laid out in NHWC (its input and output; a residual follows them)."""
    return layout_of(op.input.type) == NHWC and layout_of(op.output.type) == NHWC


# ----------------------------------------------------------------------- k-block plan


@dataclass(frozen=True)
class BlockPlan:
    """Tap-aligned k-blocks of one group's K = taps * Cg.

    taps_per_block > 0: blocks of that many whole taps (the last may be shorter).
    Otherwise each tap is split into `chunks` channel chunks of `chunk` (the last `last_chunk`).
    `run` taps in a row have contiguous channels (a kernel row when dilation_w is 1 and
    there is one group: kw and c then form one contiguous loop, which matters when C is
    small, as in a first layer's 3 channels); blocks hold whole runs.
    """

    taps: int
    cg: int
    taps_per_block: int
    chunks: int
    chunk: int
    last_chunk: int
    run: int = 1

    @property
    def depths(self) -> list[int]:
        if self.taps_per_block:
            full, rem = divmod(self.taps, self.taps_per_block)
            return [self.taps_per_block * self.cg] * full + ([rem * self.cg] if rem else [])
        per_tap = [self.chunk] * (self.chunks - 1) + [self.last_chunk]
        return per_tap * self.taps

    @property
    def uniform(self) -> bool:
        return self.taps_per_block > 0 or self.chunk == self.last_chunk


def block_plan(g: ConvGeometry, kc: int) -> BlockPlan:
    """The k-blocks of a conv whose GEMM's blocks are at most `kc` deep (its Tiling's)."""
    contiguous = g.groups == 1 or g.group_planes  # a pixel's channels, then the next's
    if contiguous and g.dw == 1 and g.kw > 1 and g.kw * g.cg <= kc and not g.reads_in_place:
        runs = max(1, min(g.kh, kc // (g.kw * g.cg)))
        return BlockPlan(g.taps, g.cg, runs * g.kw, 1, g.cg, g.cg, g.kw)
    if g.cg <= kc:
        return BlockPlan(g.taps, g.cg, max(1, min(g.taps, kc // g.cg)), 1, g.cg, g.cg)
    chunks = -(-g.cg // kc)
    chunk = -(-g.cg // chunks)
    return BlockPlan(g.taps, g.cg, 0, chunks, chunk, g.cg - (chunks - 1) * chunk)


# ----------------------------------------------------------------------- constants


def _gemm_shape(g: ConvGeometry) -> GemmShape:
    return GemmShape(g.pixels, g.mg, g.taps * g.cg, False, False, 1.0, 0.0, None)


def packed_weights(op: Operation, target: Target) -> DenseIntOrFPElementsAttr:
    """Every group's B_g[(kh, kw, c), m] = W[g*Mg + m, c, kh, kw] in `target`'s panel order,
    groups one after the other (in bf16 compute, as pairs: `packed_weight_pairs`)."""
    if gemm_bf16.requested(op):
        return packed_weight_pairs(op, target)
    g, t = implicit_gemm_geometry(op), tiling_for(target)
    w = weight_value(op)
    assert w is not None
    depths, shape = block_plan(g, t.kc).depths, _gemm_shape(g)
    size = g.taps * g.cg * shape.npad(t)
    packed = zeros(g.groups * size, np.float32)  # the constant's bytes, built in place
    for grp in range(g.groups):
        wg = w[grp * g.mg:(grp + 1) * g.mg]  # [Mg, Cg, KH, KW]
        b = wg.transpose(2, 3, 1, 0).reshape(g.taps, g.cg, g.mg)  # a view: (kh, kw) merge
        pack(b, shape, t, depths, out=packed[grp * size:(grp + 1) * size])
    return from_numpy(packed, f32)


# ----------------------------------------------------------------------- implicit GEMM


class ConvGemm(PackedGemm):
    """The packed GEMM with A addressed through the padded input (see the module doc)."""

    def __init__(self, op: Operation, kb: KernelBuilder, ins, outs,
                 geo: ConvGeometry | None = None):
        g = geo or implicit_gemm_geometry(op)
        has_bias = op.bias is not None
        residual = isinstance(op, graph.ConvAddOp)
        n_ops = 2 + has_bias + residual
        self.setup(op, kb, g, kb.view(outs[0], [g.pixels, g.cout]), ins[n_ops],
                   ins[2] if has_bias else None,
                   kb.view(ins[n_ops - 1], [g.pixels, g.cout]) if residual else None)
        self.x = self.input_of(ins[0], ins[n_ops + 1] if len(ins) > n_ops + 1 else None)

    def setup(self, op: Operation, kb: KernelBuilder, g: ConvGeometry, y: SSAValue,
              bp: SSAValue, bias: SSAValue | None, z: SSAValue | None) -> None:
        """What every ConvGemm holds: the geometry and its k-block plan, the packed GEMM
        into `y` over `bp`, the bias and the residual (the caller sets `x`)."""
        self.geo, self.plan = g, block_plan(g, tiling_for(kb.target).kc)
        PackedGemm.__init__(self, op, kb, _gemm_shape(g), y, bp)
        self.bias, self.z = bias, z
        self.c0: Index = 0  # where the group's first input channel is in the input

    def input_of(self, x: SSAValue, scratch: SSAValue | None) -> SSAValue:
        """The flat input A is read from: the padded copy, or the input itself."""
        g = self.geo
        if g.padded:
            assert scratch is not None
            return pad_input(self.kb, g, x, scratch)
        return self.kb.view(x, [g.n * g.h * g.w * g.c])

    def repeats(self) -> int:
        return self.geo.groups

    @cached_property
    def group_size(self) -> int:
        """Floats of one group's packed B."""
        return sum(d * self.npad for d in self.plan.depths)

    def each_group(self, body) -> None:
        """Inside the parallel chunk of rows: a chunk's rows of every group are one thread's
        (ShuffleNet's grouped 1x1 convs were a parallel region per group)."""

        def group(grp: Index) -> None:
            self.enter_group(grp)
            body()

        self.kb.for_(0, self.geo.groups, group)

    def enter_group(self, grp: Index) -> None:
        g, kb = self.geo, self.kb
        self.col0 = kb.imul(grp, g.mg)
        self.c0 = kb.imul(grp, g.plane if g.group_planes else g.cg)
        self.b0 = kb.imul(grp, self.group_size)

    def parallel_groups(self) -> int:
        """Every group a parallel iteration of its own (or a few, one per chunk of its
        rows) when the packed B of all groups passes GROUPS_SPLIT_B_BYTES and M is static:
        each chunk of rows of every group would read all of it, from the L3."""
        g = self.geo
        if g.groups == 1 or not isinstance(self.row_blocks, int):
            return 1
        return g.groups if g.groups * self.group_size * 4 >= GROUPS_SPLIT_B_BYTES else 1

    # ------------------------------------------------------------ k-blocks

    def k_blocks(self, visit) -> None:
        kb, p = self.kb, self.plan
        if p.taps_per_block:
            depths = p.depths
            tb = p.taps_per_block

            def block(b: Index, first: Flag, last: Flag) -> None:
                ntaps = depths[-1] // p.cg if last is True else tb
                t0 = kb.imul(b, tb)
                visit(KBlock(kb.imul(t0, p.cg), ntaps * p.cg, first, last, (t0, ntaps, 0, p.cg)))

            block_sequence(kb, len(depths), len(set(depths)) == 1, block)
            return
        if p.uniform:
            def chunk(b: Index, first: Flag, last: Flag) -> None:
                tap = kb.idiv(b, p.chunks)
                c0 = kb.imul(kb.isub(b, kb.imul(tap, p.chunks)), p.chunk)
                visit(KBlock(kb.imul(b, p.chunk), p.chunk, first, last, (tap, 1, c0, p.chunk)))

            block_sequence(kb, p.taps * p.chunks, True, chunk)
            return

        def tap(t: Index, first: Flag, last: Flag) -> None:
            for i in range(p.chunks):
                clen = p.chunk if i < p.chunks - 1 else p.last_chunk
                c0 = i * p.chunk
                visit(KBlock(kb.iadd(kb.imul(t, p.cg), c0), clen, first if i == 0 else False,
                             last if i == p.chunks - 1 else False, (t, 1, c0, clen)))

        block_sequence(kb, p.taps, True, tap)

    # ------------------------------------------------------------ A addressing

    def row_context(self, i0: Index, mr: int) -> list[Index]:
        """Offset in the (padded) input of each row's first tap, channel c0 of the group."""
        kb, g = self.kb, self.geo
        ps = g.pixel_stride
        bases: list[Index] = []
        for r in range(mr):
            p = kb.iadd(i0, r)
            if g.pointwise:
                bases.append(kb.iadd(kb.imul(p, g.c), self.c0))
                continue
            if r and g.ow % self.t.mr == 0:
                # full row blocks start at a multiple of MR and stay in one output row:
                # the rows' offsets are one base plus constants
                bases.append(kb.iadd(bases[0], r * g.sw * ps))
                continue
            if g.n == 1:
                # one image: row p is pixel (oh, ow = p - oh * OW), whose offset
                # (oh * SH * WP + ow * SW) * C is oh * K1 + p * K2, in five ops
                oh = kb.idiv(p, g.ow)
                k1 = (g.sh * g.wp - g.ow * g.sw) * ps
                offset = kb.iadd(kb.imul(oh, k1), kb.imul(p, g.sw * ps))
                bases.append(kb.iadd(offset, self.c0))
                continue
            n = kb.idiv(p, g.oh * g.ow)
            rem = kb.isub(p, kb.imul(n, g.oh * g.ow))
            oh = kb.idiv(rem, g.ow)
            ow = kb.isub(rem, kb.imul(oh, g.ow))
            hrow = kb.iadd(kb.imul(n, g.hp), kb.imul(oh, g.sh))
            pix = kb.iadd(kb.imul(hrow, g.wp), kb.imul(ow, g.sw))
            bases.append(kb.iadd(kb.imul(pix, ps), self.c0))
        return bases

    def tap_offset(self, t: Index) -> Index:
        kb, g = self.kb, self.geo
        th = kb.idiv(t, g.kw)
        tw = kb.isub(t, kb.imul(th, g.kw))
        return kb.imul(kb.iadd(kb.imul(th, g.dh * g.wp), kb.imul(tw, g.dw)), g.pixel_stride)

    def k_loop(self, blk, ctx, i0, mr, init, step):
        """For each run of taps (one tap, or a kernel row), one contiguous loop over the
        run's channels: k = (tap - t0) * clen + c is also the row of the packed block."""
        kb = self.kb
        t0, ntaps, c0, clen = blk.extra
        run = self.plan.run
        length = run * clen

        def tap_run(ri: Index, *acc: SSAValue):
            off = kb.iadd(self.tap_offset(kb.iadd(t0, kb.imul(ri, run))), c0)
            rows = [kb.iadd(b, off) for b in ctx]

            def channel(c: Index, *acc: SSAValue):
                kk = kb.iadd(kb.imul(ri, length), c)
                return step(kk, [kb.load(self.x, [kb.iadd(r, c)]) for r in rows], *acc)

            return kb.unrolled_for(length, channel, self.unroll(mr), acc)

        return kb.for_(0, ntaps // run, tap_run, iter_args=init)

    # ------------------------------------------------------------ epilogue terms

    def vector_terms(self, acc, i0, mr: int, jy, nv: int) -> list[SSAValue]:
        kb, vw = self.kb, self.t.vw
        out = list(acc)
        if self.bias is not None:
            bias = [self.vload(self.bias, [kb.iadd(jy, v * vw)]) for v in range(nv)]
            out = [kb.float_op(arith.AddfOp, a, bias[i % nv]) for i, a in enumerate(out)]
        if self.z is not None:
            out = [kb.float_op(arith.AddfOp, out[r * nv + v], self.vload(
                self.z, [kb.iadd(i0, r), kb.iadd(jy, v * vw)]))
                for r in range(mr) for v in range(nv)]
        return out

    def scalar_terms(self, x: SSAValue, at: list[Index]) -> SSAValue:
        kb = self.kb
        if self.bias is not None:
            x = kb.add(x, kb.load(self.bias, [at[1]]))
        if self.z is not None:
            x = kb.add(x, kb.load(self.z, at))
        return x


def implicit_gemm_kernel(op: Operation, kb: KernelBuilder, ins, outs) -> None:
    """ins: x, weight (unused), [bias], [residual], packed B, [padded-input scratch]."""
    if gemm_bf16.requested(op):
        _Bf16ConvGemm(op, kb, ins, outs).build()
        return
    ConvGemm(op, kb, ins, outs).build()


# ----------------------------------------------------------------------- bf16 compute


def bf16_eligible(op: Operation) -> bool:
    """A conv the bf16 implicit GEMM runs (gemm_bf16.py): not depthwise, and each group's
    channels pair up (an odd channel count is padded with a zero channel when there is one
    group)."""
    if not supports_nhwc(op):
        return False
    g = geometry(op)
    return not g.depthwise and (g.groups == 1 or g.cg % 2 == 0)


def pair_geometry(g: ConvGeometry) -> ConvGeometry:
    """`g` with channels counted in bf16 pairs (i32): the implicit GEMM over pairs."""
    return replace(g, c=-(-g.cg // 2) * g.groups)


def input_scratch(op: Operation) -> list[MemRefType | RunTimeScratch]:
    """The kernel's input scratch: the zero-padded copy when there are pads; in bf16
    compute always, holding the input as pairs."""
    if gemm_bf16.requested(op):
        p = pair_geometry(geometry(op))
        return [scratch_of(i32, [p.n, p.hp, p.wp, p.c])]
    return padded_scratch(implicit_gemm_geometry(op))


def packed_weight_pairs(op: Operation, target: Target) -> DenseIntOrFPElementsAttr:
    """Each group's B_g over (kh, kw, channel pair) rows: the weights rounded to bf16, a
    zero channel appended to an odd count, packed like `packed_weights`."""
    g, t = geometry(op), tiling_for(target)
    p = pair_geometry(g)
    w = weight_value(op)
    assert w is not None
    parts = []
    for grp in range(g.groups):
        wg = w[grp * g.mg:(grp + 1) * g.mg].transpose(2, 3, 1, 0)  # [KH, KW, Cg, Mg]
        wide = np.zeros((g.kh, g.kw, 2 * p.cg, g.mg), np.float32)
        wide[:, :, :g.cg] = wg
        b = gemm_bf16.pairs(wide.reshape(g.taps * 2 * p.cg, g.mg))
        parts.append(pack(b, _gemm_shape(p), t, block_plan(p, t.kc).depths))
    return gemm_bf16.pair_constant(np.concatenate(parts) if len(parts) > 1 else parts[0])


def convert_input(kb: KernelBuilder, g: ConvGeometry, x: SSAValue, dst: SSAValue) -> SSAValue:
    """Copies the NHWC f32 input into the zero-bordered scratch as bf16 pairs (an odd
    channel count gets a zero channel); returns the scratch, flat."""
    p = pair_geometry(g)
    src = kb.view(x, [g.n * g.h * g.w * g.c])
    out = kb.view(dst, [p.n * p.hp * p.wp * p.c])
    row = p.wp * p.c

    def pixels(s0: Index, d0: Index) -> None:
        if g.c % 2 == 0:  # channel pairs are consecutive floats along the whole row
            kb.for_(0, g.w * p.c, lambda q: kb.store(gemm_bf16.round_pair(
                kb, kb.load(src, [kb.iadd(s0, kb.imul(q, 2))]),
                kb.load(src, [kb.iadd(s0, kb.iadd(kb.imul(q, 2), 1))])),
                out, [kb.iadd(d0, q)]))
            return

        def pixel(w: Index) -> None:
            s, d = kb.iadd(s0, kb.imul(w, g.c)), kb.iadd(d0, kb.imul(w, p.c))
            for q in range(p.c):
                hi = kb.load(src, [kb.iadd(s, 2 * q + 1)]) if 2 * q + 1 < g.c else None
                kb.store(gemm_bf16.round_pair(kb, kb.load(src, [kb.iadd(s, 2 * q)]), hi),
                         out, [kb.iadd(d, q)])

        kb.for_(0, g.w, pixel)

    def image(n: Index) -> None:
        base = kb.imul(n, p.hp * row)
        if g.pt:
            gemm_bf16.zero_pairs(kb, out, base, g.pt * row)

        def inner(h: Index) -> None:
            at = kb.iadd(base, kb.imul(kb.iadd(h, g.pt), row))
            if g.pl:
                gemm_bf16.zero_pairs(kb, out, at, g.pl * p.c)
            pixels(kb.imul(kb.iadd(kb.imul(n, g.h), h), g.w * g.c), kb.iadd(at, g.pl * p.c))
            if g.pr:
                gemm_bf16.zero_pairs(kb, out, kb.iadd(at, (g.pl + g.w) * p.c), g.pr * p.c)

        kb.parallel_for(0, g.h, inner)
        if g.pb:
            gemm_bf16.zero_pairs(kb, out, kb.iadd(base, (g.pt + g.h) * row), g.pb * row)

    kb.for_(0, g.n, image)
    return out


class _Bf16ConvGemm(gemm_bf16.Bf16Pairs, ConvGemm):
    """The implicit GEMM over channel pairs: the same loops on the pair geometry, reading
    the converted input (always a scratch) and the packed weight pairs."""

    def __init__(self, op: Operation, kb: KernelBuilder, ins, outs):
        self.f32_geo = geometry(op)
        super().__init__(op, kb, ins, outs, pair_geometry(self.f32_geo))
        self.init_pairs()

    def input_of(self, x: SSAValue, scratch: SSAValue | None) -> SSAValue:
        assert scratch is not None
        return convert_input(self.kb, self.f32_geo, x, scratch)
