"""Kernels that move data without arithmetic: copy, transpose, concat, split, slice, gather, pad.

Each loops over its result with the innermost loop on the result's last (contiguous)
dimension; shapes are first collapsed where the data stays contiguous (a transpose that
keeps H and W together runs over H*W, a concat over [outer, inner] blocks).

Tensors with symbolic dimensions (flat buffers, see buffer_types.memref_of) take the same loops
with run-time extents: sizes come from `KernelBuilder.shape` / `dim`, and a static tensor
takes exactly the code it always did.
"""

from __future__ import annotations

import math as pymath
from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import MemRefType, f32
from xdsl.ir import SSAValue

from onnxc.dialects import graph, graph_shapes
from onnxc.dialects.graph import float_of, int_of, ints_of, is_symbolic, shape_of
from onnxc.dialects.layout import layout_of, parse_spec, physical_permutation
from onnxc.dialects.symbolic_dims import Dim
from onnxc.errors import LoweringError
from onnxc.lowering.graph_to_loops.buffer_views import strided_view
from onnxc.lowering.graph_to_loops.checks import checked_index, guarded_nest
from onnxc.lowering.graph_to_loops.element_types import is_float
from onnxc.lowering.graph_to_loops.elementwise import map_elementwise
from onnxc.lowering.graph_to_loops.gemm_tiles import tiling_for
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder, nest_bounds
from onnxc.lowering.graph_to_loops.rules import KernelRule, rules
from onnxc.lowering.graph_to_loops.runs import copy_run


def copy_kernel(op, kb: KernelBuilder, ins, outs):
    """The identity between buffers of equal element count, as one flat loop."""
    src = kb.view(ins[0], kb.shape(outs[0]))
    map_elementwise(kb, [src], outs[0], lambda kb, args: args[0])


def sizes(kb: KernelBuilder, value, mem) -> list[Index]:
    """The logical shape of tensor `value` (buffer `mem`): its static shape, or with
    symbolic dimensions their run-time values."""
    return kb.shape(mem) if is_symbolic(value) else list(shape_of(value))


def _one(d: Index) -> bool:
    return isinstance(d, int) and d == 1


# --------------------------------------------------------------------------- transpose


def collapse_transpose(
    in_shape: Sequence[Index], perm: Sequence[int], product=pymath.prod,
) -> tuple[list[Index], list[int]]:
    """Drop size-1 dims and merge input dims that stay adjacent; returns (in shape, perm).
    A run-time size is kept (`product`: KernelBuilder.product to merge such sizes)."""
    keep = [d for d in range(len(in_shape)) if not _one(in_shape[d])]
    renumber = {d: i for i, d in enumerate(keep)}
    p = [renumber[d] for d in perm if d in renumber]
    groups: list[list[int]] = []
    for d in p:
        if groups and groups[-1][-1] + 1 == d:
            groups[-1].append(d)
        else:
            groups.append([d])
    if not groups:
        return [1], [0]
    order = sorted(range(len(groups)), key=lambda j: groups[j][0])
    shape = [product([in_shape[keep[d]] for d in groups[j]]) for j in order]
    position = {j: i for i, j in enumerate(order)}
    return shape, [position[j] for j in range(len(groups))]


def transpose_kernel(op: graph.TransposeOp, kb: KernelBuilder, ins, outs):
    in_shape, perm = collapse_transpose(sizes(kb, op.input, ins[0]), ints_of(op.perm),
                                        kb.product)
    out_shape = [in_shape[p] for p in perm]
    src, dst = kb.view(ins[0], in_shape), kb.view(outs[0], out_shape)

    def body(ivs: list[Index]) -> None:
        index: list[Index] = [0] * len(perm)
        for j, p in enumerate(perm):
            index[p] = ivs[j]
        kb.store(kb.load(src, index), dst, ivs)

    kb.nest(nest_bounds(out_shape), body)


def as_strided_kernel(op: graph.AsStridedOp, kb: KernelBuilder, ins, outs):
    """The copy of a graph.as_strided whose reader takes no strided view: loads through the
    same strided view of the flat input that such a reader would get."""
    shape = list(shape_of(op.output))
    flat = kb.view(ins[0], [pymath.prod(shape_of(op.input))])
    src = kb.insert(strided_view(flat, int_of(op.offset), shape, ints_of(op.strides)))
    kb.nest(nest_bounds(shape), lambda ivs: kb.store(kb.load(src, ivs), outs[0], ivs))


