"""Graph ops for comparisons, boolean logic, bitwise integer ops, Where, Mod and NaN/Inf tests.

Comparisons and the IsNaN/IsInf tests produce `i1` tensors from operands of another type, so
they override the element-type rule of `GraphOp` (results share the operands' type); Where's
condition is `i1` while its two branches and its result share one type.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence

from xdsl.dialects.builtin import IntegerAttr, IntegerType, StringAttr, TensorType
from xdsl.ir import SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.utils.exceptions import VerifyException

from onnxc.dialects import graph_shapes as shapes
from onnxc.dialects.graph_base import GraphOp, UnaryFields, shape_of
from onnxc.dialects.graph_math import BinaryElementwiseOp, UnaryElementwiseOp
from onnxc.dialects.graph_traits import HalfKernel


def _require_bool(op: GraphOp, value: SSAValue, what: str) -> None:
    el = value.type.get_element_type()
    if not (isinstance(el, IntegerType) and el.width.data == 1):
        raise VerifyException(f"{op.name}: {what} must be i1, got {el}")


# --------------------------------------------------------------------------- comparisons


class CompareOp(GraphOp, abc.ABC):
    """z = x <cmp> y with broadcasting; operands share a type, the result is i1."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    output = result_def(TensorType)

    def verify_element_types(self) -> None:
        if self.lhs.type.get_element_type() != self.rhs.type.get_element_type():
            raise VerifyException(f"{self.name}: operand element types differ")
        _require_bool(self, self.output, "the result")

    def infer_shapes(self):
        return [shapes.broadcast_shapes(shape_of(self.lhs), shape_of(self.rhs))]


@irdl_op_definition
class EqualOp(CompareOp):
    """ONNX Equal: lhs == rhs."""

    name = "graph.equal"
    traits = traits_def(HalfKernel())


@irdl_op_definition
class LessOp(CompareOp):
    """ONNX Less: lhs < rhs."""

    name = "graph.less"
    traits = traits_def(HalfKernel())


@irdl_op_definition
class LessOrEqualOp(CompareOp):
    """ONNX LessOrEqual: lhs <= rhs."""

    name = "graph.less_or_equal"
    traits = traits_def(HalfKernel())


@irdl_op_definition
class GreaterOp(CompareOp):
    """ONNX Greater: lhs > rhs."""

    name = "graph.greater"
    traits = traits_def(HalfKernel())


@irdl_op_definition
class GreaterOrEqualOp(CompareOp):
    """ONNX GreaterOrEqual: lhs >= rhs."""

    name = "graph.greater_or_equal"
    traits = traits_def(HalfKernel())


# --------------------------------------------------------------------------- logic, bitwise


@irdl_op_definition
class AndOp(BinaryElementwiseOp):
    """Logical and of i1 tensors (bitwise on integers is BitwiseAnd)."""

    name = "graph.and"


@irdl_op_definition
class OrOp(BinaryElementwiseOp):
    """ONNX Or: logical or of i1 tensors, with broadcasting."""

    name = "graph.or"


@irdl_op_definition
class XorOp(BinaryElementwiseOp):
    """ONNX Xor: logical exclusive or of i1 tensors, with broadcasting."""

    name = "graph.xor"


@irdl_op_definition
class NotOp(UnaryElementwiseOp):
    """ONNX Not: logical negation of an i1 tensor."""

    name = "graph.not"


@irdl_op_definition
class BitwiseAndOp(BinaryElementwiseOp):
    """ONNX BitwiseAnd: bitwise and of integer tensors, with broadcasting."""

    name = "graph.bitwise_and"


@irdl_op_definition
class BitwiseOrOp(BinaryElementwiseOp):
    """ONNX BitwiseOr: bitwise or of integer tensors, with broadcasting."""

    name = "graph.bitwise_or"


@irdl_op_definition
class BitwiseXorOp(BinaryElementwiseOp):
    """ONNX BitwiseXor: bitwise exclusive or of integer tensors, with broadcasting."""

    name = "graph.bitwise_xor"


@irdl_op_definition
class BitwiseNotOp(UnaryElementwiseOp):
    """ONNX BitwiseNot: the bitwise complement of an integer tensor."""

    name = "graph.bitwise_not"


@irdl_op_definition
class BitShiftOp(BinaryElementwiseOp):
    """Shift integers; `direction` is "LEFT" or "RIGHT" (arithmetic on signed integers).
    Counts outside [0, width) shift every bit out."""

    name = "graph.bit_shift"
    direction = prop_def(StringAttr)

    def verify_(self) -> None:
        super().verify_()
        if self.direction.data not in ("LEFT", "RIGHT"):
            raise VerifyException(f"{self.name}: direction must be LEFT or RIGHT")


@irdl_op_definition
class ModOp(BinaryElementwiseOp):
    """Remainder; fmod=1 takes the dividend's sign (C fmod), fmod=0 the divisor's (numpy.mod)."""

    name = "graph.mod"
    traits = traits_def(HalfKernel())
    fmod = prop_def(IntegerAttr)


# --------------------------------------------------------------------------- selection, tests


@irdl_op_definition
class WhereOp(GraphOp):
    """output = condition ? x : y, the three operands broadcast together."""

    name = "graph.where"
    traits = traits_def(HalfKernel())
    condition = operand_def(TensorType)
    x = operand_def(TensorType)
    y = operand_def(TensorType)
    output = result_def(TensorType)

    def same_element_type_operands(self) -> Sequence[SSAValue]:
        return (self.x, self.y)

    def verify_element_types(self) -> None:
        super().verify_element_types()
        _require_bool(self, self.condition, "the condition")

    def infer_shapes(self):
        return [shapes.broadcast_shapes(*(shape_of(v) for v in self.operands))]


class FloatTestOp(GraphOp, UnaryFields, abc.ABC):
    """An i1 tensor classifying each float element."""

    def verify_element_types(self) -> None:
        _require_bool(self, self.output, "the result")

    def infer_shapes(self):
        return [shape_of(self.input)]


@irdl_op_definition
class IsNaNOp(FloatTestOp):
    """ONNX IsNaN: true where the float element is NaN."""

    name = "graph.is_nan"
    traits = traits_def(HalfKernel())


@irdl_op_definition
class IsInfOp(FloatTestOp):
    """True on +inf when detect_positive, on -inf when detect_negative."""

    name = "graph.is_inf"
    traits = traits_def(HalfKernel())
    detect_positive = prop_def(IntegerAttr)
    detect_negative = prop_def(IntegerAttr)


LOGIC_OPS = [
    EqualOp, LessOp, LessOrEqualOp, GreaterOp, GreaterOrEqualOp,
    AndOp, OrOp, XorOp, NotOp, BitwiseAndOp, BitwiseOrOp, BitwiseXorOp, BitwiseNotOp,
    BitShiftOp, ModOp, WhereOp, IsNaNOp, IsInfOp,
]
