"""graph_qlinear's output rule on a vector of 16 i32 accumulators, shared by the int8 kernels
(int8_gemm.py, int8_depthwise.py) so that they round and saturate alike.

The rule (qlinear.requantize is its scalar form): an i32 result is the accumulator; a float
result is `acc * scale` (f32, then narrowed); a byte result is
`clamp(round_half_even(acc * scale) + zp, min, max)`. Where the rounded value cannot
overflow i32 (`Clamp`, decided per op from its weights and scales), the bounds are applied
to it as integers and a bound that is the byte type's own is left to the narrowing, which
saturates (AVX-512: vpmaxsd and vpmovusdb, or vpmovsdb, where the f32 clamp took a vmaxps,
a vminps and a vpmovdb; four vectors of a row packed at once: `packed_row`); else as
`round(clamp(real, min - zp, max - zp)) + zp`, exact for any real since the bounds are
integers.
qlinear_conv_add's residual sum (`residual_sum_wide`) continues from the centred integer
q - zp. `sum_form` picks its cheapest form that gives QuantizeLinear's bytes for every pair
of bytes the sum can see (checked at compile time, all 65,536 of them): in fixed point on
i32 where one exists, else scaled in f32, else QuantizeLinear's division.
"""

from __future__ import annotations

import math as pymath
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import arith, llvm, math
from xdsl.dialects.builtin import (
    DenseArrayBase,
    Float32Type,
    IntegerType,
    Signedness,
    UnrealizedConversionCastOp,
    VectorType,
    f32,
    i8,
    i16,
    i32,
)
from xdsl.ir import Attribute, SSAValue

from onnxc.dialects import graph
from onnxc.dialects.dense_data import values_in_shape
from onnxc.dialects.graph_base import int_of, shape_of
from onnxc.dialects.graph_qlinear import (
    QLinearConvAddOp,
    QuantizedProductOp,
    byte_range,
    is_i32,
)
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder
from onnxc.lowering.to_llvm.llvm_ext import FPToSIOp
from onnxc.passes.quant_reference import residual_sum

VW = 16
LRINT = "llvm.lrint.v16i32.v16f32"
I32_LIMIT = 2 ** 31 - 256
"""What a rounded value plus a zero point must stay below for the integer clamp: lrint of
a larger one gives 0x80000000, which would saturate to the wrong end."""


@dataclass(frozen=True)
class Clamp:
    """How a byte result is bounded, decided at compile time (it is in the kernel keys).
    `integer`: after rounding, on i32, where the rounded values provably fit; then `low` /
    `high` say whether that bound is clamped explicitly (else it is the byte type's own and
    the narrowing's saturation applies it). Not `integer`: in f32 before rounding."""

    integer: bool = False
    low: bool = True
    high: bool = True


FLOAT_CLAMP = Clamp()


def _clamp_for(bound: float | None, range_: tuple[int, int], element) -> Clamp:
    """The integer clamp when every real value is within `bound` of zero, else the float one."""
    if bound is None or not bound < I32_LIMIT:
        return FLOAT_CLAMP
    type_lo, type_hi = byte_range(element)
    return Clamp(True, range_[0] != type_lo, range_[1] != type_hi)


def output_clamp(op: QuantizedProductOp) -> Clamp:
    """op's output clamp: integer when |acc * scale| is bounded below I32_LIMIT by
    |acc| <= K * 255 * 255 + max |bias| (centred bytes are at most 255 in magnitude); a bias
    known only at run time leaves the float clamp."""
    el = op.results[0].type.get_element_type()
    if not isinstance(el, IntegerType) or is_i32(el) or op.output_scale is None:
        return FLOAT_CLAMP
    bias = 0
    if op.bias is not None:
        owner = op.bias.owner
        if not isinstance(owner, graph.ConstantOp):
            return FLOAT_CLAMP
        bias = int(np.abs(values_in_shape(owner.value, shape_of(op.bias)).astype(np.int64))
                   .max(initial=0))
    k = pymath.prod(shape_of(op.quantized_operands()[1])) // max(op.channels(), 1)
    scale = max(abs(float(v)) for v in op.output_scale.get_values())
    return _clamp_for((k * 255 * 255 + bias) * scale, op.output_range(), el)


