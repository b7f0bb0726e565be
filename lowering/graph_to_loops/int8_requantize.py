"""graph_qlinear's output rule on a vector of 16 i32 accumulators, shared by the int8 kernels
(int8_gemm.py, int8_depthwise.py) so that they round and saturate alike.

The rule (qlinear.requantize is its scalar form): an i32 result is the accumulator; a float
result is `acc * scale` (f32, then narrowed); a byte result is
`clamp(round_half_even(acc * scale) + zp, min, max)`, computed as
`round(clamp(real, min - zp, max - zp)) + zp` since the bounds are integers.
qlinear_conv_add's residual sum (`residual_sum_vector`) continues from the centred integer
q - zp by the same steps. Its division by the sum's scale is the one slow instruction of
that epilogue; `sum_form` replaces it by multiplies where that gives the same bytes for
every pair of bytes the sum can see (checked at compile time, all 65,536 of them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.dialects import arith, llvm, math
from xdsl.dialects.builtin import (
    Float32Type,
    IntegerType,
    Signedness,
    UnrealizedConversionCastOp,
    VectorType,
    f32,
    i8,
    i32,
)
from xdsl.ir import Attribute, SSAValue

from onnxc.dialects.graph_base import int_of
from onnxc.dialects.graph_qlinear import QLinearConvAddOp, byte_range, is_i32
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder
from onnxc.lowering.to_llvm.llvm_ext import FPToSIOp
from onnxc.passes.quant_reference import residual_sum

VW = 16
LRINT = "llvm.lrint.v16i32.v16f32"


@dataclass(frozen=True)
class OutputRule:
    """A byte result's zero point (i32) and its bounds minus the zero point (f32), loaded
    once per kernel from its constant table."""

    zero_point: SSAValue
    low: SSAValue
    high: SSAValue


@dataclass(frozen=True)
class SumRule:
    """qlinear_conv_add's residual sum, loaded once per kernel from its constant table
    (`sum_table`): the three factors of its `form` (f32), the addend's zero point (i32)
    and the sum's rule."""

    form: str
    factors: tuple[SSAValue, SSAValue, SSAValue]
    addend_zero_point: SSAValue
    rule: OutputRule


SUM_FORMS = ("scaled", "divide")
"""How a residual sum scales its two centred terms q and a into the sum's units, cheapest
first: (q * f0 + a * f1) * f2 or (q * f0 + a * f1) / f2, each product and sum rounded to f32
(no fused multiply-add). The factors [f0, f1, f2] in the order tried:
[q_scale / y_scale, a_scale / y_scale, 1] (times 1 is exact), [q_scale, a_scale,
1 / y_scale], and QuantizeLinear's division [q_scale, a_scale, y_scale]. One code shape for
the first two keeps the convs of one shape on one kernel (`int8_gemm_key`)."""


def sum_table(op: QLinearConvAddOp) -> np.ndarray:
    """The kernel's table of op's residual sum: the form's three factors, the addend's zero
    point, then the sum's rule (zero point, min and max minus it), f32."""
    _, factors = sum_form(op)
    zp = int_of(op.sum_zero_point)
    return np.asarray([*factors, int_of(op.addend_zero_point), zp,
                       *(bound - zp for bound in op.sum_range())], np.float32)


def sum_form(op: QLinearConvAddOp) -> tuple[str, tuple[float, float, float]]:
    """The first of SUM_FORMS whose bytes equal the op's rule (quant_reference.residual_sum,
    the division) for every conv byte and addend byte the op can see, and its factors;
    decided once per distinct quantization (`_FORMS`)."""
    q_range, a_range = op.output_range(), byte_range(op.addend.type.get_element_type())
    scales = tuple(float(s) for s in op.sum_scales.get_values())
    key = (scales, q_range, int_of(op.output_zero_point), a_range,
           int_of(op.addend_zero_point), op.sum_range(), int_of(op.sum_zero_point))
    if key not in _FORMS:
        _FORMS[key] = _first_exact_form(op)
    return _FORMS[key]


