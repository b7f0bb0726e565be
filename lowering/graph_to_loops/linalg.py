"""Kernels of MatMul (numpy semantics) and Gemm.

2-D f32 products run on the packed micro-kernel (gemm_microkernel.py). Batched f32 MatMul
with a non-constant B (attention's Q K^T and P V when not fused) runs `batched_matmul_kernel`:
per batch slice, the same register-blocked MR x NR outer-product micro-kernel (target_tiling)
reading B's rows in place instead of packed panels (a slice is small enough for the cache),
with the batch x row-block loop parallel. The loops below are the general path (other
element types, few rows, narrow results).

Both run in i-k-j order: a result row is initialised, then for each k one scalar of A
scales a contiguous row of B into it, so the innermost loop streams B and the row of Y
and vectorises without a reduction. Gemm with transB (the usual layout of ONNX fully
connected layers) would make that row access strided; it runs i-j-k instead, a dot
product of two contiguous rows carried in `iter_args`.
"""

from __future__ import annotations

import math as pymath

from xdsl.dialects import arith, vector
from xdsl.dialects.arith import FastMathFlagsAttr
from xdsl.dialects.builtin import Float32Type, VectorType
from xdsl.dialects.utils.fast_math import FastMathFlag

from onnxc.dialects import graph
from onnxc.dialects.graph import float_of, int_of, shape_of
from onnxc.lowering.graph_to_loops.epilogue import activate, activate_in_place
from onnxc.lowering.graph_to_loops.gemm_microkernel import (
    applies,
    packed_gemm_kernel,
    target_tiling,
)
from onnxc.lowering.graph_to_loops.loops import (
    Index,
    KernelBuilder,
    broadcast_indices,
    is_float,
)


def _promoted(op: graph.MatMulOp) -> tuple[tuple[int, ...], tuple[int, ...], list[int]]:
    """A and B with 1-D operands promoted as numpy does, and the batch shape of the result."""
    a_shape, b_shape = shape_of(op.lhs), shape_of(op.rhs)
    a2 = (1, *a_shape) if len(a_shape) == 1 else a_shape
    b2 = (*b_shape, 1) if len(b_shape) == 1 else b_shape
    return a2, b2, list(shape_of(op.output)[: max(len(a2), len(b2)) - 2])


def _batched_applies(op: graph.MatMulOp) -> bool:
    _a2, b2, batch = _promoted(op)
    f32 = all(isinstance(t.get_element_type(), Float32Type)
              for t in (op.lhs.type, op.rhs.type, op.output.type))
    return f32 and len(b2) >= 3 and b2[-1] >= target_tiling().vw and pymath.prod(batch) > 0


def batched_matmul_kernel(op: graph.MatMulOp, kb: KernelBuilder, ins, outs):
    """Y[b] = A[b] @ B[b]: MR x NR tiles of Y[b] in vector accumulators, one broadcast
    scalar of A and NR/VW vectors of B's row per k; column remainder below VW by scalar
    dot products."""
    a2, b2, batch = _promoted(op)
    m, k, n = a2[-2], a2[-1], b2[-1]
    t = target_tiling()
    vtype = VectorType(Float32Type(), [t.vw])
    a, b = kb.view(ins[0], a2), kb.view(ins[1], b2)
    y = kb.view(outs[0], [*batch, m, n])
    full_rows, rem_rows = divmod(m, t.mr)
    vec_cols = n // t.vw * t.vw
    zero = kb.constant(0.0, Float32Type())

    def tile(bi, ai, bb, i0: Index, mr: int, j0: Index, nv: int) -> None:
        def step(kk: Index, *acc):
            bv = [kb.insert(vector.LoadOp(b, [kb.idx(x) for x in
                                              [*bb, kk, kb.iadd(j0, v * t.vw)]], vtype))
                  for v in range(nv)]
            out = list(acc)
            for r in range(mr):
                s = kb.insert(vector.BroadcastOp(kb.load(a, [*ai, kb.iadd(i0, r), kk]), vtype))
                for v in range(nv):
                    out[r * nv + v] = kb.insert(vector.FMAOp(s, bv[v], out[r * nv + v]))
            return out

        vzero = kb.insert(vector.BroadcastOp(zero, vtype))
        acc = kb.for_(0, k, step, iter_args=[vzero] * (mr * nv))
        for r in range(mr):
            for v in range(nv):
                at = [*bi, kb.iadd(i0, r), kb.iadd(j0, v * t.vw)]
                kb.insert(vector.StoreOp(acc[r * nv + v], y, [kb.idx(x) for x in at]))

    def rows(bi, ai, bb, i0: Index, mr: int) -> None:
        panels, rest = divmod(vec_cols, t.nr)
        kb.for_(0, panels, lambda p: tile(bi, ai, bb, i0, mr, kb.imul(p, t.nr), t.nr // t.vw))
        if rest:
            tile(bi, ai, bb, i0, mr, panels * t.nr, rest // t.vw)

        def column(ivs: list[Index]) -> None:
            i, j = kb.iadd(i0, ivs[0]), ivs[1]
            (dot,) = kb.reduce(0, k, [zero], lambda kk, acc: [
                _reassociable_muladd(kb, kb.load(a, [*ai, i, kk]), kb.load(b, [*bb, kk, j]), acc)])
            kb.store(dot, y, [*bi, i, j])

        if vec_cols < n:
            kb.nest([mr, (vec_cols, n)], column)
        kb.for_(0, mr, lambda r: activate_in_place(kb, op, y, [*bi, kb.iadd(i0, r)], [n]))

    def block(flat: Index, blocks: int, first: int, mr: int) -> None:
        from onnxc.lowering.graph_to_loops.attention import unflatten

        ivs = unflatten(kb, flat, [*batch, blocks])
        bi = ivs[:-1]
        ai, bb = broadcast_indices(bi, a2[:-2]), broadcast_indices(bi, b2[:-2])
        rows(bi, ai, bb, kb.iadd(kb.imul(ivs[-1], t.mr), first), mr)

    count = pymath.prod(batch)
    if full_rows:
        kb.parallel_for(0, count * full_rows, lambda f: block(f, full_rows, 0, t.mr))
    if rem_rows:  # the last, shorter row block of every slice
        kb.parallel_for(0, count, lambda f: block(f, 1, full_rows * t.mr, rem_rows))


def matmul_kernel(op: graph.MatMulOp, kb: KernelBuilder, ins, outs):
    if applies(op):
        return packed_gemm_kernel(op, kb, ins, outs)
    if _batched_applies(op):
        return batched_matmul_kernel(op, kb, ins, outs)
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
