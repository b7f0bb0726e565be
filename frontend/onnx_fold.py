"""Import-time evaluation of tiny shape computations on constants.

Exported models often compute a Reshape's shape or a Slice's bounds with Shape, Gather,
Concat, Cast, arithmetic on int64, Equal/Where, ... Since every shape is known at import,
these are constants; evaluating them with numpy here turns those inputs into properties.
With symbolic dimensions they are shape data (numpy object arrays of ints and SymDims,
onnx_shape_data.py), which the same folders carry (Gather, Slice, Concat, reshapes, integer
Cast, Add/Sub/Mul/exact Div, decidable Equal/Less/Max/Min, Where on a known condition). This is
constant evaluation of small tensors (at most FOLD_LIMIT elements), never inference on
data: float arithmetic and large tensors are left to the compiled code.

A folder returns the node's outputs as arrays, or None when it cannot fold (an input is
unknown, or its result would be larger than FOLD_LIMIT: checked on the shape before numpy
allocates, since broadcasting a few small constants can ask for gigabytes); the node is
then converted into graph ops as usual.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence

import numpy as np
from xdsl.dialects.builtin import IntegerType, i64
from xdsl.ir import Attribute

from onnxc.dialects import graph_shapes as shapes
from onnxc.dialects.dense_data import cast_array, element_dtype
from onnxc.dialects.symbolic_dims import SymbolicDimError, sym_max, sym_min
from onnxc.frontend import onnx_shape_data as shape_data
from onnxc.frontend import onnx_types as types
from onnxc.frontend.onnx_context import FOLD_LIMIT, NodeContext, Tensor
from onnxc.frontend.onnx_fold_reduce import FOLDERS as REDUCE_FOLDERS
from onnxc.frontend.onnx_ops_generate import range_count, range_values
from onnxc.frontend.onnx_ops_math import cast_target, integer_divide
from onnxc.frontend.onnx_ops_tensor import (
    concat_axis,
    reshape_params,
    shape_slice,
    slice_params,
    split_params,
    squeeze_params,
    transpose_perm,
    unsqueeze_params,
)
from onnxc.frontend.onnx_shape_data import is_symbolic_array

Folder = Callable[[NodeContext], list[np.ndarray] | None]


def _small(shape: Sequence[int]) -> bool:
    """Whether a result of `shape` may be folded (decided before it is allocated)."""
    return math.prod(int(d) for d in shape) <= FOLD_LIMIT


def _broadcast_small(arrays: list[np.ndarray]) -> bool:
    return _small(np.broadcast_shapes(*(a.shape for a in arrays)))


def _all_known(ctx: NodeContext) -> list[np.ndarray] | None:
    arrays = [ctx.known(i) for i in range(ctx.num_inputs) if ctx.has_input(i)]
    return None if any(a is None for a in arrays) else arrays


def _symbolic(arrays: Sequence[np.ndarray]) -> bool:
    return any(is_symbolic_array(a) for a in arrays)


def _unary(fn: Callable[[NodeContext, np.ndarray], np.ndarray]) -> Folder:
    """Folds a node whose data input 0 must be known; other inputs are parameters."""

    def fold(ctx: NodeContext) -> list[np.ndarray] | None:
        data = ctx.known(0)
        result = None if data is None else fn(ctx, data)
        return None if result is None else [result]  # None from fn: the converter's case

    return fold


def _elementwise(fn: Callable[..., np.ndarray], integers_only: bool = False,
                 symbolic: Callable[..., object] | None = None,
                 compares: bool = False) -> Folder:
    """A broadcasting op on known inputs; on shape data with symbolic elements it applies
    `symbolic` per element (ints and SymDims; a comparison when `compares`), and does not
    fold without it."""

    def fold(ctx: NodeContext) -> list[np.ndarray] | None:
        arrays = _all_known(ctx)
        if arrays is None or not arrays:
            return None
        if integers_only and any(a.dtype.kind not in "biuO" for a in arrays):
            return None
        if not _broadcast_small(arrays):
            return None
        if _symbolic(arrays):
            if symbolic is None:
                return None
            return [shape_data.elementwise(symbolic, *arrays,
                                           result=np.dtype(np.bool_) if compares else None)]
        return [np.asarray(fn(*arrays))]

    return fold


def _variadic(pick: Callable[..., object]) -> Callable[..., object]:
    """Max/Min of sizes: sym_max/sym_min (symbolic_dims)."""
    return lambda *xs: pick(*xs)


def _div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if np.any(b == 0):
        raise ValueError("division by zero")
    return integer_divide(a, b)


def _mod(ctx: NodeContext) -> list[np.ndarray] | None:
    """Integer Mod: the sign of the divisor (numpy's %), or of the dividend with fmod=1."""
    arrays = _all_known(ctx)
    if arrays is None or any(a.dtype.kind not in "iuO" for a in arrays):
        return None
    a, b = arrays
    if np.any(b == 0) or not _broadcast_small(arrays):
        return None
    if _symbolic(arrays):  # sizes: Python's % is floor modulo; fmod takes a's sign
        fmod = shape_data.truncating_modulo if ctx.attr("fmod", 0) else operator.mod
        return [shape_data.elementwise(fmod, a, b)]
    return [np.fmod(a, b) if ctx.attr("fmod", 0) else np.mod(a, b)]


def _slice(ctx: NodeContext) -> list[np.ndarray] | None:
    data = ctx.known(0)
    if data is None or (ctx.opset >= 10 and any(ctx.known(i) is None for i in (1, 2))):
        return None  # bounds known only at run time: convert_slice's dynamic form
    for start, end, axis, step in zip(*slice_params(ctx)):
        first, last = shapes.normalized_slice_bounds(data.shape[axis], start, end, step)
        data = np.take(data, list(range(first, last, step)), axis=axis)
    return [data]


def _gather(ctx: NodeContext) -> list[np.ndarray] | None:
    data, indices = ctx.known(0), ctx.known(1)
    if data is None or indices is None or is_symbolic_array(indices):
        return None
    axis = ctx.attr("axis", 0)
    if not _small([*data.shape[:axis], *indices.shape, *data.shape[axis:][1:]]):
        return None
    return [np.take(data, indices, axis=axis)]


def _split(ctx: NodeContext) -> list[np.ndarray] | None:
    data = ctx.known(0)
    if data is None:
        return None
    axis, sizes = split_params(ctx)
    return np.split(data, np.cumsum(sizes)[:-1], axis=axis)


def _concat(ctx: NodeContext) -> list[np.ndarray] | None:
    arrays = _all_known(ctx)
    return None if arrays is None else [np.concatenate(arrays, axis=concat_axis(ctx))]


def _expand(ctx: NodeContext) -> list[np.ndarray] | None:
    data, shape = ctx.known(0), ctx.known(1)
    if data is None or shape is None or is_symbolic_array(shape):
        return None  # a symbolic result shape: the converter's run-time Expand
    out = shapes.broadcast_shapes(data.shape, tuple(int(d) for d in shape))
    return [np.broadcast_to(data, out).copy()] if _small(out) else None


def _range(ctx: NodeContext) -> list[np.ndarray] | None:
    """The exact element count first (np.arange overflows on int64 bounds and would
    allocate a huge range before FOLD_LIMIT is checked); the converter handles the rest."""
    arrays = _all_known(ctx)
    if arrays is None or any(a.size != 1 for a in arrays) or _symbolic(arrays):
        return None  # symbolic bounds: convert_range
    start, limit, delta = (a.reshape(()) for a in arrays)
    count = range_count(start, limit, delta)  # ValueError: the converter reports it
    return None if count > FOLD_LIMIT else [range_values(start, delta, count)]


def _where(ctx: NodeContext) -> list[np.ndarray] | None:
    arrays = _all_known(ctx)
    if arrays is None or not _broadcast_small(arrays) or is_symbolic_array(arrays[0]):
        return None
    return [np.where(*arrays)]


def _cast(ctx: NodeContext, x: np.ndarray) -> np.ndarray | None:
    """Cast; shape data stays symbolic through a cast to another integer type (its sizes
    fit). A cast to any other type is computed at run time (None: convert_cast casts the
    data materialized as a graph.symbolic_constant)."""
    to = cast_target(ctx)
    dtype = types.numpy_dtype(to)
    if is_symbolic_array(x):
        return x if dtype.kind in "iu" and to != types.TP.BOOL else None
    return cast_array(x, dtype, bool(ctx.attr("saturate", 1)),
                            ctx.attr("round_mode", "up"))


def _cast_like(ctx: NodeContext, x: np.ndarray) -> np.ndarray | None:
    dtype = element_dtype(ctx.element_type(1))
    if is_symbolic_array(x):  # as _cast
        return x if dtype.kind in "iu" and dtype != np.bool_ else None
    return cast_array(x, dtype, bool(ctx.attr("saturate", 1)))


FOLDERS: dict[str, Folder] = {
    "Identity": _unary(lambda ctx, x: x),
    "Cast": _unary(_cast),
    "CastLike": _unary(_cast_like),
    "Reshape": _unary(lambda ctx, x: x.reshape(reshape_params(ctx))),
    "Flatten": _unary(
        lambda ctx, x: x.reshape(shapes.flatten_shape(x.shape, ctx.attr("axis", 1)))
    ),
    "Squeeze": _unary(lambda ctx, x: x.reshape(shapes.squeeze_shape(x.shape,
                                                                    squeeze_params(ctx)))),
    "Unsqueeze": _unary(lambda ctx, x: x.reshape(shapes.unsqueeze_shape(x.shape,
                                                                        unsqueeze_params(ctx)))),
    "Transpose": _unary(lambda ctx, x: np.transpose(x, transpose_perm(ctx))),
    "Slice": _slice,
    "Shape": lambda ctx: [shape_data.shape_array(shape_slice(ctx))],
    "Gather": _gather,
    "Concat": _concat,
    "Split": _split,
    "Expand": _expand,
    "Range": _range,
    "Where": _where,
    "Add": _elementwise(np.add, integers_only=True, symbolic=operator.add),
    "Sub": _elementwise(np.subtract, integers_only=True, symbolic=operator.sub),
    "Mul": _elementwise(np.multiply, integers_only=True, symbolic=operator.mul),
    "Div": _elementwise(_div, integers_only=True, symbolic=shape_data.truncating_divide),
    "Neg": _elementwise(np.negative, integers_only=True, symbolic=operator.neg),
    "Abs": _elementwise(np.abs, integers_only=True, symbolic=shape_data.absolute),
    "Max": _elementwise(lambda *a: np.maximum.reduce(np.broadcast_arrays(*a)),
                        integers_only=True, symbolic=_variadic(sym_max)),
    "Min": _elementwise(lambda *a: np.minimum.reduce(np.broadcast_arrays(*a)),
                        integers_only=True, symbolic=_variadic(sym_min)),
    "Equal": _elementwise(np.equal, symbolic=shape_data.equal, compares=True),
    "Less": _elementwise(np.less, symbolic=operator.lt, compares=True),
    "Greater": _elementwise(np.greater, symbolic=operator.gt, compares=True),
    "LessOrEqual": _elementwise(np.less_equal, symbolic=operator.le, compares=True),
    "GreaterOrEqual": _elementwise(np.greater_equal, symbolic=operator.ge, compares=True),
    "Mod": _mod,
    "Xor": _elementwise(np.logical_xor),
    "Not": _elementwise(np.logical_not),
    "And": _elementwise(np.logical_and),
    "Or": _elementwise(np.logical_or),
    **REDUCE_FOLDERS,
}


DATA_OPS = frozenset({
    "Identity", "Cast", "CastLike", "Add", "Sub", "Mul", "Div", "Neg", "Abs", "Max", "Min",
    "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Mod", "ReduceSum",
    "ReduceProd", "ReduceMax", "ReduceMin", "ArgMax", "ArgMin", "CumSum",
})
"""Ops that only compute on their inputs' data: when that is symbolic shape data and the
folder cannot carry it, no converter can either (it would be a run-time computation)."""


def try_fold(ctx: NodeContext) -> list[np.ndarray | Tensor] | None:
    """The node's outputs as constants, or None if it is not a foldable computation.

    Shape data with symbolic elements (onnx_shape_data.py) comes back as Tensors of its
    integer type. None where the symbols leave a comparison open: the converter computes
    it in the run. UnsupportedOpError when a folder of DATA_OPS fails on such data (an
    overflow, a bad index)."""
    folder = FOLDERS.get(ctx.op_type)
    if folder is None:
        return None
    try:
        arrays = folder(ctx)
    except SymbolicDimError:
        # a comparison the symbols leave open (seq == 1): the converter computes it at run
        # time, on the shape data materialized as a graph.symbolic_constant
        return None
    except (ValueError, IndexError, TypeError, OverflowError) as err:
        if ctx.op_type in DATA_OPS and _symbolic_inputs(ctx):
            raise ctx.symbolic(err) from err
        return None  # let the converter report the problem with its own message
    if arrays is None or len(arrays) != ctx.num_outputs:  # e.g. Dropout's mask: not folded
        return None
    results: list[np.ndarray | Tensor] = []
    for i, array in enumerate(arrays):
        array = shape_data.as_array(array)
        if array.size > FOLD_LIMIT:
            return None
        if is_symbolic_array(array):
            results.append(Tensor.of_array(array, element=_data_element(ctx, i)))
            continue
        if types.onnx_type_of_numpy(array.dtype) is None:
            return None
        results.append(array)
    return results


def _symbolic_inputs(ctx: NodeContext) -> bool:
    return any(t.symbolic_data for t in ctx.tensors() if isinstance(t, Tensor))


def _data_element(ctx: NodeContext, i: int) -> Attribute:
    """The integer element type of folded shape data: ONNX's inferred one, else that of
    the op's first integer input (i64 for Shape and Size)."""
    el = ctx.inferred_element(i)
    if isinstance(el, IntegerType) and el.width.data > 1:
        return el
    if ctx.op_type == "Cast":
        return types.element_type(cast_target(ctx))
    if ctx.op_type == "CastLike":
        return ctx.element_type(1)
    for t in ctx.tensors():
        el = t.element_type if isinstance(t, Tensor) else None
        if isinstance(el, IntegerType) and el.width.data > 1:
            return el
    return i64
