"""The int8 GEMM's epilogue (int8_gemm.py): a tile's i32 accumulators requantized by the
output rule (int8_requantize.py), a qlinear_conv_add's residual added, and stored.

Pipelined (`pipelines_epilogue`): a tile's accumulators are left in a stack buffer and
requantized a row at a time inside the next tile's K loop, one row per `drain_spread` k
steps. Why: on AVX-512 cores whose 512-bit multiply-add fills the two FMA pipes (Zen 4's
vpdpbusd, one per cycle), the epilogue's conversions, min / max, adds, shifts and shuffles
run on the other two pipes for free beside it (a micro-benchmark of this core), while run
after the K loop they run alone, at about two vector ops a cycle: the next tile's
multiply-adds wait behind the ~300 ops of a residual tile's epilogue (our reading of the
timings below; there is no PMU on the machine). Only the multiplies (the scale's vmulps, a
residual's two vpmulld) still take multiply-add cycles, and the buffer costs a store and a
load per accumulator. Measured on Zen 4, QDQ ResNet-50's residual convs alone: 56 x 56 with
K = 64 312 -> 296 us (a row per k step instead of per two: no gain), 28 x 28 (K = 128)
268 -> 254, 14 x 14 on 7 x 48 tiles 245 -> 236, 7 x 7 -1%; the whole model about -1% at
one and two threads. The 3x3 convs (K >= 576: the epilogue ~3% of a tile) did not gain, so
1x1 convs only; and only on the CPUs where it was measured (`PIPELINED_CPUS`). LLVM's
codegen of the model's kernels takes 0.2-0.35 s more (single-threaded, 2.4 s before).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import IntegerType, VectorType, f32, i32
from xdsl.ir import SSAValue

from onnxc.dialects.graph_qlinear import (
    QLINEAR_CONV_OPS,
    QLinearConvAddOp,
    QuantizedProductOp,
    is_i32,
)
from onnxc.lowering.graph_to_loops.branches import Condition
from onnxc.lowering.graph_to_loops.int8_layout import VW, tiled_gemm, tiling
from onnxc.lowering.graph_to_loops.int8_requantize import (
    Clamp,
    OutputRule,
    SumRule,
    load_output_rule,
    narrowed,
    output_clamp,
    packed_row,
    packs_rows,
    requantize_vector,
    requantized_wide,
    residual_sum_wide,
    sum_clamp,
    sum_form,
    widened_bytes,
)
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder
from onnxc.target import Target

PIPELINED_CPUS = ("znver4",)
"""CPUs (`Target.cpu`) where the pipeline was measured faster: Zen 4, whose 512-bit
multiply-adds leave two vector pipes to the epilogue. Others are not measured: on Intel,
512-bit ops share ports 0 and 5 with the vector ALU, so there the epilogue may take
multiply-add cycles all the same and the buffer's stores and loads would be extra."""


def pipelines_epilogue(op: QuantizedProductOp, target: Target) -> bool:
    """Whether `op`'s tiles are requantized inside the next tile's K loop: on
    PIPELINED_CPUS, a 1x1 conv of static size with byte outputs on VNNI's tiles (6 x 64,
    and 7 x 48 over small maps), with at least one full panel and one full row block.
    Unpadded in h: every row block then runs its one kernel tap, whose K loop drains the
    pending tile."""
    if not isinstance(op, QLINEAR_CONV_OPS) or target.cpu not in PIPELINED_CPUS:
        return False
    t = tiling(op, target)
    g = tiled_gemm(op, t)
    el = op.results[0].type.get_element_type()
    return (t.form == "vnni" and g.kh == g.kw == 1 and g.pt + g.pb == 0
            and isinstance(g.pixels, int) and g.pixels >= t.mr and g.cout >= t.nr
            and isinstance(el, IntegerType) and not is_i32(el))


