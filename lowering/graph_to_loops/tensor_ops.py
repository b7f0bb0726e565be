"""Kernels of the indexed data-movement ops: GatherElements, GatherND, ScatterElements,
ScatterND, TensorScatter, Tile and ReverseSequence.

Gathers loop over their result (independent iterations, the outer loop runs in parallel).
Scatters first copy `data` to the result, then apply the updates in index order: ONNX leaves
duplicate indices undefined without a reduction, and with one the combine is order
independent up to rounding, so the update loop stays serial. Indices are read as i64/i32 and
negative ones count from the end. Out-of-range indices (and sequence lengths, write positions)
are refused before these kernels run, by the checks `insert-runtime-checks` adds, as
onnxruntime refuses them with INVALID_ARGUMENT; the kernels also clamp what they read into
range, so no data can make them read or write outside their buffers. The gathers,
scatters, TensorScatter and ReverseSequence also take symbolic dimensions (sizes from the
KernelBuilder): an index into an axis of symbolic size is checked and clamped with that
axis' size in the run.
"""

from __future__ import annotations

import math as pymath

from xdsl.dialects import arith

from onnxc.dialects import graph_gather_scatter, graph_shapes
from onnxc.dialects.graph import int_of, shape_of
from onnxc.errors import LoweringError
from onnxc.lowering.graph_to_loops.checks import (
    checked_index,
    clamped_index,
    guarded_nest,
)
from onnxc.lowering.graph_to_loops.data_movement import copy_kernel, sizes
from onnxc.lowering.graph_to_loops.loops import (
    Index,
    KernelBuilder,
    nest_bounds,
    parallel_nest,
)
from onnxc.lowering.graph_to_loops.rules import KernelRule
from onnxc.passes.insert_checks import UNBOUNDED


def load_index(kb: KernelBuilder, mem, indices, size: Index) -> Index:
    """indices-tensor element as an index, negative values wrapped by `size` (clamped into
    [0, size): the checks refused anything else before the kernel ran). `size` is a run-time
    value for an axis of symbolic size: the clamp then uses the run's extent."""
    return clamped_index(kb, kb.load(mem, indices), size)


def combine(kb: KernelBuilder, reduction: str, old, new):
    """How a scatter merges an update into the current value."""
    if reduction == "none":
        return new
    if reduction == "add":
        return kb.add(old, new)
    if reduction == "mul":
        return kb.mul(old, new)
    if reduction == "max":
        return kb.max(old, new)
    if reduction == "min":
        return kb.min(old, new)
    raise LoweringError(f"unknown scatter reduction '{reduction}'")


# --------------------------------------------------------------------------- gathers


def gather_elements_kernel(op: graph_gather_scatter.GatherElementsOp, kb: KernelBuilder, ins, outs):
    """out[i] = data[i with i[axis] = indices[i]]; with a status operand (a fused check) the
    kernel also flags indices out of range (checks.guarded_nest)."""
    data_shape, idx_shape = sizes(kb, op.data, ins[0]), sizes(kb, op.indices, ins[1])
    axis = graph_shapes.normalize_axis(int_of(op.axis), len(data_shape))

    def body(ivs: list[Index]):
        src = list(ivs)
        src[axis], bad = checked_index(kb, kb.load(ins[1], ivs), data_shape[axis])
        kb.store(kb.load(ins[0], src), outs[0], ivs)
        return bad

    guarded_nest(kb, idx_shape, body, ins[2] if len(ins) > 2 else None)


def gather_nd_kernel(op: graph_gather_scatter.GatherNDOp, kb: KernelBuilder, ins, outs):
    """out[b, r, s] = data[b, idx[b, r, 0], ..., idx[b, r, q-1], s] on collapsed views."""
    data_shape, idx_shape = sizes(kb, op.data, ins[0]), sizes(kb, op.indices, ins[1])
    nb = int_of(op.batch_dims)
    q = _tuple_length(op, idx_shape)
    batch = kb.product(idx_shape[:nb])
    rows = kb.product(idx_shape[nb:-1])
    addressed = data_shape[nb:nb + q]
    inner = kb.product(data_shape[nb + q:])
    if _empty(batch, rows, inner):
        return
    data = kb.view(ins[0], [batch, *addressed, inner])
    idx = kb.view(ins[1], [batch, rows, q])
    out = kb.view(outs[0], [batch, rows, inner])

    def body(ivs: list[Index]) -> None:
        b, r = ivs
        where = [load_index(kb, idx, [b, r, j], addressed[j]) for j in range(q)]
        kb.for_(0, inner, lambda s: kb.store(kb.load(data, [b, *where, s]), out, [b, r, s]))

    parallel_nest(kb, [batch, rows], body)


