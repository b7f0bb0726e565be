"""Data movement and CNN/detection layers: Resize, Upsample, GridSample, AffineGrid, RoiAlign,
ConvTranspose, Col2Im, Gather/Scatter Elements and ND, Tile, DepthToSpace, SpaceToDepth,
ReverseSequence, Compress, NonZero, CenterCropPad, the normalizations InstanceNormalization,
GroupNormalization and MeanVarianceNormalization, and LpPool.

Ops that ONNX defines as compositions are imported as that composition of graph ops
(DepthToSpace = Reshape/Transpose/Reshape, CenterCropPad = Slice/Pad, the normalizations
= ReduceMean arithmetic, LpPool = |x|^p through a summing AveragePool), so they profit from
the existing kernels and rewrites (AffineGrid = one MatMul with a constant base grid).
Per-opset rules: Resize's scales/sizes/roi are inputs
(constants here) since 10/11, axes and antialias since 18; Upsample's scales became an input
in 9; Tile's repeats have been an input since 6; Scatter (9-10) is ScatterElements without
reduction; GroupNormalization's scale/bias are per group in 18 and per channel since 21.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import DenseArrayBase, StringAttr, f64
from xdsl.ir import SSAValue

from onnxc.dialects import graph, graph_resize, graph_tensor2
from onnxc.dialects import graph_shapes as shapes
from onnxc.frontend import onnx_types as types
from onnxc.frontend.onnx_context import NodeContext, Result, Tensor
from onnxc.frontend.onnx_ops_math import Converter
from onnxc.frontend.onnx_ops_nn import _window


def _ints(array: np.ndarray) -> list[int]:
    return [int(v) for v in np.asarray(array).reshape(-1)]


def _axis(ctx: NodeContext, axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise ctx.invalid(f"axis {axis} out of range for rank {rank}")
    return axis % rank


def _typed(ctx: NodeContext, shape, i: int = 0):
    return types.tensor_type(tuple(shape), ctx.element_type(i))


def _f64_array(values) -> DenseArrayBase:
    return DenseArrayBase.from_list(f64, [float(v) for v in values])


class _Emitter:
    """Small helpers for compositions of graph ops on SSA values."""

    def __init__(self, ctx: NodeContext):
        self.ctx = ctx
        self.el = ctx.element_type(0)

    def binary(self, op_class, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        out = self.ctx.infer(shapes.broadcast_shapes, graph.shape_of(lhs), graph.shape_of(rhs))
        return self.ctx.emit1(op_class(operands=[lhs, rhs],
                                       result_types=[types.tensor_type(out, self.el)]))

    def unary(self, op_class, x: SSAValue) -> SSAValue:
        return self.ctx.emit1(op_class(operands=[x], result_types=[x.type]))

    def reshape(self, x: SSAValue, shape) -> SSAValue:
        if graph.shape_of(x) == tuple(shape):
            return x
        t = types.tensor_type(tuple(shape), x.type.get_element_type())
        return self.ctx.emit1(graph.ReshapeOp(operands=[x], result_types=[t]))

    def transpose(self, x: SSAValue, perm) -> SSAValue:
        shape = shapes.transpose_shape(graph.shape_of(x), perm)
        t = types.tensor_type(shape, x.type.get_element_type())
        return self.ctx.emit1(graph.TransposeOp(operands=[x], result_types=[t],
                                                properties={"perm": types.i64_array(perm)}))

    def mean(self, x: SSAValue, axes) -> SSAValue:
        from onnxc.dialects.graph_reduce import reduce_shape

        shape = reduce_shape(graph.shape_of(x), axes, True)
        return self.ctx.emit1(graph.ReduceMeanOp(
            operands=[x], result_types=[types.tensor_type(shape, self.el)],
            properties={"axes": types.i64_array(sorted(axes)), "keepdims": types.i64_attr(1)}))

    def normalize(self, x: SSAValue, axes, epsilon: float) -> SSAValue:
        """(x - mean) / sqrt(var + epsilon) over `axes` (biased variance)."""
        centered = self.binary(graph.SubOp, x, self.mean(x, axes))
        var = self.mean(self.binary(graph.MulOp, centered, centered), axes)
        std = self.unary(graph.SqrtOp, self.binary(graph.AddOp, var,
                                                   self.ctx.scalar(epsilon, self.el)))
        return self.binary(graph.DivOp, centered, std)


def _require_float(ctx: NodeContext) -> None:
    if not types.is_float(ctx.element_type(0)):
        raise ctx.unsupported(f"element type {ctx.element_type(0)} (float tensors only)")


# ---------------------------------------------------------------------- Resize / Upsample


def _resize_geometry(ctx: NodeContext) -> tuple[tuple[int, ...], list[float], list[float]]:
    """(result shape, per-axis scales, roi [begin..., end...]) of Resize 10+ / Upsample."""
    x = ctx.shape(0)
    rank = len(x)
    if ctx.op_type == "Upsample" or ctx.opset < 11:
        if ctx.op_type == "Upsample" and ctx.opset < 9:
            scales = [float(s) for s in ctx.attr("scales")]
        else:
            scales = [float(s) for s in np.asarray(ctx.constant(1, "scales")).reshape(-1)]
        sizes = None
        roi = None
    else:
        roi_array = ctx.known(1) if ctx.has_input(1) else None
        if ctx.has_input(1) and roi_array is None:
            ctx.constant(1, "roi")
        roi = None if roi_array is None or roi_array.size == 0 else [float(v) for v in roi_array]
        scales_array = ctx.optional_constant(2, "scales")
        scales = (None if scales_array is None or scales_array.size == 0
                  else [float(s) for s in scales_array.reshape(-1)])
        sizes_array = ctx.optional_constant(3, "sizes")
        sizes = None if sizes_array is None or sizes_array.size == 0 else _ints(sizes_array)
        if (scales is None) == (sizes is None):
            raise ctx.invalid("exactly one of scales and sizes must be given")
    axes = ctx.ints("axes") if ctx.opset >= 18 else None
    axes = list(range(rank)) if axes is None else [_axis(ctx, a, rank) for a in axes]
    given = scales if scales is not None else sizes
    if len(given) != len(axes):
        raise ctx.invalid(f"{len(given)} scales/sizes for {len(axes)} axes")
    full_roi = [0.0] * rank + [1.0] * rank
    if roi is not None:
        if len(roi) != 2 * len(axes):
            raise ctx.invalid(f"roi {roi} does not fit {len(axes)} axes")
        for i, a in enumerate(axes):
            full_roi[a], full_roi[a + rank] = roi[i], roi[i + len(axes)]
    full_scales = [1.0] * rank
    out = list(x)
    if scales is not None:
        for i, a in enumerate(axes):
            if scales[i] <= 0:
                raise ctx.invalid(f"scale {scales[i]} is not positive")
            full_scales[a] = scales[i]
            out[a] = int(scales[i] * x[a])
        return tuple(out), full_scales, full_roi
    for i, a in enumerate(axes):
        full_scales[a] = sizes[i] / x[a]
        out[a] = sizes[i]
    policy = ctx.attr("keep_aspect_ratio_policy", "stretch")
    if policy != "stretch":
        picked = [full_scales[a] for a in axes]
        if policy not in ("not_larger", "not_smaller"):
            raise ctx.invalid(f"unknown keep_aspect_ratio_policy '{policy}'")
        scale = min(picked) if policy == "not_larger" else max(picked)
        for a in axes:
            full_scales[a] = scale
            out[a] = int(scale * x[a] + 0.5)
    return tuple(out), full_scales, full_roi


def convert_resize(ctx: NodeContext) -> list[Result]:
    legacy = ctx.op_type == "Upsample" or ctx.opset < 11
    mode = ctx.attr("mode", "nearest")
    if mode == "bilinear" and legacy:
        mode = "linear"
    if mode not in graph_resize.MODES:
        raise ctx.unsupported(f"mode '{mode}'")
    if mode != "nearest":
        _require_float(ctx)
    ctm = "asymmetric" if legacy else ctx.attr("coordinate_transformation_mode", "half_pixel")
    nearest = "floor" if legacy else ctx.attr("nearest_mode", "round_prefer_floor")
    if ctm not in graph_resize.COORDINATE_MODES:
        raise ctx.unsupported(f"coordinate_transformation_mode '{ctm}'")
    if nearest not in graph_resize.NEAREST_MODES:
        raise ctx.unsupported(f"nearest_mode '{nearest}'")
    antialias = ctx.attr("antialias", 0) if ctx.opset >= 18 else 0
    if antialias and mode == "nearest":
        raise ctx.invalid("antialias needs mode linear or cubic")
    out, scales, roi = _resize_geometry(ctx)
    op = graph_resize.ResizeOp(
        operands=[ctx.operand(0)],
        result_types=[_typed(ctx, out)],
        properties={
            "mode": StringAttr(mode),
            "coordinate_transformation_mode": StringAttr(ctm),
            "nearest_mode": StringAttr(nearest),
            "cubic_coeff_a": types.float_attr(ctx.attr("cubic_coeff_a", -0.75), f64),
            "exclude_outside": types.i64_attr(ctx.attr("exclude_outside", 0)),
            "antialias": types.i64_attr(antialias),
            "extrapolation_value": types.float_attr(ctx.attr("extrapolation_value", 0.0), f64),
            "scales": _f64_array(scales),
            "roi": _f64_array(roi),
        },
    )
    return [ctx.emit1(op)]


# ---------------------------------------------------------------------- ConvTranspose


def convert_conv_transpose(ctx: NodeContext) -> list[Result]:
    _require_float(ctx)
    x, w = ctx.shape(0), ctx.shape(1)
    n = len(x) - 2
    kernel = list(w[2:])
    if ctx.has_attr("kernel_shape") and ctx.ints("kernel_shape") != kernel:
        raise ctx.invalid(f"kernel_shape {ctx.ints('kernel_shape')} differs from weight {w}")
    group = ctx.attr("group", 1)
    strides = ctx.ints("strides") or [1] * n
    dilations = ctx.ints("dilations") or [1] * n
    out_pad = ctx.ints("output_padding") or [0] * n
    pads = ctx.ints("pads") or [0] * (2 * n)
    if not len(strides) == len(dilations) == len(out_pad) == n or len(pads) != 2 * n:
        raise ctx.invalid("strides/dilations/output_padding/pads do not fit the input rank")
    auto_pad = ctx.attr("auto_pad", "NOTSET")
    full = [strides[i] * (x[2 + i] - 1) + out_pad[i] + (kernel[i] - 1) * dilations[i] + 1
            for i in range(n)]
    target = ctx.ints("output_shape")
    if target is not None and len(target) > n:
        target = target[-n:]
    if auto_pad in ("SAME_UPPER", "SAME_LOWER") and not ctx.has_attr("pads"):
        # as onnx.reference does: pads split the excess over the requested size
        target = target or [x[2 + i] * strides[i] for i in range(n)]
        for i in range(n):
            total = full[i] - target[i]
            small, large = total // 2, total - total // 2
            pads[i], pads[i + n] = (small, large) if auto_pad == "SAME_UPPER" else (large, small)
        spatial = list(target)
    else:
        if auto_pad == "VALID":
            pads = [0] * (2 * n)
        spatial = [full[i] - pads[i] - pads[i + n] for i in range(n)]
        if target is not None:  # explicit pads: output_shape extends the end like output_padding
            spatial = list(target)
    if min(pads, default=0) < 0 or any(
            not 0 <= spatial[i] - (full[i] - out_pad[i] - pads[i] - pads[i + n])
            < max(strides[i], dilations[i]) for i in range(n)):
        raise ctx.unsupported(f"output size {spatial} for pads {pads} and strides {strides}")
    out = (x[0], w[1] * group, *spatial)
    bias = ctx.operand(2) if ctx.has_input(2) else None
    op = graph_tensor2.ConvTransposeOp(
        operands=[ctx.operand(0), ctx.operand(1), bias],
        result_types=[_typed(ctx, out)],
        properties={"strides": types.i64_array(strides), "pads": types.i64_array(pads),
                    "dilations": types.i64_array(dilations), "group": types.i64_attr(group)},
    )
    return [ctx.emit1(op)]


def convert_col2im(ctx: NodeContext) -> list[Result]:
    _require_float(ctx)
    image = _ints(ctx.constant(1, "image_shape"))
    block = _ints(ctx.constant(2, "block_shape"))
    n = len(image)
    strides = ctx.ints("strides") or [1] * n
    dilations = ctx.ints("dilations") or [1] * n
    pads = ctx.ints("pads") or [0] * (2 * n)
    x = ctx.shape(0)
    if len(block) != n or len(x) != 3 or x[1] % max(1, math.prod(block)):
        raise ctx.invalid(f"input {x} does not hold blocks {block} of an image {image}")
    out = (x[0], x[1] // math.prod(block), *image)
    op = graph_tensor2.Col2ImOp(
        operands=[ctx.operand(0)], result_types=[_typed(ctx, out)],
        properties={"block_shape": types.i64_array(block), "strides": types.i64_array(strides),
                    "pads": types.i64_array(pads), "dilations": types.i64_array(dilations)})
    return [ctx.emit1(op)]


def convert_grid_sample(ctx: NodeContext) -> list[Result]:
    _require_float(ctx)
    if ctx.element_type(1) != ctx.element_type(0):
        raise ctx.unsupported("a grid whose element type differs from the input's")
    mode = ctx.attr("mode", "linear" if ctx.opset >= 20 else "bilinear")
    mode = {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
    padding = ctx.attr("padding_mode", "zeros")
    if mode not in graph_tensor2.GRID_MODES or padding not in graph_tensor2.GRID_PADDINGS:
        raise ctx.invalid(f"unknown mode '{mode}' or padding_mode '{padding}'")
    x, g = ctx.shape(0), ctx.shape(1)
    if ctx.opset < 20 and len(x) != 4:
        raise ctx.invalid(f"GridSample-{ctx.opset} samples 4-D inputs, got rank {len(x)}")
    out = (x[0], x[1], *g[1:-1])
    op = graph_tensor2.GridSampleOp(
        operands=[ctx.operand(0), ctx.operand(1)], result_types=[_typed(ctx, out)],
        properties={"mode": StringAttr(mode), "padding_mode": StringAttr(padding),
                    "align_corners": types.i64_attr(ctx.attr("align_corners", 0))})
    return [ctx.emit1(op)]


def _base_grid(sizes: list[int], align_corners: bool) -> np.ndarray:
    """[prod(sizes), D + 1]: each output position's normalized (x, y[, z], 1)."""
    axes = []
    for n in sizes:
        i = np.arange(n, dtype=np.float64)
        if align_corners:
            axes.append(-1 + 2 * i / (n - 1) if n > 1 else np.full(1, -1.0))
        else:
            axes.append(-1 + (2 * i + 1) / n)
    mesh = np.meshgrid(*axes, indexing="ij")  # outermost axis first
    coords = [m.reshape(-1) for m in reversed(mesh)]  # x (innermost) first
    return np.stack([*coords, np.ones(math.prod(sizes))], axis=1)


