"""numpy semantics of the graph ops in graph_gather_scatter, graph_vision and graph_resize (see
evaluator.py).

Written from the ONNX operator docs with plain loops and numpy indexing; Resize applies the
per-axis interpolation matrices built from `sampling_taps` one axis at a time.
"""

from __future__ import annotations

import itertools

import numpy as np
from xdsl.ir import Operation

from onnxc.dialects import (
    graph,
    graph_checks,
    graph_dynamic,
    graph_gather_scatter,
    graph_shapes,
    graph_vision,
)
from onnxc.dialects.check_failures import check_failure
from onnxc.dialects.dense_data import as_strided_elements
from onnxc.dialects.graph import float_of, int_of, ints_of, shape_of
from onnxc.dialects.graph_resize import ResizeOp
from onnxc.errors import UnsupportedOpError

_COMBINE = {
    "none": lambda old, new: new,
    "add": lambda old, new: old + new,
    "mul": lambda old, new: old * new,
    "max": np.maximum,
    "min": np.minimum,
}


def _wrap(index: np.ndarray, size: int) -> np.ndarray:
    return np.where(index < 0, index + size, index)


def _gather_elements(op: graph_gather_scatter.GatherElementsOp, a: list[np.ndarray]):
    data, idx = a
    axis = graph_shapes.normalize_axis(int_of(op.axis), data.ndim)
    return [np.take_along_axis(data, _wrap(idx, data.shape[axis]).astype(np.int64), axis)]


def _gather_nd(op: graph_gather_scatter.GatherNDOp, a: list[np.ndarray]):
    data, idx = a
    b = int_of(op.batch_dims)
    q = idx.shape[-1]
    out = np.empty(shape_of(op.output), data.dtype)
    for pos in np.ndindex(*idx.shape[:-1]):
        where = tuple(int(v) for v in _wrap(idx[pos], np.array(data.shape[b:b + q])))
        out[pos] = data[pos[:b] + where]
    return [out]


def _scatter_elements(op: graph_gather_scatter.ScatterElementsOp, a: list[np.ndarray]):
    data, idx, updates = a
    out = data.copy()
    axis = graph_shapes.normalize_axis(int_of(op.axis), data.ndim)
    combine = _COMBINE[op.reduction.data]
    for pos in np.ndindex(*idx.shape):
        dst = list(pos)
        dst[axis] = int(_wrap(idx[pos], data.shape[axis]))
        out[tuple(dst)] = combine(out[tuple(dst)], updates[pos])
    return [out]


def _scatter_nd(op: graph_gather_scatter.ScatterNDOp, a: list[np.ndarray]):
    data, idx, updates = a
    out = data.copy()
    q = idx.shape[-1]
    combine = _COMBINE[op.reduction.data]
    for pos in np.ndindex(*idx.shape[:-1]):
        where = tuple(int(v) for v in _wrap(idx[pos], np.array(data.shape[:q])))
        out[where] = combine(out[where], updates[pos])
    return [out]


def _tensor_scatter(op: graph_gather_scatter.TensorScatterOp, a: list[np.ndarray]):
    past, update = a[0], a[1]
    axis = int_of(op.axis)
    starts = a[2] if len(a) > 2 else np.zeros(past.shape[0], np.int64)
    out = past.copy()
    length, steps = past.shape[axis], update.shape[axis]
    for prefix in np.ndindex(*past.shape[:axis]):
        for t in range(steps):
            at = int(starts[prefix[0]]) + t
            out[(*prefix, at % length if int_of(op.circular) else at)] = update[(*prefix, t)]
    return [out]


def _reverse_sequence(op: graph_gather_scatter.ReverseSequenceOp, a: list[np.ndarray]):
    x, lens = a
    b_axis, t_axis = int_of(op.batch_axis), int_of(op.time_axis)
    out = x.copy()
    for b, n in enumerate(lens):
        index = [slice(None)] * x.ndim
        index[b_axis], index[t_axis] = b, slice(0, int(n))
        out[tuple(index)] = np.flip(x[tuple(index)], axis=0)
    return [out]


