"""The quantized compute ops: QLinearConv, QLinearMatMul, ConvInteger, MatMulInteger.

All four become graph.qlinear_conv / graph.qlinear_matmul (dialects/graph_qlinear.py): the
scales and zero points turn into properties, so they must be compile-time constants (the
ONNX backend specializes graph inputs). A ui8/i8 result's `output_scale` is
f32(x_scale) * f32(w_scale[m]) / f32(y_scale), computed in float32 as onnxruntime does
(f16 scales are converted first). MatMulInteger whose A zero point is computed at run time
(DynamicQuantizeLinear -> MatMulInteger, onnxruntime's quantize_dynamic) or per row is
imported as sum_k a * (b - zb) - za * colsum(b - zb): the product with input zero point 0
and the correction computed with i32 graph ops (B is constant, so its column sums are too):
for one zero point and a 2-D B it is the product's bias, -za * colsum, one value per column,
otherwise a subtraction after the product. ConvInteger with a run-time x zero point is
corrected alike, by za times the sum of w - zw over each output's taps inside the input (a
bias when every window is whole, a [M, *out] constant when padding cuts some).
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import DenseArrayBase, f32, i32
from xdsl.ir import SSAValue

from onnxc.dialects import graph
from onnxc.dialects import graph_shapes as shapes
from onnxc.dialects.dense_data import from_numpy
from onnxc.dialects.graph_base import int_of
from onnxc.dialects.graph_qlinear import byte_range, is_byte_type
from onnxc.frontend import onnx_types as types
from onnxc.frontend.batch_axes import sample_wise
from onnxc.frontend.onnx_context import NodeContext, Result, Tensor
from onnxc.frontend.onnx_ops_nn import _pad, _padded_input, _window

TP = types.TP


def _byte_operand(ctx: NodeContext, i: int, what: str):
    el = ctx.element_type(i)
    if not is_byte_type(el):
        raise ctx.unsupported(f"{what} of type {el} (only uint8, int8)")
    return el


def _zero_points(ctx: NodeContext, i: int, what: str, el, channels: int | None) -> np.ndarray:
    """A constant zero point as int64: one value, or one per channel when `channels`."""
    zero = ctx.optional_constant(i, what)
    if zero is None:
        return np.zeros(1, np.int64)
    if types.onnx_type_of_numpy(zero.dtype) != types.onnx_type_of_element(el):
        raise ctx.invalid(f"{what} type {zero.dtype} differs from its tensor's {el}")
    zero = zero.reshape(-1).astype(np.int64)
    if zero.size != 1 and zero.size != channels:
        raise ctx.unsupported(f"{what} of {zero.size} values (only one"
                              f"{'' if channels is None else f' or {channels}'})")
    return zero


def _scales(ctx: NodeContext, i: int, what: str, channels: int | None) -> np.ndarray:
    """A constant finite nonzero scale (of either sign, as onnx_ops_quant's) as float32 (f16
    converted exactly), one or per channel."""
    scale = ctx.constant(i, what)
    if types.onnx_type_of_numpy(scale.dtype) not in (TP.FLOAT, TP.FLOAT16):
        raise ctx.unsupported(f"{what} of type {scale.dtype} (only float, float16)")
    scale = scale.reshape(-1).astype(np.float32)
    if scale.size != 1 and scale.size != channels:
        raise ctx.unsupported(f"{what} of {scale.size} values (only one"
                              f"{'' if channels is None else f' or {channels}'})")
    if not np.all(np.isfinite(scale)) or np.any(scale == 0):
        raise ctx.invalid(f"{what} must be finite and nonzero")
    return scale


def _requantize(ctx: NodeContext, x_scale: int, w_scale: int, y_scale: int, y_zero: int,
                channels: int, names: str = "xw") -> tuple[dict, object]:
    """The output properties and result element type of QLinearConv/QLinearMatMul (`names`:
    the ONNX names of the two operands, x and w or a and b)."""
    xs = _scales(ctx, x_scale, f"{names[0]}_scale", None)
    ws = _scales(ctx, w_scale, f"{names[1]}_scale", channels)
    ys = _scales(ctx, y_scale, "y_scale", None)
    zero = ctx.optional_constant(y_zero, "y_zero_point")
    out_type = TP.UINT8 if zero is None else types.onnx_type_of_numpy(zero.dtype)
    if out_type not in (TP.UINT8, TP.INT8):
        raise ctx.unsupported(f"a {zero.dtype} result (only uint8, int8)")
    out_el = types.element_type(out_type)
    zp = _zero_points(ctx, y_zero, "y_zero_point", out_el, None)
    output_scale = (xs[0] * ws) / ys[0]  # float32 throughout, as onnxruntime
    props = {
        "output_scale": DenseArrayBase.from_list(f32, [float(s) for s in output_scale]),
        "output_zero_point": types.i64_attr(int(zp[0])),
    }
    return props, out_el


def _input_zero_point(ctx: NodeContext, i: int, what: str, el) -> int:
    zero = _zero_points(ctx, i, what, el, None)
    lo, hi = byte_range(el)
    if not lo <= zero[0] <= hi:
        raise ctx.invalid(f"{what} {zero[0]} is out of range [{lo}, {hi}]")
    return int(zero[0])


def _conv(ctx: NodeContext, x: int, w: int, props: dict, out_el, bias: SSAValue | None):
    w_shape = ctx.shape(w)
    kernel = list(w_shape[2:])
    if ctx.has_attr("kernel_shape") and ctx.ints("kernel_shape") != kernel:
        raise ctx.invalid(f"kernel_shape {ctx.ints('kernel_shape')} differs from weight "
                          f"{w_shape}")
    strides, pads, dilations = _window(ctx, kernel, symbolic_pads=True)
    # SAME pads over symbolic sizes: the input padded first with its zero point, which
    # adds nothing once the kernel subtracts it
    value, x_shape, pads = _padded_input(ctx, pads, float(int_of(props["input_zero_point"])))
    group = ctx.attr("group", 1)
    out = ctx.infer(shapes.conv_output_shape, x_shape, w_shape, strides, pads, dilations,
                    group)
    op = graph.QLinearConvOp(
        operands=[value, ctx.operand(w), bias],
        result_types=[types.tensor_type(out, out_el)],
        properties={
            **props,
            "strides": types.i64_array(strides),
            "pads": types.i64_array(pads),
            "dilations": types.i64_array(dilations),
            "group": types.i64_attr(group),
        },
    )
    return ctx.emit1(op)


def convert_qlinear_conv(ctx: NodeContext) -> list[Result]:
    x_el = _byte_operand(ctx, 0, "x")
    w_el = _byte_operand(ctx, 3, "w")
    channels = ctx.shape(3)[0]
    out_props, out_el = _requantize(ctx, 1, 4, 6, 7, channels)
    bias = None
    if ctx.has_input(8):
        if types.onnx_type_of_element(ctx.element_type(8)) != TP.INT32:
            raise ctx.invalid(f"bias must be int32, got {ctx.element_type(8)}")
        bias = ctx.operand(8)
    props = {
        "input_zero_point": types.i64_attr(_input_zero_point(ctx, 2, "x_zero_point", x_el)),
        "weight_zero_point": types.i64_array(
            _zero_points(ctx, 5, "w_zero_point", w_el, channels)),
        **out_props,
    }
    return [_conv(ctx, 0, 3, props, out_el, bias)]


def convert_conv_integer(ctx: NodeContext) -> list[Result]:
    x_el = _byte_operand(ctx, 0, "x")
    w_el = _byte_operand(ctx, 1, "w")
    channels = ctx.shape(1)[0]
    w_zero = _zero_points(ctx, 3, "w_zero_point", w_el, channels)
    props = {"weight_zero_point": types.i64_array(w_zero)}
    if not ctx.has_input(2) or ctx.tensor(2).array is not None:
        props["input_zero_point"] = types.i64_attr(
            _input_zero_point(ctx, 2, "x_zero_point", x_el))
        return [_conv(ctx, 0, 1, props, i32, None)]
    # a run-time x zero point (DynamicQuantizeLinear -> ConvInteger, quantize_dynamic):
    # conv(x - za, w - zw) = conv(x, w - zw) - za * (the sum of w - zw over the taps of each
    # output inside the input: padding holds za, which the centred input makes 0)
    w = ctx.constant(1, "w, needed constant for a run-time x_zero_point")
    if math.prod(ctx.shape(2)) != 1:
        raise ctx.invalid(f"x_zero_point must be one value, got shape {ctx.shape(2)}")
    za = _scalar_i32(ctx, 2)
    props["input_zero_point"] = types.i64_attr(0)
    strides, pads, dilations = _window(ctx, list(w.shape[2:]), symbolic_pads=True)
    out = ctx.infer(shapes.conv_output_shape, ctx.shape(0), w.shape, strides, pads, dilations,
                    ctx.attr("group", 1))
    centred = w.astype(np.int64) - w_zero.reshape(-1, *[1] * (w.ndim - 1))
    if not all(isinstance(d, int) for d in ctx.shape(0)[2:]):
        term = ctx.emit1(graph.MulOp(
            operands=[za, _window_sums_in_run(ctx, centred, out, strides, pads, dilations)],
            result_types=[types.tensor_type((1, *out[1:]), i32)]))
        return [ctx.emit1(graph.SubOp(operands=[_conv(ctx, 0, 1, props, i32, None), term],
                                      result_types=[types.tensor_type(out, i32)]))]
    sums = _window_sums(centred, ctx.shape(0)[2:], out[2:], strides, pads, dilations)
    flat = sums.reshape(channels, -1)
    if np.all(flat == flat[:, :1]):  # every window whole: one correction per channel
        negated = ctx.materialize(Tensor.of_array(-flat[:, 0]))
        bias = ctx.emit1(graph.MulOp(operands=[za, negated],
                                     result_types=[types.tensor_type((channels,), i32)]))
        return [_conv(ctx, 0, 1, props, i32, bias)]
    product = _conv(ctx, 0, 1, props, i32, None)
    term = ctx.emit1(graph.MulOp(operands=[za, ctx.materialize(Tensor.of_array(sums))],
                                 result_types=[types.tensor_type(sums.shape, i32)]))
    return [ctx.emit1(graph.SubOp(operands=[product, term],
                                  result_types=[types.tensor_type(out, i32)]))]


def _window_sums(centred: np.ndarray, x_spatial, out_spatial, strides, pads,
                 dilations) -> np.ndarray:
    """[M, *out_spatial] int32: for each output position, the sum of `centred` (the weight
    minus its zero point, [M, C/group, *kernel]) over the taps that read inside the input."""
    sums = centred.sum(axis=1)  # [M, k1, ..., kn]
    for d in range(len(x_spatial)):
        o = np.arange(out_spatial[d])[:, None]
        k = np.arange(centred.shape[2 + d])[None, :]
        at = o * strides[d] + k * dilations[d] - pads[d]
        inside = ((at >= 0) & (at < x_spatial[d])).astype(np.int64)  # [O_d, K_d]
        sums = np.tensordot(sums, inside, axes=([1], [1]))  # K_d -> O_d, moved last
    return sums.astype(np.int32)


def _window_sums_in_run(ctx: NodeContext, centred: np.ndarray, out: tuple, strides, pads,
                        dilations) -> SSAValue:
    """`_window_sums` over symbolic input sizes, [1, M, *out_spatial] int32: a float Conv
    of an image of ones (the input's size, zero-padded) with the weight summed over its
    input channels. The sums are integers below 2^24 (C/group * taps * 255), so f32 holds
    them exactly."""
    summed = centred.sum(axis=1, keepdims=True)  # [M, 1, *kernel]
    if np.abs(summed).sum(axis=tuple(range(1, summed.ndim))).max(initial=0) >= 1 << 24:
        raise ctx.unsupported("a weight whose window sums pass 2^24 (f32 would round them)")
    shape = (1, 1, *ctx.shape(0)[2:])
    ones = ctx.emit1(graph.ConstantOfShapeOp(
        properties={"value": from_numpy(np.ones(1, np.float32))},
        result_types=[types.tensor_type(shape, f32)]))
    if not all(isinstance(p, int) for p in pads):  # SAME over symbolic sizes: pad first
        ones, _ = _pad(ctx, ones, shape, pads, 0.0)
        pads = [0] * len(pads)
    weight = ctx.materialize(Tensor.of_array(summed.astype(np.float32)))
    sums = ctx.emit1(graph.ConvOp(
        operands=[ones, weight, None],
        result_types=[types.tensor_type((1, *out[1:]), f32)],
        properties={"strides": types.i64_array(strides), "pads": types.i64_array(pads),
                    "dilations": types.i64_array(dilations), "group": types.i64_attr(1)}))
    return ctx.emit1(graph.CastOp(operands=[sums],
                                  result_types=[types.tensor_type((1, *out[1:]), i32)]))


def _scalar_i32(ctx: NodeContext, i: int) -> SSAValue:
    """Input i (one element) as an i32 tensor of rank 0."""
    value = ctx.emit1(graph.CastOp(operands=[ctx.operand(i)],
                                   result_types=[types.tensor_type(ctx.shape(i), i32)]))
    if ctx.shape(i) == ():
        return value
    return ctx.emit1(graph.ReshapeOp(operands=[value, None],
                                     result_types=[types.tensor_type((), i32)]))


def _matmul(ctx: NodeContext, a: int, b: int, props: dict, out_el,
            bias: SSAValue | None = None) -> SSAValue:
    out = ctx.infer(shapes.matmul_output_shape, ctx.shape(a), ctx.shape(b))
    op = graph.QLinearMatMulOp(operands=[ctx.operand(a), ctx.operand(b), bias],
                               result_types=[types.tensor_type(out, out_el)],
                               properties=props)
    return ctx.emit1(op)


def convert_qlinear_matmul(ctx: NodeContext) -> list[Result]:
    a_el = _byte_operand(ctx, 0, "a")
    b_el = _byte_operand(ctx, 3, "b")
    if ctx.rank(0) < 1 or ctx.rank(3) < 1:
        raise ctx.invalid("operands must have rank >= 1")
    channels = ctx.shape(3)[-1]
    out_props, out_el = _requantize(ctx, 1, 4, 6, 7, channels, "ab")
    props = {
        "input_zero_point": types.i64_attr(_input_zero_point(ctx, 2, "a_zero_point", a_el)),
        "weight_zero_point": types.i64_array(
            _zero_points(ctx, 5, "b_zero_point", b_el, channels)),
        **out_props,
    }
    return [_matmul(ctx, 0, 3, props, out_el)]


def convert_matmul_integer(ctx: NodeContext) -> list[Result]:
    a_el = _byte_operand(ctx, 0, "A")
    b_el = _byte_operand(ctx, 1, "B")
    if ctx.rank(0) < 1 or ctx.rank(1) < 1:
        raise ctx.invalid("operands must have rank >= 1")
    channels = ctx.shape(1)[-1]
    b_zero = _zero_points(ctx, 3, "b_zero_point", b_el, channels)
    props = {"weight_zero_point": types.i64_array(b_zero)}
    a_zero_known = not ctx.has_input(2) or ctx.tensor(2).array is not None
    if a_zero_known:
        a_zero = ctx.optional_constant(2, "a_zero_point")
        if a_zero is None or a_zero.size == 1:
            props["input_zero_point"] = types.i64_attr(
                _input_zero_point(ctx, 2, "a_zero_point", a_el))
            return [_matmul(ctx, 0, 1, props, i32)]
    # a zero point known only at run time, or one per row of A: correct the product
    b = ctx.constant(1, "B, needed constant for a run-time or per-row a_zero_point")
    props["input_zero_point"] = types.i64_attr(0)
    za = _a_zero_point_i32(ctx)
    centred = b.astype(np.int64) - b_zero  # b_zero: one value or one per column
    if b.ndim == 2 and graph.shape_of(za) in ((), (1,)):
        # one zero point and one weight matrix: the correction is a bias of the product
        negated = ctx.materialize(Tensor.of_array(-centred.sum(axis=0).astype(np.int32)))
        bias = ctx.emit1(graph.MulOp(operands=[za, negated],
                                     result_types=[types.tensor_type((channels,), i32)]))
        return [_matmul(ctx, 0, 1, props, i32, bias)]
    product = _matmul(ctx, 0, 1, props, i32)
    return [_subtract_zero_point_term(ctx, product, za, centred)]


def _a_zero_point_i32(ctx: NodeContext) -> SSAValue:
    """MatMulInteger's A zero point as i32: one value, or one per row of A shaped [M, 1]."""
    a_zero = ctx.tensor(2)
    rows = ctx.shape(0)[-2] if ctx.rank(0) >= 2 else 1
    if a_zero.shape not in ((), (1,), (rows,)):
        raise ctx.invalid(f"a_zero_point shape {a_zero.shape} is neither one value nor one "
                          f"per row of A ({rows})")
    if types.onnx_type_of_element(a_zero.element_type) != types.onnx_type_of_element(
            ctx.element_type(0)):
        raise ctx.invalid(f"a_zero_point type {a_zero.element_type} differs from A's "
                          f"{ctx.element_type(0)}")
    za = ctx.emit1(graph.CastOp(operands=[ctx.materialize(a_zero)],
                                result_types=[types.tensor_type(a_zero.shape, i32)]))
    if a_zero.shape == (rows,) and rows != 1 and ctx.rank(0) >= 2 and ctx.rank(1) >= 2:
        za = ctx.emit1(graph.ReshapeOp(operands=[za, None],
                                       result_types=[types.tensor_type((rows, 1), i32)]))
    return za


def _subtract_zero_point_term(ctx: NodeContext, product: SSAValue, za: SSAValue,
                              centred: np.ndarray) -> SSAValue:
    """product - za * colsum(B - zb) (za from _a_zero_point_i32, `centred` = B - zb)."""
    out_shape = graph.shape_of(product)
    if centred.ndim == 1:  # a vector B: the product is [..., M] (or a scalar)
        sums = np.asarray(centred.sum(), np.int32)
    else:
        sums = centred.sum(axis=-2, keepdims=True).astype(np.int32)  # [..., 1, N]
    sums_value = ctx.materialize(Tensor.of_array(sums))
    term_shape = ctx.infer(shapes.broadcast_shapes, graph.shape_of(za), sums.shape)
    term = ctx.emit1(graph.MulOp(operands=[za, sums_value],
                                 result_types=[types.tensor_type(term_shape, i32)]))
    ctx.infer(shapes.broadcast_shapes, out_shape, term_shape)
    return ctx.emit1(graph.SubOp(operands=[product, term],
                                 result_types=[types.tensor_type(out_shape, i32)]))


CONVERTERS = {
    "QLinearConv": sample_wise(convert_qlinear_conv),
    "QLinearMatMul": convert_qlinear_matmul,
    "ConvInteger": sample_wise(convert_conv_integer),
    "MatMulInteger": convert_matmul_integer,
}
