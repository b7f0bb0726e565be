"""onnxc: an ONNX-to-native compiler built on xDSL and llvmlite.

    import onnxc
    model = onnxc.compile("resnet50.onnx", opt_level=1)
    (probs,) = model.run(None, {"data_0": x})

`import_onnx` gives the graph-dialect module, `optimize` the module after graph passes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from onnxc.errors import (
    CacheWarning,
    CompilationError,
    InternalCompilerError,
    InvalidArgumentError,
    InvalidInputError,
    LoweringError,
    ModelLoadError,
    OnnxcError,
    ResourceLimitError,
    ShapeInferenceError,
    ToolchainError,
    UnsupportedOpError,
)
from onnxc.version import __version__

if TYPE_CHECKING:
    from onnxc.api import compile, compile_artifact, optimize
    from onnxc.frontend import import_onnx
    from onnxc.runtime.artifact_load import load
    from onnxc.runtime.compiled_model import CompiledModel

_LAZY = {
    "compile": "onnxc.api",
    "compile_artifact": "onnxc.api",
    "load": "onnxc.runtime.artifact_load",
    "optimize": "onnxc.api",
    "import_onnx": "onnxc.frontend",
    "CompiledModel": "onnxc.runtime.compiled_model",
}


def __getattr__(name: str) -> Any:
    """Import the heavy parts (xDSL, onnx, llvmlite) only when first used."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'onnxc' has no attribute {name!r}")


__all__ = [
    "CacheWarning", "CompilationError", "CompiledModel", "InternalCompilerError",
    "InvalidArgumentError", "InvalidInputError", "LoweringError", "ModelLoadError",
    "OnnxcError", "ResourceLimitError", "ShapeInferenceError", "ToolchainError",
    "UnsupportedOpError",
    "__version__", "compile", "compile_artifact", "import_onnx", "load", "optimize",
]
