"""Kernels of ops working along one axis: ArgMax/ArgMin, TopK, CumSum/CumProd, Trilu, OneHot,
the lexicographic order of slices (and Range with run-time bounds).

Each views its operand as [outer, n, inner] around the axis (n = the axis' extent), so a
kernel is one loop over `outer` (parallel), one over `inner` and the axis walk; when the axis
is the last one `inner` is 1 and the walk is contiguous.
"""

from __future__ import annotations

import math as pymath
from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerType, Signedness, i64
from xdsl.ir import SSAValue

from onnxc.dialects import graph
from onnxc.dialects.graph import int_of, shape_of
from onnxc.dialects.layout import layout_of
from onnxc.errors import LoweringError
from onnxc.lowering.graph_to_loops.data_movement import sizes
from onnxc.lowering.graph_to_loops.element_types import is_bool, is_float
from onnxc.lowering.graph_to_loops.elementwise import MIN_PARALLEL_ELEMENTS
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder
from onnxc.lowering.graph_to_loops.rules import KernelRule, rules


def split_at_axis(shape: Sequence[Index], axis: int,
                  product=pymath.prod) -> tuple[Index, Index, Index]:
    """(outer, n, inner) extents of `shape` around `axis` (`product`: KernelBuilder.product
    when some are run-time sizes)."""
    return product(shape[:axis]), shape[axis], product(shape[axis + 1:])


def compare(kb: KernelBuilder, a: SSAValue, b: SSAValue, relation: str) -> SSAValue:
    """a <relation> b for relation in gt, ge, lt, le (ordered for floats, unsigned for bool
    and unsigned integers)."""
    if is_float(a.type):
        return kb.insert(arith.CmpfOp(a, b, "o" + relation))
    unsigned = is_bool(a.type) or a.type.signedness.data == Signedness.UNSIGNED
    return kb.insert(arith.CmpiOp(a, b, ("u" if unsigned else "s") + relation))


def rows_loop(kb: KernelBuilder, outer: Index, body, work: Index) -> None:
    """The loop over `outer` independent rows: parallel when the kernel touches enough
    elements (`work`) to pay for waking threads, as elementwise kernels decide (always when
    that is a run-time size)."""
    if isinstance(work, int) and work < MIN_PARALLEL_ELEMENTS:
        kb.for_(0, outer, body)
    else:
        kb.parallel_for(0, outer, body)


def require_plain(op) -> None:
    """These kernels index logical shapes: a laid-out (#layout.spec) operand is refused."""
    for value in (*op.operands, *op.results):
        if layout_of(value.type) is not None:
            raise LoweringError(f"{op.name}: laid-out operands are not supported")


def as_i64(kb: KernelBuilder, i: Index) -> SSAValue:
    if isinstance(i, int):
        return kb.constant(i, i64)
    return kb.insert(arith.IndexCastOp(i, i64))


# --------------------------------------------------------------------------- argmax / argmin


def arg_kernel(op: graph.ArgReduceOp, kb: KernelBuilder, ins, outs):
    require_plain(op)
    outer, n, inner = split_at_axis(sizes(kb, op.input, ins[0]), int_of(op.axis), kb.product)
    if isinstance(n, int) and n == 0:  # a symbolic one is at least 1 (the importer's guard)
        raise LoweringError(f"{op.name}: the reduced axis is empty")
    x = kb.view(ins[0], [outer, n, inner])
    y = kb.view(outs[0], [outer, inner])
    relation = "g" if isinstance(op, graph.ArgMaxOp) else "l"
    relation += "e" if int_of(op.select_last_index) else "t"
    element = ins[0].type.get_element_type()
    signed = isinstance(element, IntegerType) and element.width.data > 1 and (
        element.signedness.data == Signedness.SIGNLESS)
    if isinstance(inner, int) and inner == 1 and (is_float(element) or signed):
        rows_loop(kb, outer, lambda o: _arg_of_row(op, kb, x, y, o, n), kb.product([outer, n]))
        return

    def row(o: Index) -> None:
        def column(i: Index) -> None:
            def step(j: Index, best: SSAValue, arg: SSAValue):
                v = kb.load(x, [o, j, i])
                take = compare(kb, v, best, relation)
                return [kb.select(take, v, best), kb.select(take, as_i64(kb, j), arg)]

            _, arg = kb.reduce(1, n, [kb.load(x, [o, 0, i]), kb.constant(0, i64)], step)
            kb.store(arg, y, [o, i])

        kb.for_(0, inner, column)

    rows_loop(kb, outer, row, kb.product([outer, n, inner]))


