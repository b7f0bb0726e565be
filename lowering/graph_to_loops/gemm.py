"""Kernels of MatMul (numpy semantics) and Gemm.

2-D f32 products run on the packed micro-kernel (gemm_ops.py, gemm_microkernel.py). Batched f32 MatMul
with a non-constant B (attention's Q K^T and P V when not fused) runs `batched_matmul_kernel`:
per batch slice, the same register-blocked MR x NR outer-product micro-kernel (the target's
`tiling_for`) reading B's rows in place instead of packed panels (a slice is small enough for
the cache), with the batch x row-block loop parallel. The loops below are the general path (other
element types, few rows, narrow results).

Both run in i-k-j order: a result row is initialised, then for each k one scalar of A
scales a contiguous row of B into it, so the innermost loop streams B and the row of Y
and vectorises without a reduction. Gemm with transB (the usual layout of ONNX fully
connected layers) would make that row access strided; it runs i-j-k instead, a dot
product of two contiguous rows carried in `iter_args`.

Symbolic sizes (SYMBOLIC): every kernel here reads its sizes through the KernelBuilder
(`kb.dim`), so the same code takes static and run-time sizes. A projection with symbolic
rows and a constant B runs the packed kernel with run-time row loops; a product of two
activations with symbolic dimensions (attention's Q K^T and P V, `seq` or `past+seq` long)
runs `batched_matmul_kernel` with run-time row, column and depth bounds: its row remainder
is chosen among the MR - 1 register tiles at run time (`each_remainder`), N is covered by
NR panels, single vectors and one last vector ending at column N (scalar only when N < VW),
and A's rows and B's panel are addressed from offsets computed before the k loop (their
strides are run-time values).
"""

from __future__ import annotations

import math as pymath

from xdsl.dialects import arith, memref
from xdsl.dialects.arith import FastMathFlagsAttr
from xdsl.dialects.builtin import Float32Type, VectorType
from xdsl.dialects.utils.fast_math import FastMathFlag
from xdsl.ir import SSAValue

from onnxc.dialects import graph
from onnxc.dialects.graph import float_of, int_of, is_symbolic, shape_of
from onnxc.dialects.symbolic_dims import Dim
from onnxc.lowering.graph_to_loops.branches import each_remainder, when
from onnxc.lowering.graph_to_loops.element_types import is_float
from onnxc.lowering.graph_to_loops.epilogue import activate, activate_in_place
from onnxc.lowering.graph_to_loops.gemm_ops import (
    applies,
    packed_b,
    packed_gemm_kernel,
    scratch_b,
)
from onnxc.lowering.graph_to_loops.gemm_tiles import tiling_for
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder, broadcast_indices, unflatten
from onnxc.lowering.graph_to_loops.rules import KernelRule
from onnxc.target import Target


def _promoted(op: graph.MatMulOp) -> tuple[tuple[Dim, ...], tuple[Dim, ...], list[Dim]]:
    """A and B with 1-D operands promoted as numpy does, and the batch shape of the result."""
    a_shape, b_shape = shape_of(op.lhs), shape_of(op.rhs)
    a2 = (1, *a_shape) if len(a_shape) == 1 else a_shape
    b2 = (*b_shape, 1) if len(b_shape) == 1 else b_shape
    return a2, b2, list(shape_of(op.output)[: max(len(a2), len(b2)) - 2])


def _symbolic(op) -> bool:
    return any(is_symbolic(v) for v in (*op.operands, *op.results))


def _batched_applies(op: graph.MatMulOp, target: Target) -> bool:
    """Batched f32 products with N at least one of `target`'s vectors wide; with symbolic
    sizes any f32 product the packed kernel does not take (a symbolic N may be wide: it is
    vectorized up to its run-time value)."""
    _a2, b2, batch = _promoted(op)
    f32 = all(isinstance(t.get_element_type(), Float32Type)
              for t in (op.lhs.type, op.rhs.type, op.output.type))
    vw = tiling_for(target).vw
    if f32 and _symbolic(op):
        return not isinstance(b2[-1], int) or b2[-1] >= vw
    return f32 and len(b2) >= 3 and b2[-1] >= vw and pymath.prod(batch) > 0


def _bound(d: Index) -> int | tuple[Index, Index]:
    """A `kb.nest` bound for an extent known at compile or at run time."""
    return d if isinstance(d, int) else (0, d)


