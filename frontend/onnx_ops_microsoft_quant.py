"""com.microsoft quantization ops as onnxruntime's quantization tools write them.

`quantize_static(..., quant_format=QuantFormat.QOperator)` writes QLinearAdd, QLinearMul,
QLinearSigmoid, QLinearLeakyRelu, QLinearConcat, QLinearGlobalAveragePool,
QLinearAveragePool, QLinearSoftmax and QLinearWhere; its other paths write QGemm,
DynamicQuantizeMatMul and MatMulIntegerToFloat. Each is imported as the ONNX-standard
decomposition onnxruntime's contrib op documentation gives: the quantized inputs
dequantized (ONNX DequantizeLinear), the float op (Add, Mul, Sigmoid, LeakyRelu, Concat,
GlobalAveragePool, AveragePool, Softmax, Where, Gemm), the result quantized (ONNX
QuantizeLinear: round half to even, saturate). Every part is built by the standard op's own
converter (`onnx_node`), so the graph is the QDQ form onnxc's passes fuse into integer
kernels where they can (fuse-qdq-linear, move-quant-dequant).

DynamicQuantizeMatMul is DynamicQuantizeLinear of A, MatMulInteger, and the product scaled
by a_scale * b_scale (+ bias); MatMulIntegerToFloat is MatMulInteger scaled by
a_scale * b_scale (+ bias): both in float32, as onnxruntime's kernels compute them.

Scales and zero points are per tensor (one value), as onnxruntime's kernels require, except
B's of QGemm, DynamicQuantizeMatMul and MatMulIntegerToFloat (one per column allowed).
QLinearSoftmax follows ONNX Softmax of the `opset` attribute's version (below 13: the axes
from `axis` on, flattened; 13 and above: `axis` alone), `axis` -1 when absent at every
`opset` (the schema's default, which onnxruntime's kernel reads). Attributes outside an
op's specification are refused, naming the attribute; so is a QGemm y_scale without a
y_zero_point (onnxruntime's kernel then writes a float result divided by y_scale).
"""

from __future__ import annotations

import math

import numpy as np

from onnxc.frontend import onnx_types as types
from onnxc.frontend.onnx_context import NodeContext, Result
from onnxc.frontend.onnx_ops_math import Converter
from onnxc.frontend.onnx_ops_microsoft import onnx_node

TP = types.TP
_BYTES = {TP.UINT8: np.uint8, TP.INT8: np.int8}


def _check_attrs(ctx: NodeContext, allowed: tuple[str, ...]) -> None:
    for name in ctx.node.attribute:
        if name.name not in allowed:
            raise ctx.unsupported(f"attribute '{name.name}' (the op takes "
                                  f"{', '.join(allowed) if allowed else 'none'})")


def _byte_type(ctx: NodeContext, i: int, what: str) -> int:
    onnx_type = types.onnx_type_of_element(ctx.element_type(i))
    if onnx_type not in _BYTES:
        raise ctx.unsupported(f"{what} of type {ctx.element_type(i)} (only uint8, int8)")
    return onnx_type


def _one_value(ctx: NodeContext, i: int, what: str) -> None:
    if ctx.has_input(i) and math.prod(ctx.shape(i)) != 1:
        raise ctx.invalid(f"{what} must be one value (per tensor), not of shape "
                          f"{list(ctx.shape(i))}")


def _dequantize(ctx: NodeContext, x: int, scale: int, zero: int, what: str,
                attrs: dict | None = None) -> Result:
    """ONNX DequantizeLinear of input `x` by inputs `scale`, `zero` (-1 or absent: 0)."""
    _byte_type(ctx, x, what)
    if attrs is None:
        _one_value(ctx, scale, f"{what}'s scale")
        _one_value(ctx, zero, f"{what}'s zero point")
    zp = ctx.tensor(zero) if zero >= 0 and ctx.has_input(zero) else None
    return onnx_node(ctx, "DequantizeLinear", [ctx.tensor(x), ctx.tensor(scale), zp],
                     attrs)[0]


