"""The element types a compiled model's inputs, outputs and constants may have, by name.

A cache entry or an artifact manifest names each tensor's dtype (`float32`, `bfloat16`,
`float8_e4m3fn`, `int4`, ...): never `dtype.str`, which is a void `|V2` for ml_dtypes'
types. This table is what those names may be, built from numpy and ml_dtypes alone so
that loading a compiled model imports neither onnx nor the frontend; a unit test keeps it
equal to the frontend's table of supported ONNX types (frontend/onnx_types.py).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from onnxc.dialects.string_dtype import STRING_DTYPE

_NUMPY = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64")
_ML_DTYPES = ("bfloat16", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
              "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn", "int4", "uint4", "int2",
              "uint2")

DTYPES: dict[str, np.dtype] = {
    **{name: np.dtype(name) for name in _NUMPY},
    **{name: np.dtype(getattr(ml_dtypes, name)) for name in _ML_DTYPES},
    "string": STRING_DTYPE,  # the native {ptr, len} pairs; runs take and give str arrays
}
_NAMES = {dtype: name for name, dtype in DTYPES.items()}


def dtype_named(name: str) -> np.dtype:
    """The dtype a stored description names; KeyError for any other name."""
    return DTYPES[name]


def name_of_dtype(dtype: np.dtype) -> str | None:
    """The name a stored description gives `dtype` (None: it has none)."""
    name = _NAMES.get(np.dtype(dtype))
    return name if name is not None and DTYPES[name] == dtype else None


__all__ = ["DTYPES", "dtype_named", "name_of_dtype"]