def _conv_transpose(op: graph_vision.ConvTransposeOp, a: list[np.ndarray]):
    x, w = a[0], a[1]
    y_shape = shape_of(op.output)
    s, p, d = ints_of(op.strides), ints_of(op.pads), ints_of(op.dilations)
    g = int_of(op.group)
    spatial = x.ndim - 2
    cg, mg = x.shape[1] // g, w.shape[1]
    # scatter into an unpadded canvas, then crop the pads
    full = [s[i] * (x.shape[2 + i] - 1) + (w.shape[2 + i] - 1) * d[i] + 1 for i in range(spatial)]
    canvas = np.zeros((x.shape[0], g * mg, *[max(f, p[i] + y_shape[2 + i])
                                             for i, f in enumerate(full)]), np.float64)
    for k in itertools.product(*[range(v) for v in w.shape[2:]]):
        for grp in range(g):
            xs = x[:, grp * cg:(grp + 1) * cg].astype(np.float64)
            contrib = np.einsum("nc...,cm->nm...", xs, w[(slice(grp * cg, (grp + 1) * cg), slice(None), *k)])
            where = tuple(slice(k[i] * d[i], k[i] * d[i] + s[i] * (x.shape[2 + i] - 1) + 1, s[i])
                          for i in range(spatial))
            canvas[(slice(None), slice(grp * mg, (grp + 1) * mg), *where)] += contrib
    crop = tuple(slice(p[i], p[i] + y_shape[2 + i]) for i in range(spatial))
    y = canvas[(slice(None), slice(None), *crop)]
    if len(a) > 2:
        y = y + a[2].reshape((-1,) + (1,) * spatial)
    return [y.astype(x.dtype)]


def _col2im(op: graph_vision.Col2ImOp, a: list[np.ndarray]):
    x = a[0]
    y_shape = shape_of(op.output)
    block = ints_of(op.block_shape)
    s, p, d = ints_of(op.strides), ints_of(op.pads), ints_of(op.dilations)
    image = y_shape[2:]
    blocks = graph_vision.col2im_blocks(image, block, s, p, d)
    cols = x.reshape(y_shape[:2] + tuple(block) + tuple(blocks))
    y = np.zeros(y_shape, np.float64)
    for k in itertools.product(*[range(v) for v in block]):
        for l in itertools.product(*[range(v) for v in blocks]):
            o = [l[i] * s[i] - p[i] + k[i] * d[i] for i in range(len(image))]
            if all(0 <= o[i] < image[i] for i in range(len(image))):
                y[(slice(None), slice(None), *o)] += cols[(slice(None), slice(None), *k, *l)]
    return [y.astype(x.dtype)]


def _reflect(v: np.ndarray, lo: float, hi: float) -> np.ndarray:
    span = hi - lo
    below, above = v < lo, v > hi
    dx = np.where(below, lo - v, v - hi)
    n = np.floor(dx / span) if span else np.zeros_like(dx)
    r = dx - n * span
    even = n.astype(np.int64) % 2 == 0
    folded = np.where(below == even, lo + r, hi - r)
    return np.where(below | above, folded, v)


def _grid_axis(v: np.ndarray, size: int, mode: str, padding: str, align: bool):
    """[(index, valid, weight)] arrays along one axis (see lowering/grid_sample.py)."""
    if align:
        x, lo, hi = (v + 1) * (size - 1) / 2, 0.0, size - 1.0
    else:
        x, lo, hi = ((v + 1) * size - 1) / 2, -0.5, size - 0.5
    if mode == "nearest":
        x = np.rint(x)
    if padding == "border":
        x = np.where((x < lo) | (x > hi), np.clip(x, 0, size - 1), x)
    elif padding == "reflection":
        x = _reflect(x, lo, hi)
    if mode == "nearest":
        taps = [(np.trunc(x), np.ones_like(x))]
    else:
        x0 = np.floor(x)
        t = x - x0
        if mode == "linear":
            taps = [(x0, 1 - t), (x0 + 1, t)]
        else:
            a = -0.75

            def outer(d):
                return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a

            def inner(d):
                return ((a + 2) * d - (a + 3)) * d * d + 1

            taps = [(x0 - 1, outer(t + 1)), (x0, inner(t)), (x0 + 1, inner(1 - t)),
                    (x0 + 2, outer(2 - t))]
    result = []
    for p, w in taps:
        valid = (p >= 0) & (p <= size - 1) if padding == "zeros" else np.ones(p.shape, bool)
        if padding == "reflection":
            p = np.trunc(_reflect(p, lo, hi))
        result.append((np.clip(p, 0, size - 1).astype(np.int64), valid, w))
    return result


