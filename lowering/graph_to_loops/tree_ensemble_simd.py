"""Sixteen trees per AVX-512 vector (eight per AVX2 one): every node's test at once, no walk.

A walk (tree_ensemble.py) is a chain of dependent loads per tree: at batch 1 a 500-tree
forest of depth 3 is 1,500 such steps, about 3 µs however they are interleaved. Here the
trees are padded to complete ones of the forest's depth D and laid out a vector's lanes of
trees at a time, node by node (breadth first): a node's 16 features index the sample's
features held in one or two registers (vpermps / vpermi2ps; AVX2: vpermps from each of two
and a blend by a table of which), one compare tests all 16, and
the leaf is chosen bottom-up by 2^D - 1 blends, each internal node taking its first child's
value where its test held, else its second's. No step depends on another tree's, so a
group of 16 trees costs about 4 instructions per node of a complete tree and nothing waits.

Padding: a leaf above depth D becomes a chain of always-true tests (feature F, a lane the
sample vector holds 0 in, against +inf) ending in the leaf on the first-child side; a
group's missing trees are such chains to a 0 leaf. Sums: each group's 16 leaf values are
added to the running sum one after another in lane order (`llvm.vector.reduce.fadd`
without reassociation), so the sum is in tree order, bit-identical to the walk's and to
onnxruntime's at one thread; that chain (16 dependent adds per group) overlaps the next
group's tests.

Taken when it pays and fits (`simd_forest`): an AVX-512 or AVX2 target, f32, SUM or
AVERAGE, fewer features than two registers' lanes (31 or 15), depth at most MAX_DEPTH and
padding of at most PAD_FACTOR times the real tests; else the walk.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import VectorType, f32, i32

from onnxc.dialects.dense_data import from_numpy
from onnxc.dialects.graph_trees import TreeTables
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder
from onnxc.lowering.to_llvm.llvm_ext import VectorFCmpOp, VectorSelectOp
from onnxc.target import Target

MAX_DEPTH = 5
"""deeper forests pad to too many tests (2^D - 1 per tree): the walk. Measured (Zen 4, one
thread, against the walk): depth 3 (500-tree GBM) 3.8 / 5.2 us at batch 1, 0.44 / 1.60 ms
at batch 1,000; depth 4 (101 trees) 5.9 / 6.5 us, 0.22 / 0.70 ms; depth 6 (XGBoost's 100
trees) 4.6 / 5.0 us but 1.49 / 1.20 ms at batch 1,000"""
PAD_FACTOR = 3
"""padded tests at most this many times the forest's real ones (the forests above: 1.1 to
2.1; XGBoost's 3-class forest of depth 4 pads to 9.8 times)"""
MAX_COLUMNS = 4
"""forests whose leaves weigh several columns each (random forest classifiers): blends per
column, so few columns"""

_PERMUTE_ONE = {16: "llvm.x86.avx512.permvar.sf.512", 8: "llvm.x86.avx2.permps"}
_PERMUTE_TWO = "llvm.x86.avx512.vpermi2var.ps.512"


@dataclass(frozen=True)
class SimdForest:
    """The padded, lane-interleaved tables and the walk plan (module docstring)."""

    depth: int
    lanes: int
    """trees a vector: 16 (AVX-512) or 8 (AVX2)"""
    features: int
    """the sample's features (F): F + 1 lanes, the last a 0 the padding tests read"""
    parts: tuple[tuple[int | None, int, int], ...]
    """(column or None: every column, first group, end group)"""
    tests: np.ndarray  # [groups, 2^D - 1, lanes] int32 feature of each node
    upper: np.ndarray  # [groups, 2^D - 1, lanes] f32: inside when x <= upper
    lower: np.ndarray | None  # inside also needs lower <= x (BRANCH_GT/GTE forests)
    nan_inside: np.ndarray | None  # f32 1: a NaN goes to the first child here
    leaves: np.ndarray  # [groups, 2^D, leaf columns, lanes] f32

    @property
    def registers(self) -> int:
        """vectors the sample's features (and the padding lane) take: 1 or 2"""
        return 1 if self.features + 1 <= self.lanes else 2

    @property
    def blends_registers(self) -> bool:
        """AVX2 with the sample in two registers: no vpermi2ps, so a table says which"""
        return self.lanes == 8 and self.registers == 2

    @property
    def inner(self) -> int:
        return (1 << self.depth) - 1

    @property
    def leaf_columns(self) -> int:
        return self.leaves.shape[2]

    def constants(self) -> list:
        tables = [self.tests, self.upper, self.leaves]
        tables += [t for t in (self.lower, self.nan_inside) if t is not None]
        if self.blends_registers:  # 1.0 where a node's feature is in the second register
            tables.append((self.tests >= self.lanes).astype(np.float32))
        return [from_numpy(np.ascontiguousarray(t).reshape(-1)) for t in tables]


