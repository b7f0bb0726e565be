"""CNN, detection and segmentation layers: ConvTranspose, Col2Im, GridSample, AffineGrid,
RoiAlign, DeformConv, MaxPool's Indices output, MaxUnpool, the normalizations
InstanceNormalization, GroupNormalization and MeanVarianceNormalization, LpPool and
GlobalLpPool.

ConvTranspose resolves auto_pad/output_shape/output_padding into explicit pads and the
result type (as onnx.reference does) and becomes a (grouped) GEMM plus Col2Im; AffineGrid is
theta times a constant base grid (one MatMul); the normalizations are ReduceMean arithmetic,
LpPool is |x|^p through a summing AveragePool and GlobalLpPool |x|^p through a ReduceSum,
so they profit from the existing kernels and rewrites. Per-opset rules:
GroupNormalization's scale/bias are per group in 18 and per channel since 21; GridSample-16
names its modes bilinear/bicubic and samples 4-D inputs only; RoiAlign before 16 uses
output_half_pixel coordinates.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import ArrayAttr, StringAttr, f64, i64
from xdsl.ir import SSAValue

from onnxc.dialects import graph, graph_vision
from onnxc.dialects import graph_shapes as shapes
from onnxc.dialects.dense_data import element_dtype, from_numpy
from onnxc.dialects.graph_base import sizes_attr
from onnxc.dialects.size_facts import require_at_least
from onnxc.dialects.symbolic_dims import SymDim, floordiv, sym_max
from onnxc.frontend import onnx_ops_nn
from onnxc.frontend import onnx_types as types
from onnxc.frontend.batch_axes import sample_wise
from onnxc.frontend.onnx_context import NodeContext, Result, Tensor
from onnxc.frontend.onnx_ops_math import Converter
from onnxc.frontend.onnx_ops_movement import (
    Emitter,
    index_operand,
    ints_of_array,
    normalized_axis,
    require_float,
    typed,
)
from onnxc.frontend.onnx_ops_nn import _window
from onnxc.frontend.onnx_ops_reduce import reduce

# ---------------------------------------------------------------------- ConvTranspose


def convert_conv_transpose(ctx: NodeContext) -> list[Result]:
    """ConvTranspose with its output size resolved into pads. `output_shape` sets the size
    as onnxruntime does (explicit pads are then ignored): total = full - target is split
    over the ends (SAME_UPPER: the smaller half first, else the larger), and a negative
    total extends the end with zeros (plus the bias). Where that crop or extension is not
    a constant within one stride (symbolic input sizes, or a long extension), the full
    result is computed and padded by the run-time amounts (negative pads crop)."""
    require_float(ctx)
    x, w = ctx.shape(0), ctx.shape(1)
    n = len(x) - 2
    kernel = list(w[2:])
    if ctx.has_attr("kernel_shape") and ctx.ints("kernel_shape") != kernel:
        raise ctx.invalid(f"kernel_shape {ctx.ints('kernel_shape')} differs from weight {w}")
    group = ctx.attr("group", 1)
    strides = ctx.ints("strides") or [1] * n
    dilations = ctx.ints("dilations") or [1] * n
    out_pad = ctx.ints("output_padding") or [0] * n
    pads: list = ctx.ints("pads") or [0] * (2 * n)
    if not len(strides) == len(dilations) == len(out_pad) == n or len(pads) != 2 * n:
        raise ctx.invalid("strides/dilations/output_padding/pads do not fit the input rank")
    auto_pad = ctx.attr("auto_pad", "NOTSET")
    full = [strides[i] * (x[2 + i] - 1) + out_pad[i] + (kernel[i] - 1) * dilations[i] + 1
            for i in range(n)]
    target = ctx.ints("output_shape")
    if target is not None and len(target) > n:
        target = target[-n:]
    same = auto_pad in ("SAME_UPPER", "SAME_LOWER") and not ctx.has_attr("pads")
    if same:  # as onnx.reference and onnxruntime do: split the excess over the size
        target = target or [x[2 + i] * strides[i] for i in range(n)]
    if target is not None:
        total = [full[i] - target[i] for i in range(n)]
        begin = [floordiv(t, 2) if auto_pad == "SAME_UPPER" else t - floordiv(t, 2)
                 for t in total]
        spatial = list(target)
        if all(isinstance(t, int) for t in total):
            pads = [max(b, 0) for b in begin] + [max(t - b, 0) for t, b in zip(total, begin)]
    else:
        if auto_pad == "VALID":
            pads = [0] * (2 * n)
        spatial = [full[i] - pads[i] - pads[i + n] for i in range(n)]
    if target is not None and not (all(isinstance(t, int) for t in total) and _fits(
            spatial, full, out_pad, pads, strides, dilations)):
        return [_conv_transpose_cropped(ctx, full, out_pad, begin, target, strides,
                                        dilations, group)]
    if min(pads, default=0) < 0 or not _fits(spatial, full, out_pad, pads, strides, dilations):
        raise ctx.unsupported(f"output size {spatial} for pads {pads} and strides {strides}")
    return [_conv_transpose(ctx, (x[0], w[1] * group, *spatial), strides, pads, dilations,
                            group, bias=True)]


def _fits(spatial: list, full: list, out_pad: list[int], pads: list, strides: list[int],
          dilations: list[int]) -> bool:
    """Whether the kernels make `spatial` from these pads: past the padded full size by
    less than a stride or dilation (what output_padding may add)."""
    n = len(spatial)
    return all(0 <= spatial[i] - (full[i] - out_pad[i] - pads[i] - pads[i + n])
               < max(strides[i], dilations[i]) for i in range(n))


def _conv_transpose(ctx: NodeContext, out: tuple, strides: list[int], pads: list[int],
                    dilations: list[int], group: int, bias: bool) -> SSAValue:
    """The GEMM + Col2Im form where the image's blocks are the input's pixels, else the
    direct scatter kernel; `bias`: add the node's bias (when it has one)."""
    kernel = list(ctx.shape(1)[2:])
    blocks = graph_vision.col2im_blocks(out[2:], kernel, strides, pads, dilations)
    if list(blocks) == list(ctx.shape(0)[2:]):
        return _conv_transpose_gemm(ctx, out, kernel, strides, pads, dilations, group, bias)
    op = graph_vision.ConvTransposeOp(
        operands=[ctx.operand(0), ctx.operand(1),
                  ctx.operand(2) if bias and ctx.has_input(2) else None],
        result_types=[typed(ctx, out)],
        properties={"strides": types.i64_array(strides), "pads": types.i64_array(pads),
                    "dilations": types.i64_array(dilations), "group": types.i64_attr(group)},
    )
    return ctx.emit1(op)