def convert_affine_grid(ctx: NodeContext) -> list[Result]:
    """theta [N, D, D + 1] applied to the base grid: one MatMul with a constant."""
    _require_float(ctx)
    size = _ints(ctx.constant(1, "size"))
    n, dims = ctx.shape(0)[0], ctx.shape(0)[1]
    spatial = size[2:]
    if len(spatial) != dims or ctx.shape(0)[2] != dims + 1 or size[0] != n:
        raise ctx.invalid(f"theta {ctx.shape(0)} does not fit size {size}")
    base = _base_grid(spatial, bool(ctx.attr("align_corners", 0)))
    dtype = types.numpy_dtype_of_element(ctx.element_type(0))
    base_t = ctx.materialize(Tensor.of_array(np.ascontiguousarray(base.T).astype(dtype)))
    e = _Emitter(ctx)
    points = math.prod(spatial)
    grid = ctx.emit1(graph.MatMulOp(operands=[ctx.operand(0), base_t],
                                    result_types=[_typed(ctx, (n, dims, points))]))
    return [e.reshape(e.transpose(grid, (0, 2, 1)), (n, *spatial, dims))]


def convert_roi_align(ctx: NodeContext) -> list[Result]:
    _require_float(ctx)
    mode = ctx.attr("mode", "avg")
    if mode not in ("avg", "max"):
        raise ctx.invalid(f"unknown mode '{mode}'")
    ctm = ctx.attr("coordinate_transformation_mode", "half_pixel") if ctx.opset >= 16 \
        else "output_half_pixel"
    if ctm not in ("half_pixel", "output_half_pixel"):
        raise ctx.invalid(f"unknown coordinate_transformation_mode '{ctm}'")
    out = (ctx.shape(1)[0], ctx.shape(0)[1], ctx.attr("output_height", 1),
           ctx.attr("output_width", 1))
    op = graph_tensor2.RoiAlignOp(
        operands=[ctx.operand(0), ctx.operand(1), _index_operand(ctx, 2)],
        result_types=[_typed(ctx, out)],
        properties={"mode": StringAttr(mode),
                    "sampling_ratio": types.i64_attr(ctx.attr("sampling_ratio", 0)),
                    "spatial_scale": types.float_attr(ctx.attr("spatial_scale", 1.0), f64),
                    "half_pixel": types.i64_attr(int(ctm == "half_pixel"))})
    return [ctx.emit1(op)]


