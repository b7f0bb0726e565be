"""Horizontal fusion: sibling ops reading one input become one wider op plus a Split.

Two families, the ones CPU models actually have:
- MatMuls of one activation by constant 2-D weights (BERT's Q/K/V projections): the weights
  are concatenated along N; when every sibling's only reader is an Add of a constant bias
  along N (a PyTorch Linear), the biases are concatenated too and the Split follows the Add;
- Gemms of one A by constant B with per-column constant C (nn.Linear on 2-D input);
- Convs of one input with equal strides, pads, dilations and kernel size, group 1 and
  constant weights (the parallel 1x1 branches of an Inception block): weights and biases
  are concatenated along the output channels.
Siblings join only when all their properties agree (an activation epilogue included).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import IntegerAttr, i64
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from onnxc.dialects import graph
from onnxc.dialects.graph import shape_of
from onnxc.dialects.graph_epilogue import epilogue_of
from onnxc.passes.base import GraphPatternPass
from onnxc.passes.constants import constant_value, element_type, insert_constant, per_channel
from onnxc.passes.fusion_match import float_result


def _siblings(op: Operation, value: SSAValue, same_kind) -> list[Operation]:
    """Ops in `op`'s block that read `value` and satisfy `same_kind`, in block order.

    Only `value`'s readers are tested, and the block is walked (from `value`'s definition
    on) only to order two or more of them: walking the whole block for every op made the
    pass quadratic in the size of the graph."""
    block = op.parent_block()
    if block is None:
        return []
    readers = {id(u.operation): u.operation for u in value.uses}.values()
    found = [o for o in readers if o.parent_block() is block and same_kind(o)]
    if len(found) < 2:
        return found
    pending = {id(o) for o in found}
    owner = value.owner
    current = (owner.next_op if isinstance(owner, Operation) and owner.parent_block() is block
               else block.first_op)
    ordered: list[Operation] = []
    while pending and current is not None:
        if id(current) in pending:
            ordered.append(current)
            pending.discard(id(current))
        current = current.next_op
    return ordered


def _split_into(
    rewriter: PatternRewriter, wide: SSAValue, parts: list[SSAValue], axis: int, at: Operation
) -> list[SSAValue]:
    """Split `wide` along `axis` into values typed like `parts`."""
    split = graph.SplitOp(
        operands=[wide], result_types=[[p.type for p in parts]],
        properties={"axis": IntegerAttr(axis, i64)},
    )
    rewriter.insert(split, InsertPoint.before(at))
    return list(split.outputs)


# --------------------------------------------------------------------------- MatMul


def _matmul_weight(op: Operation, x: SSAValue) -> np.ndarray | None:
    if not isinstance(op, graph.MatMulOp) or op.lhs != x or not float_result(op):
        return None
    if len(shape_of(x)) < 2:
        return None
    w = constant_value(op.rhs)
    return w if w is not None and w.ndim == 2 else None


def _bias_add(op: graph.MatMulOp) -> tuple[graph.AddOp, np.ndarray] | None:
    """(Add, bias over N) when the MatMul's only reader adds a constant bias along N."""
    if not op.output.has_one_use() or epilogue_of(op) is not None:
        return None
    add = op.output.get_user_of_unique_use()
    if not isinstance(add, graph.AddOp) or shape_of(add.output) != shape_of(op.output):
        return None
    other = add.rhs if add.lhs == op.output else add.lhs
    bias = constant_value(other)
    out = shape_of(op.output)
    vector = per_channel(bias, out, axis=len(out) - 1) if bias is not None else None
    return None if vector is None else (add, vector)


class FuseSiblingMatMuls(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.MatMulOp, rewriter: PatternRewriter) -> None:
        x = op.lhs
        if _matmul_weight(op, x) is None:
            return
        k, el, props = shape_of(op.rhs)[0], element_type(op.output), dict(op.properties)

        def same_kind(o: Operation) -> bool:
            w = _matmul_weight(o, x)
            return (w is not None and w.shape[0] == k and element_type(o.results[0]) == el
                    and dict(o.properties) == props)

        group = _siblings(op, x, same_kind)
        if len(group) < 2 or group[0] is not op:
            return
        weights = np.concatenate([_matmul_weight(o, x) for o in group], axis=1)
        adds = [_bias_add(o) for o in group]
        out_shape = (*shape_of(op.output)[:-1], weights.shape[1])
        wide_type = graph.tensor_type(out_shape, el)
        w = insert_constant(rewriter, weights, el, op)
        wide = graph.MatMulOp(operands=[x, w], result_types=[wide_type], properties=props)
        rewriter.insert(wide, InsertPoint.before(op))
        axis = len(out_shape) - 1
        if all(a is not None for a in adds):
            bias = insert_constant(rewriter, np.concatenate([b for _, b in adds]), el, op)
            biased = graph.AddOp(operands=[wide.output, bias], result_types=[wide_type])
            rewriter.insert(biased, InsertPoint.before(op))
            parts = _split_into(rewriter, biased.output, [a.output for a, _ in adds], axis, op)
            for (a, _), part in zip(adds, parts):
                rewriter.replace_all_uses_with(a.output, part)
            for (a, _), o in zip(adds, group):
                rewriter.erase(a)
                rewriter.erase(o)
            return
        parts = _split_into(rewriter, wide.output, [o.results[0] for o in group], axis, op)
        for o, part in zip(group, parts):
            rewriter.replace(o, [], [part])


