"""Graph constants as numpy arrays, for patterns that fold weights.

What a pattern needs around a constant (its array, splats up to a size limit, inserting a
new one); the bytes themselves are read and built by dialects/dense_data.py.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import InsertPoint

from onnxc.dialects import graph
from onnxc.dialects.dense_data import element_dtype, flat_values, from_numpy
from onnxc.dialects.graph_base import is_symbolic
from onnxc.dialects.symbolic_dims import Dim


def numpy_dtype(element: Attribute) -> np.dtype | None:
    """The numpy dtype of a tensor element type (None for ones we do not fold)."""
    try:
        return element_dtype(element)
    except ValueError:
        return None


SPLAT_LIMIT = 256 * 1024 * 1024
"""Largest splat (bytes) a pattern may expand into a dense array; above it the value is
treated as unknown, so a pattern never allocates gigabytes to inspect a one-value constant."""


def constant_value(value: SSAValue) -> np.ndarray | None:
    """The array `value` holds when a graph constant defines it, else None (also for splats
    above SPLAT_LIMIT bytes)."""
    owner = value.owner
    if not isinstance(owner, (graph.ConstantOp, graph.ConstantOfShapeOp)):
        return None
    t = value.type
    assert isinstance(t, TensorType)
    if is_symbolic(t):
        return None  # a fill of run-time size: no array to fold
    dtype = numpy_dtype(t.get_element_type())
    if dtype is None:
        return None
    data = flat_values(owner.value)
    if isinstance(owner, graph.ConstantOfShapeOp):
        shape = tuple(t.get_shape())
        if math.prod(shape) * dtype.itemsize > SPLAT_LIMIT:
            return None
        return np.full(shape, data[0], dtype)
    return data.reshape(tuple(t.get_shape()))


def is_ones(value: SSAValue) -> bool:
    """All ones (true for i1): a constant, or a ConstantOfShape fill of any size (a
    symbolic one too: its one value decides), as the importer's Expand writes it."""
    fill = value.owner
    if isinstance(fill, graph.ConstantOfShapeOp):
        try:
            data = flat_values(fill.value)
        except ValueError:  # an element type without numpy data
            return False
        return data.size == 1 and bool(data[0] == 1)
    array = constant_value(value)
    return array is not None and array.size > 0 and bool(np.all(array == 1))


def insert_constant(
    rewriter: PatternRewriter, array: np.ndarray, element: Attribute, before: Operation
) -> SSAValue:
    """A new graph.constant holding `array`, inserted before `before`."""
    op = graph.ConstantOp(from_numpy(array, element))
    rewriter.insert(op, InsertPoint.before(before))
    return op.output


def element_type(value: SSAValue) -> Attribute:
    t = value.type
    assert isinstance(t, TensorType)
    return t.get_element_type()


def is_float_tensor(value: SSAValue) -> bool:
    return numpy_dtype(element_type(value)) in (np.float16, np.float32, np.float64)


def use_count(value: SSAValue) -> int:
    return sum(1 for _ in value.uses)


def single_use(value: SSAValue) -> bool:
    """True when exactly one operation reads `value` (so fusing it away removes it)."""
    return value.has_one_use()


def per_channel(array: np.ndarray, out_shape: Sequence[Dim], axis: int = 1) -> np.ndarray | None:
    """`array` as a 1-D vector over `out_shape[axis]` when it broadcasts against the output
    along that axis only and does not enlarge the output; None otherwise (also when that
    axis has a symbolic size: the vector needs a length)."""
    rank = len(out_shape)
    if array.ndim > rank or not -rank <= axis < rank or not isinstance(out_shape[axis], int):
        return None
    padded = array.reshape((1,) * (rank - array.ndim) + array.shape)
    for d, (a, o) in enumerate(zip(padded.shape, out_shape)):
        if a != 1 and (d != axis or a != o):
            return None
    return np.broadcast_to(padded.reshape(-1) if padded.size > 1 else padded.reshape(1),
                           (out_shape[axis],)).copy()


def scalar(array: np.ndarray | None) -> float | None:
    """The one value of a single-element array, else None."""
    if array is None or array.size != 1:
        return None
    return float(array.reshape(-1)[0])