@dataclass(frozen=True)
class OutputRule:
    """A byte result's zero point (i32), its bounds minus the zero point (f32) and, for the
    integer clamp, its bounds (i32): loaded once per kernel (`load_output_rule`)."""

    zero_point: SSAValue
    low: SSAValue
    high: SSAValue
    clamp: Clamp = FLOAT_CLAMP
    low_int: SSAValue | None = None
    high_int: SSAValue | None = None


def load_output_rule(kb: KernelBuilder, zero_point: SSAValue, low: SSAValue, high: SSAValue,
                     clamp: Clamp) -> OutputRule:
    """The rule from its table values (f32: zero point, min - zp, max - zp)."""
    zp = kb.insert(FPToSIOp(zero_point, i32))
    bounds = [None, None]
    if clamp.integer:
        bounds = [kb.insert(arith.AddiOp(kb.insert(FPToSIOp(b, i32)), zp)) for b in (low, high)]
    return OutputRule(zp, low, high, clamp, *bounds)


@dataclass(frozen=True)
class SumRule:
    """qlinear_conv_add's residual sum, loaded once per kernel from its constant table
    (`sum_table`): the form's three factors and its rounding adjustment (f32; whole numbers
    in the fixed form), the addend's zero point (i32) and the sum's rule."""

    form: str
    factors: tuple[SSAValue, SSAValue, SSAValue]
    adjust: SSAValue
    addend_zero_point: SSAValue
    rule: OutputRule


SUM_FORMS = ("fixed", "scaled", "divide")
"""How a residual sum combines the centred conv byte q and the addend byte a, cheapest
first. "fixed": on i32, (q * m0 + a * m1 + c) >> s with c = (y_zp << s) + 2^(s-1) + adjust
- a_zp * m1, factors [m0, m1, s] (m0 / 2^s ~ q_scale / y_scale, m1 / 2^s ~ a_scale /
y_scale); no bytes step through f32 after the conv's. Then in f32, centred a, each product
and sum rounded (no fused multiply-add): "scaled", (q * f0 + a * f1) * f2 with [f0, f1, f2]
= [q_scale / y_scale, a_scale / y_scale, 1] (times 1 is exact) or [q_scale, a_scale, 1 /
y_scale]; "divide", QuantizeLinear's (q * q_scale + a * a_scale) / y_scale. One code shape
per form keeps the convs of one shape on one kernel (`int8_gemm_key`)."""

FIXED_SHIFTS = range(23, 7, -1)
"""Fixed-point shifts tried, most precise first (m0, m1 must stay below 2^24, exact in the
f32 table)."""
FIXED_NUDGE = 6
"""How far m0, m1 and the rounding constant are moved (each in [-N, N]) to match the
reference's f32 rounding at near-ties: QDQ ResNet-50's 15 sums all match at shift 21 or
22, some of them nudged."""
NEAR_TIES = 4096
"""More pairs than this within a nudge's reach of a rounding step are not searched."""


def sum_table(op: QLinearConvAddOp) -> np.ndarray:
    """The kernel's table of op's residual sum: the form's three factors, the addend's zero
    point, the sum's rule (zero point, min and max minus it) and the fixed form's
    adjustment, f32."""
    _, factors, adjust = sum_form(op)
    zp = int_of(op.sum_zero_point)
    return np.asarray([*factors, int_of(op.addend_zero_point), zp,
                       *(bound - zp for bound in op.sum_range()), adjust], np.float32)


def sum_clamp(op: QLinearConvAddOp) -> Clamp:
    """The sum rule's clamp: integer when the form's sums are bounded (the fixed form's
    always are: `sum_form` checked them)."""
    form, factors, _ = sum_form(op)
    el = op.results[0].type.get_element_type()
    if form == "fixed":
        return _clamp_for(0.0, op.sum_range(), el)
    f0, f1, f2 = (abs(f) for f in factors)
    total = 256 * (f0 + f1)
    return _clamp_for(total * f2 if form == "scaled" else total / f2, op.sum_range(), el)