def _arg_of_row(op: graph.ArgReduceOp, kb: KernelBuilder, x: SSAValue, y: SSAValue, o: Index,
                n: Index) -> None:
    """A contiguous row in two vectorizable passes: its max (min), then the first (last)
    index holding it; a NaN row gives its first (last) NaN, as numpy does."""
    largest = isinstance(op, graph.ArgMaxOp)
    last = int_of(op.select_last_index) != 0
    pick = kb.max if largest else kb.min
    (extreme,) = kb.reduce(1, n, [kb.load(x, [o, 0, 0])],
                           lambda j, acc: [pick(acc, kb.load(x, [o, j, 0]))])
    none = kb.constant(-1, i64) if last else as_i64(kb, n)

    def find(j: Index, acc: SSAValue):
        v = kb.load(x, [o, j, 0])
        if is_float(v.type):
            equal = kb.insert(arith.CmpfOp(v, extreme, "oeq"))
            hit = kb.insert(arith.OrIOp(equal, kb.insert(arith.CmpfOp(v, v, "uno"))))
        else:
            hit = kb.insert(arith.CmpiOp(v, extreme, "eq"))
        candidate = kb.select(hit, as_i64(kb, j), none)
        better = arith.MaxSIOp if last else arith.MinSIOp
        return [kb.insert(better(acc, candidate))]

    (arg,) = kb.reduce(0, n, [none], find)
    kb.store(arg, y, [o, 0])


# --------------------------------------------------------------------------- topk


def top_k_kernel(op: graph.TopKOp, kb: KernelBuilder, ins, outs):
    """Insertion sort into the output slice itself, skipping values that lose to the current
    k-th: O(n) compares plus O(k) per insertion, fine for the small k of classification
    heads and detection post-processing (no scratch, so any k fits)."""
    require_plain(op)
    outer, n, inner = split_at_axis(sizes(kb, op.input, ins[0]), int_of(op.axis), kb.product)
    if 0 in (op.count(), *shape_of(op.input)):
        return
    k = kb.index(op.count())  # run-time where symbolic (min(1000, boxes) in detectors)
    x = kb.view(ins[0], [outer, n, inner])
    values = kb.view(outs[0], [outer, k, inner])
    indices = kb.view(outs[1], [outer, k, inner])
    keeps_before = "ge" if int_of(op.largest) else "le"  # an earlier equal value stays first
    beats = "gt" if int_of(op.largest) else "lt"

    def row(o: Index) -> None:
        def column(i: Index) -> None:
            def visit(j: Index) -> None:
                # a loop of 0 or 1 trips is the branch; the k-th slot is read before it is
                # written only when j < k, where its (garbage) value does not matter
                v = kb.load(x, [o, j, i])
                not_full = kb.insert(arith.CmpiOp(kb.idx(j), kb.idx(k), "slt"))
                wins = compare(kb, v, kb.load(values, [o, kb.isub(k, 1), i]), beats)
                enter = kb.insert(arith.OrIOp(not_full, wins))
                kb.for_(0, kb.select(enter, kb.idx(1), kb.idx(0)), lambda _: insert(j, v))

            def insert(j: Index, v: SSAValue) -> None:
                # entered, the position is < k: below j entries when filling, and before
                # the k-th (which v beats) when full; entries from there move down one slot
                filled = kb.idx(kb.imin(j, k))
                one, zero = kb.idx(1), kb.idx(0)
                (position,) = kb.reduce(0, filled, [zero], lambda t, p: [
                    kb.select(compare(kb, kb.load(values, [o, t, i]), v, keeps_before),
                              kb.insert(arith.AddiOp(p, one)), p)
                ])
                top = kb.idx(kb.imin(j, kb.isub(k, 1)))

                def shift(s: Index) -> None:
                    t = kb.isub(top, s)
                    before = kb.isub(t, 1)
                    kb.store(kb.load(values, [o, before, i]), values, [o, t, i])
                    kb.store(kb.load(indices, [o, before, i]), indices, [o, t, i])

                kb.for_(0, kb.isub(top, position), shift)
                kb.store(v, values, [o, position, i])
                kb.store(as_i64(kb, j), indices, [o, position, i])

            kb.for_(0, scanned, visit)

        kb.for_(0, inner, column)

    scanned = kb.imul(n, kb.imin(k, 1))  # none when a run-time k is 0 (no k-th slot)

    rows_loop(kb, outer, row, kb.product([outer, n, inner]))


# --------------------------------------------------------------------------- cumsum / cumprod


