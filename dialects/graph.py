"""The `graph` dialect: ONNX operators on statically shaped tensors.

This is the level the importer produces and the graph optimizations rewrite. It differs from
ONNX in three ways that make rewriting simple:
- every tensor type is static (`tensor<1x3x224x224xf32>`);
- inputs that ONNX allows to be computed but that are constant in practice (axes, shapes,
  pads, slice bounds, clip bounds) are properties, so patterns can read them directly;
- attributes are normalised across opsets (explicit pads instead of auto_pad, opset-13
  Softmax semantics, the target shape of Reshape/Cast carried by the result type).

Every op prints as `%r = graph.<op>(%a, %b) {props} : (types) -> types` and verifies its result
shapes with the rules in `graph_shapes`.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    IntegerType,
    TensorType,
    i64,
)
from xdsl.ir import Dialect, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import ConstantLike, Pure
from xdsl.utils.exceptions import VerifyException

from onnxc.dialects import graph_shapes as shapes

_FORMAT = "`(` operands `)` attr-dict `:` functional-type(operands, results)"


def shape_of(value_or_type) -> tuple[int, ...]:
    """Static shape of a tensor-typed SSA value or of a tensor type."""
    t = value_or_type if isinstance(value_or_type, TensorType) else value_or_type.type
    assert isinstance(t, TensorType)
    return tuple(t.get_shape())


def ints_of(attr: DenseArrayBase | None) -> tuple[int, ...]:
    return () if attr is None else tuple(int(v) for v in attr.get_values())


def int_of(attr: IntegerAttr | None, default: int = 0) -> int:
    return default if attr is None else attr.value.data


def float_of(attr: FloatAttr | None, default: float = 0.0) -> float:
    return default if attr is None else attr.value.data


class GraphOp(IRDLOperation, abc.ABC):
    """Shared syntax and shape verification of all graph ops."""

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = _FORMAT
    traits = traits_def(Pure())

    def infer_shapes(self) -> Sequence[tuple[int, ...]] | None:
        """Result shapes implied by operands and properties; None when the type decides."""
        return None

    def same_element_type_operands(self) -> Sequence[SSAValue]:
        """Operands whose element type every result shares (all of them unless overridden)."""
        return self.operands

    def verify_element_types(self) -> None:
        operand_types = [v.type.get_element_type() for v in self.same_element_type_operands()]
        if any(t != operand_types[0] for t in operand_types[1:]):
            raise VerifyException(f"{self.name}: operand element types differ")
        if not operand_types:
            return
        for r in self.results:
            if r.type.get_element_type() != operand_types[0]:
                raise VerifyException(
                    f"{self.name}: result element type {r.type.get_element_type()} differs "
                    f"from operand element type {operand_types[0]}"
                )

    def verify_(self) -> None:
        for r in self.results:
            if not isinstance(r.type, TensorType):
                raise VerifyException(f"{self.name}: results must be tensors")
        self.verify_element_types()
        try:
            expected = self.infer_shapes()
        except (ValueError, IndexError) as err:
            raise VerifyException(f"{self.name}: {err}") from err
        if expected is None:
            return
        actual = [shape_of(r) for r in self.results]
        if [tuple(s) for s in expected] != actual:
            raise VerifyException(
                f"{self.name}: result shapes {actual} differ from inferred {list(expected)}"
            )


# --------------------------------------------------------------------------- constants


@irdl_op_definition
class ConstantOp(GraphOp):
    """A tensor known at compile time; its data is dense bytes, never a Python list."""

    name = "graph.constant"
    value = prop_def(DenseIntOrFPElementsAttr)
    output = result_def(TensorType)
    traits = traits_def(Pure(), ConstantLike())
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


class UnaryElementwiseOp(GraphOp, abc.ABC):
    """y = f(x) elementwise; same shape and element type."""

    input = operand_def(TensorType)
    output = result_def(TensorType)

    def infer_shapes(self):
        return [shape_of(self.input)]


@irdl_op_definition
class ReluOp(UnaryElementwiseOp):
    name = "graph.relu"


@irdl_op_definition
class SigmoidOp(UnaryElementwiseOp):
    name = "graph.sigmoid"


@irdl_op_definition
class TanhOp(UnaryElementwiseOp):
    name = "graph.tanh"


@irdl_op_definition
class ExpOp(UnaryElementwiseOp):
    name = "graph.exp"


@irdl_op_definition
class LogOp(UnaryElementwiseOp):
    name = "graph.log"


@irdl_op_definition
class SqrtOp(UnaryElementwiseOp):
    name = "graph.sqrt"


@irdl_op_definition
class NegOp(UnaryElementwiseOp):
    name = "graph.neg"


@irdl_op_definition
class AbsOp(UnaryElementwiseOp):
    name = "graph.abs"


@irdl_op_definition
class ReciprocalOp(UnaryElementwiseOp):
    name = "graph.reciprocal"


@irdl_op_definition
class IdentityOp(UnaryElementwiseOp):
    name = "graph.identity"


@irdl_op_definition
class DropoutOp(UnaryElementwiseOp):
    """Inference-mode Dropout: the identity. The ratio is kept for round-tripping."""

    name = "graph.dropout"
    ratio = opt_prop_def(FloatAttr)


@irdl_op_definition
class LeakyReluOp(UnaryElementwiseOp):
    name = "graph.leaky_relu"
    alpha = prop_def(FloatAttr)


@irdl_op_definition
class ClipOp(UnaryElementwiseOp):
    """Clamp to [min, max]; an absent bound is unbounded (min/max were inputs since opset 11)."""

    name = "graph.clip"
    min = opt_prop_def(FloatAttr)
    max = opt_prop_def(FloatAttr)


@irdl_op_definition
class CastOp(GraphOp):
    """Element type conversion; the destination type is the result's element type."""

    name = "graph.cast"
    input = operand_def(TensorType)
    output = result_def(TensorType)

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
    name = "graph.add"