def _conv_transpose_cropped(ctx: NodeContext, full: list, out_pad: list[int], begin: list,
                            target: list[int], strides: list[int], dilations: list[int],
                            group: int) -> SSAValue:
    """The full result without padding, cropped by max(begin, 0) at the start and cut or
    zero-extended to `target` at the end (graph.pad's negative pads crop; its sizes are
    taken in the run), then the bias. The output_padding rows no tap reaches are part of
    that zero extension."""
    x, w = ctx.shape(0), ctx.shape(1)
    n = len(target)
    bare = [full[i] - out_pad[i] for i in range(n)]
    y = _conv_transpose(ctx, (x[0], w[1] * group, *bare), strides, [0] * (2 * n), dilations,
                        group, bias=False)
    crop = [sym_max(b, 0) for b in begin]
    pads = [0, 0, *(-c for c in crop), 0, 0,
            *(target[i] - bare[i] + crop[i] for i in range(n))]
    y = ctx.emit1(graph.PadOp(
        operands=[y], result_types=[typed(ctx, (x[0], w[1] * group, *target))],
        properties={"pads": sizes_attr(pads), "mode": StringAttr("constant"),
                    "value": types.float_attr(0.0, f64)}))
    if ctx.has_input(2):
        y = Emitter(ctx).binary(graph.AddOp, y, Emitter(ctx).reshape(
            ctx.operand(2), (w[1] * group,) + (1,) * n))
    return y