def sum_form(op: QLinearConvAddOp) -> tuple[str, tuple[float, float, float], int]:
    """The first of SUM_FORMS whose bytes equal the op's rule (quant_reference.residual_sum,
    the division) for every conv byte and addend byte the op can see, its factors and
    adjustment; decided once per distinct quantization (`_FORMS`)."""
    q_range, a_range = op.output_range(), byte_range(op.addend.type.get_element_type())
    scales = tuple(float(s) for s in op.sum_scales.get_values())
    key = (scales, q_range, int_of(op.output_zero_point), a_range,
           int_of(op.addend_zero_point), op.sum_range(), int_of(op.sum_zero_point))
    if key not in _FORMS:
        _FORMS[key] = _first_exact_form(op)
    return _FORMS[key]


_FORMS: dict[tuple, tuple[str, tuple[float, float, float], int]] = {}
"""sum_form's decisions by the quantization they depend on (its 65,536-pair check runs once
for all the convs, kernels and compiles that share one)."""


def _first_exact_form(op: QLinearConvAddOp) -> tuple[str, tuple[float, float, float], int]:
    f32_ = np.float32
    q_lo, q_hi = op.output_range()
    a_lo, a_hi = byte_range(op.addend.type.get_element_type())
    q_bytes = np.arange(q_lo, q_hi + 1, dtype=np.float64)[:, None]
    a_bytes = np.arange(a_lo, a_hi + 1, dtype=np.float64)[None, :]
    want = residual_sum(op, q_bytes, a_bytes)
    fixed = _fixed_form(op, q_bytes.astype(np.int64), a_bytes.astype(np.int64), want)
    if fixed is not None:
        return fixed
    # the kernel's centred terms, in f32 as it holds them
    qs = (q_bytes - int_of(op.output_zero_point)).astype(f32_)
    as_ = (a_bytes - int_of(op.addend_zero_point)).astype(f32_)
    s_q, s_a, s_y = (f32_(s) for s in op.sum_scales.get_values())
    y_lo, y_hi = op.sum_range()
    y_zp = int_of(op.sum_zero_point)
    with np.errstate(over="ignore", invalid="ignore"):
        ratios = (f32_(np.float64(s_q) / np.float64(s_y)), f32_(np.float64(s_a) / s_y))
        for factors in ((*ratios, f32_(1)), (s_q, s_a, f32_(1) / s_y)):
            value = (qs * factors[0] + as_ * factors[1]) * factors[2]
            if np.all(np.isfinite(value)) and np.array_equal(
                    np.clip(np.rint(value) + y_zp, y_lo, y_hi), want):
                return "scaled", tuple(float(f) for f in factors), 0
    return "divide", (float(s_q), float(s_a), float(s_y)), 0


