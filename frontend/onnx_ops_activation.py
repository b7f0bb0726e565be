"""Activations the graph dialect has no op for, written as a few elementwise graph ops.

Each is exact in real arithmetic; the forms avoid overflow (Elu/Selu/Celu only take exp
of min(x, 0)). Only floating-point inputs are accepted, as ONNX requires.
"""

from __future__ import annotations

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import SSAValue

from onnxc.dialects import graph
from onnxc.dialects import graph_shapes as shapes
from onnxc.frontend import onnx_types as types
from onnxc.frontend.batch_axes import sample_wise
from onnxc.frontend.onnx_context import NodeContext, Result
from onnxc.frontend.onnx_ops_math import Converter


class _Builder:
    """Emits elementwise graph ops with broadcast result types."""

    def __init__(self, ctx: NodeContext):
        if not types.is_float(ctx.element_type(0)):
            raise ctx.unsupported(f"{ctx.op_type} of {ctx.element_type(0)} tensors")
        self.ctx = ctx
        self.el = ctx.element_type(0)

    def const(self, value: float) -> SSAValue:
        return self.ctx.scalar(value, self.el)

    def unary(self, op_class, x: SSAValue) -> SSAValue:
        return self.ctx.emit1(op_class(operands=[x], result_types=[x.type]))

    def binary(self, op_class, lhs: SSAValue, rhs: SSAValue | float) -> SSAValue:
        if not isinstance(rhs, SSAValue):
            rhs = self.const(rhs)
        out = self.ctx.infer(shapes.broadcast_shapes, graph.shape_of(lhs), graph.shape_of(rhs))
        return self.ctx.emit1(
            op_class(operands=[lhs, rhs], result_types=[types.tensor_type(out, self.el)])
        )

    def negative_part(self, x: SSAValue) -> SSAValue:
        """min(x, 0)."""
        return self.ctx.emit1(graph.MinOp(operands=[[x, self.const(0.0)]], result_types=[x.type]))

    def exp_minus_one(self, x: SSAValue, alpha: float, scale: float = 1.0) -> SSAValue:
        """alpha * (exp(scale * min(x, 0)) - 1): zero for x >= 0, never overflows."""
        t = self.negative_part(x)
        if scale != 1.0:
            t = self.binary(graph.MulOp, t, scale)
        t = self.binary(graph.SubOp, self.unary(graph.ExpOp, t), 1.0)
        return self.binary(graph.MulOp, t, alpha)


def convert_prelu(ctx: NodeContext) -> list[Result]:
    """PRelu = relu(x) + slope * min(x, 0)."""
    b = _Builder(ctx)
    x = ctx.operand(0)
    slope = ctx.operand(1)
    x_shape, slope_shape = ctx.shape(0), ctx.shape(1)
    if ctx.opset < 7 and len(slope_shape) == 1 and len(x_shape) > 2 \
            and slope_shape[0] == x_shape[1] != 1:
        # PRelu-6 applies a [C] slope per channel (legacy broadcast): make it [C, 1, ..., 1]
        per_channel = (x_shape[1], *([1] * (len(x_shape) - 2)))
        slope_type = types.tensor_type(per_channel, slope.type.get_element_type())
        slope = ctx.emit1(graph.ReshapeOp(operands=[slope], result_types=[slope_type]))
    elif ctx.infer(shapes.broadcast_shapes, x_shape, slope_shape) != x_shape:
        raise ctx.invalid(f"slope {slope_shape} does not broadcast to {x_shape}")
    negative = b.binary(graph.MulOp, b.negative_part(x), slope)
    return [b.binary(graph.AddOp, b.unary(graph.ReluOp, x), negative)]


def _hard_sigmoid(b: _Builder, x: SSAValue, alpha: float, beta: float) -> SSAValue:
    t = b.binary(graph.AddOp, b.binary(graph.MulOp, x, alpha), beta)
    props = {"min": types.float_attr(0.0, b.el), "max": types.float_attr(1.0, b.el)}
    return b.ctx.emit1(graph.ClipOp(operands=[t], result_types=[t.type], properties=props))