# --------------------------------------------------------------------------- scatters


def scatter_elements_kernel(op: graph_gather_scatter.ScatterElementsOp, kb: KernelBuilder,
                            ins, outs):
    copy_kernel(op, kb, ins[:1], outs)
    data_shape, idx_shape = sizes(kb, op.data, ins[0]), sizes(kb, op.indices, ins[1])
    axis = graph_shapes.normalize_axis(int_of(op.axis), len(data_shape))
    reduction = op.reduction.data

    def body(ivs: list[Index]) -> None:
        dst = list(ivs)
        dst[axis] = load_index(kb, ins[1], ivs, data_shape[axis])
        update = kb.load(ins[2], ivs)
        old = kb.load(outs[0], dst) if reduction != "none" else None
        kb.store(combine(kb, reduction, old, update), outs[0], dst)

    if not _empty(*idx_shape):
        kb.nest(nest_bounds(idx_shape), body)


def scatter_nd_kernel(op: graph_gather_scatter.ScatterNDOp, kb: KernelBuilder, ins, outs):
    copy_kernel(op, kb, ins[:1], outs)
    data_shape, idx_shape = sizes(kb, op.data, ins[0]), sizes(kb, op.indices, ins[1])
    q = _tuple_length(op, idx_shape)
    rows = kb.product(idx_shape[:-1])
    inner = kb.product(data_shape[q:])
    if _empty(rows, inner):
        return
    reduction = op.reduction.data
    out = kb.view(outs[0], [*data_shape[:q], inner])
    idx = kb.view(ins[1], [rows, q])
    updates = kb.view(ins[2], [rows, inner])

    def row(r: Index) -> None:
        where = [load_index(kb, idx, [r, j], data_shape[j]) for j in range(q)]

        def element(s: Index) -> None:
            old = kb.load(out, [*where, s]) if reduction != "none" else None
            kb.store(combine(kb, reduction, old, kb.load(updates, [r, s])), out, [*where, s])

        kb.for_(0, inner, element)

    kb.for_(0, rows, row)


def _tuple_length(op, idx_shape: list[Index]) -> int:
    """GatherND's / ScatterND's index tuple length (the indices' last dimension): static,
    as the result's rank depends on it."""
    q = idx_shape[-1]
    if not isinstance(q, int):
        raise LoweringError(f"{op.name}: the last dimension of its indices must be static")
    return q


def _empty(*extents: Index) -> bool:
    """Whether a loop over these extents has no iteration (a run-time size is at least 1)."""
    return any(isinstance(d, int) and d == 0 for d in extents)


def tensor_scatter_kernel(op: graph_gather_scatter.TensorScatterOp, kb: KernelBuilder, ins, outs):
    """Copy the cache, then per prefix row (parallel) write the update's S steps."""
    copy_kernel(op, kb, ins[:1], outs)
    x, u = shape_of(op.past), shape_of(op.update)
    axis = int_of(op.axis)
    prefix, length, steps = pymath.prod(x[:axis]), x[axis], u[axis]
    rest = pymath.prod(x[axis + 1:])
    per_batch = pymath.prod(x[1:axis])
    if prefix * steps * rest == 0:
        return
    out = kb.view(outs[0], [prefix, length, rest])
    update = kb.view(ins[1], [prefix, steps, rest])
    circular = int_of(op.circular) != 0
    modulus: Index = length
    if circular and not isinstance(length, int):  # a run may make it 0 (and steps 0)
        modulus = kb.imax(length, 1)

    def row(p: Index) -> None:
        start: Index = 0
        if op.write_indices is not None:
            raw = kb.load(ins[2], [kb.idiv(p, per_batch)])
            if circular:  # any position >= 0, taken modulo the length
                start = kb.insert(arith.RemSIOp(
                    clamped_index(kb, raw, UNBOUNDED, negative=False), kb.idx(modulus)))
            else:  # the whole update must fit
                start = clamped_index(kb, raw, length - steps + 1, negative=False)

        def step(t: Index) -> None:
            at = kb.iadd(start, t)
            if circular:
                at = kb.insert(arith.RemSIOp(kb.idx(at), kb.idx(modulus)))
            kb.for_(0, rest, lambda r: kb.store(kb.load(update, [p, t, r]), out, [p, at, r]))

        kb.for_(0, steps, step)

    kb.parallel_for(0, prefix, row)