def _conv_transpose_gemm(ctx: NodeContext, out, kernel, strides, pads, dilations,
                         group: int, bias: bool) -> SSAValue:
    """ConvTranspose as columns = W^T x (per image and group one GEMM, [M/g * k, C/g] x
    [C/g, pixels]) scattered back into the image by Col2Im: the GEMM does the arithmetic at
    full speed and no large tensor is transposed. Valid when the image's blocks are the
    input's pixels (output_padding < stride); otherwise the direct scatter kernel runs."""
    x, w = ctx.shape(0), ctx.shape(1)
    n, c = x[:2]
    pixels, taps, mg = math.prod(x[2:]), math.prod(kernel), w[1]
    cg = c // group
    e = Emitter(ctx)
    weight = ctx.tensor(1).array
    if weight is not None:  # transposed here once rather than by a graph op
        w_t = ctx.materialize(Tensor.of_array(np.ascontiguousarray(
            weight.reshape(group, cg, mg * taps).transpose(0, 2, 1))))
    else:
        w_t = e.transpose(e.reshape(ctx.operand(1), (group, cg, mg * taps)), (0, 2, 1))
    cols = ctx.emit1(graph.MatMulOp(
        operands=[w_t, e.reshape(ctx.operand(0), (n, group, cg, pixels))],
        result_types=[typed(ctx, (n, group, mg * taps, pixels))]))
    y = ctx.emit1(graph_vision.Col2ImOp(
        operands=[e.reshape(cols, (n, group * mg * taps, pixels))],
        result_types=[typed(ctx, out)],
        properties={"block_shape": types.i64_array(kernel), "strides": types.i64_array(strides),
                    "pads": types.i64_array(pads), "dilations": types.i64_array(dilations)}))
    if bias and ctx.has_input(2):
        y = e.binary(graph.AddOp, y, e.reshape(ctx.operand(2), (group * mg,) + (1,) * len(kernel)))
    return y


