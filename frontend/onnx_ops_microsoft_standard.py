"""com.microsoft contrib ops that are standard ONNX ops under onnxruntime's name, or a short
chain of them: each hands its node to the standard op's converter (`onnx_node`), so the
math and the checks exist once.

onnxruntime registered these before ONNX had them (GatherND, GridSample, Trilu, Range,
Unique, Pad with a pads input) or as its own forms of them (ExpandDims, NhwcMaxPool,
QLinearConv's channels_last, QuantizeLinear / DequantizeLinear with 16-bit types,
TransposeMatMul, ConvTransposeWithDynamicPads). Semantics are onnxruntime 1.32's CPU kernels'
(tests/unit/ops/test_microsoft_standard.py runs each beside it).
"""

from __future__ import annotations

import numpy as np
import onnx

from onnxc.frontend import onnx_types as types
from onnxc.frontend.onnx_context import NodeContext, Result, Tensor
from onnxc.frontend.onnx_ops_math import Converter
from onnxc.frontend.onnx_ops_microsoft import convert_fused_matmul, onnx_node


def _attrs(ctx: NodeContext, *drop: str) -> dict:
    return {a.name: onnx.helper.get_attribute_value(a) for a in ctx.node.attribute
            if a.name not in drop}


def _inputs(ctx: NodeContext) -> list[Tensor | None]:
    return [ctx.tensor(i) if ctx.has_input(i) else None for i in range(ctx.num_inputs)]


def standard(op_type: str, opset: int) -> Converter:
    """The converter of a contrib op that is the default domain's `op_type` at `opset`: the
    same inputs, outputs and attributes."""

    def convert(ctx: NodeContext) -> list[Result]:
        outputs = len(ctx.node.output)
        return onnx_node(ctx, op_type, _inputs(ctx), _attrs(ctx), outputs=outputs,
                         used=[i for i in range(outputs) if ctx.output_used(i)], opset=opset)

    convert.__doc__ = f"The contrib op as ONNX {op_type} (opset {opset})."
    return convert


def convert_expand_dims(ctx: NodeContext) -> list[Result]:
    """ExpandDims: X with a dimension of 1 inserted at `axis` (a constant scalar, negative
    counting from the end of the result), ONNX Unsqueeze."""
    axis = ctx.constant(1, "axis")
    if axis.size != 1:
        raise ctx.invalid(f"axis must be a scalar, got shape {list(axis.shape)}")
    value, rank = int(axis.reshape(())), ctx.rank(0)
    if not -rank - 1 <= value <= rank:
        raise ctx.invalid(f"axis {value} is out of range for rank {rank}")
    return onnx_node(ctx, "Unsqueeze", [ctx.tensor(0), np.array([value], np.int64)], opset=13)


def convert_pad(ctx: NodeContext) -> list[Result]:
    """Pad: ONNX Pad (opset 11) whose pads may also be [1, 2 * rank], as onnxruntime takes."""
    pads = ctx.tensor(1)
    if len(pads.shape) == 2 and pads.shape[0] == 1:
        pads = onnx_node(ctx, "Reshape", [pads, np.array([-1], np.int64)], opset=13)[0]
    value = ctx.tensor(2) if ctx.has_input(2) else None
    return onnx_node(ctx, "Pad", [ctx.tensor(0), pads, value], _attrs(ctx), opset=11)


def convert_range(ctx: NodeContext) -> list[Result]:
    """Range: ONNX Range, delta 1 when omitted."""
    delta = ctx.tensor(2) if ctx.has_input(2) else np.ones(
        (), types.numpy_dtype(types.onnx_type_of_element(ctx.element_type(0))))
    return onnx_node(ctx, "Range", [ctx.tensor(0), ctx.tensor(1), delta], opset=11)


def convert_unique(ctx: NodeContext) -> list[Result]:
    """Unique (1-D): the distinct values in order of first occurrence, each element's index
    into them and their counts: ONNX Unique(sorted=0)'s Y, inverse_indices and counts."""
    if ctx.rank(0) != 1:
        raise ctx.invalid(f"x must be 1-D, got rank {ctx.rank(0)}")
    used = [i for i in range(3) if ctx.output_used(i)]
    y, _, inverse, counts = onnx_node(ctx, "Unique", [ctx.tensor(0)], {"sorted": 0},
                                      outputs=4, used=[(0, 2, 3)[i] for i in used], opset=11)
    return [y, inverse, counts]


def _nhwc_to_nchw(ctx: NodeContext, value) -> Result:
    rank = ctx.rank(0)
    return onnx_node(ctx, "Transpose", [value], {"perm": [0, rank - 1, *range(1, rank - 1)]},
                     opset=13)[0]


