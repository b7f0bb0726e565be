"""The sampling taps of graph.resize computed at run time, for axes of symbolic size.

A static Resize gets its per-axis tap tables (input positions and weights for every output
position) as compile-time constants from `graph_resize.sampling_taps`. When an axis' size is
known only at run time (a segmentation head upsampling to the input's H and W), the kernel
fills the same tables into scratch buffers first, with the same formulas in f64 (the
coordinate transform, then the nearest / linear / cubic weights of the neighbours, ties to
the smaller index, excluded-outside renormalisation, clamping), and then runs the same loops
over them (resize.py). A scale of 0 in the op means `sizes` gave the size: the scale is
output / input, taken in the run.

An antialiased filter widens with the downscale: its tap count is 2 * ceil(support / s)
for s = min(scale, 1), a number for a constant scale, else computed in the run from the
sizes (2 * max(support, ceildiv(support * in, out)); a wider count than the f64 formula's
only adds taps of weight 0), its table rows as long, bounded by 2 * support * (in + out).
tf_crop_and_resize maps into the region of interest (`roi`, or `roi_input` read in the run)
and flags the output positions outside the input, which read `extrapolation_value` (a table
after the weights).
"""

from __future__ import annotations

import math as pymath

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import IntegerType, f64, i64
from xdsl.ir import SSAValue

from onnxc.dialects.graph import float_of, int_of, shape_of
from onnxc.dialects.graph_resize import ResizeOp, floats_of
from onnxc.dialects.symbolic_dims import Dim, SymDim, ceildiv, sym_max
from onnxc.errors import LoweringError
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder

TAPS = {"nearest": 1, "linear": 2, "cubic": 4}
SUPPORT = {"linear": 1, "cubic": 2}
"""Half-width of the linear and cubic filters at scale 1 (antialias widens it by 1 / s)."""


def is_run_time(op: ResizeOp) -> bool:
    """Whether a resized axis has a symbolic size or the region of interest is computed in
    the run (the tables are built in the run)."""
    return op.roi_input is not None or any(
        isinstance(d, SymDim) for d in (*shape_of(op.input), *shape_of(op.output)))


def resized_axes(op: ResizeOp) -> list[int]:
    """The axes a symbolic Resize samples (the others are copied, whatever the roi, as
    onnxruntime does)."""
    x, y = shape_of(op.input), shape_of(op.output)
    aspect = op.aspect()
    return [a for a in range(len(x))
            if not (x[a] == y[a] and op.static_scale(a) in (None, 1.0)
                    and (aspect is None or aspect[1][a] == -1))]


def is_wide(op: ResizeOp) -> bool:
    """An antialiased linear or cubic filter (taps widened by the downscale)."""
    return bool(int_of(op.antialias)) and op.mode.data in SUPPORT


def tap_count(op: ResizeOp, axis: int) -> Dim:
    """Taps per output position along a resized axis (graph_resize._coefficients' count):
    a number unless an antialiased filter's scale is the run's out / in."""
    if not is_wide(op):
        return TAPS[op.mode.data]
    support = SUPPORT[op.mode.data]
    x, y = shape_of(op.input)[axis], shape_of(op.output)[axis]
    scale = op.static_scale(axis)
    if scale:
        return 2 - 2 * (pymath.floor(-support / min(scale, 1.0)) + 1)
    return 2 * sym_max(support, ceildiv(support * x, sym_max(y, 1)))


def has_outside(op: ResizeOp) -> bool:
    """tf_crop_and_resize: output positions may fall outside the input (flag table)."""
    return op.coordinate_transformation_mode.data == "tf_crop_and_resize"


def table_sizes(op: ResizeOp) -> tuple[Dim, Dim]:
    """Entries of the index table and of the weight table: taps per output position of
    every resized axis (a run-time count bounded by 2 * support * (in + out)), then the
    outside flags of tf_crop_and_resize in the weight table."""
    x, y = shape_of(op.input), shape_of(op.output)
    total: Dim = 0
    flags: Dim = 0
    for a in resized_axes(op):
        count = tap_count(op, a)
        total = total + (y[a] * count if isinstance(count, int)
                         else 2 * SUPPORT[op.mode.data] * (x[a] + y[a]))
        if has_outside(op):
            flags = flags + y[a]
    return total, total + flags


