"""Graph ops for constants, elementwise arithmetic and linear algebra."""

from __future__ import annotations

import abc
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
)
from xdsl.ir import SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import ConstantLike, Pure
from xdsl.utils.exceptions import VerifyException

from onnxc.dialects import graph_shapes as shapes
from onnxc.dialects.graph_base import GraphOp, UnaryFields, int_of, shape_of
from onnxc.dialects.graph_epilogue import EpilogueProps, verify_epilogue
from onnxc.dialects.graph_traits import (
    AnyElementKernel,
    BroadcastingElementwise,
    ElementwiseMap,
    HalfKernel,
)

# --------------------------------------------------------------------------- constants


@irdl_op_definition
class ConstantOp(GraphOp):
    """A tensor known at compile time; its data is dense bytes, never a Python list."""

    name = "graph.constant"
    value = prop_def(DenseIntOrFPElementsAttr)
    output = result_def(TensorType)
    traits = traits_def(Pure(), ConstantLike(), AnyElementKernel())
    assembly_format = "attr-dict `:` type($output)"

    def __init__(self, value: DenseIntOrFPElementsAttr):
        super().__init__(properties={"value": value}, result_types=[value.type])

    def verify_(self) -> None:
        if self.value.type != self.output.type:
            raise VerifyException(f"{self.name}: value type differs from result type")


@irdl_op_definition
class ConstantOfShapeOp(GraphOp):
    """A tensor of the result's shape filled with one scalar (`value`, a 1-element dense)."""

    name = "graph.constant_of_shape"
    value = prop_def(DenseIntOrFPElementsAttr)
    output = result_def(TensorType)
    traits = traits_def(Pure(), ConstantLike())
    assembly_format = "attr-dict `:` type($output)"

    def verify_(self) -> None:
        if len(self.value) != 1:
            raise VerifyException(f"{self.name}: value must hold exactly one element")
        if self.value.get_element_type() != self.output.type.get_element_type():
            raise VerifyException(f"{self.name}: value and result element types differ")


# --------------------------------------------------------------------------- elementwise


class UnaryElementwiseOp(GraphOp, UnaryFields, abc.ABC):
    """y = f(x) elementwise; same shape and element type."""

    def infer_shapes(self):
        return [shape_of(self.input)]


@irdl_op_definition
class ReluOp(UnaryElementwiseOp):
    """ONNX Relu: max(x, 0)."""

    name = "graph.relu"
    traits = traits_def(HalfKernel(), ElementwiseMap())


@irdl_op_definition
class SigmoidOp(UnaryElementwiseOp):
    """ONNX Sigmoid: 1 / (1 + exp(-x))."""

    name = "graph.sigmoid"
    traits = traits_def(HalfKernel(), ElementwiseMap())


@irdl_op_definition
class TanhOp(UnaryElementwiseOp):
    """ONNX Tanh: the hyperbolic tangent."""

    name = "graph.tanh"
    traits = traits_def(HalfKernel(), ElementwiseMap())


@irdl_op_definition
class ExpOp(UnaryElementwiseOp):
    """ONNX Exp: e**x."""

    name = "graph.exp"
    traits = traits_def(HalfKernel(), ElementwiseMap())


@irdl_op_definition
class LogOp(UnaryElementwiseOp):
    """ONNX Log: the natural logarithm."""

    name = "graph.log"
    traits = traits_def(HalfKernel(), ElementwiseMap())


@irdl_op_definition
class SqrtOp(UnaryElementwiseOp):
    """ONNX Sqrt: the square root."""

    name = "graph.sqrt"
    traits = traits_def(HalfKernel(), ElementwiseMap())


@irdl_op_definition
class NegOp(UnaryElementwiseOp):
    """ONNX Neg: -x."""

    name = "graph.neg"
    traits = traits_def(HalfKernel(), ElementwiseMap())


@irdl_op_definition
class AbsOp(UnaryElementwiseOp):
    """ONNX Abs: |x|."""

    name = "graph.abs"
    traits = traits_def(HalfKernel(), ElementwiseMap())


@irdl_op_definition
class ReciprocalOp(UnaryElementwiseOp):
    """ONNX Reciprocal: 1 / x."""

    name = "graph.reciprocal"
    traits = traits_def(HalfKernel(), ElementwiseMap())


@irdl_op_definition
class ErfOp(UnaryElementwiseOp):
    """ONNX Erf: the Gauss error function."""

    name = "graph.erf"


@irdl_op_definition
class IdentityOp(UnaryElementwiseOp):
    """ONNX Identity: a copy of the input. The importer also emits it for a Sum/Max/Min
    of one input and for Casts to the same type."""

    name = "graph.identity"
    traits = traits_def(AnyElementKernel())


@irdl_op_definition
class DropoutOp(UnaryElementwiseOp):
    """Inference-mode Dropout: the identity. The ratio is kept for round-tripping."""

    name = "graph.dropout"
    traits = traits_def(AnyElementKernel())
    ratio = opt_prop_def(FloatAttr)


@irdl_op_definition
class LeakyReluOp(UnaryElementwiseOp):
    """ONNX LeakyRelu: x where x >= 0, else alpha * x (`alpha` defaults to 0.01 on import)."""

    name = "graph.leaky_relu"
    traits = traits_def(HalfKernel(), ElementwiseMap())
    alpha = prop_def(FloatAttr)


