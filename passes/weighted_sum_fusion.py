"""`fuse-binary-eltwise`: x1 * c1 +/- x2 * c2 + ... becomes one graph.weighted_sum.

A linear combination of tensors (LayerNorm and residual decompositions, averaged branches) is
one loop with a coefficient per input instead of a multiply and an add per term; the trees of
other elementwise ops are fuse-elementwise's (elementwise_fusion.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import DenseArrayBase, f64
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern

from onnxc.dialects import graph, graph_shapes
from onnxc.dialects.graph import shape_of
from onnxc.passes.base import GraphPatternPass
from onnxc.passes.fusion_match import float_result, producer, with_scalar

# --------------------------------------------------------------------------- weighted sum


def _terms(value: SSAValue, sign: float) -> list[tuple[SSAValue, float]] | None:
    """The (input, coefficient) terms `value` contributes when it can be absorbed:
    x * c, or a weighted_sum, read only by the op being fused; None otherwise."""
    if not value.has_one_use():
        return None
    ws = producer(value, graph.WeightedSumOp)
    if ws is not None and shape_of(value) == shape_of(ws.output):
        return [(v, sign * c) for v, c in zip(ws.inputs, ws.coefficient_values())]
    scaled = with_scalar(value.owner, graph.MulOp)
    if scaled is not None:
        return [(scaled[0], sign * scaled[1])]
    return None


class FuseWeightedSum(RewritePattern):
    """x1 * c1 +/- x2 * c2 (either side may also be unscaled or a weighted_sum) ->
    weighted_sum; fires when at least one side is absorbed, so it always removes a loop."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, (graph.AddOp, graph.SubOp)) or not float_result(op):
            return
        sign = -1.0 if isinstance(op, graph.SubOp) else 1.0
        left, right = _terms(op.lhs, 1.0), _terms(op.rhs, sign)
        if left is None and right is None:
            return
        terms = (left or [(op.lhs, 1.0)]) + (right or [(op.rhs, sign)])
        try:
            out = graph_shapes.broadcast_shapes(*(shape_of(v) for v, _ in terms))
        except ValueError:
            return
        if out != shape_of(op.results[0]):
            return
        fused = graph.WeightedSumOp(
            operands=[[v for v, _ in terms]],
            result_types=[op.results[0].type],
            properties={"coefficients": DenseArrayBase.from_list(f64, [c for _, c in terms])},
        )
        rewriter.replace(op, fused)


# --------------------------------------------------------------------------- passes


@dataclass(frozen=True)
class FuseBinaryEltwisePass(GraphPatternPass):
    """x1 * c1 + x2 * c2 + ... -> one graph.weighted_sum."""

    name = "fuse-binary-eltwise"
    patterns = (FuseWeightedSum,)