def fill_tables(op: ResizeOp, kb: KernelBuilder, idx_table: SSAValue, w_table: SSAValue,
                roi: SSAValue | None = None) -> tuple[dict[int, tuple[Index, Index, Index]],
                                                      dict[int, Index]]:
    """Write every resized axis' taps; returns their (index, weight, outside flags)
    offsets as resize._tables does for constant tables, and their tap counts. `roi`: the
    buffer of `roi_input`, read once per axis."""
    x, y = shape_of(op.input), shape_of(op.output)
    regions = {a: _region(op, kb, a, roi) if has_outside(op) else None
               for a in resized_axes(op)}  # only tf_crop_and_resize reads a region
    offsets: dict[int, tuple[Index, Index, Index]] = {}
    counts: dict[int, Index] = {}
    at: Index = 0
    for a in resized_axes(op):
        taps = counts[a] = kb.dim(tap_count(op, a))
        offsets[a] = (at, at, 0)
        start = at
        kb.for_(0, y[a], lambda o, a=a, start=start, taps=taps: _taps_of(
            op, kb, a, o, x[a], y[a], idx_table, w_table, kb.iadd(start, kb.imul(o, taps)),
            taps, regions[a]))
        at = kb.iadd(at, kb.imul(y[a], taps))
    if has_outside(op):
        for a in offsets:
            offsets[a] = (offsets[a][0], offsets[a][1], at)
            kb.for_(0, y[a], lambda o, a=a, base=at: _outside_of(
                op, kb, a, o, x[a], y[a], w_table, kb.iadd(base, o), regions[a]))
            at = kb.iadd(at, y[a])
    return offsets, counts


def _region(op: ResizeOp, kb: KernelBuilder, axis: int, roi: SSAValue | None
            ) -> tuple[SSAValue, SSAValue]:
    """tf_crop_and_resize's (begin, end) along `axis` in f64: the constant `roi`, else
    `roi_input` read in the run (the whole axis where it does not cover it)."""
    if roi is None:
        rank = len(shape_of(op.input))
        bounds = floats_of(op.roi)[axis], floats_of(op.roi)[axis + rank]
        return kb.constant(bounds[0], f64), kb.constant(bounds[1], f64)
    slot = op.roi_slot(axis)
    if slot is None:
        return kb.constant(0.0, f64), kb.constant(1.0, f64)
    count = len(op.roi_axes.get_values())  # type: ignore[union-attr]
    return (_as_f64(kb, kb.load(roi, [slot])), _as_f64(kb, kb.load(roi, [slot + count])))


def _as_f64(kb: KernelBuilder, v: SSAValue) -> SSAValue:
    return v if v.type == f64 else kb.insert(arith.ExtFOp(v, f64))


def _outside_of(op: ResizeOp, kb: KernelBuilder, axis: int, o: Index, in_size: Dim,
                out_size: Dim, w_table, at: Index,
                region: tuple[SSAValue, SSAValue] | None) -> None:
    """1 where tf_crop_and_resize's source coordinate is outside [0, in - 1], else 0."""
    n_in, n_out = kb.to_float(in_size, f64), kb.to_float(out_size, f64)
    x = _source(kb, op, axis, kb.to_float(o, f64), _scale(kb, op, axis, n_in, n_out),
                n_in, n_out, region)
    last = kb.sub(n_in, kb.constant(1.0, f64))
    out = kb.insert(arith.OrIOp(kb.insert(arith.CmpfOp(x, kb.constant(0.0, f64), "olt")),
                                kb.insert(arith.CmpfOp(x, last, "ogt"))))
    element = w_table.type.get_element_type()
    kb.store(kb.select(out, kb.constant(1.0, element), kb.constant(0.0, element)), w_table,
             [at])


def _scale(kb: KernelBuilder, op: ResizeOp, axis: int, n_in: SSAValue,
           n_out: SSAValue) -> SSAValue:
    """The axis' scale: the compile's, else the run's out / in, or for a keep-aspect
    policy the least or largest requested / input size of its axes (as onnxruntime)."""
    scale = op.static_scale(axis)
    if scale is not None:
        return kb.constant(scale, f64)
    aspect = op.aspect()
    if aspect is None or aspect[1][axis] == -1:
        return kb.div(n_out, n_in)
    policy, wanted = aspect
    x = shape_of(op.input)
    ratios = [kb.div(kb.to_float(w, f64), kb.to_float(x[j], f64))
              for j, w in enumerate(wanted) if w != -1]
    pick = kb.min if policy == "not_larger" else kb.max
    scale = ratios[0]
    for ratio in ratios[1:]:
        scale = pick(scale, ratio)
    return scale


