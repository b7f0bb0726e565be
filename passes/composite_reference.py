"""numpy semantics of the ops the fusion and replacement passes create (graph_composite,
graph_fused_elementwise), entries of the evaluator's table. A fused op's body runs as a
small interpreter over its arith/math ops, on whole arrays, in the body's types as the
kernel computes them."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.dialects import arith, math
from xdsl.ir import Operation, SSAValue

from onnxc.dialects import graph
from onnxc.dialects.graph import int_of
from onnxc.dialects.graph_fused_elementwise import cmpf_predicate
from onnxc.passes.constants import numpy_dtype

_OPS: dict[type[Operation], Callable[..., np.ndarray]] = {
    arith.AddfOp: np.add, arith.SubfOp: np.subtract, arith.MulfOp: np.multiply,
    arith.DivfOp: np.divide, arith.NegfOp: np.negative,
    arith.MaximumfOp: np.maximum, arith.MinimumfOp: np.minimum,  # NaN-propagating, as LLVM's
    arith.SelectOp: np.where,
    math.ExpOp: np.exp, math.LogOp: np.log, math.SqrtOp: np.sqrt, math.TanhOp: np.tanh,
    math.AbsFOp: np.abs, math.PowFOp: np.power, math.RoundEvenOp: np.rint,
}
_CONVERSIONS = (arith.UIToFPOp, arith.SIToFPOp, arith.FPToUIOp, arith.FPToSIOp)

_COMPARISONS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "eq": np.equal, "gt": np.greater, "ge": np.greater_equal, "lt": np.less,
    "le": np.less_equal, "ne": np.not_equal,
}


def _compare(predicate: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """arith.cmpf: `o..` is false and `u..` true when either side is NaN."""
    unordered = np.isnan(a) | np.isnan(b)
    if predicate in ("false", "true"):
        return np.full(unordered.shape, predicate == "true")
    if predicate in ("ord", "uno"):
        return unordered if predicate == "uno" else ~unordered
    result = _COMPARISONS[predicate[1:]](a, b)
    return result | unordered if predicate[0] == "u" else result & ~unordered


def run_body(op: graph.FusedElementwiseOp, args: list[np.ndarray]) -> np.ndarray:
    """The body's yield on whole arrays: each scalar op applied elementwise (numpy
    broadcasts as the kernel's loop nest does), in the ops' own types."""
    values: dict[SSAValue, np.ndarray] = dict(zip(op.block.args, args, strict=True))
    with np.errstate(all="ignore"):
        for o in op.body_ops():
            if isinstance(o, arith.ConstantOp):
                result = np.asarray(o.value.value.data, numpy_dtype(o.result.type))
            elif isinstance(o, arith.CmpfOp):
                result = _compare(cmpf_predicate(o), *(values[v] for v in o.operands))
            elif isinstance(o, _CONVERSIONS):  # of integral values in range (verified use)
                result = values[o.operands[0]].astype(numpy_dtype(o.results[0].type))
            elif type(o) in _OPS:
                result = _OPS[type(o)](*(values[v] for v in o.operands))
            else:
                raise NotImplementedError(f"{op.name}: no evaluation of '{o.name}'")
            values[o.results[0]] = np.asarray(result)
    return values[op.yielded()]


def fused_elementwise(op: graph.FusedElementwiseOp, args: list[np.ndarray]) -> list[np.ndarray]:
    out = np.broadcast_to(run_body(op, args), np.broadcast_shapes(*(a.shape for a in args)))
    return [np.array(out, dtype=numpy_dtype(op.output.type.get_element_type()))]


def channel_shuffle(op: graph.ChannelShuffleOp, args: list[np.ndarray]) -> list[np.ndarray]:
    x, g = args[0], int_of(op.group)
    n, c = x.shape[:2]
    grouped = x.reshape(n, g, c // g, *x.shape[2:])
    return [np.ascontiguousarray(np.swapaxes(grouped, 1, 2)).reshape(x.shape)]


def conv_add(op: graph.ConvAddOp, args: list[np.ndarray]) -> list[np.ndarray]:
    """graph.conv's semantics, plus the addend (the evaluator adds the epilogue after)."""
    from onnxc.passes.evaluator import EVALUATORS as GRAPH_EVALUATORS  # it imports this module

    (y,) = GRAPH_EVALUATORS[graph.ConvOp](op, args[:-1])
    return [y + args[-1]]


def pointwise_depthwise(op: graph.PointwiseDepthwiseOp,
                        args: list[np.ndarray]) -> list[np.ndarray]:
    """Its two convs (`stages()`), the 1x1 conv's epilogue between them (the evaluator adds
    the depthwise conv's after)."""
    from onnxc.passes.evaluator import EVALUATORS as GRAPH_EVALUATORS
    from onnxc.passes.evaluator import with_epilogue

    pointwise, depthwise = op.stages()
    (expanded,) = with_epilogue(pointwise, GRAPH_EVALUATORS[graph.ConvOp](pointwise, args[:3]))
    return GRAPH_EVALUATORS[graph.ConvOp](depthwise, [expanded, *args[3:]])


EVALUATORS: dict[type[Operation], Callable[[Operation, list[np.ndarray]], list[np.ndarray]]] = {
    graph.FusedElementwiseOp: fused_elementwise,
    graph.ChannelShuffleOp: channel_shuffle,
    graph.ConvAddOp: conv_add,
    graph.PointwiseDepthwiseOp: pointwise_depthwise,
}
