"""Weight-only quantized GEMM for graph.matmul_weight_quantized: f32 activations times 2-, 4-
or 8-bit weights unpacked in registers.

    y[m, n] = sum over segments s of  scale[s, n] * (sum_{k in s} a[m, k] * q[n, k]
                                                     - zp[s, n] * sumA[m, s])  + bias[n]

A segment is a quantization block (block_size consecutive k rows, the last one shorter when
K is not a multiple), or with an act-order group index the rows of one group, gathered:
then A is read through a permutation table. Subtracting the zero point once per segment
(zp * sumA, sumA the segment's sum of a row of A, computed once per row before the GEMM into
a scratch) leaves one multiply-add per weight in the inner loop.

- B is repacked at compile time into panels of NR columns (NR = 4 vectors on 32-register
  targets, 2 on 16): byte (kg, c) of the panel at column j is at `j * KG + kg * w + c` (w the
  panel's width, KG the groups of 8 / bits k rows), and holds the 8 / bits values of column
  j + c for rows kg * per .. kg * per + per - 1, the first in the low bits. One vector load
  of VW bytes, zero-extended to i32, then gives per vectors of weights by shift / and, each
  converted to f32 and multiplied into MR x NR/VW block accumulators (one broadcast of a[m, k]
  per row and k). Rows a segment pads to whole groups hold 0 (sumA counts only real rows).
- Scales and zero points are [panel][segment][w] tables (f32 scales; zero points as bytes
  when they are all integers in [0, 255], as MatMulNBits' uint8 ones always are, else f32),
  read once per segment and column vector: the block accumulators are folded into the row
  accumulators by two FMAs, `acc += scale * (blockacc - zp * sumA)`.
- Threads split panels x chunks of rows (a symbolic M: decode's one row, prefill's many),
  so a GEMV's columns spread over the pool; the dequantized weights are never stored.

The vector width follows the target (16 f32 with AVX-512, 8 with AVX2, 4 with NEON/SSE).
Accuracy levels 0-3 compute this way, in f32; level 4 with 4-bit weights on AVX512-VNNI
runs weight_quant_int8.py instead (A quantized to int8, as onnxruntime does).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from xdsl.dialects import arith, llvm, memref
from xdsl.dialects.builtin import IntegerType, MemRefType, VectorType, f32, i32
from xdsl.ir import SSAValue

from onnxc.dialects import graph
from onnxc.dialects.dense_data import from_numpy, values_in_shape
from onnxc.dialects.graph_base import int_of, shape_of
from onnxc.dialects.graph_weight_quant import unpack_bits
from onnxc.errors import LoweringError
from onnxc.lowering.graph_to_loops.branches import each_remainder, when
from onnxc.lowering.graph_to_loops.buffer_types import RunTimeScratch
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder
from onnxc.lowering.graph_to_loops.rules import KernelRule
from onnxc.target import Target

i8 = IntegerType(8)
CHUNK_ROWS = 64
"""Rows of A per parallel iteration at most (a chunk's rows of A stay in L2 while the
panel's bytes are reused by each of its row blocks)."""


@dataclass(frozen=True)
class Tiling:
    vw: int
    """f32 lanes per vector"""
    mr: int
    """rows per register tile"""
    nr: int
    """columns per panel, a multiple of vw"""


def tiling(target: Target) -> Tiling:
    """MR x NR: per row NR/VW row and NR/VW block accumulators, plus the NR/VW weights of one
    k and A's broadcast: 3 x 64 with AVX-512's 32 registers (27 live), 3 x 16 with AVX2's
    16 (14), 3 x 16 with NEON's 32."""
    vw = max(4, target.vector_bits // 32)
    nv = 4 if target.vector_registers >= 32 else 2
    return Tiling(vw, 3, nv * vw)


@dataclass(frozen=True)
class WeightGemm:
    """The op's GEMM and the compile-time layout of its tables."""

    op: graph.MatMulWeightQuantizedOp

    @property
    def bits(self) -> int:
        return int_of(self.op.bits)

    @property
    def per(self) -> int:
        """k rows per byte."""
        return 8 // self.bits

    @property
    def block(self) -> int:
        return int_of(self.op.block_size)

    @property
    def k(self) -> int:
        return int(self.op.k())

    @property
    def n(self) -> int:
        return self.op.n()

    @cached_property
    def plain(self) -> bool:
        """Segments are the blocks, A is read in order (no group index, and K a multiple
        of the k rows per byte): no tables of segments or of A's order."""
        return self.op.group_index is None and self.k % self.per == 0

    @cached_property
    def segments(self) -> list[np.ndarray]:
        """Each segment's k rows, in order (its block or its group's rows)."""
        groups = self.op.groups()
        if groups is None:
            return [np.arange(s, min(s + self.block, self.k))
                    for s in range(0, self.k, self.block)]
        g = np.asarray(groups)
        return [np.flatnonzero(g == b) for b in range(self.op.k_blocks())
                if np.any(g == b)]

    @cached_property
    def segment_groups(self) -> np.ndarray:
        """The block (scale column) of each segment."""
        groups = self.op.groups()
        if groups is None:
            return np.arange(len(self.segments))
        return np.asarray([groups[int(s[0])] for s in self.segments])

    @cached_property
    def starts(self) -> np.ndarray:
        """Each segment's first k group, and the total last: [segments + 1]."""
        sizes = [-(-len(s) // self.per) for s in self.segments]
        return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)

    @property
    def kg(self) -> int:
        """k groups (bytes per column)."""
        return int(self.starts[-1])

    @cached_property
    def order(self) -> np.ndarray:
        """A's k row of every packed position ([kg * per]); padding positions -1."""
        order = np.full(self.kg * self.per, -1, np.int64)
        for s, rows in enumerate(self.segments):
            at = int(self.starts[s]) * self.per
            order[at:at + len(rows)] = rows
        return order

    def npad(self, t: Tiling) -> int:
        return -(-self.n // t.vw) * t.vw

    def m(self):
        return shape_of(self.op.input)[:-1]


def _constant(value: SSAValue) -> np.ndarray:
    owner = value.owner
    if not isinstance(owner, graph.ConstantOp):
        raise LoweringError("graph.matmul_weight_quantized: its weight, scales and zero "
                            "points must be constants (the kernel repacks them)")
    return values_in_shape(owner.value, shape_of(value))


def _panel_major(table: np.ndarray, npad: int, nr: int) -> np.ndarray:
    """[rows, npad] -> its panels of nr columns one after another (each [rows, w])."""
    return np.concatenate([table[:, j:j + nr].reshape(-1) for j in range(0, npad, nr)])


def zero_points_as_bytes(op: graph.MatMulWeightQuantizedOp) -> bool:
    """Whether the zero points are integers in [0, 255] (a byte table)."""
    zp = _constant(op.zero_points).astype(np.float64)
    return bool(np.all((zp >= 0) & (zp <= 255) & (zp == np.round(zp))))


def weight_constants(op: graph.MatMulWeightQuantizedOp, target: Target) -> list:
    """[packed B (i8), scales (f32), zero points (i8 bytes or f32)], and when not `plain`
    [A's order (i32, padding -> 0), segment starts (i32), segment lengths (i32)]."""
    g, t = WeightGemm(op), tiling(target)
    npad = g.npad(t)
    packed = np.zeros((g.kg, npad), np.uint8)
    at = np.where(g.order >= 0, g.order, 0)
    if g.plain:  # MatMulNBits' bytes already group `per` consecutive k rows, low bits first
        packed[:, :g.n] = np.asarray(_constant(op.weight), np.uint8).reshape(g.n, -1)[:, :g.kg].T
    else:
        q = unpack_bits(_constant(op.weight), g.bits, g.k)  # [N, K]
        rows = np.where(g.order[None, :] >= 0, q[:, at], 0)  # [N, kg * per]
        shifts = np.arange(g.per) * g.bits
        packed[:, :g.n] = (rows.reshape(g.n, g.kg, g.per) << shifts).sum(axis=2).T
    scales = np.zeros((len(g.segments), npad), np.float32)
    scales[:, :g.n] = _constant(op.scales).astype(np.float32)[:, g.segment_groups].T
    zp_values = _constant(op.zero_points).astype(np.float32)[:, g.segment_groups].T
    zps = np.zeros((len(g.segments), npad), np.float32)
    zps[:, :g.n] = zp_values
    tables = [from_numpy(_panel_major(packed, npad, t.nr).view(np.int8), i8),
              from_numpy(_panel_major(scales, npad, t.nr), f32)]
    if zero_points_as_bytes(op):
        tables.append(from_numpy(_panel_major(zps, npad, t.nr).astype(np.uint8).view(np.int8),
                                 i8))
    else:
        tables.append(from_numpy(_panel_major(zps, npad, t.nr), f32))
    if not g.plain:
        lengths = np.asarray([len(s) for s in g.segments], np.int32)
        tables += [from_numpy(at.astype(np.int32), i32),
                   from_numpy(g.starts.astype(np.int32), i32), from_numpy(lengths, i32)]
    return tables


def weight_scratch(op: graph.MatMulWeightQuantizedOp, target: Target) -> list:
    """sumA: [M, segments] f32 (in the dynamic arena for a symbolic M)."""
    g = WeightGemm(op)
    count = len(g.segments)
    for d in g.m():
        count = count * d
    return [MemRefType(f32, [count]) if isinstance(count, int) else RunTimeScratch(f32, count)]


class _Kernel:
    """Emits the GEMM of one op (the module docstring)."""

    def __init__(self, op: graph.MatMulWeightQuantizedOp, kb: KernelBuilder, ins, outs):
        self.op, self.kb, self.g, self.t = op, kb, WeightGemm(op), tiling(kb.target)
        g, t = self.g, self.t
        self.has_bias = op.bias is not None
        rest = list(ins[5 if self.has_bias else 4:])
        self.bias = ins[4] if self.has_bias else None
        self.bp, self.scale, self.zp = rest[:3]
        self.zp_bytes = self.zp.type.get_element_type() == i8
        if g.plain:
            self.order = self.starts = self.lengths = None
            self.sums = rest[3]
        else:
            self.order, self.starts, self.lengths, self.sums = rest[3:7]
        self.m = kb.product([kb.dim(d) for d in g.m()])
        self.a = kb.view(ins[0], [self.m, g.k])
        self.y = kb.view(outs[0], [self.m, g.n])
        self.nseg = len(g.segments)
        self.sums = kb.view(self.sums, [kb.imul(self.m, self.nseg)])
        self.vf = VectorType(f32, [t.vw])
        self.vi = VectorType(i32, [t.vw])
        self.vb = VectorType(i8, [t.vw])
        self.npad = g.npad(t)
        self.tile = kb.insert(memref.AllocaOp.get(f32, shape=[t.vw])) if (
            g.n % t.vw or self.has_bias) else None

    # ------------------------------------------------------------------ sumA

    def row_sums(self) -> None:
        """sumA[m, s] for every row and segment (real rows only), before the GEMM."""
        kb, g = self.kb, self.g
        zero = kb.constant(0.0, f32)

        def row(m: Index) -> None:
            if g.plain:
                def segment(s: Index) -> None:
                    lo = kb.imul(s, g.block)
                    hi = kb.imin(kb.iadd(lo, g.block), g.k)
                    (total,) = kb.for_(lo, hi, lambda k, acc: [kb.add(
                        acc, kb.load(self.a, [m, k]))], iter_args=[zero])
                    kb.store(total, self.sums, [kb.iadd(kb.imul(m, self.nseg), s)])
            else:
                def segment(s: Index) -> None:
                    lo = kb.imul(self.load_index(self.starts, s), g.per)
                    hi = kb.iadd(lo, self.load_index(self.lengths, s))
                    (total,) = kb.for_(lo, hi, lambda p, acc: [kb.add(
                        acc, kb.load(self.a, [m, self.load_index(self.order, p)]))],
                        iter_args=[zero])
                    kb.store(total, self.sums, [kb.iadd(kb.imul(m, self.nseg), s)])
            kb.for_(0, self.nseg, segment)

        kb.for_(0, self.m, row)

    def load_index(self, table: SSAValue, at: Index) -> SSAValue:
        return self.kb.insert(arith.IndexCastOp(self.kb.load(table, [at]),
                                                self.kb.idx(0).type))

    # ------------------------------------------------------------------ the GEMM

    def build(self) -> None:
        kb, t = self.kb, self.t
        self.row_sums()
        full = self.g.n // t.nr
        tail = self.npad - full * t.nr
        panels = full + (1 if tail else 0)
        chunk_rows = CHUNK_ROWS // t.mr * t.mr
        chunks = kb.idiv(kb.iadd(self.m, chunk_rows - 1), chunk_rows)

        def rows(c: Index, j: Index, w: int) -> None:
            lo = kb.imul(c, chunk_rows)
            hi = kb.imin(kb.iadd(lo, chunk_rows), self.m)
            count = kb.isub(hi, lo)
            blocks = kb.idiv(count, t.mr)
            kb.for_(0, blocks, lambda b: self.micro(kb.iadd(lo, kb.imul(b, t.mr)), t.mr, j, w))
            rem = kb.isub(count, kb.imul(blocks, t.mr))
            each_remainder(kb, rem, t.mr, lambda r: self.micro(
                kb.iadd(lo, kb.imul(blocks, t.mr)), r, j, w))

        def iteration(it: Index) -> None:
            c = kb.idiv(it, panels)
            p = kb.isub(it, kb.imul(c, panels))
            if full:
                when(kb, self.less(p, full), lambda: rows(c, kb.imul(p, t.nr), t.nr))
            if tail:
                when(kb, self.less(p, full, eq=True), lambda: rows(c, full * t.nr, tail))

        kb.parallel_for(0, kb.imul(chunks, panels), iteration)

    def less(self, p: Index, bound: int, eq: bool = False):
        """p < bound (or p == bound) as a condition (a Python bool when p is known)."""
        if isinstance(p, int):
            return p == bound if eq else p < bound
        return self.kb.insert(arith.CmpiOp(p, self.kb.idx(bound), "eq" if eq else "slt"))

    def vload(self, mem: SSAValue, at: Index, vt: VectorType) -> SSAValue:
        return self.kb.vload(mem, [self.kb.idx(at)], vt)

    def micro(self, i0: Index, mr: int, j: Index, w: int) -> None:
        """Rows i0 .. i0 + mr of the panel at column j (width w)."""
        kb, g, t = self.kb, self.g, self.t
        nv = w // t.vw
        zero = kb.vsplat(kb.constant(0.0, f32), self.vf)
        panel_b = kb.imul(j, g.kg)
        panel_s = kb.imul(j, self.nseg)
        mask = kb.vsplat(kb.constant((1 << g.bits) - 1, i32), self.vi)
        shifts = [kb.vsplat(kb.constant(s * g.bits, i32), self.vi) for s in range(g.per)]

        def raw_bytes(kgi: Index) -> list[SSAValue]:
            """The panel's bytes of k group kgi, zero-extended: one i32 vector per VW columns."""
            at = kb.iadd(panel_b, kb.imul(kgi, w))
            return [kb.insert(llvm.ZExtOp(self.vload(self.bp, kb.iadd(at, v * t.vw), self.vb),
                                          self.vi)) for v in range(nv)]

        def weight(x: SSAValue, jj: int) -> SSAValue:
            """The f32 values of k row jj of the group in the i32 lanes x."""
            q = x if jj == 0 else kb.insert(arith.ShRUIOp(x, shifts[jj]))
            if jj < g.per - 1:
                q = kb.insert(arith.AndIOp(q, mask))
            return kb.insert(llvm.SIToFPOp(q, self.vf))

        def a_at(r: int, pos: Index) -> SSAValue:
            k = pos if g.plain else self.load_index(self.order, pos)
            return kb.load(self.a, [kb.iadd(i0, r), k])

        def step(kgi: Index, *bacc: SSAValue) -> list[SSAValue]:
            """One k group: each of its k rows unpacked right before its multiply-adds (the
            live registers: the accumulators, the group's bytes, one row's weights)."""
            xs = raw_bytes(kgi)
            out = list(bacc)
            for jj in range(g.per):
                wv = [weight(x, jj) for x in xs]
                pos = kb.iadd(kb.imul(kgi, g.per), jj)
                for r in range(mr):
                    a = kb.vsplat(a_at(r, pos), self.vf)
                    for v in range(nv):
                        out[r * nv + v] = kb.vfma(a, wv[v], out[r * nv + v])
            return out

        def segment(s: Index, *acc: SSAValue) -> list[SSAValue]:
            if g.plain:
                lo = kb.imul(s, g.block // g.per)
                hi = kb.imin(kb.iadd(lo, g.block // g.per), g.kg)
            else:
                lo = self.load_index(self.starts, s)
                hi = self.load_index(self.starts, kb.iadd(s, 1))
            bacc = kb.for_(lo, hi, step, iter_args=[zero] * (mr * nv))
            at = kb.iadd(panel_s, kb.imul(s, w))
            out = list(acc)
            for v in range(nv):
                scale = self.vload(self.scale, kb.iadd(at, v * t.vw), self.vf)
                zp = self.zero_point(kb.iadd(at, v * t.vw))
                for r in range(mr):
                    total = kb.load(self.sums, [kb.iadd(kb.imul(kb.iadd(i0, r), self.nseg), s)])
                    centred = kb.vfma(kb.vsplat(total, self.vf), zp, bacc[r * nv + v])
                    out[r * nv + v] = kb.vfma(centred, scale, out[r * nv + v])
            return out

        acc = kb.for_(0, self.nseg, segment, iter_args=[zero] * (mr * nv))
        for v in range(nv):
            col = kb.iadd(j, v * t.vw)
            partial = isinstance(col, int) and col + t.vw > g.n
            for r in range(mr):
                row = kb.iadd(i0, r)
                value = acc[r * nv + v]
                if partial:
                    self.store_part(value, row, col)
                    continue
                if self.bias is not None:
                    value = kb.float_op(arith.AddfOp, value, self.vload(self.bias, col, self.vf))
                kb.vstore(value, self.y, [kb.idx(row), kb.idx(col)])

    def zero_point(self, at: Index) -> SSAValue:
        """-zp of VW columns at table offset `at`, as f32."""
        kb = self.kb
        if self.zp_bytes:
            raw = self.vload(self.zp, at, self.vb)
            value = kb.insert(llvm.SIToFPOp(kb.insert(llvm.ZExtOp(raw, self.vi)), self.vf))
        else:
            value = self.vload(self.zp, at, self.vf)
        return kb.insert(arith.NegfOp(value))

    def store_part(self, value: SSAValue, row: Index, col: int) -> None:
        store_partial_row(self.kb, value, self.tile, self.bias, self.y, row, col, self.g.n)


def store_partial_row(kb: KernelBuilder, value: SSAValue, tile: SSAValue,
                      bias: SSAValue | None, y: SSAValue, row: Index, col: int,
                      n: int) -> None:
    """The first n - col lanes of `value` (+ bias) into Y's `row` from column `col`, through
    the stack `tile`: a vector store there would write past Y's last column."""
    kb.vstore(value, tile, [kb.idx(0)])

    def lane(c: Index) -> None:
        x = kb.load(tile, [c])
        if bias is not None:
            x = kb.add(x, kb.load(bias, [kb.iadd(col, c)]))
        kb.store(x, y, [row, kb.iadd(col, c)])

    kb.for_(0, n - col, lane)


def _int8():
    """weight_quant_int8 (imported late: it builds on this module)."""
    from onnxc.lowering.graph_to_loops import weight_quant_int8

    return weight_quant_int8


def weight_gemm_kernel(op: graph.MatMulWeightQuantizedOp, kb: KernelBuilder, ins, outs) -> None:
    if _int8().applies(op, kb.target):
        _int8().int8_kernel(op, kb, ins, outs)
        return
    _Kernel(op, kb, ins, outs).build()


def kernel_constants(op: graph.MatMulWeightQuantizedOp, target: Target) -> list:
    return (_int8().int8_constants if _int8().applies(op, target) else weight_constants)(
        op, target)


def kernel_scratch(op: graph.MatMulWeightQuantizedOp, target: Target) -> list:
    return (_int8().int8_scratch if _int8().applies(op, target) else weight_scratch)(
        op, target)


RULES = (
    KernelRule(graph.MatMulWeightQuantizedOp, weight_gemm_kernel, constants=kernel_constants,
               scratch=kernel_scratch, symbolic=True),
)
"""symbolic: M (the activations' leading axes: decode's one row, prefill's sequence) is read
at run time; K and N are static."""