# --------------------------------------------------------------------------- concat / split


def _blocks(kb: KernelBuilder, shape: Sequence[Index], axis: int) -> tuple[Index, Index]:
    """(outer, inner): the shape (of a buffer, in memory order: static memrefs have their
    physical shape, symbolic tensors are plain) as rows of contiguous blocks at `axis`."""
    return kb.product(shape[:axis]), kb.product(shape[axis:])


def _copy_rows(kb: KernelBuilder, outer: Index, copies: list[tuple]) -> None:
    """For each row o < outer, every copy (src, src_col, dst, dst_col, width):
    dst[o, dst_col : dst_col + width] = src[o, src_col : ...] on [outer, *] views. One
    parallel loop for them all, so that a concat of k operands is one parallel region (and
    one outlined function) rather than k; static f32 runs go as explicit vectors."""
    flat: dict[SSAValue, tuple[SSAValue, int]] = {}
    for src, _, dst, _, width in copies:
        if _vector_run(kb, src, dst, width):
            for v in (src, dst):
                if v not in flat:
                    flat[v] = _flat(kb, v)

    def row(o: Index) -> None:
        for src, src_col, dst, dst_col, width in copies:
            if src in flat and dst in flat:
                (flat_src, src_row), (flat_dst, dst_row) = flat[src], flat[dst]
                copy_run(kb, flat_src, kb.iadd(kb.imul(o, src_row), src_col),
                         flat_dst, kb.iadd(kb.imul(o, dst_row), dst_col), width)
                continue
            kb.for_(0, width, lambda j, src=src, src_col=src_col, dst=dst, dst_col=dst_col:
                    kb.store(kb.load(src, [o, kb.iadd(j, src_col)]), dst,
                             [o, kb.iadd(j, dst_col)]))

    kb.parallel_for(0, outer, row)


def _flat(kb: KernelBuilder, view: SSAValue) -> tuple[SSAValue, int]:
    """A static [outer, row] view as a flat one, and its row length."""
    outer, row = view.type.get_shape()  # type: ignore[attr-defined]
    return kb.view(view, [outer * row]), row


def _vector_run(kb: KernelBuilder, src: SSAValue, dst: SSAValue, width: Index) -> bool:
    """A static run of f32 of at least one of `kb.target`'s vectors, between static views."""
    return (isinstance(width, int) and width >= tiling_for(kb.target).vw
            and all(isinstance(v.type, MemRefType) and v.type.element_type == f32
                    and v.type.has_static_shape() for v in (src, dst)))


def physical_axis(t, axis: int) -> int:
    """Where logical dimension `axis` of tensor type `t` sits in its buffer (unblocked
    layouts: NHWC puts C last, so a channel concat appends to each pixel's channels)."""
    spec = layout_of(t)
    if spec is None:
        return axis
    if parse_spec(spec)[2] is not None:
        raise LoweringError(f"no concat/split kernel for the blocked layout {spec}")
    return physical_permutation(spec, len(t.get_shape())).index(axis)


def concat_kernel(op: graph.ConcatOp, kb: KernelBuilder, ins, outs):
    """Rows of contiguous blocks in the buffers' (physical) order: every operand must share
    the result's layout (assign-layout converts the others)."""
    out_t = op.output.type
    if any(layout_of(v.type) != layout_of(out_t) for v in op.inputs):
        raise LoweringError(f"{op.name}: operands and result differ in layout")
    axis = physical_axis(out_t, graph_shapes.normalize_axis(int_of(op.axis), len(shape_of(out_t))))
    outer, total = _blocks(kb, kb.shape(outs[0]), axis)
    dst = kb.view(outs[0], [outer, total])
    col: Index = 0
    copies = []
    for v in ins:
        _, width = _blocks(kb, kb.shape(v), axis)
        copies.append((kb.view(v, [outer, width]), 0, dst, col, width))
        col = kb.iadd(col, width)
    _copy_rows(kb, outer, copies)