def drain_spread(words: int, mr: int) -> tuple[int, int]:
    """(k steps per requantized row, rows requantized in the K loop) for a K loop of
    `words` steps and `mr` rows: the rows spread over the whole loop (one row per step,
    the rows bunched at the loop's start, measured no faster than no pipeline at K = 64);
    the rows a short loop leaves are requantized after it."""
    spread = max(1, words // mr)
    return spread, min(words // spread, mr)


@dataclass(frozen=True)
class Pending:
    """The tile before the current one in a parallel iteration, its accumulators in the
    buffer: its first row and column, and whether there is one (i1, or True)."""

    i0: Index
    j: Index
    live: Condition


class Int8Epilogue:
    """Requantizes and stores one kernel's tiles; loads the rules once per kernel."""

    def __init__(self, op: QuantizedProductOp, kb: KernelBuilder, scale: SSAValue,
                 rule: SSAValue, sums: SSAValue | None, addend: SSAValue | None,
                 y: SSAValue):
        self.op, self.kb, self.scale, self.addend, self.y = op, kb, scale, addend, y
        self.t = tiling(op, kb.target)
        self.g = tiled_gemm(op, self.t)
        self.rule = self._output_rule(rule, 0, output_clamp(op))
        self.sum_rule = None
        if sums is not None:
            # the sum's table (sum_table): three factors, the addend's zero point, the rule,
            # the fixed form's adjustment
            assert isinstance(op, QLinearConvAddOp)
            addend_zp = kb.insert(arith.FPToSIOp(kb.load(sums, [3]), i32))
            factors = tuple(kb.load(sums, [i]) for i in range(3))
            self.sum_rule = SumRule(sum_form(op)[0], factors,  # type: ignore[arg-type]
                                    kb.load(sums, [7]), addend_zp,
                                    self._output_rule(sums, 4, sum_clamp(op)))
        self.element = y.type.get_element_type()  # type: ignore[attr-defined]
        # the rule that bounds a byte result (the sum's for a residual sum), else None
        self.out_rule = None
        if isinstance(self.element, IntegerType) and not is_i32(self.element):
            self.out_rule = self.rule if self.sum_rule is None else self.sum_rule.rule
        self.v32, self.vf = VectorType(i32, [VW]), VectorType(f32, [VW])
        # the pending tile's accumulators (pipelined), row-major
        self.buffer = (kb.insert(memref.AllocaOp.get(i32, shape=[self.t.mr * self.t.nr]))
                       if pipelines_epilogue(op, kb.target) else None)
        # the last, partial vector of a Cout that is not a multiple of 16 goes through here
        self.tile = None
        if self.g.cout % VW:
            self.tile = kb.insert(memref.AllocaOp.get(self.element, shape=[VW]))

    def _output_rule(self, table: SSAValue, at: int, clamp: Clamp) -> OutputRule:
        """A byte result's rule from `table`[at:] (zero point, min and max minus it)."""
        return load_output_rule(self.kb, *(self.kb.load(table, [at + i]) for i in range(3)),
                                clamp)

    def store_tile(self, acc: list[SSAValue], i0: Index, mr: int, j: Index, nv: int) -> None:
        """Output rows [i0, i0 + mr) x columns [j, j + 16 nv) from `acc` (row-major)."""
        kb, g = self.kb, self.g
        cols = [kb.iadd(j, v * VW) for v in range(nv)]
        scales = [None if is_i32(self.element) else kb.vload(self.scale, [kb.idx(col)], self.vf)
                  for col in cols]
        whole = not (isinstance(cols[-1], int) and cols[-1] + VW > g.cout)
        for r in range(mr):
            self.store_row(acc[r * nv:(r + 1) * nv], scales, kb.iadd(i0, r), j, whole)

    def store_row(self, accs: list[SSAValue], scales, row: Index, j: Index,
                  whole: bool = True) -> None:
        """Output row `row` from column j, from its len(accs) accumulators (`whole`: no
        partial last vector)."""
        kb = self.kb
        if self.out_rule is not None and whole and len(accs) == 4 and packs_rows(kb.target):
            self.store_packed(accs, scales, row, j)
            return
        for v, acc in enumerate(accs):
            col = kb.iadd(j, v * VW)
            value = self.requantize(acc, scales[v], row, col)
            if isinstance(col, int) and col + VW > self.g.cout:
                self.store_part(value, row, col)
            else:
                kb.vstore(value, self.y, [kb.idx(row), kb.idx(col)])

    def keep(self, acc: list[SSAValue]) -> None:
        """A tile's accumulators into the buffer, to be drained by the next tile."""
        for i, value in enumerate(acc):
            self.kb.vstore(value, self.buffer, [self.kb.idx(i * VW)])

    def drain(self, lo: Index, hi: Index, pending: Pending) -> None:
        """Rows [lo, hi) of the buffered tile `pending` requantized and stored."""
        kb = self.kb
        nv = self.t.nr // VW

        def row(r: Index) -> None:
            at = kb.imul(r, nv * VW)
            accs = [kb.vload(self.buffer, [kb.idx(kb.iadd(at, v * VW))], self.v32)
                    for v in range(nv)]
            scales = [kb.vload(self.scale, [kb.idx(kb.iadd(pending.j, v * VW))], self.vf)
                      for v in range(nv)]
            self.store_row(accs, scales, kb.iadd(pending.i0, r), pending.j)

        kb.for_(lo, hi, row)

    def store_packed(self, accs: list[SSAValue], scales, row: Index, j: Index) -> None:
        """Output row `row`'s 64 bytes from column j, from their four accumulators."""
        kb = self.kb
        cols = [kb.iadd(j, v * VW) for v in range(4)]
        wides = [self.wide(acc, scales[v], row, cols[v]) for v, acc in enumerate(accs)]
        kb.vstore(packed_row(kb, self.element, wides), self.y, [kb.idx(row), kb.idx(j)])

    def store_part(self, value: SSAValue, row: Index, col: int) -> None:
        """The first Cout - col lanes of `value` into Y's row (through the stack tile)."""
        kb = self.kb
        kb.vstore(value, self.tile, [kb.idx(0)])
        kb.for_(0, self.g.cout - col, lambda c: kb.store(
            kb.load(self.tile, [c]), self.y, [row, kb.iadd(col, c)]))

    def requantize(self, acc: SSAValue, scale: SSAValue | None, row: Index,
                   col: Index) -> SSAValue:
        """Output [row, col:col + 16] from its accumulators (and the addend's bytes there)."""
        if self.sum_rule is None:
            return requantize_vector(self.kb, self.element, self.rule, acc, scale)
        assert self.out_rule is not None and scale is not None
        return narrowed(self.kb, self.element, self.wide(acc, scale, row, col),
                        self.out_rule.clamp)

    def wide(self, acc: SSAValue, scale: SSAValue | None, row: Index, col: Index) -> SSAValue:
        """A byte output [row, col:col + 16] as <16 x i32>, before the narrowing."""
        assert scale is not None
        if self.sum_rule is None:
            return requantized_wide(self.kb, self.rule, acc, scale)
        assert self.addend is not None
        addend = widened_bytes(self.kb, self.addend, [row, col],
                               self.addend.type.get_element_type())
        return residual_sum_wide(self.kb, self.rule, self.sum_rule, acc, scale, addend)