def _quantize(ctx: NodeContext, y: Result, scale: int, zero: int, onnx_type: int) -> Result:
    """ONNX QuantizeLinear of `y` by inputs `scale`, `zero` (absent: 0 of `onnx_type`)."""
    _one_value(ctx, scale, "the output's scale")
    _one_value(ctx, zero, "the output's zero point")
    if ctx.has_input(zero):
        if types.onnx_type_of_element(ctx.element_type(zero)) != onnx_type:
            raise ctx.invalid(f"the output's zero point is {ctx.element_type(zero)}, the "
                              f"input {types.type_name(onnx_type)}")
        zp = ctx.tensor(zero)
    else:
        zp = np.zeros((), _BYTES[onnx_type])
    return onnx_node(ctx, "QuantizeLinear", [y, ctx.tensor(scale), zp])[0]


def _unary(op_type: str, attrs: tuple[str, ...] = ()) -> Converter:
    """X, X_scale, X_zero_point, Y_scale, Y_zero_point: Q(op(DQ(X)))."""
    def convert(ctx: NodeContext) -> list[Result]:
        _check_attrs(ctx, attrs)
        el = _byte_type(ctx, 0, "X")
        x = _dequantize(ctx, 0, 1, 2, "X")
        params = {a: ctx.attr(a) for a in attrs if ctx.has_attr(a)}
        if op_type == "LeakyRelu":
            params["alpha"] = float(ctx.attr("alpha", 0.01))
        (y,) = onnx_node(ctx, op_type, [x], params)
        return [_quantize(ctx, y, 3, 4, el)]
    convert.__doc__ = f"QLinear{op_type}: QuantizeLinear({op_type}(DequantizeLinear(X)))."
    return convert


def _binary(op_type: str) -> Converter:
    """A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale, C_zero_point."""
    def convert(ctx: NodeContext) -> list[Result]:
        _check_attrs(ctx, ())
        el = _byte_type(ctx, 0, "A")
        if _byte_type(ctx, 3, "B") != el:
            raise ctx.invalid(f"A is {ctx.element_type(0)}, B {ctx.element_type(3)}")
        a = _dequantize(ctx, 0, 1, 2, "A")
        b = _dequantize(ctx, 3, 4, 5, "B")
        (c,) = onnx_node(ctx, op_type, [a, b])
        return [_quantize(ctx, c, 6, 7, el)]
    convert.__doc__ = f"QLinear{op_type}: Q({op_type}(DQ(A), DQ(B)))."
    return convert


def convert_qlinear_concat(ctx: NodeContext) -> list[Result]:
    """QLinearConcat(Y_scale, Y_zero_point, (X, X_scale, X_zero_point)...): Q(Concat(DQ(X)...))."""
    _check_attrs(ctx, ("axis",))
    axis = int(ctx.attr("axis"))
    if ctx.num_inputs < 5 or (ctx.num_inputs - 2) % 3:
        raise ctx.invalid(f"{ctx.num_inputs} inputs: Y_scale, Y_zero_point, then (X, X_scale, "
                          f"X_zero_point) for each tensor")
    el = None
    parts = []
    for i in range(2, ctx.num_inputs, 3):
        x_el = _byte_type(ctx, i, f"input {i}")
        if el is not None and x_el != el:
            raise ctx.invalid(f"input {i} is {ctx.element_type(i)}, input 2 "
                              f"{types.type_name(el)}")
        el = x_el
        parts.append(_dequantize(ctx, i, i + 1, i + 2, f"input {i}"))
    (y,) = onnx_node(ctx, "Concat", parts, {"axis": axis})
    return [_quantize(ctx, y, 0, 1, el)]


def _to_channels_first(ctx: NodeContext, x: Result, last: bool) -> Result:
    if not last:
        return x
    rank = ctx.rank(0)
    if rank < 3:
        raise ctx.invalid(f"channels_last input of rank {rank} (needs N, spatial..., C)")
    return onnx_node(ctx, "Transpose", [x], {"perm": [0, rank - 1, *range(1, rank - 1)]})[0]


