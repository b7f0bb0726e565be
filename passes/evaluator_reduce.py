"""numpy semantics of the reduction and index graph ops (ReduceMax/Min/Prod, ArgMax/ArgMin,
TopK, CumSum/CumProd, Trilu, OneHot, LexOrder, Range), for constant folding and
--verify-numerics. Written from the ONNX operator docs; obvious code over speed."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.ir import Operation

from onnxc.dialects import graph
from onnxc.dialects.graph import int_of


def _extreme(dtype: np.dtype, lowest: bool):
    """The identity of max (lowest) or min: -inf/inf, else the type's limits (False/True)."""
    if dtype.kind == "f":
        return -np.inf if lowest else np.inf
    if dtype.kind == "b":
        return not lowest
    info = np.iinfo(dtype)
    return info.min if lowest else info.max


def _reduce(fn):
    def evaluate(op: graph.ReduceOp, args: list[np.ndarray]) -> list[np.ndarray]:
        x = args[0]
        axes = op.reduced_axes()
        keepdims = int_of(op.keepdims) != 0
        if x.size == 0 or any(x.shape[a] == 0 for a in axes):
            identity = 1 if fn is np.prod else _extreme(x.dtype, lowest=fn is np.max)
            shape = [1 if i in axes else d for i, d in enumerate(x.shape)]
            out = np.full(shape, identity, dtype=x.dtype)
            return [out if keepdims else out.reshape([d for i, d in enumerate(x.shape)
                                                      if i not in axes])]
        return [fn(x, axis=axes, keepdims=keepdims)]

    return evaluate


def _arg(op: graph.ArgReduceOp, args: list[np.ndarray]) -> list[np.ndarray]:
    x, axis = args[0], int_of(op.axis)
    pick = np.argmax if isinstance(op, graph.ArgMaxOp) else np.argmin
    if int_of(op.select_last_index):
        flipped = np.flip(x, axis)
        index = x.shape[axis] - 1 - pick(flipped, axis=axis)
    else:
        index = pick(x, axis=axis)
    if int_of(op.keepdims):
        index = np.expand_dims(index, axis)
    return [index.astype(np.int64)]


def _top_k(op: graph.TopKOp, args: list[np.ndarray]) -> list[np.ndarray]:
    x, axis, k = args[0], int_of(op.axis), op.count()  # an int once specialized
    if int_of(op.largest):  # stable descending (no negation: it wraps unsigned integers)
        n = x.shape[axis]
        order = n - 1 - np.flip(np.argsort(np.flip(x, axis), axis=axis, kind="stable"), axis)
    else:
        order = np.argsort(x, axis=axis, kind="stable")  # equal values keep index order
    indices = np.take(order, np.arange(k), axis=axis)
    return [np.take_along_axis(x, indices, axis=axis), indices.astype(np.int64)]


def _cumulative(op: graph.CumulativeOp, args: list[np.ndarray]) -> list[np.ndarray]:
    x, axis = args[0], int_of(op.axis)
    product = isinstance(op, graph.CumProdOp)
    if int_of(op.reverse):
        x = np.flip(x, axis)
    y = np.cumprod(x, axis=axis) if product else np.cumsum(x, axis=axis)
    if int_of(op.exclusive):
        y = np.take(y, np.arange(-1, x.shape[axis] - 1), axis=axis)
        first = [slice(None)] * x.ndim
        first[axis] = slice(0, 1)
        y[tuple(first)] = 1 if product else 0
    if int_of(op.reverse):
        y = np.flip(y, axis)
    return [y]


def _trilu(op: graph.TriluOp, args: list[np.ndarray]) -> list[np.ndarray]:
    k = int_of(op.k)
    return [np.triu(args[0], k) if int_of(op.upper) else np.tril(args[0], k)]


def _one_hot(op: graph.OneHotOp, args: list[np.ndarray]) -> list[np.ndarray]:
    indices, values = args[0].astype(np.int64), args[1]
    depth, axis = int(op.size()), int_of(op.axis)  # specialized: a number
    indices = np.where(indices < 0, indices + depth, indices)
    positions = np.arange(depth).reshape([depth] + [1] * (indices.ndim - axis))
    hit = np.expand_dims(indices, axis) == positions
    return [np.where(hit, values[1], values[0])]


def _lex_order(op: graph.LexOrderOp, args: list[np.ndarray]) -> list[np.ndarray]:
    """The stable lexicographic order of the slices along the axis (NaN last)."""
    x, axis = args[0], int_of(op.axis)
    rows = np.moveaxis(x, axis, 0).reshape(x.shape[axis], x.size // max(x.shape[axis], 1))
    if rows.shape[1] == 0:
        return [np.arange(rows.shape[0], dtype=np.int64)]
    return [np.lexsort(rows.T[::-1]).astype(np.int64)]


def _range(op: graph.RangeOp, args: list[np.ndarray]) -> list[np.ndarray]:
    """start + i * delta as the kernel computes it: integers wrap, floats round once."""
    (n,) = op.output.type.get_shape()
    start, delta = args
    wide = np.int64 if start.dtype.kind in "iu" else np.float64
    return [(np.arange(n, dtype=np.int64) * delta.astype(wide) + start.astype(wide))
            .astype(start.dtype)]


EVALUATORS: dict[type[Operation], Callable[[Operation, list[np.ndarray]], list[np.ndarray]]] = {
    graph.ReduceMaxOp: _reduce(np.max),
    graph.ReduceMinOp: _reduce(np.min),
    graph.ReduceProdOp: _reduce(np.prod),
    graph.ArgMaxOp: _arg,
    graph.ArgMinOp: _arg,
    graph.TopKOp: _top_k,
    graph.CumSumOp: _cumulative,
    graph.CumProdOp: _cumulative,
    graph.TriluOp: _trilu,
    graph.OneHotOp: _one_hot,
    graph.LexOrderOp: _lex_order,
    graph.RangeOp: _range,
}