def split_kernel(op: graph.SplitOp, kb: KernelBuilder, ins, outs):
    """concat_kernel's inverse, on the same physical blocks."""
    in_t = op.input.type
    if any(layout_of(r.type) != layout_of(in_t) for r in op.outputs):
        raise LoweringError(f"{op.name}: operand and results differ in layout")
    axis = physical_axis(in_t, graph_shapes.normalize_axis(int_of(op.axis), len(shape_of(in_t))))
    outer, total = _blocks(kb, kb.shape(ins[0]), axis)
    src = kb.view(ins[0], [outer, total])
    col: Index = 0
    copies = []
    for v in outs:
        _, width = _blocks(kb, kb.shape(v), axis)
        copies.append((src, col, kb.view(v, [outer, width]), 0, width))
        col = kb.iadd(col, width)
    _copy_rows(kb, outer, copies)


# --------------------------------------------------------------------------- slice


def slice_kernel(op: graph.SliceOp, kb: KernelBuilder, ins, outs):
    """A nest over the result; on a symbolic axis the first index may be a run-time value
    (`x[:, -1:]` starts at seq - 1), computed once at the kernel's entry. In NHWC (static,
    assign-layout lets it flow: the live regions split-conv-live-regions cuts out of an
    atrous conv's input) the nest runs over the buffers' physical order, channels last."""
    spec = layout_of(op.input.type)
    if spec != layout_of(op.output.type) or spec not in (None, "NHWC"):
        raise LoweringError(f"{op.name}: no kernel from layout {spec} to "
                            f"{layout_of(op.output.type)}")
    in_shape = shape_of(op.input)
    starts, ends = op.bounds()
    axes, steps = ints_of(op.axes), ints_of(op.steps)
    first: list[Index] = [0] * len(in_shape)
    step = [1] * len(in_shape)
    for s, e, a, st in zip(starts, ends, axes, steps):
        a = graph_shapes.normalize_axis(a, len(in_shape))
        start, _ = graph_shapes.normalized_slice_bounds(in_shape[a], s, e, st)
        first[a] = kb.dim(start)
        step[a] = st
    if 0 in shape_of(op.output):
        return
    bounds = nest_bounds(sizes(kb, op.output, outs[0]))
    if spec is not None:  # physical dimension p holds logical dimension order[p]
        order = physical_permutation(spec, len(in_shape))
        first, step = [first[d] for d in order], [step[d] for d in order]
        bounds = [bounds[d] for d in order]

    def body(ivs: list[Index]) -> None:
        index = [kb.iadd(first[d], kb.imul(iv, step[d])) for d, iv in enumerate(ivs)]
        kb.store(kb.load(ins[0], index), outs[0], ivs)

    kb.nest(bounds, body)


# --------------------------------------------------------------------------- gather


def gather_kernel(op: graph.GatherOp, kb: KernelBuilder, ins, outs):
    """out[p, i, q] = data[p, wrap(indices[i]), q] with data viewed as [P, D, Q]. Indices are
    clamped into range; a `graph.check_indices` before the call refused bad ones, or, with a
    status operand (the fused check), the kernel flags them itself (checks.guarded_nest)."""
    data_shape = sizes(kb, op.data, ins[0])
    axis = graph_shapes.normalize_axis(int_of(op.axis), len(data_shape))
    p, dim = kb.product(data_shape[:axis]), data_shape[axis]
    q = kb.product(data_shape[axis + 1:])
    n = kb.product(sizes(kb, op.indices, ins[1]))
    if any(isinstance(d, int) and d == 0 for d in (n, p, q)):
        return  # (convert_graph_to_loops.py fuses a check only into a gather with a non-empty result)
    data = kb.view(ins[0], [p, dim, q])
    indices = kb.view(ins[1], [n])
    out = kb.view(outs[0], [p, n, q])

    def body(ivs: list[Index]):
        pi, i = ivs
        wrapped, bad = checked_index(kb, kb.load(indices, [i]), dim)
        kb.for_(0, q, lambda qi: kb.store(kb.load(data, [pi, wrapped, qi]), out, [pi, i, qi]))
        return bad

    guarded_nest(kb, [p, n], body, ins[2] if len(ins) > 2 else None)


# --------------------------------------------------------------------------- pad


