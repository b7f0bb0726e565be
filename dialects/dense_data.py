"""Tensor data of the graph dialect: element types <-> numpy dtypes, dense bytes <-> arrays.

This module is the one owner of tensor data. Constants are `DenseIntOrFPElementsAttr`s over
raw little-endian bytes; the importer, the passes (folding, the evaluator, layouts), the
kernel builders and binding weights at run time all read and build them here, so that i1
(numpy bool), signed and unsigned integers and the ml_dtypes formats agree everywhere, and
so that passes and lowering need nothing from the ONNX frontend. What is ONNX's own (its
TensorProto data-type codes) stays in frontend/onnx_types.py, built on this table.

Arrays never go through Python lists: a constant of a large model is a view of its bytes.
"""

from __future__ import annotations

import ctypes

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
    IntegerType,
    Signedness,
    TensorType,
    f16,
    f32,
    f64,
    i1,
    i8,
    i16,
    i32,
    i64,
)
from xdsl.ir import Attribute

from onnxc.dialects.graph_strings import STRING_DTYPE, StringType

_UNSIGNED = Signedness.UNSIGNED

NARROW_FLOAT_TYPES: tuple[type[Attribute], ...] = (
    Float8E4M3FNType, Float8E4M3FNUZType, Float8E5M2Type, Float8E5M2FNUZType,
    Float8E8M0FNUType, Float4E2M1FNType)
"""The 8- and 4-bit float formats: storage only (converts and copies take them, no other op)."""

STORAGE_FLOAT_TYPES: tuple[type[Attribute], ...] = (BFloat16Type, *NARROW_FLOAT_TYPES)
"""The float formats the kernels have no arithmetic for, bfloat16 too: carried as integers of
their width and converted through f32 (lowering/graph_to_loops/cast_formats.py)."""

# The element types with tensor data, and the numpy dtype holding the same bytes. The
# storage-only formats are ml_dtypes arrays, one byte per 8-, 4- or 2-bit element.
_TABLE: tuple[tuple[Attribute, type], ...] = (
    (f16, np.float16), (f32, np.float32), (f64, np.float64),
    (BFloat16Type(), ml_dtypes.bfloat16),
    (Float8E4M3FNType(), ml_dtypes.float8_e4m3fn),
    (Float8E4M3FNUZType(), ml_dtypes.float8_e4m3fnuz),
    (Float8E5M2Type(), ml_dtypes.float8_e5m2),
    (Float8E5M2FNUZType(), ml_dtypes.float8_e5m2fnuz),
    (Float8E8M0FNUType(), ml_dtypes.float8_e8m0fnu),
    (Float4E2M1FNType(), ml_dtypes.float4_e2m1fn),
    (i1, np.bool_),
    (i8, np.int8), (i16, np.int16), (i32, np.int32), (i64, np.int64),
    (IntegerType(8, _UNSIGNED), np.uint8), (IntegerType(16, _UNSIGNED), np.uint16),
    (IntegerType(32, _UNSIGNED), np.uint32), (IntegerType(64, _UNSIGNED), np.uint64),
    (IntegerType(4), ml_dtypes.int4), (IntegerType(4, _UNSIGNED), ml_dtypes.uint4),
    (IntegerType(2), ml_dtypes.int2), (IntegerType(2, _UNSIGNED), ml_dtypes.uint2),
)
_DTYPE_OF: dict[Attribute, np.dtype] = {el: np.dtype(dt) for el, dt in _TABLE}
_DTYPE_OF[StringType()] = STRING_DTYPE  # the native pairs; no constant data is ever of it
_ELEMENT_OF: dict[np.dtype, Attribute] = {np.dtype(dt): el for el, dt in _TABLE}


def element_dtype(element: Attribute) -> np.dtype:
    """The numpy dtype with the same bytes as an element type (ValueError if none). Signed
    integers read as signless ones, and any 1-bit integer as bool."""
    if isinstance(element, IntegerType):
        width = element.width.data
        if width == 1 or element.signedness.data == Signedness.SIGNED:
            element = IntegerType(width)
    dtype = _DTYPE_OF.get(element)
    if dtype is None:
        raise ValueError(f"no numpy dtype for element type {element}")
    return dtype