def _fixed_form(op: QLinearConvAddOp, q_bytes: np.ndarray, a_bytes: np.ndarray,
                want: np.ndarray) -> tuple[str, tuple[float, float, float], int] | None:
    """The "fixed" form's [m0, m1, s] and adjustment giving `want` for every pair (as the
    kernel computes it: i32, an arithmetic shift), or None. At the most precise shift whose
    sums fit i32, the rounded ratios; where some near-ties differ (the reference rounds its
    products and sum to f32), every nudge of m0, m1 and the constant within FIXED_NUDGE at
    once on the pairs a nudge can move, the smallest that gives them all."""
    s_q, s_a, s_y = (np.float64(np.float32(s)) for s in op.sum_scales.get_values())
    q = q_bytes - int_of(op.output_zero_point)
    a_zp, y_zp = int_of(op.addend_zero_point), int_of(op.sum_zero_point)
    y_lo, y_hi = op.sum_range()
    q_max, a_max = int(np.abs(q).max()), int(np.abs(a_bytes).max())
    # how far a nudge moves a sum: q * d0 + (a - a_zp) * d1 + adjust
    reach = (q_max + int(np.abs(a_bytes - a_zp).max()) + 1) * FIXED_NUDGE

    def constant(m1, s: int, adjust):
        return (y_zp << s) + (1 << (s - 1)) + adjust - a_zp * m1

    for s in FIXED_SHIFTS:
        m0, m1 = round(s_q / s_y * 2 ** s), round(s_a / s_y * 2 ** s)
        if (max(abs(m0), abs(m1)) + FIXED_NUDGE >= 2 ** 24
                or q_max * abs(m0) + a_max * abs(m1) + abs(constant(m1, s, 0)) + reach
                >= I32_LIMIT):
            continue
        t = q * m0 + a_bytes * m1 + constant(m1, s, 0)
        wrong = np.clip(t >> s, y_lo, y_hi) != want
        if not wrong.any():
            return "fixed", (float(m0), float(m1), float(s)), 0
        # the pairs within `reach` of a rounding step: no nudge moves any other one, so
        # every wrong pair must be among them
        near = np.abs(((t + (1 << (s - 1))) & ((1 << s) - 1)) - (1 << (s - 1))) <= reach
        if near.sum() > NEAR_TIES or (wrong & ~near).any():
            return None  # e.g. sums on exact ties (scales in simple ratios)
        rows, cols = np.nonzero(near)
        few_q, few_a, few_want = (q[rows, 0], a_bytes[0, cols], want[rows, cols])
        steps = np.arange(-FIXED_NUDGE, FIXED_NUDGE + 1)
        d = np.stack(np.meshgrid(steps, steps, steps, indexing="ij"), -1).reshape(-1, 3)
        d = d[np.argsort(np.abs(d).sum(1), kind="stable")]
        d0, d1, adjust = (d[:, i:i + 1] for i in range(3))
        few = (few_q * (m0 + d0) + few_a * (m1 + d1) + constant(m1 + d1, s, adjust)) >> s
        fits = np.flatnonzero(np.all(np.clip(few, y_lo, y_hi) == few_want, axis=1))
        for n0, n1, nudge in (tuple(int(v) for v in d[i]) for i in fits[:4]):
            t = q * (m0 + n0) + a_bytes * (m1 + n1) + constant(m1 + n1, s, nudge)
            if np.array_equal(np.clip(t >> s, y_lo, y_hi), want):  # all pairs, to be sure
                return "fixed", (float(m0 + n0), float(m1 + n1), float(s)), nudge
        return None
    return None


def widened_bytes(kb: KernelBuilder, mem: SSAValue, at: list[Index], element) -> SSAValue:
    """16 ui8 / i8 elements of `mem` from `at` as <16 x i32> (zero- or sign-extended)."""
    raw = kb.vload(mem, [kb.idx(i) for i in at], VectorType(element, [VW]))
    raw = kb.insert(UnrealizedConversionCastOp.get([raw], [VectorType(i8, [VW])]))
    unsigned = element.signedness.data == Signedness.UNSIGNED
    return kb.insert((llvm.ZExtOp if unsigned else llvm.SExtOp)(raw, VectorType(i32, [VW])))


def requantize_vector(kb: KernelBuilder, element: Attribute, rule: OutputRule | None,
                      acc: SSAValue, scale: SSAValue | None) -> SSAValue:
    """`acc` (<16 x i32>) as 16 values of the result type `element`; `scale` is <16 x f32>
    (None only for an i32 result), `rule` is needed for a byte result."""
    if is_i32(element):
        return acc
    assert scale is not None
    if not isinstance(element, IntegerType):
        real = _scaled(kb, acc, scale)
        if isinstance(element, Float32Type):
            return real
        return kb.insert(llvm.FPTruncOp(real, VectorType(element, [VW])))
    assert rule is not None
    return narrowed(kb, element, requantized_wide(kb, rule, acc, scale), rule.clamp)


def requantized_wide(kb: KernelBuilder, rule: OutputRule, acc: SSAValue,
                     scale: SSAValue) -> SSAValue:
    """A byte result's 16 values as <16 x i32>, not yet narrowed (`narrowed`,
    `packed_row`)."""
    return _round_clamped(kb, _scaled(kb, acc, scale), rule)