def cumulative_kernel(op: graph.CumulativeOp, kb: KernelBuilder, ins, outs):
    require_plain(op)
    outer, n, inner = split_at_axis(sizes(kb, op.input, ins[0]), int_of(op.axis), kb.product)
    element = outs[0].type.get_element_type()
    if is_bool(element):
        raise LoweringError(f"{op.name}: boolean tensors are not supported")
    product = isinstance(op, graph.CumProdOp)
    combine = kb.mul if product else kb.add
    exclusive, reverse = int_of(op.exclusive) != 0, int_of(op.reverse) != 0
    x = kb.view(ins[0], [outer, n, inner])
    y = kb.view(outs[0], [outer, n, inner])
    identity = kb.constant(1 if product else 0, element)
    last = kb.isub(n, 1)

    def row(o: Index) -> None:
        def column(i: Index) -> None:
            def step(j: Index, acc: SSAValue):
                at = kb.isub(last, j) if reverse else j
                total = combine(acc, kb.load(x, [o, at, i]))
                kb.store(acc if exclusive else total, y, [o, at, i])
                return [total]

            kb.reduce(0, n, [identity], step)

        kb.for_(0, inner, column)

    def rows(o: Index) -> None:
        # inner > 1: walk the axis outside a contiguous loop over `inner`, each position
        # combining the previous position's (finished) output row with an input row
        first = last if reverse else 0
        kb.for_(0, inner, lambda i: kb.store(
            identity if exclusive else kb.load(x, [o, first, i]), y, [o, first, i]))

        def position(j: Index) -> None:
            at = kb.isub(last, j) if reverse else j
            prev = kb.iadd(at, 1) if reverse else kb.isub(at, 1)
            source = prev if exclusive else at

            def step(i: Index) -> None:
                total = combine(kb.load(y, [o, prev, i]), kb.load(x, [o, source, i]))
                kb.store(total, y, [o, at, i])

            kb.for_(0, inner, step)

        kb.for_(1, n, position)

    if not (isinstance(n, int) and n == 0):
        many = not isinstance(inner, int) or inner > 1
        rows_loop(kb, outer, rows if many else row, kb.product([outer, n, inner]))


# --------------------------------------------------------------------------- trilu


def trilu_kernel(op: graph.TriluOp, kb: KernelBuilder, ins, outs):
    require_plain(op)
    shape = sizes(kb, op.input, ins[0])
    rows, cols = shape[-2], shape[-1]
    batch = kb.product(shape[:-2])
    x = kb.view(ins[0], [batch, rows, cols])
    y = kb.view(outs[0], [batch, rows, cols])
    zero = kb.constant(0, outs[0].type.get_element_type())
    k, upper = int_of(op.k), int_of(op.upper) != 0

    def row(b: Index) -> None:
        def line(r: Index) -> None:
            # upper keeps c >= r + k; lower keeps c <= r + k, i.e. c < r + k + 1
            edge = kb.imax(kb.imin(kb.iadd(r, k if upper else k + 1), cols), 0)
            def fill(c: Index) -> None:
                kb.store(zero, y, [b, r, c])

            def copy(c: Index) -> None:
                kb.store(kb.load(x, [b, r, c]), y, [b, r, c])

            kb.for_(0, edge, fill if upper else copy)
            kb.for_(edge, cols, copy if upper else fill)

        kb.for_(0, rows, line)

    rows_loop(kb, batch, row, kb.product([batch, rows, cols]))


# --------------------------------------------------------------------------- onehot


def _index_as_i64(kb: KernelBuilder, v: SSAValue) -> SSAValue:
    t = v.type
    if is_float(t):
        return kb.insert(arith.FPToSIOp(v, i64))
    assert isinstance(t, IntegerType)
    if t.width.data == 64:
        return v
    return kb.insert(arith.ExtSIOp(v, i64))


def one_hot_kernel(op: graph.OneHotOp, kb: KernelBuilder, ins, outs):
    """One row per outer index; the depth and the sizes may be run-time values."""
    require_plain(op)
    ind_shape = sizes(kb, op.indices, ins[0])
    axis = int_of(op.axis)
    depth = kb.index(op.size())
    outer = kb.product(ind_shape[:axis])
    inner = kb.product(ind_shape[axis:])
    indices = kb.view(ins[0], [outer, inner])
    y = kb.view(outs[0], [outer, depth, inner])
    off, on = kb.load(ins[1], [0]), kb.load(ins[1], [1])
    depth64, zero64 = as_i64(kb, depth), kb.constant(0, i64)

    def row(o: Index) -> None:
        def column(i: Index) -> None:
            raw = _index_as_i64(kb, kb.load(indices, [o, i]))
            negative = kb.insert(arith.CmpiOp(raw, zero64, "slt"))
            index = kb.select(negative, kb.insert(arith.AddiOp(raw, depth64)), raw)

            def position(d: Index) -> None:
                hit = kb.insert(arith.CmpiOp(index, as_i64(kb, d), "eq"))
                kb.store(kb.select(hit, on, off), y, [o, d, i])

            kb.for_(0, depth, position)

        kb.for_(0, inner, column)

    rows_loop(kb, outer, row, kb.product([outer, depth, inner]))


