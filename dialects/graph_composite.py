"""Graph ops that only optimization passes create: conv + residual add, channel shuffle.
(`graph.fused_elementwise`, a region op, has its own module: graph_fused_elementwise.)

`graph.conv_add(%x, %w, %b?, %z)` is act(conv(x, w, b) + z) for a z of the result's shape:
a residual Add folded into the conv (fuse-conv-add), whose kernel starts each output plane
from z instead of zeros, so the Add costs no pass over memory; like graph.conv it takes an
activation epilogue (graph_epilogue), applied after the addition (ResNet's Relu(conv + x)).

`graph.channel_shuffle {group}` is ShuffleNet's channel shuffle: for C = group * k,
out[:, j * group + i] = in[:, i * k + j], what Reshape(N, g, k, ...) + Transpose(0, 2, 1, ...)
+ Reshape(N, C, ...) compute.

`graph.pointwise_depthwise(%x, %w1, %b1, %w2, %b2)` is a MobileNet block's first two convs
as one kernel: act2(depthwise(act1(conv1x1(x, w1, b1)), w2, b2)), the 1x1 conv's epilogue
in the `pointwise_activation*` properties, the depthwise conv's window and epilogue in the
usual ones. fuse-pointwise-depthwise makes it where the expanded tensor between them is
larger than the cache; its kernel computes that tensor a few rows at a time, each row
right before the depthwise rows that read it (depth-first), so it never leaves the cache.
`stages()` gives the two convs as detached graph.conv ops (what the kernel and the
evaluator build on).
"""

from __future__ import annotations

from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
)
from xdsl.ir import Block, SSAValue
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
from onnxc.dialects.graph_epilogue import PARAMETERS, EpilogueProps, verify_epilogue
from onnxc.dialects.graph_math import ConstantOp
from onnxc.dialects.graph_nn import ConvFields, ConvOp, conv_result_shape
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




STRIP_ROWS = 28
"""Output rows per strip of graph.pointwise_depthwise's kernel, about: a stride-1 3x3 strip
recomputes 2 expanded rows, 1/14 of its 1x1 work at 28 rows. An image has MIN_STRIPS
strips at least, for two threads."""
MIN_STRIPS = 2


def depth_first_strips(output_rows: int) -> tuple[int, int]:
    """(strips per image, output rows per strip) of the depth-first kernel."""
    count = min(output_rows, max(MIN_STRIPS, output_rows // STRIP_ROWS))
    rows = -(-output_rows // count)
    return -(-output_rows // rows), rows


def recomputed_share(output_rows: int, kernel_rows: int, stride: int) -> float:
    """Expanded rows the depth-first kernel computes twice (each strip's first kh - s),
    as a share of those the unfused 1x1 conv computes."""
    count, rows = depth_first_strips(output_rows)
    return (count - 1) * max(0, kernel_rows - stride) / (output_rows * stride)


POINTWISE_EPILOGUE = {"pointwise_activation": "activation",
                      **{f"pointwise_{p}": p for p in PARAMETERS}}
"""graph.pointwise_depthwise's properties of the 1x1 conv's epilogue -> graph.conv's names."""


@irdl_op_definition
class PointwiseDepthwiseOp(GraphOp, EpilogueProps):
    """A 1x1 conv (group 1, stride 1, no pads) and the depthwise 2-D conv of its result, as
    one op (see the module doc); `strides`, `pads`, `dilations` are the depthwise conv's.
    No layout or size traits: it is made after assign-layout, of NHWC convs of static
    sizes, and its kernel takes only those."""

    name = "graph.pointwise_depthwise"
    input = operand_def(TensorType)
    pointwise_weight = operand_def(TensorType)
    pointwise_bias = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = operand_def(TensorType)
    output = result_def(TensorType)
    strides = prop_def(DenseArrayBase)
    pads = prop_def(DenseArrayBase)
    dilations = prop_def(DenseArrayBase)
    pointwise_activation = opt_prop_def(StringAttr)
    pointwise_activation_alpha = opt_prop_def(FloatAttr)
    pointwise_activation_beta = opt_prop_def(FloatAttr)

    def expanded_shape(self) -> tuple[int, ...]:
        """The 1x1 conv's result: [N, C1, H, W]."""
        n, c, h, w = shape_of(self.input)
        c1, cin, kh, kw = shape_of(self.pointwise_weight)
        if (cin, kh, kw) != (c, 1, 1):
            raise ValueError(f"pointwise weight {(c1, cin, kh, kw)} is not [C1, {c}, 1, 1]")
        if shape_of(self.pointwise_bias) != (c1,):
            raise ValueError(f"pointwise bias shape {shape_of(self.pointwise_bias)} is not "
                             f"({c1},)")
        return n, c1, h, w

    def infer_shapes(self):
        if len(shape_of(self.input)) != 4:
            raise ValueError(f"input rank {len(shape_of(self.input))} is not 4")
        expanded = self.expanded_shape()
        c1 = expanded[1]
        if shape_of(self.weight)[:2] != (c1, 1) or shape_of(self.bias) != (c1,):
            raise ValueError(f"depthwise weight {shape_of(self.weight)} and bias "
                             f"{shape_of(self.bias)} are not [{c1}, 1, kh, kw] and ({c1},)")
        return [shapes.conv_output_shape(expanded, shape_of(self.weight), ints_of(self.strides),
                                         ints_of(self.pads), ints_of(self.dilations), c1)]

    def verify_(self) -> None:
        super().verify_()
        verify_epilogue(self)
        verify_epilogue(self, self.pointwise_epilogue(), "pointwise ")

    def pointwise_epilogue(self) -> dict:
        """The 1x1 conv's epilogue properties, under graph.conv's names."""
        return {name: self.properties[own] for own, name in POINTWISE_EPILOGUE.items()
                if own in self.properties}

    def stages(self) -> tuple[ConvOp, ConvOp]:
        """The 1x1 conv and the depthwise conv as detached graph.conv ops on plain (layout
        free) types: constant operands become detached copies of their graph.constant (the
        same value attribute), others placeholders. Nothing in the module gains a use, so
        the kernel builders may make them whenever they need them."""
        placeholders = Block(arg_types=[TensorType(v.type.element_type, shape_of(v))
                                        for v in self.operands])

        def value(i: int) -> SSAValue:
            owner = self.operands[i].owner
            if isinstance(owner, ConstantOp):
                return ConstantOp(owner.value).output
            return placeholders.args[i]

        element = self.input.type.element_type
        window = {"strides": DenseArrayBase.from_list(self.strides.elt_type, [1, 1]),
                  "pads": DenseArrayBase.from_list(self.pads.elt_type, [0, 0, 0, 0]),
                  "dilations": DenseArrayBase.from_list(self.dilations.elt_type, [1, 1]),
                  "group": IntegerAttr(1, 64)}
        pointwise = ConvOp.create(
            operands=[value(0), value(1), value(2)],
            result_types=[TensorType(element, self.expanded_shape())],
            properties={**window, **self.pointwise_epilogue()})
        own = {k: v for k, v in self.properties.items() if k not in POINTWISE_EPILOGUE}
        depthwise = ConvOp.create(
            operands=[pointwise.output, value(3), value(4)],
            result_types=[TensorType(element, shape_of(self.output))],
            properties={**own, "group": IntegerAttr(self.expanded_shape()[1], 64)})
        return pointwise, depthwise
