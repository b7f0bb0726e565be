"""convert-arith-to-llvm: `arith` ops on scalars (and 1-D vectors) to the `llvm` dialect.

    %s = arith.addi %a, %b : index        %s = llvm.add %a', %b' : i64
    %m = arith.maximumf %x, %y : f32  ->  %m = llvm.call_intrinsic "llvm.maximum.f32"(%x, %y)
    %i = arith.fptosi %x : f32 to i32     %i = llvmx.fptosi %x : f32 to i32

Ops LLVM has no instruction for map to the intrinsic with the same semantics (`maximumf`
propagates NaN like `llvm.maximum`; `maxnumf` ignores it like `llvm.maxnum`); the rounding
integer divisions are expanded as MLIR's `arith-expand` does. Index operands are carried as
`i64` (see type_conversion.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    UnrealizedConversionCastOp,
    VectorType,
    i1,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from onnxc.lowering.to_llvm import llvm_ext
from onnxc.lowering.to_llvm.type_conversion import (
    ConversionPass,
    call_intrinsic,
    constant,
    convert_type,
    converted,
    element_type,
    replace_converted,
)

_OVERFLOW_BITS = {"nsw": 1, "nuw": 2}


def _overflow(op: Operation) -> IntegerAttr:
    flags = op.properties.get("overflowFlags")
    bits = 0
    if isinstance(flags, arith.IntegerOverflowAttr):
        bits = sum(_OVERFLOW_BITS[str(f)] for f in flags.data)
    return IntegerAttr(bits, 32)


def fastmath(op: Operation) -> llvm.FastMathAttr:
    """The `llvm` fast-math flags of an `arith` or `math` op (its `arith` flags)."""
    flags = op.properties.get("fastmath")
    if isinstance(flags, arith.FastMathFlagsAttr):
        return llvm.FastMathAttr(tuple(flags.data))
    return llvm.FastMathAttr(None)


_Build = Callable[[SSAValue, SSAValue, Operation], Operation]

_BINARY: dict[type[Operation], _Build] = {
    arith.AddiOp: lambda a, b, op: llvm.AddOp(a, b, overflow=_overflow(op)),
    arith.SubiOp: lambda a, b, op: llvm.SubOp(a, b, overflow=_overflow(op)),
    arith.MuliOp: lambda a, b, op: llvm.MulOp(a, b, overflow=_overflow(op)),
    arith.ShLIOp: lambda a, b, op: llvm.ShlOp(a, b, overflow=_overflow(op)),
    arith.DivSIOp: lambda a, b, op: llvm.SDivOp(a, b),
    arith.DivUIOp: lambda a, b, op: llvm.UDivOp(a, b),
    arith.RemSIOp: lambda a, b, op: llvm.SRemOp(a, b),
    arith.RemUIOp: lambda a, b, op: llvm.URemOp(a, b),
    arith.AndIOp: lambda a, b, op: llvm.AndOp(a, b),
    arith.OrIOp: lambda a, b, op: llvm.OrOp(a, b),
    arith.XOrIOp: lambda a, b, op: llvm.XOrOp(a, b),
    arith.ShRSIOp: lambda a, b, op: llvm.AShrOp(a, b),
    arith.ShRUIOp: lambda a, b, op: llvm.LShrOp(a, b),
    arith.AddfOp: lambda a, b, op: llvm.FAddOp(a, b, fastmath(op)),
    arith.SubfOp: lambda a, b, op: llvm.FSubOp(a, b, fastmath(op)),
    arith.MulfOp: lambda a, b, op: llvm.FMulOp(a, b, fastmath(op)),
    arith.DivfOp: lambda a, b, op: llvm.FDivOp(a, b, fastmath(op)),
    arith.MaxnumfOp: lambda a, b, op: llvm.VectorFMaxOp(a, b, fastmath(op)),
    arith.MinnumfOp: lambda a, b, op: llvm.VectorFMinOp(a, b, fastmath(op)),
}

# Binary ops LLVM expresses as overloaded intrinsics.
_INTRINSIC: dict[type[Operation], str] = {
    arith.MaximumfOp: "llvm.maximum",
    arith.MinimumfOp: "llvm.minimum",
    arith.MaxSIOp: "llvm.smax",
    arith.MinSIOp: "llvm.smin",
    arith.MaxUIOp: "llvm.umax",
    arith.MinUIOp: "llvm.umin",
}

_CAST: dict[type[Operation], Callable[[SSAValue, Attribute], Operation]] = {
    arith.ExtFOp: llvm.FPExtOp,
    arith.TruncFOp: llvm.FPTruncOp,
    arith.ExtSIOp: llvm.SExtOp,
    arith.ExtUIOp: llvm.ZExtOp,
    arith.TruncIOp: llvm.TruncOp,
    arith.SIToFPOp: llvm.SIToFPOp,
    arith.UIToFPOp: llvm_ext.UIToFPOp,
    arith.FPToSIOp: llvm_ext.FPToSIOp,
    arith.FPToUIOp: llvm_ext.FPToUIOp,
    arith.BitcastOp: llvm.BitcastOp,
}


class LowerBinaryOp(RewritePattern):
    """Integer and float binary ops with a one-to-one LLVM instruction or intrinsic."""

    def op_types(self) -> tuple[type[Operation], ...]:
        return (*_BINARY, *_INTRINSIC)

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        build = _BINARY.get(type(op))
        intrinsic = _INTRINSIC.get(type(op))
        if build is None and intrinsic is None:
            return
        lhs, rhs = converted(rewriter, op, op.operands)
        if build is not None:
            new = build(lhs, rhs, op)
        else:
            assert intrinsic is not None
            new = call_intrinsic(intrinsic, [lhs, rhs], lhs.type)
        replace_converted(rewriter, op, [new])


class LowerCastOp(RewritePattern):
    """Casts between integer and float widths and kinds."""

    def op_types(self) -> tuple[type[Operation], ...]:
        return tuple(_CAST)

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        build = _CAST.get(type(op))
        if build is None:
            return
        (value,) = converted(rewriter, op, op.operands)
        replace_converted(rewriter, op, [build(value, convert_type(op.results[0].type))])


class LowerIndexCast(RewritePattern):
    """`index_cast` is a sign extension, a truncation or nothing, as `index` is `i64`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.IndexCastOp, rewriter: PatternRewriter, /):
        (value,) = converted(rewriter, op, [op.input])
        source = value.type
        target = convert_type(op.result.type)
        assert isinstance(source, IntegerType) and isinstance(target, IntegerType)
        if source.width.data == target.width.data:
            replace_converted(rewriter, op, [], [value])
        elif source.width.data < target.width.data:
            replace_converted(rewriter, op, [llvm.SExtOp(value, target)])
        else:
            replace_converted(rewriter, op, [llvm.TruncOp(value, target)])


