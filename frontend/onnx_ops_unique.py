"""Unique, whose number of distinct values (or slices, along an axis) the run decides.

A constant input is folded with numpy. Otherwise Unique is composed of kernels that exist,
over n items: the elements of the flattened input, or with an axis its slices along it.
- A stable ascending sort orders them, equal ones keeping their input order: TopK of the n
  elements, or graph.lex_order of the slices (lexicographic, the first differing element
  decides), then a Gather of the sorted slices.
- An item differing from the one before starts a group (for slices: any element differs);
  NonZero of those starts gives the groups, their count a run symbol (like Compress's).
- Y: the sorted items at the starts; indices: the input positions at the starts (the first
  occurrence, since the sort is stable); inverse_indices: each item's group, scattered back
  to its input position (the group is the running count of starts, minus one); counts: ones
  added into a zero per group (ScatterElements with reduction add).
With sorted=0 the groups are put in order of their first occurrence (a second TopK of the
first positions) and inverse_indices renumbered by that order.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import StringAttr

from onnxc.dialects import graph, graph_gather_scatter
from onnxc.dialects.dense_data import from_numpy
from onnxc.dialects.graph_base import SizesAttr
from onnxc.frontend import onnx_types as types
from onnxc.frontend.onnx_context import NodeContext, Result, Tensor
from onnxc.frontend.onnx_ops_math import normalized_axis
from onnxc.frontend.onnx_ops_movement import positions
from onnxc.frontend.onnx_ops_reduce import emit, reduce, reshape


def _folded(values: np.ndarray, keep_sorted: bool, axis: int | None) -> list[Result]:
    if axis is None:
        values = values.reshape(-1)
    y, first, inverse, counts = np.unique(values, return_index=True, return_inverse=True,
                                          return_counts=True, axis=axis)
    if not keep_sorted:
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        y = np.take(y, order, axis=axis or 0)
        first, counts, inverse = first[order], counts[order], rank[inverse.reshape(-1)]
    return [y, *(np.asarray(a, np.int64).reshape(-1) for a in (first, inverse, counts))]


def _top_k(ctx: NodeContext, x, k) -> tuple:
    """Ascending, stable: (values, positions)."""
    el = x.type.get_element_type()
    i64 = types.element_type(types.TP.INT64)
    op = graph.TopKOp(
        operands=[x],
        result_types=[types.tensor_type((k,), el), types.tensor_type((k,), i64)],
        properties={"axis": types.i64_attr(0),
                    "k": types.i64_attr(k) if isinstance(k, int) else SizesAttr([k]),
                    "largest": types.i64_attr(0)})
    ctx.emit(op)
    return op.values, op.indices


def convert_unique(ctx: NodeContext) -> list[Result]:
    keep_sorted = bool(ctx.attr("sorted", 1))
    x = ctx.tensor(0)
    axis = normalized_axis(ctx, ctx.attr("axis"), ctx.rank(0)) if ctx.has_attr("axis") \
        else None
    if x.array is not None and not x.symbolic_data:
        return _folded(np.asarray(x.array), keep_sorted, axis)
    if axis is not None and ctx.rank(0) == 1:
        axis = None  # the slices of a vector are its elements
    i64 = types.element_type(types.TP.INT64)
    boolean = types.element_type(types.TP.BOOL)
    axis0 = {"axis": types.i64_attr(0)}

    def const(value) -> Result:
        return ctx.materialize(Tensor.of_array(np.asarray(value, np.int64)))

    shape = list(ctx.shape(0))
    el = ctx.element_type(0)
    if axis is None:
        n = math.prod(shape)
        items, order = _top_k(ctx, reshape(ctx, ctx.operand(0), (n,)), n)
        at, shape = 0, [n]
    else:
        n, at = shape[axis], axis
        order = emit(ctx, graph.LexOrderOp, [ctx.operand(0)], (n,), i64,
                     {"axis": types.i64_attr(axis)})
        items = emit(ctx, graph.GatherOp, [ctx.operand(0), order], shape, el,
                     {"axis": types.i64_attr(axis)})
    position = emit(ctx, graph.RangeOp, [const(0), const(1)], (n,), i64)
    before = emit(ctx, graph.MaxOp, [[emit(ctx, graph.SubOp, [position, const(1)], (n,), i64),
                                      const(0)]], (n,), i64)  # one variadic operand
    previous = emit(ctx, graph.GatherOp, [items, before], shape, el,
                    {"axis": types.i64_attr(at)})
    differs = emit(ctx, graph.NotOp, [emit(ctx, graph.EqualOp, [items, previous], shape,
                                           boolean)], shape, boolean)
    if axis is not None:  # a slice differs where any of its elements does
        others = [a for a in range(len(shape)) if a != axis]
        some = reduce(ctx, graph.ReduceMaxOp, emit(ctx, graph.CastOp, [differs], shape, i64),
                      others, False)
        differs = emit(ctx, graph.GreaterOp, [some, const(0)], (n,), boolean)
    first_one = emit(ctx, graph.EqualOp, [position, const(0)], (n,), boolean)
    starts_group = emit(ctx, graph.OrOp, [differs, first_one], (n,), boolean)
    starts = positions(ctx, starts_group)
    (u,) = graph.shape_of(starts)
    out_shape = [*shape[:at], u, *shape[at + 1:]]
    y = emit(ctx, graph.GatherOp, [items, starts], out_shape, el, {"axis": types.i64_attr(at)})
    first = emit(ctx, graph.GatherOp, [order, starts], (u,), i64, axis0)
    group = emit(ctx, graph.SubOp, [emit(ctx, graph.CumSumOp, [
        emit(ctx, graph.CastOp, [starts_group], (n,), i64)], (n,), i64,
        {"axis": types.i64_attr(0), "exclusive": types.i64_attr(0),
         "reverse": types.i64_attr(0)}), const(1)], (n,), i64)

    def filled(value: int, size) -> Result:
        return ctx.emit1(graph.ConstantOfShapeOp(
            properties={"value": from_numpy(np.full(1, value, np.int64))},
            result_types=[types.tensor_type((size,), i64)]))

    def scatter(data, indices, updates, reduction: str, size) -> Result:
        return emit(ctx, graph_gather_scatter.ScatterElementsOp, [data, indices, updates],
                    (size,), i64,
                    {"axis": types.i64_attr(0), "reduction": StringAttr(reduction)})

    inverse = scatter(filled(0, n), order, group, "none", n)
    counts = scatter(filled(0, u), group, filled(1, n), "add", u)
    if not keep_sorted:
        first, perm = _top_k(ctx, first, u)  # the groups in order of first occurrence
        y = emit(ctx, graph.GatherOp, [y, perm], out_shape, el, {"axis": types.i64_attr(at)})
        counts = emit(ctx, graph.GatherOp, [counts, perm], (u,), i64, axis0)
        rank = scatter(filled(0, u), perm, emit(ctx, graph.RangeOp, [const(0), const(1)], (u,),
                                                i64), "none", u)
        inverse = emit(ctx, graph.GatherOp, [rank, inverse], (n,), i64, axis0)
    return [y, first, inverse, counts]


CONVERTERS = {"Unique": convert_unique}