def _taps_of(op: ResizeOp, kb: KernelBuilder, axis: int, o: Index, in_size: Dim,
             out_size: Dim, idx_table, w_table, row: Index, count: Index,
             region: tuple[SSAValue, SSAValue] | None) -> None:
    """Output position o's taps along `axis` (graph_resize.sampling_taps for one o)."""
    mode, taps = op.mode.data, TAPS[op.mode.data]
    def c(v: float) -> SSAValue:
        return kb.constant(v, f64)

    n_in, n_out = kb.to_float(in_size, f64), kb.to_float(out_size, f64)
    s = _scale(kb, op, axis, n_in, n_out)
    x = _source(kb, op, axis, kb.to_float(o, f64), s, n_in, n_out, region)
    floor = kb.insert(math.FloorOp(x))
    exact = kb.insert(arith.CmpfOp(x, floor, "oeq"))
    ratio = kb.select(exact, c(1.0), kb.sub(x, floor))
    below = kb.float_to_index(floor, -4.0, 2.0 ** 40)  # clamped into the input below
    last = kb.isub(in_size, 1)
    if is_wide(op):
        _wide_taps(op, kb, s, ratio, exact, below, last, count, idx_table, w_table, row)
        return
    if mode == "nearest":
        nearest = op.nearest_mode.data
        if nearest in ("round_prefer_floor", "round_prefer_ceil"):
            up = kb.insert(arith.CmpfOp(
                ratio, c(0.5), "ogt" if nearest == "round_prefer_floor" else "oge"))
        else:
            up = kb.constant(nearest == "ceil", IntegerType(1))
        pick = kb.select(exact, below, kb.select(up, kb.idx(kb.iadd(below, 1)), below))
        _store(kb, idx_table, w_table, row, [_clamp(kb, pick, last)], [])
        return
    a = float_of(op.cubic_coeff_a)
    r = ratio
    if mode == "linear":
        weights = [kb.sub(c(1.0), r), r]
    else:
        one_minus = kb.sub(c(1.0), r)
        r1, r2 = kb.add(r, c(1.0)), kb.sub(c(2.0), r)
        weights = [
            _poly(kb, r1, [a, -5 * a, 8 * a, -4 * a]),
            _poly(kb, r, [a + 2, -(a + 3), 0.0, 1.0]),
            _poly(kb, one_minus, [a + 2, -(a + 3), 0.0, 1.0]),
            _poly(kb, r2, [a, -5 * a, 8 * a, -4 * a]),
        ]
    # the n neighbours nearest to x, ties to the smaller index: from floor(x) - n/2 + 1, or
    # from x - n/2 when x is a whole number
    first = kb.isub(below, taps // 2 - 1)
    first = kb.select(exact, kb.isub(below, taps // 2), first)
    positions = [kb.iadd(first, t) for t in range(taps)]
    if int_of(op.exclude_outside):
        inside = [kb.insert(arith.AndIOp(
            kb.insert(arith.CmpiOp(kb.idx(p), kb.idx(0), "sge")),
            kb.insert(arith.CmpiOp(kb.idx(p), kb.idx(last), "sle")))) for p in positions]
        weights = [kb.select(ok, w, c(0.0)) for ok, w in zip(inside, weights)]
        total = weights[0]
        for w in weights[1:]:
            total = kb.add(total, w)
        nonzero = kb.insert(arith.CmpfOp(total, c(0.0), "one"))
        total = kb.select(nonzero, total, c(1.0))
        weights = [kb.div(w, total) for w in weights]
    _store(kb, idx_table, w_table, row, [_clamp(kb, p, last) for p in positions], weights)


def _source(kb: KernelBuilder, op: ResizeOp, axis: int, y: SSAValue, scale: SSAValue,
            n_in: SSAValue, n_out: SSAValue, region: tuple[SSAValue, SSAValue] | None
            ) -> SSAValue:
    """The input coordinate of output coordinate y (graph_resize._source_coordinates);
    `region`: tf_crop_and_resize's (begin, end) along the axis."""

    def c(v: float) -> SSAValue:
        return kb.constant(v, f64)

    ctm = op.coordinate_transformation_mode.data
    length = kb.mul(scale, n_in)
    half = kb.sub(kb.div(kb.add(y, c(0.5)), scale), c(0.5))
    one = kb.insert(arith.CmpfOp(length, c(1.0), "oeq"))
    if ctm == "asymmetric":
        return kb.div(y, scale)
    if ctm == "half_pixel":
        return half
    if ctm == "pytorch_half_pixel":
        return kb.select(one, c(-0.5), half)
    if ctm == "align_corners":
        spread = kb.div(kb.mul(y, kb.sub(n_in, c(1.0))), kb.sub(length, c(1.0)))
        return kb.select(one, c(0.0), spread)
    if ctm == "half_pixel_symmetric":
        offset = kb.mul(kb.div(n_in, c(2.0)), kb.sub(c(1.0), kb.div(n_out, length)))
        return kb.add(offset, half)
    if ctm == "tf_crop_and_resize":  # over the output's length; scale 1: not resampled
        assert region is not None  # fill_tables reads one for tf_crop_and_resize
        lo, hi = region
        width = kb.sub(hi, lo)
        span = kb.sub(n_in, c(1.0))
        middle = kb.div(kb.mul(width, span), c(2.0))
        spread = kb.div(kb.mul(kb.mul(y, width), span), kb.sub(n_out, c(1.0)))
        single = kb.insert(arith.CmpfOp(n_out, c(1.0), "oeq"))
        crop = kb.add(kb.select(single, middle, spread), kb.mul(lo, span))
        return kb.select(kb.insert(arith.CmpfOp(scale, c(1.0), "oeq")), y, crop)
    raise LoweringError(f"graph.resize: coordinate transformation '{ctm}' of symbolic size")


def _wide_taps(op: ResizeOp, kb: KernelBuilder, scale: SSAValue, ratio: SSAValue,
               exact: SSAValue, below: Index, last: Index, count: Index, idx_table,
               w_table, row: Index) -> None:
    """An antialiased filter's `count` taps (graph_resize._coefficients): tap j sits at
    distance d = start + j - ratio from the source coordinate (start = 1 - count / 2) and
    weighs filter(d * s), s = min(scale, 1), normalised to sum 1 (over the taps inside the
    input with exclude_outside)."""
    mode, a = op.mode.data, float_of(op.cubic_coeff_a)
    f64_1 = kb.constant(1.0, f64)
    s = kb.min(scale, f64_1)
    start = kb.isub(1, kb.idiv(count, 2))
    first = kb.isub(kb.iadd(below, start), kb.select(exact, kb.idx(1), kb.idx(0)))
    exclude = bool(int_of(op.exclude_outside))

    def weight(j: Index) -> SSAValue:
        d = kb.sub(kb.to_float(kb.iadd(start, j), f64), ratio)
        v = kb.insert(math.AbsFOp(kb.mul(d, s)))
        if mode == "linear":
            return kb.max(kb.sub(f64_1, v), kb.constant(0.0, f64))
        near = _poly(kb, v, [a + 2, -(a + 3), 0.0, 1.0])
        far = _poly(kb, v, [a, -5 * a, 8 * a, -4 * a])
        two = kb.constant(2.0, f64)
        outer = kb.select(kb.insert(arith.CmpfOp(v, two, "olt")), far, kb.constant(0.0, f64))
        return kb.select(kb.insert(arith.CmpfOp(v, f64_1, "ole")), near, outer)

    def inside(p: Index) -> SSAValue:
        return kb.insert(arith.AndIOp(
            kb.insert(arith.CmpiOp(kb.idx(p), kb.idx(0), "sge")),
            kb.insert(arith.CmpiOp(kb.idx(p), kb.idx(last), "sle"))))

    def add(j: Index, total: SSAValue) -> list[SSAValue]:
        w = weight(j)
        if exclude:
            w = kb.select(inside(kb.iadd(first, j)), w, kb.constant(0.0, f64))
        return [kb.add(total, w)]

    (total,) = kb.reduce(0, count, [kb.constant(0.0, f64)], add)
    nonzero = kb.insert(arith.CmpfOp(total, kb.constant(0.0, f64), "one"))
    total = kb.select(nonzero, total, f64_1)
    element = w_table.type.get_element_type()

    def store(j: Index) -> None:
        p = kb.iadd(first, j)
        w = weight(j)
        if exclude:
            w = kb.select(inside(p), w, kb.constant(0.0, f64))
        w = kb.div(w, total)
        at = kb.iadd(row, j)
        kb.store(kb.insert(arith.IndexCastOp(kb.idx(_clamp(kb, p, last)), i64)), idx_table,
                 [at])
        kb.store(w if element == f64 else kb.insert(arith.TruncFOp(w, element)), w_table,
                 [at])

    kb.for_(0, count, store)


def _poly(kb: KernelBuilder, v: SSAValue, coefficients: list[float]) -> SSAValue:
    """Horner's scheme, highest power first."""
    acc = kb.constant(coefficients[0], f64)
    for value in coefficients[1:]:
        acc = kb.add(kb.mul(acc, v), kb.constant(value, f64))
    return acc


def _clamp(kb: KernelBuilder, p: Index, last: Index) -> Index:
    return kb.imax(kb.imin(p, last), 0)


def _store(kb: KernelBuilder, idx_table, w_table, row: Index, positions: list[Index],
           weights: list[SSAValue]) -> None:
    """Row `row` of the tables: the positions, and the weights when there are several."""
    element = w_table.type.get_element_type()
    for t, p in enumerate(positions):
        kb.store(kb.insert(arith.IndexCastOp(kb.idx(p), i64)), idx_table, [kb.iadd(row, t)])
    for t, w in enumerate(weights):
        value = w if element == f64 else kb.insert(arith.TruncFOp(w, element))
        kb.store(value, w_table, [kb.iadd(row, t)])
