"""Typed exceptions raised by onnxc.

Every failure a user can provoke (a bad model, an op we do not support, a wrong input at run
time, invalid IR text) surfaces as one of these, carrying where it happened, so that callers
can catch `OnnxcError` and nothing ever crashes the process.
"""

from __future__ import annotations


class OnnxcError(Exception):
    """Base class of every error onnxc raises on purpose."""


class ModelLoadError(OnnxcError):
    """The model file or protobuf is malformed, truncated or inconsistent."""


class UnsupportedOpError(OnnxcError):
    """An ONNX node whose op type (or attribute value) onnxc cannot compile."""

    def __init__(self, op_type: str, node_name: str, opset: int, detail: str = ""):
        self.op_type = op_type
        self.node_name = node_name
        self.opset = opset
        self.detail = detail
        where = f"node '{node_name}'" if node_name else "an unnamed node"
        msg = f"unsupported op '{op_type}' ({where}, opset {opset})"
        if detail:
            msg += f": {detail}"
        super().__init__(msg)


class ShapeInferenceError(OnnxcError):
    """A tensor's static shape or element type could not be determined."""


class InvalidInputError(OnnxcError):
    """Run-time inputs do not match the compiled model's signature."""


class LoweringError(OnnxcError):
    """An op reached a lowering stage that has no rule for it."""


class CompilationError(OnnxcError):
    """LLVM rejected the generated code (a bug in onnxc, reported instead of aborting)."""