@irdl_op_definition
class SubOp(BinaryElementwiseOp):
    name = "graph.sub"


@irdl_op_definition
class MulOp(BinaryElementwiseOp):
    name = "graph.mul"


@irdl_op_definition
class DivOp(BinaryElementwiseOp):
    name = "graph.div"


@irdl_op_definition
class PowOp(BinaryElementwiseOp):
    name = "graph.pow"


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
    name = "graph.sum"


@irdl_op_definition
class MaxOp(VariadicElementwiseOp):
    name = "graph.max"


@irdl_op_definition
class MinOp(VariadicElementwiseOp):
    name = "graph.min"


# --------------------------------------------------------------------------- linear algebra


@irdl_op_definition
class MatMulOp(GraphOp):
    """numpy.matmul semantics (batch broadcasting, 1-D promotion)."""

    name = "graph.matmul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    output = result_def(TensorType)

    def infer_shapes(self):
        return [shapes.matmul_output_shape(shape_of(self.lhs), shape_of(self.rhs))]


@irdl_op_definition
class GemmOp(GraphOp):
    """Y = alpha * A' x B' + beta * C, C unidirectionally broadcast to M x N."""

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


# --------------------------------------------------------------------------- neural network


@irdl_op_definition
class ConvOp(GraphOp):
    """N-D convolution with explicit pads ([begin..., end...]); auto_pad is resolved on import."""

    name = "graph.conv"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    output = result_def(TensorType)
    strides = prop_def(DenseArrayBase)
    pads = prop_def(DenseArrayBase)
    dilations = prop_def(DenseArrayBase)
    group = prop_def(IntegerAttr)

    def infer_shapes(self):
        out = shapes.conv_output_shape(
            shape_of(self.input), shape_of(self.weight), ints_of(self.strides),
            ints_of(self.pads), ints_of(self.dilations), int_of(self.group),
        )
        if self.bias is not None and shape_of(self.bias) != (out[1],):
            raise ValueError(f"bias shape {shape_of(self.bias)} is not ({out[1]},)")
        return [out]


class PoolOp(GraphOp, abc.ABC):
    input = operand_def(TensorType)
    output = result_def(TensorType)
    kernel_shape = prop_def(DenseArrayBase)
    strides = prop_def(DenseArrayBase)
    pads = prop_def(DenseArrayBase)
    ceil_mode = prop_def(IntegerAttr)

    def window_dilations(self) -> tuple[int, ...]:
        return (1,) * len(ints_of(self.kernel_shape))

    def infer_shapes(self):
        return [shapes.pool_output_shape(
            shape_of(self.input), ints_of(self.kernel_shape), ints_of(self.strides),
            ints_of(self.pads), self.window_dilations(), int_of(self.ceil_mode) != 0,
        )]


