"""Tensor data of the graph dialect: element types <-> numpy dtypes, dense bytes <-> arrays.

Constants are `DenseIntOrFPElementsAttr`s over raw little-endian bytes; everything that reads
or builds them (constant folding, the evaluator, binding weights at run time) goes through
these functions so that i1 (numpy bool), signed and unsigned integers agree everywhere.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from xdsl.dialects.builtin import (
    BFloat16Type,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    Float4E2M1FNType,
    Float8E4M3FNType,
    Float8E4M3FNUZType,
    Float8E5M2FNUZType,
    Float8E5M2Type,
    Float8E8M0FNUType,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    Signedness,
    TensorType,
)
from xdsl.ir import Attribute

_FLOATS = {
    Float16Type: np.float16, Float32Type: np.float32, Float64Type: np.float64,
    # storage-only formats: ml_dtypes, one byte per 8-, 4- or 2-bit element
    BFloat16Type: ml_dtypes.bfloat16,
    Float8E4M3FNType: ml_dtypes.float8_e4m3fn,
    Float8E4M3FNUZType: ml_dtypes.float8_e4m3fnuz,
    Float8E5M2Type: ml_dtypes.float8_e5m2,
    Float8E5M2FNUZType: ml_dtypes.float8_e5m2fnuz,
    Float8E8M0FNUType: ml_dtypes.float8_e8m0fnu,
    Float4E2M1FNType: ml_dtypes.float4_e2m1fn,
}
_NARROW_INTS = {(4, False): ml_dtypes.int4, (4, True): ml_dtypes.uint4,
                (2, False): ml_dtypes.int2, (2, True): ml_dtypes.uint2}


def element_dtype(element: Attribute) -> np.dtype:
    """The numpy dtype with the same bytes as an element type (ValueError if none)."""
    for kind, dtype in _FLOATS.items():
        if isinstance(element, kind):
            return np.dtype(dtype)
    if isinstance(element, IntegerType):
        width = element.width.data
        if width == 1:
            return np.dtype(np.bool_)
        unsigned = element.signedness.data == Signedness.UNSIGNED
        if width in (8, 16, 32, 64):
            return np.dtype(f"{'u' if unsigned else 'i'}{width // 8}")
        if (width, unsigned) in _NARROW_INTS:
            return np.dtype(_NARROW_INTS[width, unsigned])
    raise ValueError(f"no numpy dtype for element type {element}")


def to_numpy(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """A read-only zero-copy view of a dense attribute's data, in its shape."""
    dtype = element_dtype(attr.get_element_type()).newbyteorder("<")
    return np.frombuffer(attr.data.data, dtype).reshape(tuple(attr.get_shape()))


def values_in_shape(attr: DenseIntOrFPElementsAttr, shape) -> np.ndarray:
    """A dense attribute's values in `shape`: a one-element (splat) attribute is repeated
    into a new array, any other is a read-only view (as `to_numpy`)."""
    dtype = element_dtype(attr.get_element_type()).newbyteorder("<")
    flat = np.frombuffer(attr.data.data, dtype)
    shape = tuple(shape)
    return np.full(shape, flat[0], dtype) if flat.size == 1 else flat.reshape(shape)


def from_numpy(array: np.ndarray, element: Attribute) -> DenseIntOrFPElementsAttr:
    """A dense attribute of `element` type holding `array` (converted, C order, little-endian)."""
    dtype = element_dtype(element).newbyteorder("<")
    array = np.array(array, dtype=dtype, order="C")  # keeps 0-d arrays 0-d
    return DenseIntOrFPElementsAttr(TensorType(element, array.shape), BytesAttr(array.tobytes()))
