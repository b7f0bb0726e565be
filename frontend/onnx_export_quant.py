"""Quantization ops as ONNX: linear (de)quantization and the integer products.

- graph.quantize_linear / dequantize_linear: QuantizeLinear / DequantizeLinear with the
  properties back as initializers (scale of the scale's type, zero point of the quantized
  type; per axis and blocked with `axis` / `block_size`), `saturate`, and `precision` where
  the division's type is not the scale's (ONNX's default), or `output_dtype` where the
  result is not of the scale's type. ONNX opset 23 has no 2-bit types and quantizes no
  f64: such ops are refused.
- graph.dynamic_quantize_linear: DynamicQuantizeLinear.
- graph.qlinear_conv / qlinear_matmul (graph_qlinear's contract: the exact integer
  accumulator, then the result type's rule). A ui8/i8 result is QLinearConv / QLinearMatMul
  with x_scale = y_scale = 1 and w_scale = output_scale: onnxruntime requantizes by
  x_scale * w_scale / y_scale = output_scale exactly, round_half_even(f32(acc) * scale) +
  zero point, saturated, as the kernel does; a range narrowed by a fused Relu or Clip adds
  a Clip (a `QLinearConvClip` / `QLinearMatMulClip` function). An i32 result is
  ConvInteger / MatMulInteger. Otherwise (a bias on those, or on a ui8/i8 matmul, which
  QLinearMatMul cannot take; a float result) a function: the integer op, + the bias, then
  for a float result Cast, Mul by output_scale (f32) and Cast, for ui8/i8 Cast, Mul and
  QuantizeLinear with scale 1 (round half to even, + zero point, saturated) and the Clip.
  Per-channel zero points that are all equal are written as one (onnxruntime's
  ConvInteger takes one only).
- graph.qlinear_conv_add: the conv as above into a value of its own, then the
  DequantizeLinear of it and of the addend, Add and QuantizeLinear it stands for, and a Clip
  of the bytes where the bounds are narrowed: the same bits.
- graph.matmul_weight_quantized: com.microsoft MatMulNBits, its zero points packed back
  into uint8 (bits per value) when they are all integers of the weight's range, else of
  the scales' type; the group index as g_idx.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto
from xdsl.dialects.builtin import Float64Type, IntegerType
from xdsl.ir import Operation

from onnxc.dialects import graph
from onnxc.dialects.dense_data import to_numpy
from onnxc.dialects.graph import int_of, ints_of, shape_of
from onnxc.dialects.graph_qlinear import (
    QLINEAR_CONV_OPS,
    QuantizedProductOp,
    byte_range,
    is_byte_type,
    is_i32,
)
from onnxc.dialects.graph_quant import is_float_quantized
from onnxc.dialects.graph_weight_quant import pack_bits
from onnxc.frontend.onnx_export import (
    FUNCTION_DOMAIN,
    Emitter,
    FunctionBody,
    OnnxWriter,
    Sink,
    numpy_dtype_of,
    onnx_element_type,
    unsupported,
)
from onnxc.frontend.onnx_types import onnx_type_of_element

# ------------------------------------------------------------------ linear (de)quantization


def _params(w: OnnxWriter, op: graph.QuantizeLinearOp | graph.DequantizeLinearOp,
            quantized: int) -> tuple[list[str], dict[str, object]]:
    """The scale and zero point initializers, and the axis / block_size attributes."""
    qtype = op.quantized_type()
    if isinstance(qtype, IntegerType) and qtype.width.data == 2:
        raise unsupported(op, f"2-bit {qtype} is ONNX opset 25; the exporter writes 23")
    if isinstance(op.real_type(), Float64Type) or isinstance(op.scale_type(), Float64Type):
        raise unsupported(op, "ONNX (de)quantizes float, float16 and bfloat16 only, not f64")
    scale = w.const(op.scales(), "scale")
    zero = w.typed(op.zero_points(), quantized, "zero_point")
    attrs: dict[str, object] = {}
    if not op.is_per_tensor():
        attrs["axis"] = op.axis_of()
        if op.block_size_of():
            attrs["block_size"] = op.block_size_of()
    return [scale, zero], attrs


def _quantize_linear(w: OnnxWriter, op: graph.QuantizeLinearOp) -> None:
    quantized = onnx_element_type(op.output)
    params, attrs = _params(w, op, quantized)
    if op.division_type() != op.scale_type():
        attrs["precision"] = onnx_type_of_element(op.division_type())
    if is_float_quantized(op.quantized_type()) and not op.saturates():
        attrs["saturate"] = 0
    w.emit(op, "QuantizeLinear", [w.name(op.input), *params], **attrs)


def _dequantize_linear(w: OnnxWriter, op: graph.DequantizeLinearOp) -> None:
    params, attrs = _params(w, op, onnx_element_type(op.input))
    if op.real_type() != op.scale_type():
        attrs["output_dtype"] = onnx_element_type(op.output)
    w.emit(op, "DequantizeLinear", [w.name(op.input), *params], **attrs)


def _dynamic_quantize_linear(w: OnnxWriter, op: graph.DynamicQuantizeLinearOp) -> None:
    w.emit(op, "DynamicQuantizeLinear", [w.name(op.input)])


# ------------------------------------------------------------------ integer products


def _conv_attrs(op: graph.QLinearConvOp | graph.QLinearConvAddOp) -> dict[str, object]:
    return {"strides": list(ints_of(op.strides)), "pads": list(ints_of(op.pads)),
            "dilations": list(ints_of(op.dilations)), "group": int_of(op.group)}


def _per_channel(values, dtype) -> np.ndarray:
    """One value ([]) when all are equal, else the 1-D array."""
    values = np.asarray(values)
    if np.all(values == values.reshape(-1)[0]):
        return np.asarray(values.reshape(-1)[0], dtype)
    return values.astype(dtype)


def _qlinear(w: OnnxWriter, op: QuantizedProductOp, outputs: list[str] | None = None) -> None:
    """The integer product as its ONNX op (QLinearConv, ConvInteger, ...), or a local function
    around it; `outputs`: other names than the op's result."""
    conv = isinstance(op, QLINEAR_CONV_OPS)
    x, weight = op.quantized_operands()
    out_el = op.output.type.get_element_type()
    x_zero = np.asarray(int_of(op.input_zero_point), numpy_dtype_of(x))
    w_zero = _per_channel(ints_of(op.weight_zero_point), numpy_dtype_of(weight))
    scales = (None if op.output_scale is None
              else _per_channel(op.output_scale.get_values(), np.float32))
    byte = is_byte_type(out_el)
    narrowed = byte and op.output_range() != byte_range(out_el)
    qlinear = byte and (conv or op.bias is None)  # the requantizing ONNX op does it
    kernel = ("QLinear" if qlinear else "") + ("Conv" if conv else "MatMul") + (
        "" if qlinear else "Integer")
    attrs = _conv_attrs(op) if conv else {}
    operands = [x, weight] + ([op.bias] if op.bias is not None else [])
    rank = len(shape_of(op.output))
    y_zero = (None if not byte
              else np.asarray(int_of(op.output_zero_point), numpy_dtype_of(op.output)))

    def kernel_inputs(sink: Sink, x_name: str, w_name: str) -> list[str]:
        if not qlinear:
            return [x_name, w_name, sink.const(x_zero, "x_zero_point"),
                    sink.const(w_zero, "w_zero_point")]
        one = sink.const(np.asarray(1.0, np.float32), "one")
        return [x_name, one, sink.const(x_zero, "x_zero_point"), w_name,
                sink.const(scales, "w_scale"), sink.const(w_zero, "w_zero_point"), one,
                sink.const(y_zero, "y_zero_point")]

    if (qlinear and not narrowed) or (is_i32(out_el) and op.bias is None):
        inputs = kernel_inputs(w, w.name(x), w.name(weight))
        w.emit(op, kernel, inputs + ([w.name(op.bias)] if op.bias is not None else []),
               outputs=outputs, **attrs)
        return
    formal = ["X", "W"] + (["B"] if op.bias is not None else [])

    def build(body: FunctionBody) -> None:
        inputs = kernel_inputs(body, "X", "W")
        if qlinear:
            y = body.apply(kernel, inputs + formal[2:], "requantized", **attrs)
            _clip(body, op, y)
            return
        y = body.apply(kernel, inputs, "acc", **attrs)
        if op.bias is not None:
            bias = "B"
            if conv:
                bias = body.apply("Reshape", [bias, body.const(
                    np.asarray([-1] + [1] * (rank - 2), np.int64), "shape")], "bias")
            y = body.apply("Add", [y, bias], "biased")
        if is_i32(out_el):
            _output(body, y)
            return
        y = body.apply("Cast", [y], "real", to=TensorProto.FLOAT)
        if conv and scales.ndim:
            scale = body.const(scales.reshape((-1,) + (1,) * (rank - 2)), "scale")
        else:
            scale = body.const(scales, "scale")
        y = body.apply("Mul", [y, scale], "scaled")
        if not byte:
            if onnx_element_type(op.output) != TensorProto.FLOAT:
                y = body.apply("Cast", [y], "narrowed", to=onnx_element_type(op.output))
            _output(body, y)
            return
        y = body.apply("QuantizeLinear", [y, body.const(np.asarray(1.0, np.float32), "one"),
                                          body.const(y_zero, "y_zero_point")], "quantized")
        _clip(body, op, y)

    suffix = ("Clip" if qlinear else "Bias" if is_i32(out_el)
              else "Requantized" if byte else "Scaled")
    key = ("qlinear", kernel, suffix, tuple(shape_of(op.output)), str(out_el),
           numpy_dtype_of(x).name, numpy_dtype_of(weight).name, x_zero.item(),
           _tuple(w_zero), _tuple(scales), None if y_zero is None else y_zero.item(),
           op.output_range() if byte else None, op.bias is not None,
           tuple((k, str(v)) for k, v in attrs.items()))
    fn = w.function(key, kernel + suffix, formal, ["Y"], build)
    w.emit(op, fn, w.names(operands), outputs=outputs, domain=FUNCTION_DOMAIN)


