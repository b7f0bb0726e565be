"""Kernels of graph.tree_ensemble_regressor / graph.tree_ensemble_classifier.

The trees are the kernel's constant tables (features, interval bounds, children, leaf
weights: dialects/graph_trees.py's canonical form); the code is generated from their shape
at compile time. A walk is branch-free: a tree of depth d is exactly d steps of `load the
feature, compare with the node's bound(s), load the child`, leaves being their own
children, so there is no mispredicted branch per node, and no per-node mode dispatch (the
importer turned every mode into an interval; the comparisons the forest needs, upper bound
only for LEQ / LT forests, are chosen here). Consecutive trees of one depth are one loop
(their steps unrolled); a block of samples walks each tree together, so the independent
walks overlap in the core; one sample walks TREE_GROUP trees at once for the same reason.
Forests whose leaves are much shallower than their deepest (leaf-wise LightGBM trees, deep
random forests) take the steps every leaf needs, then an scf.while until the walks are on
leaves. The batch is split over the thread pool (parallel_for) by blocks. Sums are in f32
in tree order, as onnxruntime's at one thread.

Measured and not kept: trees padded to complete ones, a child found by index arithmetic
(2i + 1 + side) rather than a load, ran slower at batch 1,000 (500-tree GBM 1.98 against
1.67 ms, XGBoost's 100 trees 1.39 against 0.93 ms, interleaved in one process) and no
faster at batch 1; a branch (scf.if) choosing the child instead of a select was slower
(LightGBM's 200 trees at batch 1,000: 9.9 against 5.1 ms; batch 1: 15.0 against 13.8 µs).

The kernel's code grows with the number of runs of equal depth, not with the number of
nodes (those are table entries): a forest with many depths is cut into at most MAX_RUNS
runs walked to their deepest tree (a leaf reached early stays where it is).

Forests of shallow trees on an AVX-512 or AVX2 target (boosting's depth-3 to 5 trees) take
the vector form instead, sixteen (eight) trees a vector and no walk (tree_ensemble_simd.py):
the 500-tree GBM's batch of 1,000 in 0.44 (AVX2: 0.50) instead of 1.60 (1.23) ms."""

from __future__ import annotations

import hashlib
import itertools
import weakref

import numpy as np
from xdsl.dialects import arith, math, scf
from xdsl.dialects.builtin import BytesAttr, DenseIntOrFPElementsAttr, IndexType, f32, i1, i64
from xdsl.ir import Block, Region
from xdsl.rewriter import InsertPoint

from onnxc.dialects.dense_data import from_numpy
from onnxc.dialects.graph_base import int_of, shape_of
from onnxc.dialects.graph_trees import (
    TreeEnsembleClassifierOp,
    TreeEnsembleFields,
    TreeEnsembleRegressorOp,
    TreeTables,
)
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder
from onnxc.lowering.graph_to_loops.rules import KernelRule
from onnxc.lowering.graph_to_loops.tree_ensemble_simd import SimdForest, simd_forest, simd_sums
from onnxc.target import Target

MAX_RUNS = 16
"""loops of trees per kernel at most (each is a few ops per step of its depth)"""
UNROLL_STEPS = 32
"""the steps of all runs are unrolled while they total at most this; beyond, a run deeper
than SHORT_RUN loops over its steps (compile time: LightGBM's 100 trees of assorted depths
took 35 s unrolled, LLVM's code generation most of it)"""
SHORT_RUN = 4
"""a run of at most this depth has its steps unrolled even beyond UNROLL_STEPS"""
TREE_GROUP = 4
"""trees one sample walks at once"""
EARLY_EXIT = 0.8
"""the fixed-depth walk while the leaves' mean depth is at least this fraction of the
deepest tree's depth (measured: a leaf-wise LightGBM forest walked to depth took 1.2x
onnxruntime's time at batch 1,000)"""
MAX_SEGMENTS = 16
"""columns at most for one segment of trees per column (`segments`)"""
EARLY_EXIT_DEPTH = 6
"""forests no deeper than this walk to their depth whatever their leaves (XGBoost's
3-class forest of depth <= 4 at batch 1,000: 0.87 ms walked to its leaves, 0.63 ms to its
depth, 0.54 ms to its depth a segment per class)"""
BLOCK_ACCUMULATORS = 16
"""samples walked together (_block): as many as keep block x columns accumulators at most
this"""

