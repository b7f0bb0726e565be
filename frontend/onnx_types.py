"""ONNX data types: TensorProto codes <-> xDSL element types, and which ops take which.

What is ONNX's own lives here; the element type <-> numpy dtype table, dense constants and
array casts are the graph dialect's tensor data (dialects/dense_data.py), which passes and
lowering use without importing the frontend.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import onnx
from xdsl.dialects.builtin import (
    BFloat16Type,
    DenseArrayBase,
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
from onnxc.dialects.dense_data import NARROW_FLOAT_TYPES, element_dtype, element_type_of
from onnxc.dialects.graph_strings import StringType, string
from onnxc.dialects.symbolic_dims import Dim

TP = onnx.TensorProto
UI8 = IntegerType(8, Signedness.UNSIGNED)

# ONNX data type -> xDSL element type. Everything else is unsupported; the numpy dtypes
# come from the dialect's table (dense_data).
_ELEMENT_TYPES: dict[int, Attribute] = {
    TP.FLOAT: f32,
    TP.DOUBLE: f64,
    TP.FLOAT16: f16,
    # storage-only types (Cast/CastLike/Identity; numpy arrays of ml_dtypes, a byte each for
    # the 8-, 4- and 2-bit ones)
    TP.BFLOAT16: BFloat16Type(),
    TP.FLOAT8E4M3FN: Float8E4M3FNType(),
    TP.FLOAT8E4M3FNUZ: Float8E4M3FNUZType(),
    TP.FLOAT8E5M2: Float8E5M2Type(),
    TP.FLOAT8E5M2FNUZ: Float8E5M2FNUZType(),
    TP.FLOAT8E8M0: Float8E8M0FNUType(),
    TP.FLOAT4E2M1: Float4E2M1FNType(),
    TP.INT4: IntegerType(4),
    TP.UINT4: IntegerType(4, Signedness.UNSIGNED),
    TP.INT2: IntegerType(2),
    TP.UINT2: IntegerType(2, Signedness.UNSIGNED),
    TP.INT64: i64,
    TP.INT32: i32,
    TP.INT8: i8,
    TP.UINT8: UI8,
    TP.INT16: i16,
    TP.UINT16: IntegerType(16, Signedness.UNSIGNED),
    TP.UINT32: IntegerType(32, Signedness.UNSIGNED),
    TP.UINT64: IntegerType(64, Signedness.UNSIGNED),
    TP.BOOL: i1,
    TP.STRING: string,  # graph inputs and outputs, and the ops of STRING_OPS (docs/strings.md)
}
_BY_XDSL = {el: onnx_type for onnx_type, el in _ELEMENT_TYPES.items()}

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
    return _ELEMENT_TYPES[onnx_type]


def numpy_dtype(onnx_type: int) -> np.dtype:
    return element_dtype(_ELEMENT_TYPES[onnx_type])


def onnx_type_of_numpy(dtype: np.dtype) -> int | None:
    try:
        return _BY_XDSL.get(element_type_of(dtype))
    except ValueError:
        return None


def onnx_type_of_element(el: Attribute) -> int:
    return _BY_XDSL[el]


def is_float(el: Attribute) -> bool:
    return isinstance(el, Float16Type | BFloat16Type | Float32Type | Float64Type)


STORAGE_OPS = frozenset({"Cast", "CastLike", "Identity", "BitCast", "QuantizeLinear",
                         "DequantizeLinear", "com.microsoft.GatherBlockQuantized"})
"""The ops that take the storage-only types (8/4-bit floats, 4/2-bit integers): converts
and copies (Quantize/DequantizeLinear convert them in their kernels, com.microsoft's
GatherBlockQuantized its constant table at compile time). FLOAT16 and BFLOAT16 tensors go to every op: those whose kernels have no half
support compute in f32 between casts (passes/half_precision.py)."""


def _is_storage_only(el: Attribute) -> bool:
    narrow_int = isinstance(el, IntegerType) and el.width.data in (2, 4)
    return narrow_int or isinstance(el, NARROW_FLOAT_TYPES)


STRING_OPS = frozenset({
    "Identity", "Reshape", "Transpose", "Gather", "Concat", "Slice", "Squeeze", "Unsqueeze",
    "Flatten", "Expand", "Where", "Equal", "Split", "Tile", "Shape", "Size", "GatherElements",
    "GatherND", "Compress", "ReverseSequence", "RegexFullMatch", "StringSplit",
    "StringNormalizer", "StringConcat", "Cast", "CastLike", "SequenceConstruct", "SequenceInsert", "SequenceAt",
    "SequenceLength", "SequenceEmpty", "SequenceErase", "SplitToSequence", "ConcatFromSequence",
    "Optional", "OptionalGetElement", "OptionalHasElement",
    "ai.onnx.ml.LabelEncoder", "ai.onnx.ml.OneHotEncoder", "ai.onnx.ml.LinearClassifier",
    "ai.onnx.ml.SVMClassifier", "ai.onnx.ml.CategoryMapper"})
"""The ops that take STRING tensors: those that only move elements (a string moves as a
16-byte pair, AnyElementKernel), Equal, and the string ops (docs/strings.md)."""


def limited_type_detail(op_type: str, element_types) -> str | None:
    """Why `op_type` cannot take or produce these element types, or None if it can."""
    for el in element_types:
        if isinstance(el, StringType) and op_type not in STRING_OPS:
            return f"{op_type} of STRING tensors (see docs/strings.md for the ops that take them)"
        if _is_storage_only(el) and op_type not in STORAGE_OPS:
            return f"{op_type} of {type_name(_BY_XDSL[el])} tensors (only {', '.join(sorted(STORAGE_OPS))})"
    return None


def tensor_type(shape: Sequence[Dim], el: Attribute) -> TensorType:
    """The type of a tensor of `shape` (ints, and SymDims for symbolic dimensions:
    `tensor<1x?x768xf32, #graph.dims<["seq"]>>`)."""
    return graph_base.tensor_type(tuple(shape), el)


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