@irdl_op_definition
class MaxPoolOp(PoolOp):
    name = "graph.max_pool"
    dilations = prop_def(DenseArrayBase)

    def window_dilations(self) -> tuple[int, ...]:
        return ints_of(self.dilations)


@irdl_op_definition
class AveragePoolOp(PoolOp):
    name = "graph.average_pool"
    count_include_pad = prop_def(IntegerAttr)


class GlobalPoolOp(GraphOp, abc.ABC):
    input = operand_def(TensorType)
    output = result_def(TensorType)

    def infer_shapes(self):
        x = shape_of(self.input)
        return [x[:2] + (1,) * (len(x) - 2)]


@irdl_op_definition
class GlobalAveragePoolOp(GlobalPoolOp):
    name = "graph.global_average_pool"


@irdl_op_definition
class GlobalMaxPoolOp(GlobalPoolOp):
    name = "graph.global_max_pool"


@irdl_op_definition
class BatchNormalizationOp(GraphOp):
    """Inference BatchNormalization: (x - mean) / sqrt(var + eps) * scale + bias per channel."""

    name = "graph.batch_normalization"
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = operand_def(TensorType)
    mean = operand_def(TensorType)
    var = operand_def(TensorType)
    output = result_def(TensorType)
    epsilon = prop_def(FloatAttr)

    def same_element_type_operands(self) -> Sequence[SSAValue]:
        return (self.input,)  # ONNX lets the per-channel operands use another float type

    def infer_shapes(self):
        x = shape_of(self.input)
        for v in (self.scale, self.bias, self.mean, self.var):
            if shape_of(v) != (x[1],):
                raise ValueError(f"per-channel operand {shape_of(v)} is not ({x[1]},)")
        return [x]


@irdl_op_definition
class LRNOp(GraphOp):
    """Local response normalization across channels."""

    name = "graph.lrn"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    size = prop_def(IntegerAttr)
    alpha = prop_def(FloatAttr)
    beta = prop_def(FloatAttr)
    bias = prop_def(FloatAttr)

    def infer_shapes(self):
        return [shape_of(self.input)]


@irdl_op_definition
class SoftmaxOp(GraphOp):
    """Softmax along one axis (opset-13 semantics; older opsets are rewritten on import)."""

    name = "graph.softmax"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(IntegerAttr)

    def infer_shapes(self):
        x = shape_of(self.input)
        shapes.normalize_axis(int_of(self.axis), len(x))
        return [x]


# --------------------------------------------------------------------------- data movement


class ReshapeLikeOp(GraphOp, abc.ABC):
    """Same data, new shape: the result type carries the shape."""

    input = operand_def(TensorType)
    output = result_def(TensorType)

    def verify_(self) -> None:
        super().verify_()
        if self.input.type.element_count() != self.output.type.element_count():
            raise VerifyException(f"{self.name}: element counts of input and result differ")


@irdl_op_definition
class ReshapeOp(ReshapeLikeOp):
    name = "graph.reshape"


@irdl_op_definition
class FlattenOp(ReshapeLikeOp):
    name = "graph.flatten"
    axis = prop_def(IntegerAttr)

    def infer_shapes(self):
        return [shapes.flatten_shape(shape_of(self.input), int_of(self.axis))]


@irdl_op_definition
class SqueezeOp(ReshapeLikeOp):
    name = "graph.squeeze"
    axes = prop_def(DenseArrayBase)

    def infer_shapes(self):
        return [shapes.squeeze_shape(shape_of(self.input), ints_of(self.axes))]


@irdl_op_definition
class UnsqueezeOp(ReshapeLikeOp):
    name = "graph.unsqueeze"
    axes = prop_def(DenseArrayBase)

    def infer_shapes(self):
        return [shapes.unsqueeze_shape(shape_of(self.input), ints_of(self.axes))]


@irdl_op_definition
class TransposeOp(GraphOp):
    name = "graph.transpose"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    perm = prop_def(DenseArrayBase)

    def infer_shapes(self):
        return [shapes.transpose_shape(shape_of(self.input), ints_of(self.perm))]