_INDEX = IndexType()


_FORESTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""op -> (target key, its vector form or None): the op's constants and its kernel both need
it, and building it visits every node of every padded tree (16 ms for 500 trees)"""


def _simd(op: TreeEnsembleFields, t: TreeTables, target: Target) -> SimdForest | None:
    found = _FORESTS.get(op)
    if found is None or found[0] != target.key:
        order, parts = segments(t)
        found = (target.key, simd_forest(t, int(shape_of(op.input)[1]), order, parts, target))
        _FORESTS[op] = found
    return found[1]


def tree_constants(op: TreeEnsembleFields, target: Target) -> list[DenseIntOrFPElementsAttr]:
    """features, lower, upper, children, nan_inside, roots (in walk order: `segments`),
    leaf weights, has_weight; or the vector form's tables (tree_ensemble_simd.py)."""
    t = op.tables()
    forest = _simd(op, t, target)
    if forest is not None:
        return forest.constants()
    order, _ = segments(t)
    return [from_numpy(t.features.astype("int32")), from_numpy(t.lower),
            from_numpy(t.upper), from_numpy(t.children.astype("int32")),
            from_numpy(t.nan_inside.astype("int8")),
            from_numpy(t.roots[order].astype("int32")),
            from_numpy(t.leaf_weights.reshape(-1)),
            from_numpy(t.has_weight.reshape(-1).astype("int8"))]


def tree_kernel_key(op: TreeEnsembleFields, target: Target) -> tuple:
    """A digest of the tables for the properties (the default key prints them: a minute
    for a forest of 400,000 nodes)."""
    digest = hashlib.sha256()
    for name, attr in sorted(op.properties.items()):
        digest.update(name.encode())
        data = getattr(attr, "data", None)
        digest.update(data.data if isinstance(data, BytesAttr) else str(attr).encode())
    return (digest.hexdigest(),)


def runs(depths: list[int], most: int = MAX_RUNS) -> list[tuple[int, int, int]]:
    """(first tree, end, steps): consecutive trees walked in one loop, at most `most`;
    `slack` is how much shallower than its run's deepest a tree may be."""
    for slack in range(max(depths, default=0) + 1):
        found: list[tuple[int, int, int]] = []
        start, low, high = 0, None, None
        for k, d in enumerate(depths):
            if low is not None and max(high, d) - min(low, d) > slack:
                found.append((start, k, high))
                start, low, high = k, None, None
            low = d if low is None else min(low, d)
            high = d if high is None else max(high, d)
        found.append((start, len(depths), high))
        if len(found) <= most:
            return found
    return [(0, len(depths), max(depths))]


