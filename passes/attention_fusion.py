"""Attention fusion: scaled dot-product attention as exporters write it -> graph.attention.

  scores = MatMul(Q, Transpose(K)) ; scores = scores / c  (or * c, or neither)
  scores = scores + mask (optional) ; P = Softmax(scores, axis=-1) ; out = MatMul(P, V)
P may also come as Where(IsNaN(P), 0, P) (transformers' SDPA exports: a row with no key to
attend is 0, not NaN): the attention's `zero_nan_rows`.
The score matrix (Sq x Sk per head) is what the fused kernel never materialises. K^T is
usually a Transpose of the head-split K ([B,S,H,D] -> [B,H,D,S]); the attention op takes K
as [..., Sk, D], so that Transpose is replaced by its permutation with the last two entries
swapped (none at all when that is the identity).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import DenseArrayBase, FloatAttr, IntegerAttr, UnitAttr, i64
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from onnxc.dialects import graph, graph_shapes
from onnxc.dialects.graph import int_of, ints_of, shape_of
from onnxc.passes.base import GraphPatternPass
from onnxc.passes.constants import constant_value, element_type
from onnxc.passes.fusion_match import (
    float_result,
    operand_orders,
    producer,
    scalar_constant,
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


def _nan_rows_zeroed(value: SSAValue) -> tuple[graph.WhereOp, graph.IsNaNOp] | None:
    """(where, is_nan) when `value` is Where(IsNaN(p), 0, p) with a zero scalar constant."""
    where = producer(value, graph.WhereOp)
    if where is None:
        return None
    is_nan = producer(where.condition, graph.IsNaNOp)
    if is_nan is None or is_nan.input != where.y or scalar_constant(where.x) != 0.0 \
            or shape_of(where.output) != shape_of(where.y):
        return None
    return where, is_nan


class FuseAttention(RewritePattern):
    """MatMul(Softmax(scale * Q K^T + mask, -1), V) -> graph.attention(Q, K, V, mask)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.MatMulOp, rewriter: PatternRewriter) -> None:
        if not float_result(op):
            return
        guard = _nan_rows_zeroed(op.lhs)
        softmax = producer(op.lhs if guard is None else guard[0].y, graph.SoftmaxOp)
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
        chain = [qk, *absorbed, softmax, *(guard or ()), op]
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
        properties = {"scale": FloatAttr(scale, element_type(q))}
        if guard is not None:
            properties["zero_nan_rows"] = UnitAttr()
        attention = graph.AttentionOp(
            operands=[q, key, v, mask], result_types=[op.output.type], properties=properties)
        rewriter.replace(op, attention)


def causal_offset_of(allowed: np.ndarray) -> int | None:
    """`offset` >= 0 when the boolean array `allowed` [1, .., Sq, Sk] is exactly key j <= query
    i + offset (a causal triangle, shifted right by a past of `offset` keys), else None."""
    if allowed.ndim < 2 or any(d != 1 for d in allowed.shape[:-2]):
        return None
    rows = allowed.reshape(allowed.shape[-2:])
    offset = int(rows[0].sum()) - 1
    i, j = np.indices(rows.shape)
    return offset if offset >= 0 and np.array_equal(rows, j <= i + offset) else None


class CausalMaskToOffset(RewritePattern):
    """graph.attention with the additive mask Where(And(C, P), 0, -inf) (or Where(C, 0,
    -inf)), C a constant causal triangle: `causal_offset` and the mask Where(P, 0, -inf)
    (or none). GPT-2's exports build C from a constant buffer and P from the attention
    mask: the kernel then skips the key blocks past the diagonal and reads one mask row
    for all queries instead of gathering a [Sq, Sk] one lane by lane. Exact: the kernel's
    causal mask adds -inf, as the Where did (a row with no key left is 0 / 0 either way)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.AttentionOp, rewriter: PatternRewriter) -> None:
        if op.mask is None or op.causal_offset is not None or op.causal_from_end is not None:
            return
        where = producer(op.mask, graph.WhereOp)
        if where is None or scalar_constant(where.x) != 0.0 \
                or scalar_constant(where.y) != -np.inf:
            return
        sq, sk = shape_of(op.query)[-2], shape_of(op.key)[-2]
        both = producer(where.condition, graph.AndOp)
        pairs = list(operand_orders(both)) if both is not None else [(where.condition, None)]
        for triangle, rest in pairs:
            allowed = constant_value(triangle)
            if allowed is None or allowed.dtype != np.bool_ or allowed.shape[-2:] != (sq, sk):
                continue
            offset = causal_offset_of(allowed)
            if offset is None:
                continue
            mask = None
            if rest is not None:
                shape = graph_shapes.broadcast_shapes(
                    shape_of(rest), shape_of(where.x), shape_of(where.y))
                mask_op = graph.WhereOp(operands=[rest, where.x, where.y],
                                        result_types=[graph.tensor_type(shape, element_type(op.mask))])
                rewriter.insert(mask_op, InsertPoint.before(op))
                mask = mask_op.output
            rewriter.replace(op, graph.AttentionOp(
                operands=[op.query, op.key, op.value, mask], result_types=[op.output.type],
                properties={**op.properties, "causal_offset": IntegerAttr(offset, i64)}))
            return


# --------------------------------------------------------------------------- pass


@dataclass(frozen=True)
class FuseAttentionPass(GraphPatternPass):
    """MatMul(Softmax(scale * Q K^T + mask), V) -> graph.attention (no N x N buffer); a
    constant causal triangle in its mask -> its causal_offset."""

    name = "fuse-attention"
    patterns = (FuseAttention, CausalMaskToOffset)
