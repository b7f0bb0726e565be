"""Shape data: small integer tensors whose elements are sizes, some of them symbolic.

`Shape` of a tensor with symbolic dimensions (dialects/symbolic_dims.py) is known at import
except for those dimensions: its data is a numpy `object` array of Python ints and `SymDim`s
(`[1, seq, 768]`). The folders (onnx_fold.py) carry such arrays through the subgraphs that
exporters build shapes with (Gather, Slice, Concat, Unsqueeze, integer arithmetic, Equal,
Where, ...), and the converters that read a shape input as a property (Reshape, Expand,
ConstantOfShape, Range, Tile) take their SymDims as result dimensions.

Where an op needs such data as a tensor (a Loop's trip count, a Cast to float, a graph
output), it materializes as a `graph.symbolic_constant`, whose kernel computes each element
from the sizes of the run. Computing on it at import stays preferred: the folders carry it
as far as they can; a comparison the sizes leave undecided becomes a tensor too.

An array whose elements all turn out static (`Gather(Shape(x), 0)` of a static batch) is
normalized back to a plain integer array: only the symbolic parts stay objects.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from onnxc.dialects.size_facts import decide_equal
from onnxc.dialects.symbolic_dims import (
    Dim,
    SymbolicDimError,
    SymDim,
    floordiv,
    simplify,
    sym_max,
)


def is_symbolic_array(array: object) -> bool:
    """Whether `array` is shape data holding symbolic elements (an object array)."""
    return isinstance(array, np.ndarray) and array.dtype == object


def _element(value: object) -> Dim:
    if isinstance(value, SymDim):
        return simplify(value)
    if isinstance(value, bool | np.bool_):
        return int(value)
    if isinstance(value, int | np.integer):
        return int(value)
    raise TypeError(f"shape data element {value!r} is not an integer or a symbolic size")


INT64 = np.dtype(np.int64)


def normalized(array: np.ndarray, dtype: np.dtype = INT64) -> np.ndarray:
    """An object array's elements as ints and SymDims; a plain array of `dtype` when none
    is symbolic. Other arrays are returned as they are."""
    if not is_symbolic_array(array):
        return array
    values = [_element(v) for v in array.reshape(-1)]
    if all(isinstance(v, int) for v in values):
        return np.array(values, dtype=dtype).reshape(array.shape)
    out = np.empty(array.shape, dtype=object)
    out.reshape(-1)[:] = values if out.size else []
    return out


def as_array(value: object) -> np.ndarray:
    """`value` as an array: numpy returns a bare element (a SymDim) from an indexing or
    reduction of an object array where it would return a 0-d array of numbers."""
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, SymDim):
        out = np.empty((), dtype=object)
        out[()] = value
        return out
    return np.asarray(value)


def shape_array(values: Dim | Sequence[Dim], dtype: np.dtype = INT64) -> np.ndarray:
    """Dimensions (ints and SymDims, a sequence or one of them) as shape data."""
    if isinstance(values, int | SymDim):
        out = np.empty((), dtype=object)
        out[()] = values
    else:
        out = np.empty((len(values),), dtype=object)
        out[:] = list(values)
    return normalized(out, dtype)


def dims_of(array: np.ndarray) -> list[Dim]:
    """The elements of (1-D or scalar) shape data as ints and SymDims."""
    return [_element(v) for v in np.asarray(array).reshape(-1)]


def symbols_in(values: Iterable[object]) -> list[str]:
    """The symbols that the SymDims among `values` use, sorted."""
    found: set[str] = set()
    for v in values:
        if isinstance(v, SymDim):
            found |= v.symbols()
    return sorted(found)


# ------------------------------------------------------------------ elementwise arithmetic


def equal(a: Dim, b: Dim) -> bool:
    """a == b for sizes: decided for every value of the symbols (size_facts), else
    SymbolicDimError (SymDim's own == only says whether the expressions are the same)."""
    answer = decide_equal(a, b)
    if answer is None:
        raise SymbolicDimError(f"whether {a} == {b} depends on the symbols")
    return answer


def truncating_divide(a: Dim, b: Dim) -> Dim:
    """ONNX integer Div (truncation toward zero): floor division of |a|, with a's sign
    (`max` picks the sign's part when the symbols leave it open)."""
    if isinstance(a, int) and isinstance(b, int):
        if b == 0:
            raise ValueError("division by zero")
        quotient = abs(a) // abs(b)
        return -quotient if (a < 0) != (b < 0) else quotient
    if isinstance(b, int) and b < 0:
        return -truncating_divide(a, -b)
    return floordiv(sym_max(a, 0), b) - floordiv(sym_max(-a, 0), b)


def truncating_modulo(a: Dim, b: Dim) -> Dim:
    """ONNX integer Mod with fmod=1: the remainder has a's sign."""
    return a - b * truncating_divide(a, b)


def absolute(a: Dim) -> Dim:
    return abs(a) if isinstance(a, int) else sym_max(a, -a)


def elementwise(fn, *arrays: np.ndarray, result: np.dtype | None = None) -> np.ndarray:
    """`fn` on the broadcast elements of object arrays (ints and SymDims), with numpy's
    broadcasting; `result` converts the outcome (np.bool_ for comparisons)."""
    out = np.frompyfunc(lambda *xs: fn(*(_element(x) for x in xs)), len(arrays), 1)(*arrays)
    out = np.asarray(out, dtype=object)
    return out.astype(result) if result is not None else out
