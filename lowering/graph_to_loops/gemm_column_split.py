"""The packed GEMM's column splits: its threads split B's NR-wide panels instead of A's rows.

`PackedGemm` (gemm_microkernel.py) splits rows: each parallel iteration a chunk of row
blocks over all of B. That leaves threads idle when there are fewer than two row blocks (a
classifier head's M = 1), makes every chunk re-read a B of a MiB or more (a transformer's
products of 128 rows), and, with B packed at run time, has each core read the panels the
other packed. There each parallel iteration is a run of panels over all rows instead:
`build_column_split` with B packed at compile time, `build_packed_column_split` with B an
input, which each run packs itself; both run `PackedGemm.all_rows` over their panels.
"""

from __future__ import annotations

from onnxc.lowering.graph_to_loops.gemm_tiles import (
    MIN_CHUNKS,
    GemmShape,
    PanelVisit,
    Tiling,
)
from onnxc.lowering.graph_to_loops.k_blocks import KBlock
from onnxc.lowering.graph_to_loops.loops import Index

MIN_GEMV_CHUNKS = 8
"""Runs of panels for a product of fewer than two row blocks (a classifier head's M = 1):
it streams B from memory, and shorter runs break the prefetchers' streams (1280 x 1000 at
T=2 0.23 -> 0.25 ms with 32)."""
MIN_SPLIT_PANELS = 4
"""Panels from which a GEMM of fewer than two row blocks splits its columns between
threads (`ColumnSplit.splits_columns`)."""
SPLIT_B_BYTES = 1 << 20
"""Packed B (counted in f32) from which a GEMM of few rows (static M) splits its columns
too: chunks of row blocks each stream all of B, from the L3 or from memory once B is past
1 MiB (twice a Zen 3 core's L2). In a net the
weights are cold (a transformer's are hundreds of MB): chunks of 12 rows each re-reading a
2-9 MB B cost 7-17% on Zen 3 (T5's and BERT's FFN products, ResNet-50's last stage;
measured in the nets, alternating), and GPT-2's 768 x 50257 LM head, 154 MB read by 11
chunks of its 128 rows, ran at 50 GFLOP/s against 88."""
SPLIT_B_BYTES_RUNTIME_ROWS = 16 << 20
"""The same for a run-time M: the choice is made at compile time, for every M, and a long
sequence's A per k-block would no longer stay in L2 across the panels; only a B past the
L3 (an LM head exported with a dynamic sequence) splits there."""
SPLIT_A_BYTES = 1 << 20
"""At most this much of A per k-block (M x min(kc, K) floats) for that: every panel reads it
all, from the L2 (Zen 4: 1 MiB per core). The products of BERT-base (128 rows, k-blocks of
768 or 1024: 384 or 512 KiB of A), ViT-B/16 (197 rows: 591 KiB or 788 KiB) and ResNet-50's
14x14 stage split their columns under it: Zen 4, in-process A/B against 256 KiB (chunks of
rows with k-blocks of 1024), T=2: BERT-base 116.5 -> 109.9 ms, ViT 176.0 -> 167.2,
ResNet-50 31.9 -> 31.2; T=1 -2%, -0.3%, -0.7%."""
PACKED_SPLIT_A_BYTES = 512 << 10
"""At most this much of A per k-block for a B packed at run time to split its columns
(`splits_packed_columns`): every run reads it all, from the L2."""
PACKED_RUNS = 8
"""Runs of panels per k-block with B packed at run time. MatMul 512 with both operands
inputs, Zen 4, the row split (each stripe packed by all threads, then its row blocks split)
against runs of 2 panels, in one process alternating: T=2 1.252 -> 1.219 ms (and 1.45 ->
1.31 ms in a minute when the VM's second core ran slow: two parallel regions per call
instead of four), T=1 2.393 -> 2.421 ms (each run re-reads A's k-block from the L2)."""