def pad_kernel(op: graph.PadOp, kb: KernelBuilder, ins, outs):
    in_shape, out_shape = shape_of(op.input), shape_of(op.output)
    pads = op.pad_sizes()
    rank = len(in_shape)
    begin = pads[:rank]
    mode = op.mode.data
    if 0 in out_shape:
        return
    if mode == "constant":
        element = outs[0].type.get_element_type()
        value = float_of(op.value)
        fill = kb.constant(value if is_float(element) else int(value), element)
        map_elementwise(kb, [], outs[0], lambda kb, args: fill)
        if 0 in in_shape:
            return
        bounds = [(kb.imax(0, b), kb.imin(o, kb.iadd(b, i)))  # run-time where symbolic
                  for b, o, i in zip(begin, out_shape, in_shape)]
        if any(isinstance(lo, int) and isinstance(hi, int) and lo >= hi for lo, hi in bounds):
            return

        def interior(ivs: list[Index]) -> None:
            src = [kb.isub(iv, b) for iv, b in zip(ivs, begin)]
            kb.store(kb.load(ins[0], src), outs[0], ivs)

        kb.nest(bounds, interior)
        return
    if mode not in ("edge", "reflect", "wrap"):
        raise LoweringError(f"graph.pad: unknown mode '{mode}'")
    if 0 in in_shape:
        raise LoweringError(f"graph.pad: {mode} padding of an empty tensor")
    end = pads[rank:]

    def remainder(a: Index, m: Index) -> Index:  # a >= 0, m >= 1
        if isinstance(a, int) and isinstance(m, int):
            return a % m
        return kb.insert(arith.RemSIOp(kb.idx(a), kb.idx(m)))

    def source(iv: Index, b: Dim, e: Dim, size: Dim) -> Index:
        i = kb.isub(iv, b)
        if mode == "wrap":  # shifted by whole periods so that the remainder's operand is >= 0
            if isinstance(size, int) and isinstance(b, int):
                return remainder(kb.iadd(i, size * -(-max(b, 0) // size)), size)
            n = kb.imax(size, 1)  # a size 0 input reads nothing (its loop nest is empty)
            periods = kb.insert(arith.DivSIOp(kb.idx(kb.iadd(kb.imax(b, 0), kb.isub(n, 1))),
                                              kb.idx(n)))
            return remainder(kb.iadd(i, kb.imul(n, periods)), n)
        if mode == "edge" or (isinstance(size, int) and size == 1):
            return kb.imin(kb.imax(i, 0), kb.isub(size, 1))
        # Reflection is periodic with period 2 * (size - 1): fold |i| into one period,
        # then mirror its second half (a size of 1 at run time folds everything to 0).
        period = kb.imul(2, kb.isub(size, 1))
        folded = kb.imax(i, kb.isub(0, i))
        if not all(isinstance(d, int) for d in (b, e, size)):
            folded = remainder(folded, kb.imax(period, 1))
        elif max(b, e) > size - 1:
            folded = remainder(folded, period)
        return kb.imin(folded, kb.isub(period, folded))

    def body(ivs: list[Index]) -> None:
        src = [iv if _is_zero(b) and _is_zero(e) else source(iv, b, e, s)
               for iv, b, e, s in zip(ivs, begin, end, in_shape)]
        kb.store(kb.load(ins[0], src), outs[0], ivs)

    if all(isinstance(d, int) for d in in_shape):
        kb.nest(out_shape, body)
    else:  # nothing to read from an input that came out empty in the run
        nonempty = kb.imin(kb.product([kb.index(d) for d in in_shape]), 1)
        kb.for_(0, nonempty, lambda _: kb.nest(out_shape, body))


def _is_zero(d: Dim) -> bool:
    return isinstance(d, int) and d == 0


RULES = (
    *rules((graph.IdentityOp, graph.DropoutOp, graph.ReshapeOp, graph.FlattenOp,
            graph.SqueezeOp, graph.UnsqueezeOp), copy_kernel, symbolic=True),
    KernelRule(graph.TransposeOp, transpose_kernel, symbolic=True),
    KernelRule(graph.AsStridedOp, as_strided_kernel),
    KernelRule(graph.ConcatOp, concat_kernel, symbolic=True),
    KernelRule(graph.SplitOp, split_kernel, symbolic=True),
    KernelRule(graph.SliceOp, slice_kernel, symbolic=True),
    KernelRule(graph.GatherOp, gather_kernel, symbolic=True),
    KernelRule(graph.PadOp, pad_kernel, symbolic=True),
)
"""symbolic: the kernels read their sizes from the KernelBuilder (symbolic dims welcome): the
gather's clamp uses the run-time extent of a symbolic indexed axis."""
