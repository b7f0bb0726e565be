"""Constant folding rows of the catalog: fold-constant-ops, fold-unsqueeze-const,
fold-scalar-binary and fold-axes-inputs.

Folding evaluates ops with the numpy evaluator (`onnxc.passes.evaluator`) on the dense bytes
of their constant operands and replaces them by `graph.constant`s, so later patterns (weight
fusions, algebra) see real constants. A splat `graph.constant_of_shape` becomes dense too;
results above FOLD_BYTES_LIMIT stay unfolded so a tiny shape cannot make a huge constant.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    f64,
    i64,
)
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.traits import is_side_effect_free

from onnxc.dialects import graph, graph_shapes
from onnxc.dialects.graph_strings import is_string
from onnxc.dialects.dense_data import flat_values, from_numpy
from onnxc.dialects.graph import GraphOp, is_symbolic, shape_of
from onnxc.passes.base import GraphPatternPass
from onnxc.passes.evaluator import EVALUATORS, dtype_of, evaluate_op
from onnxc.passes.size_specialization import fold_bound_sizes

FOLD_BYTES_LIMIT = 256 * 1024 * 1024
"""Largest result (in bytes) an op may fold into; a 100 MB splat weight still folds."""

CONSTANT_OPS = (graph.ConstantOp, graph.ConstantOfShapeOp)


def is_constant(value: SSAValue) -> bool:
    """Defined by a constant op with a static type (a `constant_of_shape` of symbolic size
    is filled at run time: there is no array to fold)."""
    return isinstance(value.owner, CONSTANT_OPS) and not is_symbolic(value)


def constant_array(value: SSAValue) -> np.ndarray:
    """The array a constant op defines (a splat is broadcast, not copied)."""
    owner = value.owner
    data = flat_values(owner.value)
    if isinstance(owner, graph.ConstantOfShapeOp):
        return np.broadcast_to(data[0], shape_of(value))
    return data.reshape(shape_of(value))


def result_bytes(op: Operation) -> int:
    return sum(math.prod(shape_of(r)) * dtype_of(r).itemsize for r in op.results)


def fold_to_constants(op: Operation, rewriter: PatternRewriter) -> bool:
    """Replace `op` by the constants it evaluates to; False when it cannot be folded."""
    if type(op) not in EVALUATORS or any(is_symbolic(r) for r in op.results):
        return False  # a result of symbolic size is no constant
    if not is_side_effect_free(op):
        return False  # a random draw (graph.random) differs per run: never a constant
    if any(is_string(r.type) for r in op.results):
        return False  # strings are no dense constant: graph.strings over their bytes
    if result_bytes(op) > FOLD_BYTES_LIMIT:
        return False
    values = evaluate_op(op, [constant_array(v) for v in op.operands])
    constants = [graph.ConstantOp(from_numpy(np.broadcast_to(v, shape_of(r)), r.type))
                 for v, r in zip(values, op.results)]
    rewriter.replace(op, constants, [c.output for c in constants])
    return True


# ----------------------------------------------------------------------------- fold-constant-ops


def _divides_by_zero(op: Operation) -> bool:
    """An integer Div/Mod with a zero in its (constant) divisor: numpy would give 0 with a
    warning; left unfolded, the op reaches insert-runtime-checks, whose error names it."""
    if not isinstance(op, graph.DivOp | graph.ModOp):
        return False
    divisor = constant_array(op.rhs)
    return divisor.dtype.kind in "iu" and not divisor.all()


class FoldConstantOp(RewritePattern):
    """Any graph op whose operands are all constants becomes the constants it computes."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, GraphOp) or isinstance(op, graph.ConstantOp):
            return
        if not op.operands and not isinstance(op, graph.ConstantOfShapeOp):
            return
        if isinstance(op, graph.BindSizesOp):
            if is_constant(op.values):  # the run symbols are numbers after all
                fold_bound_sizes(op, constant_array(op.values), rewriter)
            return
        if all(is_constant(v) for v in op.operands) and not _divides_by_zero(op):
            fold_to_constants(op, rewriter)


@dataclass(frozen=True)
class FoldConstantOpsPass(GraphPatternPass):
    """fold-constant-ops: evaluate ops on constants at compile time (splats become dense)."""

    name = "fold-constant-ops"
    patterns = (FoldConstantOp,)


# ----------------------------------------------------------------------------- fold-unsqueeze-const

LAYOUT_OPS = (graph.UnsqueezeOp, graph.ReshapeOp, graph.TransposeOp, graph.CastOp,
              graph.SqueezeOp, graph.FlattenOp)