def _to_channels_last(ctx: NodeContext, y: Result, last: bool) -> Result:
    if not last:
        return y
    rank = ctx.rank(0)
    return onnx_node(ctx, "Transpose", [y], {"perm": [0, *range(2, rank), 1]})[0]


def _channels_last(ctx: NodeContext) -> bool:
    value = int(ctx.attr("channels_last", 0))
    if value not in (0, 1):
        raise ctx.invalid(f"channels_last must be 0 or 1, not {value}")
    return bool(value)


def convert_qlinear_global_average_pool(ctx: NodeContext) -> list[Result]:
    """QLinearGlobalAveragePool: Q(GlobalAveragePool(DQ(X))), X NCHW or (channels_last)
    NHWC."""
    _check_attrs(ctx, ("channels_last",))
    last = _channels_last(ctx)
    el = _byte_type(ctx, 0, "X")
    x = _to_channels_first(ctx, _dequantize(ctx, 0, 1, 2, "X"), last)
    (y,) = onnx_node(ctx, "GlobalAveragePool", [x])
    return [_quantize(ctx, _to_channels_last(ctx, y, last), 3, 4, el)]


_POOL_ATTRS = ("auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides")


def convert_qlinear_average_pool(ctx: NodeContext) -> list[Result]:
    """QLinearAveragePool: Q(AveragePool(DQ(X))) with the pool's attributes, X NCHW or
    (channels_last) NHWC."""
    _check_attrs(ctx, (*_POOL_ATTRS, "channels_last"))
    last = _channels_last(ctx)
    el = _byte_type(ctx, 0, "X")
    x = _to_channels_first(ctx, _dequantize(ctx, 0, 1, 2, "X"), last)
    attrs = {a: ctx.attr(a) for a in _POOL_ATTRS if ctx.has_attr(a)}
    (y,) = onnx_node(ctx, "AveragePool", [x], attrs, opset=19)
    return [_quantize(ctx, _to_channels_last(ctx, y, last), 3, 4, el)]


def convert_qlinear_softmax(ctx: NodeContext) -> list[Result]:
    """QLinearSoftmax: Q(Softmax(DQ(X))), Softmax of version `opset` (required): below 13
    over the axes from `axis` on, else over `axis`; `axis` -1 when absent, at every `opset`
    (the op schema's default, which onnxruntime's kernel reads)."""
    _check_attrs(ctx, ("axis", "opset"))
    version = int(ctx.attr("opset"))  # the Softmax version followed, not a model opset
    if version < 1:
        raise ctx.invalid(f"opset must be a Softmax version >= 1, not {version}")
    softmax_version = 11 if version < 13 else 13
    axis = int(ctx.attr("axis", -1))  # the schema's default, whatever `opset` says
    el = _byte_type(ctx, 0, "X")
    x = _dequantize(ctx, 0, 1, 2, "X")
    (y,) = onnx_node(ctx, "Softmax", [x], {"axis": axis}, opset=softmax_version)
    return [_quantize(ctx, y, 3, 4, el)]


def convert_qlinear_where(ctx: NodeContext) -> list[Result]:
    """QLinearWhere(condition, X, x_scale, x_zero_point, Y, y_scale, y_zero_point, z_scale,
    z_zero_point): Q(Where(condition, DQ(X), DQ(Y)))."""
    _check_attrs(ctx, ())
    el = _byte_type(ctx, 1, "X")
    if _byte_type(ctx, 4, "Y") != el:
        raise ctx.invalid(f"X is {ctx.element_type(1)}, Y {ctx.element_type(4)}")
    x = _dequantize(ctx, 1, 2, 3, "X")
    y = _dequantize(ctx, 4, 5, 6, "Y")
    (z,) = onnx_node(ctx, "Where", [ctx.tensor(0), x, y])
    return [_quantize(ctx, z, 7, 8, el)]