def residual_sum_wide(kb: KernelBuilder, rule: OutputRule, sum_rule: SumRule, acc: SSAValue,
                      scale: SSAValue, addend: SSAValue) -> SSAValue:
    """qlinear_conv_add's result for 16 accumulators `acc` and the addend's 16 values
    (<16 x i32>), not yet narrowed: the conv's byte result, centred (q - zp, never stored),
    combined with the addend by the rule's form (SUM_FORMS), then bounded by the sum's
    rule."""
    vf, v32 = VectorType(f32, [VW]), VectorType(i32, [VW])
    q = _clamped(kb, _scaled(kb, acc, scale), rule)
    if sum_rule.form == "fixed":
        m0, m1, shift = (kb.insert(FPToSIOp(f, i32)) for f in sum_rule.factors)
        total = kb.insert(arith.AddiOp(
            kb.insert(arith.AddiOp(kb.insert(arith.MuliOp(_lrint(kb, q), kb.vsplat(m0, v32))),
                                   kb.insert(arith.MuliOp(addend, kb.vsplat(m1, v32))))),
            kb.vsplat(_fixed_constant(kb, sum_rule, m1, shift), v32)))
        wide = kb.insert(arith.ShRSIOp(total, kb.vsplat(shift, v32)))
        return _int_clamped(kb, wide, sum_rule.rule)
    q = kb.insert(math.RoundEvenOp(q))
    a = kb.insert(llvm.SIToFPOp(
        kb.insert(arith.SubiOp(addend, kb.vsplat(sum_rule.addend_zero_point, v32))), vf))
    q_factor, a_factor, last = (kb.vsplat(f, vf) for f in sum_rule.factors)
    total = kb.insert(arith.AddfOp(kb.insert(arith.MulfOp(q, q_factor)),
                                   kb.insert(arith.MulfOp(a, a_factor))))
    if sum_rule.form == "scaled":
        total = kb.insert(arith.MulfOp(total, last))
    else:
        total = kb.insert(arith.DivfOp(total, last))
    return _round_clamped(kb, total, sum_rule.rule)


def _fixed_constant(kb: KernelBuilder, sum_rule: SumRule, m1: SSAValue,
                    shift: SSAValue) -> SSAValue:
    """(y_zp << s) + (1 << (s - 1)) + adjust - a_zp * m1, scalar i32 (once per kernel)."""
    one = kb.insert(arith.ConstantOp.from_int_and_width(1, i32))
    half = kb.insert(arith.ShLIOp(one, kb.insert(arith.SubiOp(shift, one))))
    zp = kb.insert(arith.ShLIOp(sum_rule.rule.zero_point, shift))
    adjust = kb.insert(FPToSIOp(sum_rule.adjust, i32))
    c = kb.insert(arith.AddiOp(kb.insert(arith.AddiOp(zp, half)), adjust))
    return kb.insert(arith.SubiOp(c, kb.insert(arith.MuliOp(sum_rule.addend_zero_point, m1))))


def _scaled(kb: KernelBuilder, acc: SSAValue, scale: SSAValue) -> SSAValue:
    """f32(acc) * scale, 16 lanes."""
    return kb.insert(arith.MulfOp(kb.insert(llvm.SIToFPOp(acc, VectorType(f32, [VW]))), scale))


def _clamped(kb: KernelBuilder, real: SSAValue, rule: OutputRule) -> SSAValue:
    """clamp(real, low, high), 16 lanes."""
    vf = VectorType(f32, [VW])
    # real is never NaN, so maxnum / minnum: one instruction each (maximumf's NaN and
    # signed-zero handling took 5)
    lo, hi = (kb.vsplat(v, vf) for v in (rule.low, rule.high))
    no_nan = arith.FastMathFlagsAttr([arith.FastMathFlag.NO_NANS])
    return kb.insert(arith.MinnumfOp(kb.insert(arith.MaxnumfOp(real, lo, no_nan)), hi, no_nan))


def _lrint(kb: KernelBuilder, real: SSAValue) -> SSAValue:
    """round_half_even(real) as <16 x i32>: on x86 one vcvtps2dq (lrint, in the default
    rounding mode), elsewhere roundeven then a conversion."""
    v32 = VectorType(i32, [VW])
    if kb.target.arch == "x86_64":
        return kb.insert(llvm.CallIntrinsicOp(LRINT, [real], [v32]))
    return kb.insert(FPToSIOp(kb.insert(math.RoundEvenOp(real)), v32))


def _round_clamped(kb: KernelBuilder, real: SSAValue, rule: OutputRule) -> SSAValue:
    """round_half_even(real) + zero point as <16 x i32>, within the rule's bounds but those
    left to the narrowing (`Clamp`)."""
    v32 = VectorType(i32, [VW])
    if rule.clamp.integer:
        wide = kb.insert(arith.AddiOp(_lrint(kb, real), kb.vsplat(rule.zero_point, v32)))
        return _int_clamped(kb, wide, rule)
    wide = _lrint(kb, _clamped(kb, real, rule))
    return kb.insert(arith.AddiOp(wide, kb.vsplat(rule.zero_point, v32)))


