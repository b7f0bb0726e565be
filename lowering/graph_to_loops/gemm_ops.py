"""MatMul by a 2-D B and Gemm on the packed GEMM of gemm_microkernel.py: which ops it
takes (`applies`, `shape_of_op`), B packed at compile time (`packed_b`), read in place
(`reads_b_in_place`) or packed at run time into a scratch (`scratch_b`), and the kernel
(`packed_gemm_kernel`: A read in place, alpha and C as the terms; bf16 pairs through
gemm_bf16.py with `precision="bf16"`)."""

from __future__ import annotations

from math import prod

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float32Type,
    MemRefType,
    TensorType,
    f32,
)
from xdsl.ir import Operation, SSAValue

from onnxc.dialects import graph
from onnxc.dialects.dense_data import from_numpy, values_in_shape
from onnxc.dialects.graph import float_of, int_of, is_symbolic, shape_of
from onnxc.lowering.graph_to_loops.gemm_column_split import splits_packed_columns
from onnxc.lowering.graph_to_loops.gemm_microkernel import MIN_ROWS_RUNTIME_PACK, PackedGemm
from onnxc.lowering.graph_to_loops.gemm_tiles import GemmShape, pack, tiling_for
from onnxc.lowering.graph_to_loops.k_blocks import KBlock
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder, broadcast_indices
from onnxc.target import Target


def shape_of_op(op: Operation) -> GemmShape | None:
    """The GEMM `op` computes when the packed kernel applies to it, else None."""
    if isinstance(op, graph.MatMulOp):
        # A's leading dimensions fold into M (a [batch, seq, K] activation times a weight)
        a, b = shape_of(op.lhs), shape_of(op.rhs)
        if len(a) < 2 or len(b) != 2 or not _all_f32(op):
            return None
        return GemmShape(prod(a[:-1]), b[1], a[-1], False, False, 1.0, 0.0, None)
    if isinstance(op, graph.GemmOp):
        if not _all_f32(op):
            return None
        trans_a, trans_b = int_of(op.trans_a) != 0, int_of(op.trans_b) != 0
        m, n = shape_of(op.output)
        a_shape = shape_of(op.a)
        k = a_shape[0] if trans_a else a_shape[1]
        beta = float_of(op.beta)
        c_shape = tuple(shape_of(op.c)) if op.c is not None and beta != 0.0 else None
        return GemmShape(m, n, k, trans_a, trans_b, float_of(op.alpha), beta, c_shape)
    return None


def _all_f32(op: Operation) -> bool:
    types = [*op.operand_types, *op.result_types]
    return all(isinstance(t, TensorType) and isinstance(t.element_type, Float32Type)
               for t in types)


def _b_value(op: Operation):
    b = op.rhs if isinstance(op, graph.MatMulOp) else op.b
    owner = b.owner
    return owner.value if isinstance(owner, graph.ConstantOp) else None


def applies(op: Operation) -> bool:
    """Whether `op` runs on the packed kernel (else the general i-k-j kernels); with a
    symbolic M (a sequence length, usually long) whenever N and K are static."""
    g = shape_of_op(op)
    if g is None or not isinstance(g.n, int) or not isinstance(g.k, int) or min(g.n, g.k) < 1:
        return False
    if not isinstance(g.m, int):
        return True
    if g.m < 1:
        return False
    return _b_value(op) is not None or g.m >= MIN_ROWS_RUNTIME_PACK


def _bf16_requested(op: Operation) -> bool:
    """bf16 compute was asked for `op` and its kernel has it (not with symbolic sizes: its
    A-pairs scratch is sized by M; such a product stays f32)."""
    return _bf16().requested(op) and not any(
        is_symbolic(v) for v in (*op.operands, *op.results))


def packed_b(op: Operation, target: Target) -> list[DenseIntOrFPElementsAttr]:
    """alpha * op(B) packed into `target`'s panels when B is a constant (the kernel's extra
    operand)."""
    if not applies(op):
        return []
    value = _b_value(op)
    if value is None:
        return []
    if _bf16_requested(op):
        return _bf16().packed_b_pairs(op, target)
    g, t = shape_of_op(op), tiling_for(target)
    assert g is not None
    b = values_in_shape(value, shape_of(value.type))
    packed = pack(b.T if g.trans_b else b, g, t)
    if g.alpha != 1.0:
        packed *= np.float32(g.alpha)
    return [from_numpy(packed.reshape(-1), f32)]  # pack's bytes, shared (dense_data.zeros)


