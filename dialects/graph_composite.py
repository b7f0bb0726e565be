"""Graph ops that only optimization passes create: conv + residual add, channel shuffle.
(`graph.fused_elementwise`, a region op, has its own module: graph_fused_elementwise.)

`graph.conv_add(%x, %w, %b?, %z)` is act(conv(x, w, b) + z) for a z of the result's shape:
a residual Add folded into the conv (fuse-conv-add), whose kernel starts each output plane
from z instead of zeros, so the Add costs no pass over memory; like graph.conv it takes an
activation epilogue (graph_epilogue), applied after the addition (ResNet's Relu(conv + x)).

`graph.channel_shuffle {group}` is ShuffleNet's channel shuffle: for C = group * k,
out[:, j * group + i] = in[:, i * k + j], what Reshape(N, g, k, ...) + Transpose(0, 2, 1, ...)
+ Reshape(N, C, ...) compute.
"""

from __future__ import annotations

from xdsl.dialects.builtin import IntegerAttr, TensorType
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    prop_def,
    traits_def,
)

from onnxc.dialects.graph_base import GraphOp, UnaryFields, int_of, shape_of
from onnxc.dialects.graph_epilogue import EpilogueProps, verify_epilogue
from onnxc.dialects.graph_nn import ConvFields, conv_result_shape
from onnxc.dialects.graph_traits import NHWCKernel, StaticSizesKernel


@irdl_op_definition
class ConvAddOp(GraphOp, ConvFields, EpilogueProps):
    """act(conv(input, weight, bias) + addend): graph.conv's properties plus a residual."""

    name = "graph.conv_add"
    traits = traits_def(NHWCKernel(symbolic=True), StaticSizesKernel())
    # redeclared so that addend follows them (IRDL puts inherited operands after its own)
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    addend = operand_def(TensorType)

    def infer_shapes(self):
        out = conv_result_shape(self)
        if shape_of(self.addend) != out:
            raise ValueError(f"addend shape {shape_of(self.addend)} is not the result's {out}")
        return [out]

    def verify_(self) -> None:
        super().verify_()
        verify_epilogue(self)


@irdl_op_definition
class ChannelShuffleOp(GraphOp, UnaryFields):
    """ShuffleNet channel shuffle over axis 1 with `group` groups."""

    name = "graph.channel_shuffle"
    traits = traits_def(NHWCKernel())
    group = prop_def(IntegerAttr)

    def infer_shapes(self):
        x = shape_of(self.input)
        g = int_of(self.group)
        if len(x) < 2 or g < 1 or x[1] % g != 0:
            raise ValueError(f"{x[1] if len(x) > 1 else '?'} channels do not split into {g} groups")
        return [x]


def shuffle_source_channel(c: int, channels: int, group: int) -> int:
    """The input channel that output channel `c` of a channel shuffle reads."""
    k = channels // group
    return (c % group) * k + c // group