# --------------------------------------------------------------------------- Gemm


def _gemm_parts(op: Operation, x: SSAValue) -> tuple[np.ndarray, np.ndarray] | None:
    """(weight as K x N, bias over N) of a Gemm of `x` by constants, or None."""
    if not isinstance(op, graph.GemmOp) or op.a != x or not float_result(op):
        return None
    w = constant_value(op.b)
    if w is None:
        return None
    w = w.T if int(op.trans_b.value.data) else w
    n = shape_of(op.output)[1]
    if op.c is None:
        return w, np.zeros(n)
    c = constant_value(op.c)
    bias = per_channel(c, shape_of(op.output), axis=1) if c is not None else None
    return None if bias is None else (w, bias)


class FuseSiblingGemms(RewritePattern):
    """Gemms of one A by constant B (torch's nn.Linear on 2-D input: transB = 1) and
    per-column constant C -> one Gemm with B and C concatenated along N, plus a Split."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.GemmOp, rewriter: PatternRewriter) -> None:
        x = op.a
        if _gemm_parts(op, x) is None:
            return
        key = {k: v for k, v in op.properties.items() if k not in ("transB", "beta")}
        el = element_type(op.output)

        def same_kind(o: Operation) -> bool:
            return (_gemm_parts(o, x) is not None and element_type(o.results[0]) == el
                    and {k: v for k, v in o.properties.items()
                         if k not in ("transB", "beta")} == key)

        group = _siblings(op, x, same_kind)
        if len(group) < 2 or group[0] is not op:
            return
        betas = {float(o.beta.value.data) for o in group if o.c is not None}
        if len(betas) > 1:
            return  # one wide C needs one beta
        beta = betas.pop() if betas else 1.0
        parts = [_gemm_parts(o, x) for o in group]
        weights = np.concatenate([w for w, _ in parts], axis=1)
        bias = np.concatenate([b for _, b in parts])
        m = shape_of(op.output)[0]
        props = {**op.properties, "transB": IntegerAttr(0, i64), "beta": type(op.beta)(beta, el)}
        wide = graph.GemmOp(
            operands=[x, insert_constant(rewriter, weights, el, op),
                      insert_constant(rewriter, bias, el, op)],
            result_types=[graph.tensor_type((m, weights.shape[1]), el)], properties=props,
        )
        rewriter.insert(wide, InsertPoint.before(op))
        outs = _split_into(rewriter, wide.output, [o.output for o in group], 1, op)
        for o, part in zip(group, outs):
            rewriter.replace(o, [], [part])


# --------------------------------------------------------------------------- Conv


def _conv_key(op: Operation, x: SSAValue) -> tuple | None:
    """What sibling convs must share to be concatenated, or None when `op` cannot join."""
    if not isinstance(op, graph.ConvOp) or op.input != x or not float_result(op):
        return None
    if int(op.group.value.data) != 1 or constant_value(op.weight) is None:
        return None
    if op.bias is not None and constant_value(op.bias) is None:
        return None
    # every property (strides, pads, dilations, group, epilogue, ...) must agree
    return (shape_of(op.weight)[1:], element_type(op.output), dict(op.properties))


class FuseSiblingConvs(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ConvOp, rewriter: PatternRewriter) -> None:
        x = op.input
        key = _conv_key(op, x)
        if key is None:
            return
        group = _siblings(op, x, lambda o: _conv_key(o, x) == key)
        if len(group) < 2 or group[0] is not op:
            return
        el = element_type(op.output)
        weights = np.concatenate([constant_value(o.weight) for o in group], axis=0)
        biases = np.concatenate([
            constant_value(o.bias) if o.bias is not None else np.zeros(shape_of(o.weight)[0])
            for o in group
        ])
        out = shape_of(op.output)
        wide_type = graph.tensor_type((out[0], weights.shape[0], *out[2:]), el)
        wide = graph.ConvOp(
            operands=[x, insert_constant(rewriter, weights, el, op),
                      insert_constant(rewriter, biases, el, op)],
            result_types=[wide_type], properties=dict(op.properties),
        )
        rewriter.insert(wide, InsertPoint.before(op))
        parts = _split_into(rewriter, wide.output, [o.output for o in group], 1, op)
        for o, part in zip(group, parts):
            rewriter.replace(o, [], [part])


# --------------------------------------------------------------------------- pass


@dataclass(frozen=True)
class HorizontalFusionPass(GraphPatternPass):
    """Sibling MatMuls/Gemms/Convs of one input -> one wider op plus a Split."""

    name = "horizontal-fusion"
    patterns = (FuseSiblingMatMuls, FuseSiblingGemms, FuseSiblingConvs)
