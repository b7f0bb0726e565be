"""Kernels of graph.det and graph.inverse: per matrix, an LU factorization with partial
pivoting in a float64 scratch copy (Gauss-Jordan on [A | I] for the inverse), the result
rounded once to the element type.

Branch-free: the pivot row is found by a reduction (the largest |a[i, k]|, the first on
ties) and swapped in with loads and stores, so the loop structure is the same for every
matrix. A zero pivot makes the determinant 0 (the elimination multipliers are selected to
0 so no NaN is formed); the inverse divides by it and gives inf or NaN entries, as
onnxruntime's (Eigen's) does for a singular matrix.
"""

from __future__ import annotations

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import MemRefType, f64
from xdsl.ir import SSAValue

from onnxc.dialects import graph
from onnxc.dialects.graph_base import shape_of
from onnxc.lowering.graph_to_loops.data_movement import sizes
from onnxc.lowering.graph_to_loops.index import require_plain
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder
from onnxc.lowering.graph_to_loops.rules import KernelRule
from onnxc.target import Target


def _order(op: graph.DetOp | graph.InverseOp) -> int:
    return int(shape_of(op.input)[-1])


def linalg_scratch(op: graph.DetOp | graph.InverseOp, target: Target) -> list[MemRefType]:
    """One n x n (det) or n x 2n (inverse: [A | I]) float64 working matrix, reused."""
    n = _order(op)
    return [MemRefType(f64, [n, 2 * n if isinstance(op, graph.InverseOp) else n])]


def _widen(kb: KernelBuilder, v: SSAValue) -> SSAValue:
    return v if v.type == f64 else kb.insert(arith.ExtFOp(v, f64))


def _narrow(kb: KernelBuilder, v: SSAValue, element) -> SSAValue:
    return v if element == f64 else kb.insert(arith.TruncFOp(v, element))


def _pivot(kb: KernelBuilder, a: SSAValue, k: Index, n: int) -> SSAValue:
    """The row in [k, n) with the largest |a[row, k]| (the first of equals), as an index."""
    def step(i: Index, best_abs: SSAValue, best: SSAValue) -> list[SSAValue]:
        value = kb.insert(math.AbsFOp(kb.load(a, [i, k])))
        larger = kb.insert(arith.CmpfOp(value, best_abs, "ogt"))
        return [kb.select(larger, value, best_abs), kb.select(larger, kb.idx(i), best)]

    first = kb.insert(math.AbsFOp(kb.load(a, [k, k])))
    return kb.reduce(kb.iadd(k, 1), n, [first, kb.idx(k)], step)[1]


def _swap_rows(kb: KernelBuilder, a: SSAValue, k: Index, p: SSAValue, width: int) -> None:
    def column(j: Index) -> None:
        top, other = kb.load(a, [k, j]), kb.load(a, [p, j])
        kb.store(other, a, [k, j])
        kb.store(top, a, [p, j])

    kb.for_(0, width, column)


def _load_matrix(kb: KernelBuilder, x: SSAValue, m: Index, a: SSAValue, n: int,
                 identity: bool) -> None:
    """a[:, :n] = x[m] in float64, and a[:, n:] = I when `identity`."""
    zero, one = kb.constant(0.0, f64), kb.constant(1.0, f64)

    def row(i: Index) -> None:
        kb.for_(0, n, lambda j: kb.store(_widen(kb, kb.load(x, [m, i, j])), a, [i, j]))
        if identity:
            kb.for_(0, n, lambda j: kb.store(
                kb.select(kb.insert(arith.CmpiOp(kb.idx(i), kb.idx(j), "eq")), one, zero),
                a, [i, kb.iadd(j, n)]))

    kb.for_(0, n, row)


def _matrices(op: graph.DetOp | graph.InverseOp, kb: KernelBuilder, ins, outs):
    """n; the number of matrices; the input as [count, n, n]; the float64 scratch; the
    result's element type."""
    require_plain(op)
    n = _order(op)
    count = kb.product(sizes(kb, op.input, ins[0])[:-2])
    return n, count, kb.view(ins[0], [count, n, n]), ins[1], outs[0].type.get_element_type()


def det_kernel(op: graph.DetOp, kb: KernelBuilder, ins, outs) -> None:
    """det = sign * prod(pivots) of the LU factorization, per matrix."""
    n, count, x, a, element = _matrices(op, kb, ins, outs)
    y = kb.view(outs[0], [count])
    zero, one = kb.constant(0.0, f64), kb.constant(1.0, f64)

    def matrix(m: Index) -> None:
        _load_matrix(kb, x, m, a, n, identity=False)

        def column(k: Index, det: SSAValue) -> list[SSAValue]:
            p = _pivot(kb, a, k, n)
            _swap_rows(kb, a, k, p, n)
            moved = kb.insert(arith.CmpiOp(p, kb.idx(k), "ne"))
            pivot = kb.load(a, [k, k])
            det = kb.mul(det, kb.select(moved, kb.insert(arith.NegfOp(pivot)), pivot))
            singular = kb.insert(arith.CmpfOp(pivot, zero, "oeq"))
            safe = kb.select(singular, one, pivot)

            def eliminate(i: Index) -> None:
                factor = kb.select(singular, zero, kb.div(kb.load(a, [i, k]), safe))
                kb.for_(kb.iadd(k, 1), n, lambda j: kb.store(
                    kb.sub(kb.load(a, [i, j]), kb.mul(factor, kb.load(a, [k, j]))), a, [i, j]))

            kb.for_(kb.iadd(k, 1), n, eliminate)
            return [det]

        det = kb.reduce(0, n, [one], column)[0]
        kb.store(_narrow(kb, det, element), y, [m])

    kb.for_(0, count, matrix)


def inverse_kernel(op: graph.InverseOp, kb: KernelBuilder, ins, outs) -> None:
    """Gauss-Jordan elimination of [A | I] with partial pivoting, per matrix."""
    n, count, x, a, element = _matrices(op, kb, ins, outs)
    y = kb.view(outs[0], [count, n, n])

    def matrix(m: Index) -> None:
        _load_matrix(kb, x, m, a, n, identity=True)

        def column(k: Index) -> None:
            p = _pivot(kb, a, k, n)
            _swap_rows(kb, a, k, p, 2 * n)
            pivot = kb.load(a, [k, k])
            kb.for_(0, 2 * n, lambda j: kb.store(kb.div(kb.load(a, [k, j]), pivot), a, [k, j]))

            def eliminate(i: Index) -> None:
                factor = kb.load(a, [i, k])
                others = kb.insert(arith.CmpiOp(kb.idx(i), kb.idx(k), "ne"))

                def update(j: Index) -> None:
                    updated = kb.sub(kb.load(a, [i, j]), kb.mul(factor, kb.load(a, [k, j])))
                    kb.store(kb.select(others, updated, kb.load(a, [i, j])), a, [i, j])

                kb.for_(0, 2 * n, update)

            kb.for_(0, n, eliminate)

        kb.for_(0, n, column)
        kb.nest([n, n], lambda ij: kb.store(
            _narrow(kb, kb.load(a, [ij[0], kb.iadd(ij[1], n)]), element), y, [m, *ij]))

    kb.for_(0, count, matrix)


RULES = (
    KernelRule(graph.DetOp, det_kernel, scratch=linalg_scratch, symbolic=True),
    KernelRule(graph.InverseOp, inverse_kernel, scratch=linalg_scratch, symbolic=True),
)
"""symbolic: the leading (batch) dimensions may be symbolic; n is static."""
