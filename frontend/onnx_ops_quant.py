"""Linear quantization: QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear.

Scales and zero points become properties of graph.quantize_linear / dequantize_linear, so
they must be compile-time constants (a graph input raises UnsupportedOpError and the ONNX
backend specializes it). Opset differences: per-axis parameters and `axis` (13), the
float8 types and `saturate` (19), blocked parameters, int4/uint4 and `output_dtype` on
QuantizeLinear (21), `output_dtype` on DequantizeLinear, `precision` and FLOAT4E2M1 (23),
2-bit integers (25). A scale or zero point of one element is per-tensor whatever `axis`
says, as onnx.reference reads it. The quantized compute ops (QLinearConv, ...) are in
onnx_ops_qlinear.

A scale may be negative (ONNX does not forbid it; onnxruntime's symmetric int4 quantizer
writes them): the formulas hold as they are. A zero, NaN or infinite scale is refused:
onnxruntime does not check (its DequantizeLinear multiplies by it, its QuantizeLinear
divides by it, so 0 / 0 gives NaN, which MLAS saturates to one end), which is a broken
model, not a quantization.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import FloatAttr, f32
from xdsl.ir import SSAValue

from onnxc.dialects import graph
from onnxc.dialects.dense_data import from_numpy
from onnxc.dialects.graph_quant import is_float_quantized, quantized_range
from onnxc.frontend import onnx_types as types
from onnxc.frontend.batch_axes import sample_wise
from onnxc.frontend.onnx_context import NodeContext, Result
from onnxc.frontend.onnx_ops_math import cast_to

TP = types.TP

_SCALE_TYPES = (TP.FLOAT, TP.FLOAT16, TP.BFLOAT16)
_INTEGER_TYPES = (TP.UINT8, TP.INT8, TP.UINT16, TP.INT16, TP.UINT4, TP.INT4, TP.UINT2,
                  TP.INT2)
_FLOAT_TYPES = (TP.FLOAT8E4M3FN, TP.FLOAT8E4M3FNUZ, TP.FLOAT8E5M2, TP.FLOAT8E5M2FNUZ,
                TP.FLOAT4E2M1)
QUANTIZED_TYPES = _INTEGER_TYPES + _FLOAT_TYPES


def _names(onnx_types) -> str:
    return ", ".join(types.type_name(t) for t in onnx_types)


def _scale_type(ctx: NodeContext, scale: np.ndarray):
    onnx_type = types.onnx_type_of_numpy(scale.dtype)
    if onnx_type not in _SCALE_TYPES:
        raise ctx.unsupported(f"a {scale.dtype} scale (only {_names(_SCALE_TYPES)})")
    return types.element_type(onnx_type)


def quant_properties(ctx: NodeContext, quantized, x_shape: tuple[int, ...]) -> dict:
    """scale / zero_point / axis / block_size properties of a Q or DQ node (module
    docstring of graph_quant for their forms)."""
    scale = ctx.constant(1, "scale")
    zero = ctx.optional_constant(2, "zero_point")
    scale_el = _scale_type(ctx, scale)
    float_q = is_float_quantized(quantized)
    if zero is not None and zero.shape != scale.shape and zero.size == scale.size == 1:
        zero = zero.reshape(scale.shape)
    if zero is not None and zero.shape != scale.shape:
        raise ctx.invalid(f"zero_point shape {zero.shape} differs from scale shape "
                          f"{scale.shape}")
    if zero is None:
        zero = np.zeros(scale.shape, np.float32 if float_q else np.int64)
    zero = zero.astype(np.float32 if float_q else np.int64)
    if float_q and np.any(zero != 0):
        raise ctx.unsupported(f"a nonzero zero point for {quantized} (ONNX requires 0)")
    if not np.all(np.isfinite(scale)) or np.any(scale == 0):
        raise ctx.invalid("scale must be finite and nonzero")
    block = int(ctx.attr("block_size", 0))
    if block < 0:
        raise ctx.invalid(f"block_size must not be negative, got {block}")
    if scale.size == 1 and block == 0:
        value = float(scale.reshape(()))
        zp = float(zero.reshape(())) if float_q else int(zero.reshape(()))
        zp_attr = types.float_attr(zp) if float_q else types.i64_attr(zp)
        return {"scale": FloatAttr(value, scale_el), "zero_point": zp_attr}
    rank = len(x_shape)
    axis = int(ctx.attr("axis", 1))
    if not -rank <= axis < rank:
        raise ctx.invalid(f"axis {axis} is out of range for rank {rank}")
    axis %= rank
    if block == 0:
        if scale.shape != (x_shape[axis],):
            raise ctx.invalid(f"per-axis scale has shape {scale.shape}, expected "
                              f"({x_shape[axis]},) (the input's dimension {axis})")
    else:
        expected = tuple(math.ceil(d / block) if i == axis else d for i, d in enumerate(x_shape))
        if scale.shape != expected:
            raise ctx.invalid(f"blocked scale has shape {scale.shape}, expected {expected} "
                              f"(block_size {block} along axis {axis})")
    zero_el = types.element_type(TP.FLOAT if float_q else TP.INT32)
    props = {"scale": from_numpy(scale, scale_el), "zero_point": from_numpy(zero, zero_el),
             "axis": types.i64_attr(axis)}
    if block:
        props["block_size"] = types.i64_attr(block)
    return props


# --------------------------------------------------------------------------- run-time parameters


def _runtime_parameters(ctx: NodeContext, quantized) -> bool:
    """Whether the scale or zero point is computed at run time (as in DynamicQuantizeLinear's
    function body). Supported then for one value each and an integer type; a per-axis or
    blocked one, or a float8/float4 type, raises the "must be a constant" UnsupportedOpError
    (the ONNX backend specializes graph inputs)."""
    dynamic = [ctx.has_input(i) and ctx.tensor(i).array is None for i in (1, 2)]
    if not any(dynamic):
        return False
    sizes = [math.prod(ctx.shape(i)) for i in (1, 2) if ctx.has_input(i)]
    if (any(n != 1 for n in sizes) or ctx.attr("block_size", 0)
            or is_float_quantized(quantized)):
        ctx.constant(1, "scale")
        ctx.optional_constant(2, "zero_point")
    return True


def _scalar(ctx: NodeContext, i: int, el) -> SSAValue:
    """Input i (one element) as a rank-0 tensor of element type `el`."""
    value = cast_to(ctx, ctx.operand(i), el)
    if ctx.shape(i) == ():
        return value
    return ctx.emit1(graph.ReshapeOp(operands=[value, None],
                                     result_types=[types.tensor_type((), el)]))


def _quantize_at_run_time(ctx: NodeContext, el) -> SSAValue:
    """round_half_even(x / scale) + zero_point, clipped, with graph ops in f32."""
    lo, hi = quantized_range(el)
    shape = ctx.shape(0)
    real = types.tensor_type(shape, f32)
    q = ctx.emit1(graph.DivOp(operands=[cast_to(ctx, ctx.operand(0), f32), _scalar(ctx, 1, f32)],
                              result_types=[real]))
    q = ctx.emit1(graph.RoundOp(operands=[q], result_types=[real]))
    if ctx.has_input(2):
        q = ctx.emit1(graph.AddOp(operands=[q, _scalar(ctx, 2, f32)], result_types=[real]))
    q = ctx.emit1(graph.ClipOp(operands=[q], result_types=[real], properties={
        "min": types.float_attr(lo), "max": types.float_attr(hi)}))
    return cast_to(ctx, q, el)


def _dequantize_at_run_time(ctx: NodeContext, real_el) -> SSAValue:
    """(x - zero_point) * scale with graph ops in f32."""
    real = types.tensor_type(ctx.shape(0), f32)
    x = cast_to(ctx, ctx.operand(0), f32)
    if ctx.has_input(2):
        x = ctx.emit1(graph.SubOp(operands=[x, _scalar(ctx, 2, f32)], result_types=[real]))
    y = ctx.emit1(graph.MulOp(operands=[x, _scalar(ctx, 1, f32)], result_types=[real]))
    return cast_to(ctx, y, real_el)


# --------------------------------------------------------------------------- converters


def _quantized_type(ctx: NodeContext) -> int:
    """QuantizeLinear's result type: the zero point's, else `output_dtype`, else uint8."""
    output_dtype = ctx.attr("output_dtype", 0)
    if not ctx.has_input(2):
        return output_dtype or TP.UINT8
    qtype = types.onnx_type_of_element(ctx.element_type(2))
    if output_dtype and output_dtype != qtype:
        raise ctx.invalid(f"output_dtype {types.type_name(output_dtype)} differs from the "
                          f"zero point's type {types.type_name(qtype)}")
    return qtype


def convert_quantize_linear(ctx: NodeContext) -> list[Result]:
    """QuantizeLinear to the zero point's type, else `output_dtype`, else uint8."""
    x_el = ctx.element_type(0)
    if types.onnx_type_of_element(x_el) not in _SCALE_TYPES:
        raise ctx.unsupported(f"quantizing {x_el} (only {_names(_SCALE_TYPES)} inputs)")
    qtype = _quantized_type(ctx)
    if qtype not in QUANTIZED_TYPES:
        raise ctx.unsupported(f"quantizing to {types.type_name(qtype)} (only "
                              f"{_names(QUANTIZED_TYPES)})")
    el = types.element_type(qtype)
    if _runtime_parameters(ctx, el):
        return [_quantize_at_run_time(ctx, el)]
    props = quant_properties(ctx, el, ctx.shape(0))
    if is_float_quantized(el) and not ctx.attr("saturate", 1):
        props["saturate"] = types.i64_attr(0)
    precision = ctx.attr("precision", 0)
    if precision:
        if precision not in (TP.FLOAT, TP.FLOAT16, TP.BFLOAT16, TP.DOUBLE):
            raise ctx.unsupported(f"precision {types.type_name(precision)} (only FLOAT, "
                                  "FLOAT16, BFLOAT16, DOUBLE)")
        props["precision"] = types.element_type(precision)
    op = graph.QuantizeLinearOp(operands=[ctx.operand(0)],
                                result_types=[types.tensor_type(ctx.shape(0), el)],
                                properties=props)
    return [ctx.emit1(op)]


