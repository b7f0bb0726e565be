"""Elementwise math, Cast, Clip, MatMul and Gemm: ONNX nodes -> graph ops.

Older opsets differ only in details handled here: Add/Sub/Mul/Div/Pow before opset 7 had
an explicit `broadcast`/`axis` (the right operand aligned at `axis` rather than at the
end), Clip took min/max as attributes before opset 11, Cast named its target type with a
string before opset 6, and Gemm's C became optional in opset 11.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.dialects.builtin import StringAttr, TensorType
from xdsl.ir import SSAValue

from onnxc.dialects import graph
from onnxc.dialects import graph_shapes as shapes
from onnxc.dialects.graph_reduce import reduce_shape
from onnxc.dialects.graph_strings import StringType
from onnxc.dialects.symbolic_dims import num_elements
from onnxc.frontend import onnx_types as types
from onnxc.frontend.batch_axes import sample_wise
from onnxc.frontend.onnx_context import NodeContext, Result, Tensor
from onnxc.frontend.onnx_ops_strings import cast_strings

Converter = Callable[[NodeContext], list[Result]]


def same_type(ctx: NodeContext, i: int) -> TensorType:
    return ctx.tensor(i).type


def _unary(op_class: type[graph.GraphOp]) -> Converter:
    def convert(ctx: NodeContext) -> list[Result]:
        return [ctx.emit1(op_class(operands=[ctx.operand(0)], result_types=[same_type(ctx, 0)]))]

    return convert


def convert_leaky_relu(ctx: NodeContext) -> list[Result]:
    alpha = types.float_attr(ctx.attr("alpha", 0.01))
    op = graph.LeakyReluOp(
        operands=[ctx.operand(0)], result_types=[same_type(ctx, 0)], properties={"alpha": alpha}
    )
    return [ctx.emit1(op)]


def _bound(ctx: NodeContext, index: int, attr: str) -> float | None:
    """A Clip bound: an attribute before opset 11, an optional constant input after."""
    if ctx.opset < 11:
        value = ctx.attr(attr, None)
        return None if value is None else float(value)
    array = ctx.optional_constant(index, attr)
    if array is None:
        return None
    if array.size != 1:
        raise ctx.invalid(f"{attr} must be a scalar, got shape {array.shape}")
    return float(array.reshape(()))


def convert_clip(ctx: NodeContext) -> list[Result]:
    """A constant bound is a property of graph.clip; one the run computes (a graph input,
    as torch's `clamp(x, lo, hi)` with tensor bounds exports) is a Max / Min with it."""
    el = ctx.element_type(0)
    props = {}
    computed = []
    for index, name in ((1, "min"), (2, "max")):
        if ctx.opset >= 11 and ctx.has_input(index) and ctx.tensor(index).array is None:
            computed.append((index, name))
            continue
        bound = _bound(ctx, index, name)
        if bound is not None:
            props[name] = types.float_attr(bound, el)
    result = ctx.emit1(graph.ClipOp(operands=[ctx.operand(0)],
                                    result_types=[same_type(ctx, 0)], properties=props))
    for index, name in computed:
        if num_elements(ctx.shape(index)) != 1 or ctx.element_type(index) != el:
            raise ctx.invalid(f"{name} must be a scalar of the input's type, got "
                              f"{ctx.tensor(index).type}")
        bound = ctx.operand(index)
        if ctx.rank(index) != 0:
            bound = ctx.emit1(graph.ReshapeOp(operands=[bound],
                                              result_types=[types.tensor_type((), el)]))
        extremum = graph.MaxOp if name == "min" else graph.MinOp
        result = ctx.emit1(extremum(operands=[[result, bound]],
                                    result_types=[same_type(ctx, 0)]))
    return [result]


def cast_target(ctx: NodeContext) -> int:
    """The ONNX data type Cast converts to (a string before opset 6)."""
    to = ctx.attr("to")
    if isinstance(to, str):
        try:
            to = types.TP.DataType.Value(to.upper())
        except ValueError:
            raise ctx.invalid(f"unknown Cast target type '{to}'") from None
    if not types.is_supported(to):
        raise ctx.unsupported(
            f"cast to {types.type_name(to)}; onnxc supports {types.SUPPORTED_NAMES}"
        )
    return to


def convert_cast(ctx: NodeContext) -> list[Result]:
    """Cast, and CastLike (opset 15+: the target is the second input's element type)."""
    el = ctx.element_type(1) if ctx.op_type == "CastLike" else types.element_type(cast_target(ctx))
    target = types.tensor_type(ctx.shape(0), el)
    if target == ctx.tensor(0).type:
        return [ctx.emit1(graph.IdentityOp(operands=[ctx.operand(0)], result_types=[target]))]
    if isinstance(el, StringType) or isinstance(ctx.element_type(0), StringType):
        return [cast_strings(ctx, ctx.operand(0), el)]  # parse or write text
    props = {} if ctx.attr("saturate", 1) else {"saturate": types.i64_attr(0)}
    round_mode = ctx.attr("round_mode", "up")
    if isinstance(round_mode, bytes):
        round_mode = round_mode.decode()
    if round_mode not in ("up", "down", "nearest"):
        raise ctx.invalid(f"round_mode must be up, down or nearest, got {round_mode!r}")
    if round_mode != "up":
        props["round_mode"] = StringAttr(round_mode)
    return [ctx.emit1(graph.CastOp(operands=[ctx.operand(0)], result_types=[target],
                                   properties=props))]


def cast_to(ctx: NodeContext, value: SSAValue, el) -> SSAValue:
    """`value` converted to element type `el` (no op when it already has it)."""
    vtype = value.type
    assert isinstance(vtype, TensorType)
    if vtype.get_element_type() == el:
        return value
    target = types.tensor_type(graph.shape_of(vtype), el)
    return ctx.emit1(graph.CastOp(operands=[value], result_types=[target]))


def unsqueeze_to(ctx: NodeContext, value: SSAValue, axes: list[int]) -> SSAValue:
    if not axes:
        return value
    out = ctx.infer(shapes.unsqueeze_shape, graph.shape_of(value), axes)
    op = graph.UnsqueezeOp(
        operands=[value],
        result_types=[types.tensor_type(out, value.type.get_element_type())],
        properties={"axes": types.i64_array(axes)},
    )
    return ctx.emit1(op)


def _legacy_broadcast_rhs(ctx: NodeContext, rhs: SSAValue) -> SSAValue:
    """Before opset 7, `broadcast=1, axis=k` aligns B's dims with A's dims k.. (not the end)."""
    if ctx.opset >= 7 or not ctx.attr("broadcast", 0):
        return rhs
    rank_a, rank_b = ctx.rank(0), ctx.rank(1)
    axis = ctx.attr("axis", rank_a - rank_b)
    axis = axis + rank_a if axis < 0 else axis
    trailing = rank_a - axis - rank_b
    if axis < 0 or trailing < 0:
        raise ctx.invalid(f"broadcast axis {axis} does not fit ranks {rank_a} and {rank_b}")
    return unsqueeze_to(ctx, rhs, list(range(rank_b, rank_b + trailing)))


def _binary(op_class: type[graph.GraphOp]) -> Converter:
    def convert(ctx: NodeContext) -> list[Result]:
        lhs = ctx.operand(0)
        rhs = _legacy_broadcast_rhs(ctx, ctx.operand(1))
        # Pow allows an exponent of another type since opset 12; graph ops need one type.
        if op_class is not graph.PowOp and ctx.element_type(1) != ctx.element_type(0):
            raise ctx.invalid(f"operand types differ ({ctx.element_type(0)} and "
                              f"{ctx.element_type(1)}); ONNX requires one type")
        rhs = cast_to(ctx, rhs, ctx.element_type(0))
        out = ctx.infer(shapes.broadcast_shapes, graph.shape_of(lhs), graph.shape_of(rhs))
        result = types.tensor_type(out, ctx.element_type(0))
        return [ctx.emit1(op_class(operands=[lhs, rhs], result_types=[result]))]

    return convert


def _variadic(op_class: type[graph.GraphOp]) -> Converter:
    """Sum/Max/Min; a single input is the identity."""

    def convert(ctx: NodeContext) -> list[Result]:
        values = ctx.operands()
        if not values:
            raise ctx.invalid("needs at least one input")
        out = ctx.infer(shapes.broadcast_shapes, *(graph.shape_of(v) for v in values))
        result = types.tensor_type(out, ctx.element_type(0))
        if len(values) == 1:
            return [ctx.emit1(graph.IdentityOp(operands=values, result_types=[result]))]
        return [ctx.emit1(op_class(operands=[values], result_types=[result]))]

    return convert


def convert_mean(ctx: NodeContext) -> list[Result]:
    """Mean = Sum / n (the graph dialect has no mean)."""
    total = _variadic(graph.SumOp)(ctx)[0]
    assert isinstance(total, SSAValue)
    count = len(ctx.tensors())
    if count == 1:
        return [total]
    el = ctx.element_type(0)
    if not types.is_float(el):
        raise ctx.unsupported("Mean of integer tensors")
    divisor = ctx.scalar(count, el)
    return [ctx.emit1(graph.DivOp(operands=[total, divisor], result_types=[total.type]))]


def convert_matmul(ctx: NodeContext) -> list[Result]:
    out = ctx.infer(shapes.matmul_output_shape, ctx.shape(0), ctx.shape(1))
    result = types.tensor_type(out, ctx.element_type(0))
    return [ctx.emit1(graph.MatMulOp(operands=[ctx.operand(0), ctx.operand(1)],
                                     result_types=[result]))]


def convert_gemm(ctx: NodeContext) -> list[Result]:
    """Gemm; the pre-opset-7 `broadcast` attribute needs nothing: C broadcasts as in 7+."""
    trans_a, trans_b = ctx.attr("transA", 0), ctx.attr("transB", 0)
    out = ctx.infer(shapes.gemm_output_shape, ctx.shape(0), ctx.shape(1), bool(trans_a),
                    bool(trans_b))
    c = ctx.operand(2) if ctx.has_input(2) else None
    if c is not None:
        ctx.infer(shapes.broadcast_shapes, out, graph.shape_of(c))
    el = ctx.element_type(0)
    op = graph.GemmOp(
        operands=[ctx.operand(0), ctx.operand(1), c],
        result_types=[types.tensor_type(out, el)],
        properties={
            "alpha": types.float_attr(ctx.attr("alpha", 1.0)),
            "beta": types.float_attr(ctx.attr("beta", 1.0)),
            "transA": types.i64_attr(trans_a),
            "transB": types.i64_attr(trans_b),
        },
    )
    return [ctx.emit1(op)]


def convert_identity(ctx: NodeContext) -> list[Result]:
    tensor = ctx.tensor(0)
    if tensor.array is not None:  # a constant stays a constant (shape data keeps its type)
        return [Tensor(tensor.type, array=tensor.array) if tensor.symbolic_data
                else tensor.array]
    return [ctx.emit1(graph.IdentityOp(operands=[ctx.operand(0)], result_types=[tensor.type]))]


def normalized_axis(ctx: NodeContext, axis: int, rank: int) -> int:
    """`axis` in [0, rank), or the node's error when it is out of range."""
    if not -rank <= axis < rank:
        raise ctx.invalid(f"axis {axis} out of range for rank {rank}")
    return axis % rank


def reduction_axes(ctx: NodeContext, axes_input_since: int = 18) -> list[int] | None:
    """The sorted, normalized axes of a Reduce* node, or None when it reduces nothing.

    Axes are an attribute before `axes_input_since`, an optional constant input from then
    on; none means all axes, unless noop_with_empty_axes (only with axes as input)."""
    rank = ctx.rank(0)
    if ctx.opset < axes_input_since:
        axes = ctx.ints("axes")
    else:
        array = ctx.optional_constant(1, "axes")
        axes = None if array is None else [int(a) for a in array.reshape(-1)]
    if not axes:
        if ctx.attr("noop_with_empty_axes", 0) and ctx.opset >= axes_input_since:
            return None
        axes = list(range(rank))
    norm = sorted(normalized_axis(ctx, a, rank) for a in axes)
    if len(set(norm)) != len(norm):
        raise ctx.invalid(f"repeated axes {axes}")
    return norm


def _reduce(op_class: type[graph.GraphOp], axes_input_since: int) -> Converter:
    """ReduceMean/ReduceSum: axes an attribute before `axes_input_since`, an input after.

    Absent axes mean every axis, unless noop_with_empty_axes makes the node an identity.
    """

    def convert(ctx: NodeContext) -> list[Result]:
        norm = reduction_axes(ctx, axes_input_since)
        if norm is None:
            return convert_identity(ctx)
        keepdims = int(ctx.attr("keepdims", 1))
        out = ctx.infer(reduce_shape, ctx.shape(0), norm, bool(keepdims))
        op = op_class(
            operands=[ctx.operand(0)],
            result_types=[types.tensor_type(out, ctx.element_type(0))],
            properties={"axes": types.i64_array(norm), "keepdims": types.i64_attr(keepdims)},
        )
        return [ctx.emit1(op)]

    return convert


def integer_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """ONNX integer Div truncates toward zero (numpy's // floors)."""
    quotient = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -quotient, quotient).astype(np.result_type(a, b))


