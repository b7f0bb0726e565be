"""Scalar conversions between f32 and the storage-only float formats: bfloat16, the four
8-bit floats (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ), the exponent-only E8M0 and FLOAT4E2M1.

LLVM has no arithmetic on most of these, so a value is handled as its bits (an integer of the
format's width; convert-*-to-llvm carries these types as such integers) and converted with
integer code on the f32 bit pattern. Results match ml_dtypes (what onnx.reference uses):
round to nearest even; a value beyond the largest finite one becomes the format's infinity
or NaN, or with `saturate` (ONNX Cast's default) the largest finite value; -0 and NaN of the
FNUZ formats, which have neither, become 0 and the single NaN code 0x80. E8M0 (unsigned
powers of two) keeps the f32 exponent, rounded by Cast's `round_mode` as
onnx.numpy_helper.to_float8e8m0 does.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float4E2M1FNType,
    Float8E4M3FNType,
    Float8E4M3FNUZType,
    Float8E5M2FNUZType,
    Float8E5M2Type,
    Float8E8M0FNUType,
    IntegerType,
    f32,
    i32,
)
from xdsl.ir import Attribute, SSAValue

from onnxc.dialects.dense_data import STORAGE_FLOAT_TYPES
from onnxc.lowering.graph_to_loops.loops import KernelBuilder


@dataclass(frozen=True)
class Minifloat:
    """A small float format: sign bit, `exponent` bits, `mantissa` bits, `bias`."""

    exponent: int
    mantissa: int
    bias: int
    max_code: int  # the largest finite magnitude's code (sign bit clear)
    overflow_code: int | None  # code of a too-large magnitude unsaturated (inf or NaN)
    nan_code: int | None  # code of NaN; None: NaN becomes -0 (FLOAT4E2M1, as ml_dtypes)
    negative_zero: bool  # False for FNUZ: the sign of a zero result is dropped


FORMATS: dict[type, Minifloat] = {
    Float8E4M3FNType: Minifloat(4, 3, 7, 0x7E, 0x7F, 0x7F, True),
    Float8E4M3FNUZType: Minifloat(4, 3, 8, 0x7F, 0x80, 0x80, False),
    Float8E5M2Type: Minifloat(5, 2, 15, 0x7B, 0x7C, 0x7E, True),
    Float8E5M2FNUZType: Minifloat(5, 2, 16, 0x7F, 0x80, 0x80, False),
    Float4E2M1FNType: Minifloat(2, 1, 1, 0x7, 0x7, None, True),
}


def is_storage_float(t: Attribute) -> bool:
    return isinstance(t, STORAGE_FLOAT_TYPES)


def _i(kb: KernelBuilder, value: int) -> SSAValue:
    return kb.constant(value, i32)


def _bits_in(kb: KernelBuilder, x: SSAValue) -> SSAValue:
    """The format's bits of `x`, zero-extended to i32."""
    width = x.type.bitwidth
    raw = kb.insert(arith.BitcastOp(x, IntegerType(width)))
    return kb.insert(arith.ExtUIOp(raw, i32))


def _bits_out(kb: KernelBuilder, code: SSAValue, dst: Attribute) -> SSAValue:
    width = dst.bitwidth
    return kb.insert(arith.BitcastOp(kb.insert(arith.TruncIOp(code, IntegerType(width))), dst))


def _and(kb, a, b):
    return kb.insert(arith.AndIOp(a, b))


def _or(kb, a, b):
    return kb.insert(arith.OrIOp(a, b))


def _shr(kb, a, n: int):
    return kb.insert(arith.ShRUIOp(a, _i(kb, n)))


def _shl(kb, a, n: int):
    return kb.insert(arith.ShLIOp(a, _i(kb, n)))


def _eq(kb, a, b) -> SSAValue:
    return kb.insert(arith.CmpiOp(a, b, "eq"))


