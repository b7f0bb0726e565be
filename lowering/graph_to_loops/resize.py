"""Kernel of graph.resize: separable sampling through per-axis tap tables.

`graph_resize.sampling_taps` gives, for each resized axis and output position, the input
positions to read and their weights. Those tables are compile-time constants passed to the
kernel (`resize_constants`: one index table, one weight table, every resized axis
concatenated), so the kernel holds no coordinate arithmetic and one loop structure serves
nearest, linear, cubic and antialiased filters: an axis with a few taps loads them at its
own loop level (a row's vertical taps once per row) and the innermost body sums the
unrolled tap combinations, weight product * input; wider filters loop over their taps. Axes
that are not resized index the input directly. An upsampling that resizes the last axis runs
those loops twice (`_rows_shape`): rows first, then the other axes over whole rows.
tf_crop_and_resize positions outside the region read `extrapolation_value` instead.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IndexType, MemRefType, i64
from xdsl.ir import SSAValue

from onnxc.dialects.dense_data import element_dtype, from_numpy
from onnxc.dialects.graph import float_of, shape_of
from onnxc.dialects.graph_resize import AxisTaps, ResizeOp
from onnxc.dialects.symbolic_dims import Dim, is_static, num_elements
from onnxc.errors import LoweringError
from onnxc.lowering.graph_to_loops import resize_taps
from onnxc.lowering.graph_to_loops.branches import choose
from onnxc.lowering.graph_to_loops.buffer_types import RunTimeScratch
from onnxc.lowering.graph_to_loops.element_types import is_float
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder
from onnxc.lowering.graph_to_loops.rules import KernelRule
from onnxc.target import Target

UNROLLED_TAPS = 4
"""Axes with at most this many taps load them at their own loop level and unroll them;
wider (antialiased) filters keep a reduction loop per output element."""


def _tables(op: ResizeOp) -> tuple[dict[int, AxisTaps], dict[int, tuple[int, int, int]]]:
    """Taps per resized axis and where each axis's rows start in the index table, the
    weight table, and (for the outside flags) the weight table."""
    taps = {a: t for a in range(len(shape_of(op.input))) if (t := op.axis_taps(a)) is not None}
    offsets, idx_at, w_at = {}, 0, 0
    for a, t in taps.items():
        offsets[a] = (idx_at, w_at, 0)
        idx_at += t.idx.size
        w_at += t.w.size
    for a, t in taps.items():
        if t.outside is not None:
            offsets[a] = (offsets[a][0], offsets[a][1], w_at)
            w_at += t.outside.size
    return taps, offsets


@dataclass(frozen=True)
class _RunTimeTaps:
    """What the loops need of an axis whose tables are filled in the run: its tap count
    (a run-time value for an antialiased filter of run-time scale), and whether it has
    outside flags (tf_crop_and_resize)."""

    taps: Index
    outside: bool | None = None


def resize_constants(op: ResizeOp, target: Target) -> list[DenseIntOrFPElementsAttr]:
    """[index table (i64), weight table (the element type)] over all resized axes (none
    for symbolic sizes: `resize_scratch`)."""
    if resize_taps.is_run_time(op):
        return []
    taps, _ = _tables(op)
    dtype = element_dtype(op.output.type.get_element_type())
    idx = [t.idx.reshape(-1) for t in taps.values()]
    w = [t.w.reshape(-1) for t in taps.values()]
    w += [t.outside.astype(np.float64) for t in taps.values() if t.outside is not None]
    idx_table = np.concatenate(idx or [np.zeros(1, np.int64)]).astype(np.int64)
    w_table = np.concatenate(w or [np.zeros(1)]).astype(dtype)
    return [from_numpy(idx_table), from_numpy(w_table)]


def resize_scratch(op: ResizeOp, target: Target) -> list[MemRefType | RunTimeScratch]:
    """The tables a Resize of symbolic size, or over a region computed in the run, fills
    in the run (resize_taps.py); then the rows of a two-pass Resize (`_rows_shape`): its
    shape when static, else flat (allocated whether or not the run takes two passes: a
    bound of min(rows, output) over sizes the run computes is not one the arena can
    place)."""
    element = op.output.type.get_element_type()
    rows = _rows_shape(op)
    if not resize_taps.is_run_time(op):
        return [] if rows is None else [MemRefType(element, rows)]
    entries, weights = resize_taps.table_sizes(op)
    if isinstance(entries, int) and isinstance(weights, int):  # static, a run-time roi
        tables = [MemRefType(i64, [max(entries, 1)]), MemRefType(element, [max(weights, 1)])]
    else:
        tables = [RunTimeScratch(i64, entries), RunTimeScratch(element, weights)]
    if rows is None:
        return tables
    size = num_elements(rows)
    flat = (MemRefType(element, [max(size, 1)]) if isinstance(size, int)
            else RunTimeScratch(element, size))
    return [*tables, flat]


def _rows_shape(op: ResizeOp) -> list[Dim] | None:
    """The input resized along its last axis only, when the kernel may run in two passes.

    A resized last axis reads its taps by gathering along the row: per output element,
    one load per tap combination of every resized axis. Two passes resize the rows first
    (gathers over input rows x output width), then the other axes read whole rows of that
    with contiguous, vectorized loads. For a float Resize whose last axis and some other
    axis have a few taps each, where the rows are no larger than the output (an
    upsampling: a segmentation head's 16x bilinear ran 7x faster so); of symbolic sizes,
    the kernel compares them in the run."""
    x, y = shape_of(op.input), shape_of(op.output)
    if not is_float(op.output.type.get_element_type()) or resize_taps.has_outside(op):
        return None
    if resize_taps.is_run_time(op):
        if op.aspect() is not None:  # its sizes' products have no bound the arena can place
            return None
        counts = {a: resize_taps.tap_count(op, a) for a in resize_taps.resized_axes(op)}
    else:
        counts = {a: t.taps for a, t in _tables(op)[0].items()}
    last = len(y) - 1
    if len(counts) < 2 or not all(isinstance(c, int) and c <= UNROLLED_TAPS
                                  for c in counts.values()):
        return None
    if not 1 < counts.get(last, 0):  # type: ignore[operator]
        return None
    rows = [*x[:-1], y[-1]]
    if is_static(rows) and is_static(y) and num_elements(rows) > num_elements(y):
        return None
    return rows


def resize_kernel(op: ResizeOp, kb: KernelBuilder, ins, outs):
    element = outs[0].type.get_element_type()
    out_shape = shape_of(op.output)
    if 0 in out_shape:
        return
    x, roi = ins[0], (ins[1] if op.roi_input is not None else None)
    rows_shape = _rows_shape(op)
    idx_table, w_table = ins[-2:] if rows_shape is None else ins[-3:-1]
    if resize_taps.is_run_time(op):
        offsets, counts = resize_taps.fill_tables(op, kb, idx_table, w_table, roi)
        flags = True if resize_taps.has_outside(op) else None
        taps = {a: _RunTimeTaps(counts[a], flags) for a in offsets}
    else:
        taps, offsets = _tables(op)
    extrapolate = any(t.outside is not None for t in taps.values())
    if not extrapolate and all(_is(t.taps, 1) for t in taps.values()):
        _copy_kernel(kb, x, idx_table, outs[0], out_shape, taps, offsets)
        return
    if not is_float(element):
        raise LoweringError(f"{op.name}: only float tensors are interpolated")
    sampler = _Sampler(op, kb, idx_table, w_table, offsets)
    if rows_shape is None:
        sampler.interpolate(x, outs[0], out_shape, taps)
        return
    last = len(out_shape) - 1
    rows = ins[-1] if is_static(rows_shape) and not resize_taps.is_run_time(op) else kb.view(
        ins[-1], rows_shape)

    def two_passes() -> list:
        sampler.interpolate(x, rows, rows_shape, {last: taps[last]})
        sampler.interpolate(rows, outs[0], out_shape,
                            {a: t for a, t in taps.items() if a != last})
        return []

    def one_pass() -> list:
        sampler.interpolate(x, outs[0], out_shape, taps)
        return []

    smaller: bool | SSAValue = True
    if not (is_static(rows_shape) and is_static(out_shape)):
        smaller = kb.insert(arith.CmpiOp(kb.idx(kb.dim(num_elements(rows_shape))),
                                         kb.idx(kb.dim(num_elements(out_shape))), "sle"))
    choose(kb, smaller, two_passes, one_pass)


@dataclass
class _Sampler:
    """Loops that resize `source` into `dest` along the axes of `taps` (the others index
    the source directly), reading the op's tap tables."""

    op: ResizeOp
    kb: KernelBuilder
    idx_table: SSAValue
    w_table: SSAValue
    offsets: dict[int, tuple[Index, Index, Index]]

    def interpolate(self, source: SSAValue, dest: SSAValue, out_shape, taps) -> None:
        op, kb, idx_table, w_table, offsets = (self.op, self.kb, self.idx_table,
                                               self.w_table, self.offsets)
        element = dest.type.get_element_type()
        extrapolate = any(t.outside is not None for t in taps.values())
        zero = kb.constant(0.0, element)
        hoisted_axes = {a for a, t in taps.items()
                        if isinstance(t.taps, int) and t.taps <= UNROLLED_TAPS}
        looped = sorted(set(taps) - hoisted_axes)

        def load_taps(axis: int, o: Index) -> list[tuple[Index, object]]:
            """(input position, weight or None) of every tap of output position o."""
            i_at, w_at, _ = offsets[axis]
            count = taps[axis].taps
            result = []
            for t in range(count):
                r = kb.iadd(kb.imul(o, count), t)
                pos = kb.insert(arith.IndexCastOp(kb.load(idx_table, [kb.iadd(r, i_at)]),
                                                  IndexType()))
                w = kb.load(w_table, [kb.iadd(r, w_at)]) if count > 1 else None
                result.append((pos, w))
            return result

        def looped_taps(k: int, ivs: list[Index], src: list[Index], weight, acc):
            """Many-tap axes (antialiased downscales): a reduction loop per axis."""
            if k == len(looped):
                v = kb.load(source, src)
                return kb.muladd(v, weight, acc) if weight is not None else kb.add(v, acc)
            axis = looped[k]
            i_at, w_at, _ = offsets[axis]

            def tap(t: Index, acc_in):
                r = kb.iadd(kb.imul(ivs[axis], taps[axis].taps), t)
                pos = kb.insert(arith.IndexCastOp(kb.load(idx_table, [kb.iadd(r, i_at)]),
                                                  IndexType()))
                w = kb.load(w_table, [kb.iadd(r, w_at)])
                inner = list(src)
                inner[axis] = pos
                return [looped_taps(k + 1, ivs, inner,
                                    w if weight is None else kb.mul(weight, w), acc_in)]

            return kb.reduce(0, taps[axis].taps, [acc], tap)[0]

        def leaf(ivs: list[Index], hoisted: dict[int, list]) -> None:
            axes = sorted(hoisted)
            acc = zero
            for combo in itertools.product(*(hoisted[a] for a in axes)):
                src, weight = list(ivs), None
                for axis, (pos, w) in zip(axes, combo):
                    src[axis] = pos
                    if w is not None:
                        weight = w if weight is None else kb.mul(weight, w)
                acc = looped_taps(0, ivs, src, weight, acc)
            value = acc
            if extrapolate:
                outside = zero
                for axis in sorted(taps):
                    if taps[axis].outside is not None:
                        flag = kb.load(w_table, [kb.iadd(ivs[axis], offsets[axis][2])])
                        outside = kb.max(outside, flag)
                fill = kb.constant(float_of(op.extrapolation_value), element)
                is_out = kb.insert(arith.CmpfOp(outside, zero, "ogt"))
                value = kb.select(is_out, fill, value)
            kb.store(value, dest, ivs)

        def level(k: int, ivs: list[Index], hoisted: dict[int, list]) -> None:
            """Loop over output axis k; a few-tap axis loads its taps here, once per
            index."""
            if k == len(out_shape):
                leaf(ivs, hoisted)
                return

            def step(i: Index) -> None:
                inner = dict(hoisted)
                if k in hoisted_axes:
                    inner[k] = load_taps(k, i)
                level(k + 1, [*ivs, i], inner)

            if k == parallel_axis:
                kb.parallel_for(0, out_shape[k], step)
            else:
                kb.for_(0, out_shape[k], step)

        parallel_axis = _parallel_axis(out_shape)
        level(0, [], {})


def _copy_kernel(kb: KernelBuilder, x, idx_table, out, out_shape, taps, offsets) -> None:
    """One tap per axis (nearest without extrapolation): a pure gather, any element type.
    The source position of an axis is loaded at that axis's loop level, not per element."""

    def level(k: int, ivs: list[Index], src: list[Index]) -> None:
        if k == len(out_shape):
            kb.store(kb.load(x, src), out, ivs)
            return

        def step(i: Index) -> None:
            pos = i
            if k in taps:
                at = kb.iadd(i, offsets[k][0])
                pos = kb.insert(arith.IndexCastOp(kb.load(idx_table, [at]), IndexType()))
            level(k + 1, [*ivs, i], [*src, pos])

        if k == parallel_axis:
            kb.parallel_for(0, out_shape[k], step)
        else:
            kb.for_(0, out_shape[k], step)

    parallel_axis = _parallel_axis(out_shape)
    level(0, [], [])


def _is(count: Index, n: int) -> bool:
    return isinstance(count, int) and count == n


def _parallel_axis(shape) -> int:
    """The outermost axis with more than one index (a batch of 1 emits no loop)."""
    return next((k for k, d in enumerate(shape) if not isinstance(d, int) or d > 1), 0)


RULES = (KernelRule(ResizeOp, resize_kernel, constants=resize_constants,
                    scratch=resize_scratch, symbolic=True),)
"""symbolic: sizes may be symbolic: the tap tables are then filled in the run
(resize_taps.py)."""
