"""bf16 compute for f32 GEMMs and convs (`onnxc.compile(..., precision="bf16")`).

The packed micro-kernel of gemm_microkernel.py, with every product of two f32 values replaced
by a product of their bf16 roundings, accumulated in f32 by AVX512-BF16's `vdpbf16ps`
(`llvm.x86.avx512bf16.dpbf16ps.512`): acc[j] += a[2j] * b[2j] + a[2j+1] * b[2j+1] over 32
bf16 lanes. The kernel works on *pairs*: K is seen as ceil(K/2) pairs of consecutive k, one
pair of bf16 stored as one i32 (the lower k in the low half, as the instruction reads it).
So a bf16 GEMM is the f32 GEMM's loop nest over pairs, unchanged: B is the K/2 x N matrix of
weight pairs packed into the same panels at compile time (one 64-byte vector = 16 columns x
2 k), A is the M x K/2 matrix of activation pairs, one i32 broadcast per row per pair, and
the multiply-add is `vdpbf16ps`. An odd K gets a zero k (in A and in B).

A is converted once per kernel call into a scratch (the conv's zero-padded input copy does
it in the same pass), rounding to nearest even as `vcvtne2ps2bf16` does (NaN stays a quiet
NaN), rather than when the micro-kernel reads it: the kernel reads each A value once per
N panel, and rounding it there costs about ten integer instructions per value.

Only the products change: bias, C, residual, activation and everything outside GEMM and conv
stay f32. Which ops run in bf16 is decided by `set-compute-precision` (compute_precision.py),
which marks them with PRECISION_ATTR.

The intrinsic is called with `<16 x i32>` operands, its form before LLVM 17: llvmlite's IR
layer has no `bfloat` type, and LLVM's auto-upgrader bitcasts them to the current
`<32 x bfloat>` form when it parses the module (checked on this LLVM, 22.1).
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    MemRefType,
    StringAttr,
    VectorType,
    i32,
)
from xdsl.ir import Operation, SSAValue

from onnxc.dialects import graph
from onnxc.dialects.dense_data import from_numpy, values_in_shape
from onnxc.dialects.graph import shape_of
from onnxc.dialects.onnxc_attributes import PRECISION_ATTR
from onnxc.lowering.graph_to_loops.gemm_ops import (
    _b_value,
    _DenseGemm,
    applies,
    shape_of_op,
)
from onnxc.lowering.graph_to_loops.gemm_tiles import GemmShape, pack, tiling_for
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder
from onnxc.target import Target

DPBF16PS = "llvm.x86.avx512bf16.dpbf16ps.512"
HOST_FEATURE = "avx512bf16"


def supports_bf16(target: Target) -> bool:
    """Whether `target` has AVX512-BF16 (and AVX-512F: the kernel's 16-float vectors)."""
    return target.has_feature(HOST_FEATURE) and target.has_feature("avx512f")


def requested(op: Operation) -> bool:
    """Whether `op` was marked for bf16 compute."""
    attr = op.attributes.get(PRECISION_ATTR)
    return isinstance(attr, StringAttr) and attr.data == "bf16"


def gemm_eligible(op: Operation) -> bool:
    """MatMul or Gemm on the packed kernel with a constant B (its pairs packed at compile
    time)."""
    return (isinstance(op, graph.MatMulOp | graph.GemmOp) and applies(op)
            and _b_value(op) is not None)


# ------------------------------------------------------------------------- rounding


def bf16_bits(x: np.ndarray) -> np.ndarray:
    """f32 -> bf16 bit patterns (u16), round to nearest even; NaN stays a quiet NaN."""
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    nan = (bits & 0x7FFFFFFF) > 0x7F800000
    return np.where(nan, (bits >> 16) | 0x40, rounded).astype(np.uint16)


def pairs(b: np.ndarray) -> np.ndarray:
    """The K x N f32 matrix `b` as ceil(K/2) x N u32 pairs of bf16: row p holds k = 2p in
    the low half and k = 2p + 1 (zero past K) in the high half."""
    k, n = b.shape
    bits = np.zeros((k + k % 2, n), np.uint32)
    bits[:k] = bf16_bits(b)
    return bits[0::2] | (bits[1::2] << 16)


def pair_constant(packed: np.ndarray) -> DenseIntOrFPElementsAttr:
    """Packed u32 pairs as a flat i32 constant (the kernel loads them as <16 x i32>)."""
    return from_numpy(packed.astype(np.uint32, copy=False).view(np.int32).reshape(-1), i32)


def round_pair(kb: KernelBuilder, lo: SSAValue, hi: SSAValue | None) -> SSAValue:
    """Two f32 values rounded to bf16 (as `bf16_bits`) and packed into one i32, `lo` in the
    low half; `hi` None is zero."""
    high = _rounded(kb, hi) if hi is not None else None
    low = kb.insert(arith.ShRUIOp(_rounded(kb, lo), kb.constant(16, i32)))
    return low if high is None else kb.insert(arith.OrIOp(high, low))


def _rounded(kb: KernelBuilder, x: SSAValue) -> SSAValue:
    """The bf16 rounding of f32 `x` in the high half of an i32, the low half zero."""
    bits = kb.insert(arith.BitcastOp(x, i32))
    lsb = kb.insert(arith.AndIOp(kb.insert(arith.ShRUIOp(bits, kb.constant(16, i32))),
                                 kb.constant(1, i32)))
    up = kb.insert(arith.AddiOp(bits, kb.insert(arith.AddiOp(lsb, kb.constant(0x7FFF, i32)))))
    quiet = kb.insert(arith.OrIOp(bits, kb.constant(0x400000, i32)))
    nan = kb.insert(arith.CmpfOp(x, x, "uno"))
    chosen = kb.select(nan, quiet, up)
    return kb.insert(arith.AndIOp(chosen, kb.constant(-65536, i32)))


def zero_pairs(kb: KernelBuilder, dst: SSAValue, d0: Index, length: int) -> None:
    """dst[d0 : d0 + length] = 0 on a flat i32 memref (LLVM makes it a memset)."""
    zero = kb.constant(0, i32)
    kb.for_(0, length, lambda i: kb.store(zero, dst, [kb.iadd(d0, i)]))


# ------------------------------------------------------------------------- micro-kernel


class Bf16Pairs:
    """Mixin for a PackedGemm whose K counts bf16 pairs: B vectors are 16 pairs (i32), an A
    value is one pair broadcast to all lanes, the multiply-add is `vdpbf16ps`."""

    def init_pairs(self) -> None:
        self.b_vtype = VectorType(i32, [self.t.vw])

    def a_splat(self, a: SSAValue) -> SSAValue:
        return self.kb.vsplat(a, self.b_vtype)

    def madd(self, a: SSAValue, b: SSAValue, acc: SSAValue) -> SSAValue:
        return self.kb.insert(llvm.CallIntrinsicOp(DPBF16PS, [acc, a, b], [self.vtype]))


def a_pairs_type(op: Operation) -> MemRefType:
    g = shape_of_op(op)
    assert g is not None
    return MemRefType(i32, [g.m, -(-g.k // 2)])


def packed_b_pairs(op: Operation, target: Target) -> list[DenseIntOrFPElementsAttr]:
    """alpha * op(B) as bf16 pairs in `target`'s panels (alpha folded in before rounding)."""
    g, t = shape_of_op(op), tiling_for(target)
    assert g is not None
    value = _b_value(op)
    b = values_in_shape(value, shape_of(value.type))
    b = b.T if g.trans_b else b
    if g.alpha != 1.0:
        b = b * np.float32(g.alpha)
    p = pairs(b)
    return [pair_constant(pack(p, _pair_shape(g), t))]


def _pair_shape(g: GemmShape) -> GemmShape:
    """The GEMM over pairs: K/2 deep, A already laid out [M, K/2] (no transpose)."""
    return GemmShape(g.m, g.n, -(-g.k // 2), False, g.trans_b, 1.0, g.beta, g.c_shape)


class _Bf16DenseGemm(Bf16Pairs, _DenseGemm):
    """MatMul / Gemm by a constant B: A converted to pairs, then the pair GEMM."""

    def __init__(self, op: Operation, kb: KernelBuilder, ins, outs):
        *ins, a_pairs = ins
        super().__init__(op, kb, ins, outs)
        self.init_pairs()
        self.f32_shape = self.g
        self.g = _pair_shape(self.g)
        self.a_f32 = self.a
        self.a = a_pairs

    def convert_a(self) -> None:
        """a_pairs[i, p] = the pair of A[i, 2p], A[i, 2p + 1]; rows split between threads."""
        kb, g = self.kb, self.f32_shape
        full = g.k // 2

        def at(i: Index, k: Index) -> SSAValue:
            return kb.load(self.a_f32, [k, i] if g.trans_a else [i, k])

        def row(i: Index) -> None:
            kb.for_(0, full, lambda p: kb.store(round_pair(
                kb, at(i, kb.imul(p, 2)), at(i, kb.iadd(kb.imul(p, 2), 1))), self.a, [i, p]))
            if g.k % 2:
                kb.store(round_pair(kb, at(i, g.k - 1), None), self.a, [i, full])

        kb.parallel_for(0, g.m, row)

    def build(self) -> None:
        self.convert_a()
        super().build()


def bf16_gemm_kernel(op: Operation, kb: KernelBuilder, ins, outs) -> None:
    """ins: a, b, [c], packed B pairs, A pairs scratch."""
    _Bf16DenseGemm(op, kb, ins, outs).build()


__all__ = [
    "DPBF16PS",
    "PRECISION_ATTR",
    "Bf16Pairs",
    "a_pairs_type",
    "bf16_bits",
    "bf16_gemm_kernel",
    "gemm_eligible",
    "packed_b_pairs",
    "pairs",
    "requested",
    "round_pair",
    "supports_bf16",
    "zero_pairs",
]
