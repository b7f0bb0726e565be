"""Packed, register-blocked f32 GEMM (the BLIS structure): `PackedGemm`, the loop nest and
micro-kernel that MatMul and Gemm (gemm_ops.py), the NHWC convs and Winograd build on.

B is packed into `[k-block][N-panel][kc][w]` panels (gemm_tiles.py): at compile time into a
constant when B is a constant (the weights of most models, alpha folded in), otherwise per
(k-block, N-stripe) at run time into a scratch buffer the caller allocates in the arena,
or read where it is when small (gemm_ops.reads_b_in_place: `panel_base`, `b_row_stride`). A
is read in place, one scalar load and broadcast per row per k. An MR x NR tile of Y lives
in MR * NR/VW vector accumulators carried through the k loop as `scf.for` iter_args, fully
unrolled, one `vector.fma` per accumulator per k; a full tile's loop takes K_UNROLL k steps
per iteration (`unroll`). Loop order: chunk of row blocks (the parallel loop) -> k-block
(kc, deep: each tile of Y is loaded and stored once per k-block) -> N-stripe (nc) -> MR
row block -> NR panel ->
micro-kernel (with B packed at run time, the threads split each stripe's panels to pack
them, then its row blocks: the packing scratch is shared; with fewer than two row blocks,
as a classifier head's M = 1, or a few rows times a B of a MiB or more, as a transformer's
products' and ResNet-50's last stage's, or a B packed at run time times a few rows, runs
of panels are: gemm_column_split.py; a grouped conv of large weights makes each one
group's chunk of rows: `parallel_groups`). An N remainder is one narrower tail
panel (width a multiple of VW, zero-padded in the packing) whose tile goes through a small
stack buffer. A static M remainder is one more MR-row block, clamped to end at row M: its
first (MR - rem) rows are the previous block's, and it neither loads nor stores them
(`row_block`), so the remainder runs the same code as every block instead of a shorter
tile's copy of the nest (with AVX2's 6 rows most ResNet-50 convs had one: 15-25% of a conv
net's LLVM IR). Where those recomputed rows would be more than 1/64 of M, or M is below MR,
the remainder keeps a tile of its own row count.

A symbolic M (`[1, seq, K]` or `[seq, K]` times a static B) gets run-time row-block loops
and chunking, and its last partial row block is the micro-kernel specialised for each of
the MR - 1 row counts, chosen by `scf.if` on the run-time remainder (`each_remainder`). N
and K stay static (B's shape).

gemm_bf16.py runs the same loop nest over bf16 pairs of k (`precision="bf16"`), through the
hooks `b_vtype`, `a_splat` and `madd`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import (
    MemRefType,
    VectorType,
    f32,
)
from xdsl.ir import Operation, SSAValue

from onnxc.dialects.graph_epilogue import epilogue_of
from onnxc.lowering.graph_to_loops.branches import (
    Condition,
    choose,
    each_remainder,
    unless,
    when,
)
from onnxc.lowering.graph_to_loops.epilogue import activate, clamp_vectors, on_vectors
from onnxc.lowering.graph_to_loops.gemm_column_split import ColumnSplit
from onnxc.lowering.graph_to_loops.gemm_tiles import MIN_CHUNKS, GemmShape, PanelVisit, tiling_for
from onnxc.lowering.graph_to_loops.k_blocks import Flag, KBlock, block_sequence
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder

CHUNK_ROW_BLOCKS = 16
"""Row blocks per parallel iteration at most: a chunk's rows reuse each KC x NC block of B."""
MIN_ROWS_RUNTIME_PACK = 16
"""Below this many rows, packing a non-constant B costs about as much as the product."""
K_UNROLL = 4
"""k steps per iteration of the micro-kernel's loop (KernelBuilder.unrolled_for). LLVM
keeps the loop of vector FMAs rolled; four to an iteration, Zen 3, one thread, the two
builds alternating in one process: 784x192x768 74.5 -> 83.2 GFLOP/s, 49x3072x768 65.0 ->
70.5, 3136x384x96 83.9 -> 86.8, 128x768x3072 75.2 -> 77.3, 196x1536x384 level. On Zen 4
(AVX-512) level: BERT-2 +1.0%, ResNet-50 -0.6%."""
MIN_UNROLL_FLOPS = 32_000_000
"""Multiply-adds (2 M N K) of a kernel from which its full tiles' k loops are unrolled
(K_UNROLL). Below it a kernel's unrolled copies cost more compile time than they save: with
every kernel unrolled, MobileNetV3-Large's many small ones (SE blocks, 7 x 7 maps) compiled
in 4.66 s against 3.85 (medians of 6, Zen 3) for 8% less run time; at 8 MFLOP run time and
compile time were level with 32."""
MAX_SHARED_ROWS_FRACTION = 64
"""The clamped last row block recomputes MR - rem rows of the block before it, and a tile
costs about its rows' share of a full one: it replaces the remainder's own tile when those
rows are at most 1/64 of M (<= 1.6% more work). ResNet-50's 7x7 maps (M = 49, one row
left with AVX2's six) and the 2-layer BERT's 128 rows (two left) would do 10% and 3% more,
and keep the shorter tile."""