# --------------------------------------------------------------------------- lex order


def lex_order_kernel(op: graph.LexOrderOp, kb: KernelBuilder, ins, outs):
    """Slice i's rank is the number of slices before it (smaller, or equal and earlier),
    found by comparing it with each other slice element by element (the first difference
    decides); result[rank] = i. O(n^2) slice compares and no scratch: Unique along an axis
    sees few slices. The order is total (NaN after numbers, ties by index), so the ranks are
    a permutation and every result slot is written once."""
    require_plain(op)
    outer, n, inner = split_at_axis(sizes(kb, op.input, ins[0]), int_of(op.axis), kb.product)
    x = kb.view(ins[0], [outer, n, inner])
    false = kb.constant(0, IntegerType(1))

    def less(a: SSAValue, b: SSAValue) -> SSAValue:
        below = compare(kb, a, b, "lt")
        if not is_float(a.type):
            return below
        nan_a = kb.insert(arith.CmpfOp(a, a, "uno"))
        nan_b = kb.insert(arith.CmpfOp(b, b, "uno"))
        only_b = kb.insert(arith.AndIOp(nan_b, kb.insert(arith.XOrIOp(
            nan_a, kb.constant(1, IntegerType(1))))))
        return kb.insert(arith.OrIOp(below, only_b))

    def slice_rank(i: Index) -> None:
        def other(j: Index, rank: SSAValue) -> list[SSAValue]:
            def element(o: Index, ii: Index, decided: SSAValue, smaller: SSAValue):
                a, b = kb.load(x, [o, j, ii]), kb.load(x, [o, i, ii])
                a_less, b_less = less(a, b), less(b, a)
                differ = kb.insert(arith.OrIOp(a_less, b_less))
                first = kb.insert(arith.AndIOp(differ, kb.insert(arith.XOrIOp(
                    decided, kb.constant(1, IntegerType(1))))))
                return [kb.insert(arith.OrIOp(decided, differ)),
                        kb.select(first, a_less, smaller)]

            decided, smaller = kb.reduce(0, outer, [false, false], lambda o, d, s: kb.reduce(
                0, inner, [d, s], lambda ii, d2, s2: element(o, ii, d2, s2)))
            earlier = kb.insert(arith.CmpiOp(kb.idx(j), kb.idx(i), "slt"))
            tie = kb.insert(arith.AndIOp(earlier, kb.insert(arith.XOrIOp(
                decided, kb.constant(1, IntegerType(1))))))
            before = kb.insert(arith.OrIOp(smaller, tie))
            return [kb.add(rank, kb.insert(arith.ExtUIOp(before, i64)))]

        (rank,) = kb.reduce(0, n, [kb.constant(0, i64)], other)
        kb.store(as_i64(kb, i), outs[0], [kb.insert(arith.IndexCastOp(rank, IndexType()))])

    rows_loop(kb, n, slice_rank, kb.product([n, n, outer, inner]))


# --------------------------------------------------------------------------- range


def range_kernel(op: graph.RangeOp, kb: KernelBuilder, ins, outs):
    require_plain(op)
    (n,) = sizes(kb, op.output, outs[0])
    element = outs[0].type.get_element_type()
    start, delta = kb.load(ins[0], []), kb.load(ins[1], [])

    def at(i: Index) -> None:
        if is_float(element):
            step = kb.to_float(i, element)
        else:
            step = kb.constant(i, element) if isinstance(i, int) else kb.insert(
                arith.IndexCastOp(i, element))
        kb.store(kb.muladd(step, delta, start), outs[0], [i])

    kb.for_(0, n, at)


RULES = (
    *rules((graph.ArgMaxOp, graph.ArgMinOp), arg_kernel, symbolic=True),
    KernelRule(graph.TopKOp, top_k_kernel, symbolic=True),
    *rules((graph.CumSumOp, graph.CumProdOp), cumulative_kernel, symbolic=True),
    KernelRule(graph.TriluOp, trilu_kernel, symbolic=True),
    KernelRule(graph.OneHotOp, one_hot_kernel, symbolic=True),
    KernelRule(graph.LexOrderOp, lex_order_kernel, symbolic=True),
    KernelRule(graph.RangeOp, range_kernel, symbolic=True),
)
"""symbolic: the kernels read their sizes from the KernelBuilder (symbolic dims welcome)."""
