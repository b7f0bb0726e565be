"""Global-pool fusion: a ReduceMean over every spatial axis -> GlobalAveragePool.

Exporters write global average pooling as ReduceMean over [2, rank), or as a mean over W
then over H; the pool kernel reads the input once and needs no keepdims reshapes.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import DenseArrayBase, i64
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from onnxc.dialects import graph
from onnxc.dialects.graph import int_of, shape_of
from onnxc.passes.base import GraphPatternPass
from onnxc.passes.constants import element_type
from onnxc.passes.fusion_match import float_result, producer


class MergeNestedMeans(RewritePattern):
    """ReduceMean(ReduceMean(x, A), B) with equal keepdims -> ReduceMean(x, A + B): a mean
    of equal-sized group means is the overall mean (mean over W, then over H)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ReduceMeanOp, rewriter: PatternRewriter) -> None:
        inner = producer(op.input, graph.ReduceMeanOp)
        if inner is None or not op.input.has_one_use() or inner.keepdims != op.keepdims:
            return
        first = inner.reduced_axes()
        remaining = list(range(len(shape_of(inner.input))))
        if int_of(op.keepdims) == 0:
            remaining = [a for a in remaining if a not in first]
        axes = sorted({*first, *(remaining[a] for a in op.reduced_axes())})
        merged = graph.ReduceMeanOp(
            operands=[inner.input], result_types=[op.output.type],
            properties={"axes": DenseArrayBase.from_list(i64, axes), "keepdims": op.keepdims},
        )
        rewriter.replace(op, merged)


class ReduceMeanToGlobalPool(RewritePattern):
    """ReduceMean over every spatial axis [2, rank) of an N x C x ... tensor ->
    GlobalAveragePool (followed by a Reshape to N x C when keepdims is 0)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ReduceMeanOp, rewriter: PatternRewriter) -> None:
        x = shape_of(op.input)
        if len(x) < 3 or op.reduced_axes() != tuple(range(2, len(x))) or not float_result(op):
            return
        pooled_type = graph.tensor_type((*x[:2], *(1,) * (len(x) - 2)), element_type(op.output))
        pool = graph.GlobalAveragePoolOp(operands=[op.input], result_types=[pooled_type])
        if int_of(op.keepdims) != 0:
            rewriter.replace(op, pool)
            return
        rewriter.insert(pool, InsertPoint.before(op))
        rewriter.replace(
            op, graph.ReshapeOp(operands=[pool.output], result_types=[op.output.type])
        )


# --------------------------------------------------------------------------- pass


@dataclass(frozen=True)
class FuseReduceToGlobalPoolPass(GraphPatternPass):
    """Spatial ReduceMean (at once, or W then H) -> GlobalAveragePool."""

    name = "fuse-reduce-to-global-pool"
    patterns = (MergeNestedMeans, ReduceMeanToGlobalPool)