class PackedGemm(ColumnSplit):
    """Emits one packed GEMM into `y` ([M, >= col0 + N]); `bp` is the packed constant (1-D)
    or the run-time packing scratch (2-D).

    The loop structure, micro-kernel and activation are shared; subclasses say how A is
    addressed (`row_context`, `k_loop`), which k-blocks there are (`k_blocks`) and what is
    added to the accumulators before the activation (`vector_terms`, `scalar_terms`).
    `col0` and `b0` offset the output columns and the packed B (a conv group's share),
    `row0` the rows.
    """

    def unroll(self, mr: int) -> int:
        """k steps per loop iteration for a tile of `mr` rows: K_UNROLL for the full MR-row
        tiles, which do nearly all the work, in a kernel where it pays (`unroll_pays`);
        one for a remainder's shorter tile (its copies of the loop would cost compile
        time for little)."""
        return K_UNROLL if mr == self.t.mr and self.unroll_pays else 1

    @cached_property
    def unroll_pays(self) -> bool:
        """Whether the kernel does MIN_UNROLL_FLOPS or more (a run-time M: assumed): an
        unrolled loop is that much more code for LLVM at every copy of the micro-kernel.
        Unrolling leaves the sums as they are: the results do not depend on it."""
        m = self.g.m
        if not isinstance(m, int):
            return True
        return 2 * m * self.g.n * self.g.k * self.repeats() >= MIN_UNROLL_FLOPS

    def repeats(self) -> int:
        """Times the kernel runs this GEMM (a conv's groups, Winograd's points, the fused
        depthwise kernel's input rows)."""
        return 1

    def __init__(self, op: Operation, kb: KernelBuilder, g: GemmShape, y: SSAValue,
                 bp: SSAValue):
        self.op, self.kb, self.g, self.t = op, kb, g, tiling_for(kb.target)
        self.npad = g.npad(self.t)
        # M, its full MR-row blocks and the rows after them: ints, or run-time values
        self.m: Index = kb.dim(g.m)
        self.full_rows: Index
        self.rem_rows: Index
        if isinstance(self.m, int):
            self.full_rows, self.rem_rows = divmod(self.m, self.t.mr)
        else:
            self.full_rows = kb.idiv(self.m, self.t.mr)
            self.rem_rows = kb.isub(self.m, kb.imul(self.full_rows, self.t.mr))
        self.clamped = (isinstance(self.m, int) and self.rem_rows > 0 and self.full_rows > 0
                        and (self.t.mr - self.rem_rows) * MAX_SHARED_ROWS_FRACTION <= self.m)
        """the M remainder is one more row block, clamped to end at M (`row_block`)"""
        self.row_blocks: Index = self.full_rows + 1 if self.clamped else self.full_rows
        self.shared_rows = self.t.mr - self.rem_rows if self.clamped else 0
        """rows at the start of the clamped block that belong to the block before it"""
        self.y = y
        bp_type = bp.type
        assert isinstance(bp_type, MemRefType)
        self.runtime_pack = len(bp_type.get_shape()) == 2
        self.bp = kb.view(bp, [bp_type.element_count()]) if self.runtime_pack else bp
        self.vtype = VectorType(f32, [self.t.vw])
        self.b_vtype = self.vtype
        """one vector of a packed B panel row (gemm_bf16: VW pairs of bf16 as i32)"""
        # A partial tail panel's tile, at the entry (not in a loop). Shared by the row
        # blocks: a threaded parallel_for must privatize it.
        self.tile = None
        if self.npad > g.n:
            self.tile = kb.insert(memref.AllocaOp.get(f32, shape=[self.t.mr, self.t.nr]))
        epilogue = epilogue_of(op)
        self.act = epilogue[0] if epilogue is not None else None
        self.col0: Index = 0
        self.b0: Index = 0
        self.row0: Index = 0
        """the row of A and Y where the GEMM's rows start (Winograd's point; the fused
        depthwise kernel's ring slot): added to each row block's first row"""

    # ---------------------------------------------------------------- small helpers

    def splat(self, x: SSAValue) -> SSAValue:
        return self.kb.vsplat(x, self.vtype)

    def vload(self, mem: SSAValue, at: list[Index]) -> SSAValue:
        flat, idx = self.kb.address(mem, at)
        return self.kb.vload(flat, idx, self.vtype)

    def a_splat(self, a: SSAValue) -> SSAValue:
        """One A value broadcast against a vector of B."""
        return self.splat(a)

    def madd(self, a: SSAValue, b: SSAValue, acc: SSAValue) -> SSAValue:
        """acc + a * b for one accumulator (gemm_bf16: a bf16 pair dot product)."""
        return self.kb.vfma(a, b, acc)

    def vstore(self, v: SSAValue, mem: SSAValue, at: list[Index]) -> None:
        flat, idx = self.kb.address(mem, at)
        self.kb.vstore(v, flat, idx)

    def ycol(self, j: Index, c: Index = 0) -> Index:
        return self.kb.iadd(self.kb.iadd(self.col0, j), c)

    def panel_base(self, k0: Index, kc: int, j0: Index, j: Index) -> Index:
        kb = self.kb
        if self.runtime_pack:
            return kb.imul(kb.isub(j, j0), kc)
        return kb.iadd(self.b0, kb.iadd(kb.imul(k0, self.npad), kb.imul(j, kc)))

    # ---------------------------------------------------------------- A addressing (hooks)

    def k_blocks(self, visit: Callable[[KBlock], None]) -> None:
        """kc-deep blocks of K: the first starts from zero, the last applies the epilogue."""
        kb = self.kb
        kc = self.t.kc
        count = -(-self.g.k // kc)
        last_kc = self.g.k - (count - 1) * kc
        block_sequence(kb, count, last_kc == kc, lambda b, first, last: visit(
            KBlock(kb.imul(b, kc), last_kc if last is True else kc, first, last)))

    def row_context(self, i0: Index, mr: int) -> object:
        """Whatever `k_loop` needs per row block, computed once before the panel loop."""
        return None

    def k_loop(self, blk: KBlock, ctx: object, i0: Index, mr: int, init: list[SSAValue],
               step: Callable[..., list[SSAValue]]) -> tuple[SSAValue, ...]:
        """Runs `step(kk, a_values, *acc)` for kk in [0, kc): a_values[r] = A[i0 + r, k0 + kk]."""
        raise NotImplementedError

    def vector_terms(self, acc: list[SSAValue], i0: Index, mr: int, jy: Index,
                     nv: int) -> list[SSAValue]:
        """Accumulators of the tile at rows i0.., output columns jy.. before activation."""
        return acc

    def scalar_terms(self, x: SSAValue, at: list[Index]) -> SSAValue:
        """The same for one element at output position `at` (tail panels)."""
        return x

    # ---------------------------------------------------------------- structure

    def build(self) -> None:
        """Threads split the rows: with B packed at compile time, each parallel iteration is
        a chunk of row blocks running the whole k-block / N-stripe nest, of every group
        (`each_group`), so a product is one parallel region and a thread keeps the same rows
        from one kernel to the next; a B packed at run time is shared scratch, so there the
        threads pack each stripe's panels, then split its row blocks, or (few enough rows:
        `splits_packed_columns`) each packs and multiplies its own runs of panels. Column
        splits: gemm_column_split.py."""
        kb = self.kb
        if self.packs_own_columns:
            self.each_group(self.build_packed_column_split)
            return
        if self.runtime_pack:
            self.each_group(lambda: self.k_blocks(lambda blk: self.k_block(blk, None)))
            return
        if self.splits_columns():
            self.each_group(self.build_column_split)
            return
        row_blocks = self.row_blocks
        groups = self.parallel_groups()
        if isinstance(row_blocks, int):
            wanted = max(1, MIN_CHUNKS // groups)
            per_chunk: Index = max(1, min(CHUNK_ROW_BLOCKS, row_blocks // wanted))
            chunks: Index = -(-row_blocks // per_chunk)
        else:
            per_chunk = kb.imax(1, kb.imin(CHUNK_ROW_BLOCKS, kb.idiv(row_blocks, MIN_CHUNKS)))
            last = kb.iadd(row_blocks, kb.isub(per_chunk, 1))
            chunks = kb.insert(arith.DivSIOp(kb.idx(last), kb.idx(per_chunk)))

        remainder = not self.clamped and self.rem_rows != 0  # a run-time count may be 0
        if remainder:  # at least one chunk, to run it (M < MR: one chunk of no row block)
            chunks = kb.imax(chunks, 1)
        final = kb.isub(chunks, 1)
        each_group = self.each_group if groups == 1 else lambda body: body()

        def chunk(c: Index) -> None:
            lo = kb.imul(c, per_chunk)
            span = (lo, kb.imin(kb.iadd(lo, per_chunk), row_blocks))
            each_group(lambda: self.k_blocks(lambda blk: self.k_block(blk, span)))
            if remainder:  # the rows after the row blocks: in the last chunk, not after
                last: Condition = (c == final if isinstance(c, int) and isinstance(final, int)
                                   else kb.insert(arith.CmpiOp(kb.idx(c), kb.idx(final), "eq")))
                when(kb, last, lambda: each_group(self.remainder))

        if groups == 1:
            kb.parallel_for(0, chunks, chunk)
            return

        def group_chunk(it: Index) -> None:
            grp = kb.idiv(it, chunks)
            self.enter_group(grp)
            chunk(kb.isub(it, kb.imul(grp, chunks)))

        kb.parallel_for(0, kb.imul(groups, chunks), group_chunk)

    def parallel_groups(self) -> int:
        """Groups the parallel loop splits besides the rows (each iteration one group's
        chunk of rows); 1: each iteration runs every group (`each_group`). ConvGemm's."""
        return 1

    def enter_group(self, grp: Index) -> None:
        """Sets `col0` and `b0` (and what else a group addresses) to group `grp`'s."""

    def each_group(self, body: Callable[[], None]) -> None:
        """`body()` once per group of the product, with `col0` and `b0` set to the group's
        (a grouped conv's: conv_nhwc.ConvGemm); a plain GEMM is one group."""
        body()

    def remainder(self) -> None:
        """The rows after the full row blocks (when not clamped into the last one): the
        micro-kernel of that many rows, chosen at run time when M is symbolic. `build` runs
        them in the last parallel chunk: after the region they ran on one thread while the
        others waited (BERT's M = 128 leaves 2 rows of AVX2's 6: 1.6% of each GEMM)."""
        if not self.clamped:
            each_remainder(self.kb, self.rem_rows, self.t.mr,
                           lambda rem: self.k_blocks(lambda blk: self.k_block(blk, rem)))

    def remainder_start(self) -> Index:
        """The first row after the full row blocks."""
        return self.kb.iadd(self.row0, self.kb.imul(self.full_rows, self.t.mr))

    def row_block(self, r: Index) -> tuple[Index, Condition]:
        """Row block `r`'s first row, and whether it is the clamped last block (whose first
        `shared_rows` rows the block before it computes and owns)."""
        kb, mr = self.kb, self.t.mr
        if not self.clamped:
            return kb.iadd(self.row0, kb.imul(r, mr)), False
        assert isinstance(self.m, int)
        if isinstance(r, int):
            first, clamped = (r * mr, False) if r < self.full_rows else (self.m - mr, True)
            return kb.iadd(self.row0, first), clamped
        last = kb.insert(arith.CmpiOp(kb.idx(r), kb.idx(self.full_rows), "eq"))
        return kb.iadd(self.row0, kb.imin(kb.imul(r, mr), self.m - mr)), last

    def k_block(self, blk: KBlock, span: tuple[Index, Index] | int | None) -> None:
        t, kb = self.t, self.kb
        full_cols = (self.g.n // t.nr) * t.nr
        stripes = full_cols // t.nc
        panels = t.nc // t.nr
        if stripes:
            kb.for_(0, stripes, lambda s: self.stripe(blk, kb.imul(s, t.nc), panels, False,
                                                      span))
        j0 = stripes * t.nc
        tail = self.npad > full_cols
        if full_cols > j0 or tail:
            self.stripe(blk, j0, (full_cols - j0) // t.nr, tail, span)

    def stripe(self, blk: KBlock, j0: Index, panels: int, tail: bool,
               span: tuple[Index, Index] | int | None) -> None:
        """Row blocks `span`, or an int: the M remainder (that many rows after the full row
        blocks), or None: all rows, the row blocks split between threads."""
        t, kb, g = self.t, self.kb, self.g
        full_cols = (g.n // t.nr) * t.nr

        def each_panel(fn: PanelVisit) -> None:
            kb.for_(0, panels, lambda p: fn(kb.iadd(j0, kb.imul(p, t.nr)), t.nr, True))
            if tail:
                fn(full_cols, self.npad - full_cols, self.npad == g.n)

        if self.runtime_pack:
            # the threads pack the panels (disjoint scratch), then split the row blocks:
            # MatMul 512 with both operands at run time, T=2, Zen 4: 1.32 -> 1.25 ms
            kb.parallel_for(0, panels, lambda p: self.pack_panel(
                blk.k0, blk.kc, j0, kb.iadd(j0, kb.imul(p, t.nr)), t.nr))
            if tail:
                self.pack_panel(blk.k0, blk.kc, j0, full_cols, self.npad - full_cols)

        if span is None:  # row blocks write disjoint rows of Y: the loop threads split
            self.all_rows(blk, each_panel, j0, kb.parallel_for)
        elif isinstance(span, int):
            self.tile_rows(blk, self.remainder_start(), span, each_panel, j0)
        else:
            kb.for_(span[0], span[1], lambda r: self.tile_block(blk, r, each_panel, j0))

    def tile_rows(self, blk: KBlock, i0: Index, mr: int, panels: Callable[[PanelVisit], None],
             j0: Index = 0, clamped: Condition = False) -> None:
        """The micro-kernel of the `mr` rows from `i0` over each panel `panels` visits."""
        ctx = self.row_context(i0, mr)
        panels(lambda j, w, in_range: self.micro(blk, ctx, i0, mr, j, w, in_range, j0,
                                                 clamped))

    def tile_block(self, blk: KBlock, r: Index, panels: Callable[[PanelVisit], None],
                   j0: Index = 0) -> None:
        """`tile_rows` of row block `r` (the clamped last one, where M has a remainder)."""
        i0, clamped = self.row_block(r)
        self.tile_rows(blk, i0, self.t.mr, panels, j0, clamped)

    def all_rows(self, blk: KBlock, panels: Callable[[PanelVisit], None], j0: Index = 0,
                 loop: Callable[[Index, Index, Callable[[Index], None]], object] | None = None,
                 ) -> None:
        """Every row block (in `loop`: a serial one, or kb.parallel_for to split them), then
        the rows after them (a static or run-time remainder), over the panels `panels`
        visits."""
        kb = self.kb
        (loop or kb.for_)(0, self.row_blocks, lambda r: self.tile_block(blk, r, panels, j0))
        if not self.clamped:
            each_remainder(kb, self.rem_rows, self.t.mr,
                           lambda rem: self.tile_rows(blk, self.remainder_start(), rem, panels, j0))

    def pack_panel(self, k0: Index, kc: int, j0: Index, j: Index, w: int) -> None:
        raise NotImplementedError

    def b_row_stride(self, w: int) -> int:
        """Elements from one k of a `w`-wide panel of B to the next: w when packed
        (gemm_ops: N when B is read in place)."""
        return w

    # ---------------------------------------------------------------- micro-kernel

    def micro(self, blk: KBlock, ctx: object, i0: Index, mr: int, j: Index, w: int,
              in_range: bool, j0: Index, clamped: Condition = False) -> None:
        """One MR x w tile; in the `clamped` last row block its first `shared_rows` rows are
        computed, but neither loaded from Y nor stored (the block before owns them)."""
        kb, t = self.kb, self.t
        nv = w // t.vw
        base = self.panel_base(blk.k0, blk.kc, j0, j)
        init = choose(kb, blk.first, lambda: [self.splat(kb.constant(0.0, f32))] * (mr * nv),
                      lambda: self.load_tile(i0, mr, j, w, in_range, clamped))

        def step(kk: Index, a_values: list[SSAValue], *acc: SSAValue) -> list[SSAValue]:
            at = kb.iadd(base, kb.imul(kk, self.b_row_stride(w)))
            bv = [kb.vload(self.bp, [kb.idx(kb.iadd(at, v * t.vw))], self.b_vtype)
                  for v in range(nv)]
            out = list(acc)
            for r in range(mr):
                s = self.a_splat(a_values[r])
                for v in range(nv):
                    out[r * nv + v] = self.madd(s, bv[v], out[r * nv + v])
            return out

        acc = list(self.k_loop(blk, ctx, i0, mr, init, step))
        full = self.full_vectors(j, w, in_range)
        if blk.last is not False and full:
            inner = [acc[r * nv + v] for r in range(mr) for v in range(full)]
            sub = choose(kb, blk.last, lambda: self.vector_epilogue(inner, i0, mr, j, full),
                         lambda: inner)
            for r in range(mr):
                acc[r * nv: r * nv + full] = sub[r * full: (r + 1) * full]
        self.store_tile(acc, i0, mr, j, w, in_range, blk.last, clamped)

    def full_vectors(self, j: Index, w: int, in_range: bool) -> int:
        """Vectors of the panel's width that lie inside Y's N columns (the tail panel is
        static: past them come one partial vector and the zero padding)."""
        if in_range:
            return w // self.t.vw
        assert isinstance(j, int)
        return (self.g.n - j) // self.t.vw

    def load_tile(self, i0, mr: int, j, w: int, in_range: bool,
                  clamped: Condition = False) -> list[SSAValue]:
        """The tile of Y (a tail panel: full vectors direct, the partial one through the
        stack tile, padding as zeros); zeros for the rows a clamped block does not own."""
        kb, t = self.kb, self.t
        nv = w // t.vw
        full = self.full_vectors(j, w, in_range)
        part = 0 if in_range else self.g.n - j - full * t.vw
        if part:
            self.row_nest(clamped, mr, part, lambda ivs: kb.store(kb.load(
                self.y, [kb.iadd(i0, ivs[0]), self.ycol(j, kb.iadd(full * t.vw, ivs[1]))]),
                self.tile, ivs))
        shared = self.shared_rows if clamped is not False else 0
        zero = (self.splat(kb.constant(0.0, f32))
                if shared or full + (part > 0) < nv else None)

        def row(r: int) -> list[SSAValue]:
            values = []
            for v in range(nv):
                if v < full:
                    values.append(self.vload(self.y, [kb.iadd(i0, r), self.ycol(j, v * t.vw)]))
                elif v == full and part:
                    values.append(self.vload(self.tile, [r, 0]))
                else:
                    values.append(zero)
            return values

        head = choose(kb, clamped, lambda: [zero] * (shared * nv),
                      lambda: [x for r in range(shared) for x in row(r)]) if shared else []
        return head + [x for r in range(shared, mr) for x in row(r)]

    def owned_from(self, clamped: Condition) -> Index:
        """The first row of a tile its row block owns: `shared_rows` in the clamped block."""
        if isinstance(clamped, bool):
            return self.shared_rows if clamped else 0
        kb = self.kb
        return kb.select(clamped, kb.idx(self.shared_rows), kb.idx(0))

    def row_nest(self, clamped: Condition, mr: int, cols: int,
                 body: Callable[[list[Index]], None]) -> None:
        """`body([r, c])` for the rows of a tile its block owns and `cols` columns."""
        kb = self.kb
        first = self.owned_from(clamped)
        if first == 0:
            kb.nest([mr, cols], body)
            return
        kb.for_(first, mr, lambda r: kb.for_(0, cols, lambda c: body([r, c])))

    def store_tile(self, acc, i0, mr: int, j, w: int, in_range: bool, last: Flag,
                   clamped: Condition = False) -> None:
        """Full vectors go straight to Y; a tail panel's partial vector goes through the
        stack tile and is copied (with the scalar epilogue) column by column. A clamped
        block stores only the rows it owns."""
        kb, t = self.kb, self.t
        nv = w // t.vw
        full = self.full_vectors(j, w, in_range)

        def store_rows(rows: range) -> None:
            for r in rows:
                for v in range(full):
                    self.vstore(acc[r * nv + v], self.y,
                                [kb.iadd(i0, r), self.ycol(j, v * t.vw)])

        shared = self.shared_rows if clamped is not False else 0
        unless(kb, clamped, lambda: store_rows(range(shared)))
        store_rows(range(shared, mr))
        if full and self.act is not None and not on_vectors(self.act):
            when(kb, last, lambda: self.row_nest(
                clamped, mr, full * t.vw,
                lambda ivs: self.scalar_activate([kb.iadd(i0, ivs[0]), self.ycol(j, ivs[1])])))
        part = 0 if in_range else self.g.n - j - full * t.vw
        if not part:
            return
        for r in range(mr):
            self.vstore(acc[r * nv + full], self.tile, [r, 0])

        def copy(ivs: list[Index]) -> None:
            at = [kb.iadd(i0, ivs[0]), self.ycol(j, kb.iadd(full * t.vw, ivs[1]))]
            x = kb.load(self.tile, ivs)
            x = choose(kb, last, lambda: [activate(kb, self.op, self.scalar_terms(x, at))],
                       lambda: [x])[0]
            kb.store(x, self.y, at)

        self.row_nest(clamped, mr, part, copy)

    # ---------------------------------------------------------------- epilogue

    def scalar_activate(self, at: list[Index]) -> None:
        self.kb.store(activate(self.kb, self.op, self.kb.load(self.y, at)), self.y, at)

    def vector_epilogue(self, acc, i0, mr: int, j, nv: int) -> list[SSAValue]:
        out = self.vector_terms(list(acc), i0, mr, self.ycol(j), nv)
        return clamp_vectors(self.kb, self.op, out, self.vtype)