def _nchw_to_nhwc(ctx: NodeContext, value) -> Result:
    rank = ctx.rank(0)
    return onnx_node(ctx, "Transpose", [value], {"perm": [0, *range(2, rank), 1]},
                     opset=13)[0]


def convert_nhwc_max_pool(ctx: NodeContext) -> list[Result]:
    """NhwcMaxPool: ONNX MaxPool (opset 12) of 8-bit x in NHWC order."""
    if ctx.rank(0) < 3:
        raise ctx.invalid(f"x must have rank 3 or more, got {ctx.rank(0)}")
    pooled = onnx_node(ctx, "MaxPool", [_nhwc_to_nchw(ctx, ctx.tensor(0))], _attrs(ctx),
                       opset=12)[0]
    return [_nchw_to_nhwc(ctx, pooled)]


def convert_qlinear_conv(ctx: NodeContext) -> list[Result]:
    """QLinearConv: ONNX QLinearConv, x and y in NHWC order when channels_last is 1."""
    channels_last = int(ctx.attr("channels_last", 0))
    if channels_last not in (0, 1):
        raise ctx.invalid(f"channels_last must be 0 or 1, got {channels_last}")
    inputs = _inputs(ctx)
    if channels_last:
        if ctx.rank(0) < 3:
            raise ctx.invalid(f"x must have rank 3 or more, got {ctx.rank(0)}")
        inputs[0] = _nhwc_to_nchw(ctx, inputs[0])
    y = onnx_node(ctx, "QLinearConv", inputs, _attrs(ctx, "channels_last"), opset=10)[0]
    return [_nchw_to_nhwc(ctx, y) if channels_last else y]


def convert_conv_transpose_with_dynamic_pads(ctx: NodeContext) -> list[Result]:
    """ConvTransposeWithDynamicPads: ONNX ConvTranspose with its pads from input 2, which
    must be a constant (a pads computed in the run would size the output in the run)."""
    attrs = _attrs(ctx)
    if ctx.has_input(2):
        pads = ctx.constant(2, "Pads")
        attrs["pads"] = [int(p) for p in pads.reshape(-1)]
    bias = ctx.tensor(3) if ctx.has_input(3) else None
    return onnx_node(ctx, "ConvTranspose", [ctx.tensor(0), ctx.tensor(1), bias], attrs,
                     opset=11)


def convert_matmul_integer16(ctx: NodeContext) -> list[Result]:
    """MatMulInteger16: numpy's matmul of 16-bit integers, exact in int32."""
    for i in (0, 1):
        if types.numpy_dtype(types.onnx_type_of_element(ctx.element_type(i))) not in (np.int16, np.uint16):
            raise ctx.unsupported(f"input {i} of element type {ctx.element_type(i)} "
                                  f"(int16 or uint16 only)")
    wide = [onnx_node(ctx, "Cast", [ctx.tensor(i)], {"to": onnx.TensorProto.INT32},
                      opset=13)[0] for i in (0, 1)]
    return onnx_node(ctx, "MatMul", wide, opset=13)


def convert_cdist(ctx: NodeContext) -> list[Result]:
    """CDist: the distances between the rows of A [N, K] and of B [M, K], [N, M]; metric
    "sqeuclidean" (default) or "euclidean" (onnxruntime's CPU kernel has only these). Summed
    as (a - b)^2 over K, which onnxruntime computes as |a|^2 + |b|^2 - 2 a.b."""
    metric = ctx.attr("metric", "sqeuclidean")
    metric = metric.decode() if isinstance(metric, bytes) else metric
    if metric not in ("sqeuclidean", "euclidean"):
        raise ctx.unsupported(f"metric '{metric}' (sqeuclidean and euclidean only)")
    if ctx.rank(0) != 2 or ctx.rank(1) != 2:
        raise ctx.invalid(f"A and B must be 2-D, got ranks {ctx.rank(0)} and {ctx.rank(1)}")
    a = onnx_node(ctx, "Unsqueeze", [ctx.tensor(0), np.array([1], np.int64)], opset=13)[0]
    b = onnx_node(ctx, "Unsqueeze", [ctx.tensor(1), np.array([0], np.int64)], opset=13)[0]
    diff = onnx_node(ctx, "Sub", [a, b], opset=14)[0]
    square = onnx_node(ctx, "Mul", [diff, diff], opset=14)[0]
    total = onnx_node(ctx, "ReduceSum", [square, np.array([2], np.int64)], {"keepdims": 0},
                      opset=13)[0]
    return [onnx_node(ctx, "Sqrt", [total], opset=13)[0] if metric == "euclidean" else total]


