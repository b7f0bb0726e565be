"""ONNX element types <-> xDSL types <-> numpy dtypes, and dense constants from numpy.

Constants become `DenseIntOrFPElementsAttr` built straight from the array's bytes: going
through Python lists would make importing a large model take minutes instead of seconds.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import ml_dtypes
import numpy as np
import onnx
from xdsl.dialects.builtin import (
    BFloat16Type,
    BytesAttr,
    DenseArrayBase,
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
    FloatAttr,
    IntegerAttr,
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

from onnxc.dialects import graph_base
from onnxc.dialects.symbolic_dims import Dim

TP = onnx.TensorProto
UI8 = IntegerType(8, Signedness.UNSIGNED)

# ONNX data type -> (xDSL element type, numpy dtype). Everything else is unsupported.
_ELEMENT_TYPES: dict[int, tuple[Attribute, np.dtype]] = {
    TP.FLOAT: (f32, np.dtype(np.float32)),
    TP.DOUBLE: (f64, np.dtype(np.float64)),
    TP.FLOAT16: (f16, np.dtype(np.float16)),
    # storage-only types (Cast/CastLike/Identity; numpy arrays of ml_dtypes, a byte each for
    # the 8-, 4- and 2-bit ones)
    TP.BFLOAT16: (BFloat16Type(), np.dtype(ml_dtypes.bfloat16)),
    TP.FLOAT8E4M3FN: (Float8E4M3FNType(), np.dtype(ml_dtypes.float8_e4m3fn)),
    TP.FLOAT8E4M3FNUZ: (Float8E4M3FNUZType(), np.dtype(ml_dtypes.float8_e4m3fnuz)),
    TP.FLOAT8E5M2: (Float8E5M2Type(), np.dtype(ml_dtypes.float8_e5m2)),
    TP.FLOAT8E5M2FNUZ: (Float8E5M2FNUZType(), np.dtype(ml_dtypes.float8_e5m2fnuz)),
    TP.FLOAT8E8M0: (Float8E8M0FNUType(), np.dtype(ml_dtypes.float8_e8m0fnu)),
    TP.FLOAT4E2M1: (Float4E2M1FNType(), np.dtype(ml_dtypes.float4_e2m1fn)),
    TP.INT4: (IntegerType(4), np.dtype(ml_dtypes.int4)),
    TP.UINT4: (IntegerType(4, Signedness.UNSIGNED), np.dtype(ml_dtypes.uint4)),
    TP.INT2: (IntegerType(2), np.dtype(ml_dtypes.int2)),
    TP.UINT2: (IntegerType(2, Signedness.UNSIGNED), np.dtype(ml_dtypes.uint2)),
    TP.INT64: (i64, np.dtype(np.int64)),
    TP.INT32: (i32, np.dtype(np.int32)),
    TP.INT8: (i8, np.dtype(np.int8)),
    TP.UINT8: (UI8, np.dtype(np.uint8)),
    TP.INT16: (i16, np.dtype(np.int16)),
    TP.UINT16: (IntegerType(16, Signedness.UNSIGNED), np.dtype(np.uint16)),
    TP.UINT32: (IntegerType(32, Signedness.UNSIGNED), np.dtype(np.uint32)),
    TP.UINT64: (IntegerType(64, Signedness.UNSIGNED), np.dtype(np.uint64)),
    TP.BOOL: (i1, np.dtype(np.bool_)),
}
_BY_NUMPY = {dt: onnx_type for onnx_type, (_, dt) in _ELEMENT_TYPES.items()}
_BY_XDSL = {el: onnx_type for onnx_type, (el, _) in _ELEMENT_TYPES.items()}

SUPPORTED_NAMES = ", ".join(TP.DataType.Name(t) for t in _ELEMENT_TYPES)


def is_supported(onnx_type: int) -> bool:
    return onnx_type in _ELEMENT_TYPES


def type_name(onnx_type: int) -> str:
    try:
        return TP.DataType.Name(onnx_type)
    except ValueError:
        return f"data type {onnx_type}"


def element_type(onnx_type: int) -> Attribute:
    """The xDSL element type; callers check `is_supported` first."""
    return _ELEMENT_TYPES[onnx_type][0]


def numpy_dtype(onnx_type: int) -> np.dtype:
    return _ELEMENT_TYPES[onnx_type][1]


def onnx_type_of_numpy(dtype: np.dtype) -> int | None:
    return _BY_NUMPY.get(np.dtype(dtype))


def onnx_type_of_element(el: Attribute) -> int:
    return _BY_XDSL[el]


def numpy_dtype_of_element(el: Attribute) -> np.dtype:
    return numpy_dtype(onnx_type_of_element(el))


def is_float(el: Attribute) -> bool:
    return isinstance(el, Float16Type | BFloat16Type | Float32Type | Float64Type)


STORAGE_OPS = frozenset({"Cast", "CastLike", "Identity", "BitCast", "QuantizeLinear",
                         "DequantizeLinear"})
"""The ops that take the storage-only types (8/4-bit floats, 4/2-bit integers): converts
and copies (Quantize/DequantizeLinear convert them in their kernels). FLOAT16 and BFLOAT16 tensors go to every op: those whose kernels have no half
support compute in f32 between casts (passes/half_precision.py)."""


def _is_storage_only(el: Attribute) -> bool:
    narrow_int = isinstance(el, IntegerType) and el.width.data in (2, 4)
    return narrow_int or isinstance(el, Float8E4M3FNType | Float8E4M3FNUZType
                                    | Float8E5M2Type | Float8E5M2FNUZType | Float8E8M0FNUType
                                    | Float4E2M1FNType)


def limited_type_detail(op_type: str, element_types) -> str | None:
    """Why `op_type` cannot take or produce these element types, or None if it can."""
    for el in element_types:
        if _is_storage_only(el) and op_type not in STORAGE_OPS:
            return f"{op_type} of {type_name(_BY_XDSL[el])} tensors (only {', '.join(sorted(STORAGE_OPS))})"
    return None


_F8 = (TP.FLOAT8E4M3FN, TP.FLOAT8E4M3FNUZ, TP.FLOAT8E5M2, TP.FLOAT8E5M2FNUZ)


def cast_array(x: np.ndarray, dtype: np.dtype, saturate: bool = True,
               round_mode: str = "up") -> np.ndarray:
    """ONNX Cast of an array: numpy's astype, except that an 8-bit float target saturates
    (clamps to its largest finite value, NaN kept) unless `saturate` is off, and E8M0 rounds
    by `round_mode`."""
    if _BY_NUMPY.get(np.dtype(dtype)) == TP.FLOAT8E8M0:
        return onnx.numpy_helper.to_float8e8m0(x.astype(np.float32), saturate, round_mode)
    if saturate and _BY_NUMPY.get(np.dtype(dtype)) in _F8:
        limit = float(ml_dtypes.finfo(dtype).max)
        x = np.where(np.isnan(x), x, np.clip(x.astype(np.float64), -limit, limit))
    return x.astype(dtype)


def tensor_type(shape: Sequence[Dim], el: Attribute) -> TensorType:
    """The type of a tensor of `shape` (ints, and SymDims for symbolic dimensions:
    `tensor<1x?x768xf32, #graph.dims<["seq"]>>`)."""
    return graph_base.tensor_type(tuple(shape), el)


def dense(array: np.ndarray) -> DenseIntOrFPElementsAttr:
    """A dense attribute holding `array`'s bytes (little-endian, C order)."""
    onnx_type = onnx_type_of_numpy(array.dtype)
    if onnx_type is None:
        raise ValueError(f"no onnxc element type for numpy dtype {array.dtype}")
    data = _viewed_bytes(array)
    if data is None:
        data = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()
    return DenseIntOrFPElementsAttr(
        tensor_type(tuple(array.shape), element_type(onnx_type)), BytesAttr(data)
    )