_FORMS: dict[tuple, tuple[str, tuple[float, float, float]]] = {}
"""sum_form's decisions by the quantization they depend on (its 65,536-pair check runs once
for all the convs, kernels and compiles that share one)."""


def _first_exact_form(op: QLinearConvAddOp) -> tuple[str, tuple[float, float, float]]:
    f32_ = np.float32
    q_lo, q_hi = op.output_range()
    a_lo, a_hi = byte_range(op.addend.type.get_element_type())
    q_bytes = np.arange(q_lo, q_hi + 1, dtype=np.float64)[:, None]
    a_bytes = np.arange(a_lo, a_hi + 1, dtype=np.float64)[None, :]
    want = residual_sum(op, q_bytes, a_bytes)
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
                return "scaled", tuple(float(f) for f in factors)
    return "divide", (float(s_q), float(s_a), float(s_y))


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
    real = _scaled(kb, acc, scale)
    if not isinstance(element, IntegerType):
        if isinstance(element, Float32Type):
            return real
        return kb.insert(llvm.FPTruncOp(real, VectorType(element, [VW])))
    assert rule is not None
    return _narrow(kb, element, _round_clamped(kb, real, rule))


def residual_sum_vector(kb: KernelBuilder, element: Attribute, rule: OutputRule,
                        sum_rule: SumRule, acc: SSAValue, scale: SSAValue,
                        addend: SSAValue) -> SSAValue:
    """qlinear_conv_add's result for 16 accumulators `acc` and the addend's 16 values
    (<16 x i32>): the conv's byte result, centred (q - zp, never stored, rounded to a whole
    f32 in place), and the centred addend a - a_zp scaled by the rule's form (SUM_FORMS),
    then rounded by the sum's rule."""
    vf, v32 = VectorType(f32, [VW]), VectorType(i32, [VW])
    q = kb.insert(math.RoundEvenOp(_clamped(kb, _scaled(kb, acc, scale), rule)))
    a = kb.insert(llvm.SIToFPOp(
        kb.insert(arith.SubiOp(addend, kb.vsplat(sum_rule.addend_zero_point, v32))), vf))
    q_factor, a_factor, last = (kb.vsplat(f, vf) for f in sum_rule.factors)
    total = kb.insert(arith.AddfOp(kb.insert(arith.MulfOp(q, q_factor)),
                                   kb.insert(arith.MulfOp(a, a_factor))))
    if sum_rule.form == "scaled":
        total = kb.insert(arith.MulfOp(total, last))
    else:
        total = kb.insert(arith.DivfOp(total, last))
    return _narrow(kb, element, _round_clamped(kb, total, sum_rule.rule))


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


def _round_clamped(kb: KernelBuilder, real: SSAValue, rule: OutputRule) -> SSAValue:
    """round_half_even(clamp(real, low, high)) + zero point as <16 x i32>."""
    v32 = VectorType(i32, [VW])
    q = _clamped(kb, real, rule)
    # on x86 the rounding conversion is one vcvtps2dq (lrint, in the default rounding
    # mode), elsewhere roundeven then a conversion
    if kb.target.arch == "x86_64":
        wide = kb.insert(llvm.CallIntrinsicOp(LRINT, [q], [v32]))
    else:
        wide = kb.insert(FPToSIOp(kb.insert(math.RoundEvenOp(q)), v32))
    return kb.insert(arith.AddiOp(wide, kb.vsplat(rule.zero_point, v32)))


def _narrow(kb: KernelBuilder, element: Attribute, wide: SSAValue) -> SSAValue:
    """<16 x i32> holding byte values as 16 `element`s."""
    narrow = kb.insert(llvm.TruncOp(wide, VectorType(i8, [VW])))
    # the memref holds ui8 / si8 lanes; LLVM's type of both is i8 (no data moves)
    return kb.insert(UnrealizedConversionCastOp.get([narrow], [VectorType(element, [VW])]))
