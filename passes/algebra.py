"""Algebra: the algebraic rewrites of the catalog.

algebraic-identities, reassociate-constants, distribute, strength-reduce and
broadcast-simplify only fire when the rewritten value keeps its exact type (a constant that
broadcasts x to a larger shape is not neutral) and, for floats, when the rewrite gives the
IEEE result for every -0.0, NaN and +-inf input too:
- x + 0 is not x (-0.0 + 0.0 = +0.0): only x + (-0.0) and x - (+0.0) are dropped;
- x * 0 is not 0 (inf * 0 is NaN), exp(log x) is not x for x < 0 nor for x = -0.0;
- pow(x, 0.5) is not sqrt(x) for x = -0.0 or -inf (+0 and +inf, where sqrt gives -0, NaN);
- a*x + a*y is not a*(x + y) for a < 0 (x = +0, y = -0 gives +0, the factored form -0).
Rewrites that merge or invert constants change rounding (one rounding instead of two, as
every fusion that folds constants does); they fire only when the folded constant is as
finite and as nonzero as the ones it replaces, so no new overflow or underflow comes from it.

`cse` (merging ops of the same kind, properties and operands) is in passes/cse.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import TensorType, i1
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from onnxc.dialects import graph
from onnxc.dialects import graph_shapes as shapes
from onnxc.dialects.dense_data import from_numpy
from onnxc.dialects.graph import is_symbolic, shape_of
from onnxc.passes.base import GraphPatternPass
from onnxc.passes.constants import (
    constant_value,
    element_type,
    insert_constant,
    is_float_tensor,
    is_ones,
    numpy_dtype,
    scalar,
    single_use,
)
from onnxc.passes.rewrite_utils import rebuild, with_shape

# --------------------------------------------------------------------------- helpers


def _same_type(a: SSAValue, b: SSAValue) -> bool:
    return a.type == b.type


def _all_equal(array: np.ndarray | None, value: float) -> bool:
    return array is not None and array.size > 0 and bool(np.all(array == value))


def _all_zero(array: np.ndarray | None, negative: bool) -> bool:
    """Every element is -0.0 (`negative`) or +0.0; for integers, every element is 0."""
    if not _all_equal(array, 0):
        return False
    return array.dtype.kind != "f" or bool(np.all(np.signbit(array) == negative))


def _forward(rewriter: PatternRewriter, op: Operation, value: SSAValue) -> None:
    """Replace `op`'s single result by `value` (same type), erasing `op`."""
    rewriter.replace(op, [], [value])


def _const_operand(op: Operation) -> tuple[int, np.ndarray] | None:
    """(index, array) of the one constant operand of a binary op (the rhs if both are)."""
    for i in (1, 0):
        array = constant_value(op.operands[i])
        if array is not None:
            return i, array
    return None


# --------------------------------------------------------------------------- identities


class NeutralOperand(RewritePattern):
    """x+0, 0+x, x-0, x*1, 1*x, x/1, x**1 -> x, when x already has the result's type (the
    constant does not broadcast x to a larger shape); for floats the zero of an add must be
    -0.0 and that of a sub +0.0 (x + 0.0 and x - (-0.0) turn -0.0 into +0.0). x*0 -> 0
    only for integers (for floats it is wrong for inf and NaN)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.BinaryElementwiseOp, rewriter: PatternRewriter):
        commutative = isinstance(op, (graph.AddOp, graph.MulOp))
        for i in ((1, 0) if commutative else (1,)):
            c = constant_value(op.operands[i])
            x = op.operands[1 - i]
            if c is None:
                continue
            if (isinstance(op, graph.MulOp) and _all_equal(c, 0) and not is_float_tensor(x)
                    and not is_symbolic(op.output)):  # zeros of a run-time size: no constant
                zeros = np.zeros(shape_of(op.output), numpy_dtype(element_type(x)))
                rewriter.replace(op, graph.ConstantOp(from_numpy(zeros, element_type(x))))
                return
            if _is_neutral(op, c) and _same_type(x, op.output):
                _forward(rewriter, op, x)
                return


def _is_neutral(op: graph.BinaryElementwiseOp, c: np.ndarray) -> bool:
    """x op c == x for every x, -0.0 included (the only zero x + z keeps -0.0 with is -0.0)."""
    if isinstance(op, graph.AddOp):
        return _all_zero(c, negative=True)
    if isinstance(op, graph.SubOp):
        return _all_zero(c, negative=False)
    return isinstance(op, (graph.MulOp, graph.DivOp, graph.PowOp)) and _all_equal(c, 1)


class DoubleNegation(RewritePattern):
    """neg(neg(x)) -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.NegOp, rewriter: PatternRewriter):
        inner = op.input.owner
        if isinstance(inner, graph.NegOp):
            _forward(rewriter, op, inner.input)


