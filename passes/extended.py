"""The Extended group of the pass catalog: complex fusions for the CPU backend (-O2).

Each row is one `GraphPatternPass`. The bigger matchers live next door: extended_layernorm,
extended_activation (GELU, PReLU), extended_attention, extended_horizontal; this module
holds the rows whose patterns are short (fuse-matmul-transpose, fuse-binary-eltwise,
fuse-reduce-to-global-pool) and the pass classes of all eight rows.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import DenseArrayBase, FloatAttr, IntegerAttr, TensorType, f64, i64
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from onnxc.dialects import graph, graph_shapes
from onnxc.dialects.graph import int_of, ints_of, shape_of
from onnxc.passes.base import GraphPatternPass
from onnxc.passes.constants import element_type
from onnxc.passes.extended_activation import (
    FuseGelu,
    FusePreluFromMin,
    FusePreluFromNegatedRelu,
)
from onnxc.passes.extended_attention import FuseAttention
from onnxc.passes.extended_horizontal import (
    FuseSiblingConvs,
    FuseSiblingGemms,
    FuseSiblingMatMuls,
)
from onnxc.passes.extended_layernorm import FoldLayerNormAffine, FuseLayerNormCore
from onnxc.passes.extended_match import float_result, producer, with_scalar

# --------------------------------------------------------------------------- matmul-transpose


def _swapped_2d(value: SSAValue) -> SSAValue | None:
    """A when `value` is Transpose(A, [1, 0]) read by nothing else."""
    transpose = producer(value, graph.TransposeOp)
    if transpose is None or ints_of(transpose.perm) != (1, 0) or not value.has_one_use():
        return None
    return transpose.input


class MatMulTransposeToGemm(RewritePattern):
    """MatMul(A^T, B) / MatMul(A, B^T) of 2-D operands -> Gemm with transA / transB.

    Only 2-D: Gemm is 2-D, and a batched transposed operand would need a flag on
    graph.matmul and its kernel; the batched case that matters (attention's K^T) is
    absorbed by fuse-attention instead.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.MatMulOp, rewriter: PatternRewriter) -> None:
        if len(shape_of(op.lhs)) != 2 or len(shape_of(op.rhs)) != 2 or not float_result(op):
            return
        if op.properties.get("activation") is not None:
            return
        a, b = _swapped_2d(op.lhs), _swapped_2d(op.rhs)
        if a is None and b is None:
            return
        el = element_type(op.output)
        gemm = graph.GemmOp(
            operands=[a or op.lhs, b or op.rhs, None],
            result_types=[op.output.type],
            properties={
                "alpha": FloatAttr(1.0, el), "beta": FloatAttr(1.0, el),
                "transA": IntegerAttr(int(a is not None), i64),
                "transB": IntegerAttr(int(b is not None), i64),
            },
        )
        rewriter.replace(op, gemm)


class GemmTransposeToFlag(RewritePattern):
    """Gemm(Transpose(A), B) toggles transA (and likewise for B)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.GemmOp, rewriter: PatternRewriter) -> None:
        a, b = _swapped_2d(op.a), _swapped_2d(op.b)
        if a is None and b is None:
            return
        props = dict(op.properties)
        if a is not None:
            props["transA"] = IntegerAttr(1 - int_of(op.trans_a), i64)
        if b is not None:
            props["transB"] = IntegerAttr(1 - int_of(op.trans_b), i64)
        gemm = graph.GemmOp(operands=[a or op.a, b or op.b, op.c],
                            result_types=[op.output.type], properties=props)
        rewriter.replace(op, gemm)


# --------------------------------------------------------------------------- binary-eltwise


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


# --------------------------------------------------------------------------- global pool


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
        pooled_type = TensorType(element_type(op.output), (*x[:2], *(1,) * (len(x) - 2)))
        pool = graph.GlobalAveragePoolOp(operands=[op.input], result_types=[pooled_type])
        if int_of(op.keepdims) != 0:
            rewriter.replace(op, pool)
            return
        rewriter.insert(pool, InsertPoint.before(op))
        rewriter.replace(
            op, graph.ReshapeOp(operands=[pool.output], result_types=[op.output.type])
        )


# --------------------------------------------------------------------------- the rows


@dataclass(frozen=True)
class FuseLayernormPass(GraphPatternPass):
    """Decomposed LayerNorm (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add)."""

    name = "fuse-layernorm"
    patterns = (FuseLayerNormCore, FoldLayerNormAffine)


@dataclass(frozen=True)
class FuseGeluPass(GraphPatternPass):
    """The erf form and the tanh approximation of GELU -> graph.gelu."""

    name = "fuse-gelu"
    patterns = (FuseGelu,)


@dataclass(frozen=True)
class FusePreluPass(GraphPatternPass):
    """relu(x) + slope * min(x, 0) and relu(x) - slope * relu(-x) -> graph.prelu."""

    name = "fuse-prelu"
    patterns = (FusePreluFromMin, FusePreluFromNegatedRelu)


@dataclass(frozen=True)
class FuseMatmulTransposePass(GraphPatternPass):
    """A 2-D Transpose feeding MatMul/Gemm becomes Gemm's transA/transB."""

    name = "fuse-matmul-transpose"
    patterns = (MatMulTransposeToGemm, GemmTransposeToFlag)


@dataclass(frozen=True)
class FuseBinaryEltwisePass(GraphPatternPass):
    """x1 * c1 + x2 * c2 + ... -> one graph.weighted_sum."""

    name = "fuse-binary-eltwise"
    patterns = (FuseWeightedSum,)


@dataclass(frozen=True)
class FuseReduceToGlobalPoolPass(GraphPatternPass):
    """Spatial ReduceMean (at once, or W then H) -> GlobalAveragePool."""

    name = "fuse-reduce-to-global-pool"
    patterns = (MergeNestedMeans, ReduceMeanToGlobalPool)


@dataclass(frozen=True)
class FuseAttentionPass(GraphPatternPass):
    """MatMul(Softmax(scale * Q K^T + mask), V) -> graph.attention (no N x N buffer)."""

    name = "fuse-attention"
    patterns = (FuseAttention,)


@dataclass(frozen=True)
class HorizontalFusionPass(GraphPatternPass):
    """Sibling MatMuls/Gemms/Convs of one input -> one wider op plus a Split."""

    name = "horizontal-fusion"
    patterns = (FuseSiblingMatMuls, FuseSiblingGemms, FuseSiblingConvs)