IN_PLACE_B_BYTES = 1 << 20
"""At most this much of a run-time B is read in place (`reads_b_in_place`)."""


def reads_b_in_place(op: Operation, target: Target) -> bool:
    """Whether the kernel reads a B that is not a constant where it is ([K, N], row-major)
    instead of packing it at run time: when the rows split between threads (not
    `splits_packed_columns`), N is whole NR-wide panels, B is at most IN_PLACE_B_BYTES and
    the target has AVX-512 (whose CPUs have 1 MiB of L2 per core or more: a panel's rows,
    N * 4 bytes apart, then stay in the L2's sets across the row blocks). The packing was a
    pass over B, a parallel region and a barrier per call, and at two threads half of the
    packed panels were read from the other core. Zen 4, in one process alternating with the
    packed build: MatMul 512 with both operands inputs T=2 1.249 -> 1.197 ms (-4%; -4 and
    -5% in a slower phase of the VM), T=1 -1.0% (-1.1, -1.7%); 384 x 1024 x 256 T=2 -5%,
    T=1 -1%. A 2 MiB B (1024 x 1024 x 512), its panels' rows no longer fitting the L2's
    sets, ran 5.6% slower at T=1 in place (with the rows split panel by panel per row
    block)."""
    if not applies(op) or _b_value(op) is not None or _bf16_requested(op):
        return False
    g, t = shape_of_op(op), tiling_for(target)
    assert g is not None
    return (not g.trans_b and g.n % t.nr == 0 and g.k * g.n * 4 <= IN_PLACE_B_BYTES
            and target.vector_bits == 512 and not splits_packed_columns(g, t))


def scratch_b(op: Operation, target: Target) -> list[MemRefType]:
    """The run-time packing buffer of one kc x nc block when B is not a constant and not
    read in place (in bf16 compute: A converted to bf16 pairs)."""
    if applies(op) and _bf16_requested(op):
        return [_bf16().a_pairs_type(op)]
    if not applies(op) or _b_value(op) is not None or reads_b_in_place(op, target):
        return []
    g, t = shape_of_op(op), tiling_for(target)
    assert g is not None
    width = g.npad(t) if splits_packed_columns(g, t) else min(t.nc, g.npad(t))
    return [MemRefType(f32, [min(t.kc, g.k), width])]


