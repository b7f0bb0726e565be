"""Kernels of graph.roi_align (ONNX RoiAlign, as onnxruntime and onnx.reference compute it)
and graph.max_roi_pool (MaxRoiPool, as onnxruntime computes it: `max_roi_pool_kernel`).

Regions run in parallel. Per region the start, bin size and sampling grid (sampling_ratio,
or ceil(bin size) samples per bin when it is 0: a run-time loop bound) are computed once;
per sample the four bilinear corners and weights are computed once and the channel loop
folds weight * value into the output (sum for avg, then divided by the sample count; max of
the four weighted corners for max, as the reference implementations do). Samples outside
[-1, size] contribute 0.
"""

from __future__ import annotations

from xdsl.dialects import arith, math

from onnxc.dialects.graph import float_of, int_of, shape_of
from onnxc.dialects.graph_vision import MaxRoiPoolOp, RoiAlignOp
from onnxc.dialects.symbolic_dims import Dim
from onnxc.errors import LoweringError
from onnxc.lowering.graph_to_loops.checks import clamped_index
from onnxc.lowering.graph_to_loops.element_types import is_float, min_value
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder
from onnxc.lowering.graph_to_loops.rules import KernelRule

MAX_GRID = float(2**31)
"""Bound of the per-bin sample grid taken from run-time ROI sizes: what ceil(bin size)
converts to as an index (NaN gives 0). onnxruntime computes the same grid unbounded."""


def roi_align_kernel(op: RoiAlignOp, kb: KernelBuilder, ins, outs):
    t = outs[0].type.get_element_type()
    if not is_float(t):
        raise LoweringError(f"{op.name}: only float tensors are supported")
    _, channels, height, width = shape_of(op.input)
    rois_n, _, out_h, out_w = shape_of(op.output)
    if 0 in (rois_n, channels, out_h, out_w, height, width):
        return
    symbolic = not (isinstance(height, int) and isinstance(width, int))
    x, rois, batch, y = ins[0], ins[1], ins[2], outs[0]
    average = op.mode.data == "avg"
    ratio = int_of(op.sampling_ratio)
    scale = float_of(op.spatial_scale)
    half_pixel = bool(int_of(op.half_pixel))

    def c(v: float):
        return kb.constant(v, t)

    def to_index(v, high: float):
        return kb.float_to_index(v, 0.0, high)

    def lt(a, b):
        return kb.insert(arith.CmpfOp(a, b, "olt"))

    def per_roi(r: Index) -> None:
        # refused by the batch_indices check before the kernel runs; clamped anyway
        b = clamped_index(kb, kb.load(batch, [r]), shape_of(op.input)[0], negative=False)
        offset = c(0.5 if half_pixel else 0.0)
        start_w, start_h, end_w, end_h = (
            kb.sub(kb.mul(kb.load(rois, [r, i]), c(scale)), offset) for i in range(4))
        roi_w, roi_h = kb.sub(end_w, start_w), kb.sub(end_h, start_h)
        if not half_pixel:
            roi_w, roi_h = kb.max(roi_w, c(1.0)), kb.max(roi_h, c(1.0))
        bin_h, bin_w = kb.div(roi_h, c(float(out_h))), kb.div(roi_w, c(float(out_w)))
        if ratio > 0:
            grid_h: Index = ratio
            grid_w: Index = ratio
        else:
            grid_h = to_index(kb.insert(math.CeilOp(bin_h)), MAX_GRID)
            grid_w = to_index(kb.insert(math.CeilOp(bin_w)), MAX_GRID)
        samples = kb.imul(grid_h, grid_w)
        float_h, float_w = kb.to_float(grid_h, t), kb.to_float(grid_w, t)

        def corner_axis(v, size: Dim):
            """(low index, high index, low weight, high weight) along one axis."""
            last = kb.to_float(kb.isub(size, 1), t)
            v = kb.max(v, c(0.0))
            low = kb.insert(math.FloorOp(v))
            top = kb.insert(arith.CmpfOp(low, last, "oge"))
            low = kb.select(top, last, low)
            v = kb.select(top, low, v)
            high = kb.select(top, low, kb.add(low, c(1.0)))
            frac = kb.sub(v, low)
            if isinstance(size, int):
                indices = (to_index(low, size - 1.0), to_index(high, size - 1.0))
            else:  # a run-time size (>= 1 here): clamped to its last index
                indices = tuple(kb.imin(to_index(e, MAX_GRID), kb.isub(size, 1))
                                for e in (low, high))
            return (*indices, kb.sub(c(1.0), frac), frac)

        def per_bin(ivs: list[Index]) -> None:
            ph, pw = ivs
            init = c(0.0) if average else c(min_value(t))
            kb.for_(0, channels, lambda ch: kb.store(init, y, [r, ch, ph, pw]))
            bin_y0 = kb.add(start_h, kb.mul(kb.to_float(ph, t), bin_h))
            bin_x0 = kb.add(start_w, kb.mul(kb.to_float(pw, t), bin_w))

            def sample(iy: Index, ix: Index) -> None:
                half = c(0.5)
                yy = kb.add(bin_y0, kb.div(kb.mul(kb.add(kb.to_float(iy, t), half), bin_h),
                                           float_h))
                xx = kb.add(bin_x0, kb.div(kb.mul(kb.add(kb.to_float(ix, t), half), bin_w),
                                           float_w))
                outside = kb.insert(arith.OrIOp(
                    kb.insert(arith.OrIOp(lt(yy, c(-1.0)), lt(kb.to_float(height, t), yy))),
                    kb.insert(arith.OrIOp(lt(xx, c(-1.0)), lt(kb.to_float(width, t), xx)))))
                y0, y1, hy, ly = corner_axis(yy, height)
                x0, x1, hx, lx = corner_axis(xx, width)
                keep = kb.select(outside, c(0.0), c(1.0))
                weights = [kb.mul(kb.mul(a, bb), keep) for a, bb in
                           ((hy, hx), (hy, lx), (ly, hx), (ly, lx))]
                corners = [(y0, x0), (y0, x1), (y1, x0), (y1, x1)]

                def channel(ch: Index) -> None:
                    values = [kb.mul(w, kb.load(x, [b, ch, cy, cx]))
                              for w, (cy, cx) in zip(weights, corners)]
                    old = kb.load(y, [r, ch, ph, pw])
                    if average:
                        new = kb.add(old, kb.add(kb.add(values[0], values[1]),
                                                 kb.add(values[2], values[3])))
                    else:
                        new = kb.max(old, kb.max(kb.max(values[0], values[1]),
                                                 kb.max(values[2], values[3])))
                    kb.store(new, y, [r, ch, ph, pw])

                kb.for_(0, channels, channel)

            kb.for_(0, grid_h, lambda iy: kb.for_(0, grid_w, lambda ix: sample(iy, ix)))
            # avg: divide by the sample count (at least 1); max over no samples is 0
            count = kb.to_float(kb.imax(samples, 1), t)
            empty = kb.insert(arith.CmpiOp(kb.idx(samples), kb.idx(0), "eq"))

            def finish(ch: Index) -> None:
                v = kb.load(y, [r, ch, ph, pw])
                v = kb.div(v, count) if average else kb.select(empty, c(0.0), v)
                kb.store(v, y, [r, ch, ph, pw])

            kb.for_(0, channels, finish)

        kb.nest([out_h, out_w], per_bin)

    if symbolic:  # no sample to read from a feature map that came out empty in the run
        nonempty = kb.insert(arith.CmpiOp(kb.idx(kb.imul(height, width)), kb.idx(0), "sgt"))
        rois_n = kb.select(nonempty, kb.idx(rois_n), kb.idx(0))
    kb.parallel_for(0, rois_n, per_roi)