def convert_unfold_tensor(ctx: NodeContext) -> list[Result]:
    """UnfoldTensor: every slice of `size` elements along `dim`, `step` apart, as a new
    dimension at `dim` ((n - size) // step + 1 slices) and the slices' elements last."""
    rank = ctx.rank(0)
    dim, size, step = (int(ctx.attr(name, default)) for name, default in
                       (("dim", -1), ("size", 0), ("step", 1)))
    if not -rank <= dim < rank:
        raise ctx.invalid(f"dim {dim} is out of range for rank {rank}")
    dim %= rank
    n = ctx.shape(0)[dim]
    if not isinstance(n, int):
        raise ctx.unsupported("a symbolic size of the unfolded dimension")
    if size <= 0 or step <= 0 or size > n:
        raise ctx.invalid(f"size {size} and step {step} must be positive, size <= {n}")
    count = (n - size) // step + 1
    index = np.arange(count, dtype=np.int64)[:, None] * step + np.arange(size, dtype=np.int64)
    gathered = onnx_node(ctx, "Gather", [ctx.tensor(0), index], {"axis": dim}, opset=13)[0]
    perm = [*range(dim + 1), *range(dim + 2, rank + 1), dim + 1]
    return onnx_node(ctx, "Transpose", [gathered], {"perm": perm}, opset=13)


def convert_scaled_silu(ctx: NodeContext) -> list[Result]:
    """ScaledSiLU: z * sigmoid(z) of z = scale * X, the scale the scalar input 1 when given,
    else the alpha attribute (ONNX Swish of z). onnxc rounds to a half type once, at the end;
    onnxruntime rounds z and sigmoid(z) too."""
    if ctx.has_input(1):
        scale = ctx.tensor(1)
        if len(scale.shape) and scale.shape != (1,):
            raise ctx.invalid(f"scale must be a scalar, got shape {list(scale.shape)}")
    else:
        scale = np.array(float(ctx.attr("alpha", 1.0)),
                         types.numpy_dtype(types.onnx_type_of_element(ctx.element_type(0))))
    z = onnx_node(ctx, "Mul", [ctx.tensor(0), scale], opset=14)[0]
    return onnx_node(ctx, "Swish", [z], {"alpha": 1.0}, opset=24)


def _crop_coordinates(ctx: NodeContext, rois, start: int, size: int, extent: int):
    """TensorFlow's crop_and_resize sample positions along one axis, [R, size]: from
    start * (extent - 1) to end * (extent - 1) in `size` steps (the middle for size 1),
    start and end columns `start` and `start + 2` of rois."""
    def column(i):
        return onnx_node(ctx, "Slice", [rois, np.array([i], np.int64),
                                        np.array([i + 1], np.int64),
                                        np.array([1], np.int64)], opset=13)[0]

    first, last = column(start), column(start + 2)
    span = np.array(extent - 1, np.float32)
    if size == 1:
        middle = onnx_node(ctx, "Add", [first, last], opset=14)[0]
        return onnx_node(ctx, "Mul", [middle, np.array(0.5 * span, np.float32)], opset=14)[0]
    origin = onnx_node(ctx, "Mul", [first, span], opset=14)[0]
    step = onnx_node(ctx, "Sub", [last, first], opset=14)[0]
    step = onnx_node(ctx, "Mul", [step, np.array(span / (size - 1), np.float32)], opset=14)[0]
    offsets = onnx_node(ctx, "Mul", [step, np.arange(size, dtype=np.float32)], opset=14)[0]
    return onnx_node(ctx, "Add", [origin, offsets], opset=14)[0]


