"""Training losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss -> graph ops.

Both are composed here from existing graph ops (no kernel of their own), following the
functions ONNX defines them by:

    log_prob = LogSoftmax(scores, axis=1)                       (SoftmaxCrossEntropyLoss only)
    loss[n, d...] = -input[n, target[n, d...], d...] * weight[target[n, d...]]
    loss = 0 where target == ignore_index

then reduction "none" (loss), "sum" or "mean" (sum divided by the sum of the weights of the
targets that are not ignored: their count without a weight input).

Targets are run-time data indexing the class axis. Ignored positions are replaced by class 0
before anything reads with them, and a `graph.check_indices` with range [0, C) (no ONNX
wrap-around: a negative class is an error, not class C - 1) guards the rest, so a bad target
is an InvalidInputError naming the node, never a read outside the input.
"""

from __future__ import annotations

from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, IntegerType, StringAttr, i64
from xdsl.ir import SSAValue

from onnxc.dialects import graph, graph_gather_scatter
from onnxc.frontend import onnx_types as types
from onnxc.frontend.onnx_context import NodeContext, Result
from onnxc.frontend.onnx_ops_math import Converter
from onnxc.frontend.onnx_ops_reduce import binary, emit, log_softmax, reduce, reshape, unary

_REDUCTIONS = ("none", "sum", "mean")
_FLOATS = (types.TP.FLOAT, types.TP.DOUBLE)
_INDICES = (types.TP.INT32, types.TP.INT64)


def _check_operands(ctx: NodeContext) -> tuple[int, int]:
    """(N, C) of the scores, after the shape and type checks the loss needs."""
    x, t = ctx.shape(0), ctx.shape(1)
    if types.onnx_type_of_element(ctx.element_type(0)) not in _FLOATS:
        raise ctx.unsupported(f"element type {ctx.element_type(0)} (float and double only)")
    if types.onnx_type_of_element(ctx.element_type(1)) not in _INDICES:
        raise ctx.invalid(f"target element type {ctx.element_type(1)} is not int32 or int64")
    if len(x) < 2:
        raise ctx.invalid(f"input must have rank >= 2 (N, C, d1, ...), got shape {list(x)}")
    if t != (x[0], *x[2:]):
        raise ctx.invalid(f"target shape {list(t)} does not match input {list(x)}: "
                          f"expected {[x[0], *x[2:]]}")
    if ctx.has_input(2):
        if ctx.shape(2) != (x[1],):
            raise ctx.invalid(f"weight shape {list(ctx.shape(2))} is not [C] = [{x[1]}]")
        if ctx.element_type(2) != ctx.element_type(0):
            raise ctx.invalid("weight element type differs from the input's")
    reduction = ctx.attr("reduction", "mean")
    if reduction not in _REDUCTIONS:
        raise ctx.invalid(f"reduction '{reduction}' is not one of {list(_REDUCTIONS)}")
    return x[0], x[1]


def _guarded_target(ctx: NodeContext, classes: int) -> tuple[SSAValue, SSAValue | None]:
    """(target with ignored positions set to class 0, the i1 mask of ignored positions or
    None), the former checked to lie in [0, classes) at run time."""
    target = ctx.operand(1)
    index_el = ctx.element_type(1)
    ignored = None
    if ctx.has_attr("ignore_index"):
        ignore = ctx.scalar(int(ctx.attr("ignore_index")), index_el)
        ignored = emit(ctx, graph.EqualOp, [target, ignore], ctx.shape(1), IntegerType(1))
        target = emit(ctx, graph.WhereOp, [ignored, ctx.scalar(0, index_el), target],
                      ctx.shape(1), index_el)
    ctx.emit(graph.CheckIndicesOp(operands=[target], properties={
        "bounds": DenseArrayBase.from_list(i64, [classes]),
        "negative": IntegerAttr(0, i64),
        "node": StringAttr(ctx.label),
        "op_type": StringAttr(ctx.op_type),
        "operand": StringAttr("target"),
    }))
    return target, ignored


def _loss(ctx: NodeContext, log_prob: SSAValue) -> SSAValue:
    """The loss of `log_prob` [N, C, d...] (the input of NegativeLogLikelihoodLoss) against
    the node's target, weight and ignore_index, reduced as its `reduction` says."""
    n, classes = _check_operands(ctx)
    x_shape, t_shape = graph.shape_of(log_prob), ctx.shape(1)
    el = log_prob.type.get_element_type()
    target, ignored = _guarded_target(ctx, classes)
    # -log_prob[n, target[n, d...], d...], read along the class axis
    column = reshape(ctx, target, (n, 1, *x_shape[2:]))
    picked = emit(ctx, graph_gather_scatter.GatherElementsOp, [log_prob, column],
                  graph.shape_of(column), el, {"axis": types.i64_attr(1)})
    loss = unary(ctx, graph.NegOp, reshape(ctx, picked, t_shape))
    weight = None
    if ctx.has_input(2):
        weight = emit(ctx, graph.GatherOp, [ctx.operand(2), target], t_shape, el,
                      {"axis": types.i64_attr(0)})
        loss = binary(ctx, graph.MulOp, loss, weight)
    if ignored is not None:
        zero = ctx.scalar(0.0, el)
        # a select, not a product with 0: an ignored -inf log-probability gives 0, not NaN
        loss = emit(ctx, graph.WhereOp, [ignored, zero, loss], t_shape, el)
        if weight is None:
            weight = emit(ctx, graph.WhereOp, [ignored, zero, ctx.scalar(1.0, el)], t_shape, el)
        else:
            weight = emit(ctx, graph.WhereOp, [ignored, zero, weight], t_shape, el)
    reduction = ctx.attr("reduction", "mean")
    if reduction == "none":
        return loss
    axes = list(range(len(t_shape)))
    total = reduce(ctx, graph.ReduceSumOp, loss, axes, False)
    if reduction == "sum":
        return total
    if weight is None:
        return reduce(ctx, graph.ReduceMeanOp, loss, axes, False)
    return binary(ctx, graph.DivOp, total, reduce(ctx, graph.ReduceSumOp, weight, axes, False))


def convert_negative_log_likelihood_loss(ctx: NodeContext) -> list[Result]:
    return [_loss(ctx, ctx.operand(0))]


def convert_softmax_cross_entropy_loss(ctx: NodeContext) -> list[Result]:
    """The NLL loss of LogSoftmax(scores, axis=1); that is also the optional log_prob."""
    _check_operands(ctx)
    log_prob = log_softmax(ctx, ctx.operand(0), 1)
    return [_loss(ctx, log_prob), log_prob][: max(1, ctx.num_outputs)]


CONVERTERS: dict[str, Converter] = {
    "NegativeLogLikelihoodLoss": convert_negative_log_likelihood_loss,
    "SoftmaxCrossEntropyLoss": convert_softmax_cross_entropy_loss,
}
