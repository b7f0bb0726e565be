"""MatMulNBits' accuracy level 4 on AVX512-VNNI: int8 activations times 4-bit weights by
vpdpbusd, as onnxruntime's CompInt8 kernels compute it.

With `accuracy_level = 4` the model allows A to be quantized: each row of A is quantized per
block of `block_size` k rows to int8, symmetric (scale_a = max |a| / 127, a_q =
round_half_even(a * 127 / max |a|)), then each block's products are exact in i32:

    y[m, n] = sum_s scale_w[s, n] * scale_a[m, s] * (sum_k a_q[m, k] q[n, k]
                                                      - zp[s, n] * sum_k a_q[m, k])

- Before the GEMM, A is quantized into a scratch of i32 words (4 k rows each, K padded to
  whole blocks with zeros) with each block's scale and sum of a_q (exact in f32).
- B is repacked at compile time into panels of 64 columns: dword (k8, c) holds the 8 values
  of column c for rows 8 k8 .. 8 k8 + 7, byte i = q[8 k8 + i] | q[8 k8 + 4 + i] << 4, so
  one 64-byte load gives 16 columns' words of rows 0-3 (`x & 0x0F0F0F0F`) and 4-7
  (`x >> 4 & 0x0F0F0F0F`), each one vpdpbusd (u8 weights x s8 activations) per row.
- Per block the i32 sums become f32 and are folded into the row accumulators as in the f32
  kernel (two FMAs and a multiply per column vector).

Taken for 4-bit weights without a group index on targets with AVX512-VNNI; other level-4
ops compute in f32 (weight_quant_gemm.py), more accurately than onnxruntime does.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import arith, llvm, math, memref
from xdsl.dialects.builtin import MemRefType, VectorType, f32, i32
from xdsl.ir import SSAValue

from onnxc.dialects import graph
from onnxc.dialects.dense_data import from_numpy
from onnxc.dialects.graph_base import int_of
from onnxc.dialects.graph_weight_quant import unpack_bits
from onnxc.lowering.graph_to_loops.branches import choose, each_remainder, when
from onnxc.lowering.graph_to_loops.buffer_types import RunTimeScratch
from onnxc.lowering.graph_to_loops.int8_multiply import V16I32, V64I8, VPDPBUSD
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder
from onnxc.target import Target

VW = 16
MR, NR = 2, 64
"""2 rows x 64 columns: 8 i32 block and 8 f32 row accumulators, 8 weight vectors."""
CHUNK_ROWS = 64


def applies(op: graph.MatMulWeightQuantizedOp, target: Target) -> bool:
    return (int_of(op.accuracy_level) == 4 and int_of(op.bits) == 4
            and op.group_index is None and target.has_feature("avx512vnni"))


def _gemm(op):
    from onnxc.lowering.graph_to_loops.weight_quant_gemm import WeightGemm

    return WeightGemm(op)


def kpad(op) -> int:
    """K padded to whole blocks."""
    return op.k_blocks() * int_of(op.block_size)


def int8_constants(op: graph.MatMulWeightQuantizedOp, target: Target) -> list:
    """[packed B words (i32), scales (f32), -zero points (f32)], panel-major."""
    from onnxc.lowering.graph_to_loops.weight_quant_gemm import _constant, _panel_major

    g = _gemm(op)
    npad = -(-g.n // VW) * VW
    q = np.zeros((g.n, kpad(op)), np.uint32)
    q[:, :g.k] = unpack_bits(_constant(op.weight), 4, g.k)
    eights = q.reshape(g.n, -1, 2, 4)  # [N, k8, half, i]
    words = ((eights[:, :, 0, :] | (eights[:, :, 1, :] << 4))
             << (np.arange(4, dtype=np.uint32) * 8)).sum(axis=2, dtype=np.uint32)  # [N, k8]
    packed = np.zeros((words.shape[1], npad), np.uint32)
    packed[:, :g.n] = words.T
    scales = np.zeros((op.k_blocks(), npad), np.float32)
    scales[:, :g.n] = _constant(op.scales).astype(np.float32).T
    zps = np.zeros((op.k_blocks(), npad), np.float32)
    zps[:, :g.n] = -_constant(op.zero_points).astype(np.float32).T
    return [from_numpy(_panel_major(packed, npad, NR).view(np.int32), i32),
            from_numpy(_panel_major(scales, npad, NR), f32),
            from_numpy(_panel_major(zps, npad, NR), f32)]


def int8_scratch(op: graph.MatMulWeightQuantizedOp, target: Target) -> list:
    """A's words [M, Kpad / 4] (i32), its block scales and sums [M, k_blocks] (f32)."""
    m = 1
    for d in _gemm(op).m():
        m = m * d

    def buffer(element, count):
        n = m * count
        return MemRefType(element, [n]) if isinstance(n, int) else RunTimeScratch(element, n)

    return [buffer(i32, kpad(op) // 4), buffer(f32, op.k_blocks()),
            buffer(f32, op.k_blocks())]


class Int8Kernel:
    """Emits the level-4 GEMM of one op (the module docstring)."""

    def __init__(self, op: graph.MatMulWeightQuantizedOp, kb: KernelBuilder, ins, outs):
        self.op, self.kb, self.g = op, kb, _gemm(op)
        g = self.g
        self.bias = ins[4] if op.bias is not None else None
        rest = list(ins[5 if self.bias is not None else 4:])
        self.bp, self.scale, self.zp, self.words, self.a_scales, self.a_sums = rest
        self.block = int_of(op.block_size)
        self.nseg = op.k_blocks()
        self.kw = kpad(op) // 4  # words per row
        self.m = kb.product([kb.dim(d) for d in g.m()])
        self.a = kb.view(ins[0], [self.m, g.k])
        self.y = kb.view(outs[0], [self.m, g.n])
        self.words = kb.view(self.words, [kb.imul(self.m, self.kw)])
        self.a_scales = kb.view(self.a_scales, [kb.imul(self.m, self.nseg)])
        self.a_sums = kb.view(self.a_sums, [kb.imul(self.m, self.nseg)])
        self.vf = VectorType(f32, [VW])
        self.npad = -(-g.n // VW) * VW
        self.tile = kb.insert(memref.AllocaOp.get(f32, shape=[VW]))

    # ------------------------------------------------------------------ A to int8

    def quantize_a(self) -> None:
        kb, g = self.kb, self.g
        zero = kb.constant(0.0, f32)

        def row(m: Index) -> None:
            def segment(s: Index) -> None:
                lo = kb.imul(s, self.block)
                hi = kb.imin(kb.iadd(lo, self.block), g.k)
                (amax,) = kb.for_(lo, hi, lambda k, acc: [kb.max(
                    acc, kb.insert(math.AbsFOp(kb.load(self.a, [m, k]))))], iter_args=[zero])
                nonzero = kb.insert(arith.CmpfOp(amax, zero, "ogt"))
                inverse = choose(kb, nonzero, lambda: [kb.div(kb.constant(127.0, f32), amax)],
                                 lambda: [zero])[0]
                at = kb.iadd(kb.imul(m, self.nseg), s)
                kb.store(kb.div(amax, kb.constant(127.0, f32)), self.a_scales, [at])

                def word(w: Index, total: SSAValue) -> list[SSAValue]:
                    packed = kb.constant(0, i32)
                    for i in range(4):
                        k = kb.iadd(kb.iadd(lo, kb.imul(w, 4)), i)
                        inside = kb.insert(arith.CmpiOp(kb.idx(k), kb.idx(hi), "slt"))
                        safe = kb.imin(k, g.k - 1)
                        value = kb.mul(kb.load(self.a, [m, safe]), inverse)
                        rounded = kb.insert(math.RoundEvenOp(value))
                        rounded = kb.insert(arith.SelectOp(inside, rounded, zero))
                        total = kb.add(total, rounded)
                        q = kb.insert(arith.FPToSIOp(rounded, i32))
                        byte = kb.insert(arith.AndIOp(q, kb.constant(255, i32)))
                        if i:
                            byte = kb.insert(arith.ShLIOp(byte, kb.constant(8 * i, i32)))
                        packed = kb.insert(arith.OrIOp(packed, byte))
                    kb.store(packed, self.words,
                             [kb.iadd(kb.imul(m, self.kw), kb.iadd(kb.idiv(lo, 4), w))])
                    return [total]

                (total,) = kb.for_(0, self.block // 4, word, iter_args=[zero])
                kb.store(total, self.a_sums, [at])

            kb.for_(0, self.nseg, segment)

        kb.for_(0, self.m, row)

    # ------------------------------------------------------------------ the GEMM

    def build(self) -> None:
        kb, g = self.kb, self.g
        self.quantize_a()
        full = g.n // NR
        tail = self.npad - full * NR
        panels = full + (1 if tail else 0)
        chunk_rows = CHUNK_ROWS // MR * MR
        chunks = kb.idiv(kb.iadd(self.m, chunk_rows - 1), chunk_rows)

        def rows(c: Index, j: Index, w: int) -> None:
            lo = kb.imul(c, chunk_rows)
            hi = kb.imin(kb.iadd(lo, chunk_rows), self.m)
            count = kb.isub(hi, lo)
            blocks = kb.idiv(count, MR)
            kb.for_(0, blocks, lambda b: self.micro(kb.iadd(lo, kb.imul(b, MR)), MR, j, w))
            rem = kb.isub(count, kb.imul(blocks, MR))
            each_remainder(kb, rem, MR, lambda r: self.micro(
                kb.iadd(lo, kb.imul(blocks, MR)), r, j, w))

        def iteration(it: Index) -> None:
            c = kb.idiv(it, panels)
            p = kb.isub(it, kb.imul(c, panels))
            if full:
                when(kb, kb.insert(arith.CmpiOp(kb.idx(p), kb.idx(full), "slt")),
                     lambda: rows(c, kb.imul(p, NR), NR))
            if tail:
                when(kb, kb.insert(arith.CmpiOp(kb.idx(p), kb.idx(full), "eq")),
                     lambda: rows(c, full * NR, tail))

        kb.parallel_for(0, kb.imul(chunks, panels), iteration)

    def micro(self, i0: Index, mr: int, j: Index, w: int) -> None:
        kb, g = self.kb, self.g
        nv = w // VW
        zero_f = kb.vsplat(kb.constant(0.0, f32), self.vf)
        zero_i = kb.vsplat(kb.constant(0, i32), V16I32)
        mask = kb.vsplat(kb.constant(0x0F0F0F0F, i32), V16I32)
        four = kb.vsplat(kb.constant(4, i32), V16I32)
        k8s = self.kw // 2
        panel_b = kb.imul(j, k8s)
        panel_s = kb.imul(j, self.nseg)

        def step(k8: Index, *bacc: SSAValue) -> list[SSAValue]:
            at = kb.iadd(panel_b, kb.imul(k8, w))
            lows, highs = [], []
            for v in range(nv):
                x = kb.vload(self.bp, [kb.idx(kb.iadd(at, v * VW))], V16I32)
                lows.append(kb.insert(llvm.BitcastOp(kb.insert(arith.AndIOp(x, mask)), V64I8)))
                high = kb.insert(arith.AndIOp(kb.insert(arith.ShRUIOp(x, four)), mask))
                highs.append(kb.insert(llvm.BitcastOp(high, V64I8)))
            out = list(bacc)
            for half, weights in ((0, lows), (1, highs)):
                for r in range(mr):
                    word = kb.load(self.words, [kb.iadd(kb.imul(kb.iadd(i0, r), self.kw),
                                                        kb.iadd(kb.imul(k8, 2), half))])
                    a = kb.insert(llvm.BitcastOp(kb.vsplat(word, V16I32), V64I8))
                    for v in range(nv):
                        out[r * nv + v] = kb.insert(llvm.CallIntrinsicOp(
                            VPDPBUSD, [out[r * nv + v], weights[v], a], [V16I32]))
            return out

        def segment(s: Index, *acc: SSAValue) -> list[SSAValue]:
            lo = kb.imul(s, self.block // 8)
            bacc = kb.for_(lo, kb.iadd(lo, self.block // 8), step,
                           iter_args=[zero_i] * (mr * nv))
            at = kb.iadd(panel_s, kb.imul(s, w))
            out = list(acc)
            for r in range(mr):
                row_at = kb.iadd(kb.imul(kb.iadd(i0, r), self.nseg), s)
                total = kb.vsplat(kb.load(self.a_sums, [row_at]), self.vf)
                a_scale = kb.vsplat(kb.load(self.a_scales, [row_at]), self.vf)
                for v in range(nv):
                    col = kb.iadd(at, v * VW)
                    scale = kb.float_op(arith.MulfOp, a_scale,
                                        kb.vload(self.scale, [kb.idx(col)], self.vf))
                    zp = kb.vload(self.zp, [kb.idx(col)], self.vf)
                    dots = kb.insert(llvm.SIToFPOp(bacc[r * nv + v], self.vf))
                    centred = kb.vfma(total, zp, dots)
                    out[r * nv + v] = kb.vfma(centred, scale, out[r * nv + v])
            return out

        acc = kb.for_(0, self.nseg, segment, iter_args=[zero_f] * (mr * nv))
        for v in range(nv):
            col = kb.iadd(j, v * VW)
            partial = isinstance(col, int) and col + VW > g.n
            for r in range(mr):
                row = kb.iadd(i0, r)
                value = acc[r * nv + v]
                if partial:
                    self.store_part(value, row, col)
                    continue
                if self.bias is not None:
                    value = kb.float_op(arith.AddfOp, value,
                                        kb.vload(self.bias, [kb.idx(col)], self.vf))
                kb.vstore(value, self.y, [kb.idx(row), kb.idx(col)])

    def store_part(self, value: SSAValue, row: Index, col: int) -> None:
        from onnxc.lowering.graph_to_loops.weight_quant_gemm import store_partial_row

        store_partial_row(self.kb, value, self.tile, self.bias, self.y, row, col, self.g.n)


def int8_kernel(op: graph.MatMulWeightQuantizedOp, kb: KernelBuilder, ins, outs) -> None:
    Int8Kernel(op, kb, ins, outs).build()
