"""Comparisons, logic, bitwise ops, Where, Mod, IsNaN/IsInf and the unary float math ops
(rounding, Sign, trigonometric, hyperbolic, Softplus, Mish, ThresholdedRelu, Shrink):
ONNX nodes -> graph ops.

Constant operands of the logic ops are still folded at import (onnx_fold); these converters
are the run-time path. Before opset 7, And/Or/Xor/Equal/Less/Greater aligned a broadcast
right operand at `axis`, as the arithmetic ops did (onnx_ops_math handles that).
"""

from __future__ import annotations

from xdsl.dialects.builtin import IntegerType, StringAttr, i1

from onnxc.dialects import graph
from onnxc.dialects import graph_shapes as shapes
from onnxc.frontend import onnx_types as types
from onnxc.frontend.batch_axes import sample_wise
from onnxc.frontend.onnx_context import NodeContext, Result
from onnxc.frontend.onnx_ops_math import Converter, _legacy_broadcast_rhs


def _is_bool(el) -> bool:
    return isinstance(el, IntegerType) and el.width.data == 1


def _is_integer(el) -> bool:
    return isinstance(el, IntegerType) and not _is_bool(el)


def _binary(op_class, check=None, result_el=None, props=None) -> Converter:
    """A broadcasting binary node whose operands share one element type."""

    def convert(ctx: NodeContext) -> list[Result]:
        lhs, rhs = ctx.operand(0), _legacy_broadcast_rhs(ctx, ctx.operand(1))
        el = ctx.element_type(0)
        if rhs.type.get_element_type() != el:
            raise ctx.invalid(f"operand types differ: {el} and {rhs.type.get_element_type()}")
        if check is not None and not check(el):
            raise ctx.unsupported(f"{ctx.op_type} of {el} tensors")
        out = ctx.infer(shapes.broadcast_shapes, graph.shape_of(lhs), graph.shape_of(rhs))
        result = types.tensor_type(out, el if result_el is None else result_el)
        properties = props(ctx, el) if props is not None else {}
        return [ctx.emit1(op_class(operands=[lhs, rhs], result_types=[result],
                                   properties=properties))]

    return convert


def _unary(op_class, check, result_el=None, props=None) -> Converter:
    def convert(ctx: NodeContext) -> list[Result]:
        el = ctx.element_type(0)
        if not check(el):
            raise ctx.unsupported(f"{ctx.op_type} of {el} tensors")
        result = types.tensor_type(ctx.shape(0), el if result_el is None else result_el)
        properties = props(ctx, el) if props is not None else {}
        return [ctx.emit1(op_class(operands=[ctx.operand(0)], result_types=[result],
                                   properties=properties))]

    return convert


def _numeric(el) -> bool:
    return not _is_bool(el)


def _mod_props(ctx: NodeContext, el) -> dict:
    """fmod=0 on floats (numpy.mod, the divisor's sign) is accepted as onnx's reference does."""
    return {"fmod": types.i64_attr(int(ctx.attr("fmod", 0)))}


def _shift_props(ctx: NodeContext, el) -> dict:
    direction = ctx.attr("direction")
    if isinstance(direction, bytes):
        direction = direction.decode()
    if direction not in ("LEFT", "RIGHT"):
        raise ctx.invalid(f"direction must be LEFT or RIGHT, got {direction!r}")
    return {"direction": StringAttr(direction)}


def convert_where(ctx: NodeContext) -> list[Result]:
    cond, x, y = ctx.operand(0), ctx.operand(1), ctx.operand(2)
    if not _is_bool(ctx.element_type(0)):
        raise ctx.invalid(f"condition must be bool, got {ctx.element_type(0)}")
    el = ctx.element_type(1)
    if ctx.element_type(2) != el:
        raise ctx.invalid(f"X and Y types differ: {el} and {ctx.element_type(2)}")
    out = ctx.infer(shapes.broadcast_shapes, *(graph.shape_of(v) for v in (cond, x, y)))
    op = graph.WhereOp(operands=[cond, x, y], result_types=[types.tensor_type(out, el)])
    return [ctx.emit1(op)]


