"""Integer convolution and matrix product with their requantization: the quantized graph ops.

`graph.qlinear_conv` and `graph.qlinear_matmul` are what QLinearConv, QLinearMatMul,
ConvInteger, MatMulInteger and the QDQ form (DQ -> Conv/MatMul/Gemm -> Q) all become. Both
compute the exact integer accumulator of each output element

    acc[.., m] = sum_k (x[.., k] - input_zero_point) * (w[k, m] - weight_zero_point[m])
                 + bias[m]

(m is the output channel of the conv, the output column of the matmul; `bias` is an optional
i32 operand in the accumulator's scale, as quantize_static and QLinearConv store it), and
then give it the result's element type:
- i32: the accumulator itself (ConvInteger, MatMulInteger);
- f32 / f16: `acc * output_scale[m]`, output_scale = x_scale * w_scale[m] (DQ -> op with no Q);
- ui8 / i8: `clamp(round_half_even(acc * output_scale[m]) + output_zero_point,
  output_min, output_max)`, output_scale = x_scale * w_scale[m] / y_scale computed in f32 as
  onnxruntime does, and [output_min, output_max] the element type's range narrowed by a
  fused Relu or Clip (defaults: the type's range).

`weight_zero_point` and `output_scale` hold one value for the whole tensor or one per output
channel. Zero points and the accumulator are exact in i32; only the final scaling rounds.
An output scale may be negative (a negative weight, input or result scale): the rule is
the same; output_min / output_max bound the requantized integers whatever the sign.
"""

from __future__ import annotations

import math

from xdsl.dialects.builtin import (
    AnyFloat,
    DenseArrayBase,
    IntegerAttr,
    IntegerType,
    Signedness,
    TensorType,
)
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.utils.exceptions import VerifyException

from onnxc.dialects import graph_shapes as shapes
from onnxc.dialects.graph_base import GraphOp, int_of, ints_of, shape_of
from onnxc.dialects.graph_nn import ConvFields, conv_result_shape
from onnxc.dialects.graph_traits import NHWCKernel, QuantizationKernel, StaticSizesKernel


def is_byte_type(el) -> bool:
    """ui8 or i8: the element types integer kernels read."""
    return isinstance(el, IntegerType) and el.width.data == 8


def byte_range(el) -> tuple[int, int]:
    """[min, max] of ui8 or i8."""
    return (0, 255) if el.signedness.data == Signedness.UNSIGNED else (-128, 127)


def is_i32(el) -> bool:
    return isinstance(el, IntegerType) and el.width.data == 32 and (
        el.signedness.data == Signedness.SIGNLESS)


class QuantizedProductOp(GraphOp):
    """What qlinear_conv and qlinear_matmul share: the zero points and the output rule."""

    input_zero_point = prop_def(IntegerAttr)
    weight_zero_point = prop_def(DenseArrayBase)
    output_scale = opt_prop_def(DenseArrayBase)
    output_zero_point = opt_prop_def(IntegerAttr)
    output_min = opt_prop_def(IntegerAttr)
    output_max = opt_prop_def(IntegerAttr)

    def channels(self) -> int:
        """Size of the output-channel axis the per-channel properties index."""
        raise NotImplementedError

    def quantized_operands(self):
        raise NotImplementedError

    def output_range(self) -> tuple[int, int]:
        """[output_min, output_max] of a ui8/i8 result (the type's range by default)."""
        lo, hi = byte_range(self.results[0].type.get_element_type())
        return int_of(self.output_min, lo), int_of(self.output_max, hi)

    def verify_element_types(self) -> None:
        x, w = self.quantized_operands()
        for name, value in (("input", x), ("weight", w)):
            el = value.type.get_element_type()
            if not is_byte_type(el):
                raise VerifyException(f"{self.name}: {name} must be ui8 or i8, got {el}")
        bias = self.bias
        if bias is not None and not is_i32(bias.type.get_element_type()):
            raise VerifyException(f"{self.name}: bias must be i32, got "
                                  f"{bias.type.get_element_type()}")
        lo, hi = byte_range(x.type.get_element_type())
        if not lo <= int_of(self.input_zero_point) <= hi:
            raise VerifyException(f"{self.name}: input_zero_point out of the input's range")
        self._verify_per_channel("weight_zero_point", ints_of(self.weight_zero_point))
        wlo, whi = byte_range(w.type.get_element_type())
        if any(not wlo <= z <= whi for z in ints_of(self.weight_zero_point)):
            raise VerifyException(f"{self.name}: weight_zero_point out of the weight's range")
        self._verify_output()

    def _verify_per_channel(self, name: str, values) -> None:
        if len(values) not in (1, self.channels()):
            raise VerifyException(f"{self.name}: {name} has {len(values)} values, expected 1 "
                                  f"or one per output channel ({self.channels()})")

    def _verify_output(self) -> None:
        el = self.results[0].type.get_element_type()
        scaled = self.output_scale is not None
        requantized = (self.output_zero_point is not None or self.output_min is not None
                       or self.output_max is not None)
        if is_i32(el):
            if scaled or requantized:
                raise VerifyException(f"{self.name}: an i32 result takes no output scale or "
                                      "zero point")
            return
        if not scaled:
            raise VerifyException(f"{self.name}: a {el} result needs output_scale")
        scales = tuple(self.output_scale.get_values())
        self._verify_per_channel("output_scale", scales)
        if not all(math.isfinite(s) and s != 0 for s in scales):
            raise VerifyException(f"{self.name}: output_scale must be finite and nonzero")
        if isinstance(el, AnyFloat):
            if requantized:
                raise VerifyException(f"{self.name}: a float result takes no output zero point "
                                      "or bounds")
            return
        if not is_byte_type(el):
            raise VerifyException(f"{self.name}: result must be i32, a float, ui8 or i8, got {el}")
        lo, hi = byte_range(el)
        zp = int_of(self.output_zero_point)
        out_lo, out_hi = self.output_range()
        if not lo <= zp <= hi or not lo <= out_lo <= out_hi <= hi:
            raise VerifyException(f"{self.name}: output zero point or bounds outside [{lo}, {hi}]")