def _qlinear_conv_add(w: OnnxWriter, op: graph.QLinearConvAddOp) -> None:
    """The conv's byte result, then the DequantizeLinear of it and of the addend, Add and
    QuantizeLinear the op stands for (the same f32 steps), and a Clip of the bytes to the
    narrowed bounds."""
    q = w.fresh("conv_requantized")
    _qlinear(w, op, outputs=[q])
    s_q, s_a, s_y = (np.asarray(s, np.float32) for s in op.sum_scales.get_values())
    dtype = numpy_dtype_of(op.output)
    terms = [w.apply("DequantizeLinear", [v, w.const(s, "scale"), w.const(z, "zero_point")],
                     "term")
             for v, s, z in ((q, s_q, np.asarray(int_of(op.output_zero_point), dtype)),
                             (w.name(op.addend), s_a, np.asarray(
                                 int_of(op.addend_zero_point), numpy_dtype_of(op.addend))))]
    total = w.apply("Add", terms, "sum")
    y_zero = w.const(np.asarray(int_of(op.sum_zero_point), dtype), "y_zero_point")
    if op.sum_range() == byte_range(op.output.type.get_element_type()):
        w.emit(op, "QuantizeLinear", [total, w.const(s_y, "y_scale"), y_zero])
        return
    y = w.apply("QuantizeLinear", [total, w.const(s_y, "y_scale"), y_zero], "quantized")
    lo, hi = (w.const(np.asarray(b, dtype), "bound") for b in op.sum_range())
    w.emit(op, "Clip", [y, lo, hi])