def batched_matmul_kernel(op: graph.MatMulOp, kb: KernelBuilder, ins, outs):
    """Y[b] = A[b] @ B[b]: MR x NR tiles of Y[b] in vector accumulators, one broadcast
    scalar of A and NR/VW vectors of B's row per k; column remainder below VW by scalar
    dot products (with symbolic sizes: `symbolic_columns`)."""
    a2_, b2_, batch_ = _promoted(op)
    a2, b2 = [kb.dim(d) for d in a2_], [kb.dim(d) for d in b2_]
    batch = [kb.dim(d) for d in batch_]
    m, k, n = a2[-2], a2[-1], b2[-1]
    t = tiling_for(kb.target)
    vtype = VectorType(Float32Type(), [t.vw])
    a, b = kb.view(ins[0], a2), kb.view(ins[1], b2)
    y = kb.view(outs[0], [*batch, m, n])
    full_rows: Index
    rem_rows: Index
    if isinstance(m, int):
        full_rows, rem_rows = divmod(m, t.mr)
    else:
        full_rows = kb.idiv(m, t.mr)
        rem_rows = kb.isub(m, kb.imul(full_rows, t.mr))
    vec_cols = kb.imul(kb.idiv(n, t.vw), t.vw)
    zero = kb.constant(0.0, Float32Type())
    symbolic = _symbolic(op)

    def vload(mem, at: list[Index]):
        flat, idx = kb.address(mem, at)
        return kb.vload(flat, idx, vtype)

    def tile(bi, ai, bb, i0: Index, mr: int, j0: Index, nv: int) -> None:
        # run-time strides (symbolic sizes): each row of A and the panel of B get a base
        # offset before the k loop, which then only adds k (k * N for B)
        a_rows = [kb.address(a, [*ai, kb.iadd(i0, r), 0]) for r in range(mr)] \
            if kb.is_bound(a) else None
        b_row = kb.address(b, [*bb, 0, j0]) if kb.is_bound(b) else None

        def a_at(r: int, kk: Index) -> SSAValue:
            if a_rows is None:
                return kb.load(a, [*ai, kb.iadd(i0, r), kk])
            flat, (row,) = a_rows[r]
            return kb.insert(memref.LoadOp.get(flat, [kb.idx(kb.iadd(row, kk))]))

        def b_at(kk: Index, boff: Index, v: int) -> SSAValue:
            if b_row is None:
                return vload(b, [*bb, kk, kb.iadd(j0, v * t.vw)])
            return kb.vload(b_row[0], [kb.idx(kb.iadd(boff, v * t.vw))], vtype)

        def step(kk: Index, *acc):
            boff = None
            if b_row is not None:  # B's offset carried: a run-time N is a run-time stride
                *acc, boff = acc
            bv = [b_at(kk, boff, v) for v in range(nv)]
            out = list(acc)
            for r in range(mr):
                s = kb.vsplat(a_at(r, kk), vtype)
                for v in range(nv):
                    out[r * nv + v] = kb.vfma(s, bv[v], out[r * nv + v])
            if boff is not None:
                out.append(kb.iadd(boff, n))
            return out

        vzero = kb.vsplat(zero, vtype)
        init = [vzero] * (mr * nv)
        if b_row is not None:
            init.append(kb.idx(b_row[1][0]))
        acc = kb.for_(0, k, step, iter_args=init)
        for r in range(mr):
            for v in range(nv):
                flat, idx = kb.address(y, [*bi, kb.iadd(i0, r), kb.iadd(j0, v * t.vw)])
                kb.vstore(acc[r * nv + v], flat, idx)

    def column(ivs: list[Index], i0: Index, ai, bb, bi) -> None:
        i, j = kb.iadd(i0, ivs[0]), ivs[1]
        (dot,) = kb.reduce(0, k, [zero], lambda kk, acc: [
            _reassociable_muladd(kb, kb.load(a, [*ai, i, kk]), kb.load(b, [*bb, kk, j]), acc)])
        kb.store(dot, y, [*bi, i, j])

    def rows(bi, ai, bb, i0: Index, mr: int) -> None:
        if symbolic:
            symbolic_columns(bi, ai, bb, i0, mr)
        else:
            assert isinstance(vec_cols, int) and isinstance(n, int)
            panels, rest = divmod(vec_cols, t.nr)
            kb.for_(0, panels, lambda p: tile(bi, ai, bb, i0, mr, kb.imul(p, t.nr), t.nr // t.vw))
            if rest:
                tile(bi, ai, bb, i0, mr, panels * t.nr, rest // t.vw)
            if vec_cols < n:
                kb.nest([mr, (vec_cols, n)], lambda ivs: column(ivs, i0, ai, bb, bi))
        kb.for_(0, mr, lambda r: activate_in_place(kb, op, y, [*bi, kb.iadd(i0, r)],
                                                   [_bound(n)]))

    def symbolic_columns(bi, ai, bb, i0: Index, mr: int) -> None:
        """NR panels, the vectors after the last one one at a time, then the columns past
        the last full vector as one more vector ending at column N (it recomputes a few
        columns, the same values, stored again before the activation); scalar dot
        products only when N < VW."""
        panels = kb.idiv(n, t.nr)
        kb.for_(0, panels, lambda p: tile(bi, ai, bb, i0, mr, kb.imul(p, t.nr), t.nr // t.vw))
        j1 = kb.imul(panels, t.nr)
        kb.for_(0, kb.idiv(kb.isub(vec_cols, j1), t.vw), lambda v: tile(
            bi, ai, bb, i0, mr, kb.iadd(j1, kb.imul(v, t.vw)), 1))
        if isinstance(n, int):
            if n % t.vw and n > t.vw:
                tile(bi, ai, bb, i0, mr, n - t.vw, 1)
            elif n < t.vw:
                kb.nest([mr, n], lambda ivs: column(ivs, i0, ai, bb, bi))
            return
        assert not isinstance(vec_cols, int)
        partial = kb.insert(arith.CmpiOp(vec_cols, n, "slt"))
        wide = kb.insert(arith.CmpiOp(vec_cols, kb.idx(0), "sgt"))
        when(kb, kb.insert(arith.AndIOp(partial, wide)),
             lambda: tile(bi, ai, bb, i0, mr, kb.isub(n, t.vw), 1))
        narrow = kb.select(wide, kb.idx(0), n)  # N < VW: all N columns
        kb.nest([mr, (0, narrow)], lambda ivs: column(ivs, i0, ai, bb, bi))

    def block(flat: Index, blocks: Index, first: Index, mr: int) -> None:
        ivs = unflatten(kb, flat, [*batch, blocks])
        bi = ivs[:-1]
        ai, bb = broadcast_indices(bi, a2_[:-2]), broadcast_indices(bi, b2_[:-2])
        rows(bi, ai, bb, kb.iadd(kb.imul(ivs[-1], t.mr), first), mr)

    count = kb.product(batch)
    if not isinstance(full_rows, int) or full_rows:
        kb.parallel_for(0, kb.imul(count, full_rows), lambda f: block(f, full_rows, 0, t.mr))
    # the last, shorter row block of every slice (its height chosen at run time when M is
    # symbolic)
    first = kb.imul(full_rows, t.mr)
    if isinstance(rem_rows, int):
        if rem_rows:
            kb.parallel_for(0, count, lambda f: block(f, 1, first, rem_rows))
    else:
        kb.parallel_for(0, count, lambda f: each_remainder(
            kb, rem_rows, t.mr, lambda r: block(f, 1, first, r)))


def matmul_kernel(op: graph.MatMulOp, kb: KernelBuilder, ins, outs):
    if applies(op):
        return packed_gemm_kernel(op, kb, ins, outs)
    if _batched_applies(op, kb.target):
        return batched_matmul_kernel(op, kb, ins, outs)
    # 1-D operands are promoted as numpy does: a vector on the left is a 1 x K row, one on
    # the right a K x 1 column; the promoted dimension is absent from the result.
    a2_, b2_, batch_ = _promoted(op)
    a2, b2 = [kb.dim(d) for d in a2_], [kb.dim(d) for d in b2_]
    batch = [kb.dim(d) for d in batch_]
    m, k, n = a2[-2], a2[-1], b2[-1]
    a = kb.view(ins[0], a2)
    b = kb.view(ins[1], b2)
    y = kb.view(outs[0], [*batch, m, n])
    zero = kb.constant(0, outs[0].type.get_element_type())

    def per_batch(bi: list[Index]) -> None:
        a_batch = broadcast_indices(bi, a2_[:-2])
        b_batch = broadcast_indices(bi, b2_[:-2])

        def row(i: Index) -> None:
            kb.for_(0, n, lambda j: kb.store(zero, y, [*bi, i, j]))

            def step(kk: Index) -> None:
                scale = kb.load(a, [*a_batch, i, kk])

                def axpy(j: Index) -> None:
                    acc = kb.load(y, [*bi, i, j])
                    kb.store(kb.muladd(scale, kb.load(b, [*b_batch, kk, j]), acc), y, [*bi, i, j])

                kb.for_(0, n, axpy)

            kb.for_(0, k, step)
            activate_in_place(kb, op, y, [*bi, i], [_bound(n)])  # while the row is in cache

        kb.for_(0, m, row)

    kb.nest([_bound(d) for d in batch], per_batch)


def gemm_kernel(op: graph.GemmOp, kb: KernelBuilder, ins, outs):
    if applies(op):
        return packed_gemm_kernel(op, kb, ins, outs)
    trans_a, trans_b = int_of(op.trans_a) != 0, int_of(op.trans_b) != 0
    alpha, beta = float_of(op.alpha), float_of(op.beta)
    a_shape = shape_of(op.a)
    m, n = (kb.dim(d) for d in shape_of(op.output))
    k = kb.dim(a_shape[0] if trans_a else a_shape[1])
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
        activate_in_place(kb, op, y, [i], [_bound(n)])  # while the row is in cache

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


RULES = (
    KernelRule(graph.MatMulOp, matmul_kernel, constants=packed_b, scratch=scratch_b,
               symbolic=True, early=True, bf16=True),
    KernelRule(graph.GemmOp, gemm_kernel, constants=packed_b, scratch=scratch_b,
               symbolic=True, early=True, bf16=True),
)
"""symbolic: the kernels read their sizes from the KernelBuilder (symbolic dims welcome):
with a constant (or static) B the packed kernel, else the batched or the general one.
early: with the convolutions, the largest kernels (early_kernels.py)."""