def _column_scale(ctx: NodeContext, scale: int, zero: int, columns, what: str) -> bool:
    """Whether B's scale (and zero point) are one per column (else one value)."""
    for i, name in ((scale, "scale"), (zero, "zero point")):
        if ctx.has_input(i) and ctx.rank(i) > 1:
            raise ctx.invalid(f"{what}'s {name} of shape {list(ctx.shape(i))} (one value or "
                              f"one per column)")
    n = math.prod(ctx.shape(scale))
    if n != 1 and (n != columns or ctx.shape(scale) != (columns,)):
        raise ctx.invalid(f"{what}'s scale of shape {list(ctx.shape(scale))}: one value or "
                          f"one per column ({columns})")
    if ctx.has_input(zero) and ctx.shape(zero) != ctx.shape(scale) and \
            math.prod(ctx.shape(zero)) != 1:
        raise ctx.invalid(f"{what}'s zero point {list(ctx.shape(zero))} and scale "
                          f"{list(ctx.shape(scale))} differ in shape")
    return n != 1


def convert_qgemm(ctx: NodeContext) -> list[Result]:
    """QGemm(A, a_scale, a_zero_point, B, b_scale, b_zero_point, C, y_scale, y_zero_point):
    alpha * op(DQ(A)) @ op(DQ(B)) + alpha * DQ(C, a_scale * b_scale), quantized by y_scale /
    y_zero_point, float without them. C is the int32 bias in the product's scale."""
    _check_attrs(ctx, ("alpha", "transA", "transB"))
    alpha = float(ctx.attr("alpha", 1.0))
    trans_a, trans_b = int(ctx.attr("transA", 0)), int(ctx.attr("transB", 0))
    el = _byte_type(ctx, 0, "A")
    _byte_type(ctx, 3, "B")
    if ctx.rank(0) != 2 or ctx.rank(3) != 2:
        raise ctx.invalid(f"A {list(ctx.shape(0))} and B {list(ctx.shape(3))} must be 2-D")
    columns = ctx.shape(3)[0 if trans_b else 1]
    per_column = _column_scale(ctx, 4, 5, columns, "B")
    a = _dequantize(ctx, 0, 1, 2, "A")
    b = _dequantize(ctx, 3, 4, 5, "B", {"axis": 0 if trans_b else 1} if per_column else None)
    c = None
    if ctx.has_input(6):
        if types.onnx_type_of_element(ctx.element_type(6)) != TP.INT32:
            raise ctx.invalid(f"C must be int32, not {ctx.element_type(6)}")
        c = _bias(ctx, per_column)
    (y,) = onnx_node(ctx, "Gemm", [a, b, c], {"alpha": alpha, "beta": alpha,
                                               "transA": trans_a, "transB": trans_b})
    if not ctx.has_input(7):
        if ctx.has_input(8):
            raise ctx.invalid("y_zero_point without y_scale")
        return [y]
    if not ctx.has_input(8):
        raise ctx.unsupported("y_scale without y_zero_point (onnxruntime then writes a float "
                              "result divided by y_scale)")
    return [_quantize(ctx, y, 7, 8, types.onnx_type_of_element(ctx.element_type(8)) or el)]


def _bias(ctx: NodeContext, per_column: bool) -> Result:
    """QGemm's C in float: DequantizeLinear by a_scale * b_scale (zero point 0)."""
    a_scale = ctx.constant(1, "a_scale").astype(np.float32).reshape(())
    b_scale = ctx.constant(4, "b_scale").astype(np.float32).reshape(-1)
    scale = (a_scale * b_scale).astype(np.float32)
    shape = ctx.shape(6)
    if not per_column:
        return onnx_node(ctx, "DequantizeLinear", [ctx.tensor(6), scale.reshape(())])[0]
    if len(shape) >= 1 and shape[-1] == scale.size:
        return onnx_node(ctx, "DequantizeLinear", [ctx.tensor(6), scale],
                         {"axis": len(shape) - 1})[0]
    (c,) = onnx_node(ctx, "Cast", [ctx.tensor(6)], {"to": TP.FLOAT})
    return onnx_node(ctx, "Mul", [c, scale])[0]