def _grid_sample(op: graph_vision.GridSampleOp, a: list[np.ndarray]):
    x, grid = a
    dims = x.ndim - 2
    mode, padding = op.mode.data, op.padding_mode.data
    align = bool(int_of(op.align_corners))
    y = np.zeros(shape_of(op.output), np.float64)
    for b in range(x.shape[0]):
        axes = [_grid_axis(grid[b, ..., dims - 1 - i].astype(np.float64), x.shape[2 + i],
                           mode, padding, align) for i in range(dims)]
        for taps in itertools.product(*axes):
            weight = np.prod([w for _, _, w in taps], axis=0)
            valid = np.logical_and.reduce([v for _, v, _ in taps])
            values = x[b][(slice(None), *[p for p, _, _ in taps])]  # [C, *out]
            y[b] += np.where(valid, values * weight, 0.0)
    return [y.astype(x.dtype)]


def _max_roi_pool(op: graph_vision.MaxRoiPoolOp, a: list[np.ndarray]):
    """onnxruntime's RoiPool loops (float32 corner and bin arithmetic, C's round)."""
    x, rois, batch = a
    height, width = x.shape[2:]
    _, _, out_h, out_w = shape_of(op.output)
    y = np.zeros(shape_of(op.output), x.dtype)
    scale = np.float32(float_of(op.spatial_scale))
    for r in range(rois.shape[0]):
        x1, y1, x2, y2 = (float(np.sign(v) * np.floor(abs(float(v)) + 0.5))
                          for v in (rois[r, 1:].astype(np.float32) * scale))
        bin_h = np.float32(max(y2 - y1 + 1, 1)) / np.float32(out_h)
        bin_w = np.float32(max(x2 - x1 + 1, 1)) / np.float32(out_w)
        for ph, pw in itertools.product(range(out_h), range(out_w)):
            h0 = min(max(int(np.floor(np.float32(ph) * bin_h) + y1), 0), height)
            h1 = min(max(int(np.ceil(np.float32(ph + 1) * bin_h) + y1), 0), height)
            w0 = min(max(int(np.floor(np.float32(pw) * bin_w) + x1), 0), width)
            w1 = min(max(int(np.ceil(np.float32(pw + 1) * bin_w) + x1), 0), width)
            if h1 > h0 and w1 > w0:
                region = x[int(batch[r]), :, h0:h1, w0:w1].reshape(x.shape[1], -1)
                y[r, :, ph, pw] = region.max(axis=1)
    return [y]


def _roi_align(op: graph_vision.RoiAlignOp, a: list[np.ndarray]):
    """Straight from the operator's reference algorithm (scalar loops)."""
    x, rois, batch = a
    _, channels, height, width = x.shape
    _, _, out_h, out_w = shape_of(op.output)
    y = np.zeros(shape_of(op.output), np.float64)
    scale, ratio = float_of(op.spatial_scale), int_of(op.sampling_ratio)
    half = 0.5 if int_of(op.half_pixel) else 0.0
    for r in range(rois.shape[0]):
        x1, y1, x2, y2 = (float(v) * scale - half for v in rois[r])
        roi_w, roi_h = x2 - x1, y2 - y1
        if not half:
            roi_w, roi_h = max(roi_w, 1.0), max(roi_h, 1.0)
        bin_h, bin_w = roi_h / out_h, roi_w / out_w
        grid_h = ratio if ratio > 0 else int(np.ceil(bin_h))
        grid_w = ratio if ratio > 0 else int(np.ceil(bin_w))
        plane = x[int(batch[r])].astype(np.float64)
        for ph, pw in itertools.product(range(out_h), range(out_w)):
            values = []
            for iy, ix in itertools.product(range(grid_h), range(grid_w)):
                yy = y1 + ph * bin_h + (iy + 0.5) * bin_h / grid_h
                xx = x1 + pw * bin_w + (ix + 0.5) * bin_w / grid_w
                if yy < -1 or yy > height or xx < -1 or xx > width:
                    values.append(np.zeros((4, channels)))
                    continue
                corners = []
                for v, size in ((max(yy, 0.0), height), (max(xx, 0.0), width)):
                    low = int(v)
                    if low >= size - 1:
                        low = high = size - 1
                        v = float(low)
                    else:
                        high = low + 1
                    corners.append((low, high, v - low))
                (ya, yb, ly), (xa, xb, lx) = corners
                values.append(np.stack([
                    (1 - ly) * (1 - lx) * plane[:, ya, xa], (1 - ly) * lx * plane[:, ya, xb],
                    ly * (1 - lx) * plane[:, yb, xa], ly * lx * plane[:, yb, xb]]))
            if not values:
                continue
            stacked = np.stack(values)  # [samples, 4, C]
            if op.mode.data == "avg":
                y[r, :, ph, pw] = stacked.sum(axis=(0, 1)) / max(len(values), 1)
            else:
                y[r, :, ph, pw] = stacked.max(axis=1).max(axis=0)
    return [y.astype(x.dtype)]