def _clip(body: FunctionBody, op: QuantizedProductOp, y: str) -> None:
    """Y = y clipped to [output_min, output_max] (a fused Relu / Clip's narrowing)."""
    if op.output_range() == byte_range(op.output.type.get_element_type()):
        _output(body, y)
        return
    dtype = numpy_dtype_of(op.output)
    lo, hi = (body.const(np.asarray(b, dtype), name)
              for b, name in zip(op.output_range(), ("min", "max"), strict=True))
    body.node("Clip", [y, lo, hi], ["Y"])


def _output(body: FunctionBody, y: str) -> None:
    """Make `y`, the last node's output, the function's output Y."""
    assert list(body.nodes[-1].output) == [y]
    body.nodes[-1].output[0] = "Y"


def _matmul_weight_quantized(w: OnnxWriter, op: graph.MatMulWeightQuantizedOp) -> None:
    bits, block = int_of(op.bits), int_of(op.block_size)
    zero = op.zero_points
    values = (to_numpy(zero.owner.value) if isinstance(zero.owner, graph.ConstantOp)
              else None)
    if values is not None and np.all((values >= 0) & (values < 2 ** bits)
                                     & (values == np.round(values))):
        zero_name = w.const(pack_bits(values, bits, 8 // bits).reshape(values.shape[0], -1),
                            "zero_points")
    else:
        zero_name = w.name(zero)
    group = "" if op.group_index is None else w.const(
        np.asarray(op.groups(), np.int32), "g_idx")
    inputs = [w.name(op.input), w.name(op.weight), w.name(op.scales), zero_name, group,
              *([w.name(op.bias)] if op.bias is not None else [])]
    attrs = {"K": int(op.k()), "N": op.n(), "bits": bits, "block_size": block}
    if int_of(op.accuracy_level):
        attrs["accuracy_level"] = int_of(op.accuracy_level)
    w.emit(op, "MatMulNBits", inputs, domain="com.microsoft", **attrs)


def _tuple(values: np.ndarray | None) -> tuple | None:
    return None if values is None else tuple(np.asarray(values).reshape(-1).tolist())


QUANT_EMITTERS: dict[type[Operation], Emitter] = {
    graph.QuantizeLinearOp: _quantize_linear,
    graph.DequantizeLinearOp: _dequantize_linear,
    graph.DynamicQuantizeLinearOp: _dynamic_quantize_linear,
    graph.QLinearConvOp: _qlinear,
    graph.QLinearConvAddOp: _qlinear_conv_add,
    graph.QLinearMatMulOp: _qlinear,
    graph.MatMulWeightQuantizedOp: _matmul_weight_quantized,
}
