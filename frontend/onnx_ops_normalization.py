"""LayerNormalization's statistics outputs and RMSNormalization: ONNX nodes -> graph ops.

LayerNormalization with only Y used is one `graph.layer_normalization` (onnx_ops_nn); when
the training outputs Mean and InvStdDev are used too it is one
`graph.layer_normalization_stats`, the same kernel storing each row's statistics.
RMSNormalization (opset 23) is one `graph.rms_normalization`, LayerNorm's kernel without the
mean.

`stash_type` is the precision of the statistics: where it differs from the input's type
(double inputs with the default float), the operands are cast to it and Y cast back.
"""

from __future__ import annotations

from xdsl.ir import Attribute, SSAValue

from onnxc.dialects import graph
from onnxc.dialects import graph_shapes as shapes
from onnxc.frontend import onnx_types as types
from onnxc.frontend.onnx_context import NodeContext, Result
from onnxc.frontend.onnx_ops_math import Converter
from onnxc.frontend.onnx_ops_reduce import emit

_STASH_TYPES = (types.TP.FLOAT, types.TP.DOUBLE)


def _axis(ctx: NodeContext) -> int:
    return ctx.infer(lambda: (shapes.normalize_axis(ctx.attr("axis", -1), ctx.rank(0)),))[0]


def _stash_element(ctx: NodeContext) -> Attribute:
    """The element type the statistics are computed in (attribute `stash_type`)."""
    stash = ctx.attr("stash_type", types.TP.FLOAT)
    if stash not in _STASH_TYPES:
        raise ctx.unsupported(f"stash_type {stash} (float and double only)")
    if not types.is_float(ctx.element_type(0)):
        raise ctx.invalid(f"input element type {ctx.element_type(0)} is not a float")
    return types.element_type(stash)


def cast(ctx: NodeContext, x: SSAValue, el: Attribute) -> SSAValue:
    if x.type.get_element_type() == el:
        return x
    return emit(ctx, graph.CastOp, [x], graph.shape_of(x), el)


def layer_normalization_with_statistics(ctx: NodeContext) -> list[Result]:
    """Y, Mean and InvStdDev of LayerNormalization-17 from one graph.layer_normalization_stats,
    the statistics of shape x.shape[:axis] + [1] * (rank - axis) in the stash type."""
    axis, el = _axis(ctx), ctx.element_type(0)
    stash = _stash_element(ctx)
    operands = [cast(ctx, ctx.operand(i), stash) for i in range(3) if ctx.has_input(i)]
    if any(v.type.get_element_type() != stash for v in operands):
        raise ctx.invalid("scale or bias element type differs from the input's")
    x = graph.shape_of(operands[0])
    statistics = types.tensor_type((*x[:axis], *(1,) * (len(x) - axis)), stash)
    op = graph.LayerNormalizationStatsOp(
        operands=[operands[0], operands[1], operands[2] if len(operands) > 2 else None],
        result_types=[operands[0].type, statistics, statistics],
        properties={
            "axis": types.i64_attr(axis),
            "epsilon": types.float_attr(ctx.attr("epsilon", 1e-5)),
        },
    )
    y, mean, inv_std = ctx.emit(op).results
    y = cast(ctx, y, el) if ctx.output_used(0) else None
    return [y, mean, inv_std][: max(1, ctx.num_outputs)]


def convert_rms_normalization(ctx: NodeContext) -> list[Result]:
    """RMSNormalization-23: X / sqrt(mean(X^2 over [axis, rank)) + epsilon) * scale."""
    axis, el = _axis(ctx), ctx.element_type(0)
    stash = _stash_element(ctx)
    if ctx.element_type(1) != el:
        raise ctx.unsupported(f"scale element type {ctx.element_type(1)} differing from the "
                              f"input's {el}")
    x = cast(ctx, ctx.operand(0), stash)
    scale = cast(ctx, ctx.operand(1), stash)
    op = graph.RMSNormalizationOp(
        operands=[x, scale],
        result_types=[x.type],
        properties={
            "axis": types.i64_attr(axis),
            "epsilon": types.float_attr(ctx.attr("epsilon", 1e-5)),
        },
    )
    return [cast(ctx, ctx.emit1(op), el)]


CONVERTERS: dict[str, Converter] = {
    "RMSNormalization": convert_rms_normalization,
}