class QLinearConvFields(ConvFields, QuantizedProductOp):
    """What qlinear_conv and qlinear_conv_add share: graph.conv's window properties and
    operands with the module's output rule (IRDL takes fields from plain classes only)."""

    def channels(self) -> int:
        return shape_of(self.weight)[0]

    def quantized_operands(self):
        return self.input, self.weight

    def infer_shapes(self):
        return [conv_result_shape(self)]


@irdl_op_definition
class QLinearConvOp(QLinearConvFields):
    """N-D integer convolution (graph.conv's window properties) with the module's output rule."""

    name = "graph.qlinear_conv"
    traits = traits_def(QuantizationKernel(), NHWCKernel(symbolic=True), StaticSizesKernel())


@irdl_op_definition
class QLinearMatMulOp(QuantizedProductOp):
    """numpy.matmul of integers (batch broadcasting) with the module's output rule; the
    output channel is the last result axis (the rhs's columns)."""

    name = "graph.qlinear_matmul"
    traits = traits_def(QuantizationKernel())
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    output = result_def(TensorType)

    def channels(self) -> int:
        """The rhs's columns; a 1-D rhs is one column (numpy drops its axis from the result)."""
        rhs = shape_of(self.rhs)
        return rhs[-1] if len(rhs) > 1 else 1

    def quantized_operands(self):
        return self.lhs, self.rhs

    def infer_shapes(self):
        out = shapes.matmul_output_shape(shape_of(self.lhs), shape_of(self.rhs))
        if self.bias is not None and shape_of(self.bias) != (self.channels(),):
            raise ValueError(f"bias shape {shape_of(self.bias)} is not ({self.channels()},)")
        return [out]


@irdl_op_definition
class QLinearConvAddOp(QLinearConvFields):
    """A qlinear_conv with a byte result, then the quantized sum with a residual `addend`:
    DequantizeLinear of both, Add, an optional Relu or Clip and QuantizeLinear, the tail of
    every residual block of a QDQ network, which otherwise reads the conv's output back from
    memory in a kernel of its own. With q the conv's requantized result (its output rule,
    in the result's element type) and a the addend, sum_scales = [q_scale, a_scale,
    y_scale] (the three quantizations' scales):

        y = clamp(round_half_even((f32(q - output_zero_point) * q_scale
                                   + f32(a - addend_zero_point) * a_scale) / y_scale)
                  + sum_zero_point, sum_min, sum_max)

    each step rounded to f32 as the DequantizeLinear, Add and QuantizeLinear it replaces
    compute it (no fused multiply-add, a true division): the same bits as the QDQ graph.
    [sum_min, sum_max] defaults to the result type's range; a Relu or Clip narrows it
    (quantization is monotone, as in fuse-qdq-linear's output bounds)."""

    name = "graph.qlinear_conv_add"
    traits = traits_def(QuantizationKernel(), NHWCKernel(symbolic=True), StaticSizesKernel())
    # redeclared so that addend follows them (IRDL puts inherited operands after its own)
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    addend = operand_def(TensorType)
    addend_zero_point = prop_def(IntegerAttr)
    sum_scales = prop_def(DenseArrayBase)
    sum_zero_point = prop_def(IntegerAttr)
    sum_min = opt_prop_def(IntegerAttr)
    sum_max = opt_prop_def(IntegerAttr)

    def sum_range(self) -> tuple[int, int]:
        """[sum_min, sum_max] (the result type's range by default)."""
        lo, hi = byte_range(self.results[0].type.get_element_type())
        return int_of(self.sum_min, lo), int_of(self.sum_max, hi)

    def infer_shapes(self):
        out = conv_result_shape(self)
        if shape_of(self.addend) != out:
            raise ValueError(f"addend shape {shape_of(self.addend)} is not the result's {out}")
        return [out]

    def verify_element_types(self) -> None:
        super().verify_element_types()
        el = self.results[0].type.get_element_type()
        if not is_byte_type(el):
            raise VerifyException(f"{self.name}: the result must be ui8 or i8, got {el}")
        addend = self.addend.type.get_element_type()
        if not is_byte_type(addend):
            raise VerifyException(f"{self.name}: addend must be ui8 or i8, got {addend}")
        alo, ahi = byte_range(addend)
        if not alo <= int_of(self.addend_zero_point) <= ahi:
            raise VerifyException(f"{self.name}: addend_zero_point out of the addend's range")
        scales = tuple(self.sum_scales.get_values())
        if len(scales) != 3 or not all(math.isfinite(s) and s != 0 for s in scales):
            raise VerifyException(f"{self.name}: sum_scales must be three finite nonzero "
                                  "numbers")
        lo, hi = byte_range(el)
        out_lo, out_hi = self.sum_range()
        if not lo <= int_of(self.sum_zero_point) <= hi or not lo <= out_lo <= out_hi <= hi:
            raise VerifyException(f"{self.name}: sum zero point or bounds outside [{lo}, {hi}]")


QLINEAR_CONV_OPS = (QLinearConvOp, QLinearConvAddOp)
"""The integer convolutions: isinstance tests of code that takes both."""

QLINEAR_OPS = (*QLINEAR_CONV_OPS, QLinearMatMulOp)
