"""How the int8 GEMM (int8_gemm.py) multiplies one k-word of every row of A into its
accumulators: one function per `Int8Tiling.form`, chosen by the target (`STEPS`).

Each step takes the accumulators (`out`, MR x NR/16 vectors of 16 x i32, row-major), one
word of A per row (4 bytes, or an i16 pair of channels) and the 16-word vectors of B's row
of the panel, and returns the updated accumulators:
- AVX512-VNNI: one vpdpbusd per 16 columns and row (~400 GOPS on ResNet-50's convs on Zen 5).
- AVX2: vpmaddubsw + vpmaddwd by ones on the byte words when no weight pair can saturate
  vpmaddubsw's i16 sums (`int8_layout.pairs_fit_i16`); otherwise, to stay exact, the "pairs"
  form: vpmaddwd of A's i16 pairs (widened once, by the copy) by B's i16 pairs, one per 8
  columns and row. Both issue two multiplies per cycle on Zen 3's two multiply pipes, so
  the exact form costs only the extra adds and loads. 6 x 16 tiles (12 ymm accumulators).
- AArch64 with the dot-product extension: `sdot` on A's bytes flipped to s8.
- Elsewhere (x86 without AVX2, NEON without dotprod): plain i32 vector arithmetic
  (`portable_step`, ~8 vector ops per vpdpbusd: 18-49 GOPS) on 4 x 16 tiles.
"""

from __future__ import annotations

from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import DenseArrayBase, IntegerType, VectorType, i8, i32
from xdsl.ir import SSAValue

from onnxc.lowering.graph_to_loops.loops import KernelBuilder

VPDPBUSD = "llvm.x86.avx512.vpdpbusd.512"
SDOT = "llvm.aarch64.neon.sdot.v4i32.v16i8"
PMADDUBSW = "llvm.x86.avx2.pmadd.ub.sw"
PMADDWD = "llvm.x86.avx2.pmadd.wd"
V16I32 = VectorType(i32, [16])
"""An accumulator, and a word of A broadcast (16 words of B)."""
V64I8 = VectorType(i8, [64])
"""The same 512 bits as bytes."""
V8I32 = VectorType(i32, [8])
V16I16 = VectorType(IntegerType(16), [16])
V32I16 = VectorType(IntegerType(16), [32])
V32I8 = VectorType(i8, [32])
V4I32 = VectorType(i32, [4])
V16I8 = VectorType(i8, [16])


def vnni_step(kb: KernelBuilder, out: list[SSAValue], a: list[SSAValue],
              bv: list[SSAValue]) -> list[SSAValue]:
    """acc[r][v] += 4-byte dot products of A's word r with B's 16 words (vpdpbusd)."""
    nv = len(bv)
    bytes_b = [kb.insert(llvm.BitcastOp(b, V64I8)) for b in bv]
    for r, word in enumerate(a):
        av = kb.insert(llvm.BitcastOp(kb.vsplat(word, V16I32), V64I8))
        for v in range(nv):
            out[r * nv + v] = kb.insert(llvm.CallIntrinsicOp(
                VPDPBUSD, [out[r * nv + v], av, bytes_b[v]], [V16I32]))
    return out


def halves(kb: KernelBuilder, x: SSAValue, half: VectorType) -> tuple[SSAValue, ...]:
    """The equal parts of a 512-bit vector that are `half` wide (the operands of the
    AVX2 and NEON intrinsics)."""
    n = half.get_shape()[0]
    total = x.type.get_shape()[0]
    return tuple(kb.insert(llvm.ShuffleVectorOp(
        x, x, DenseArrayBase.from_list(i32, range(lo, lo + n)), half))
        for lo in range(0, total, n))


def joined(kb: KernelBuilder, *parts: SSAValue) -> SSAValue:
    """The <16 x i32> made of 2 or 4 equal parts, in order."""
    while len(parts) > 1:
        n = parts[0].type.get_shape()[0]
        parts = tuple(kb.insert(llvm.ShuffleVectorOp(
            lo, hi, DenseArrayBase.from_list(i32, range(2 * n)),
            VectorType(i32, [2 * n]))) for lo, hi in zip(parts[::2], parts[1::2]))
    return parts[0]


def maddwd(kb: KernelBuilder, a: tuple[SSAValue, SSAValue], b: SSAValue) -> SSAValue:
    """<16 x i32> of i16 pair dot products (vpmaddwd on each half); `a` already split."""
    b_lo, b_hi = halves(kb, kb.insert(llvm.BitcastOp(b, V32I16)), V16I16)
    return joined(kb, *(kb.insert(llvm.CallIntrinsicOp(PMADDWD, [x, y], [V8I32]))
                        for x, y in zip(a, (b_lo, b_hi), strict=True)))