def to_f32(kb: KernelBuilder, x: SSAValue) -> SSAValue:
    """A storage-format value as f32 (exact: every such value is an f32)."""
    bits = _bits_in(kb, x)
    if isinstance(x.type, BFloat16Type):
        return kb.insert(arith.BitcastOp(_shl(kb, bits, 16), f32))
    if isinstance(x.type, Float8E8M0FNUType):  # 2^(code - 127); code 0 is an f32 subnormal
        power = kb.select(_eq(kb, bits, _i(kb, 0)), _i(kb, 0x400000), _shl(kb, bits, 23))
        value = kb.insert(arith.BitcastOp(power, f32))
        return kb.select(_eq(kb, bits, _i(kb, 0xFF)), kb.constant(float("nan"), f32), value)
    fmt = FORMATS[type(x.type)]
    sign_shift = fmt.exponent + fmt.mantissa
    magnitude = _and(kb, bits, _i(kb, (1 << sign_shift) - 1))
    exponent = _shr(kb, magnitude, fmt.mantissa)
    mantissa = _and(kb, magnitude, _i(kb, (1 << fmt.mantissa) - 1))
    # normal: rebias the exponent, widen the mantissa
    normal_bits = _or(kb, _shl(kb, kb.add(exponent, _i(kb, 127 - fmt.bias)), 23),
                      _shl(kb, mantissa, 23 - fmt.mantissa))
    normal = kb.insert(arith.BitcastOp(normal_bits, f32))
    # subnormal (exponent 0): mantissa * 2^(1 - bias - mantissa bits)
    quantum = kb.constant(2.0 ** (1 - fmt.bias - fmt.mantissa), f32)
    subnormal = kb.mul(kb.insert(arith.UIToFPOp(mantissa, f32)), quantum)
    value = kb.select(_eq(kb, exponent, _i(kb, 0)), subnormal, normal)
    negative = kb.insert(arith.CmpiOp(_shr(kb, bits, sign_shift), _i(kb, 0), "ne"))
    value = kb.select(negative, kb.insert(arith.NegfOp(value)), value)
    nan = kb.constant(float("nan"), f32)
    if fmt.nan_code == 0x80:  # FNUZ: the one NaN is the "negative zero" code
        return kb.select(_eq(kb, bits, _i(kb, 0x80)), nan, value)
    if isinstance(x.type, Float8E5M2Type):  # IEEE-like infinities and NaNs
        inf = kb.insert(math.CopySignOp(kb.constant(float("inf"), f32), value))
        special = kb.select(_eq(kb, mantissa, _i(kb, 0)), inf, nan)
        return kb.select(_eq(kb, exponent, _i(kb, 31)), special, value)
    if fmt.nan_code is not None:  # E4M3FN: S.1111.111 only
        return kb.select(_eq(kb, magnitude, _i(kb, 0x7F)), nan, value)
    return value


def _to_e8m0(kb: KernelBuilder, bits: SSAValue, saturate: bool, round_mode: str) -> SSAValue:
    """The f32 exponent field (inf and NaN: 0xFF), rounded up / down / to nearest by the
    mantissa, never past 0xFE when saturating."""
    exponent = _and(kb, _shr(kb, bits, 23), _i(kb, 0xFF))
    special = _eq(kb, exponent, _i(kb, 0xFF))
    if round_mode == "up":
        bump = kb.insert(arith.CmpiOp(_and(kb, bits, _i(kb, 0x7FFFFF)), _i(kb, 0), "ne"))
    elif round_mode == "nearest":
        def bit(mask: int) -> SSAValue:
            return kb.insert(arith.CmpiOp(_and(kb, bits, _i(kb, mask)), _i(kb, 0), "ne"))

        lsb = kb.insert(arith.CmpiOp(exponent, _i(kb, 0), "ne"))
        ties = _or(kb, _or(kb, bit(0x200000), bit(0x1FFFFF)), lsb)
        bump = _and(kb, bit(0x400000), ties)
    else:
        bump = None
    if bump is not None:
        if saturate:
            at_max = _eq(kb, exponent, _i(kb, 0xFE))
            bump = _and(kb, bump, kb.insert(arith.XOrIOp(at_max, kb.constant(1, at_max.type))))
        exponent = kb.add(exponent, kb.insert(arith.ExtUIOp(bump, i32)))
    return kb.select(special, _i(kb, 0xFF), exponent)


