"""Typed exceptions raised by onnxc.

Every failure a user can provoke (a bad model, an op we do not support, a wrong input at run
time, invalid IR text) surfaces as one of these, carrying where it happened, so that callers
can catch `OnnxcError` and nothing ever crashes the process.
"""

from __future__ import annotations

from collections.abc import Sequence


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


class InvalidArgumentError(OnnxcError):
    """An argument to onnxc's API or an ONNXC_* environment setting is not one onnxc can
    use (a model that is not a path, bytes or ModelProto; num_threads=0; a bad
    input_shapes entry), named with the value it got."""

    @classmethod
    def expected(cls, name: str, expected: str, value: object) -> InvalidArgumentError:
        """`name must be <expected>, got <type> <value>` (the value shortened to 80 chars)."""
        shown = repr(value)
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        return cls(f"{name} must be {expected}, got {type(value).__name__} {shown}")


class ResourceLimitError(OnnxcError):
    """The model needs more memory than onnxc may allocate (a tensor or arena past the
    bound, by default the memory available): refused at compile time, naming the node or
    value and the size."""


class LoweringError(OnnxcError):
    """An op reached a lowering stage that has no rule for it."""


class CompilationError(OnnxcError):
    """LLVM rejected the generated code (a bug in onnxc, reported instead of aborting)."""


class ToolchainError(CompilationError):
    """A tool an ahead-of-time artifact needs (the target's C compiler) is missing or failed
    to start; the message names the package that provides it."""


class InternalCompilerError(OnnxcError):
    """A pass left IR that fails verification: a bug in onnxc, reported with the pass, the
    failing op and where in the model it comes from (instead of xDSL's bare exception)."""

    def __init__(self, pass_name: str | None, op_name: str, origin: str | None, detail: str,
                 candidates: Sequence[str] = (), op: object = None):
        self.op = op
        """The failing xDSL operation (for tools that can locate it in their input)."""
        self.pass_name = pass_name
        self.op_name = op_name
        self.origin = origin
        self.detail = detail
        self.candidates = list(candidates)
        if pass_name is not None:
            after = f"after pass '{pass_name}'"
        elif self.candidates:
            after = "after one of the passes " + ", ".join(f"'{p}'" for p in self.candidates)
        else:
            after = "before any pass"
        where = f" ({origin})" if origin else ""
        super().__init__(f"internal compiler error: invalid IR {after}: '{op_name}' op "
                         f"{detail}{where}")


class CacheWarning(UserWarning):
    """The compile cache cannot be used safely (a directory another user owns or others
    can write, a key file with the wrong mode): the model is compiled without caching."""