def element_type_of(dtype: np.dtype) -> Attribute:
    """The element type whose data a numpy dtype holds (signless for signed integers;
    ValueError if none, also for a big-endian dtype)."""
    element = _ELEMENT_OF.get(np.dtype(dtype))
    if element is None:
        raise ValueError(f"no onnxc element type for numpy dtype {dtype}")
    return element


# ----------------------------------------------------------------------------- reading


def flat_values(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """A read-only zero-copy 1-D view of a dense attribute's elements in memory order (for a
    laid-out constant, its physical buffer)."""
    dtype = element_dtype(attr.get_element_type()).newbyteorder("<")
    return np.frombuffer(attr.data.data, dtype)


def to_numpy(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """A read-only zero-copy view of a dense attribute's data, in its shape."""
    return flat_values(attr).reshape(tuple(attr.get_shape()))


def values_in_shape(attr: DenseIntOrFPElementsAttr, shape) -> np.ndarray:
    """A dense attribute's values in `shape`: a one-element (splat) attribute is repeated
    into a new array, any other is a read-only view (as `to_numpy`)."""
    flat = flat_values(attr)
    shape = tuple(shape)
    return np.full(shape, flat[0], flat.dtype) if flat.size == 1 else flat.reshape(shape)


# ----------------------------------------------------------------------------- building


def from_numpy(array, of: Attribute | None = None) -> DenseIntOrFPElementsAttr:
    """A dense attribute holding `array`, converted to the element dtype (C order,
    little-endian). `of` is the element type (None: the one of `array`'s dtype), and the
    attribute takes `array`'s shape; or it is a whole tensor type, used as is, and `array`
    holds its elements in memory order (a laid-out constant's physical buffer, or a kernel
    table flattened to its 1-D type).

    When `array` already views a whole `bytes` object in the right dtype (what
    `onnx.numpy_helper.to_array` returns for raw and external data), the attribute shares
    it instead of holding a third copy of every weight (protobuf, array, attribute)."""
    if of is None:
        array = np.asarray(array)
        of = element_type_of(array.dtype)
    element = of.get_element_type() if isinstance(of, TensorType) else of
    dtype = element_dtype(element).newbyteorder("<")
    array = np.asarray(array, dtype=dtype, order="C")  # keeps 0-d arrays 0-d
    t = of if isinstance(of, TensorType) else TensorType(element, array.shape)
    data = _viewed_bytes(array)
    return DenseIntOrFPElementsAttr(t, BytesAttr(array.tobytes() if data is None else data))


IN_PLACE_MIN_BYTES = 1 << 16
"""From this size `zeros` builds its array in a `bytes` object (below, a copy costs
nothing)."""

_bytes_address = ctypes.pythonapi.PyBytes_AsString
_bytes_address.restype = ctypes.c_void_p
_bytes_address.argtypes = (ctypes.py_object,)


def as_strided_elements(array: np.ndarray, offset: int, shape, strides) -> np.ndarray:
    """graph.as_strided on numpy: elements offset + sum(i_k * strides[k]) of `array`'s
    row-major elements, as a new array of `shape` (the evaluator's reference; the ONNX
    export's Gather indices are this of an arange)."""
    flat = np.ascontiguousarray(array).reshape(-1)[offset:]
    return np.lib.stride_tricks.as_strided(
        flat, tuple(shape), tuple(s * flat.itemsize for s in strides), writeable=False).copy()


def zeros(shape, dtype) -> np.ndarray:
    """A new zeroed, writable C-order array for data that becomes a dense attribute:
    `from_numpy` of it shares its memory instead of copying it. Write it in full first, and
    never after: the memory is then the attribute's immutable bytes.

    Large arrays live in a new `bytes` object (`bytes(n)`, which CPython allocates zeroed,
    with calloc), viewed writable (`_BytesMemory`) while this function's caller is its only
    holder. ResNet-50's batch-norm folds and packed conv weights copied 2 x 100 MB into
    attribute bytes (`tobytes`) otherwise."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    nbytes = count * dtype.itemsize
    if nbytes < IN_PLACE_MIN_BYTES:
        return np.zeros(shape, dtype)
    return np.asarray(_BytesMemory(bytes(nbytes))).view(dtype).reshape(shape)


class _BytesMemory:
    """The memory of a new `bytes` object as a writable numpy buffer (numpy's array
    interface, so no ctypes array type per size), holding the object: what `_viewed_bytes`
    finds at the base of a `zeros` array."""

    __slots__ = ("data",)

    def __init__(self, data: bytes):
        self.data = data

    @property
    def __array_interface__(self) -> dict:
        return {"data": (_bytes_address(self.data), False), "shape": (len(self.data),),
                "typestr": "|u1", "version": 3}


def _viewed_bytes(array: np.ndarray) -> bytes | None:
    """The `bytes` object that C-contiguous little-endian `array` views in full, else None
    (a `zeros` array's too)."""
    base = array.base
    while isinstance(base, np.ndarray):
        base = base.base
    if isinstance(base, _BytesMemory):
        base = base.data
    if not isinstance(base, bytes) or len(base) != array.nbytes or not array.flags.c_contiguous:
        return None
    if array.nbytes == 0 or array.ctypes.data != np.frombuffer(base, np.uint8).ctypes.data:
        return None
    return base


# ----------------------------------------------------------------------------- comparing

HASHED_IN_FULL_BYTES = 4096
"""Data up to this size is its own `lookup_key` (hashing it costs nothing)."""


def lookup_key(data: bytes) -> bytes | tuple[int, bytes, bytes, bytes]:
    """A dict key for a constant's bytes that costs little to hash: the bytes themselves up
    to HASHED_IN_FULL_BYTES, else the length, the first and last 64 bytes and 64 evenly
    spaced ones. Equal data has equal keys; data with equal keys must still be compared
    (`==`, a memcmp that stops at the first difference). Hashing a weight in full (SipHash,
    once per `bytes` object) cost ResNet-50 0.1 s per pass that keyed by it, 100 MB each."""
    if len(data) <= HASHED_IN_FULL_BYTES:
        return data
    return len(data), data[:64], data[-64:], data[:: len(data) // 64]


# ----------------------------------------------------------------------------- converting

_NARROW_INTS = frozenset(np.dtype(dt) for dt in (
    ml_dtypes.int4, ml_dtypes.uint4, ml_dtypes.int2, ml_dtypes.uint2))
_SATURATING_F8 = frozenset(np.dtype(dt) for dt in (
    ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e4m3fnuz, ml_dtypes.float8_e5m2,
    ml_dtypes.float8_e5m2fnuz))


def cast_array(x: np.ndarray, dtype: np.dtype, saturate: bool = True,
               round_mode: str = "up") -> np.ndarray:
    """ONNX Cast of an array: numpy's astype, except that an 8-bit float target saturates
    (clamps to its largest finite value, NaN kept) unless `saturate` is off, E8M0 rounds
    by `round_mode`, and a float cast to a 4- or 2-bit integer goes through int64 and wraps,
    as the kernels do (ONNX leaves such a cast out of range undefined; ml_dtypes 0.7 gives 0
    where earlier releases wrapped, so a fold would otherwise depend on its version). The
    importer's folding and the evaluator share it, so both cast alike."""
    dtype = np.dtype(dtype)
    if dtype in _NARROW_INTS and x.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            return x.astype(np.int64).astype(dtype)
    if dtype == np.dtype(ml_dtypes.float8_e8m0fnu):
        # onnx owns E8M0's rounding rule; imported here so that the dialects load without it
        from onnx.numpy_helper import to_float8e8m0

        return to_float8e8m0(x.astype(np.float32), saturate, round_mode)
    if saturate and dtype in _SATURATING_F8:
        limit = float(ml_dtypes.finfo(dtype).max)
        x = np.where(np.isnan(x), x, np.clip(x.astype(np.float64), -limit, limit))
    return x.astype(dtype)