class FoldLayoutOfConstant(RewritePattern):
    """Unsqueeze/Reshape/Transpose/Cast/Squeeze/Flatten of a constant is a new constant; the
    original stays when something else reads it."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if isinstance(op, LAYOUT_OPS) and all(is_constant(v) for v in op.operands):
            fold_to_constants(op, rewriter)


@dataclass(frozen=True)
class FoldUnsqueezeConstPass(GraphPatternPass):
    """fold-unsqueeze-const: data-movement ops of a constant become a new constant."""

    name = "fold-unsqueeze-const"
    patterns = (FoldLayoutOfConstant,)


# ----------------------------------------------------------------------------- fold-scalar-binary

SCALAR_FORMS: dict[type[Operation], type[graph.ScalarBinaryOp]] = {
    graph.AddOp: graph.AddScalarOp,
    graph.SubOp: graph.SubScalarOp,
    graph.MulOp: graph.MulScalarOp,
    graph.DivOp: graph.DivScalarOp,
    graph.PowOp: graph.PowScalarOp,
}
COMMUTATIVE = (graph.AddOp, graph.MulOp)


def scalar_operand(value: SSAValue, result_shape: tuple[int, ...]) -> float | None:
    """The value of a one-element constant that broadcasting does not widen the result with,
    when an f64 property holds it exactly; else None."""
    if not is_constant(value) or math.prod(shape_of(value)) != 1:
        return None
    if len(shape_of(value)) > len(result_shape):
        return None
    scalar = constant_array(value).reshape(-1)[0]
    kind = scalar.dtype.kind
    if kind == "f":
        return float(scalar)
    if kind in "iu" and abs(int(scalar)) <= 2**53:
        return float(int(scalar))
    return None  # booleans have no arithmetic here


class BinaryWithScalar(RewritePattern):
    """`graph.<op>(%x, %c)` with a scalar constant %c becomes `graph.<op>_scalar(%x)`; for
    Add and Mul a scalar first operand is taken too (they commute)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.BinaryElementwiseOp, rewriter: PatternRewriter) -> None:
        form = SCALAR_FORMS.get(type(op))
        if form is None:
            return
        out = shape_of(op.output)
        tensor, scalar = op.lhs, None
        if shape_of(op.lhs) == out:
            scalar = scalar_operand(op.rhs, out)
        if scalar is None and isinstance(op, COMMUTATIVE) and shape_of(op.rhs) == out:
            tensor, scalar = op.rhs, scalar_operand(op.lhs, out)
        if scalar is None or dtype_of(tensor).kind not in "fiu":
            return
        new = form(operands=[tensor], result_types=[op.output.type],
                   properties={"scalar": FloatAttr(scalar, f64)})
        rewriter.replace(op, new)


@dataclass(frozen=True)
class FoldScalarBinaryPass(GraphPatternPass):
    """fold-scalar-binary: a scalar constant operand becomes the op's `scalar` property."""

    name = "fold-scalar-binary"
    patterns = (BinaryWithScalar,)


# ----------------------------------------------------------------------------- fold-axes-inputs


def _resolved_reshape(target: list[int], source: tuple[int, ...], allow_zero: bool) -> tuple:
    """ONNX Reshape's result shape for `target` (0 copies a dim unless allow_zero, -1 infers)."""
    out = [source[i] if d == 0 and not allow_zero and i < len(source) else d
           for i, d in enumerate(target)]
    if out.count(-1) == 1:
        known = math.prod(d for d in out if d != -1)
        out[out.index(-1)] = math.prod(source) // known if known else -1
    return tuple(out)


class ReshapeShapeToType(RewritePattern):
    """`graph.reshape(%x, %shape)` with a constant %shape that resolves to the result type
    drops the operand (the result type is the shape)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ReshapeOp, rewriter: PatternRewriter) -> None:
        if op.shape is None or not is_constant(op.shape):
            return
        target = [int(v) for v in constant_array(op.shape).reshape(-1)]
        source, out = shape_of(op.input), shape_of(op.output)
        if out not in (_resolved_reshape(target, source, False),
                       _resolved_reshape(target, source, True)):
            return  # cannot prove the operand means the type's shape
        rewriter.replace(op, graph.ReshapeOp(operands=[op.input], result_types=[op.output.type]))


class AxesOperandToProperty(RewritePattern):
    """`graph.squeeze/unsqueeze(%x, %axes)` with constant %axes takes them as the `axes`
    property (normalised, sorted) when they produce the result type."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, graph.SqueezeOp | graph.UnsqueezeOp):
            return
        if op.axes_input is None or not is_constant(op.axes_input):
            return
        squeeze = isinstance(op, graph.SqueezeOp)
        rank = len(shape_of(op.input if squeeze else op.output))
        values = [int(v) for v in constant_array(op.axes_input).reshape(-1)]
        if any(not -rank <= a < rank for a in values):
            return
        axes = sorted({a + rank if a < 0 else a for a in values})
        if len(axes) != len(values):
            return
        rule = graph_shapes.squeeze_shape if squeeze else graph_shapes.unsqueeze_shape
        try:
            if tuple(rule(shape_of(op.input), axes)) != shape_of(op.output):
                return
        except (ValueError, IndexError):
            return
        new = type(op)(operands=[op.input], result_types=[op.output.type],
                       properties={"axes": DenseArrayBase.from_list(i64, axes)})
        rewriter.replace(op, new)


@dataclass(frozen=True)
class FoldAxesInputsPass(GraphPatternPass):
    """fold-axes-inputs: a constant shape/axes operand (left by the importer when it was
    computed, e.g. by float arithmetic, and made constant by fold-constant-ops) becomes the
    op's property. Covers Reshape, Squeeze and Unsqueeze; Slice, Pad, Tile and Expand have
    no operand form (the importer requires those inputs to be constant)."""

    name = "fold-axes-inputs"
    patterns = (ReshapeShapeToType, AxesOperandToProperty)
