"""What a request and a response are once a front end has decoded them.

HTTP (JSON or binary tensors) and gRPC decode into these and encode from them, so the core
never sees a wire format. Tensors are numpy arrays; strings are object arrays of bytes
(the protocol's BYTES type). Datatype names are the protocol's ("FP32", "INT64", "BYTES").
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# Open Inference Protocol datatype <-> numpy dtype (BYTES: object arrays of bytes)
DATATYPES: dict[str, np.dtype] = {
    "BOOL": np.dtype(np.bool_),
    "UINT8": np.dtype(np.uint8), "UINT16": np.dtype(np.uint16),
    "UINT32": np.dtype(np.uint32), "UINT64": np.dtype(np.uint64),
    "INT8": np.dtype(np.int8), "INT16": np.dtype(np.int16),
    "INT32": np.dtype(np.int32), "INT64": np.dtype(np.int64),
    "FP16": np.dtype(np.float16), "FP32": np.dtype(np.float32), "FP64": np.dtype(np.float64),
    "BYTES": np.dtype(object),
}


def datatype_of(dtype: np.dtype) -> str:
    """The protocol's name for a numpy dtype (onnxc's string tensors are BYTES)."""
    dtype = np.dtype(dtype)
    if dtype.kind in "OUS":
        return "BYTES"
    for name, candidate in DATATYPES.items():
        if candidate == dtype:
            return name
    raise ValueError(f"no Open Inference Protocol datatype for {dtype}")


@dataclass(frozen=True)
class TensorMetadata:
    """A model input or output as the protocol's metadata lists it (-1: any size)."""

    name: str
    datatype: str
    shape: tuple[int, ...]


@dataclass
class InferRequest:
    """One decoded inference request."""

    inputs: dict[str, np.ndarray]
    requested_outputs: list[str] | None = None
    """None: every output of the model"""
    id: str = ""
    parameters: dict[str, object] = field(default_factory=dict)
    binary_outputs: dict[str, bool] = field(default_factory=dict)
    """HTTP only: output name -> answer it as binary data (the `binary_data` parameter)"""


@dataclass
class InferResponse:
    """One answered request: the outputs it asked for, and which version served it."""

    model_name: str
    model_version: str
    outputs: dict[str, np.ndarray]
    id: str = ""
    parameters: dict[str, object] = field(default_factory=dict)
