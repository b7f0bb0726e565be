"""Graph ops for linear quantization with one scale and zero point per tensor.

`graph.quantize_linear`: y = saturate(round_half_to_even(x / scale) + zero_point), with y's
element type (ui8 or i8) giving the saturation range, as ONNX QuantizeLinear.
`graph.dequantize_linear`: y = (x - zero_point) * scale, as ONNX DequantizeLinear.
Scale and zero point are properties: the importer accepts only constant per-tensor ones.
"""

from __future__ import annotations

from xdsl.dialects.builtin import (
    AnyFloat,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    Signedness,
    TensorType,
)
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def
from xdsl.utils.exceptions import VerifyException

from onnxc.dialects.graph_base import GraphOp, float_of, int_of, shape_of


def quantized_range(el) -> tuple[int, int]:
    """[min, max] of a quantized element type (ui8 or i8); ValueError for anything else."""
    if isinstance(el, IntegerType) and el.width.data == 8:
        if el.signedness.data == Signedness.UNSIGNED:
            return 0, 255
        return -128, 127
    raise ValueError(f"quantized element type must be ui8 or i8, got {el}")


class _LinearQuantOp(GraphOp):
    input = operand_def(TensorType)
    output = result_def(TensorType)
    scale = prop_def(FloatAttr)
    zero_point = prop_def(IntegerAttr)

    def quantized_type(self):
        raise NotImplementedError

    def real_type(self):
        raise NotImplementedError

    def verify_element_types(self) -> None:
        real = self.real_type()
        if not isinstance(real, AnyFloat):
            raise VerifyException(f"{self.name}: the real-valued side must be a float, got {real}")
        try:
            lo, hi = quantized_range(self.quantized_type())
        except ValueError as err:
            raise VerifyException(f"{self.name}: {err}") from err
        if not lo <= int_of(self.zero_point) <= hi:
            raise VerifyException(f"{self.name}: zero_point {int_of(self.zero_point)} is out "
                                  f"of range [{lo}, {hi}]")
        if not float_of(self.scale) > 0:
            raise VerifyException(f"{self.name}: scale must be positive")

    def infer_shapes(self):
        return [shape_of(self.input)]


@irdl_op_definition
class QuantizeLinearOp(_LinearQuantOp):
    """Float -> ui8/i8 with round-half-to-even and saturation."""

    name = "graph.quantize_linear"

    def quantized_type(self):
        return self.output.type.get_element_type()

    def real_type(self):
        return self.input.type.get_element_type()


@irdl_op_definition
class DequantizeLinearOp(_LinearQuantOp):
    """ui8/i8 -> float: (x - zero_point) * scale."""

    name = "graph.dequantize_linear"

    def quantized_type(self):
        return self.input.type.get_element_type()

    def real_type(self):
        return self.output.type.get_element_type()