def convert_hard_sigmoid(ctx: NodeContext) -> list[Result]:
    """HardSigmoid = clip(alpha * x + beta, 0, 1)."""
    b = _Builder(ctx)
    alpha, beta = ctx.attr("alpha", 0.2), ctx.attr("beta", 0.5)
    return [_hard_sigmoid(b, ctx.operand(0), alpha, beta)]


def convert_hard_swish(ctx: NodeContext) -> list[Result]:
    """HardSwish = x * HardSigmoid(x) with alpha = 1/6, beta = 0.5."""
    b = _Builder(ctx)
    x = ctx.operand(0)
    return [b.binary(graph.MulOp, x, _hard_sigmoid(b, x, 1 / 6, 0.5))]


def convert_softsign(ctx: NodeContext) -> list[Result]:
    """Softsign = x / (1 + |x|)."""
    b = _Builder(ctx)
    x = ctx.operand(0)
    return [b.binary(graph.DivOp, x, b.binary(graph.AddOp, b.unary(graph.AbsOp, x), 1.0))]


def convert_elu(ctx: NodeContext) -> list[Result]:
    """Elu = relu(x) + alpha * (exp(min(x, 0)) - 1)."""
    b = _Builder(ctx)
    x = ctx.operand(0)
    negative = b.exp_minus_one(x, ctx.attr("alpha", 1.0))
    return [b.binary(graph.AddOp, b.unary(graph.ReluOp, x), negative)]


def convert_selu(ctx: NodeContext) -> list[Result]:
    """Selu = gamma * Elu_alpha(x)."""
    b = _Builder(ctx)
    x = ctx.operand(0)
    alpha = ctx.attr("alpha", 1.67326319217681884765625)
    gamma = ctx.attr("gamma", 1.05070102214813232421875)
    elu = b.binary(graph.AddOp, b.unary(graph.ReluOp, x), b.exp_minus_one(x, alpha))
    return [b.binary(graph.MulOp, elu, gamma)]


def convert_celu(ctx: NodeContext) -> list[Result]:
    """Celu = relu(x) + alpha * (exp(min(x, 0) / alpha) - 1)."""
    b = _Builder(ctx)
    x = ctx.operand(0)
    alpha = ctx.attr("alpha", 1.0)
    negative = b.exp_minus_one(x, alpha, scale=1.0 / alpha)
    return [b.binary(graph.AddOp, b.unary(graph.ReluOp, x), negative)]


def convert_swish(ctx: NodeContext) -> list[Result]:
    """Swish = x * sigmoid(alpha * x)."""
    b = _Builder(ctx)
    x = ctx.operand(0)
    alpha = ctx.attr("alpha", 1.0)
    scaled = x if alpha == 1.0 else b.binary(graph.MulOp, x, alpha)
    return [b.binary(graph.MulOp, x, b.unary(graph.SigmoidOp, scaled))]


def convert_gelu(ctx: NodeContext) -> list[Result]:
    """Gelu-20, both the exact (erf) form and approximate="tanh", as one graph.gelu."""
    approximate = ctx.attr("approximate", "none")
    if approximate not in ("none", "tanh"):
        raise ctx.invalid(f"approximate must be 'none' or 'tanh', not '{approximate}'")
    _Builder(ctx)  # rejects non-float inputs
    op = graph.GeluOp(operands=[ctx.operand(0)], result_types=[ctx.tensor(0).type],
                      properties={"approximate": StringAttr(approximate)})
    return [ctx.emit1(op)]


CONVERTERS: dict[str, Converter] = {
    "PRelu": sample_wise(convert_prelu),
    "HardSigmoid": sample_wise(convert_hard_sigmoid),
    "HardSwish": sample_wise(convert_hard_swish),
    "Softsign": sample_wise(convert_softsign),
    "Elu": sample_wise(convert_elu),
    "Selu": sample_wise(convert_selu),
    "Celu": sample_wise(convert_celu),
    "Swish": sample_wise(convert_swish),
    "Gelu": sample_wise(convert_gelu),
}
