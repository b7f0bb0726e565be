"""The sampling taps of graph.resize computed at run time, for axes of symbolic size.

A static Resize gets its per-axis tap tables (input positions and weights for every output
position) as compile-time constants from `graph_resize.sampling_taps`. When an axis' size is
known only at run time (a segmentation head upsampling to the input's H and W), the kernel
fills the same tables into scratch buffers first, with the same formulas in f64 (the
coordinate transform, then the nearest / linear / cubic weights of the neighbours, ties to
the smaller index, excluded-outside renormalisation, clamping), and then runs the same loops
over them (resize.py). A scale of 0 in the op means `sizes` gave the size: the scale is
output / input, taken in the run.

Antialiased filters (tap counts that depend on the scale) and tf_crop_and_resize keep
static sizes.
"""

from __future__ import annotations

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import IntegerType, f64, i64
from xdsl.ir import SSAValue

from onnxc.dialects.graph import float_of, int_of, shape_of
from onnxc.dialects.graph_resize import ResizeOp, floats_of
from onnxc.dialects.symbolic_dims import Dim, SymDim
from onnxc.errors import LoweringError
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder

TAPS = {"nearest": 1, "linear": 2, "cubic": 4}


def is_run_time(op: ResizeOp) -> bool:
    """Whether a resized axis has a symbolic size (the tables are built in the run)."""
    return any(isinstance(d, SymDim) for d in (*shape_of(op.input), *shape_of(op.output)))


def resized_axes(op: ResizeOp) -> list[int]:
    """The axes a symbolic Resize samples (the others are copied)."""
    x, y = shape_of(op.input), shape_of(op.output)
    scales = floats_of(op.scales)
    return [a for a in range(len(x)) if not (x[a] == y[a] and scales[a] in (0.0, 1.0))]


def check_supported(op: ResizeOp) -> None:
    if int_of(op.antialias) or op.coordinate_transformation_mode.data == "tf_crop_and_resize":
        raise LoweringError(f"{op.name}: an antialiased or tf_crop_and_resize Resize of "
                            f"symbolic size has no kernel; fix the sizes with input_shapes=")


def table_sizes(op: ResizeOp) -> tuple[Dim, Dim]:
    """Entries of the index table and of the weight table: taps per output position of
    every resized axis."""
    taps = TAPS[op.mode.data]
    y = shape_of(op.output)
    total: Dim = 0
    for a in resized_axes(op):
        total = total + y[a] * taps
    return total, total


def fill_tables(op: ResizeOp, kb: KernelBuilder, idx_table: SSAValue,
                w_table: SSAValue) -> dict[int, tuple[Index, Index, Index]]:
    """Write every resized axis' taps; returns their (index, weight, unused) offsets as
    resize._tables does for constant tables."""
    check_supported(op)
    x, y = shape_of(op.input), shape_of(op.output)
    taps = TAPS[op.mode.data]
    offsets: dict[int, tuple[Index, Index, Index]] = {}
    at: Index = 0
    for a in resized_axes(op):
        offsets[a] = (at, at, 0)
        start = at
        kb.for_(0, y[a], lambda o, a=a, start=start: _taps_of(
            op, kb, a, o, x[a], y[a], idx_table, w_table, kb.iadd(start, kb.imul(o, taps))))
        at = kb.iadd(at, kb.imul(y[a], taps))
    return offsets


def _taps_of(op: ResizeOp, kb: KernelBuilder, axis: int, o: Index, in_size: Dim,
             out_size: Dim, idx_table, w_table, row: Index) -> None:
    """Output position o's taps along `axis` (graph_resize.sampling_taps for one o)."""
    mode, taps = op.mode.data, TAPS[op.mode.data]
    def c(v: float) -> SSAValue:
        return kb.constant(v, f64)

    n_in, n_out = kb.to_float(in_size, f64), kb.to_float(out_size, f64)
    scale = floats_of(op.scales)[axis]
    s = c(scale) if scale else kb.div(n_out, n_in)
    x = _source(kb, op.coordinate_transformation_mode.data, kb.to_float(o, f64), s, n_in,
                n_out)
    floor = kb.insert(math.FloorOp(x))
    exact = kb.insert(arith.CmpfOp(x, floor, "oeq"))
    ratio = kb.select(exact, c(1.0), kb.sub(x, floor))
    below = kb.float_to_index(floor, -4.0, 2.0 ** 40)  # clamped into the input below
    last = kb.isub(in_size, 1)
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


def _source(kb: KernelBuilder, ctm: str, y: SSAValue, scale: SSAValue, n_in: SSAValue,
            n_out: SSAValue) -> SSAValue:
    """The input coordinate of output coordinate y (graph_resize._source_coordinates)."""

    def c(v: float) -> SSAValue:
        return kb.constant(v, f64)

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
    raise LoweringError(f"graph.resize: coordinate transformation '{ctm}' of symbolic size")


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