def _is_inf_props(ctx: NodeContext, el) -> dict:
    return {"detect_positive": types.i64_attr(ctx.attr("detect_positive", 1)),
            "detect_negative": types.i64_attr(ctx.attr("detect_negative", 1))}


def _float_props(**defaults):
    def props(ctx: NodeContext, el) -> dict:
        return {name: types.float_attr(ctx.attr(name, value), el)
                for name, value in defaults.items()}

    return props


def convert_bit_cast(ctx: NodeContext) -> list[Result]:
    to = ctx.attr("to")
    if not types.is_supported(to):
        raise ctx.unsupported(f"bit cast to {types.type_name(to)}")
    src, dst = ctx.element_type(0), types.element_type(to)

    def width(el) -> int:
        return 8 if _is_bool(el) else el.bitwidth  # ONNX bools are bytes

    if width(src) != width(dst):
        raise ctx.invalid(f"{src} and {dst} differ in bit width")
    result = types.tensor_type(ctx.shape(0), dst)
    return [ctx.emit1(graph.BitCastOp(operands=[ctx.operand(0)], result_types=[result]))]


_COMPARE = {
    "Equal": graph.EqualOp,
    "Less": graph.LessOp,
    "LessOrEqual": graph.LessOrEqualOp,
    "Greater": graph.GreaterOp,
    "GreaterOrEqual": graph.GreaterOrEqualOp,
}

_FLOAT_UNARY = {
    "Ceil": graph.CeilOp,
    "Floor": graph.FloorOp,
    "Round": graph.RoundOp,
    "Sin": graph.SinOp,
    "Cos": graph.CosOp,
    "Tan": graph.TanOp,
    "Asin": graph.AsinOp,
    "Acos": graph.AcosOp,
    "Atan": graph.AtanOp,
    "Sinh": graph.SinhOp,
    "Cosh": graph.CoshOp,
    "Asinh": graph.AsinhOp,
    "Acosh": graph.AcoshOp,
    "Atanh": graph.AtanhOp,
    "Softplus": graph.SoftplusOp,
    "Mish": graph.MishOp,
}

CONVERTERS: dict[str, Converter] = {
    **{name: sample_wise(_binary(cls, result_el=i1)) for name, cls in _COMPARE.items()},
    "And": sample_wise(_binary(graph.AndOp, _is_bool)),
    "Or": sample_wise(_binary(graph.OrOp, _is_bool)),
    "Xor": sample_wise(_binary(graph.XorOp, _is_bool)),
    "Not": sample_wise(_unary(graph.NotOp, _is_bool)),
    "BitwiseAnd": sample_wise(_binary(graph.BitwiseAndOp, _is_integer)),
    "BitwiseOr": sample_wise(_binary(graph.BitwiseOrOp, _is_integer)),
    "BitwiseXor": sample_wise(_binary(graph.BitwiseXorOp, _is_integer)),
    "BitwiseNot": sample_wise(_unary(graph.BitwiseNotOp, _is_integer)),
    "BitShift": sample_wise(_binary(graph.BitShiftOp, _is_integer, props=_shift_props)),
    "Mod": sample_wise(_binary(graph.ModOp, _numeric, props=_mod_props)),
    "Where": sample_wise(convert_where),
    "IsNaN": sample_wise(_unary(graph.IsNaNOp, types.is_float, result_el=i1)),
    "IsInf": sample_wise(_unary(graph.IsInfOp, types.is_float, result_el=i1,
                                props=_is_inf_props)),
    **{name: sample_wise(_unary(cls, types.is_float)) for name, cls in _FLOAT_UNARY.items()},
    "Sign": sample_wise(_unary(graph.SignOp, _numeric)),
    "BitCast": convert_bit_cast,
    "ThresholdedRelu": sample_wise(_unary(graph.ThresholdedReluOp, types.is_float,
                                          props=_float_props(alpha=1.0))),
    "Shrink": sample_wise(_unary(graph.ShrinkOp, _numeric,
                                 props=_float_props(bias=0.0, lambd=0.5))),
}
