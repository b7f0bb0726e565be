"""Graph ops for the remaining unary float math: rounding, sign, trigonometric and
hyperbolic functions, the Softplus/Mish/ThresholdedRelu/Shrink activations, and BitCast.

All but BitCast are `UnaryElementwiseOp`s (same shape and element type as the input).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import FloatAttr
from xdsl.ir import SSAValue
from xdsl.irdl import irdl_op_definition, prop_def, traits_def

from onnxc.dialects.graph_base import GraphOp, UnaryFields, shape_of
from onnxc.dialects.graph_math import UnaryElementwiseOp
from onnxc.dialects.graph_traits import AnyElementKernel, HalfKernel


@irdl_op_definition
class CeilOp(UnaryElementwiseOp):
    """ONNX Ceil: round up to an integer (float tensors)."""

    name = "graph.ceil"
    traits = traits_def(HalfKernel())


@irdl_op_definition
class FloorOp(UnaryElementwiseOp):
    """ONNX Floor: round down to an integer (float tensors)."""

    name = "graph.floor"
    traits = traits_def(HalfKernel())


@irdl_op_definition
class RoundOp(UnaryElementwiseOp):
    """Round to the nearest integer, halves to even (as ONNX Round and numpy.round)."""

    name = "graph.round"
    traits = traits_def(HalfKernel())


@irdl_op_definition
class SignOp(UnaryElementwiseOp):
    """ONNX Sign: -1, 0 or 1 by the sign of x (any numeric type)."""

    name = "graph.sign"
    traits = traits_def(HalfKernel())


@irdl_op_definition
class SinOp(UnaryElementwiseOp):
    """ONNX Sin: the sine."""

    name = "graph.sin"
    traits = traits_def(HalfKernel())


@irdl_op_definition
class CosOp(UnaryElementwiseOp):
    """ONNX Cos: the cosine."""

    name = "graph.cos"
    traits = traits_def(HalfKernel())


@irdl_op_definition
class TanOp(UnaryElementwiseOp):
    """ONNX Tan: the tangent."""

    name = "graph.tan"


@irdl_op_definition
class AsinOp(UnaryElementwiseOp):
    """ONNX Asin: the arcsine."""

    name = "graph.asin"


@irdl_op_definition
class AcosOp(UnaryElementwiseOp):
    """ONNX Acos: the arccosine."""

    name = "graph.acos"


@irdl_op_definition
class AtanOp(UnaryElementwiseOp):
    """ONNX Atan: the arctangent."""

    name = "graph.atan"


@irdl_op_definition
class SinhOp(UnaryElementwiseOp):
    """ONNX Sinh: the hyperbolic sine."""

    name = "graph.sinh"


@irdl_op_definition
class CoshOp(UnaryElementwiseOp):
    """ONNX Cosh: the hyperbolic cosine."""

    name = "graph.cosh"


@irdl_op_definition
class AsinhOp(UnaryElementwiseOp):
    """ONNX Asinh: the inverse hyperbolic sine."""

    name = "graph.asinh"


@irdl_op_definition
class AcoshOp(UnaryElementwiseOp):
    """ONNX Acosh: the inverse hyperbolic cosine."""

    name = "graph.acosh"


@irdl_op_definition
class AtanhOp(UnaryElementwiseOp):
    """ONNX Atanh: the inverse hyperbolic tangent."""

    name = "graph.atanh"


@irdl_op_definition
class SoftplusOp(UnaryElementwiseOp):
    """log(1 + exp(x))."""

    name = "graph.softplus"


@irdl_op_definition
class MishOp(UnaryElementwiseOp):
    """x * tanh(softplus(x))."""

    name = "graph.mish"


@irdl_op_definition
class ThresholdedReluOp(UnaryElementwiseOp):
    """x where x > alpha, else 0."""

    name = "graph.thresholded_relu"
    alpha = prop_def(FloatAttr)


@irdl_op_definition
class ShrinkOp(UnaryElementwiseOp):
    """x + bias where x < -lambd, x - bias where x > lambd, else 0."""

    name = "graph.shrink"
    bias = prop_def(FloatAttr)
    lambd = prop_def(FloatAttr)


@irdl_op_definition
class BitCastOp(GraphOp, UnaryFields):
    """The input's bytes read as the result's element type (of the same byte width)."""

    name = "graph.bit_cast"
    traits = traits_def(AnyElementKernel())

    def same_element_type_operands(self) -> Sequence[SSAValue]:
        return ()

    def infer_shapes(self):
        return [shape_of(self.input)]


UNARY_MATH_OPS = [
    CeilOp, FloorOp, RoundOp, SignOp, SinOp, CosOp, TanOp, AsinOp, AcosOp, AtanOp,
    SinhOp, CoshOp, AsinhOp, AcoshOp, AtanhOp, SoftplusOp, MishOp, ThresholdedReluOp,
    ShrinkOp, BitCastOp,
]
