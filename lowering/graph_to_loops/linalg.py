"""Kernels of MatMul (numpy semantics) and Gemm.

2-D f32 products run on the packed micro-kernel (gemm_microkernel.py); the loops below are
the general path (batched MatMul, other element types, few rows with a non-constant B).

Both run in i-k-j order: a result row is initialised, then for each k one scalar of A
scales a contiguous row of B into it, so the innermost loop streams B and the row of Y
and vectorises without a reduction. Gemm with transB (the usual layout of ONNX fully
connected layers) would make that row access strided; it runs i-j-k instead, a dot
product of two contiguous rows carried in `iter_args`.
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.arith import FastMathFlagsAttr
from xdsl.dialects.utils.fast_math import FastMathFlag

from onnxc.dialects import graph
from onnxc.dialects.graph import float_of, int_of, shape_of
from onnxc.lowering.graph_to_loops.epilogue import activate, activate_in_place
from onnxc.lowering.graph_to_loops.gemm_microkernel import applies, packed_gemm_kernel
from onnxc.lowering.graph_to_loops.loops import (
    Index,
    KernelBuilder,
    broadcast_indices,
    is_float,
)


def matmul_kernel(op: graph.MatMulOp, kb: KernelBuilder, ins, outs):
    if applies(op):
        return packed_gemm_kernel(op, kb, ins, outs)
    a_shape, b_shape = shape_of(op.lhs), shape_of(op.rhs)
    # 1-D operands are promoted as numpy does: a vector on the left is a 1 x K row, one on
    # the right a K x 1 column; the promoted dimension is absent from the result.
    a2 = (1, *a_shape) if len(a_shape) == 1 else a_shape
    b2 = (*b_shape, 1) if len(b_shape) == 1 else b_shape
    m, k, n = a2[-2], a2[-1], b2[-1]
    batch = list(shape_of(op.output)[: max(len(a2), len(b2)) - 2])
    a = kb.view(ins[0], a2)
    b = kb.view(ins[1], b2)
    y = kb.view(outs[0], [*batch, m, n])
    zero = kb.constant(0, outs[0].type.get_element_type())

    def per_batch(bi: list[Index]) -> None:
        a_batch = broadcast_indices(bi, a2[:-2])
        b_batch = broadcast_indices(bi, b2[:-2])

        def row(i: Index) -> None:
            kb.for_(0, n, lambda j: kb.store(zero, y, [*bi, i, j]))

            def step(kk: Index) -> None:
                scale = kb.load(a, [*a_batch, i, kk])

                def axpy(j: Index) -> None:
                    acc = kb.load(y, [*bi, i, j])
                    kb.store(kb.muladd(scale, kb.load(b, [*b_batch, kk, j]), acc), y, [*bi, i, j])

                kb.for_(0, n, axpy)

            kb.for_(0, k, step)
            activate_in_place(kb, op, y, [*bi, i], [n])  # while the row is in cache

        kb.for_(0, m, row)

    kb.nest(batch, per_batch)


def gemm_kernel(op: graph.GemmOp, kb: KernelBuilder, ins, outs):
    if applies(op):
        return packed_gemm_kernel(op, kb, ins, outs)
    trans_a, trans_b = int_of(op.trans_a) != 0, int_of(op.trans_b) != 0
    alpha, beta = float_of(op.alpha), float_of(op.beta)
    a_shape = shape_of(op.a)
    m, n = shape_of(op.output)
    k = a_shape[0] if trans_a else a_shape[1]
    a, b, y = ins[0], ins[1], outs[0]
    c = ins[2] if op.c is not None else None
    element = y.type.get_element_type()
    c_shape = shape_of(op.c) if op.c is not None else ()

    def a_at(i: Index, kk: Index):
        return kb.load(a, [kk, i] if trans_a else [i, kk])

    def scaled(v, factor: float):
        return v if factor == 1.0 else kb.mul(v, kb.constant(factor, element))

    def initial(i: Index, j: Index):
        if c is None or beta == 0.0:
            return kb.constant(0, element)
        return scaled(kb.load(c, broadcast_indices([i, j], c_shape)), beta)

    def row_ikj(i: Index) -> None:
        kb.for_(0, n, lambda j: kb.store(initial(i, j), y, [i, j]))

        def step(kk: Index) -> None:
            s = scaled(a_at(i, kk), alpha)

            def axpy(j: Index) -> None:
                kb.store(kb.muladd(s, kb.load(b, [kk, j]), kb.load(y, [i, j])), y, [i, j])

            kb.for_(0, n, axpy)

        kb.for_(0, k, step)
        activate_in_place(kb, op, y, [i], [n])  # while the row is in cache

    def row_ijk(i: Index) -> None:
        def column(j: Index) -> None:
            (dot,) = kb.reduce(0, k, [kb.constant(0, element)], lambda kk, acc: [
                _reassociable_muladd(kb, a_at(i, kk), kb.load(b, [j, kk]), acc)
            ])
            result = scaled(dot, alpha)
            if c is not None and beta != 0.0:
                result = kb.add(result, initial(i, j))
            kb.store(activate(kb, op, result), y, [i, j])

        kb.for_(0, n, column)

    kb.for_(0, m, row_ijk if trans_b else row_ikj)


def _reassociable_muladd(kb: KernelBuilder, a, b, acc):
    """acc + a * b marked reassociable, so LLVM may vectorise the dot product."""
    if not is_float(acc.type):
        return kb.add(kb.mul(a, b), acc)
    flags = FastMathFlagsAttr([FastMathFlag.REASSOC, FastMathFlag.ALLOW_CONTRACT])
    product = kb.insert(arith.MulfOp(a, b, flags))
    return kb.insert(arith.AddfOp(acc, product, flags))


KERNELS = {
    graph.MatMulOp: matmul_kernel,
    graph.GemmOp: gemm_kernel,
}