def simd_forest(t: TreeTables, features: int, order: np.ndarray,
                parts: list[tuple[int | None, int, int]], target: Target) -> SimdForest | None:
    """The layout when the vector form applies (module docstring), else None."""
    lanes = 16 if target.has_feature("avx512f") else 8 if target.has_feature("avx2") else 0
    if (target.arch != "x86_64" or not lanes
            or t.dtype != np.float32 or t.aggregate not in ("SUM", "AVERAGE")
            or features + 1 > 2 * lanes or len(t.roots) == 0):
        return None
    depth = int(t.depths.max())
    own = np.arange(t.nodes)
    leaf = (t.children[0::2] == own) & (t.children[1::2] == own)
    real_tests = int((~leaf).sum())
    segmented = parts[0][0] is not None
    if depth > MAX_DEPTH or (not segmented and t.columns > MAX_COLUMNS):
        return None
    groups = sum(-(-(b - a) // lanes) for _, a, b in parts)
    if groups * lanes * ((1 << depth) - 1) > PAD_FACTOR * max(real_tests, lanes):
        return None
    inner, width = (1 << depth) - 1, 1 << depth
    columns = 1 if segmented else t.columns
    tests = np.full((groups, inner, lanes), features, np.int32)
    upper = np.full((groups, inner, lanes), np.inf, np.float32)
    lower = np.full((groups, inner, lanes), -np.inf, np.float32)
    nan_inside = np.zeros((groups, inner, lanes), np.float32)
    leaves = np.zeros((groups, width, columns, lanes), np.float32)
    plan, g = [], 0
    for column, a, b in parts:
        first = g
        for k, tree in enumerate(order[a:b]):
            g_k, lane = first + k // lanes, k % lanes
            stack = [(0, int(t.roots[tree]), 0)]  # (slot, node, level), breadth-first slots
            while stack:
                slot, node, level = stack.pop()
                if level == depth:
                    weights = t.leaf_weights[node]
                    leaves[g_k, slot - inner, :, lane] = (
                        weights if column is None else weights[column])
                elif leaf[node]:  # a chain of always-true tests down to the leaf
                    stack.append((2 * slot + 1, node, level + 1))
                else:
                    tests[g_k, slot, lane] = t.features[node]
                    upper[g_k, slot, lane] = t.upper[node]
                    lower[g_k, slot, lane] = t.lower[node]
                    nan_inside[g_k, slot, lane] = float(t.nan_inside[node])
                    stack.append((2 * slot + 1, int(t.children[2 * node]), level + 1))
                    stack.append((2 * slot + 2, int(t.children[2 * node + 1]), level + 1))
        g = first + -(-(b - a) // lanes)
        plan.append((column, first, g))
    return SimdForest(
        depth, lanes, features, tuple(plan), tests, upper,
        lower if (lower != -np.inf).any() else None,
        nan_inside if nan_inside.any() else None, leaves)


def _compare(kb: KernelBuilder, a, b, predicate: str):
    """A lane-wise compare (xDSL's arith.cmpf and select are scalar only: llvm_ext.py)."""
    return kb.insert(VectorFCmpOp(a, b, predicate))


def simd_sums(kb: KernelBuilder, forest: SimdForest, x, tables: list, row: Index,
              initial: list) -> list:
    """The sample's per-column sums over every tree (tree order within each column)."""
    tests, upper, leaves, *rest = tables
    lower = rest.pop(0) if forest.lower is not None else None
    nan_inside = rest.pop(0) if forest.nan_inside is not None else None
    high = rest.pop(0) if forest.blends_registers else None
    lanes = forest.lanes
    vf, vi = VectorType(f32, [lanes]), VectorType(i32, [lanes])
    zero = kb.vsplat(kb.constant(0.0, f32), vf)
    registers = [zero] * forest.registers
    for f in range(forest.features):
        vec = f // lanes
        registers[vec] = kb.insert(llvm.InsertElementOp(
            registers[vec], kb.load(x, [row, f]), kb.constant(f % lanes, i32)))
    inner, width, columns = forest.inner, 1 << forest.depth, forest.leaf_columns

    def permute(register, index):
        return kb.insert(llvm.CallIntrinsicOp(_PERMUTE_ONE[lanes], [register, index], [vf]))

    def group(g, sums: list, column: int | None) -> list:
        inside = []
        for k in range(inner):
            at = kb.imul(kb.iadd(kb.imul(g, inner), k), lanes)
            index = kb.vload(tests, [at], vi)
            if len(registers) == 1:
                v = permute(registers[0], index)
            elif lanes == 16:
                v = kb.insert(llvm.CallIntrinsicOp(
                    _PERMUTE_TWO, [registers[0], index, registers[1]], [vf]))
            else:  # vpermps reads an index's low 3 bits: each register, then the right one
                second = _compare(kb, kb.vload(high, [at], vf), zero, "ogt")
                v = kb.insert(VectorSelectOp(second, permute(registers[1], index),
                                             permute(registers[0], index)))
            test = _compare(kb, v, kb.vload(upper, [at], vf), "ole")
            if lower is not None:
                test = kb.insert(arith.AndIOp(
                    test, _compare(kb, kb.vload(lower, [at], vf), v, "ole")))
            if nan_inside is not None:
                tracks = _compare(kb, kb.vload(nan_inside, [at], vf), zero, "ogt")
                nan = _compare(kb, v, v, "uno")
                test = kb.insert(arith.OrIOp(test, kb.insert(arith.AndIOp(nan, tracks))))
            inside.append(test)
        out = []
        for c, total in enumerate(sums):
            col = c if column is None else 0
            values = [kb.vload(leaves, [kb.imul(kb.iadd(kb.imul(
                kb.iadd(kb.imul(g, width), j), columns), col), lanes)], vf)
                for j in range(width)]
            level = values
            while len(level) > 1:  # bottom-up: a node takes a child's value by its test
                first = len(level) - 1  # the level's first node, breadth first
                level = [kb.insert(VectorSelectOp(inside[first // 2 + i], level[2 * i],
                                                  level[2 * i + 1]))
                         for i in range(len(level) // 2)]
            out.append(kb.insert(llvm.VectorReduceFAddOp(total, level[0])))
        return out

    sums = list(initial)
    for column, first, end in forest.parts:
        wanted = list(range(len(sums))) if column is None else [column]
        got = kb.reduce(first, end, [sums[c] for c in wanted],
                        lambda g, *s, column=column: group(g, list(s), column))
        for c, v in zip(wanted, got):
            sums[c] = v
    return sums
