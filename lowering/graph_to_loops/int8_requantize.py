"""graph_qlinear's output rule on a vector of 16 i32 accumulators, shared by the int8 kernels
(int8_gemm.py, int8_depthwise.py) so that they round and saturate alike.

The rule (qlinear.requantize is its scalar form): an i32 result is the accumulator; a float
result is `acc * scale` (f32, then narrowed); a byte result is
`clamp(round_half_even(acc * scale) + zp, min, max)`, computed as
`round(clamp(real, min - zp, max - zp)) + zp` since the bounds are integers.
qlinear_conv_add's residual sum (`residual_sum_vector`) continues from the centred integer
q - zp by the same steps.
"""

from __future__ import annotations

from dataclasses import dataclass

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

from onnxc.dialects.graph_qlinear import is_i32
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder
from onnxc.lowering.to_llvm.llvm_ext import FPToSIOp

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
    """qlinear_conv_add's residual sum, loaded once per kernel from its constant table:
    the scales of the conv's result, the addend and the sum (f32), the addend's zero point
    (i32) and the sum's rule."""

    conv_scale: SSAValue
    addend_scale: SSAValue
    sum_scale: SSAValue
    addend_zero_point: SSAValue
    rule: OutputRule


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
    (<16 x i32>): the conv's byte result, centred (q - zp, never stored), then
    round((f32(q - zp) * conv_scale + f32(a - a_zp) * addend_scale) / sum_scale) by the
    sum's rule: a division as QuantizeLinear's, not a multiply by the reciprocal, which
    rounds differently at ties."""
    vf, v32 = VectorType(f32, [VW]), VectorType(i32, [VW])
    centred = _round_clamped(kb, _scaled(kb, acc, scale), rule, add_zero_point=False)
    a = kb.insert(arith.SubiOp(addend, kb.vsplat(sum_rule.addend_zero_point, v32)))
    terms = [kb.insert(arith.MulfOp(kb.insert(llvm.SIToFPOp(v, vf)), kb.vsplat(s, vf)))
             for v, s in ((centred, sum_rule.conv_scale), (a, sum_rule.addend_scale))]
    total = kb.insert(arith.DivfOp(kb.insert(arith.AddfOp(*terms)),
                                   kb.vsplat(sum_rule.sum_scale, vf)))
    return _narrow(kb, element, _round_clamped(kb, total, sum_rule.rule))


def _scaled(kb: KernelBuilder, acc: SSAValue, scale: SSAValue) -> SSAValue:
    """f32(acc) * scale, 16 lanes."""
    return kb.insert(arith.MulfOp(kb.insert(llvm.SIToFPOp(acc, VectorType(f32, [VW]))), scale))


def _round_clamped(kb: KernelBuilder, real: SSAValue, rule: OutputRule,
                   add_zero_point: bool = True) -> SSAValue:
    """round_half_even(clamp(real, low, high)) + zero point as <16 x i32> (without the zero
    point: the result centred)."""
    vf, v32 = VectorType(f32, [VW]), VectorType(i32, [VW])
    # real is never NaN, so maxnum / minnum: one instruction each (maximumf's NaN and
    # signed-zero handling took 5); on x86 the rounding conversion is one vcvtps2dq (lrint,
    # in the default rounding mode), elsewhere roundeven then a conversion
    lo, hi = (kb.vsplat(v, vf) for v in (rule.low, rule.high))
    no_nan = arith.FastMathFlagsAttr([arith.FastMathFlag.NO_NANS])
    q = kb.insert(arith.MaxnumfOp(real, lo, no_nan))
    q = kb.insert(arith.MinnumfOp(q, hi, no_nan))
    if kb.target.arch == "x86_64":
        wide = kb.insert(llvm.CallIntrinsicOp(LRINT, [q], [v32]))
    else:
        wide = kb.insert(FPToSIOp(kb.insert(math.RoundEvenOp(q)), v32))
    if not add_zero_point:
        return wide
    return kb.insert(arith.AddiOp(wide, kb.vsplat(rule.zero_point, v32)))


def _narrow(kb: KernelBuilder, element: Attribute, wide: SSAValue) -> SSAValue:
    """<16 x i32> holding byte values as 16 `element`s."""
    narrow = kb.insert(llvm.TruncOp(wide, VectorType(i8, [VW])))
    # the memref holds ui8 / si8 lanes; LLVM's type of both is i8 (no data moves)
    return kb.insert(UnrealizedConversionCastOp.get([narrow], [VectorType(element, [VW])]))