def _scaled_product(ctx: NodeContext, product: Result, a_scale, b_scale: int,
                    bias: int) -> list[Result]:
    """float(product) * (a_scale * b_scale) (+ bias), in float32."""
    (scale,) = onnx_node(ctx, "Mul", [a_scale, ctx.tensor(b_scale)])
    (y,) = onnx_node(ctx, "Cast", [product], {"to": TP.FLOAT})
    (y,) = onnx_node(ctx, "Mul", [y, scale])
    if ctx.has_input(bias):
        (y,) = onnx_node(ctx, "Add", [y, ctx.tensor(bias)])
    return [y]


def _check_float(ctx: NodeContext, inputs: tuple[int, ...]) -> None:
    for i in inputs:
        if ctx.has_input(i) and types.onnx_type_of_element(ctx.element_type(i)) != TP.FLOAT:
            raise ctx.unsupported(f"input {i} of type {ctx.element_type(i)} (float only)")


def convert_dynamic_quantize_matmul(ctx: NodeContext) -> list[Result]:
    """DynamicQuantizeMatMul(A, B, b_scale, b_zero_point, bias): A quantized to uint8 by
    DynamicQuantizeLinear, MatMulInteger with B, scaled by a_scale * b_scale, + bias."""
    _check_attrs(ctx, ())
    _check_float(ctx, (0, 2, 4))
    _byte_type(ctx, 1, "B")
    if ctx.rank(1) < 1:
        raise ctx.invalid("B must have rank >= 1")
    _column_scale(ctx, 2, 3, ctx.shape(1)[-1], "B")
    aq, a_scale, a_zero = onnx_node(ctx, "DynamicQuantizeLinear", [ctx.tensor(0)], outputs=3)
    b_zero = ctx.tensor(3) if ctx.has_input(3) else None
    (product,) = onnx_node(ctx, "MatMulInteger", [aq, ctx.tensor(1), a_zero, b_zero])
    return _scaled_product(ctx, product, a_scale, 2, 4)


def convert_matmul_integer_to_float(ctx: NodeContext) -> list[Result]:
    """MatMulIntegerToFloat(A, B, a_scale, b_scale, a_zero_point, b_zero_point, bias):
    MatMulInteger(A, B, a_zero_point, b_zero_point) * (a_scale * b_scale) + bias."""
    _check_attrs(ctx, ())
    _check_float(ctx, (2, 3, 6))
    _byte_type(ctx, 0, "A")
    _byte_type(ctx, 1, "B")
    if ctx.rank(1) < 1:
        raise ctx.invalid("B must have rank >= 1")
    _column_scale(ctx, 3, 5, ctx.shape(1)[-1], "B")
    _one_value(ctx, 2, "a_scale")
    zeros = [ctx.tensor(i) if ctx.has_input(i) else None for i in (4, 5)]
    (product,) = onnx_node(ctx, "MatMulInteger", [ctx.tensor(0), ctx.tensor(1), *zeros])
    return _scaled_product(ctx, product, ctx.tensor(2), 3, 6)


CONVERTERS: dict[str, Converter] = {
    "QLinearAdd": _binary("Add"),
    "QLinearMul": _binary("Mul"),
    "QLinearSigmoid": _unary("Sigmoid"),
    "QLinearLeakyRelu": _unary("LeakyRelu", ("alpha",)),
    "QLinearConcat": convert_qlinear_concat,
    "QLinearGlobalAveragePool": convert_qlinear_global_average_pool,
    "QLinearAveragePool": convert_qlinear_average_pool,
    "QLinearSoftmax": convert_qlinear_softmax,
    "QLinearWhere": convert_qlinear_where,
    "QGemm": convert_qgemm,
    "DynamicQuantizeMatMul": convert_dynamic_quantize_matmul,
    "MatMulIntegerToFloat": convert_matmul_integer_to_float,
}
"""com.microsoft quantization converters by op type."""
