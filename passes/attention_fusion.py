"""Attention fusion: scaled dot-product attention as exporters write it -> graph.attention.

  scores = MatMul(Q, Transpose(K)) ; scores = scores / c  (or * c, or neither)
  scores = scores + mask (optional) ; P = Softmax(scores, axis=-1) ; out = MatMul(P, V)
The score matrix (Sq x Sk per head) is what the fused kernel never materialises. K^T is
usually a Transpose of the head-split K ([B,S,H,D] -> [B,H,D,S]); the attention op takes K
as [..., Sk, D], so that Transpose is replaced by its permutation with the last two entries
swapped (none at all when that is the identity).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import DenseArrayBase, FloatAttr, i64
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from onnxc.dialects import graph, graph_shapes
from onnxc.dialects.graph import int_of, ints_of, shape_of
from onnxc.passes.base import GraphPatternPass
from onnxc.passes.constants import element_type
from onnxc.passes.fusion_match import (
    float_result,
    operand_orders,
    producer,
    scaled_by,
    used_only_by,
)


def _scores(value: SSAValue) -> tuple[graph.MatMulOp, float, SSAValue | None, list[Operation]]:
    """(Q K^T matmul, scale, mask, absorbed ops) behind the softmax input, or raises
    LookupError when `value` is not that chain."""
    absorbed: list[Operation] = []
    mask = None
    add = producer(value, graph.AddOp)
    if add is not None:
        for scores, other in operand_orders(add):
            if _unmasked(scores) is not None and shape_of(scores) == shape_of(value):
                mask, value = other, scores
                absorbed.append(add)
                break
        else:
            raise LookupError("no Q K^T product under the Add")
    found = _unmasked(value)
    if found is None:
        raise LookupError("no Q K^T product")
    matmul, scale, ops = found
    return matmul, scale, mask, absorbed + ops


def _unmasked(value: SSAValue) -> tuple[graph.MatMulOp, float, list[Operation]] | None:
    """(matmul, scale, ops) when `value` is Q K^T optionally scaled by a scalar constant."""
    matmul = producer(value, graph.MatMulOp)
    if matmul is not None:
        return matmul, 1.0, []
    scaled = scaled_by(value)
    if scaled is None:
        return None
    matmul = producer(scaled[0], graph.MatMulOp)
    return None if matmul is None else (matmul, scaled[1], [value.owner])


def _untransposed_key(rewriter: PatternRewriter, kt: SSAValue, before: Operation) -> SSAValue:
    """K as [..., Sk, D] from K^T: the producing Transpose with its last two entries swapped."""
    rank = len(shape_of(kt))
    swap = [*range(rank - 2), rank - 1, rank - 2]
    transpose = producer(kt, graph.TransposeOp)
    source, perm = (transpose.input, list(ints_of(transpose.perm))) if transpose else (kt, None)
    if perm is not None:
        perm = [perm[s] for s in swap]
    else:
        perm = swap
    if perm == list(range(rank)):
        return source
    shape = graph_shapes.transpose_shape(shape_of(source), perm)
    op = graph.TransposeOp(
        operands=[source],
        result_types=[graph.tensor_type(shape, element_type(kt))],
        properties={"perm": DenseArrayBase.from_list(i64, perm)},
    )
    rewriter.insert(op, InsertPoint.before(before))
    return op.output


class FuseAttention(RewritePattern):
    """MatMul(Softmax(scale * Q K^T + mask, -1), V) -> graph.attention(Q, K, V, mask)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.MatMulOp, rewriter: PatternRewriter) -> None:
        if not float_result(op):
            return
        softmax = producer(op.lhs, graph.SoftmaxOp)
        if softmax is None:
            return
        rank = len(shape_of(softmax.input))
        if rank < 2 or int_of(softmax.axis) % rank != rank - 1:
            return
        try:
            qk, scale, mask, absorbed = _scores(softmax.input)
        except LookupError:
            return
        q, kt, v = qk.lhs, qk.rhs, op.rhs
        if len(shape_of(q)) != rank or len(shape_of(kt)) != rank or len(shape_of(v)) != rank:
            return
        chain = [qk, *absorbed, softmax, op]
        internal = [r for o in chain[:-1] for r in o.results]
        if not used_only_by(internal, chain):
            return
        if mask is not None and element_type(mask) != element_type(q):
            return
        if shape_of(kt)[:-2] != shape_of(q)[:-2] or shape_of(v)[:-2] != shape_of(q)[:-2]:
            return  # broadcast batch dimensions are not fused
        # Both MatMuls and the Add verified, so Q, K, V and the mask now chain (see
        # AttentionOp.infer_shapes): inserting K's Transpose cannot be wasted.
        key = _untransposed_key(rewriter, kt, op)
        attention = graph.AttentionOp(
            operands=[q, key, v, mask],
            result_types=[op.output.type],
            properties={"scale": FloatAttr(scale, element_type(q))},
        )
        rewriter.replace(op, attention)


# --------------------------------------------------------------------------- pass


@dataclass(frozen=True)
class FuseAttentionPass(GraphPatternPass):
    """MatMul(Softmax(scale * Q K^T + mask), V) -> graph.attention (no N x N buffer)."""

    name = "fuse-attention"
    patterns = (FuseAttention,)