class IdempotentUnary(RewritePattern):
    """relu(relu(x)) -> relu(x), abs(abs(x)) -> abs(x)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.UnaryElementwiseOp, rewriter: PatternRewriter):
        if type(op) in (graph.ReluOp, graph.AbsOp) and type(op.input.owner) is type(op):
            _forward(rewriter, op, op.input)


class SelfMinMax(RewritePattern):
    """max(x, x, ...) and min(x, x, ...) -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.VariadicElementwiseOp, rewriter: PatternRewriter):
        if not isinstance(op, (graph.MaxOp, graph.MinOp)) or len(op.inputs) < 2:
            return
        first = op.inputs[0]
        if all(v == first for v in op.inputs) and _same_type(first, op.output):
            _forward(rewriter, op, first)


# --------------------------------------------------------------------------- reassociation


class ConstantToRhs(RewritePattern):
    """c + x -> x + c and c * x -> x * c: constants on one side, so folds can meet them."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.BinaryElementwiseOp, rewriter: PatternRewriter):
        if not isinstance(op, (graph.AddOp, graph.MulOp)):
            return
        if constant_value(op.lhs) is None or constant_value(op.rhs) is not None:
            return
        rewriter.replace(op, type(op)(operands=[op.rhs, op.lhs], result_types=[op.output.type]))


class MergeConstantOperands(RewritePattern):
    """(x + c1) + c2 -> x + (c1 + c2) and (x * c1) * c2 -> x * (c1 * c2), the inner result
    having no other user; the folded constant is computed in the element type. Float
    constants merge only when the result does not overflow (a finite c1, c2 giving inf) or,
    for products, underflow to zero: x * 1e30 * 1e30 is finite for x = 1e-40, x * inf is
    not."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.BinaryElementwiseOp, rewriter: PatternRewriter):
        if not isinstance(op, (graph.AddOp, graph.MulOp)):
            return
        c2 = constant_value(op.rhs)
        inner = op.lhs.owner
        if c2 is None or type(inner) is not type(op) or not single_use(op.lhs):
            return
        c1 = constant_value(inner.rhs)
        if c1 is None or constant_value(inner.lhs) is not None:
            return
        with np.errstate(all="ignore"):  # integers wrap as the kernels do; floats: below
            folded = (np.add if isinstance(op, graph.AddOp) else np.multiply)(c1, c2)
        if shapes.broadcast_shapes(shape_of(inner.lhs), folded.shape) != shape_of(op.output):
            return
        if folded.dtype.kind == "f" and not _merge_keeps_range(op, c1, c2, folded):
            return
        c = insert_constant(rewriter, folded, element_type(op.output), op)
        rewriter.replace(op, type(op)(operands=[inner.lhs, c], result_types=[op.output.type]))


def _merge_keeps_range(op: graph.BinaryElementwiseOp, c1: np.ndarray, c2: np.ndarray,
                       folded: np.ndarray) -> bool:
    """No element of the folded float constant overflowed (both operands finite, result
    not) or, for a product, underflowed to zero (both operands nonzero, result zero)."""
    with np.errstate(all="ignore"):
        finite = np.isfinite(c1) & np.isfinite(c2)
        if np.any(finite & ~np.isfinite(folded)):
            return False
        if isinstance(op, graph.MulOp):
            return not np.any((c1 != 0) & (c2 != 0) & (folded == 0))
    return True


# --------------------------------------------------------------------------- distribution


def _factors(v: SSAValue) -> tuple[SSAValue, SSAValue] | None:
    mul = v.owner
    if isinstance(mul, graph.MulOp) and single_use(v):
        return mul.lhs, mul.rhs
    return None


