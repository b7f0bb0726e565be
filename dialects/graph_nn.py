"""Graph ops for neural-network layers: convolution, pooling, normalization, softmax."""

from __future__ import annotations

import abc
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
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
)

from onnxc.dialects import graph_shapes as shapes
from onnxc.dialects.graph_base import GraphOp, UnaryFields, int_of, ints_of, shape_of
from onnxc.dialects.graph_epilogue import EpilogueProps, verify_epilogue
from onnxc.dialects.graph_traits import NHWCKernel, StaticSizesKernel

# --------------------------------------------------------------------------- neural network


class ConvFields:
    """Mixin adding a convolution's operands, result and properties to a graph op definition
    (what `conv_result_shape` reads): `input`, `weight`, optional `bias`, `output`, and
    `strides`, explicit `pads` ([begin..., end...]), `dilations` and `group`."""

    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    output = result_def(TensorType)
    strides = prop_def(DenseArrayBase)
    pads = prop_def(DenseArrayBase)
    dilations = prop_def(DenseArrayBase)
    group = prop_def(IntegerAttr)


def conv_result_shape(op) -> tuple[int, ...]:
    """Output shape of a conv-like op (input, weight, optional bias, window properties)."""
    out = shapes.conv_output_shape(
        shape_of(op.input), shape_of(op.weight), ints_of(op.strides),
        ints_of(op.pads), ints_of(op.dilations), int_of(op.group),
    )
    if op.bias is not None and shape_of(op.bias) != (out[1],):
        raise ValueError(f"bias shape {shape_of(op.bias)} is not ({out[1]},)")
    return out


@irdl_op_definition
class ConvOp(GraphOp, ConvFields, EpilogueProps):
    """N-D convolution with explicit pads ([begin..., end...]); auto_pad is resolved on import.
    An optional activation epilogue (graph_epilogue) is applied to every output element."""

    name = "graph.conv"
    traits = traits_def(NHWCKernel(symbolic=True), StaticSizesKernel())

    def infer_shapes(self):
        return [conv_result_shape(self)]

    def verify_(self) -> None:
        super().verify_()
        verify_epilogue(self)


class PoolOp(GraphOp, UnaryFields, abc.ABC):
    """A sliding-window pool over the spatial dimensions: `kernel_shape`, `strides`, explicit
    `pads` ([begin..., end...]) and `ceil_mode` (0/1: round the output size up)."""

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
    """ONNX MaxPool: the maximum over each (dilated) window; auto_pad is resolved into `pads`
    on import. Only the Y output: the importer rejects a model that uses Indices."""

    name = "graph.max_pool"
    traits = traits_def(NHWCKernel(symbolic=True), StaticSizesKernel())
    dilations = prop_def(DenseArrayBase)

    def window_dilations(self) -> tuple[int, ...]:
        return ints_of(self.dilations)


@irdl_op_definition
class AveragePoolOp(PoolOp):
    """ONNX AveragePool: the mean over each window, padding counted in the divisor when
    `count_include_pad`; auto_pad is resolved into `pads` on import, absent `dilations`
    are all 1."""

    name = "graph.average_pool"
    traits = traits_def(NHWCKernel(symbolic=True), StaticSizesKernel())
    count_include_pad = prop_def(IntegerAttr)
    dilations = opt_prop_def(DenseArrayBase)  # absent: all 1 (AveragePool-19 added them)

    def window_dilations(self) -> tuple[int, ...]:
        if self.dilations is None:
            return super().window_dilations()
        return ints_of(self.dilations)


class GlobalPoolOp(GraphOp, UnaryFields, abc.ABC):
    """A pool over all spatial dimensions: N x C x D1 x ... becomes N x C x 1 x ...."""

    def infer_shapes(self):
        x = shape_of(self.input)
        return [x[:2] + (1,) * (len(x) - 2)]


@irdl_op_definition
class GlobalAveragePoolOp(GlobalPoolOp):
    """ONNX GlobalAveragePool: the mean over all spatial dimensions (N x C x 1 x ...)."""

    name = "graph.global_average_pool"
    traits = traits_def(NHWCKernel(symbolic=True), StaticSizesKernel())


@irdl_op_definition
class GlobalMaxPoolOp(GlobalPoolOp):
    """ONNX GlobalMaxPool: the maximum over all spatial dimensions (N x C x 1 x ...)."""

    name = "graph.global_max_pool"
    traits = traits_def(NHWCKernel(symbolic=True), StaticSizesKernel())


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
class LRNOp(GraphOp, UnaryFields):
    """Local response normalization across channels."""

    name = "graph.lrn"
    traits = traits_def(StaticSizesKernel())
    size = prop_def(IntegerAttr)
    alpha = prop_def(FloatAttr)
    beta = prop_def(FloatAttr)
    bias = prop_def(FloatAttr)

    def infer_shapes(self):
        return [shape_of(self.input)]


@irdl_op_definition
class SoftmaxOp(GraphOp, UnaryFields):
    """Softmax along one axis (opset-13 semantics; older opsets are rewritten on import)."""

    name = "graph.softmax"
    axis = prop_def(IntegerAttr)

    def infer_shapes(self):
        x = shape_of(self.input)
        shapes.normalize_axis(int_of(self.axis), len(x))
        return [x]