class LowerConstant(RewritePattern):
    """Scalar and dense vector constants; `index` values become `i64`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.ConstantOp, rewriter: PatternRewriter, /):
        value = op.value
        result_type = convert_type(op.result.type)
        if isinstance(value, IntegerAttr):
            assert isinstance(result_type, IntegerType)
            value = IntegerAttr(value.value.data, result_type)
        elif isinstance(value, DenseIntOrFPElementsAttr):
            if not isinstance(result_type, VectorType) or result_type != op.result.type:
                return  # tensors and index vectors have no LLVM constant form here
        elif not isinstance(value, FloatAttr):
            return
        replace_converted(rewriter, op, [llvm.ConstantOp(value, result_type)])


class LowerNegf(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.NegfOp, rewriter: PatternRewriter, /):
        (value,) = converted(rewriter, op, [op.operand])
        replace_converted(rewriter, op, [llvm.FNegOp(value, fastmath(op))])


class LowerCmpi(RewritePattern):
    """arith and LLVM number the ten integer predicates identically (eq=0 ... uge=9)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.CmpiOp, rewriter: PatternRewriter, /):
        lhs, rhs = converted(rewriter, op, [op.lhs, op.rhs])
        predicate = IntegerAttr(op.predicate.value.data, i64)
        replace_converted(rewriter, op, [llvm.ICmpOp(lhs, rhs, predicate)])