class FactorCommonMultiplier(RewritePattern):
    """a*x + a*y -> a*(x+y) (and a*x - a*y -> a*(x-y)): one multiply fewer. Fires when
    x and y already have the result's shape, so the new add does no more work than the
    old one. For floats `a` must be a constant that is finite and > 0 everywhere: with
    a = -1, x = +0, y = -0 the sum of products is +0 but the product of the sum -0, and
    with a run-time `a` nothing rules that out (integers wrap: any `a` is exact)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.BinaryElementwiseOp, rewriter: PatternRewriter):
        if not isinstance(op, (graph.AddOp, graph.SubOp)):
            return
        left, right = _factors(op.lhs), _factors(op.rhs)
        if left is None or right is None or op.lhs == op.rhs:
            return
        out = shape_of(op.output)
        for a in dict.fromkeys(left):
            if a not in right:
                continue
            x = left[1] if left[0] == a else left[0]
            y = right[1] if right[0] == a else right[0]
            if shape_of(x) != out or shape_of(y) != out:
                continue
            if is_float_tensor(a) and not _positive_finite_constant(a):
                continue
            inner = type(op)(operands=[x, y], result_types=[op.output.type])
            rewriter.insert(inner, InsertPoint.before(op))
            rewriter.replace(op, graph.MulOp(operands=[a, inner.output],
                                                result_types=[op.output.type]))
            return


def _positive_finite_constant(v: SSAValue) -> bool:
    c = constant_value(v)
    return c is not None and c.size > 0 and bool(np.all(np.isfinite(c) & (c > 0)))


# --------------------------------------------------------------------------- strength reduction


def _scalar_exponent(op: graph.PowOp) -> float | None:
    return scalar(constant_value(op.rhs))


class DivByConstantToMul(RewritePattern):
    """x / c -> x * (1 / c) for a float constant c that is finite and nonzero everywhere and
    whose inverse, in the element type, is a finite normal number: then -0.0, inf and NaN
    inputs give what the division gives (1 / c of a subnormal c overflows to inf, and that
    of a huge c loses precision as a subnormal)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.DivOp, rewriter: PatternRewriter):
        c = constant_value(op.rhs)
        if c is None or not is_float_tensor(op.rhs) or constant_value(op.lhs) is not None:
            return
        if c.size == 0 or not np.all(np.isfinite(c)) or np.any(c == 0):
            return
        with np.errstate(all="ignore"):
            inverse_value = (1.0 / c.astype(np.float64)).astype(c.dtype)
        tiny = np.finfo(c.dtype).tiny
        if not np.all(np.isfinite(inverse_value) & (np.abs(inverse_value) >= tiny)):
            return
        inverse = insert_constant(rewriter, inverse_value, element_type(op.rhs), op)
        rewriter.replace(op, graph.MulOp(operands=[op.lhs, inverse],
                                            result_types=[op.output.type]))


class CheapPower(RewritePattern):
    """pow(x, 2) -> x * x, pow(x, 0.5) -> sqrt(x), pow(x, -1) -> 1 / x for a scalar
    exponent that does not broadcast x; sqrt only for an x whose sign bit is clear
    (pow(-0, 0.5) = +0 and pow(-inf, 0.5) = +inf, where sqrt gives -0 and NaN)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.PowOp, rewriter: PatternRewriter):
        e = _scalar_exponent(op)
        x = op.lhs
        if e is None or not _same_type(x, op.output) or not is_float_tensor(x):
            return
        if e == 2.0:
            rewriter.replace(op, graph.MulOp(operands=[x, x], result_types=[op.output.type]))
        elif e == 0.5 and _sign_bit_clear(x):
            rewriter.replace(op, graph.SqrtOp(operands=[x], result_types=[op.output.type]))
        elif e == -1.0:
            rewriter.replace(op, graph.ReciprocalOp(operands=[x],
                                                       result_types=[op.output.type]))


SIGN_BIT_CLEAR = (graph.ReluOp, graph.ExpOp, graph.SigmoidOp, graph.AbsOp)
"""Ops whose every result is +0.0, positive, +inf or NaN (Relu is IEEE maximum(x, +0), so
Relu(-0.0) = +0.0). Not Sqrt: sqrt(-0.0) = -0.0."""


def _sign_bit_clear(v: SSAValue) -> bool:
    """No element of `v` can be negative or -0.0 (NaN may occur), whatever the inputs."""
    owner = v.owner
    if isinstance(owner, SIGN_BIT_CLEAR):
        return True
    if isinstance(owner, graph.MulOp) and owner.lhs == owner.rhs:
        return True  # x * x: (-0.0)^2 = +0.0
    if isinstance(owner, graph.PowOp) and _scalar_exponent(owner) == 2.0:
        return True  # pow(x, 2), before or after CheapPower makes it x * x
    if isinstance(owner, graph.ClipOp) and owner.min is not None:
        # max(x, lo) with an IEEE maximum, then min(., hi): both bounds must be >= +0.0
        bounds = [owner.min] + ([owner.max] if owner.max is not None else [])
        return not any(np.signbit(b.value.data) for b in bounds)
    c = constant_value(v)
    return c is not None and not bool(np.any(np.signbit(c) & ~np.isnan(c)))


class ExpOfLog(RewritePattern):
    """exp(log(x)) -> x when no element of x can be negative or -0.0 (log of a negative is
    NaN; exp(log(-0.0)) = exp(-inf) = +0.0)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ExpOp, rewriter: PatternRewriter):
        log = op.input.owner
        if isinstance(log, graph.LogOp) and _sign_bit_clear(log.input):
            _forward(rewriter, op, log.input)


# --------------------------------------------------------------------------- broadcasts