class _Walker:
    """The step and accumulation code of one kernel."""

    def __init__(self, op: TreeEnsembleFields, kb: KernelBuilder, ins, t: TreeTables):
        self.kb, self.t = kb, t
        self.x = ins[0]
        (self.features, self.lower, self.upper, self.children, self.nan_inside, self.roots,
         self.weights, self.has) = ins[1:9]
        own = np.arange(t.nodes)
        inner = ~((t.children[0::2] == own) & (t.children[1::2] == own))
        self.test_lower = bool((t.lower[inner] != -float("inf")).any())
        self.test_upper = bool((t.upper[inner] != float("inf")).any())
        self.test_nan = bool(t.nan_inside.any())
        self.columns = t.columns
        self.min_max = t.aggregate in ("MIN", "MAX")
        self.et = op.input.type.get_element_type()
        """the sums' type: the input's (f64 sums for an f64 input, as onnxruntime's)"""

    def as_index(self, v):
        return self.kb.insert(arith.IndexCastOp(v, _INDEX))

    def step(self, node, n: Index):
        kb = self.kb
        feature = self.as_index(kb.load(self.features, [node]))
        v = kb.load(self.x, [n, feature])
        inside = None
        if self.test_upper:
            inside = kb.insert(arith.CmpfOp(v, kb.load(self.upper, [node]), "ole"))
        if self.test_lower:
            low = kb.insert(arith.CmpfOp(kb.load(self.lower, [node]), v, "ole"))
            inside = low if inside is None else kb.insert(arith.AndIOp(inside, low))
        if inside is None:  # no bound anywhere: NaN is the only input that goes outside
            inside = kb.insert(arith.CmpfOp(v, v, "ord"))
        if self.test_nan:
            track = kb.insert(arith.TruncIOp(kb.load(self.nan_inside, [node]), i1))
            nan = kb.insert(arith.CmpfOp(v, v, "uno"))
            inside = kb.insert(arith.OrIOp(inside, kb.insert(arith.AndIOp(nan, track))))
        side = kb.select(inside, kb.idx(0), kb.idx(1))
        at = kb.iadd(kb.imul(node, 2), side)
        return self.as_index(kb.load(self.children, [at]))

    def walk(self, first, end, steps, unroll: bool, rows: list[Index], accs: list,
             until_leaf: bool = False, column: int | None = None) -> list:
        """Trees first..end from their roots: `steps` steps (unrolled or a loop), then,
        `until_leaf`, steps until every walk is on a leaf. One sample walks TREE_GROUP
        trees at once (independent walks the core overlaps), a block one tree at a time;
        weights are added in tree order either way."""
        kb = self.kb
        group = (TREE_GROUP if not until_leaf else 2) if len(rows) == 1 else 1
        # (walks to a leaf: two trees, as every walk of a group goes as deep as its deepest)

        def trees(ks: list, carried: list) -> list:
            lane_rows = [n for _ in ks for n in rows]
            nodes = [self.as_index(kb.load(self.roots, [k])) for k in ks for _ in rows]
            if unroll or until_leaf:
                for _ in range(steps):
                    nodes = [self.step(node, n) for node, n in zip(nodes, lane_rows)]
            else:
                nodes = list(kb.for_(0, steps, lambda _s, *ns: [
                    self.step(node, n) for node, n in zip(ns, lane_rows)], iter_args=nodes))
            if until_leaf:
                nodes = self.to_leaves(nodes, lane_rows)
            for i in range(len(ks)):
                carried = self.accumulate(nodes[i * len(rows):(i + 1) * len(rows)], carried,
                                          column)
            return carried

        full = (end - first) // group
        accs = list(kb.reduce(0, full, accs, lambda g, *c: trees(
            [kb.iadd(kb.imul(g, group), first + i) for i in range(group)], list(c))))
        for k in range(first + full * group, end):
            accs = trees([k], accs)
        return accs

    def to_leaves(self, nodes: list, rows: list[Index]) -> list:
        """scf.while: a step of every walk, again while one of them moved (a leaf is its
        own child: a walk on its leaf stays), at most the deepest tree's depth + 1 times:
        a walk ends whatever the tables (a cycle the verifier does not look for included)."""
        kb = self.kb
        limit = kb.idx(int(self.t.depths.max()) + 1)
        before = Block(arg_types=[_INDEX] * (len(nodes) + 1))
        saved, kb.ip = kb.ip, InsertPoint.at_end(before)
        *current, count = before.args
        moved = kb.insert(arith.CmpiOp(count, limit, "ult"))
        any_moved = None
        following = []
        for node, n in zip(current, rows):
            nxt = self.step(node, n)
            following.append(nxt)
            differs = kb.insert(arith.CmpiOp(nxt, node, "ne"))
            any_moved = differs if any_moved is None else kb.insert(
                arith.OrIOp(any_moved, differs))
        go = kb.insert(arith.AndIOp(moved, any_moved))
        kb.insert(scf.ConditionOp(go, *following, kb.iadd(count, 1)))
        after = Block(arg_types=[_INDEX] * (len(nodes) + 1))
        kb.ip = InsertPoint.at_end(after)
        kb.insert(scf.YieldOp(*after.args))
        kb.ip = saved
        loop = scf.WhileOp([*nodes, kb.idx(0)], [_INDEX] * (len(nodes) + 1), Region(before),
                           Region(after))
        kb.insert(loop)
        return list(loop.results[:-1])

    def initial(self, samples: int) -> list:
        kb = self.kb
        if not self.min_max:
            return [kb.constant(0.0, self.et)] * (samples * self.columns)
        start = float("inf") if self.t.aggregate == "MIN" else -float("inf")
        return ([kb.constant(start, self.et)] * (samples * self.columns)
                + [kb.constant(0, i1)] * (samples * self.columns))

    def accumulate(self, nodes, carried: list, column: int | None = None) -> list:
        """The leaves' weights into the carried sums (MIN / MAX: and their seen flags), to
        every column, or to `column` alone."""
        kb, c = self.kb, self.columns
        sums = carried[:len(nodes) * c]
        seen = carried[len(nodes) * c:]
        for j, node in enumerate(nodes):
            base = kb.imul(node, c)
            for col in range(c) if column is None else (column,):
                w = kb.load(self.weights, [kb.iadd(base, col)])
                i = j * c + col
                if not self.min_max:
                    sums[i] = kb.add(sums[i], w)
                    continue
                has = kb.insert(arith.TruncIOp(kb.load(self.has, [kb.iadd(base, col)]), i1))
                better = kb.insert(arith.CmpfOp(
                    w, sums[i], "olt" if self.t.aggregate == "MIN" else "ogt"))
                unseen = kb.insert(arith.XOrIOp(seen[i], kb.constant(1, i1)))
                take = kb.insert(arith.AndIOp(has, kb.insert(arith.OrIOp(better, unseen))))
                sums[i] = kb.select(take, w, sums[i])
                seen[i] = kb.insert(arith.OrIOp(seen[i], has))
        return sums + seen

    def scores(self, carried: list, j: int) -> list:
        """Sample j's aggregated columns, base values added."""
        kb, c, t = self.kb, self.columns, self.t
        s = carried[j * c:(j + 1) * c]
        if t.aggregate == "AVERAGE":
            trees = kb.constant(float(len(t.roots)), self.et)
            s = [kb.div(v, trees) for v in s]
        elif self.min_max:
            seen = carried[len(carried) // 2 + j * c:len(carried) // 2 + (j + 1) * c]
            zero = kb.constant(0.0, self.et)
            s = [kb.select(h, v, zero) for v, h in zip(s, seen)]
        if len(t.base_values) == c:
            s = [kb.add(v, kb.constant(float(b), self.et)) for v, b in zip(s, t.base_values)]
        elif len(t.base_values) == 1 and c > 1:
            s[0] = kb.add(s[0], kb.constant(float(t.base_values[0]), self.et))
        return s


def _logistic(kb: KernelBuilder, v):
    """onnxruntime's ComputeLogistic: 1 / (1 + exp(-|v|)), mirrored for v < 0."""
    one = kb.constant(1.0, f32)
    e = kb.insert(math.ExpOp(kb.insert(arith.NegfOp(kb.insert(math.AbsFOp(v))))))
    p = kb.div(one, kb.add(one, e))
    negative = kb.insert(arith.CmpfOp(v, kb.constant(0.0, f32), "olt"))
    return kb.select(negative, kb.sub(one, p), p)


def _probit(kb: KernelBuilder, v):
    """onnxruntime's ComputeProbit: sqrt(2) * ErfInv(2v - 1), Winitzki's approximation."""
    c = lambda value: kb.constant(value, f32)
    x = kb.sub(kb.mul(v, c(2.0)), c(1.0))
    sign = kb.select(kb.insert(arith.CmpfOp(x, c(0.0), "olt")), c(-1.0), c(1.0))
    lg = kb.insert(math.LogOp(kb.mul(kb.sub(c(1.0), x), kb.add(c(1.0), x))))
    a = kb.add(c(2 / (3.14159 * 0.147)), kb.mul(c(0.5), lg))
    b = kb.mul(c(1 / 0.147), lg)
    inner = kb.sub(kb.insert(math.SqrtOp(kb.sub(kb.mul(a, a), b))), a)
    r = kb.mul(sign, kb.insert(math.SqrtOp(inner)))
    return kb.mul(c(1.41421356), r)


def _post(kb: KernelBuilder, kind: str, s: list) -> list:
    """onnxruntime's write_scores over two or more columns."""
    if kind == "LOGISTIC":
        return [_logistic(kb, v) for v in s]
    if kind == "PROBIT":
        return [_probit(kb, v) for v in s]
    if kind not in ("SOFTMAX", "SOFTMAX_ZERO"):
        return s
    top = kb.constant(-3.4028234663852886e38, f32)
    for v in s:
        top = kb.select(kb.insert(arith.CmpfOp(v, top, "ogt")), v, top)
    e = [kb.insert(math.ExpOp(kb.sub(v, top))) for v in s]
    total = kb.constant(0.0, f32)
    if kind == "SOFTMAX_ZERO":
        scale = kb.insert(math.ExpOp(kb.insert(arith.NegfOp(top))))
        eps = kb.constant(1e-7, f32)
        kept = []
        for v, ev in zip(s, e):
            big = kb.insert(arith.OrIOp(kb.insert(arith.CmpfOp(v, eps, "ogt")), kb.insert(
                arith.CmpfOp(v, kb.insert(arith.NegfOp(eps)), "olt"))))
            ev = kb.select(big, ev, kb.mul(v, scale))
            total = kb.add(total, kb.select(big, ev, kb.constant(0.0, f32)))
            kept.append(ev)
        e = kept
    else:
        for ev in e:
            total = kb.add(total, ev)
    return [kb.div(ev, total) for ev in e]


def _leaf_levels(t: TreeTables) -> list[tuple[list[int], list[int]]]:
    """Per tree, its leaves and their depths (breadth first from its root)."""
    found = []
    for root in t.roots.tolist():
        frontier, level, leaves, levels = [root], 0, [], []
        while frontier:
            inner = []
            for k in frontier:
                if t.children[2 * k] == k and t.children[2 * k + 1] == k:
                    leaves.append(k)
                    levels.append(level)
                else:
                    inner += [int(t.children[2 * k]), int(t.children[2 * k + 1])]
            frontier, level = inner, level + 1
        found.append((leaves, levels))
    return found


def _early_exit(t: TreeTables) -> int | None:
    """When the leaves' mean depth is well below the trees' depths (leaf-wise LightGBM
    trees, deep random forests), walking every tree to its depth wastes most steps: then
    the walk takes the steps every leaf needs (the shallowest leaf's depth) branch-free and
    goes on until the block's samples are on leaves. None: the fixed-depth walk."""
    deepest = max(t.depths.tolist(), default=0)
    if deepest <= EARLY_EXIT_DEPTH:
        return None
    levels = [lv for _, lv in _leaf_levels(t)]
    every = [d for lv in levels for d in lv]
    if not every or sum(every) / len(every) >= EARLY_EXIT * deepest:
        return None
    return min(min(lv, default=0) for lv in levels) if levels else 0


def segments(t: TreeTables) -> tuple[np.ndarray, list[tuple[int | None, int, int]]]:
    """The walk's order of the trees and its segments (column, first, end). Where every
    tree gives weights to one column only (boosting's tree per class per round), the
    trees are ordered by that column (stably: each column's sum keeps tree order) and a
    segment adds to its column alone, not to every column; else one segment, every column
    (None)."""
    everything = (np.arange(len(t.roots)), [(None, 0, len(t.roots))])
    if not 1 < t.columns <= MAX_SEGMENTS:
        return everything
    columns = []
    for leaves, _ in _leaf_levels(t):
        given = np.flatnonzero(t.has_weight[leaves].any(axis=0)) if leaves else []
        if len(given) > 1:
            return everything
        columns.append(int(given[0]) if len(given) else 0)
    order = np.argsort(np.asarray(columns), kind="stable")
    ordered = np.asarray(columns)[order]
    cuts = [0, *(np.flatnonzero(np.diff(ordered)) + 1).tolist(), len(order)]
    return order, [(int(ordered[a]), a, b) for a, b in itertools.pairwise(cuts)]


def _block(t: TreeTables, early_exit: bool) -> int:
    """Samples walked together: 8 (4 when walks go on to their leaves, where a block waits
    for its deepest walk), fewer when the columns' accumulators would not fit. Measured at
    batch 1,000 (one process, interleaved): the 500-tree GBM 2.1 / 1.6 / 3.5 ms with blocks
    of 4 / 8 / 16, XGBoost's 100 trees 1.2 / 1.0 / 1.3 ms; LightGBM's 200 leaf-wise trees
    7.4 / 8.5 / 5.2 / 8.1 ms with 1 / 2 / 4 / 8."""
    return max(1, min(4 if early_exit else 8, BLOCK_ACCUMULATORS // max(t.columns, 1)))


def _ensemble_kernel(op: TreeEnsembleFields, kb: KernelBuilder, ins, finish) -> None:
    t = op.tables()
    n = shape_of(op.input)[0]
    forest = _simd(op, t, kb.target)
    if forest is not None:
        walker = _Walker(op, kb, [ins[0], *[None] * 8], t)

        def sample(row: Index) -> None:
            sums = simd_sums(kb, forest, ins[0], list(ins[1:]), row, walker.initial(1))
            finish(walker.scores(sums, 0), row)

        kb.parallel_for(0, kb.dim(n), sample)
        return
    walker = _Walker(op, kb, ins, t)
    order, parts = segments(t)
    depths = t.depths[order].tolist()
    most = max(2, MAX_RUNS // len(parts))
    plan = [(column, first + a, first + b, steps) for column, first, end in parts
            for a, b, steps in runs(depths[first:end], most)]
    shallow = _early_exit(t)
    shallow = None if shallow is None else min(shallow, UNROLL_STEPS // 4)
    block = _block(t, shallow is not None)
    unroll_all = sum(steps for *_, steps in plan) <= UNROLL_STEPS

    def samples(first: Index, count: int) -> None:
        rows = [kb.iadd(first, j) for j in range(count)]
        accs = walker.initial(count)
        if shallow is not None:  # unbalanced trees: a few steps every tree needs, then on
            for column, start, end in parts:
                accs = walker.walk(start, end, shallow, True, rows, accs, until_leaf=True,
                                   column=column)
            return finish_all(accs, rows)
        for column, start, end, steps in plan:
            accs = walker.walk(start, end, steps, unroll_all or steps <= SHORT_RUN, rows, accs,
                               column=column)
        finish_all(accs, rows)

    def finish_all(accs, rows) -> None:
        for j, row in enumerate(rows):
            finish(walker.scores(accs, j), row)

    blocks = kb.idiv(kb.dim(n), block) if block > 1 else kb.dim(n)
    kb.parallel_for(0, blocks, lambda b: samples(kb.imul(b, block), block))
    if block > 1:
        done = kb.imul(blocks, block)
        kb.for_(done, kb.dim(n), lambda i: samples(i, 1))


def regressor_kernel(op: TreeEnsembleRegressorOp, kb: KernelBuilder, ins, outs) -> None:
    post = op.post_transform.data
    out = outs[0]
    out_type = op.output.type.get_element_type()

    def finish(s: list, row: Index) -> None:
        if len(s) == 1:
            s = [_probit(kb, s[0])] if post == "PROBIT" else s
        else:
            s = _post(kb, post, s)
        for col, v in enumerate(s):
            if v.type != out_type:  # f64 sums of an f64 input, an f32 result
                v = kb.insert(arith.TruncFOp(v, out_type))
            kb.store(v, out, [row, col])

    _ensemble_kernel(op, kb, ins, finish)


def classifier_kernel(op: TreeEnsembleClassifierOp, kb: KernelBuilder, ins, outs) -> None:
    post = op.post_transform.data
    labels = [int(v) for v in op.class_labels.get_values()]
    binary = int_of(op.binary)
    label_out, score_out = outs

    def label_of(positive) -> object:
        return kb.select(positive, kb.constant(labels[1], i64), kb.constant(labels[0], i64))

    def finish(s: list, row: Index) -> None:
        zero = kb.constant(0.0, f32)
        if binary:
            v = s[0]
            if binary == 1:
                label = label_of(kb.insert(arith.CmpfOp(v, kb.constant(0.5, f32), "ogt")))
                scores = [kb.sub(kb.constant(1.0, f32), v), v]
            else:
                label = label_of(kb.insert(arith.CmpfOp(v, zero, "ogt")))
                if post == "LOGISTIC":
                    scores = [_logistic(kb, kb.insert(arith.NegfOp(v))), _logistic(kb, v)]
                else:
                    scores = [kb.insert(arith.NegfOp(v)), v]
        else:
            if len(labels) == 2:
                label = label_of(kb.insert(arith.CmpfOp(s[1], zero, "ogt")))
            else:
                best, label = s[0], kb.constant(labels[0], i64)
                for v, lab in zip(s[1:], labels[1:]):
                    better = kb.insert(arith.CmpfOp(v, best, "ogt"))
                    best = kb.select(better, v, best)
                    label = kb.select(better, kb.constant(lab, i64), label)
            scores = _post(kb, post, s)
        kb.store(label, label_out, [row])
        for col, v in enumerate(scores):
            kb.store(v, score_out, [row, col])

    _ensemble_kernel(op, kb, ins, finish)


RULES = (
    KernelRule(TreeEnsembleRegressorOp, regressor_kernel, constants=tree_constants,
               key=tree_kernel_key, symbolic=True),
    KernelRule(TreeEnsembleClassifierOp, classifier_kernel, constants=tree_constants,
               key=tree_kernel_key, symbolic=True),
)
"""symbolic: the batch is a run-time size (only the walk's loops depend on the trees)."""

