"""Common subexpressions and algebra: `cse`, and the algebraic rewrites of the catalog.

algebraic-identities, reassociate-constants, distribute, strength-reduce and
broadcast-simplify only fire when the rewritten value keeps its exact type (a constant that
broadcasts x to a larger shape is not neutral) and, for floats, when the rewrite is exact for
inf and NaN too (x * 0 is not 0 for x = inf; exp(log x) is not x for x < 0).

`cse` merges two ops of the same kind, properties and operands into one, which also merges
identical constants (their dense bytes compare equal). It is xDSL's CSE driver, counted in the
pattern statistics like every other graph pass.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint
from xdsl.transforms.common_subexpression_elimination import cse

from onnxc.dialects import graph
from onnxc.dialects import graph_shapes as shapes
from onnxc.dialects.graph import shape_of
from onnxc.passes.base import STATISTICS, GraphPatternPass
from onnxc.passes.constants import (
    constant_value,
    dense,
    element_type,
    insert_constant,
    is_float_tensor,
    numpy_dtype,
    scalar,
    single_use,
)


@dataclass(frozen=True)
class CsePass(ModulePass):
    """Merge ops with equal name, properties and operands (also identical constants)."""

    name = "cse"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        before = sum(1 for _ in op.walk())
        cse(op)
        for _ in range(before - sum(1 for _ in op.walk())):
            STATISTICS.record(self.name, "MergeEquivalentOps")


# --------------------------------------------------------------------------- helpers


def _same_type(a: SSAValue, b: SSAValue) -> bool:
    return a.type == b.type


def _all_equal(array: np.ndarray | None, value: float) -> bool:
    return array is not None and array.size > 0 and bool(np.all(array == value))


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
    constant does not broadcast x to a larger shape). x*0 -> 0 only for integers (for
    floats it is wrong for inf and NaN)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.BinaryElementwiseOp, rewriter: PatternRewriter):
        commutative = isinstance(op, (graph.AddOp, graph.MulOp))
        for i in ((1, 0) if commutative else (1,)):
            c = constant_value(op.operands[i])
            x = op.operands[1 - i]
            if c is None:
                continue
            if isinstance(op, graph.MulOp) and _all_equal(c, 0) and not is_float_tensor(x):
                zeros = np.zeros(shape_of(op.output), numpy_dtype(element_type(x)))
                rewriter.replace(op, graph.ConstantOp(dense(zeros, element_type(x))))
                return
            neutral = {graph.AddOp: 0, graph.SubOp: 0, graph.MulOp: 1, graph.DivOp: 1,
                       graph.PowOp: 1}.get(type(op))
            if neutral is not None and _all_equal(c, neutral) and _same_type(x, op.output):
                _forward(rewriter, op, x)
                return


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
    having no other user; the folded constant is computed in the element type."""

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
        folded = (np.add if isinstance(op, graph.AddOp) else np.multiply)(c1, c2)
        if shapes.broadcast_shapes(shape_of(inner.lhs), folded.shape) != shape_of(op.output):
            return
        c = insert_constant(rewriter, folded, element_type(op.output), op)
        rewriter.replace(op, type(op)(operands=[inner.lhs, c], result_types=[op.output.type]))


# --------------------------------------------------------------------------- distribution


def _factors(v: SSAValue) -> tuple[SSAValue, SSAValue] | None:
    mul = v.owner
    if isinstance(mul, graph.MulOp) and single_use(v):
        return mul.lhs, mul.rhs
    return None


class FactorCommonMultiplier(RewritePattern):
    """a*x + a*y -> a*(x+y) (and a*x - a*y -> a*(x-y)): one multiply fewer. Fires when
    x and y already have the result's shape, so the new add does no more work than the
    old one."""

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
            inner = type(op)(operands=[x, y], result_types=[op.output.type])
            rewriter.insert(inner, InsertPoint.before(op))
            rewriter.replace(op, graph.MulOp(operands=[a, inner.output],
                                                result_types=[op.output.type]))
            return


