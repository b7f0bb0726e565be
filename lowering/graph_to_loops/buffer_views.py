"""Views of a contiguous buffer with another shape, without a copy: the static
`memref.reinterpret_cast`s the kernels address their operands through, the strided views of
graph.as_strided, and the flat 1-D views of buffers with symbolic dimensions."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from xdsl.dialects import memref
from xdsl.dialects.builtin import DYNAMIC_INDEX, MemRefType, StridedLayoutAttr, i8
from xdsl.ir import Attribute, Block, SSAValue

from onnxc.dialects.graph_shapes import row_major_strides

Index = int | SSAValue


def is_flat(t: Attribute) -> bool:
    return isinstance(t, MemRefType) and list(t.get_shape()) == [DYNAMIC_INDEX]


def flat_view(source: SSAValue, count: Index) -> memref.ReinterpretCastOp:
    """`source` seen as a 1-D, offset-0, unit-stride memref of `count` elements: how kernels
    address buffers with symbolic dimensions (a multi-dimensional memref with a `?` has
    strides known only at run time, which the bare-pointer lowering cannot represent)."""
    src_type = source.type
    assert isinstance(src_type, MemRefType)
    element = src_type.get_element_type()
    if isinstance(count, int):
        return memref.ReinterpretCastOp(source, [], [], [], [0], [count], [1],
                                        MemRefType(element, [count]))
    return memref.ReinterpretCastOp(source, [], [count], [], [0], [DYNAMIC_INDEX], [1],
                                    MemRefType(element, [DYNAMIC_INDEX]))


def reinterpret(source: SSAValue, shape: Sequence[int]) -> memref.ReinterpretCastOp:
    """A static, offset-0 view of a contiguous buffer with another shape."""
    src_type = source.type
    assert isinstance(src_type, MemRefType)
    result, properties = _reinterpret_form(src_type.get_element_type(), tuple(shape))
    return memref.ReinterpretCastOp.create(operands=[source], result_types=[result],
                                           properties=dict(properties))


@functools.lru_cache(maxsize=1024)
def _reinterpret_form(element: Attribute, shape: tuple[int, ...]
                      ) -> tuple[MemRefType, dict[str, Attribute]]:
    """The result type and properties of `reinterpret` to `shape`, built (and verified) once:
    building them took about 0.8 ms a view, and densenet121's concats and convs make 1,700."""
    result = MemRefType(element, list(shape))
    template = memref.ReinterpretCastOp(
        _TEMPLATE_SOURCE.args[0], [], [], [], [0], list(shape), row_major_strides(shape), result)
    template.drop_all_references()  # no use of the stand-in left behind
    return result, dict(template.properties)


def strided_view(source: SSAValue, offset: int, shape: Sequence[int],
                 strides: Sequence[int]) -> memref.ReinterpretCastOp:
    """elements offset + sum(i_k * strides[k]) of a contiguous, offset-0 buffer seen as a
    `shape` memref with that static layout: loads through it are one GEP each
    (convert-memref-to-llvm), with no copy."""
    src_type = source.type
    assert isinstance(src_type, MemRefType)
    result = MemRefType(src_type.get_element_type(), list(shape),
                        layout=StridedLayoutAttr(list(strides), offset))
    return memref.ReinterpretCastOp(source, [], [], [], [offset], list(shape), list(strides),
                                    result)


_TEMPLATE_SOURCE = Block(arg_types=[MemRefType(i8, [1])])  # their operand: any memref


__all__ = ["flat_view", "is_flat", "reinterpret", "strided_view"]