# ---------------------------------------------------------------------- gather / scatter


def _index_operand(ctx: NodeContext, i: int) -> SSAValue:
    if not types.is_float(ctx.element_type(i)) and str(ctx.element_type(i)) in ("i64", "i32"):
        return ctx.operand(i)
    raise ctx.unsupported(f"indices of element type {ctx.element_type(i)}")


def convert_gather_elements(ctx: NodeContext) -> list[Result]:
    axis = _axis(ctx, ctx.attr("axis", 0), ctx.rank(0))
    op = graph_tensor2.GatherElementsOp(
        operands=[ctx.operand(0), _index_operand(ctx, 1)],
        result_types=[_typed(ctx, ctx.shape(1))], properties={"axis": types.i64_attr(axis)})
    return [ctx.emit1(op)]


def convert_gather_nd(ctx: NodeContext) -> list[Result]:
    x, i = ctx.shape(0), ctx.shape(1)
    b = ctx.attr("batch_dims", 0) if ctx.opset >= 12 else 0
    out = ctx.infer(lambda: i[:-1] + x[b + i[-1]:])
    op = graph_tensor2.GatherNDOp(
        operands=[ctx.operand(0), _index_operand(ctx, 1)],
        result_types=[_typed(ctx, out)], properties={"batch_dims": types.i64_attr(b)})
    return [ctx.emit1(op)]