CONVERTERS: dict[str, Converter] = {
    "Relu": sample_wise(_unary(graph.ReluOp)),
    "Sigmoid": sample_wise(_unary(graph.SigmoidOp)),
    "Tanh": sample_wise(_unary(graph.TanhOp)),
    "Exp": sample_wise(_unary(graph.ExpOp)),
    "Log": sample_wise(_unary(graph.LogOp)),
    "Sqrt": sample_wise(_unary(graph.SqrtOp)),
    "Neg": sample_wise(_unary(graph.NegOp)),
    "Abs": sample_wise(_unary(graph.AbsOp)),
    "Reciprocal": sample_wise(_unary(graph.ReciprocalOp)),
    "Identity": sample_wise(convert_identity),
    "LeakyRelu": sample_wise(convert_leaky_relu),
    "Clip": sample_wise(convert_clip),
    "Cast": sample_wise(convert_cast),
    "CastLike": sample_wise(convert_cast),
    "Add": sample_wise(_binary(graph.AddOp)),
    "Sub": sample_wise(_binary(graph.SubOp)),
    "Mul": sample_wise(_binary(graph.MulOp)),
    "Div": sample_wise(_binary(graph.DivOp)),
    "Pow": sample_wise(_binary(graph.PowOp)),
    "Sum": sample_wise(_variadic(graph.SumOp)),
    "Max": sample_wise(_variadic(graph.MaxOp)),
    "Min": sample_wise(_variadic(graph.MinOp)),
    "Mean": sample_wise(convert_mean),
    "MatMul": convert_matmul,
    "Gemm": convert_gemm,
    "Erf": sample_wise(_unary(graph.ErfOp)),
    "ReduceMean": _reduce(graph.ReduceMeanOp, axes_input_since=18),
    "ReduceSum": _reduce(graph.ReduceSumOp, axes_input_since=13),
}
