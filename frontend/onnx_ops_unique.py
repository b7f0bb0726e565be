"""Unique of the flattened input, whose number of distinct values the run decides.

A constant input is folded with numpy. Otherwise Unique is composed of kernels that exist:
a stable ascending TopK of all n elements sorts the values (equal ones keep their input
order), a value differing from the one before starts a group, NonZero of those starts
gives the groups (their count a run symbol, like Compress's), and
- Y: the sorted values at the starts; indices: the input positions at the starts (the
  first occurrence, since the sort is stable);
- inverse_indices: each element's group, scattered back to its input position (the group
  is the running count of starts, minus one);
- counts: ones added into a zero per group (ScatterElements with reduction add).
With sorted=0 the groups are put in order of their first occurrence (a second TopK of the
first positions) and inverse_indices renumbered by that order.

Unique along an axis (unique sub-tensors, compared lexicographically) stays refused.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import StringAttr

from onnxc.dialects import graph, graph_indexed
from onnxc.dialects.dense_data import from_numpy
from onnxc.dialects.graph_base import SizesAttr
from onnxc.frontend import onnx_types as types
from onnxc.frontend.onnx_context import NodeContext, Result, Tensor
from onnxc.frontend.onnx_ops_movement import positions
from onnxc.frontend.onnx_ops_reduce import emit, reshape


def _folded(values: np.ndarray, keep_sorted: bool) -> list[Result]:
    y, first, inverse, counts = np.unique(values.reshape(-1), return_index=True,
                                          return_inverse=True, return_counts=True)
    if not keep_sorted:
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        y, first, counts, inverse = y[order], first[order], counts[order], rank[inverse]
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
    if ctx.has_attr("axis"):
        if x.array is not None and not x.symbolic_data and ctx.rank(0) == 1:
            return _folded(np.asarray(x.array), keep_sorted)
        raise ctx.unsupported("Unique along an axis (unique sub-tensors)")
    if x.array is not None and not x.symbolic_data:
        return _folded(np.asarray(x.array), keep_sorted)
    i64 = types.element_type(types.TP.INT64)
    boolean = types.element_type(types.TP.BOOL)

    def const(value) -> Result:
        return ctx.materialize(Tensor.of_array(np.asarray(value, np.int64)))

    n = math.prod(ctx.shape(0))
    values, order = _top_k(ctx, reshape(ctx, ctx.operand(0), (n,)), n)
    position = emit(ctx, graph.RangeOp, [const(0), const(1)], (n,), i64)
    before = emit(ctx, graph.MaxOp, [[emit(ctx, graph.SubOp, [position, const(1)], (n,), i64),
                                      const(0)]], (n,), i64)  # one variadic operand
    previous = emit(ctx, graph.GatherOp, [values, before], (n,), values.type.get_element_type(),
                    {"axis": types.i64_attr(0)})
    differs = emit(ctx, graph.NotOp, [emit(ctx, graph.EqualOp, [values, previous], (n,),
                                           boolean)], (n,), boolean)
    first_one = emit(ctx, graph.EqualOp, [position, const(0)], (n,), boolean)
    starts_group = emit(ctx, graph.OrOp, [differs, first_one], (n,), boolean)
    starts = positions(ctx, starts_group)
    (u,) = graph.shape_of(starts)
    axis0 = {"axis": types.i64_attr(0)}
    y = emit(ctx, graph.GatherOp, [values, starts], (u,), values.type.get_element_type(), axis0)
    first = emit(ctx, graph.GatherOp, [order, starts], (u,), i64, axis0)
    group = emit(ctx, graph.SubOp, [emit(ctx, graph.CumSumOp, [
        emit(ctx, graph.CastOp, [starts_group], (n,), i64)], (n,), i64,
        {"axis": types.i64_attr(0), "exclusive": types.i64_attr(0),
         "reverse": types.i64_attr(0)}), const(1)], (n,), i64)

    def zeros(size) -> Result:
        return ctx.emit1(graph.ConstantOfShapeOp(
            properties={"value": from_numpy(np.zeros(1, np.int64))},
            result_types=[types.tensor_type((size,), i64)]))

    def scatter(data, indices, updates, reduction: str, size) -> Result:
        return emit(ctx, graph_indexed.ScatterElementsOp, [data, indices, updates], (size,), i64,
                    {"axis": types.i64_attr(0), "reduction": StringAttr(reduction)})

    inverse = scatter(zeros(n), order, group, "none", n)
    ones = ctx.emit1(graph.ConstantOfShapeOp(
        properties={"value": from_numpy(np.ones(1, np.int64))},
        result_types=[types.tensor_type((n,), i64)]))
    counts = scatter(zeros(u), group, ones, "add", u)
    if not keep_sorted:
        first, perm = _top_k(ctx, first, u)  # the groups in order of first occurrence
        y = emit(ctx, graph.GatherOp, [y, perm], (u,), y.type.get_element_type(), axis0)
        counts = emit(ctx, graph.GatherOp, [counts, perm], (u,), i64, axis0)
        rank = scatter(zeros(u), perm, emit(ctx, graph.RangeOp, [const(0), const(1)], (u,),
                                            i64), "none", u)
        inverse = emit(ctx, graph.GatherOp, [rank, inverse], (n,), i64, axis0)
    return [y, first, inverse, counts]


CONVERTERS = {"Unique": convert_unique}
