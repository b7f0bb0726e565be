"""convert-math-to-llvm: `math` ops to LLVM intrinsics, or to libm where LLVM has none.

f32 `math.exp`, `math.erf` and `math.tanh` (scalars or vectors) are expanded inline into
polynomial code (polynomial.py) instead, since a libm call keeps its loop scalar;
`convert-math-to-llvm{polynomials=false}` keeps the intrinsic / libm forms below.

    %e = math.exp %x : f32     ->  %e = llvm.intr.exp(%x) : (f32) -> f32
    %t = math.tanh %x : f32    ->  %t = llvm.call_intrinsic "llvm.tanh.f32"(%x) : (f32) -> f32
    %r = math.erf %x : f32     ->  %r = llvm.call @erff(%x) : (f32) -> f32
                                   (plus `llvm.func @erff(f32) -> f32` declared once)

LLVM expands an intrinsic the target cannot do inline into a libm call as well; MCJIT
resolves `expf`, `tanhf`, `erff`, ... from the process, which always has libm loaded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects import llvm, math
from xdsl.dialects.builtin import (
    Float32Type,
    Float64Type,
    FloatAttr,
    ModuleOp,
    SymbolRefAttr,
    VectorType,
    i1,
)
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint
from xdsl.traits import SymbolTable

from onnxc.errors import LoweringError
from onnxc.lowering.to_llvm import polynomial
from onnxc.lowering.to_llvm.arith import fastmath
from onnxc.lowering.to_llvm.type_conversion import (
    ConversionPass,
    call_intrinsic,
    constant,
    converted,
    replace_converted,
)

# Ops with a dedicated xDSL `llvm.intr.*` op.
_LLVM_OP: dict[type[Operation], Callable[[list[SSAValue], llvm.FastMathAttr], Operation]] = {
    math.ExpOp: lambda a, fm: llvm.FExpOp(a[0], fm),
    math.Exp2Op: lambda a, fm: llvm.FExp2Op(a[0], fm),
    math.LogOp: lambda a, fm: llvm.FLogOp(a[0], fm),
    math.Log2Op: lambda a, fm: llvm.FLog2Op(a[0], fm),
    math.SqrtOp: lambda a, fm: llvm.FSqrtOp(a[0], fm),
    math.AbsFOp: lambda a, fm: llvm.FAbsOp(a[0], a[0].type, fm),
    math.FloorOp: lambda a, fm: llvm.FFloorOp(a[0], fm),
    math.CeilOp: lambda a, fm: llvm.FCeilOp(a[0], fm),
    math.SinOp: lambda a, fm: llvm.FSinOp(a[0], fm),
    math.CosOp: lambda a, fm: llvm.FCosOp(a[0], fm),
    math.PowFOp: lambda a, fm: llvm.FPowOp(a[0], a[1], fm),
    math.CopySignOp: lambda a, fm: llvm.FCopySignOp(a[0], a[1], fm),
    math.FmaOp: lambda a, fm: llvm.FMAOp(a[0], a[1], a[2], fm),
}

# Ops whose LLVM intrinsic xDSL has no op for (reached through `llvm.call_intrinsic`).
_INTRINSIC: dict[type[Operation], str] = {
    math.TanhOp: "llvm.tanh",
    math.TanOp: "llvm.tan",
    math.SinhOp: "llvm.sinh",
    math.CoshOp: "llvm.cosh",
    math.AsinOp: "llvm.asin",
    math.AcosOp: "llvm.acos",
    math.AtanOp: "llvm.atan",
    math.Atan2Op: "llvm.atan2",
    math.Log10Op: "llvm.log10",
    math.RoundOp: "llvm.round",
    math.RoundEvenOp: "llvm.roundeven",
    math.TruncOp: "llvm.trunc",
    math.CtPopOp: "llvm.ctpop",
}

# Integer intrinsics with a trailing `i1 false` flag (poison on INT_MIN / zero input: no).
_INTRINSIC_WITH_FLAG: dict[type[Operation], str] = {
    math.AbsIOp: "llvm.abs",
    math.CountLeadingZerosOp: "llvm.ctlz",
    math.CountTrailingZerosOp: "llvm.cttz",
}

# Ops with neither: the C library function, by (f32 name, f64 name).
_LIBM: dict[type[Operation], tuple[str, str]] = {
    math.ErfOp: ("erff", "erf"),
    math.CbrtOp: ("cbrtf", "cbrt"),
    math.Log1pOp: ("log1pf", "log1p"),
    math.ExpM1Op: ("expm1f", "expm1"),
    math.AsinhOp: ("asinhf", "asinh"),
    math.AcoshOp: ("acoshf", "acosh"),
    math.AtanhOp: ("atanhf", "atanh"),
}


class LowerToIntrinsic(RewritePattern):
    """Ops with an LLVM intrinsic of the same semantics."""

    def op_types(self) -> tuple[type[Operation], ...]:
        return (*_LLVM_OP, *_INTRINSIC, *_INTRINSIC_WITH_FLAG)

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        kind = type(op)
        if kind in _LLVM_OP:
            args = converted(rewriter, op, op.operands)
            replace_converted(rewriter, op, [_LLVM_OP[kind](args, fastmath(op))])
        elif kind in _INTRINSIC:
            args = converted(rewriter, op, op.operands)
            new = call_intrinsic(_INTRINSIC[kind], args, op.results[0].type)
            replace_converted(rewriter, op, [new])
        elif kind in _INTRINSIC_WITH_FLAG:
            args = converted(rewriter, op, op.operands)
            flag = constant(0, i1)
            new = call_intrinsic(_INTRINSIC_WITH_FLAG[kind], [*args, flag.result], args[0].type)
            replace_converted(rewriter, op, [flag, new])


_EXPANSIONS = {
    math.ExpOp: polynomial.expand_exp,
    math.ErfOp: polynomial.expand_erf,
    math.TanhOp: polynomial.expand_tanh,
}


class ExpandPolynomial(RewritePattern):
    """f32 exp / erf / tanh as inline, vectorizable arithmetic (see polynomial.py)."""

    def op_types(self) -> tuple[type[Operation], ...]:
        return tuple(_EXPANSIONS)

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        expand = _EXPANSIONS.get(type(op))
        if expand is None or not polynomial.is_f32(op.results[0].type):
            return
        (x,) = converted(rewriter, op, op.operands)
        ops, result = expand(x)
        replace_converted(rewriter, op, ops, [result])


class LowerRsqrt(RewritePattern):
    """rsqrt(x) = 1 / sqrt(x); LLVM turns it into a reciprocal estimate only under fastmath."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: math.RsqrtOp, rewriter: PatternRewriter, /):
        (x,) = converted(rewriter, op, [op.operand])
        if isinstance(x.type, VectorType):
            raise LoweringError(f"math.rsqrt on vectors is not supported ({x.type})")
        fm = fastmath(op)
        one = llvm.ConstantOp(FloatAttr(1.0, x.type), x.type)
        sqrt = llvm.FSqrtOp(x, fm)
        replace_converted(rewriter, op, [one, sqrt, llvm.FDivOp(one.result, sqrt.res, fm)])


