"""Import-time folding of integer reductions and scans on small constants.

Exported models compute shapes with them (ReduceProd of a Shape for a flattened size,
ReduceMax of sequence lengths, CumSum of split sizes, ArgMax of a constant mask); folding
keeps the Reshape/Slice operands they feed constant. As in onnx_fold, only integer data is
folded (float arithmetic is left to the compiled code), but for ReduceMin/Max, exact on
floats: torchvision takes the largest image shape in floats.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from onnxc.dialects.symbolic_dims import sym_max, sym_min
from onnxc.frontend.onnx_context import NodeContext
from onnxc.frontend.onnx_ops_math import reduction_axes


def _integer_data(ctx: NodeContext) -> np.ndarray | None:
    data = ctx.known(0)  # shape data with symbolic sizes ("O") too: ReduceProd of a Shape
    return data if data is not None and data.dtype.kind in "iuO" else None


_SIZE_ORDER = {np.min: np.frompyfunc(lambda a, b: sym_min(a, b), 2, 1),
               np.max: np.frompyfunc(lambda a, b: sym_max(a, b), 2, 1)}
"""ReduceMin/Max of shape data with symbolic sizes (torchvision's min(k, boxes) for TopK)."""


def _reduce(fn: Callable[..., np.ndarray], axes_input_since: int = 18):
    def fold(ctx: NodeContext) -> list[np.ndarray] | None:
        data = _integer_data(ctx)
        if data is None and fn in _SIZE_ORDER:  # min/max are exact on floats too (sizes
            data = ctx.known(0)  # cast to float: torchvision's max over image shapes)
            if data is None or data.dtype.kind != "f":
                return None
        if data is None:
            return None
        axes = reduction_axes(ctx, axes_input_since)
        if axes is None:
            return [data]
        if data.size == 0:
            return None  # identity values: left to the converter
        keepdims = bool(ctx.attr("keepdims", 1))
        if data.dtype == object and fn in _SIZE_ORDER:  # min/max of sizes: expressions
            ufunc = _SIZE_ORDER[fn]
            for axis in sorted(axes, reverse=True):
                data = ufunc.reduce(data, axis=axis, keepdims=keepdims)
            return [np.asarray(data, dtype=object)]
        return [np.asarray(fn(data, axis=tuple(axes), keepdims=keepdims)).astype(data.dtype)]

    return fold


def _arg(fn: Callable[..., np.ndarray]):
    def fold(ctx: NodeContext) -> list[np.ndarray] | None:
        data = _integer_data(ctx)
        if data is None or data.size == 0:
            return None
        axis = ctx.attr("axis", 0) % data.ndim
        if ctx.opset >= 12 and ctx.attr("select_last_index", 0):
            index = data.shape[axis] - 1 - fn(np.flip(data, axis), axis=axis)
        else:
            index = fn(data, axis=axis)
        if ctx.attr("keepdims", 1):
            index = np.expand_dims(index, axis)
        return [np.asarray(index, dtype=np.int64)]

    return fold


def _cumsum(ctx: NodeContext) -> list[np.ndarray] | None:
    data, axis = _integer_data(ctx), ctx.known(1)
    if data is None or axis is None:
        return None
    axis = int(axis.reshape(-1)[0]) % data.ndim
    if ctx.attr("reverse", 0):
        data = np.flip(data, axis)
    total = np.cumsum(data, axis=axis, dtype=data.dtype)
    if ctx.attr("exclusive", 0):
        total = np.concatenate([np.zeros_like(np.take(total, [0], axis=axis)),
                                np.take(total, range(data.shape[axis] - 1), axis=axis)],
                               axis=axis)
    return [np.flip(total, axis) if ctx.attr("reverse", 0) else total]


FOLDERS = {
    "ReduceSum": _reduce(np.sum, axes_input_since=13),
    "ReduceProd": _reduce(np.prod),
    "ReduceMax": _reduce(np.max),
    "ReduceMin": _reduce(np.min),
    "ArgMax": _arg(np.argmax),
    "ArgMin": _arg(np.argmin),
    "CumSum": _cumsum,
}