def pairs_step(kb: KernelBuilder, out: list[SSAValue], a: list[SSAValue],
               bv: list[SSAValue]) -> list[SSAValue]:
    """AVX2, exact: A's word is an i16 pair of channels (widened by the copy), broadcast;
    vpmaddwd by B's i16 pairs adds each pair's two products into the i32 lanes."""
    nv = len(bv)
    for r, word in enumerate(a):
        av = halves(kb, kb.insert(llvm.BitcastOp(kb.vsplat(word, V16I32), V32I16)), V16I16)
        for v in range(nv):
            out[r * nv + v] = kb.insert(arith.AddiOp(out[r * nv + v], maddwd(kb, av, bv[v])))
    return out


def sdot_step(kb: KernelBuilder, out: list[SSAValue], a: list[SSAValue],
              bv: list[SSAValue]) -> list[SSAValue]:
    """AArch64 dot product: A's word flipped to s8 (x ^ 0x80, `Int8Tiling.a_offset`) and
    broadcast; `sdot` adds 4 byte products into each i32 lane, one per 4 columns."""
    nv = len(bv)
    flip = kb.constant(-0x7F7F7F80, i32)  # 0x80808080
    b_parts = [halves(kb, kb.insert(llvm.BitcastOp(b, V64I8)), V16I8) for b in bv]
    for r, word in enumerate(a):
        signed = kb.insert(arith.XOrIOp(word, flip))
        av = halves(kb, kb.insert(llvm.BitcastOp(kb.vsplat(signed, V16I32), V64I8)), V16I8)
        for v in range(nv):
            accs = halves(kb, out[r * nv + v], V4I32)
            out[r * nv + v] = joined(kb, *(
                kb.insert(llvm.CallIntrinsicOp(SDOT, [acc, x, y], [V4I32]))
                for acc, x, y in zip(accs, av, b_parts[v], strict=True)))
    return out


def maddubs_step(kb: KernelBuilder, out: list[SSAValue], a: list[SSAValue],
                 bv: list[SSAValue]) -> list[SSAValue]:
    """AVX2 when `pairs_fit_i16`: vpmaddubsw gives the two (u8 A x s8 B) pair sums of
    each word in i16, vpmaddwd by ones adds them into the word's i32 dot product."""
    nv = len(bv)
    one = kb.vsplat(kb.constant(1, IntegerType(16)), V16I16)
    b_halves = [halves(kb, kb.insert(llvm.BitcastOp(b, V64I8)), V32I8) for b in bv]
    for r, word in enumerate(a):
        av = halves(kb, kb.insert(llvm.BitcastOp(kb.vsplat(word, V16I32), V64I8)), V32I8)
        for v in range(nv):
            sums = [kb.insert(llvm.CallIntrinsicOp(PMADDUBSW, [x, y], [V16I16]))
                    for x, y in zip(av, b_halves[v], strict=True)]
            dots = [kb.insert(llvm.CallIntrinsicOp(PMADDWD, [s, one], [V8I32]))
                    for s in sums]
            out[r * nv + v] = kb.insert(arith.AddiOp(out[r * nv + v], joined(kb, *dots)))
    return out


def portable_step(kb: KernelBuilder, out: list[SSAValue], a: list[SSAValue],
                  bv: list[SSAValue]) -> list[SSAValue]:
    """The same with plain i32 vector arithmetic: byte b of every word is isolated by
    shifts (B's sign-extended by an arithmetic shift, A's masked as unsigned), then
    multiplied and added; exact, no saturation, any SIMD target."""
    nv = len(bv)

    def shift(x: SSAValue, op, n: int) -> SSAValue:
        if n == 0:
            return x
        amount = kb.constant(n, i32)
        if isinstance(x.type, VectorType):
            amount = kb.vsplat(amount, V16I32)
        return kb.insert(op(x, amount))

    mask = kb.constant(0xFF, i32)
    for b in range(4):
        column = [shift(shift(v, arith.ShLIOp, 24 - 8 * b), arith.ShRSIOp, 24) for v in bv]
        for r, word in enumerate(a):
            byte = kb.insert(arith.AndIOp(shift(word, arith.ShRUIOp, 8 * b), mask))
            av = kb.vsplat(byte, V16I32)
            for v in range(nv):
                product = kb.insert(arith.MuliOp(av, column[v]))
                out[r * nv + v] = kb.insert(arith.AddiOp(out[r * nv + v], product))
    return out


STEPS = {"vnni": vnni_step, "maddubs": maddubs_step, "pairs": pairs_step, "sdot": sdot_step,
         "portable": portable_step}
"""How one k-word of every row is multiplied into the accumulators, per `Int8Tiling.form`."""