def _reduction(ctx: NodeContext) -> str:
    reduction = ctx.attr("reduction", "none") if ctx.opset >= 16 else "none"
    if reduction not in graph_tensor2.REDUCTIONS:
        raise ctx.unsupported(f"reduction '{reduction}'")
    return reduction


def convert_scatter_elements(ctx: NodeContext) -> list[Result]:
    axis = _axis(ctx, ctx.attr("axis", 0), ctx.rank(0))
    op = graph_tensor2.ScatterElementsOp(
        operands=[ctx.operand(0), _index_operand(ctx, 1), ctx.operand(2)],
        result_types=[ctx.tensor(0).type],
        properties={"axis": types.i64_attr(axis), "reduction": StringAttr(_reduction(ctx))})
    return [ctx.emit1(op)]


def convert_scatter_nd(ctx: NodeContext) -> list[Result]:
    op = graph_tensor2.ScatterNDOp(
        operands=[ctx.operand(0), _index_operand(ctx, 1), ctx.operand(2)],
        result_types=[ctx.tensor(0).type],
        properties={"reduction": StringAttr(_reduction(ctx))})
    return [ctx.emit1(op)]


# ---------------------------------------------------------------------- static data movement


def convert_tile(ctx: NodeContext) -> list[Result]:
    repeats = _ints(ctx.constant(1, "repeats"))
    x = ctx.shape(0)
    if len(repeats) != len(x) or min(repeats, default=0) < 0:
        raise ctx.invalid(f"repeats {repeats} do not fit rank {len(x)}")
    out = tuple(d * r for d, r in zip(x, repeats))
    op = graph_tensor2.TileOp(operands=[ctx.operand(0)], result_types=[_typed(ctx, out)],
                              properties={"repeats": types.i64_array(repeats)})
    return [ctx.emit1(op)]