def _max_pool_indices(op: graph_vision.MaxPoolIndicesOp, a: list[np.ndarray]):
    x = a[0]
    kernel, strides = ints_of(op.kernel_shape), ints_of(op.strides)
    pads, dil = ints_of(op.pads), ints_of(op.dilations)
    sizes = x.shape[2:]
    out_shape = shape_of(op.output)
    y = np.zeros(out_shape, x.dtype)
    idx = np.zeros(out_shape, np.int64)
    strides_flat = ([int(np.prod(sizes[d + 1:])) for d in range(len(sizes))]
                    if int_of(op.storage_order) == 0
                    else [int(np.prod(sizes[:d])) for d in range(len(sizes))])
    for n, c in itertools.product(range(x.shape[0]), range(x.shape[1])):
        for o in np.ndindex(*out_shape[2:]):
            best, at = -np.inf, 0
            for k in np.ndindex(*kernel):
                p = [o[d] * strides[d] - pads[d] + k[d] * dil[d] for d in range(len(sizes))]
                if all(0 <= p[d] < sizes[d] for d in range(len(sizes))) and x[(n, c, *p)] > best:
                    best, at = x[(n, c, *p)], sum(v * s for v, s in zip(p, strides_flat))
            y[(n, c, *o)] = best
            idx[(n, c, *o)] = (n * x.shape[1] + c) * int(np.prod(sizes)) + at
    return [y, idx]


def _max_unpool(op: graph_vision.MaxUnpoolOp, a: list[np.ndarray]):
    x, idx = a
    shape = [int(d) for d in op.unpooled_shape()]
    unpooled = np.zeros(int(np.prod(shape)), x.dtype)
    unpooled[idx.reshape(-1)] = x.reshape(-1)
    y = np.zeros(shape_of(op.output), x.dtype)
    y[tuple(slice(0, d) for d in shape)] = unpooled.reshape(shape)
    return [y]


