"""Data movement used by CNN, detection and segmentation nets: Resize, Upsample, Gather/Scatter
Elements and ND, TensorScatter (KV-cache writes), Tile, DepthToSpace, SpaceToDepth, ReverseSequence, Compress, NonZero and
CenterCropPad (the layers themselves are in onnx_ops_vision, which shares `Emitter`).

Ops that ONNX defines as compositions are imported as that composition of graph ops
(DepthToSpace = Reshape/Transpose/Reshape, CenterCropPad = Slice/Pad, Compress of a constant
condition = Gather). Per-opset rules: Resize's scales/sizes/roi are inputs (constants here)
since 10/11, axes and antialias since 18; Resize-10 and Upsample are asymmetric with floor
rounding; Upsample's scales became an input in 9; Tile's repeats have been an input since 6;
Scatter (9-10) is ScatterElements without reduction.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np
from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, StringAttr, f64
from xdsl.ir import SSAValue

from onnxc.dialects import graph, graph_gather_scatter, graph_resize
from onnxc.dialects import graph_shapes as shapes
from onnxc.dialects.graph_base import sizes_attr
from onnxc.dialects.size_facts import require_at_least
from onnxc.dialects.symbolic_dims import Dim, SymDim, floordiv, sym_max, sym_min
from onnxc.frontend import onnx_types as types
from onnxc.frontend.batch_axes import sample_wise
from onnxc.frontend.onnx_context import NodeContext, Result, Tensor
from onnxc.frontend.onnx_ops_math import Converter


def ints_of_array(array: np.ndarray) -> list[int]:
    return [int(v) for v in np.asarray(array).reshape(-1)]


def normalized_axis(ctx: NodeContext, axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise ctx.invalid(f"axis {axis} out of range for rank {rank}")
    return axis % rank


def typed(ctx: NodeContext, shape, i: int = 0):
    return types.tensor_type(tuple(shape), ctx.element_type(i))


def _f64_array(values) -> DenseArrayBase:
    return DenseArrayBase.from_list(f64, [float(v) for v in values])


class Emitter:
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


def require_float(ctx: NodeContext) -> None:
    if not types.is_float(ctx.element_type(0)):
        raise ctx.unsupported(f"element type {ctx.element_type(0)} (float tensors only)")


# ---------------------------------------------------------------------- Resize / Upsample


def _resize_geometry(ctx: NodeContext) -> tuple[tuple, list[float], list[float], tuple | None]:
    """(result shape, per-axis scales, roi [begin..., end...], keep-aspect policy and
    requested sizes when they are symbolic) of Resize 10+ / Upsample."""
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
        roi = None  # only tf_crop_and_resize reads it: other modes ignore it, as ONNX says
        if ctx.attr("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize":
            roi_array = ctx.known(1) if ctx.has_input(1) else None
            if roi_array is not None and roi_array.size:
                roi = [float(v) for v in roi_array]
        scales_array = ctx.optional_constant(2, "scales")
        scales = (None if scales_array is None or scales_array.size == 0
                  else [float(s) for s in scales_array.reshape(-1)])
        sizes = None  # known at import, or computed in the run (run symbols)
        if ctx.has_input(3) and ctx.tensor(3).shape != (0,):
            sizes = ctx.sizes(3, "sizes")
        if (scales is None) == (sizes is None):
            raise ctx.invalid("exactly one of scales and sizes must be given")
    axes = ctx.ints("axes") if ctx.opset >= 18 else None
    axes = list(range(rank)) if axes is None else [normalized_axis(ctx, a, rank) for a in axes]
    given = scales if scales is not None else sizes
    if len(given) != len(axes):
        raise ctx.invalid(f"{len(given)} scales/sizes for {len(axes)} axes")
    full_roi = [0.0] * rank + [1.0] * rank
    if roi is not None:  # a constant roi; one computed in the run is an operand
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
            out[a] = _scaled(scales[i], x[a])
        return tuple(out), full_scales, full_roi, None
    for i, a in enumerate(axes):
        symbolic = isinstance(sizes[i], SymDim) or isinstance(x[a], SymDim)
        full_scales[a] = 0.0 if symbolic else sizes[i] / x[a]  # 0: output / input in the run
        out[a] = sizes[i]
    policy = ctx.attr("keep_aspect_ratio_policy", "stretch") if ctx.opset >= 18 else "stretch"
    if policy == "stretch":
        return tuple(out), full_scales, full_roi, None
    if policy not in graph_resize.ASPECT_POLICIES:
        raise ctx.invalid(f"unknown keep_aspect_ratio_policy '{policy}'")
    if any(isinstance(d, SymDim) for d in (*x, *sizes)):
        out, aspect = _aspect_sizes(ctx, x, axes, sizes, policy)
        return out, [0.0] * rank, full_roi, aspect
    picked = [full_scales[a] for a in axes]
    scale = min(picked) if policy == "not_larger" else max(picked)
    for a in axes:
        full_scales[a] = scale
        out[a] = int(scale * x[a] + 0.5)
    return tuple(out), full_scales, full_roi, None


def _aspect_sizes(ctx: NodeContext, x: tuple, axes: list[int], sizes: Sequence[Dim],
                  policy: str) -> tuple[tuple, tuple[str, list[Dim]]]:
    """keep_aspect_ratio_policy over symbolic sizes: every axis of the policy is scaled by
    s, the least (not_larger) or largest requested / input size, to round(s * input). Since
    rounding is monotone and the axis that picks s gets its requested size exactly, that is
    min (max) over the policy's axes j of round(wanted_j * x_a / x_j) =
    floordiv(2 wanted_j x_a + x_j, 2 x_j); the kernel takes s in the run (the result's
    shape, and per axis the requested size or -1)."""
    pick = sym_min if policy == "not_larger" else sym_max
    out = list(x)
    for i, a in enumerate(axes):
        require_at_least(x[a], 1, "keep_aspect_ratio_policy divides by the input size")
        out[a] = pick(*(sizes[i] if j == a else floordiv(2 * sizes[k] * x[a] + x[j], 2 * x[j])
                        for k, j in enumerate(axes)))
    wanted: list[Dim] = [-1] * len(x)
    for i, a in enumerate(axes):
        wanted[a] = sizes[i]
    return tuple(out), (policy, wanted)


def _run_time_roi(ctx: NodeContext, ctm: str) -> tuple[SSAValue | None, list[int]]:
    """tf_crop_and_resize's roi when it is computed in the run (boxes of a detector): the
    operand and the axes it covers ([begin..., end...] over `axes`, else every axis)."""
    if ctm != "tf_crop_and_resize" or not ctx.has_input(1) or ctx.known(1) is not None:
        return None, []
    rank = ctx.rank(0)
    axes = ctx.ints("axes") if ctx.opset >= 18 else None
    axes = list(range(rank)) if axes is None else [normalized_axis(ctx, a, rank) for a in axes]
    if not types.is_float(ctx.element_type(1)) or ctx.tensor(1).shape != (2 * len(axes),):
        raise ctx.invalid(f"roi of type {ctx.tensor(1).type} does not fit {len(axes)} axes")
    return ctx.operand(1), axes


def _samples_something(x: tuple, out: tuple) -> tuple:
    """An axis resized to a nonempty size must have input to sample (a guard where the
    sizes are symbolic: the kernels would read past an empty input)."""
    for d, n in zip(x, out, strict=True):
        if d != n:
            require_at_least(d, sym_min(n, 1), "Resize samples an empty axis")
    return out


def _scaled(scale: float, size: Dim) -> Dim:
    """floor(scale * size), for a symbolic size too: the float scale is exactly the
    fraction p / q (q a power of two), so it is floordiv(p * size, q)."""
    if isinstance(size, int):
        return int(scale * size)
    p, q = Fraction(scale).as_integer_ratio()
    return floordiv(p * size, q)


def convert_resize(ctx: NodeContext) -> list[Result]:
    legacy = ctx.op_type == "Upsample" or ctx.opset < 11
    mode = ctx.attr("mode", "nearest")
    if mode == "bilinear" and legacy:
        mode = "linear"
    if mode not in graph_resize.MODES:
        raise ctx.unsupported(f"mode '{mode}'")
    if mode != "nearest":
        require_float(ctx)
    ctm = "asymmetric" if legacy else ctx.attr("coordinate_transformation_mode", "half_pixel")
    nearest = "floor" if legacy else ctx.attr("nearest_mode", "round_prefer_floor")
    if ctm not in graph_resize.COORDINATE_MODES:
        raise ctx.unsupported(f"coordinate_transformation_mode '{ctm}'")
    if nearest not in graph_resize.NEAREST_MODES:
        raise ctx.unsupported(f"nearest_mode '{nearest}'")
    antialias = ctx.attr("antialias", 0) if ctx.opset >= 18 else 0
    if antialias and mode == "nearest":
        raise ctx.invalid("antialias needs mode linear or cubic")
    out, scales, roi, aspect = _resize_geometry(ctx)
    ctx.infer(_samples_something, ctx.shape(0), out)
    roi_input, roi_axes = _run_time_roi(ctx, ctm)
    op = graph_resize.ResizeOp(
        operands=[ctx.operand(0), roi_input],
        result_types=[typed(ctx, out)],
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
            **({} if aspect is None else {"aspect_policy": StringAttr(aspect[0]),
                                          "aspect_sizes": sizes_attr(aspect[1])}),
            **({} if roi_input is None else {"roi_axes": types.i64_array(roi_axes)}),
        },
    )
    return [ctx.emit1(op)]


# ---------------------------------------------------------------------- gather / scatter


def index_operand(ctx: NodeContext, i: int) -> SSAValue:
    if not types.is_float(ctx.element_type(i)) and str(ctx.element_type(i)) in ("i64", "i32"):
        return ctx.operand(i)
    raise ctx.unsupported(f"indices of element type {ctx.element_type(i)}")


def convert_gather_elements(ctx: NodeContext) -> list[Result]:
    axis = normalized_axis(ctx, ctx.attr("axis", 0), ctx.rank(0))
    op = graph_gather_scatter.GatherElementsOp(
        operands=[ctx.operand(0), index_operand(ctx, 1)],
        result_types=[typed(ctx, ctx.shape(1))], properties={"axis": types.i64_attr(axis)})
    return [ctx.emit1(op)]


def convert_gather_nd(ctx: NodeContext) -> list[Result]:
    x, i = ctx.shape(0), ctx.shape(1)
    b = ctx.attr("batch_dims", 0) if ctx.opset >= 12 else 0
    out = ctx.infer(lambda: i[:-1] + x[b + i[-1]:])
    op = graph_gather_scatter.GatherNDOp(
        operands=[ctx.operand(0), index_operand(ctx, 1)],
        result_types=[typed(ctx, out)], properties={"batch_dims": types.i64_attr(b)})
    return [ctx.emit1(op)]


def _reduction(ctx: NodeContext) -> str:
    reduction = ctx.attr("reduction", "none") if ctx.opset >= 16 else "none"
    if reduction not in graph_gather_scatter.REDUCTIONS:
        raise ctx.unsupported(f"reduction '{reduction}'")
    return reduction


def convert_scatter_elements(ctx: NodeContext) -> list[Result]:
    axis = normalized_axis(ctx, ctx.attr("axis", 0), ctx.rank(0))
    op = graph_gather_scatter.ScatterElementsOp(
        operands=[ctx.operand(0), index_operand(ctx, 1), ctx.operand(2)],
        result_types=[ctx.tensor(0).type],
        properties={"axis": types.i64_attr(axis), "reduction": StringAttr(_reduction(ctx))})
    return [ctx.emit1(op)]


def convert_scatter_nd(ctx: NodeContext) -> list[Result]:
    op = graph_gather_scatter.ScatterNDOp(
        operands=[ctx.operand(0), index_operand(ctx, 1), ctx.operand(2)],
        result_types=[ctx.tensor(0).type],
        properties={"reduction": StringAttr(_reduction(ctx))})
    return [ctx.emit1(op)]


def convert_tensor_scatter(ctx: NodeContext) -> list[Result]:
    mode = ctx.attr("mode", "linear")
    if mode not in ("linear", "circular"):
        raise ctx.invalid(f"unknown mode '{mode}'")
    rank = ctx.rank(0)
    axis = normalized_axis(ctx, ctx.attr("axis", -2), rank)
    if axis == 0:
        raise ctx.invalid("axis 0 is the batch axis")
    indices = index_operand(ctx, 2) if ctx.has_input(2) else None
    op = graph_gather_scatter.TensorScatterOp(
        operands=[ctx.operand(0), ctx.operand(1), indices], result_types=[ctx.tensor(0).type],
        properties={"axis": types.i64_attr(axis), "circular": types.i64_attr(mode == "circular")})
    return [ctx.emit1(op)]


# ---------------------------------------------------------------------- static data movement


def convert_tile(ctx: NodeContext) -> list[Result]:
    """Repeats from shape data are sizes, computed ones run symbols (NodeContext.sizes)."""
    repeats = ctx.sizes(1, "repeats")
    x = ctx.shape(0)
    if len(repeats) != len(x) or min((r for r in repeats if isinstance(r, int)),
                                     default=0) < 0:
        raise ctx.invalid(f"repeats {repeats} do not fit rank {len(x)}")
    out = tuple(d * r for d, r in zip(x, repeats))
    op = graph_gather_scatter.TileOp(operands=[ctx.operand(0)], result_types=[typed(ctx, out)],
                              properties={"repeats": sizes_attr(repeats)})
    return [ctx.emit1(op)]


def convert_depth_to_space(ctx: NodeContext) -> list[Result]:
    """The ONNX definition: reshape to 6-D, transpose, reshape back."""
    n, c, h, w = ctx.shape(0)
    b = ctx.attr("blocksize")
    if b <= 0 or c % (b * b):
        raise ctx.invalid(f"{c} channels are not divisible by blocksize^2 = {b * b}")
    e = Emitter(ctx)
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
    e = Emitter(ctx)
    perm = (0, 3, 5, 1, 2, 4) if mode == "DCR" else (0, 1, 3, 5, 2, 4)
    y = e.transpose(e.reshape(ctx.operand(0), (n, c, h // b, b, w // b, b)), perm)
    return [e.reshape(y, (n, c * b * b, h // b, w // b))]


def convert_reverse_sequence(ctx: NodeContext) -> list[Result]:
    rank = ctx.rank(0)
    b = normalized_axis(ctx, ctx.attr("batch_axis", 1), rank)
    t = normalized_axis(ctx, ctx.attr("time_axis", 0), rank)
    op = graph_gather_scatter.ReverseSequenceOp(
        operands=[ctx.operand(0), index_operand(ctx, 1)], result_types=[ctx.tensor(0).type],
        properties={"batch_axis": types.i64_attr(b), "time_axis": types.i64_attr(t)})
    return [ctx.emit1(op)]


def convert_compress(ctx: NodeContext) -> list[Result]:
    """A Gather (of the flattened input when there is no axis) of the positions the
    condition selects: fixed ones for a constant condition, else NonZero's, whose count
    the run defines. A condition longer than the axis selects nothing past its end (as
    onnxruntime does; numpy's compress would raise)."""
    x = ctx.shape(0)
    e = Emitter(ctx)
    data = ctx.operand(0)
    if ctx.has_attr("axis"):
        axis = normalized_axis(ctx, ctx.attr("axis"), len(x))
    else:
        axis = 0
        data = e.reshape(data, (math.prod(x),))
    if ctx.tensor(1).array is None:
        flat = e.reshape(ctx.operand(1), (math.prod(ctx.shape(1)),))
        length, size = graph.shape_of(flat)[0], graph.shape_of(data)[axis]
        if not (isinstance(length, int) and isinstance(size, int) and length <= size):
            # positions past the axis are ignored (onnxruntime): the condition's first ones
            end = sym_min(length, size)
            flat = ctx.emit1(graph.SliceOp(
                operands=[flat], result_types=[typed(ctx, (end,), 1)],
                properties={"starts": types.i64_array([0]), "ends": sizes_attr([end]),
                            "axes": types.i64_array([0]), "steps": types.i64_array([1])}))
        picked = positions(ctx, flat)
        out = shapes.gather_shape(graph.shape_of(data), graph.shape_of(picked), axis)
        return [ctx.emit1(graph.GatherOp(operands=[data, picked], result_types=[typed(ctx, out)],
                                         properties={"axis": types.i64_attr(axis)}))]
    condition = np.asarray(ctx.constant(1, "condition")).reshape(-1).astype(bool)
    size = graph.shape_of(data)[axis]
    picked = np.nonzero(condition[:size])[0].astype(np.int64)  # past the axis: ignored
    out = shapes.gather_shape(graph.shape_of(data), picked.shape, axis)
    op = graph.GatherOp(operands=[data, ctx.materialize(Tensor.of_array(picked))],
                        result_types=[typed(ctx, out)], properties={"axis": types.i64_attr(axis)})
    return [ctx.emit1(op)]


def convert_non_zero(ctx: NodeContext) -> list[Result]:
    """Constant data gives a constant; otherwise the count of nonzero elements is a size
    the run defines (graph.nonzero, dialects/graph_dynamic.py)."""
    x = ctx.tensor(0)
    if x.array is not None and not x.symbolic_data:
        return [np.array(np.nonzero(np.asarray(x.array)), dtype=np.int64)
                .reshape(np.ndim(x.array), -1)]
    shape = ctx.shape(0)
    if not shape:
        raise ctx.unsupported("NonZero of a scalar")
    return [non_zero(ctx, ctx.operand(0))]


def non_zero(ctx: NodeContext, x: SSAValue) -> SSAValue:
    """graph.nonzero of `x`: [rank, count], its count a run symbol of this node."""
    count = SymDim.symbol(ctx.run_symbol("count"))
    return ctx.emit1(graph.NonZeroOp(
        operands=[x], result_types=[types.tensor_type((len(graph.shape_of(x)), count),
                                                      types.element_type(types.TP.INT64))],
        properties={"defines": ArrayAttr([StringAttr(str(count))])}))


def positions(ctx: NodeContext, mask: SSAValue) -> SSAValue:
    """The positions where the 1-D `mask` is nonzero, [count]."""
    found = non_zero(ctx, mask)
    return Emitter(ctx).reshape(found, graph.shape_of(found)[1:])


def convert_center_crop_pad(ctx: NodeContext) -> list[Result]:
    """Crop (Slice) the axes that are too large, zero-pad (Pad) those that are too small,
    both centred with the extra element at the end (as ONNX's definition does)."""
    x = ctx.shape(0)
    rank = len(x)
    target = ints_of_array(ctx.constant(1, "shape"))
    axes = [normalized_axis(ctx, a, rank) for a in (ctx.ints("axes") or range(rank))]
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
            operands=[value], result_types=[typed(ctx, shape)],
            properties={"starts": types.i64_array(starts), "ends": types.i64_array(ends),
                        "axes": types.i64_array(sliced), "steps": types.i64_array([1] * len(sliced))}))
    if any(pads):
        shape = shapes.pad_shape(graph.shape_of(value), pads)
        value = ctx.emit1(graph.PadOp(
            operands=[value], result_types=[typed(ctx, shape)],
            properties={"pads": types.i64_array(pads), "mode": StringAttr("constant"),
                        "value": types.float_attr(0.0, ctx.element_type(0))}))
    if value is ctx.tensor(0).value or not (sliced or any(pads)):
        value = ctx.emit1(graph.IdentityOp(operands=[value], result_types=[ctx.tensor(0).type]))
    return [value]


CONVERTERS: dict[str, Converter] = {
    "Resize": convert_resize,
    "Upsample": convert_resize,
    "GatherElements": convert_gather_elements,
    "GatherND": convert_gather_nd,
    "ScatterElements": convert_scatter_elements,
    "Scatter": convert_scatter_elements,
    "ScatterND": convert_scatter_nd,
    "TensorScatter": convert_tensor_scatter,
    "Tile": convert_tile,
    "DepthToSpace": sample_wise(convert_depth_to_space),
    "SpaceToDepth": sample_wise(convert_space_to_depth),
    "ReverseSequence": convert_reverse_sequence,
    "Compress": convert_compress,
    "NonZero": convert_non_zero,
    "CenterCropPad": convert_center_crop_pad,
}