@irdl_op_definition
class ClipOp(UnaryElementwiseOp):
    """Clamp to [min, max]; an absent bound is unbounded (min/max were inputs since opset 11)."""

    name = "graph.clip"
    traits = traits_def(HalfKernel(), ElementwiseMap())
    min = opt_prop_def(FloatAttr)
    max = opt_prop_def(FloatAttr)


@irdl_op_definition
class CastOp(GraphOp, UnaryFields):
    """Element type conversion; the destination type is the result's element type."""

    name = "graph.cast"
    traits = traits_def(AnyElementKernel(), ElementwiseMap())
    saturate = opt_prop_def(IntegerAttr)
    """0: an 8-bit float result out of range becomes inf/NaN instead of the largest finite."""
    round_mode = opt_prop_def(StringAttr)
    """E8M0 results: "up" (absent), "down" or "nearest"."""

    def same_element_type_operands(self) -> Sequence[SSAValue]:
        return ()  # converting the element type is the point

    def infer_shapes(self):
        return [shape_of(self.input)]


class BinaryElementwiseOp(GraphOp, abc.ABC):
    """z = f(x, y) with ONNX multidirectional broadcasting."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    output = result_def(TensorType)

    def infer_shapes(self):
        return [shapes.broadcast_shapes(shape_of(self.lhs), shape_of(self.rhs))]


@irdl_op_definition
class AddOp(BinaryElementwiseOp):
    """ONNX Add: lhs + rhs with multidirectional broadcasting."""

    name = "graph.add"
    traits = traits_def(HalfKernel(), BroadcastingElementwise())


@irdl_op_definition
class SubOp(BinaryElementwiseOp):
    """ONNX Sub: lhs - rhs with multidirectional broadcasting."""

    name = "graph.sub"
    traits = traits_def(HalfKernel(), BroadcastingElementwise())


@irdl_op_definition
class MulOp(BinaryElementwiseOp):
    """ONNX Mul: lhs * rhs with multidirectional broadcasting."""

    name = "graph.mul"
    traits = traits_def(HalfKernel(), BroadcastingElementwise())


@irdl_op_definition
class DivOp(BinaryElementwiseOp):
    """ONNX Div: lhs / rhs with multidirectional broadcasting."""

    name = "graph.div"
    traits = traits_def(HalfKernel(), BroadcastingElementwise())


@irdl_op_definition
class PowOp(BinaryElementwiseOp):
    """ONNX Pow: lhs ** rhs with broadcasting. Unlike ONNX (opset 12+) both operands have
    one element type: the importer casts the exponent to the base's type."""

    name = "graph.pow"
    traits = traits_def(HalfKernel(), BroadcastingElementwise())


class VariadicElementwiseOp(GraphOp, abc.ABC):
    """Sum/Max/Min over one or more broadcast inputs."""

    inputs = var_operand_def(TensorType)
    output = result_def(TensorType)

    def infer_shapes(self):
        if not self.inputs:
            raise ValueError("needs at least one input")
        return [shapes.broadcast_shapes(*(shape_of(v) for v in self.inputs))]


@irdl_op_definition
class SumOp(VariadicElementwiseOp):
    """ONNX Sum: the elementwise sum of two or more broadcast inputs (a single input is
    imported as graph.identity)."""

    name = "graph.sum"
    traits = traits_def(HalfKernel(), BroadcastingElementwise())


@irdl_op_definition
class MaxOp(VariadicElementwiseOp):
    """ONNX Max: the elementwise maximum of two or more broadcast inputs (a single input
    is imported as graph.identity)."""

    name = "graph.max"
    traits = traits_def(HalfKernel(), BroadcastingElementwise())


@irdl_op_definition
class MinOp(VariadicElementwiseOp):
    """ONNX Min: the elementwise minimum of two or more broadcast inputs (a single input
    is imported as graph.identity)."""

    name = "graph.min"
    traits = traits_def(HalfKernel(), BroadcastingElementwise())


# --------------------------------------------------------------------------- linear algebra


@irdl_op_definition
class MatMulOp(GraphOp, EpilogueProps):
    """numpy.matmul semantics (batch broadcasting, 1-D promotion), optional epilogue."""

    name = "graph.matmul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    output = result_def(TensorType)

    def infer_shapes(self):
        return [shapes.matmul_output_shape(shape_of(self.lhs), shape_of(self.rhs))]

    def verify_(self) -> None:
        super().verify_()
        verify_epilogue(self)


@irdl_op_definition
class GemmOp(GraphOp, EpilogueProps):
    """Y = alpha * A' x B' + beta * C, C unidirectionally broadcast to M x N; optional
    activation epilogue (graph_epilogue) applied to Y."""

    name = "graph.gemm"
    a = operand_def(TensorType)
    b = operand_def(TensorType)
    c = opt_operand_def(TensorType)
    output = result_def(TensorType)
    alpha = prop_def(FloatAttr)
    beta = prop_def(FloatAttr)
    trans_a = prop_def(IntegerAttr, prop_name="transA")
    trans_b = prop_def(IntegerAttr, prop_name="transB")

    def infer_shapes(self):
        out = shapes.gemm_output_shape(
            shape_of(self.a), shape_of(self.b), int_of(self.trans_a) != 0,
            int_of(self.trans_b) != 0,
        )
        if self.c is not None and shapes.broadcast_shapes(out, shape_of(self.c)) != out:
            raise ValueError(f"bias {shape_of(self.c)} does not broadcast to {out}")
        return [out]

    def verify_(self) -> None:
        super().verify_()
        verify_epilogue(self)