class LowerCmpf(RewritePattern):
    """arith and LLVM number the float predicates identically; always-false/true fold."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.CmpfOp, rewriter: PatternRewriter, /):
        predicate = op.predicate.value.data
        if predicate in (0, 15):
            replace_converted(rewriter, op, [constant(int(predicate == 15), i1)])
            return
        lhs, rhs = converted(rewriter, op, [op.lhs, op.rhs])
        replace_converted(rewriter, op, [llvm.FCmpOp(lhs, rhs, IntegerAttr(predicate, i64))])


class LowerSelect(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.SelectOp, rewriter: PatternRewriter, /):
        cond, lhs, rhs = converted(rewriter, op, [op.cond, op.lhs, op.rhs])
        replace_converted(rewriter, op, [llvm.SelectOp(cond, lhs, rhs)])


def _int_constant(value: int, like: SSAValue) -> llvm.ConstantOp:
    t = element_type(like.type)
    assert isinstance(t, IntegerType)
    if isinstance(like.type, VectorType):
        dense = DenseIntOrFPElementsAttr.from_list(like.type, [value] * like.type.element_count())
        return llvm.ConstantOp(dense, like.type)
    return constant(value, t)


class ExpandRoundingDivision(RewritePattern):
    """floordivsi / ceildivsi / ceildivui as truncating division plus a correction.

    floordivsi(a, b) = q - 1 if a != q*b and sign(a) != sign(b) else q    (q = a sdiv b)
    ceildivsi(a, b)  = q + 1 if a != q*b and sign(a) == sign(b) else q
    ceildivui(a, b)  = 0 if a == 0 else (a - 1) udiv b + 1
    """

    def op_types(self) -> tuple[type[Operation], ...]:
        return (arith.FloorDivSIOp, arith.CeilDivSIOp, arith.CeilDivUIOp)

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, arith.FloorDivSIOp | arith.CeilDivSIOp | arith.CeilDivUIOp):
            return
        divisor = _positive_constant(op.operands[1])
        a, b = converted(rewriter, op, op.operands)
        zero = _int_constant(0, a)
        ops: list[Operation] = [zero]
        if divisor is not None and not isinstance(op, arith.CeilDivUIOp):
            # b > 0 known: a sign test moves a by b - 1 before a truncating division
            # (floor: negative a, down; ceil: positive a, up), exact while |a| < 2^(w-1) - b
            # (sizes are checked far below); 5 ops instead of 11 for each of the symbolic
            # sizes' floordivs (3,757 in Mask R-CNN's compile)
            floor = isinstance(op, arith.FloorDivSIOp)
            bias = _int_constant(1 - divisor if floor else divisor - 1, a)
            moves = llvm.ICmpOp(a, zero.result, IntegerAttr(2 if floor else 4, i64))  # slt/sgt
            moved = llvm.AddOp(a, bias.result)
            numerator = llvm.SelectOp(moves.res, moved.res, a)
            ops += [bias, moves, moved, numerator, llvm.SDivOp(numerator.res, b)]
        elif isinstance(op, arith.CeilDivUIOp):
            one = _int_constant(1, a)
            ops.append(one)
            is_zero = llvm.ICmpOp(a, zero.result, IntegerAttr(0, i64))
            minus = llvm.SubOp(a, one.result)
            quotient = llvm.UDivOp(minus.res, b)
            plus = llvm.AddOp(quotient.res, one.result)
            select = llvm.SelectOp(is_zero.res, zero.result, plus.res)
            ops += [is_zero, minus, quotient, plus, select]
        else:
            quotient = llvm.SDivOp(a, b)
            product = llvm.MulOp(quotient.res, b)
            inexact = llvm.ICmpOp(a, product.res, IntegerAttr(1, i64))  # ne
            a_neg = llvm.ICmpOp(a, zero.result, IntegerAttr(2, i64))  # slt
            b_neg = llvm.ICmpOp(b, zero.result, IntegerAttr(2, i64))
            floor = isinstance(op, arith.FloorDivSIOp)
            # floor: signs differ (ne = 1); ceil: signs agree (eq = 0)
            signs = llvm.ICmpOp(a_neg.res, b_neg.res, IntegerAttr(1 if floor else 0, i64))
            adjust = llvm.AndOp(inexact.res, signs.res)
            step = _int_constant(-1 if floor else 1, a)
            moved = llvm.AddOp(quotient.res, step.result)
            select = llvm.SelectOp(adjust.res, moved.res, quotient.res)
            ops += [quotient, product, inexact, a_neg, b_neg, signs, adjust, step, moved, select]
        replace_converted(rewriter, op, ops)


def _positive_constant(v: SSAValue) -> int | None:
    """The value of a scalar integer constant above zero (`arith.constant`, or the
    `llvm.mlir.constant` it has already become, through a conversion cast); else None."""
    owner = v.owner
    if isinstance(owner, UnrealizedConversionCastOp) and len(owner.inputs) == 1:
        owner = owner.inputs[0].owner
    if isinstance(owner, arith.ConstantOp | llvm.ConstantOp) and isinstance(
            owner.value, IntegerAttr):
        value = owner.value.value.data
        return value if value > 0 else None
    return None


ARITH_TO_LLVM_PATTERNS: tuple[RewritePattern, ...] = (
    LowerConstant(),
    LowerBinaryOp(),
    LowerCastOp(),
    LowerIndexCast(),
    LowerNegf(),
    LowerCmpi(),
    LowerCmpf(),
    LowerSelect(),
    ExpandRoundingDivision(),
)


@dataclass(frozen=True)
class ConvertArithToLLVMPass(ConversionPass):
    """Lower every `arith` op on scalars and 1-D vectors to the `llvm` dialect."""

    name = "convert-arith-to-llvm"
    patterns = ARITH_TO_LLVM_PATTERNS