def _ones_expand(op: Operation) -> SSAValue | None:
    """x when `op` is the importer's Expand (x * ones, x AND true for i1) that enlarges x,
    else None."""
    if not isinstance(op, graph.MulOp | graph.AndOp):
        return None
    for x, ones in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
        if is_ones(ones) and shape_of(x) != shape_of(op.output):
            return x
    return None


def expand(rewriter: PatternRewriter, x: SSAValue, to: TensorType,
           before: Operation) -> Operation:
    """x broadcast to `to` (x's element type) as the importer writes Expand."""
    element = to.get_element_type()
    fill = graph.ConstantOfShapeOp.create(
        result_types=[to], properties={"value": from_numpy(np.ones(1, numpy_dtype(element)),
                                                           element)})
    rewriter.insert(fill, InsertPoint.before(before))
    cls = graph.AndOp if element == i1 else graph.MulOp
    return cls(operands=[x, fill.output], result_types=[to])


BROADCASTING = (graph.BinaryElementwiseOp, graph.VariadicElementwiseOp)
ELEMENTWISE = (*BROADCASTING, graph.UnaryElementwiseOp, graph.CastOp, graph.CompareOp,
               graph.WhereOp)


class DropExpandBeforeBroadcast(RewritePattern):
    """Expand (x * ones(shape)) whose every user is a broadcasting elementwise op that still
    gets its result shape from the other operands: the users read x directly."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.MulOp, rewriter: PatternRewriter):
        x = _ones_expand(op)
        if x is None or not any(True for _ in op.output.uses):
            return
        for use in op.output.uses:
            user = use.operation
            if not isinstance(user, BROADCASTING):
                return
            shapes_in = [shape_of(x if v == op.output else v) for v in user.operands]
            try:
                if shapes.broadcast_shapes(*shapes_in) != shape_of(user.results[0]):
                    return
            except ValueError:
                return
        rewriter.replace_all_uses_with(op.output, x)


class SinkExpand(RewritePattern):
    """An elementwise op whose result is as large as it is only through Expands of its
    operands computes on the unexpanded values, and its result is expanded instead:
    f(expand(x), c) -> expand(f(x, c)). The Expand then meets a broadcasting consumer
    that drops it: a [batch, 1, 1, seq] attention mask that torch expands to
    [batch, 1, seq, seq] before its Cast, Sub and Where stays a row per batch (the
    attention kernel then reads one mask value per key, not one per query and key)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter):
        if not isinstance(op, ELEMENTWISE) or len(op.results) != 1:
            return
        sources = [_ones_expand(v.owner) if isinstance(v.owner, Operation) else None
                   for v in op.operands]
        if all(x is None for x in sources):
            return
        operands = [v if x is None else x for v, x in zip(op.operands, sources)]
        out = op.results[0]
        try:
            small = shapes.broadcast_shapes(*(shape_of(v) for v in operands))
        except ValueError:
            return
        if small == shape_of(out):
            return  # DropExpandBeforeBroadcast's case, or no gain
        narrow = rebuild(op, operands, [with_shape(out.type, small)])
        rewriter.insert(narrow, InsertPoint.before(op))
        rewriter.replace(op, expand(rewriter, narrow.results[0], out.type, op))


# --------------------------------------------------------------------------- passes


@dataclass(frozen=True)
class AlgebraicIdentitiesPass(GraphPatternPass):
    """Remove operations that leave their operand unchanged: x+0, x*1, neg(neg(x)), relu(relu(x)),
    max(x, x)."""

    name = "algebraic-identities"
    patterns = (NeutralOperand, DoubleNegation, IdempotentUnary, SelfMinMax)


@dataclass(frozen=True)
class ReassociateConstantsPass(GraphPatternPass):
    """Move constants to the right-hand side and merge chained constant operands: (x + c1) + c2 ->
    x + (c1 + c2)."""

    name = "reassociate-constants"
    patterns = (ConstantToRhs, MergeConstantOperands)


@dataclass(frozen=True)
class DistributePass(GraphPatternPass):
    """Factor out a common multiplier: a*x + a*y -> a*(x+y), one multiply fewer."""

    name = "distribute"
    patterns = (FactorCommonMultiplier,)


@dataclass(frozen=True)
class StrengthReducePass(GraphPatternPass):
    """Replace costly ops by cheaper exact ones: x / c -> x * (1/c), pow(x, 2) -> x * x,
    exp(log(x)) -> x."""

    name = "strength-reduce"
    patterns = (DivByConstantToMul, CheapPower, ExpOfLog)


@dataclass(frozen=True)
class BroadcastSimplifyPass(GraphPatternPass):
    """Drop Expands whose users broadcast anyway: they read the unexpanded tensor; move
    Expands after the elementwise ops they feed."""

    name = "broadcast-simplify"
    patterns = (DropExpandBeforeBroadcast, SinkExpand)