@irdl_op_definition
class ConcatOp(GraphOp):
    name = "graph.concat"
    inputs = var_operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(IntegerAttr)

    def infer_shapes(self):
        if not self.inputs:
            raise ValueError("needs at least one input")
        return [shapes.concat_shape([shape_of(v) for v in self.inputs], int_of(self.axis))]


@irdl_op_definition
class SplitOp(GraphOp):
    """Split along `axis`; the result types give the part sizes."""

    name = "graph.split"
    input = operand_def(TensorType)
    outputs = var_result_def(TensorType)
    axis = prop_def(IntegerAttr)

    def infer_shapes(self):
        x = shape_of(self.input)
        axis = shapes.normalize_axis(int_of(self.axis), len(x))
        parts = [shape_of(r) for r in self.outputs]
        if not parts:
            raise ValueError("needs at least one result")
        if sum(p[axis] for p in parts) != x[axis]:
            raise ValueError(f"part sizes do not add up to dimension {x[axis]}")
        return [x[:axis] + (p[axis],) + x[axis + 1 :] for p in parts]


@irdl_op_definition
class SliceOp(GraphOp):
    """ONNX Slice with constant starts/ends/axes/steps (unclamped, as in the model)."""

    name = "graph.slice"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    starts = prop_def(DenseArrayBase)
    ends = prop_def(DenseArrayBase)
    axes = prop_def(DenseArrayBase)
    steps = prop_def(DenseArrayBase)

    def infer_shapes(self):
        return [shapes.slice_shape(
            shape_of(self.input), ints_of(self.starts), ints_of(self.ends),
            ints_of(self.axes), ints_of(self.steps),
        )]


@irdl_op_definition
class GatherOp(GraphOp):
    name = "graph.gather"
    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(IntegerAttr)

    def same_element_type_operands(self) -> Sequence[SSAValue]:
        return (self.data,)

    def verify_element_types(self) -> None:
        super().verify_element_types()
        if not isinstance(self.indices.type.get_element_type(), IntegerType):
            raise VerifyException(f"{self.name}: indices must have an integer element type")

    def infer_shapes(self):
        return [shapes.gather_shape(shape_of(self.data), shape_of(self.indices),
                                    int_of(self.axis))]


@irdl_op_definition
class PadOp(GraphOp):
    """Pad with `pads` ([begin..., end...]); mode is constant, reflect or edge."""

    name = "graph.pad"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    pads = prop_def(DenseArrayBase)
    mode = prop_def(StringAttr)
    value = prop_def(FloatAttr)

    def infer_shapes(self):
        if self.mode.data not in ("constant", "reflect", "edge"):
            raise ValueError(f"unknown pad mode '{self.mode.data}'")
        return [shapes.pad_shape(shape_of(self.input), ints_of(self.pads))]


@irdl_op_definition
class ShapeOp(GraphOp):
    """The input's shape (dimensions start..end) as a 1-D i64 tensor."""

    name = "graph.shape"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    start = prop_def(IntegerAttr)
    end = prop_def(IntegerAttr)

    def verify_element_types(self) -> None:
        if self.output.type.get_element_type() != i64:
            raise VerifyException(f"{self.name}: result must be a tensor of i64")

    def infer_shapes(self):
        rank = len(shape_of(self.input))
        start, end = (max(0, min(rank, v + rank if v < 0 else v))
                      for v in (int_of(self.start), int_of(self.end)))
        return [(max(0, end - start),)]


Graph = Dialect(
    "graph",
    [
        ConstantOp, ConstantOfShapeOp,
        ReluOp, SigmoidOp, TanhOp, ExpOp, LogOp, SqrtOp, NegOp, AbsOp, ReciprocalOp,
        IdentityOp, DropoutOp, LeakyReluOp, ClipOp, CastOp,
        AddOp, SubOp, MulOp, DivOp, PowOp, SumOp, MaxOp, MinOp,
        MatMulOp, GemmOp,
        ConvOp, MaxPoolOp, AveragePoolOp, GlobalAveragePoolOp, GlobalMaxPoolOp,
        BatchNormalizationOp, LRNOp, SoftmaxOp,
        ReshapeOp, FlattenOp, SqueezeOp, UnsqueezeOp, TransposeOp, ConcatOp, SplitOp,
        SliceOp, GatherOp, PadOp, ShapeOp,
    ],
    [],
)