def _viewed_bytes(array: np.ndarray) -> bytes | None:
    """The `bytes` object `array` views in full, already in the attribute's byte order:
    what `numpy_helper.to_array` returns for raw (and external) data. The attribute then
    shares it instead of holding a third copy of every weight (protobuf, array, attribute)."""
    base = array.base
    while isinstance(base, np.ndarray):
        base = base.base
    if not isinstance(base, bytes) or len(base) != array.nbytes or not array.flags.c_contiguous:
        return None
    little = array.dtype.byteorder == "<" or (
        array.dtype.byteorder in "=|" and np.little_endian)
    if not little or array.nbytes == 0:
        return None
    if array.ctypes.data != np.frombuffer(base, np.uint8).ctypes.data:
        return None
    return base


def i64_array(values) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def i64_attr(value: int) -> IntegerAttr:
    return IntegerAttr(int(value), i64)


def float_attr(value: float, el: Attribute = f32) -> FloatAttr:
    """A float property; integer tensors keep their bounds as f64 (exact up to 2**53)."""
    return FloatAttr(float(value), el if is_float(el) else f64)


_INVALID_NAME_CHARS = re.compile(r"[^A-Za-z0-9_$.-]")


def name_hint(onnx_name: str) -> str | None:
    """A valid SSA name hint derived from an ONNX value name, or None if nothing is left."""
    name = _INVALID_NAME_CHARS.sub("_", onnx_name).strip("_")
    if not name:
        return None
    if name[0].isdigit():
        name = "v" + name
    return name