def splits_packed_columns(g: GemmShape, t: Tiling) -> bool:
    """Whether a product whose B is packed at run time splits its columns: a static M whose
    k-block of A fits PACKED_SPLIT_A_BYTES, and enough panels. Its packing scratch then
    spans all of N ([kc, npad]: gemm_ops.scratch_b), each run packing its own panels."""
    return (isinstance(g.m, int) and g.m * min(t.kc, g.k) * 4 <= PACKED_SPLIT_A_BYTES
            and g.n // t.nr >= MIN_SPLIT_PANELS)


class ColumnSplit:
    """The column-split schedules of `PackedGemm`, which provides the tile geometry
    (`t`, `g`, `npad`, rows), `all_rows`, `pack_panel` and `k_blocks`."""

    packs_own_columns = False
    """B is packed at run time into a [kc, npad] scratch and `build` runs
    `build_packed_column_split` (set by the op's kernel, which chose the scratch)."""

    def splits_columns(self) -> bool:
        """Static M of fewer than two row blocks (a classifier head's or an SE block's
        M = 1), B packed at compile time, and enough panels: the threads split the NR-wide
        panels instead of the rows, which would leave all but one thread idle. Also a B of
        SPLIT_B_BYTES or more times a few rows (SPLIT_A_BYTES), or of
        SPLIT_B_BYTES_RUNTIME_ROWS times a run-time M (an LM head exported with a dynamic
        sequence: one row in a decode step, which chunks of rows ran on one thread): chunks
        of rows would each read all of B from the L3 or from memory."""
        if self.g.n // self.t.nr < MIN_SPLIT_PANELS:
            return False
        b_bytes = self.g.k * self.npad * 4
        if not isinstance(self.row_blocks, int):
            return b_bytes >= SPLIT_B_BYTES_RUNTIME_ROWS
        assert isinstance(self.m, int)
        return self.row_blocks < 2 or (b_bytes >= SPLIT_B_BYTES
                                       and self.m * min(self.t.kc, self.g.k) * 4
                                       <= SPLIT_A_BYTES)

    def tail_panel(self, visit: PanelVisit) -> None:
        """The last, narrower panel when N is not a whole number of NR panels."""
        full_cols = (self.g.n // self.t.nr) * self.t.nr
        if self.npad > full_cols:
            visit(full_cols, self.npad - full_cols, self.npad == self.g.n)

    def build_column_split(self) -> None:
        """Each parallel iteration a run of full panels (MIN_CHUNKS runs, MIN_GEMV_CHUNKS
        with fewer than two row blocks; at most an N-stripe's panels, so that the run's part
        of Y stays in L2 across k-blocks), k-block by k-block so that each reads packed B
        contiguously (panel by panel across k-blocks broke the prefetcher's streams: fc
        2048x1000 at T=1 0.18 -> 0.28 ms); all rows; the tail panel (static width) after
        the loop."""
        t, kb = self.t, self.kb
        panels = self.g.n // t.nr
        few_rows = isinstance(self.row_blocks, int) and self.row_blocks < 2
        runs = MIN_GEMV_CHUNKS if few_rows else MIN_CHUNKS
        per_chunk = min(-(-panels // runs), t.nc // t.nr)

        def chunk(c: Index) -> None:
            first = kb.imul(c, per_chunk)
            end = kb.imin(kb.iadd(first, per_chunk), panels)
            self.k_blocks(lambda blk: kb.for_(first, end, lambda p: self.all_rows(
                blk, lambda visit: visit(kb.imul(p, t.nr), t.nr, True))))

        kb.parallel_for(0, -(-panels // per_chunk), chunk)
        self.k_blocks(lambda blk: self.tail_panel(
            lambda j, w, in_range: self.all_rows(blk, lambda visit: visit(j, w, in_range))))

    def build_packed_column_split(self) -> None:
        """K-block by k-block, each parallel iteration packs a run of panels (PACKED_RUNS
        runs) into the scratch, then runs every row block over them: a core reads only the
        panels it packed (split rows read the panels every core packed), and a k-block is
        one parallel region, not one for the packing and one for the rows."""
        t, kb = self.t, self.kb
        panels = self.g.n // t.nr
        per_chunk = -(-panels // PACKED_RUNS)

        def chunk(blk: KBlock, c: Index) -> None:
            first = kb.imul(c, per_chunk)
            end = kb.imin(kb.iadd(first, per_chunk), panels)

            def each_panel(visit: PanelVisit) -> None:
                kb.for_(first, end, lambda p: visit(kb.imul(p, t.nr), t.nr, True))

            each_panel(lambda j, w, in_range: self.pack_panel(blk.k0, blk.kc, 0, j, w))
            self.all_rows(blk, each_panel)

        def tail(blk: KBlock, j: Index, w: int, in_range: bool) -> None:
            self.pack_panel(blk.k0, blk.kc, 0, j, w)
            self.all_rows(blk, lambda visit: visit(j, w, in_range))

        def k_block(blk: KBlock) -> None:
            kb.parallel_for(0, -(-panels // per_chunk), lambda c: chunk(blk, c))
            self.tail_panel(lambda j, w, in_range: tail(blk, j, w, in_range))

        self.k_blocks(k_block)
