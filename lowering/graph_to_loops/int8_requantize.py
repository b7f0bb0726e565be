"""graph_qlinear's output rule on a vector of 16 i32 accumulators, shared by the int8 kernels
(int8_gemm.py, int8_depthwise.py) so that they round and saturate alike.

The rule (qlinear.requantize is its scalar form): an i32 result is the accumulator; a float
result is `acc * scale` (f32, then narrowed); a byte result is
`clamp(round_half_even(acc * scale) + zp, min, max)`, computed as
`round(clamp(real, min - zp, max - zp)) + zp` since the bounds are integers.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith, llvm, math
from xdsl.dialects.builtin import (
    Float32Type,
    IntegerType,
    UnrealizedConversionCastOp,
    VectorType,
    f32,
    i8,
    i32,
)
from xdsl.ir import Attribute, SSAValue

from onnxc.dialects.graph_qlinear import is_i32
from onnxc.lowering.graph_to_loops.loops import KernelBuilder
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


def requantize_vector(kb: KernelBuilder, element: Attribute, rule: OutputRule | None,
                      acc: SSAValue, scale: SSAValue | None) -> SSAValue:
    """`acc` (<16 x i32>) as 16 values of the result type `element`; `scale` is <16 x f32>
    (None only for an i32 result), `rule` is needed for a byte result."""
    if is_i32(element):
        return acc
    assert scale is not None
    vf, v32 = VectorType(f32, [VW]), VectorType(i32, [VW])
    real = kb.insert(arith.MulfOp(kb.insert(llvm.SIToFPOp(acc, vf)), scale))
    if not isinstance(element, IntegerType):
        if isinstance(element, Float32Type):
            return real
        return kb.insert(llvm.FPTruncOp(real, VectorType(element, [VW])))
    assert rule is not None
    # real is never NaN, so maxnum / minnum: one instruction each (maximumf's NaN and
    # signed-zero handling took 5); on x86 the rounding conversion is one vcvtps2dq (lrint,
    # in the default rounding mode), elsewhere roundeven then a conversion
    zp = kb.vsplat(rule.zero_point, v32)
    lo, hi = (kb.vsplat(v, vf) for v in (rule.low, rule.high))
    no_nan = arith.FastMathFlagsAttr([arith.FastMathFlag.NO_NANS])
    q = kb.insert(arith.MaxnumfOp(real, lo, no_nan))
    q = kb.insert(arith.MinnumfOp(q, hi, no_nan))
    if kb.target.arch == "x86_64":
        wide = kb.insert(llvm.CallIntrinsicOp(LRINT, [q], [v32]))
    else:
        wide = kb.insert(FPToSIOp(kb.insert(math.RoundEvenOp(q)), v32))
    wide = kb.insert(arith.AddiOp(wide, zp))
    narrow = kb.insert(llvm.TruncOp(wide, VectorType(i8, [VW])))
    # the memref holds ui8 / si8 lanes; LLVM's type of both is i8 (no data moves)
    return kb.insert(UnrealizedConversionCastOp.get([narrow], [VectorType(element, [VW])]))
