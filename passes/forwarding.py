"""Operator forwarding: commute an op past elementwise work so that less work is done.

- slice-before-elementwise: slice(f(a, b)) = f(slice(a), slice(b)) with each operand sliced
  only on the axes it does not broadcast, so f runs on the kept elements only.
- transpose-through-elementwise: f(transpose(a, p), ...) = transpose(f(a, ...), p); moving
  transposes down lets two of them meet and cancel (the pass composes them too).
- reduce-before-shift: reduce(x * c) = reduce(x) * c (and +, -, /) when c is constant along
  the reduced axes, so the shift or scale runs on the reduced tensor.

Every pattern requires the moved-past op to have no other user: otherwise it would stay and
the rewrite would add work instead of removing it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import AnyFloat, FloatAttr
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from onnxc.dialects import graph
from onnxc.dialects import graph_shapes as shapes
from onnxc.dialects.dense_data import from_numpy
from onnxc.dialects.graph import int_of, ints_of, shape_of
from onnxc.dialects.graph_base import sizes_attr
from onnxc.passes.base import GraphPatternPass
from onnxc.passes.constants import constant_value
from onnxc.passes.evaluator import evaluate_op
from onnxc.passes.inverse_pairs import ComposeTransposes
from onnxc.passes.rewrite_utils import (
    i64_array,
    rebuild,
    reshape_to,
    single_user,
    with_shape,
)

SHAPE_PRESERVING = (
    graph.UnaryElementwiseOp, graph.CastOp, graph.ScalarBinaryOp,
    graph.QuantizeLinearOp, graph.DequantizeLinearOp,
)
"""Elementwise ops of one operand whose result has the operand's shape."""

BROADCASTING = (graph.BinaryElementwiseOp, graph.VariadicElementwiseOp)
"""Elementwise ops whose operands broadcast to the result."""


def is_elementwise(op: Operation | None) -> bool:
    return isinstance(op, SHAPE_PRESERVING + BROADCASTING)


def _constant_op(array: np.ndarray, like: SSAValue) -> graph.ConstantOp:
    return graph.ConstantOp(from_numpy(array, like.type.get_element_type()))


# --------------------------------------------------------------------------- slice-before-elementwise


def _slice_operand(v: SSAValue, op: graph.SliceOp) -> tuple[list[Operation], SSAValue]:
    """`v` sliced like `op` slices the broadcast result, on the axes `v` really has."""
    out = shape_of(op.input)
    vs = shape_of(v)
    lead = len(out) - len(vs)
    picked = []
    for start, end, axis, step in zip(*op.bounds(), ints_of(op.axes), ints_of(op.steps)):
        a = shapes.normalize_axis(axis, len(out)) - lead
        if a >= 0 and vs[a] == out[a + lead]:
            picked.append((start, end, a, step))
    if not picked:
        return [], v
    starts, ends, axes, steps = ([p[i] for p in picked] for i in range(4))
    sliced = graph.SliceOp(
        operands=[v],
        result_types=[with_shape(v.type, shapes.slice_shape(vs, starts, ends, axes, steps))],
        properties={"starts": sizes_attr(starts), "ends": sizes_attr(ends),
                    "axes": i64_array(axes), "steps": i64_array(steps)},
    )
    array = constant_value(v)
    if array is not None:  # slice the constant now rather than at run time
        folded = _constant_op(evaluate_op(sliced, [array])[0], v)
        return [folded], folded.output
    return [sliced], sliced.output


class SliceBeforeElementwise(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.SliceOp, rewriter: PatternRewriter):
        producer = op.input.owner
        if not is_elementwise(producer) or single_user(op.input) is not op:
            return
        new_ops: list[Operation] = []
        operands: list[SSAValue] = []
        for v in producer.operands:
            ops, value = _slice_operand(v, op)
            new_ops += ops
            operands.append(value)
        if shapes.broadcast_shapes(*(shape_of(v) for v in operands)) != shape_of(op.output):
            return
        new_ops.append(rebuild(producer, operands, [op.output.type]))
        rewriter.replace(op, new_ops)


@dataclass(frozen=True)
class SliceBeforeElementwisePass(GraphPatternPass):
    """Move Slices above elementwise ops so that those compute only the kept elements."""

    name = "slice-before-elementwise"
    patterns = (SliceBeforeElementwise,)


# --------------------------------------------------------------------------- transpose-through-elementwise


def inverse(perm: tuple[int, ...]) -> tuple[int, ...]:
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return tuple(inv)


