"""The string element type, `!graph.string`: ONNX's STRING tensors (docs/strings.md).

A string element is 16 bytes in native code, a `{i8* ptr, i64 len}` pair of UTF-8 bytes
that are not NUL-terminated; the bytes live outside the tensor (in the caller's input
memory, a constant's blob or a run's output arena). A kernel that only moves elements moves
a pair like any 16-byte element (it is carried as an `i128` in LLVM), so the data-movement
ops with `AnyElementKernel` take strings as they are.
"""

from __future__ import annotations

from xdsl.dialects.builtin import FixedBitwidthType
from xdsl.ir import Attribute, ParametrizedAttribute
from xdsl.irdl import irdl_attr_definition

from onnxc.dialects.string_dtype import STRING_BYTES, STRING_DTYPE

__all__ = ["STRING_BYTES", "STRING_DTYPE", "StringType", "is_string", "string"]


@irdl_attr_definition
class StringType(ParametrizedAttribute, FixedBitwidthType):
    """`!graph.string`: a UTF-8 string element, 16 bytes (pointer, length) in memory."""

    name = "graph.string"

    @property
    def bitwidth(self) -> int:
        return 8 * STRING_BYTES

    @property
    def compile_time_size(self) -> int:
        return STRING_BYTES


string = StringType()


def is_string(t: Attribute) -> bool:
    """Whether `t` is the string element type (or a shaped type of strings)."""
    element = getattr(t, "element_type", t)
    return isinstance(element, StringType)
