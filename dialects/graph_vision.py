"""Graph ops of CNN, detection and segmentation layers that index or sample data: the
transposed convolution and Col2Im, GridSample, RoiAlign and MaxRoiPool, the sampled columns of DeformConv,
MaxPool with indices and MaxUnpool (graph.resize is in graph_resize).

Index operands are integer tensors (negative indices count from the end, as in ONNX).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
)
from xdsl.ir import SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.utils.exceptions import VerifyException

from onnxc.dialects import graph_shapes as shapes
from onnxc.dialects.graph_base import (
    GraphOp,
    SizesAttr,
    UnaryFields,
    dims_of_attr,
    int_of,
    ints_of,
    shape_of,
)
from onnxc.dialects.graph_gather_scatter import IndexedOp
from onnxc.dialects.graph_nn import ConvFields
from onnxc.dialects.graph_resize import ResizeOp
from onnxc.dialects.graph_traits import StaticSizesKernel
from onnxc.dialects.size_facts import require_at_least
from onnxc.dialects.symbolic_dims import Dim


@irdl_op_definition
class ConvTransposeOp(GraphOp, ConvFields):
    """N-D transposed convolution, weight [C, M/group, *kernel]; explicit pads (auto_pad,
    output_shape and output_padding are resolved on import into pads and the result type)."""

    name = "graph.conv_transpose"
    traits = traits_def(StaticSizesKernel())

    def infer_shapes(self):
        x, w, y = shape_of(self.input), shape_of(self.weight), shape_of(self.output)
        g = int_of(self.group)
        spatial = len(x) - 2
        s, p, d = ints_of(self.strides), ints_of(self.pads), ints_of(self.dilations)
        if len(w) != len(x) or w[0] != x[1] or x[1] % g or len(y) != len(x):
            raise ValueError(f"weight {w} does not fit input {x} with {g} groups")
        if (len(s), len(p), len(d)) != (spatial, 2 * spatial, spatial):
            raise ValueError("strides/pads/dilations do not match the spatial rank")
        if y[:2] != (x[0], w[1] * g):
            raise ValueError(f"result {y} does not have {w[1] * g} channels")
        for i in range(spatial):
            full = s[i] * (x[2 + i] - 1) + (w[2 + i] - 1) * d[i] + 1 - p[i] - p[spatial + i]
            if not full <= y[2 + i] < full + max(s[i], d[i]):  # the rest is output_padding
                raise ValueError(f"spatial size {y[2 + i]} does not follow from the window")
        if self.bias is not None and shape_of(self.bias) != (y[1],):
            raise ValueError(f"bias shape {shape_of(self.bias)} is not ({y[1]},)")
        return [y]


def col2im_blocks(image, block, strides, pads, dilations) -> tuple[int, ...]:
    """How many sliding blocks fit along each image dimension."""
    n = len(image)
    return tuple((image[i] + pads[i] + pads[n + i] - dilations[i] * (block[i] - 1) - 1)
                 // strides[i] + 1 for i in range(n))


@irdl_op_definition
class Col2ImOp(GraphOp, UnaryFields):
    """Sum sliding blocks [N, C * prod(block), L] back into images [N, C, *image] (the
    result type gives the image shape)."""

    name = "graph.col2im"
    traits = traits_def(StaticSizesKernel())
    block_shape = prop_def(DenseArrayBase)
    strides = prop_def(DenseArrayBase)
    pads = prop_def(DenseArrayBase)
    dilations = prop_def(DenseArrayBase)

    def infer_shapes(self):
        x, y = shape_of(self.input), shape_of(self.output)
        block = ints_of(self.block_shape)
        n = len(block)
        if len(x) != 3 or len(y) != n + 2 or x[1] != y[1] * math.prod(block) or x[0] != y[0]:
            raise ValueError(f"input {x} does not hold blocks {list(block)} of result {y}")
        blocks = col2im_blocks(y[2:], block, ints_of(self.strides), ints_of(self.pads),
                               ints_of(self.dilations))
        if math.prod(blocks) != x[2]:
            raise ValueError(f"{x[2]} blocks do not tile an image {y[2:]} ({list(blocks)})")
        for b in blocks:  # a symbolic count: a guard on import, assumed after it
            require_at_least(b, 1, f"no block fits an image {y[2:]}")
        return [y]


GRID_MODES = ("nearest", "linear", "cubic")
GRID_PADDINGS = ("zeros", "border", "reflection")


@irdl_op_definition
class GridSampleOp(GraphOp):
    """Sample `input` [N, C, *in] at the normalized ([-1, 1]) coordinates of
    `grid` [N, *out, D] (last dimension in x, y, z order, i.e. innermost axis first)."""

    name = "graph.grid_sample"
    traits = traits_def(StaticSizesKernel())
    input = operand_def(TensorType)
    grid = operand_def(TensorType)
    output = result_def(TensorType)
    mode = prop_def(StringAttr)
    padding_mode = prop_def(StringAttr)
    align_corners = prop_def(IntegerAttr)

    def infer_shapes(self):
        x, g = shape_of(self.input), shape_of(self.grid)
        if len(x) < 3 or len(g) != len(x) or g[0] != x[0] or g[-1] != len(x) - 2:
            raise ValueError(f"grid {g} does not sample input {x}")
        if self.mode.data not in GRID_MODES or self.padding_mode.data not in GRID_PADDINGS:
            raise ValueError(f"unknown mode '{self.mode.data}' / '{self.padding_mode.data}'")
        for d in x[2:]:  # every tap reads a pixel: a symbolic axis is guarded not empty
            if not isinstance(d, int):
                require_at_least(d, 1, f"an empty input {x} to sample")
        return [(x[0], x[1], *g[1:-1])]


@irdl_op_definition
class RoiAlignOp(GraphOp):
    """Average (or max) of bilinear samples per bin of each region of interest:
    x [N, C, H, W], rois [R, 4] (x1, y1, x2, y2), batch_indices [R] -> [R, C, oh, ow]."""

    name = "graph.roi_align"
    traits = traits_def(StaticSizesKernel())
    input = operand_def(TensorType)
    rois = operand_def(TensorType)
    batch_indices = operand_def(TensorType)
    output = result_def(TensorType)
    mode = prop_def(StringAttr)
    sampling_ratio = prop_def(IntegerAttr)
    spatial_scale = prop_def(FloatAttr)
    half_pixel = prop_def(IntegerAttr)

    def same_element_type_operands(self) -> Sequence[SSAValue]:
        return (self.input, self.rois)

    def infer_shapes(self):
        x, r, b, y = (shape_of(v) for v in (self.input, self.rois, self.batch_indices,
                                              self.output))
        if len(x) != 4 or r != (b[0] if b else -1, 4) or len(b) != 1 or len(y) != 4:
            raise ValueError(f"rois {r} / batch_indices {b} do not fit input {x}")
        if self.mode.data not in ("avg", "max"):
            raise ValueError(f"unknown mode '{self.mode.data}'")
        return [(r[0], x[1], y[2], y[3])]


@irdl_op_definition
class MaxRoiPoolOp(GraphOp):
    """Max of each bin of each region of interest (Fast R-CNN's RoI pooling, as onnxruntime
    computes ONNX MaxRoiPool): x [N, C, H, W], rois [R, 5] (batch, x1, y1, x2, y2; corners
    rounded after spatial_scale), batch_indices [R] (rois' first column as integers, a
    separate operand so the run-time index check reads it) -> [R, C, ph, pw]. A bin that is
    empty after clipping to the image is 0."""

    name = "graph.max_roi_pool"
    input = operand_def(TensorType)
    rois = operand_def(TensorType)
    batch_indices = operand_def(TensorType)
    output = result_def(TensorType)
    spatial_scale = prop_def(FloatAttr)

    def same_element_type_operands(self) -> Sequence[SSAValue]:
        return (self.input, self.rois)

    def infer_shapes(self):
        x, r, b, y = (shape_of(v) for v in (self.input, self.rois, self.batch_indices,
                                              self.output))
        if len(x) != 4 or len(b) != 1 or r != (b[0], 5) or len(y) != 4:
            raise ValueError(f"rois {r} / batch_indices {b} do not fit input {x}")
        return [(r[0], x[1], y[2], y[3])]


@irdl_op_definition
class MaxPoolIndicesOp(GraphOp):
    """MaxPool that also returns each maximum's flat index into the input (storage_order 0:
    row-major over N, C and the spatial dims; 1: the spatial dims column-major)."""

    name = "graph.max_pool_indices"
    traits = traits_def(StaticSizesKernel())
    input = operand_def(TensorType)
    output = result_def(TensorType)
    indices = result_def(TensorType)
    kernel_shape = prop_def(DenseArrayBase)
    strides = prop_def(DenseArrayBase)
    pads = prop_def(DenseArrayBase)
    dilations = prop_def(DenseArrayBase)
    ceil_mode = prop_def(IntegerAttr)
    storage_order = prop_def(IntegerAttr)

    def verify_element_types(self) -> None:
        if self.output.type.get_element_type() != self.input.type.get_element_type():
            raise VerifyException(f"{self.name}: result element type differs from the input's")
        if self.indices.type.get_element_type() != IntegerType(64):
            raise VerifyException(f"{self.name}: indices must be i64")

    def infer_shapes(self):
        out = shapes.pool_output_shape(
            shape_of(self.input), ints_of(self.kernel_shape), ints_of(self.strides),
            ints_of(self.pads), ints_of(self.dilations), int_of(self.ceil_mode) != 0)
        return [out, out]


@irdl_op_definition
class MaxUnpoolOp(IndexedOp):
    """input[i] written at flat position indices[i] of a zero tensor of shape `unpooled`
    (what the pooling window implies), which sits at the start of a zero result that may be
    larger (MaxUnpool's output_shape), as onnx.reference places it."""

    name = "graph.max_unpool"
    traits = traits_def(StaticSizesKernel())
    input = operand_def(TensorType)
    indices = operand_def(TensorType)
    output = result_def(TensorType)
    unpooled = prop_def(DenseArrayBase | SizesAttr)
    """the shape the window implies (`#graph.sizes` for symbolic input sizes)"""

    def unpooled_shape(self) -> tuple[Dim, ...]:
        return dims_of_attr(self.unpooled)

    def infer_shapes(self):
        x, i, y = shape_of(self.input), shape_of(self.indices), shape_of(self.output)
        u = self.unpooled_shape()
        if x != i or len(y) != len(x) or y[:2] != x[:2] or len(u) != len(y):
            raise ValueError(f"input {x}, indices {i} and result {y} do not match")
        for a, b in zip(u, y):
            require_at_least(b, a, f"unpooled shape {list(u)} exceeds the result {y}")
        return [y]


@irdl_op_definition
class DeformColumnsOp(GraphOp):
    """The columns of a deformable 2-D convolution: for x [N, C, H, W], offset
    [N, G * kh * kw * 2, oh, ow] (dy, dx per tap) and optional mask [N, G * kh * kw, oh, ow],
    result [N, C * kh * kw, oh * ow] holds mask * bilinear(x, tap position + offset), zero
    outside the image (G = offset groups); a MatMul with the weight finishes DeformConv."""

    name = "graph.deform_columns"
    traits = traits_def(StaticSizesKernel())
    input = operand_def(TensorType)
    offset = operand_def(TensorType)
    mask = opt_operand_def(TensorType)
    output = result_def(TensorType)
    kernel_shape = prop_def(DenseArrayBase)
    strides = prop_def(DenseArrayBase)
    pads = prop_def(DenseArrayBase)
    dilations = prop_def(DenseArrayBase)
    offset_group = prop_def(IntegerAttr)

    def infer_shapes(self):
        x, off = shape_of(self.input), shape_of(self.offset)
        kernel, g = ints_of(self.kernel_shape), int_of(self.offset_group)
        taps = math.prod(kernel)
        if len(x) != 4 or len(kernel) != 2 or x[1] % g or off[:2] != (x[0], g * taps * 2):
            raise ValueError(f"offset {off} does not fit input {x} and kernel {list(kernel)}")
        if self.mask is not None and shape_of(self.mask) != (x[0], g * taps, *off[2:]):
            raise ValueError(f"mask {shape_of(self.mask)} does not fit offset {off}")
        for d in x[2:]:  # every tap reads a pixel: a symbolic axis is guarded not empty
            if not isinstance(d, int):
                require_at_least(d, 1, f"an empty image {x} to sample")
        return [(x[0], x[1] * taps, off[2] * off[3])]


VISION_OPS = [
    ConvTransposeOp, Col2ImOp, GridSampleOp, RoiAlignOp, MaxRoiPoolOp, MaxPoolIndicesOp,
    MaxUnpoolOp, DeformColumnsOp, ResizeOp,
]