# --------------------------------------------------------------------------- strength reduction


def _scalar_exponent(op: graph.PowOp) -> float | None:
    return scalar(constant_value(op.rhs))


class DivByConstantToMul(RewritePattern):
    """x / c -> x * (1 / c) for a float constant c that is finite and nonzero everywhere."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.DivOp, rewriter: PatternRewriter):
        c = constant_value(op.rhs)
        if c is None or not is_float_tensor(op.rhs) or constant_value(op.lhs) is not None:
            return
        if not np.all(np.isfinite(c)) or np.any(c == 0):
            return
        inverse = insert_constant(rewriter, 1.0 / c.astype(np.float64), element_type(op.rhs), op)
        rewriter.replace(op, graph.MulOp(operands=[op.lhs, inverse],
                                            result_types=[op.output.type]))


class CheapPower(RewritePattern):
    """pow(x, 2) -> x * x, pow(x, 0.5) -> sqrt(x), pow(x, -1) -> 1 / x for a scalar
    exponent that does not broadcast x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.PowOp, rewriter: PatternRewriter):
        e = _scalar_exponent(op)
        x = op.lhs
        if e is None or not _same_type(x, op.output) or not is_float_tensor(x):
            return
        if e == 2.0:
            rewriter.replace(op, graph.MulOp(operands=[x, x], result_types=[op.output.type]))
        elif e == 0.5:
            rewriter.replace(op, graph.SqrtOp(operands=[x], result_types=[op.output.type]))
        elif e == -1.0:
            rewriter.replace(op, graph.ReciprocalOp(operands=[x],
                                                       result_types=[op.output.type]))


NON_NEGATIVE = (graph.ReluOp, graph.ExpOp, graph.SigmoidOp, graph.AbsOp, graph.SqrtOp)


def _provably_non_negative(v: SSAValue) -> bool:
    """x >= 0 (or NaN) for every input: exp(log x) = x needs it (log of a negative is NaN)."""
    owner = v.owner
    if isinstance(owner, NON_NEGATIVE):
        return True
    if isinstance(owner, graph.ClipOp) and owner.min is not None:
        return owner.min.value.data >= 0
    c = constant_value(v)
    return c is not None and bool(np.all(c >= 0))


class ExpOfLog(RewritePattern):
    """exp(log(x)) -> x when x is provably non-negative (exp(log 0) = exp(-inf) = 0)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ExpOp, rewriter: PatternRewriter):
        log = op.input.owner
        if isinstance(log, graph.LogOp) and _provably_non_negative(log.input):
            _forward(rewriter, op, log.input)


# --------------------------------------------------------------------------- broadcasts


def _ones_expand(op: graph.MulOp) -> SSAValue | None:
    """x when `op` is the importer's Expand (x * ones) that enlarges x, else None."""
    for x, ones in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
        if _all_equal(constant_value(ones), 1) and shape_of(x) != shape_of(op.output):
            return x
    return None


BROADCASTING = (graph.BinaryElementwiseOp, graph.VariadicElementwiseOp)


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


# --------------------------------------------------------------------------- passes


@dataclass(frozen=True)
class AlgebraicIdentitiesPass(GraphPatternPass):
    name = "algebraic-identities"
    patterns = (NeutralOperand, DoubleNegation, IdempotentUnary, SelfMinMax)


@dataclass(frozen=True)
class ReassociateConstantsPass(GraphPatternPass):
    name = "reassociate-constants"
    patterns = (ConstantToRhs, MergeConstantOperands)


@dataclass(frozen=True)
class DistributePass(GraphPatternPass):
    name = "distribute"
    patterns = (FactorCommonMultiplier,)


@dataclass(frozen=True)
class StrengthReducePass(GraphPatternPass):
    name = "strength-reduce"
    patterns = (DivByConstantToMul, CheapPower, ExpOfLog)


@dataclass(frozen=True)
class BroadcastSimplifyPass(GraphPatternPass):
    name = "broadcast-simplify"
    patterns = (DropExpandBeforeBroadcast,)