# --------------------------------------------------------------------------- static patterns


def tile_kernel(op: graph_gather_scatter.TileOp, kb: KernelBuilder, ins, outs):
    """out[..., r * d + i, ...] = in[..., i, ...]: loops over (repeat, position) pairs, so
    no index needs a remainder and the innermost loop stays contiguous."""
    x = sizes(kb, op.input, ins[0])
    counts = op.repeat_counts()
    if 0 in shape_of(op.input) or 0 in counts:
        return
    repeats = [kb.index(r) for r in counts]  # run-time values where symbolic
    out = kb.view(outs[0], [v for d, r in zip(x, repeats) for v in (r, d)])
    bounds = [v for d, r in zip(x, repeats) for v in (r, d)]

    def body(ivs: list[Index]) -> None:
        kb.store(kb.load(ins[0], ivs[1::2]), out, ivs)

    parallel_nest(kb, bounds, body)


def reverse_sequence_kernel(op: graph_gather_scatter.ReverseSequenceOp, kb: KernelBuilder,
                            ins, outs):
    """out[t, b] = in[len_b - 1 - t, b] for t < len_b, in[t, b] after (time/batch axes 0/1)."""
    x = shape_of(op.input)
    if 0 in x:
        return
    batch_axis, time_axis = int_of(op.batch_axis), int_of(op.time_axis)
    inner = pymath.prod(x[2:])
    shape = [x[0], x[1], inner]
    src, dst = kb.view(ins[0], shape), kb.view(outs[0], shape)

    def body(ivs: list[Index]) -> None:
        t, b = ivs[time_axis], ivs[batch_axis]
        length = clamped_index(kb, kb.load(ins[1], [b]), x[time_axis] + 1, negative=False)
        inside = kb.insert(arith.CmpiOp(kb.idx(t), length, "slt"))
        reversed_t = kb.isub(kb.isub(length, 1), t)
        source_t = kb.select(inside, kb.idx(reversed_t), kb.idx(t))
        src_index = list(ivs)
        src_index[time_axis] = source_t
        kb.for_(0, inner, lambda s: kb.store(kb.load(src, [*src_index, s]), dst, [*ivs, s]))

    parallel_nest(kb, [shape[0], shape[1]], body)


RULES = (
    KernelRule(graph_gather_scatter.GatherElementsOp, gather_elements_kernel, symbolic=True),
    KernelRule(graph_gather_scatter.GatherNDOp, gather_nd_kernel, symbolic=True),
    KernelRule(graph_gather_scatter.ScatterElementsOp, scatter_elements_kernel, symbolic=True),
    KernelRule(graph_gather_scatter.ScatterNDOp, scatter_nd_kernel, symbolic=True),
    KernelRule(graph_gather_scatter.TileOp, tile_kernel, symbolic=True),
    KernelRule(graph_gather_scatter.TensorScatterOp, tensor_scatter_kernel, symbolic=True),
    KernelRule(graph_gather_scatter.ReverseSequenceOp, reverse_sequence_kernel, symbolic=True),
)
"""symbolic: the kernels read their sizes from the KernelBuilder (symbolic dims welcome):
the gathers and scatters clamp each index with the run-time extent of a symbolic axis (the
`graph.check_indices` before them checked it against the same extent), TensorScatter its
write positions with the run's cache and update lengths, ReverseSequence its lengths with
the run's number of steps."""