class _DenseGemm(PackedGemm):
    """MatMul / Gemm: A read in place (transposed or not), alpha and C as the terms."""

    def __init__(self, op: Operation, kb: KernelBuilder, ins, outs):
        g = shape_of_op(op)
        assert g is not None
        extra = list(ins[2:])
        self.b_in_place = reads_b_in_place(op, kb.target)
        # B read in place is 1-D to the packed GEMM, as a packed constant is: the same
        # schedule (chunks of row blocks, one parallel region), other addresses
        bp = kb.view(ins[1], [g.k * g.n]) if self.b_in_place else extra.pop()
        m = kb.dim(g.m)
        super().__init__(op, kb, g, kb.view(outs[0], [m, g.n]), bp)
        self.b = ins[1]
        self.a = kb.view(ins[0], [g.k, m] if g.trans_a else [m, g.k])
        self.c = extra[0] if g.c_shape is not None else None
        # alpha is folded into a constant B, else applied to the results
        self.alpha = g.alpha if self.runtime_pack or self.b_in_place else 1.0
        self.packs_own_columns = self.runtime_pack and splits_packed_columns(g, self.t)

    def panel_base(self, k0: Index, kc: int, j0: Index, j: Index) -> Index:
        if self.b_in_place:
            return self.kb.iadd(self.kb.imul(k0, self.g.n), j)
        return super().panel_base(k0, kc, j0, j)

    def b_row_stride(self, w: int) -> int:
        return self.g.n if self.b_in_place else w

    def splits_columns(self) -> bool:
        """B read in place: the threads split the rows (its columns split, each thread
        read all of A: MatMul 512 at T=2 9% slower than the rows split, at T=1 1.5% faster)."""
        return False if self.b_in_place else super().splits_columns()

    def stripe(self, blk: KBlock, j0: Index, panels: int, tail: bool,
               span: tuple[Index, Index] | int | None) -> None:
        """B read in place, a chunk of row blocks: panel by panel, so each panel's rows of
        B are read from the L2 once per chunk, not once per row block."""
        if not (self.b_in_place and isinstance(span, tuple)):
            super().stripe(blk, j0, panels, tail, span)
            return
        kb, t = self.kb, self.t
        assert not tail  # N is whole panels

        def panel(p: Index) -> None:
            j = kb.iadd(j0, kb.imul(p, t.nr))
            kb.for_(span[0], span[1], lambda r: self.tile_block(
                blk, r, lambda visit: visit(j, t.nr, True), j0))

        kb.for_(0, panels, panel)

    def a_at(self, i: Index, kk: Index) -> SSAValue:
        return self.kb.load(self.a, [kk, i] if self.g.trans_a else [i, kk])

    def b_at(self, kk: Index, j: Index) -> SSAValue:
        return self.kb.load(self.b, [j, kk] if self.g.trans_b else [kk, j])

    def k_loop(self, blk, ctx, i0, mr, init, step):
        kb = self.kb
        return kb.unrolled_for(blk.kc, lambda kk, *acc: step(
            kk, [self.a_at(kb.iadd(i0, r), kb.iadd(blk.k0, kk)) for r in range(mr)], *acc),
            self.unroll(mr), init)

    def pack_panel(self, k0: Index, kc: int, j0: Index, j: Index, w: int) -> None:
        """scratch[panel j] = B[k0:k0+kc, j:j+w], zero beyond column n."""
        kb, t, g = self.kb, self.t, self.g
        base = self.panel_base(k0, kc, j0, j)
        zero = kb.constant(0.0, f32)
        valid = w if isinstance(j, SSAValue) else min(w, g.n - j)

        def row(kk: Index) -> None:
            at = kb.iadd(base, kb.imul(kk, w))
            src_k = kb.iadd(k0, kk)
            if not g.trans_b and valid == w:
                for v in range(w // t.vw):
                    col = kb.iadd(j, v * t.vw)
                    self.vstore(self.vload(self.b, [src_k, col]), self.bp, [kb.iadd(at, v * t.vw)])
                return
            kb.for_(0, valid, lambda c: kb.store(
                self.b_at(src_k, kb.iadd(j, c)), self.bp, [kb.iadd(at, c)]))
            kb.for_(valid, w, lambda c: kb.store(zero, self.bp, [kb.iadd(at, c)]))

        kb.for_(0, kc, row)

    def scalar_terms(self, x: SSAValue, at: list[Index]) -> SSAValue:
        kb, g = self.kb, self.g
        if self.alpha != 1.0:
            x = kb.mul(x, kb.constant(self.alpha, f32))
        if self.c is not None and g.c_shape is not None:
            cv = kb.load(self.c, broadcast_indices(at, g.c_shape))
            if g.beta != 1.0:
                cv = kb.mul(cv, kb.constant(g.beta, f32))
            x = kb.add(x, cv)
        return x

    def vector_terms(self, acc, i0, mr: int, jy, nv: int) -> list[SSAValue]:
        kb, g, t = self.kb, self.g, self.t
        out = list(acc)
        if self.alpha != 1.0:
            alpha = self.splat(kb.constant(self.alpha, f32))
            out = [kb.float_op(arith.MulfOp, a, alpha) for a in out]
        if self.c is not None and g.c_shape is not None:
            beta = self.splat(kb.constant(g.beta, f32)) if g.beta != 1.0 else None
            c_cols = len(g.c_shape) >= 1 and g.c_shape[-1] != 1
            for r in range(mr):
                for v in range(nv):
                    at = broadcast_indices([kb.iadd(i0, r), kb.iadd(jy, v * t.vw)], g.c_shape)
                    cv = self.vload(self.c, at) if c_cols else self.splat(kb.load(self.c, at))
                    if beta is not None:
                        cv = kb.float_op(arith.MulfOp, cv, beta)
                    out[r * nv + v] = kb.float_op(arith.AddfOp, out[r * nv + v], cv)
        return out


def packed_gemm_kernel(op: Operation, kb: KernelBuilder, ins, outs) -> None:
    """The body of the packed kernel; `ins` end with packed B or the packing scratch."""
    if _bf16_requested(op):
        _bf16().bf16_gemm_kernel(op, kb, ins, outs)
        return
    _DenseGemm(op, kb, ins, outs).build()


def _bf16():
    """gemm_bf16 (imported late: it builds on this module)."""
    from onnxc.lowering.graph_to_loops import gemm_bf16

    return gemm_bf16