def convert_crop_and_resize(ctx: NodeContext) -> list[Result]:
    """CropAndResize (TensorFlow's crop_and_resize as onnxruntime runs it): for each box
    (y1, x1, y2, x2, normalized) of image batch_indices[r], a crop_height x crop_width
    grid of corner-aligned samples, bilinear or nearest; samples outside the image are
    extrapolation_value. Built on ONNX GridSample (align_corners=1) over the boxes' images,
    the outside samples replaced by a Where; result [R, C, crop_height, crop_width]."""
    mode = ctx.attr("mode", "bilinear")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if mode not in ("bilinear", "nearest"):
        raise ctx.invalid(f"mode must be 'bilinear' or 'nearest', got '{mode}'")
    if types.onnx_type_of_element(ctx.element_type(0)) != onnx.TensorProto.FLOAT:
        raise ctx.unsupported(f"X of element type {ctx.element_type(0)} (float32 only, as "
                              f"onnxruntime)")
    if ctx.rank(0) != 4 or ctx.rank(1) != 2 or ctx.shape(1)[1] != 4:
        raise ctx.invalid(f"X must be [N, C, H, W] and rois [R, 4], got "
                          f"{list(ctx.shape(0))} and {list(ctx.shape(1))}")
    height, width = ctx.shape(0)[2:]
    if not isinstance(height, int) or not isinstance(width, int):
        raise ctx.unsupported("a symbolic image size")
    crop = ctx.constant(3, "crop_size").reshape(-1)
    if crop.size != 2 or crop.min() <= 0:
        raise ctx.invalid(f"crop_size must be 2 positive values, got {crop.tolist()}")
    crop_h, crop_w = int(crop[0]), int(crop[1])
    rois = ctx.tensor(1)
    ys = _crop_coordinates(ctx, rois, 0, crop_h, height)  # [R, crop_h]
    xs = _crop_coordinates(ctx, rois, 1, crop_w, width)   # [R, crop_w]

    def inside(v, extent):
        low = onnx_node(ctx, "GreaterOrEqual", [v, np.array(0, np.float32)], opset=16)[0]
        high = onnx_node(ctx, "LessOrEqual", [v, np.array(extent - 1, np.float32)], opset=16)[0]
        return onnx_node(ctx, "And", [low, high], opset=7)[0]

    def normalized(v, extent):  # GridSample's align_corners=1 coordinate of position v
        if extent == 1:
            return onnx_node(ctx, "Mul", [v, np.array(0, np.float32)], opset=14)[0]
        scaled = onnx_node(ctx, "Mul", [v, np.array(2 / (extent - 1), np.float32)], opset=14)[0]
        return onnx_node(ctx, "Sub", [scaled, np.array(1, np.float32)], opset=14)[0]

    gy = onnx_node(ctx, "Unsqueeze", [normalized(ys, height), np.array([2, 3], np.int64)],
                   opset=13)[0]                                    # [R, h, 1, 1]
    gx = onnx_node(ctx, "Unsqueeze", [normalized(xs, width), np.array([1, 3], np.int64)],
                   opset=13)[0]                                    # [R, 1, w, 1]
    zeros = np.zeros((1, crop_h, crop_w, 1), np.float32)
    grid = onnx_node(ctx, "Concat", [onnx_node(ctx, "Add", [gx, zeros], opset=14)[0],
                                     onnx_node(ctx, "Add", [gy, zeros], opset=14)[0]],
                     {"axis": 3}, opset=13)[0]                     # [R, h, w, (x, y)]
    images = onnx_node(ctx, "Gather", [ctx.tensor(0), ctx.tensor(2)], {"axis": 0},
                       opset=13)[0]                                # [R, C, H, W]
    sampled = onnx_node(ctx, "GridSample", [images, grid],
                        {"mode": mode, "padding_mode": "border", "align_corners": 1},
                        opset=16)[0]                               # [R, C, h, w]
    row_in = onnx_node(ctx, "Unsqueeze", [inside(ys, height), np.array([1, 3], np.int64)],
                       opset=13)[0]                                # [R, 1, h, 1]
    col_in = onnx_node(ctx, "Unsqueeze", [inside(xs, width), np.array([1, 2], np.int64)],
                       opset=13)[0]                                # [R, 1, 1, w]
    keep = onnx_node(ctx, "And", [row_in, col_in], opset=7)[0]
    fill = np.array(float(ctx.attr("extrapolation_value", 0.0)), np.float32)
    return onnx_node(ctx, "Where", [keep, sampled, fill], opset=16)


CONVERTERS: dict[str, Converter] = {
    "GatherND": standard("GatherND", 11),
    "GridSample": standard("GridSample", 16),
    "Trilu": standard("Trilu", 14),
    "QuantizeLinear": standard("QuantizeLinear", 21),
    "DequantizeLinear": standard("DequantizeLinear", 21),
    "TransposeMatMul": convert_fused_matmul,
    "ExpandDims": convert_expand_dims,
    "Pad": convert_pad,
    "Range": convert_range,
    "Unique": convert_unique,
    "NhwcMaxPool": convert_nhwc_max_pool,
    "QLinearConv": convert_qlinear_conv,
    "ConvTransposeWithDynamicPads": convert_conv_transpose_with_dynamic_pads,
    "MatMulInteger16": convert_matmul_integer16,
    "CDist": convert_cdist,
    "UnfoldTensor": convert_unfold_tensor,
    "ScaledSiLU": convert_scaled_silu,
    "CropAndResize": convert_crop_and_resize,
}
"""com.microsoft ops that are standard ONNX ops, by op type."""