def convert_depth_to_space(ctx: NodeContext) -> list[Result]:
    """The ONNX definition: reshape to 6-D, transpose, reshape back."""
    n, c, h, w = ctx.shape(0)
    b = ctx.attr("blocksize")
    if b <= 0 or c % (b * b):
        raise ctx.invalid(f"{c} channels are not divisible by blocksize^2 = {b * b}")
    e = _Emitter(ctx)
    if ctx.attr("mode", "DCR") == "DCR":
        y = e.transpose(e.reshape(ctx.operand(0), (n, b, b, c // (b * b), h, w)),
                        (0, 3, 4, 1, 5, 2))
    else:
        y = e.transpose(e.reshape(ctx.operand(0), (n, c // (b * b), b, b, h, w)),
                        (0, 1, 4, 2, 5, 3))
    return [e.reshape(y, (n, c // (b * b), h * b, w * b))]


def convert_space_to_depth(ctx: NodeContext) -> list[Result]:
    n, c, h, w = ctx.shape(0)
    b = ctx.attr("blocksize")
    if b <= 0 or h % b or w % b:
        raise ctx.invalid(f"spatial size {h}x{w} is not divisible by blocksize {b}")
    mode = ctx.attr("mode", "DCR")
    if mode not in ("DCR", "CRD"):
        raise ctx.invalid(f"unknown mode '{mode}'")
    e = _Emitter(ctx)
    perm = (0, 3, 5, 1, 2, 4) if mode == "DCR" else (0, 1, 3, 5, 2, 4)
    y = e.transpose(e.reshape(ctx.operand(0), (n, c, h // b, b, w // b, b)), perm)
    return [e.reshape(y, (n, c * b * b, h // b, w // b))]


def convert_reverse_sequence(ctx: NodeContext) -> list[Result]:
    rank = ctx.rank(0)
    b = _axis(ctx, ctx.attr("batch_axis", 1), rank)
    t = _axis(ctx, ctx.attr("time_axis", 0), rank)
    op = graph_tensor2.ReverseSequenceOp(
        operands=[ctx.operand(0), _index_operand(ctx, 1)], result_types=[ctx.tensor(0).type],
        properties={"batch_axis": types.i64_attr(b), "time_axis": types.i64_attr(t)})
    return [ctx.emit1(op)]


def convert_compress(ctx: NodeContext) -> list[Result]:
    """A constant condition selects fixed positions: a Gather (of the flattened input when
    there is no axis)."""
    condition = np.asarray(ctx.constant(1, "condition")).reshape(-1).astype(bool)
    x = ctx.shape(0)
    e = _Emitter(ctx)
    data = ctx.operand(0)
    if ctx.has_attr("axis"):
        axis = _axis(ctx, ctx.attr("axis"), len(x))
    else:
        axis = 0
        data = e.reshape(data, (math.prod(x),))
    size = graph.shape_of(data)[axis]
    picked = np.nonzero(condition[:size])[0].astype(np.int64)
    if len(condition) > size and condition[size:].any():
        raise ctx.invalid("condition selects positions past the end of the axis")
    out = shapes.gather_shape(graph.shape_of(data), picked.shape, axis)
    op = graph.GatherOp(operands=[data, ctx.materialize(Tensor.of_array(picked))],
                        result_types=[_typed(ctx, out)], properties={"axis": types.i64_attr(axis)})
    return [ctx.emit1(op)]


def convert_non_zero(ctx: NodeContext) -> list[Result]:
    """The result's shape depends on the data, so only constant inputs are supported."""
    x = ctx.constant(0, "data")  # the result's shape depends on it
    return [np.array(np.nonzero(np.asarray(x)), dtype=np.int64).reshape(np.ndim(x), -1)]


def convert_center_crop_pad(ctx: NodeContext) -> list[Result]:
    """Crop (Slice) the axes that are too large, zero-pad (Pad) those that are too small,
    both centred with the extra element at the end (as ONNX's definition does)."""
    x = ctx.shape(0)
    rank = len(x)
    target = _ints(ctx.constant(1, "shape"))
    axes = [_axis(ctx, a, rank) for a in (ctx.ints("axes") or range(rank))]
    if len(target) != len(axes):
        raise ctx.invalid(f"shape {target} does not fit axes {axes}")
    starts, ends, sliced, pads = [], [], [], [0] * (2 * rank)
    for a, s in zip(axes, target):
        if s < x[a]:
            begin = (x[a] - s) // 2
            starts.append(begin)
            ends.append(begin + s)
            sliced.append(a)
        elif s > x[a]:
            pads[a] = (s - x[a]) // 2
            pads[a + rank] = s - x[a] - pads[a]
    value = ctx.operand(0)
    if sliced:
        shape = shapes.slice_shape(x, starts, ends, sliced, [1] * len(sliced))
        value = ctx.emit1(graph.SliceOp(
            operands=[value], result_types=[_typed(ctx, shape)],
            properties={"starts": types.i64_array(starts), "ends": types.i64_array(ends),
                        "axes": types.i64_array(sliced), "steps": types.i64_array([1] * len(sliced))}))
    if any(pads):
        shape = shapes.pad_shape(graph.shape_of(value), pads)
        value = ctx.emit1(graph.PadOp(
            operands=[value], result_types=[_typed(ctx, shape)],
            properties={"pads": types.i64_array(pads), "mode": StringAttr("constant"),
                        "value": types.float_attr(0.0, ctx.element_type(0))}))
    if value is ctx.tensor(0).value or not (sliced or any(pads)):
        value = ctx.emit1(graph.IdentityOp(operands=[value], result_types=[ctx.tensor(0).type]))
    return [value]


# ---------------------------------------------------------------------- normalizations


def convert_instance_norm(ctx: NodeContext) -> list[Result]:
    _require_float(ctx)
    x = ctx.shape(0)
    e = _Emitter(ctx)
    y = e.normalize(ctx.operand(0), list(range(2, len(x))), ctx.attr("epsilon", 1e-5))
    per_channel = (x[1],) + (1,) * (len(x) - 2)
    y = e.binary(graph.MulOp, y, e.reshape(ctx.operand(1), per_channel))
    return [e.binary(graph.AddOp, y, e.reshape(ctx.operand(2), per_channel))]


def convert_group_norm(ctx: NodeContext) -> list[Result]:
    _require_float(ctx)
    x = ctx.shape(0)
    groups = ctx.attr("num_groups")
    n, c = x[0], x[1]
    if groups <= 0 or c % groups:
        raise ctx.invalid(f"{c} channels are not divisible into {groups} groups")
    e = _Emitter(ctx)
    grouped = e.reshape(ctx.operand(0), (n, groups, (c // groups) * math.prod(x[2:])))
    y = e.reshape(e.normalize(grouped, [2], ctx.attr("epsilon", 1e-5)), x)
    scale, bias = ctx.operand(1), ctx.operand(2)
    if ctx.opset < 21:  # one scale/bias per group: repeat it for the group's channels
        def per_group(v: SSAValue) -> SSAValue:
            v = e.reshape(v, (groups, 1))
            ones = ctx.emit1(graph.ConstantOfShapeOp(
                properties={"value": types.dense(np.ones((1,), np.float32))},
                result_types=[types.tensor_type((groups, c // groups), e.el)]))
            return e.binary(graph.MulOp, v, ones)
        scale, bias = per_group(scale), per_group(bias)
    per_channel = (c,) + (1,) * (len(x) - 2)
    y = e.binary(graph.MulOp, y, e.reshape(scale, per_channel))
    return [e.binary(graph.AddOp, y, e.reshape(bias, per_channel))]


def convert_mvn(ctx: NodeContext) -> list[Result]:
    _require_float(ctx)
    rank = ctx.rank(0)
    axes = sorted({_axis(ctx, a, rank) for a in (ctx.ints("axes") or [0, 2, 3])})
    e = _Emitter(ctx)
    # the ONNX function body: (X - E[X]) / (sqrt(E[X^2] - E[X]^2) + 1e-9)
    x = ctx.operand(0)
    mean = e.mean(x, axes)
    var = e.binary(graph.SubOp, e.mean(e.binary(graph.MulOp, x, x), axes),
                   e.binary(graph.MulOp, mean, mean))
    std = e.binary(graph.AddOp, e.unary(graph.SqrtOp, var), ctx.scalar(1e-9, e.el))
    return [e.binary(graph.DivOp, e.binary(graph.SubOp, x, mean), std)]


def convert_lp_pool(ctx: NodeContext) -> list[Result]:
    """(sum over the window of |x|^p)^(1/p): a zero-padded AveragePool times the window."""
    _require_float(ctx)
    kernel = ctx.ints("kernel_shape")
    if kernel is None:
        raise ctx.invalid("required attribute 'kernel_shape' is missing")
    p = ctx.attr("p", 2)
    strides, pads, dilations = _window(ctx, kernel)
    ceil_mode = ctx.attr("ceil_mode", 0)
    e = _Emitter(ctx)
    x = ctx.operand(0)
    powered = e.binary(graph.MulOp, x, x) if p == 2 else e.binary(
        graph.PowOp, e.unary(graph.AbsOp, x), ctx.scalar(float(p), e.el))
    out = ctx.infer(shapes.pool_output_shape, ctx.shape(0), kernel, strides, pads, dilations,
                    bool(ceil_mode))
    # a ceil-mode window that runs past the end pad would count fewer taps than the kernel
    # has: extend the end pads instead (zeros add nothing to the sum)
    n = len(kernel)
    pads = list(pads)
    for i in range(n):
        reach = (out[2 + i] - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1
        pads[n + i] += max(0, reach - (ctx.shape(0)[2 + i] + pads[i] + pads[n + i]))
    ceil_mode = 0
    pooled = ctx.emit1(graph.AveragePoolOp(
        operands=[powered], result_types=[_typed(ctx, out)],
        properties={"kernel_shape": types.i64_array(kernel), "strides": types.i64_array(strides),
                    "pads": types.i64_array(pads), "ceil_mode": types.i64_attr(ceil_mode),
                    "count_include_pad": types.i64_attr(1),
                    **({"dilations": types.i64_array(dilations)} if any(d != 1 for d in dilations)
                       else {})}))
    summed = e.binary(graph.MulOp, pooled, ctx.scalar(float(math.prod(kernel)), e.el))
    if p == 1:
        return [summed]
    if p == 2:
        return [e.unary(graph.SqrtOp, summed)]
    return [e.binary(graph.PowOp, summed, ctx.scalar(1.0 / p, e.el))]


CONVERTERS: dict[str, Converter] = {
    "Resize": convert_resize,
    "Upsample": convert_resize,
    "ConvTranspose": convert_conv_transpose,
    "Col2Im": convert_col2im,
    "GridSample": convert_grid_sample,
    "AffineGrid": convert_affine_grid,
    "RoiAlign": convert_roi_align,
    "GatherElements": convert_gather_elements,
    "GatherND": convert_gather_nd,
    "ScatterElements": convert_scatter_elements,
    "Scatter": convert_scatter_elements,
    "ScatterND": convert_scatter_nd,
    "Tile": convert_tile,
    "DepthToSpace": convert_depth_to_space,
    "SpaceToDepth": convert_space_to_depth,
    "ReverseSequence": convert_reverse_sequence,
    "Compress": convert_compress,
    "NonZero": convert_non_zero,
    "CenterCropPad": convert_center_crop_pad,
    "InstanceNormalization": convert_instance_norm,
    "GroupNormalization": convert_group_norm,
    "MeanVarianceNormalization": convert_mvn,
    "LpPool": convert_lp_pool,
}
