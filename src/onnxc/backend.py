"""`onnxc.backend`: the ONNX backend entry points (see onnxc.runtime.backend)."""

from onnxc.runtime.backend import (
    OnnxcBackend,
    OnnxcBackendRep,
    UnsupportedByBackend,
    is_compatible,
    prepare,
    run,
    run_model,
    supports_device,
    unsupported_op_types,
)

__all__ = [
    "OnnxcBackend", "OnnxcBackendRep", "UnsupportedByBackend", "is_compatible", "prepare", "run",
    "run_model", "supports_device", "unsupported_op_types",
]