def max_roi_pool_kernel(op: MaxRoiPoolOp, kb: KernelBuilder, ins, outs):
    """onnxruntime's RoiPool: corners round(coordinate * scale) (half away from zero), the
    region at least 1 x 1, bin (ph, pw) rows floor(ph * bin_h) .. ceil((ph + 1) * bin_h)
    offset by the region's start and clipped to the image; an empty bin is 0. Every bound is clipped in float before it becomes an index, so no roi value
    (NaN, huge) can address outside the image."""
    t = outs[0].type.get_element_type()
    if not is_float(t):
        raise LoweringError(f"{op.name}: only float tensors are supported")
    _, channels, height, width = shape_of(op.input)
    rois_n, _, out_h, out_w = shape_of(op.output)
    if 0 in (rois_n, channels, out_h, out_w, height, width):
        return
    x, rois, batch, y = ins[0], ins[1], ins[2], outs[0]
    scale = float_of(op.spatial_scale)

    def c(v: float):
        return kb.constant(v, t)

    def per_roi(r: Index) -> None:
        # refused by the batch_indices check before the kernel runs; clamped anyway
        b = clamped_index(kb, kb.load(batch, [r]), shape_of(op.input)[0], negative=False)
        start_w, start_h, end_w, end_h = (
            kb.insert(math.RoundOp(kb.mul(kb.load(rois, [r, i]), c(scale))))
            for i in range(1, 5))
        bin_h = kb.div(kb.max(kb.add(kb.sub(end_h, start_h), c(1.0)), c(1.0)),
                       c(float(out_h)))
        bin_w = kb.div(kb.max(kb.add(kb.sub(end_w, start_w), c(1.0)), c(1.0)),
                       c(float(out_w)))

        def bound(p: Index, size: Dim, step, start, rounding):
            edge = kb.add(kb.insert(rounding(kb.mul(kb.to_float(p, t), step))), start)
            return kb.float_to_index(edge, 0.0, kb.to_float(size, t))

        def per_bin(ivs: list[Index]) -> None:
            ph, pw = ivs
            h0 = bound(ph, height, bin_h, start_h, math.FloorOp)
            h1 = bound(kb.iadd(ph, 1), height, bin_h, start_h, math.CeilOp)
            w0 = bound(pw, width, bin_w, start_w, math.FloorOp)
            w1 = bound(kb.iadd(pw, 1), width, bin_w, start_w, math.CeilOp)
            empty = kb.insert(arith.OrIOp(
                kb.insert(arith.CmpiOp(kb.idx(h1), kb.idx(h0), "ule")),
                kb.insert(arith.CmpiOp(kb.idx(w1), kb.idx(w0), "ule"))))

            def channel(ch: Index) -> None:
                def row(h: Index, acc):
                    (acc,) = kb.reduce(w0, w1, [acc],
                                       lambda w, a: [kb.max(a, kb.load(x, [b, ch, h, w]))])
                    return [acc]

                (top,) = kb.reduce(h0, h1, [c(min_value(t))], row)
                kb.store(kb.select(empty, c(0.0), top), y, [r, ch, ph, pw])

            kb.for_(0, channels, channel)

        kb.nest([out_h, out_w], per_bin)

    kb.parallel_for(0, rois_n, per_roi)


RULES = (KernelRule(RoiAlignOp, roi_align_kernel, symbolic=True),
         KernelRule(MaxRoiPoolOp, max_roi_pool_kernel, symbolic=True))
"""symbolic: rois, batch and feature map sizes; run-time extents clamp every index."""