def _module_of(op: Operation) -> ModuleOp:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, ModuleOp):
        parent = parent.parent_op()
    if parent is None:
        raise LoweringError(f"'{op.name}' is not inside a module")
    return parent


def declare_external(
    rewriter: PatternRewriter, anchor: Operation, name: str, function_type: llvm.LLVMFunctionType
) -> None:
    """Declare the external `llvm.func @name` in `anchor`'s module unless already there."""
    module = _module_of(anchor)
    existing = SymbolTable.lookup_symbol(module, name)
    if existing is None:
        decl = llvm.FuncOp(name, function_type, linkage=llvm.LinkageAttr("external"))
        rewriter.insert(decl, InsertPoint.at_start(module.body.block))
    elif not isinstance(existing, llvm.FuncOp) or existing.function_type != function_type:
        raise LoweringError(f"symbol @{name} is needed as {function_type} but is taken")


class LowerToLibmCall(RewritePattern):
    """Ops LLVM has no intrinsic for call the C library (scalar f32 and f64 only)."""

    def op_types(self) -> tuple[type[Operation], ...]:
        return tuple(_LIBM)

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        names = _LIBM.get(type(op))
        if names is None:
            return
        (x,) = converted(rewriter, op, op.operands)
        if isinstance(x.type, Float32Type):
            name = names[0]
        elif isinstance(x.type, Float64Type):
            name = names[1]
        else:
            raise LoweringError(f"'{op.name}' on {x.type} has no libm function (f32/f64 only)")
        declare_external(rewriter, op, name, llvm.LLVMFunctionType([x.type], x.type))
        call = llvm.CallOp(SymbolRefAttr(name), x, return_type=x.type)
        replace_converted(rewriter, op, [call])


MATH_TO_LLVM_PATTERNS: tuple[RewritePattern, ...] = (
    LowerToIntrinsic(),
    LowerRsqrt(),
    LowerToLibmCall(),
)


def math_patterns(polynomials: bool) -> tuple[RewritePattern, ...]:
    """MATH_TO_LLVM_PATTERNS, after the inline expansion of f32 exp / erf / tanh when
    `polynomials`."""
    expand = (ExpandPolynomial(),) if polynomials else ()
    return (*expand, *MATH_TO_LLVM_PATTERNS)


@dataclass(frozen=True)
class ConvertMathToLLVMPass(ConversionPass):
    """Lower `math` ops to LLVM intrinsics and libm calls."""

    name = "convert-math-to-llvm"

    polynomials: bool = True
    """Expand f32 exp / erf / tanh inline (vectorizable) rather than call LLVM / libm."""

    def rewrite_patterns(self) -> tuple[RewritePattern, ...]:
        return math_patterns(self.polynomials)