def _deform_columns(op: graph_vision.DeformColumnsOp, a: list[np.ndarray]):
    x, offset = a[0], a[1]
    n, c, height, width = x.shape
    kh_n, kw_n = ints_of(op.kernel_shape)
    s, p, d = ints_of(op.strides), ints_of(op.pads), ints_of(op.dilations)
    groups = int_of(op.offset_group)
    out_h, out_w = offset.shape[2:]
    off = offset.reshape(n, groups, kh_n, kw_n, 2, out_h, out_w).astype(np.float64)
    mask = (a[2].reshape(n, groups, kh_n, kw_n, out_h, out_w) if len(a) > 2
            else np.ones((n, groups, kh_n, kw_n, out_h, out_w)))
    cols = np.zeros((n, c, kh_n, kw_n, out_h, out_w))
    oh, ow = np.meshgrid(np.arange(out_h), np.arange(out_w), indexing="ij")
    for b, g, kh, kw in itertools.product(range(n), range(groups), range(kh_n), range(kw_n)):
        y = oh * s[0] - p[0] + kh * d[0] + off[b, g, kh, kw, 0]
        xx = ow * s[1] - p[1] + kw * d[1] + off[b, g, kh, kw, 1]
        y0, x0 = np.floor(y), np.floor(xx)
        channels = slice(g * (c // groups), (g + 1) * (c // groups))
        for yi, wy in ((y0, 1 - (y - y0)), (y0 + 1, y - y0)):
            for xi, wx in ((x0, 1 - (xx - x0)), (x0 + 1, xx - x0)):
                valid = (yi >= 0) & (yi <= height - 1) & (xi >= 0) & (xi <= width - 1)
                yc = np.clip(yi, 0, height - 1).astype(np.int64)
                xc = np.clip(xi, 0, width - 1).astype(np.int64)
                w = np.where(valid, wy * wx, 0.0) * mask[b, g, kh, kw]
                cols[b, channels, kh, kw] += x[b, channels][:, yc, xc] * w
    return [cols.reshape(shape_of(op.output)).astype(x.dtype)]


def _resize(op: ResizeOp, a: list[np.ndarray]):
    x = a[0]
    y = x.astype(np.float64)
    outside = np.zeros(shape_of(op.output), bool)
    roi = a[1].astype(np.float64).reshape(-1) if op.roi_input is not None else None
    for axis in range(x.ndim):
        taps = op.axis_taps(axis, roi)
        if taps is None:
            continue
        y = np.moveaxis(np.tensordot(taps.matrix(x.shape[axis]), y, axes=([1], [axis])), 0, axis)
        if taps.outside is not None:
            shape = [1] * x.ndim
            shape[axis] = -1
            outside |= taps.outside.reshape(shape)
    y = np.where(outside, float_of(op.extrapolation_value), y)
    return [y.astype(x.dtype)]


def _check_indices(op: graph_checks.CheckIndicesOp, a: list[np.ndarray]) -> list[np.ndarray]:
    """What the native check does: InvalidInputError at the first index out of range."""
    values = a[0].astype(np.int64).reshape(-1)
    columns = len(ints_of(op.bounds))
    for position, value in enumerate(values):
        low, high = op.allowed(position % columns)
        if not low <= value <= high:
            raise check_failure(op.site(), position, int(value))
    return []


def _check_divisor(op: graph_checks.CheckDivisorOp, a: list[np.ndarray]) -> list[np.ndarray]:
    zeros = np.flatnonzero(a[0].reshape(-1) == 0)
    if zeros.size:
        raise check_failure(op.site(), int(zeros[0]), 0)
    return []


def _check_sizes(op: graph_checks.CheckSizesOp, a: list[np.ndarray]) -> list[np.ndarray]:
    """A guard of sizes that evaluator_sizes.specialized gave their values."""
    guard = op.parsed()
    if not isinstance(guard.size, int):
        raise UnsupportedOpError(op.name, None, None, "its guard needs the sizes of its "
                                 "symbols (evaluate() binds them from the inputs)")
    if not guard.holds({}):
        raise check_failure(op.site(), 0, guard.size)
    return []


def _nonzero(op, a: list[np.ndarray]) -> list[np.ndarray]:
    return [np.array(np.nonzero(a[0]), dtype=np.int64).reshape(a[0].ndim, -1)]


def _non_max_suppression(op, a: list[np.ndarray]) -> list[np.ndarray]:
    """onnx.reference's NonMaxSuppression, the definition onnxruntime follows."""
    from onnx.reference.ops.op_non_max_suppression import NonMaxSuppression

    boxes, scores, limit, iou, threshold = a
    run = NonMaxSuppression._run  # the algorithm alone, without a graph
    (selected,) = run(NonMaxSuppression.__new__(NonMaxSuppression), boxes, scores,
                      limit.reshape(-1), iou.reshape(-1),
                      threshold.reshape(-1) if int_of(op.score_filter) else None,
                      center_point_box=int_of(op.center_point_box))
    return [np.asarray(selected, np.int64).reshape(-1, 3)]


EVALUATORS: dict[type[Operation], object] = {
    graph.AsStridedOp: lambda op, a: [as_strided_elements(
        a[0], int_of(op.offset), shape_of(op.output), ints_of(op.strides))],
    graph_dynamic.NonZeroOp: _nonzero,
    graph_dynamic.NonMaxSuppressionOp: _non_max_suppression,
    graph_dynamic.BindSizesOp: lambda op, a: [],  # evaluator._run_block binds the sizes
    graph_checks.CheckIndicesOp: _check_indices,
    graph_checks.CheckSizesOp: _check_sizes,
    graph_checks.CheckDivisorOp: _check_divisor,
    graph_gather_scatter.GatherElementsOp: _gather_elements,
    graph_gather_scatter.GatherNDOp: _gather_nd,
    graph_gather_scatter.ScatterElementsOp: _scatter_elements,
    graph_gather_scatter.ScatterNDOp: _scatter_nd,
    graph_gather_scatter.TileOp: lambda op, a: [np.tile(a[0], op.repeat_counts())],
    graph_gather_scatter.TensorScatterOp: _tensor_scatter,
    graph_gather_scatter.ReverseSequenceOp: _reverse_sequence,
    graph_vision.ConvTransposeOp: _conv_transpose,
    graph_vision.Col2ImOp: _col2im,
    graph_vision.GridSampleOp: _grid_sample,
    graph_vision.RoiAlignOp: _roi_align,
    graph_vision.MaxRoiPoolOp: _max_roi_pool,
    graph_vision.MaxPoolIndicesOp: _max_pool_indices,
    graph_vision.MaxUnpoolOp: _max_unpool,
    graph_vision.DeformColumnsOp: _deform_columns,
    ResizeOp: _resize,
}