class TransposeThroughElementwise(RewritePattern):
    """f(transpose(a, p), transpose(b, p), c) = transpose(f(a, b, c'), p) with every
    transposed operand of full rank and single use, and every other operand a constant c,
    re-laid at compile time as c' = transpose(c, p^-1)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not is_elementwise(op):
            return
        out = shape_of(op.results[0])
        perm: tuple[int, ...] | None = None
        for v in op.operands:
            t = v.owner
            if isinstance(t, graph.TransposeOp):
                if perm not in (None, ints_of(t.perm)) or single_user(v) is not op:
                    return
                if len(shape_of(v)) != len(out):
                    return
                perm = ints_of(t.perm)
        if perm is None:
            return
        inv = inverse(perm)
        new_ops: list[Operation] = []
        operands: list[SSAValue] = []
        for v in op.operands:
            if isinstance(v.owner, graph.TransposeOp):
                operands.append(v.owner.input)
                continue
            array = constant_value(v)
            if array is None:
                return
            padded = array.reshape((1,) * (len(out) - array.ndim) + array.shape)
            new_ops.append(_constant_op(np.ascontiguousarray(np.transpose(padded, inv)), v))
            operands.append(new_ops[-1].results[0])
        inner_shape = tuple(out[i] for i in inv)
        moved = rebuild(op, operands, [with_shape(op.results[0].type, inner_shape)])
        transpose = graph.TransposeOp(operands=[moved.results[0]],
                                      result_types=[op.results[0].type],
                                      properties={"perm": i64_array(perm)})
        rewriter.replace(op, [*new_ops, moved, transpose])


@dataclass(frozen=True)
class TransposeThroughElementwisePass(GraphPatternPass):
    """Sink Transposes below elementwise ops; those that meet compose or cancel."""

    name = "transpose-through-elementwise"
    patterns = (TransposeThroughElementwise, ComposeTransposes)


# --------------------------------------------------------------------------- reduce-before-shift


def _reduced(op: graph.ReduceOp) -> tuple[tuple[int, ...], int]:
    """(reduced axes, number of elements each output element reduces)."""
    axes = op.reduced_axes()
    x = shape_of(op.input)
    return axes, math.prod(x[a] for a in axes)


class ReduceBeforeScalarShift(RewritePattern):
    """reduce(x op s) for a scalar property s: mean and sum commute with * and /; mean with
    + and -, sum with + and - once s is scaled by the reduced count."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ReduceSumOp | graph.ReduceMeanOp,
                          rewriter: PatternRewriter):
        shift = op.input.owner
        if not isinstance(shift, graph.AddScalarOp | graph.SubScalarOp | graph.MulScalarOp
                          | graph.DivScalarOp):
            return
        if single_user(op.input) is not op or not isinstance(
                op.input.type.get_element_type(), AnyFloat):
            return
        scalar = shift.scalar.value.data
        if isinstance(op, graph.ReduceSumOp) and isinstance(
                shift, graph.AddScalarOp | graph.SubScalarOp):
            count = _reduced(op)[1]
            if not isinstance(count, int):
                return  # s times a symbolic count is no constant
            scalar *= count
        reduce = rebuild(op, [shift.input], [op.output.type])
        moved = type(shift).create(
            operands=[reduce.results[0]], result_types=[op.output.type],
            properties={**shift.properties, "scalar": FloatAttr(scalar, shift.scalar.type)},
        )
        rewriter.replace(op, [reduce, moved])


class ReduceBeforeTensorShift(RewritePattern):
    """reduce(x op c) with c constant along the reduced axes (c never enlarges x): the shift
    or scale applies to the reduced tensor with c reshaped to it."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ReduceSumOp | graph.ReduceMeanOp,
                          rewriter: PatternRewriter):
        shift = op.input.owner
        if not isinstance(shift, graph.AddOp | graph.SubOp | graph.MulOp | graph.DivOp):
            return
        if single_user(op.input) is not op or not isinstance(
                op.input.type.get_element_type(), AnyFloat):
            return
        out = shape_of(shift.output)
        axes, count = _reduced(op)
        for x_index in (0, 1):
            x, c = shift.operands[x_index], shift.operands[1 - x_index]
            if isinstance(shift, graph.DivOp) and x_index == 1:
                continue  # sum(c / x) is not c / sum(x)
            if shape_of(x) != out:
                continue
            cs = (1,) * (len(out) - len(shape_of(c))) + shape_of(c)
            if any(cs[a] != 1 for a in axes):
                continue
            additive = isinstance(shift, graph.AddOp | graph.SubOp)
            scale = count if additive and isinstance(op, graph.ReduceSumOp) else 1
            if not isinstance(scale, int):
                return  # c times a symbolic count is no constant
            new_ops = self._reshaped_shift(op, c, cs, axes, scale)
            if new_ops is None:
                continue
            c_new = new_ops[-1].results[0] if new_ops else c
            reduce = rebuild(op, [x], [op.output.type])
            pair = [reduce.results[0], c_new] if x_index == 0 else [c_new, reduce.results[0]]
            if shapes.broadcast_shapes(*(shape_of(v) for v in pair)) != shape_of(op.output):
                continue
            rewriter.replace(op, [*new_ops, reduce, rebuild(shift, pair, [op.output.type])])
            return

    @staticmethod
    def _reshaped_shift(op: graph.ReduceOp, c: SSAValue, cs: tuple[int, ...],
                        axes: tuple[int, ...], scale: int) -> list[Operation] | None:
        """Ops giving c in the reduced result's rank (times `scale`); None when impossible."""
        keep = int_of(op.keepdims) != 0
        shape = cs if keep else tuple(d for i, d in enumerate(cs) if i not in axes)
        array = constant_value(c)
        if array is not None:
            return [_constant_op(array.reshape(shape) * array.dtype.type(scale), c)]
        if scale != 1:
            return None
        if keep or shape == shape_of(c):
            return []
        return [reshape_to(c, with_shape(c.type, shape))]


@dataclass(frozen=True)
class ReduceBeforeShiftPass(GraphPatternPass):
    """Move a per-element shift or scale from before a ReduceSum/ReduceMean to after it."""

    name = "reduce-before-shift"
    patterns = (ReduceBeforeScalarShift, ReduceBeforeTensorShift)