def convert_dequantize_linear(ctx: NodeContext) -> list[Result]:
    """DequantizeLinear to `output_dtype`, else the scale's float type."""
    x_el = ctx.element_type(0)
    x_type = types.onnx_type_of_element(x_el)
    if x_type not in QUANTIZED_TYPES + (TP.INT32,):
        raise ctx.unsupported(f"dequantizing {x_el} (only {_names(QUANTIZED_TYPES)}, INT32)")
    if ctx.has_input(2) and not is_float_quantized(x_el) and (
            types.onnx_type_of_element(ctx.element_type(2)) != x_type):
        raise ctx.invalid(f"zero point type {ctx.element_type(2)} differs from the input's "
                          f"{x_el}")
    output_dtype = ctx.attr("output_dtype", 0)
    if output_dtype and output_dtype not in _SCALE_TYPES:
        raise ctx.unsupported(f"output_dtype {types.type_name(output_dtype)} (only "
                              f"{_names(_SCALE_TYPES)})")
    scale_type = types.onnx_type_of_element(ctx.element_type(1))
    if scale_type not in _SCALE_TYPES:
        raise ctx.unsupported(f"a {ctx.element_type(1)} scale (only {_names(_SCALE_TYPES)})")
    real = types.element_type(output_dtype or scale_type)
    if _runtime_parameters(ctx, x_el):
        return [_dequantize_at_run_time(ctx, real)]
    op = graph.DequantizeLinearOp(operands=[ctx.operand(0)],
                                  result_types=[types.tensor_type(ctx.shape(0), real)],
                                  properties=quant_properties(ctx, x_el, ctx.shape(0)))
    return [ctx.emit1(op)]


def convert_dynamic_quantize_linear(ctx: NodeContext) -> list[Result]:
    if types.onnx_type_of_element(ctx.element_type(0)) != TP.FLOAT:
        raise ctx.unsupported(f"DynamicQuantizeLinear of {ctx.element_type(0)} (only FLOAT)")
    shape = ctx.shape(0)
    op = graph.DynamicQuantizeLinearOp(
        operands=[ctx.operand(0)],
        result_types=[types.tensor_type(shape, types.UI8),
                      types.tensor_type((), types.element_type(TP.FLOAT)),
                      types.tensor_type((), types.UI8)])
    return list(ctx.emit(op).results)


CONVERTERS = {
    "QuantizeLinear": sample_wise(convert_quantize_linear),
    "DequantizeLinear": sample_wise(convert_dequantize_linear),
    "DynamicQuantizeLinear": convert_dynamic_quantize_linear,
}