def convert_col2im(ctx: NodeContext) -> list[Result]:
    require_float(ctx)
    image = ints_of_array(ctx.constant(1, "image_shape"))
    block = ints_of_array(ctx.constant(2, "block_shape"))
    n = len(image)
    strides = ctx.ints("strides") or [1] * n
    dilations = ctx.ints("dilations") or [1] * n
    pads = ctx.ints("pads") or [0] * (2 * n)
    x = ctx.shape(0)
    if len(block) != n or len(x) != 3 or x[1] % max(1, math.prod(block)):
        raise ctx.invalid(f"input {x} does not hold blocks {block} of an image {image}")
    out = (x[0], x[1] // math.prod(block), *image)
    op = graph_vision.Col2ImOp(
        operands=[ctx.operand(0)], result_types=[typed(ctx, out)],
        properties={"block_shape": types.i64_array(block), "strides": types.i64_array(strides),
                    "pads": types.i64_array(pads), "dilations": types.i64_array(dilations)})
    return [ctx.emit1(op)]


def convert_grid_sample(ctx: NodeContext) -> list[Result]:
    require_float(ctx)
    if ctx.element_type(1) != ctx.element_type(0):
        raise ctx.unsupported("a grid whose element type differs from the input's")
    mode = ctx.attr("mode", "linear" if ctx.opset >= 20 else "bilinear")
    mode = {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
    padding = ctx.attr("padding_mode", "zeros")
    if mode not in graph_vision.GRID_MODES or padding not in graph_vision.GRID_PADDINGS:
        raise ctx.invalid(f"unknown mode '{mode}' or padding_mode '{padding}'")
    x, g = ctx.shape(0), ctx.shape(1)
    if ctx.opset < 20 and len(x) != 4:
        raise ctx.invalid(f"GridSample-{ctx.opset} samples 4-D inputs, got rank {len(x)}")
    out = (x[0], x[1], *g[1:-1])
    op = graph_vision.GridSampleOp(
        operands=[ctx.operand(0), ctx.operand(1)], result_types=[typed(ctx, out)],
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
    require_float(ctx)
    size = ints_of_array(ctx.constant(1, "size"))
    n, dims = ctx.shape(0)[0], ctx.shape(0)[1]
    spatial = size[2:]
    if len(spatial) != dims or ctx.shape(0)[2] != dims + 1 or size[0] != n:
        raise ctx.invalid(f"theta {ctx.shape(0)} does not fit size {size}")
    ctx.check_size((math.prod(spatial), dims + 1), 8, "its base grid")  # float64 here
    base = _base_grid(spatial, bool(ctx.attr("align_corners", 0)))
    dtype = element_dtype(ctx.element_type(0))
    base_t = ctx.materialize(Tensor.of_array(np.ascontiguousarray(base.T).astype(dtype)))
    e = Emitter(ctx)
    points = math.prod(spatial)
    grid = ctx.emit1(graph.MatMulOp(operands=[ctx.operand(0), base_t],
                                    result_types=[typed(ctx, (n, dims, points))]))
    return [e.reshape(e.transpose(grid, (0, 2, 1)), (n, *spatial, dims))]


def convert_roi_align(ctx: NodeContext) -> list[Result]:
    require_float(ctx)
    mode = ctx.attr("mode", "avg")
    if mode not in ("avg", "max"):
        raise ctx.invalid(f"unknown mode '{mode}'")
    ctm = ctx.attr("coordinate_transformation_mode", "half_pixel") if ctx.opset >= 16 \
        else "output_half_pixel"
    if ctm not in ("half_pixel", "output_half_pixel"):
        raise ctx.invalid(f"unknown coordinate_transformation_mode '{ctm}'")
    out = (ctx.shape(1)[0], ctx.shape(0)[1], ctx.attr("output_height", 1),
           ctx.attr("output_width", 1))
    op = graph_vision.RoiAlignOp(
        operands=[ctx.operand(0), ctx.operand(1), index_operand(ctx, 2)],
        result_types=[typed(ctx, out)],
        properties={"mode": StringAttr(mode),
                    "sampling_ratio": types.i64_attr(ctx.attr("sampling_ratio", 0)),
                    "spatial_scale": types.float_attr(ctx.attr("spatial_scale", 1.0), f64),
                    "half_pixel": types.i64_attr(int(ctm == "half_pixel"))})
    return [ctx.emit1(op)]


# ---------------------------------------------------------------------- normalizations


def convert_instance_norm(ctx: NodeContext) -> list[Result]:
    require_float(ctx)
    x = ctx.shape(0)
    e = Emitter(ctx)
    y = e.normalize(ctx.operand(0), list(range(2, len(x))), ctx.attr("epsilon", 1e-5))
    per_channel = (x[1],) + (1,) * (len(x) - 2)
    y = e.binary(graph.MulOp, y, e.reshape(ctx.operand(1), per_channel))
    return [e.binary(graph.AddOp, y, e.reshape(ctx.operand(2), per_channel))]


def convert_group_norm(ctx: NodeContext) -> list[Result]:
    require_float(ctx)
    x = ctx.shape(0)
    groups = ctx.attr("num_groups")
    n, c = x[0], x[1]
    if groups <= 0 or c % groups:
        raise ctx.invalid(f"{c} channels are not divisible into {groups} groups")
    e = Emitter(ctx)
    grouped = e.reshape(ctx.operand(0), (n, groups, (c // groups) * math.prod(x[2:])))
    y = e.reshape(e.normalize(grouped, [2], ctx.attr("epsilon", 1e-5)), x)
    scale, bias = ctx.operand(1), ctx.operand(2)
    if ctx.opset < 21:  # one scale/bias per group: repeat it for the group's channels
        def per_group(v: SSAValue) -> SSAValue:
            v = e.reshape(v, (groups, 1))
            ones = ctx.emit1(graph.ConstantOfShapeOp(
                properties={"value": from_numpy(np.ones((1,), np.float32))},
                result_types=[types.tensor_type((groups, c // groups), e.el)]))
            return e.binary(graph.MulOp, v, ones)
        scale, bias = per_group(scale), per_group(bias)
    per_channel = (c,) + (1,) * (len(x) - 2)
    y = e.binary(graph.MulOp, y, e.reshape(scale, per_channel))
    return [e.binary(graph.AddOp, y, e.reshape(bias, per_channel))]


def convert_mvn(ctx: NodeContext) -> list[Result]:
    require_float(ctx)
    rank = ctx.rank(0)
    axes = sorted({normalized_axis(ctx, a, rank) for a in (ctx.ints("axes") or [0, 2, 3])})
    e = Emitter(ctx)
    # the ONNX function body: (X - E[X]) / (sqrt(E[X^2] - E[X]^2) + 1e-9)
    x = ctx.operand(0)
    mean = e.mean(x, axes)
    var = e.binary(graph.SubOp, e.mean(e.binary(graph.MulOp, x, x), axes),
                   e.binary(graph.MulOp, mean, mean))
    std = e.binary(graph.AddOp, e.unary(graph.SqrtOp, var), ctx.scalar(1e-9, e.el))
    return [e.binary(graph.DivOp, e.binary(graph.SubOp, x, mean), std)]


def convert_lp_pool(ctx: NodeContext) -> list[Result]:
    """(sum over the window of |x|^p)^(1/p): a zero-padded AveragePool times the window."""
    require_float(ctx)
    kernel = ctx.ints("kernel_shape")
    if kernel is None:
        raise ctx.invalid("required attribute 'kernel_shape' is missing")
    p = ctx.attr("p", 2)
    strides, pads, dilations = _window(ctx, kernel, symbolic_pads=True)
    ceil_mode = ctx.attr("ceil_mode", 0)
    e = Emitter(ctx)
    powered = _lp_powered(ctx, e, p)
    n = len(kernel)
    x_shape = ctx.shape(0)
    if not all(isinstance(q, int) for q in pads):  # SAME over symbolic sizes: pad first
        powered, x_shape = onnx_ops_nn._pad(ctx, powered, x_shape, pads, 0.0)
        pads = [0] * (2 * n)
    out = ctx.infer(shapes.pool_output_shape, x_shape, kernel, strides, pads, dilations,
                    bool(ceil_mode))
    # a ceil-mode window that runs past the end pad would count fewer taps than the kernel
    # has: extend the end pads instead (zeros add nothing to the sum)
    pads = list(pads)
    for i in range(n if ceil_mode else 0):
        reach = (out[2 + i] - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1
        pads[n + i] += sym_max(0, reach - (x_shape[2 + i] + pads[i] + pads[n + i]))
    ceil_mode = 0
    if not all(isinstance(q, int) for q in pads):  # the extension over symbolic sizes
        powered, _ = onnx_ops_nn._pad(ctx, powered, x_shape, pads, 0.0)
        pads = [0] * (2 * n)
    pooled = ctx.emit1(graph.AveragePoolOp(
        operands=[powered], result_types=[typed(ctx, out)],
        properties={"kernel_shape": types.i64_array(kernel), "strides": types.i64_array(strides),
                    "pads": types.i64_array(pads), "ceil_mode": types.i64_attr(ceil_mode),
                    "count_include_pad": types.i64_attr(1),
                    **({"dilations": types.i64_array(dilations)} if any(d != 1 for d in dilations)
                       else {})}))
    summed = e.binary(graph.MulOp, pooled, ctx.scalar(float(math.prod(kernel)), e.el))
    return [_lp_root(ctx, e, summed, p)]


def _lp_powered(ctx: NodeContext, e: Emitter, p: int) -> SSAValue:
    """|x|^p of the node's input (x*x for p = 2: exact, and no pow)."""
    x = ctx.operand(0)
    if p == 2:
        return e.binary(graph.MulOp, x, x)
    return e.binary(graph.PowOp, e.unary(graph.AbsOp, x), ctx.scalar(float(p), e.el))


def _lp_root(ctx: NodeContext, e: Emitter, summed: SSAValue, p: int) -> SSAValue:
    """summed^(1/p) (sqrt for p = 2)."""
    if p == 1:
        return summed
    if p == 2:
        return e.unary(graph.SqrtOp, summed)
    return e.binary(graph.PowOp, summed, ctx.scalar(1.0 / p, e.el))


def convert_global_lp_pool(ctx: NodeContext) -> list[Result]:
    """(sum over every spatial position of |x|^p)^(1/p) per sample and channel: a ReduceSum
    over the axes after the first two, kept (N, C, 1, ..., 1), over any spatial size."""
    require_float(ctx)
    p = ctx.attr("p", 2)
    if not isinstance(p, int) or p < 1:
        raise ctx.invalid(f"attribute 'p' must be a positive integer, got {p!r}")
    rank = len(ctx.shape(0))
    if rank < 3:
        raise ctx.invalid(f"input must have rank 3 or more (N, C, spatial...), got {rank}")
    e = Emitter(ctx)
    summed = reduce(ctx, graph.ReduceSumOp, _lp_powered(ctx, e, p), list(range(2, rank)), True)
    return [_lp_root(ctx, e, summed, p)]


def convert_max_pool(ctx: NodeContext) -> list[Result]:
    """MaxPool whose Indices output is used; without it, onnx_ops_nn's converter."""
    if not ctx.output_used(1):
        return onnx_ops_nn.convert_max_pool(ctx)
    require_float(ctx)
    kernel = ctx.ints("kernel_shape")
    if kernel is None:
        raise ctx.invalid("required attribute 'kernel_shape' is missing")
    strides, pads, dilations = _window(ctx, kernel, symbolic_pads=True)
    ceil_mode = ctx.attr("ceil_mode", 0)
    storage = ctx.attr("storage_order", 0)
    n = len(kernel)
    x, x_shape, begin = ctx.operand(0), ctx.shape(0), [0] * n
    if not all(isinstance(p, int) for p in pads):  # SAME over symbolic sizes: pad first
        x, x_shape = onnx_ops_nn._pad(ctx, x, x_shape, pads, onnx_ops_nn._lowest(ctx))
        begin, pads = list(pads[:n]), [0] * (2 * n)
    out = ctx.infer(shapes.pool_output_shape, x_shape, kernel, strides, pads, dilations,
                    bool(ceil_mode))
    op = graph_vision.MaxPoolIndicesOp(
        operands=[x],
        result_types=[typed(ctx, out), types.tensor_type(out, i64)],
        properties={"kernel_shape": types.i64_array(kernel), "strides": types.i64_array(strides),
                    "pads": types.i64_array(pads), "dilations": types.i64_array(dilations),
                    "ceil_mode": types.i64_attr(ceil_mode),
                    "storage_order": types.i64_attr(storage)})
    values, indices = ctx.emit(op).results
    if x_shape != ctx.shape(0):
        indices = _unpadded(ctx, indices, x_shape, ctx.shape(0), begin, storage)
    return [values, indices]


def _unpadded(ctx: NodeContext, indices: SSAValue, padded: tuple, x: tuple, begin: list,
              storage: int) -> SSAValue:
    """Flat indices into the padded input as indices into `x`: each split into (image *
    channel, position per spatial axis), the position moved back by the begin pad, joined
    again over x's sizes (storage_order 1: the spatial axes column-major)."""
    e = Emitter(ctx)
    e.el = i64

    def const(d) -> SSAValue:
        return ctx.materialize(Tensor.of_array(np.array(d, dtype=object)))

    def places(sizes) -> list:
        order = range(len(sizes)) if storage else reversed(range(len(sizes)))
        place, acc = [0] * len(sizes), 1
        for d in order:
            place[d], acc = acc, acc * sizes[d]
        return place

    spatial, shifted = padded[2:], x[2:]
    plane = math.prod(spatial)
    image = e.binary(graph.DivOp, indices, const(plane))
    rest = e.binary(graph.SubOp, indices, e.binary(graph.MulOp, image, const(plane)))
    result = e.binary(graph.MulOp, image, const(math.prod(shifted)))
    from_place, to_place = places(spatial), places(shifted)
    for d in (range(len(spatial) - 1, -1, -1) if storage else range(len(spatial))):
        at = e.binary(graph.DivOp, rest, const(from_place[d]))
        rest = e.binary(graph.SubOp, rest, e.binary(graph.MulOp, at, const(from_place[d])))
        moved = e.binary(graph.SubOp, at, const(begin[d]))
        result = e.binary(graph.AddOp, result, e.binary(graph.MulOp, moved, const(to_place[d])))
    return result


def convert_max_unpool(ctx: NodeContext) -> list[Result]:
    x = ctx.shape(0)
    kernel = ctx.ints("kernel_shape")
    n = len(x) - 2
    strides = ctx.ints("strides") or [1] * n
    pads = ctx.ints("pads") or [0] * (2 * n)
    if kernel is None or len(kernel) != n:
        raise ctx.invalid(f"kernel_shape {kernel} does not fit rank {len(x)}")
    unpooled = [*x[:2], *((x[2 + i] - 1) * strides[i] - pads[i] - pads[n + i] + kernel[i]
                          for i in range(n))]
    out = unpooled
    if ctx.has_input(2):
        out = ints_of_array(ctx.constant(2, "output_shape"))
        try:  # symbolic input sizes: a guard that the run's unpooled shape fits
            if len(out) != len(x):
                raise ValueError(f"output_shape {out} does not fit rank {len(x)}")
            for a, b in zip(unpooled, out):
                require_at_least(b, a, f"output_shape {out} smaller than the unpooled "
                                       f"{unpooled}")
        except ValueError as err:
            raise ctx.unsupported(str(err)) from err
    op = graph_vision.MaxUnpoolOp(
        operands=[ctx.operand(0), index_operand(ctx, 1)], result_types=[typed(ctx, out)],
        properties={"unpooled": sizes_attr(unpooled)})
    return [ctx.emit1(op)]


def convert_deform_conv(ctx: NodeContext) -> list[Result]:
    """Sampled columns [N, C * k, P] (graph.deform_columns), then per group a MatMul with
    the weight [G, M / G, C / G * k], plus the bias."""
    require_float(ctx)
    x, w, off = ctx.shape(0), ctx.shape(1), ctx.shape(2)
    if len(x) != 4:
        raise ctx.unsupported(f"DeformConv of a rank-{len(x)} input (2-D only)")
    kernel = list(w[2:])
    group, offset_group = ctx.attr("group", 1), ctx.attr("offset_group", 1)
    strides = ctx.ints("strides") or [1, 1]
    dilations = ctx.ints("dilations") or [1, 1]
    pads = ctx.ints("pads") or [0, 0, 0, 0]
    n, c = x[:2]
    m = w[0]
    taps = math.prod(kernel)
    if c != w[1] * group or m % group:
        raise ctx.invalid(f"weight {w} does not fit input {x} with {group} groups")
    points = off[2] * off[3]
    mask = ctx.operand(4) if ctx.has_input(4) else None
    cols = ctx.emit1(graph_vision.DeformColumnsOp(
        operands=[ctx.operand(0), ctx.operand(2), mask],
        result_types=[typed(ctx, (n, c * taps, points))],
        properties={"kernel_shape": types.i64_array(kernel), "strides": types.i64_array(strides),
                    "pads": types.i64_array(pads), "dilations": types.i64_array(dilations),
                    "offset_group": types.i64_attr(offset_group)}))
    e = Emitter(ctx)
    weight = e.reshape(ctx.operand(1), (group, m // group, w[1] * taps))
    cols = e.reshape(cols, (n, group, w[1] * taps, points))
    y = ctx.emit1(graph.MatMulOp(operands=[weight, cols],
                                 result_types=[typed(ctx, (n, group, m // group, points))]))
    y = e.reshape(y, (n, m, off[2], off[3]))
    if ctx.has_input(3):
        y = e.binary(graph.AddOp, y, e.reshape(ctx.operand(3), (m, 1, 1)))
    return [y]


def convert_non_max_suppression(ctx: NodeContext) -> list[Result]:
    """The kept boxes' count is a size the run defines (graph_dynamic.py); the optional
    scalar inputs become one-element tensors (max_output 0 and IoU 0 when absent, as ONNX
    says; no score filter without a threshold)."""
    boxes, scores = ctx.shape(0), ctx.shape(1)
    if len(boxes) != 3 or len(scores) != 3:
        raise ctx.invalid(f"boxes {list(boxes)} and scores {list(scores)} must be rank 3")
    if not types.is_float(ctx.element_type(0)) or ctx.element_type(1) != ctx.element_type(0):
        raise ctx.unsupported(f"boxes and scores of {ctx.element_type(0)} and "
                              f"{ctx.element_type(1)}")
    center = ctx.attr("center_point_box", 0)
    if center not in (0, 1):
        raise ctx.invalid(f"center_point_box {center} must be 0 or 1")
    e = Emitter(ctx)

    def one(i: int, default, dtype) -> SSAValue:
        if ctx.has_input(i):
            if int(np.prod(ctx.shape(i))) != 1:
                raise ctx.invalid(f"input {i} must hold one value, not {list(ctx.shape(i))}")
            return e.reshape(ctx.operand(i), (1,))
        return ctx.materialize(Tensor.of_array(np.array([default], dtype)))

    el = element_dtype(ctx.element_type(0))
    count = ctx.run_symbol("selected")
    op = graph.NonMaxSuppressionOp(
        operands=[ctx.operand(0), ctx.operand(1), one(2, 0, np.int64), one(3, 0.0, el),
                  one(4, 0.0, el)],
        result_types=[types.tensor_type((SymDim.symbol(count), 3),
                                        types.element_type(types.TP.INT64))],
        properties={"defines": ArrayAttr([StringAttr(count)]),
                    "center_point_box": types.i64_attr(center),
                    "score_filter": types.i64_attr(int(ctx.has_input(4)))})
    return [ctx.emit1(op)]


# MaxPool is registered here too (this table is merged after onnx_ops_nn's): the Indices
# output needs graph.max_pool_indices, everything else goes to onnx_ops_nn.convert_max_pool.
CONVERTERS: dict[str, Converter] = {
    "NonMaxSuppression": convert_non_max_suppression,
    "MaxPool": sample_wise(convert_max_pool),
    "MaxUnpool": convert_max_unpool,
    "DeformConv": convert_deform_conv,
    "ConvTranspose": sample_wise(convert_conv_transpose),
    "Col2Im": convert_col2im,
    "GridSample": convert_grid_sample,
    "AffineGrid": convert_affine_grid,
    "RoiAlign": convert_roi_align,
    "InstanceNormalization": sample_wise(convert_instance_norm),
    "GroupNormalization": sample_wise(convert_group_norm),
    "MeanVarianceNormalization": convert_mvn,
    "LpPool": sample_wise(convert_lp_pool),
    "GlobalLpPool": sample_wise(convert_global_lp_pool),
}
