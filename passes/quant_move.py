"""`move-quant-dequant`: data-movement ops between a DQ and a Q run on the quantized tensor.

QDQ models wrap every op in DequantizeLinear ... QuantizeLinear, also the ones that only move
or select elements. When the DQ before and the Q after have the same per-tensor parameters,
    Q(move(DQ(q))) = move(Q(DQ(q))) = move(q)
because the op moves values without changing them and Q(DQ(q)) = q exactly (see
cancel-quant-dequant): the chain stays in 8 bits, a quarter of the memory traffic, and two
elementwise passes vanish. The ops: Reshape, Flatten, Transpose, Squeeze, Unsqueeze,
MaxPool (max commutes with the dequantization when the scale is positive; MaxPool pads
with -inf, which never wins) and Concat (every input a DQ with the Q's parameters). A
negative scale makes the dequantization decreasing, max of the reals the min of the
integers: MaxPool is then left in float.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from onnxc.dialects import graph
from onnxc.dialects.graph import shape_of
from onnxc.passes.base import GraphPatternPass
from onnxc.passes.quant_params import QParams, qparams
from onnxc.passes.rewrite_utils import rebuild, single_user, with_shape

MOVING_OPS = (graph.ReshapeOp, graph.FlattenOp, graph.TransposeOp, graph.SqueezeOp,
              graph.UnsqueezeOp, graph.MaxPoolOp)
"""Ops whose first operand is the data and whose single result holds some of its values."""


def _dequantized_like(value: SSAValue, params: QParams, quantized_type) -> SSAValue | None:
    """q when `value` = DQ(q) with `params` and q of `quantized_type`'s element type."""
    dq = value.owner
    if not isinstance(dq, graph.DequantizeLinearOp):
        return None
    p = qparams(dq)
    if p is None or not p.per_tensor or not p.same(params):
        return None
    if dq.input.type.get_element_type() != quantized_type.get_element_type():
        return None
    return dq.input


def _moving_op(op: graph.QuantizeLinearOp) -> tuple[Operation, QParams] | None:
    """The op the Q quantizes when the Q is its only reader, with the Q's parameters."""
    inner = op.input.owner
    if not isinstance(inner, Operation) or single_user(op.input) is not op:
        return None
    p = qparams(op)
    if p is None or not p.per_tensor:
        return None
    return inner, p


class MoveQuantThroughDataMovement(RewritePattern):
    """Q(move(DQ(q), ...)) with equal parameters -> move(q, ...) on the integers."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.QuantizeLinearOp, rewriter: PatternRewriter):
        found = _moving_op(op)
        if found is None or not isinstance(found[0], MOVING_OPS):
            return
        inner, params = found
        if isinstance(inner, graph.MaxPoolOp) and (len(inner.results) != 1
                                                   or not params.positive):
            return  # the indices output; a decreasing (de)quantization
        q = _dequantized_like(inner.operands[0], params, op.output.type)
        if q is None:
            return
        moved = rebuild(inner, [q, *inner.operands[1:]],
                        [with_shape(op.output.type, shape_of(inner.results[0]))])
        rewriter.replace(op, moved)


class MoveQuantThroughConcat(RewritePattern):
    """Q(concat(DQ(q1), ..., DQ(qn))) with one set of parameters -> concat(q1, ..., qn)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.QuantizeLinearOp, rewriter: PatternRewriter):
        found = _moving_op(op)
        if found is None or not isinstance(found[0], graph.ConcatOp):
            return
        concat, params = found
        parts = [_dequantized_like(v, params, op.output.type) for v in concat.inputs]
        if any(q is None for q in parts):
            return
        rewriter.replace(op, rebuild(concat, parts, [op.output.type]))


@dataclass(frozen=True)
class MoveQuantDequantPass(GraphPatternPass):
    """Run data-movement ops between equal DQ/Q parameters on the quantized tensor."""

    name = "move-quant-dequant"
    patterns = (MoveQuantThroughDataMovement, MoveQuantThroughConcat)
