"""The memref types of a kernel's buffers: a tensor's (`memref_of`, in its layout's order, flat
for symbolic sizes) and a scratch buffer of run-time size (`RunTimeScratch`).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import DYNAMIC_INDEX, MemRefType, TensorType
from xdsl.ir import Attribute

from onnxc.dialects.graph_base import SymbolicDimsAttr
from onnxc.dialects.layout import layout_of, physical_shape
from onnxc.dialects.symbolic_dims import Dim


def memref_of(t: TensorType) -> MemRefType:
    """The identity-layout memref holding a tensor of type `t`, in its physical order
    (a tensor with a `#layout.spec` encoding is stored permuted or blocked). A symbolic
    dimension makes the memref flat, `memref<?xf32>`: its logical shape comes from the
    tensor type and the kernel's symbol arguments (`KernelBuilder.bind_shape`), so a reshape
    of it is the same buffer."""
    if isinstance(t.encoding, SymbolicDimsAttr):
        return MemRefType(t.get_element_type(), [DYNAMIC_INDEX])
    return MemRefType(t.get_element_type(), physical_shape(t.get_shape(), layout_of(t)))


@dataclass(frozen=True)
class RunTimeScratch:
    """A kernel's scratch buffer of a symbolic element count (a symbolic conv's padded
    input): the caller allocates it flat in the dynamic arena, `memref<?xT>`."""

    element: Attribute
    elements: Dim

    @property
    def type(self) -> MemRefType:
        return MemRefType(self.element, [DYNAMIC_INDEX])