def _int_clamped(kb: KernelBuilder, wide: SSAValue, rule: OutputRule) -> SSAValue:
    """`wide` within the integer clamp's explicit bounds."""
    v32 = VectorType(i32, [VW])
    if rule.clamp.low:
        assert rule.low_int is not None
        wide = kb.insert(arith.MaxSIOp(wide, kb.vsplat(rule.low_int, v32)))
    if rule.clamp.high:
        assert rule.high_int is not None
        wide = kb.insert(arith.MinSIOp(wide, kb.vsplat(rule.high_int, v32)))
    return wide


def narrowed(kb: KernelBuilder, element: Attribute, wide: SSAValue, clamp: Clamp) -> SSAValue:
    """<16 x i32> holding byte values as 16 `element`s; under the integer clamp, saturated
    to the byte type first (LLVM folds this clamp and the truncation into vpmovusdb /
    vpmovsdb, with a vpmaxsd before vpmovusdb, which saturates as unsigned)."""
    v32 = VectorType(i32, [VW])
    if clamp.integer:
        lo, hi = (kb.vsplat(kb.insert(arith.ConstantOp.from_int_and_width(b, i32)), v32)
                  for b in byte_range(element))
        wide = kb.insert(arith.MinSIOp(kb.insert(arith.MaxSIOp(wide, lo)), hi))
    narrow = kb.insert(llvm.TruncOp(wide, VectorType(i8, [VW])))
    # the memref holds ui8 / si8 lanes; LLVM's type of both is i8 (no data moves)
    return kb.insert(UnrealizedConversionCastOp.get([narrow], [VectorType(element, [VW])]))


def packs_rows(target) -> bool:
    """Whether `packed_row` applies: AVX-512BW's saturating packs."""
    return target.arch == "x86_64" and target.has_feature("avx512bw")


PACK_DWORDS = "llvm.x86.avx512.packssdw.512"
PACK_WORDS = {True: "llvm.x86.avx512.packuswb.512", False: "llvm.x86.avx512.packsswb.512"}
TRANSPOSE_4X4 = [4 * (i % 4) + i // 4 for i in range(16)]
"""The packs leave 4 bytes of each vector in each 128-bit lane; dword 4k + l of the row
is vector k's bytes 4l..4l + 3, at dword 4l + k."""


def packed_row(kb: KernelBuilder, element: Attribute, wides: list[SSAValue]) -> SSAValue:
    """Four vectors of byte values (<16 x i32>, `requantized_wide`) as the 64 `element`s of
    a row, saturated to the byte type (`packs_rows`): two vpackssdw, a vpackuswb /
    vpacksswb and a vpermd, where narrowing them one by one took a vpmaxsd and a vpmovusdb
    each, and four stores (QDQ ResNet-50 -0.6%; three vectors, the 7 x 48 tiles', packed the
    same way ran no faster, LLVM splitting their 48-byte row into three permutes). The
    saturation is the byte type's bounds (the clamp's explicit ones are in `wides`)."""
    assert len(wides) == 4
    v32i16, v64i8 = VectorType(i16, [32]), VectorType(i8, [64])
    words = [kb.insert(llvm.CallIntrinsicOp(PACK_DWORDS, wides[i:i + 2], [v32i16]))
             for i in (0, 2)]
    unsigned = element.signedness.data == Signedness.UNSIGNED
    packed = kb.insert(llvm.CallIntrinsicOp(PACK_WORDS[unsigned], words, [v64i8]))
    dwords = kb.insert(llvm.BitcastOp(packed, VectorType(i32, [VW])))
    row = kb.insert(llvm.ShuffleVectorOp(dwords, dwords, DenseArrayBase.from_list(
        i32, TRANSPOSE_4X4), VectorType(i32, [VW])))
    raw = kb.insert(llvm.BitcastOp(row, v64i8))
    return kb.insert(UnrealizedConversionCastOp.get([raw], [VectorType(element, [64])]))