def from_f32(kb: KernelBuilder, x: SSAValue, dst: Attribute, saturate: bool,
             round_mode: str = "up") -> SSAValue:
    """An f32 rounded to the storage format `dst` (nearest even; E8M0 by `round_mode`)."""
    bits = kb.insert(arith.BitcastOp(x, i32))
    if isinstance(dst, Float8E8M0FNUType):
        return _bits_out(kb, _to_e8m0(kb, bits, saturate, round_mode), dst)
    is_nan = kb.insert(arith.CmpfOp(x, x, "uno"))
    if isinstance(dst, BFloat16Type):
        odd = _and(kb, _shr(kb, bits, 16), _i(kb, 1))
        rounded = _shr(kb, kb.add(bits, kb.add(_i(kb, 0x7FFF), odd)), 16)
        quiet = _or(kb, _shr(kb, bits, 16), _i(kb, 0x40))
        return _bits_out(kb, kb.select(is_nan, quiet, rounded), dst)
    fmt = FORMATS[type(dst)]
    sign_shift = fmt.exponent + fmt.mantissa
    sign = _shr(kb, bits, 31)
    abs_bits = _and(kb, bits, _i(kb, 0x7FFFFFFF))
    magnitude = kb.insert(arith.BitcastOp(abs_bits, f32))
    # normal range: round the f32 mantissa to `mantissa` bits (a carry bumps the exponent),
    # then rebias: code = (rounded >> shift) - ((127 - bias) << mantissa)
    shift = 23 - fmt.mantissa
    odd = _and(kb, _shr(kb, abs_bits, shift), _i(kb, 1))
    rounded = kb.add(abs_bits, kb.add(_i(kb, (1 << (shift - 1)) - 1), odd))
    normal = kb.sub(_shr(kb, rounded, shift), _i(kb, (127 - fmt.bias) << fmt.mantissa))
    # below the smallest normal: a count of subnormal quanta (2^mantissa = smallest normal)
    quanta = kb.div(magnitude, kb.constant(2.0 ** (1 - fmt.bias - fmt.mantissa), f32))
    sub = kb.insert(arith.FPToSIOp(kb.insert(math.RoundEvenOp(quanta)), i32))
    tiny = kb.less_than(magnitude, kb.constant(2.0 ** (1 - fmt.bias), f32))
    # huge f32 magnitudes would overflow `normal`'s arithmetic: compare in float first
    limit = kb.constant(2.0 ** (1 << fmt.exponent) * 2, f32)
    huge = kb.insert(arith.CmpfOp(magnitude, limit, "oge"))
    code = kb.select(tiny, sub, normal)
    too_big = _or(kb, huge, kb.insert(arith.CmpiOp(code, _i(kb, fmt.max_code), "sgt")))
    overflow = fmt.max_code if saturate or fmt.overflow_code is None else fmt.overflow_code
    code = kb.select(too_big, _i(kb, overflow), code)
    if fmt.negative_zero:
        code = _or(kb, code, _shl(kb, sign, sign_shift))
        nan_code = fmt.nan_code if fmt.nan_code is not None else 1 << sign_shift
        code = kb.select(is_nan, _or(kb, _i(kb, nan_code), _shl(kb, sign, sign_shift)), code)
    else:
        signed = _or(kb, code, _shl(kb, sign, sign_shift))
        code = kb.select(_eq(kb, code, _i(kb, 0)), code, signed)
        code = kb.select(is_nan, _i(kb, fmt.nan_code), code)
    return _bits_out(kb, code, dst)
