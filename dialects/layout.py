"""The layout-aware tensor dialect: tensor types that carry their memory layout.

A tensor keeps its *logical* shape (ONNX's NCHW order, so every graph op's shape rules still
hold) and names its *physical* order in the type's encoding:

    tensor<1x64x56x56xf32, #layout.spec<"NHWC">>
    tensor<1x64x?x?xf32, #graph.dims<["h", "w"], "NHWC">>   (symbolic sizes: unblocked)

A spec is the logical dimensions' letters in memory order (a permutation of the plain
layout's letters, e.g. "NHWC" for a rank-4 "NCHW" tensor), optionally with one dimension
blocked by a lower-case suffix ("NCHW16c": C split into C/16 outer blocks and 16 inner
elements, zero-padded). A tensor without encoding is plain (row-major in logical order).

Conversions are explicit (`layout.convert`); kernels read the layout from their operand
types. `physical_shape` is the one place that maps a logical shape and a layout to the
memref shape a kernel sees.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from math import prod

from xdsl.dialects.builtin import StringAttr, TensorType
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from onnxc.dialects.graph_base import SymbolicDimsAttr, shape_of
from onnxc.dialects.symbolic_dims import Dim

PLAIN_LETTERS = {3: "NCW", 4: "NCHW", 5: "NCDHW"}
"""Logical dimension letters by rank (ONNX's channel-first order)."""

_SPEC = re.compile(r"^([A-Z]+)(?:(\d+)([a-z]))?$")


@irdl_attr_definition
class LayoutSpecAttr(ParametrizedAttribute):
    """`#layout.spec<"NHWC">`: the memory order of a tensor's logical dimensions."""

    name = "layout.spec"

    spec: StringAttr

    def __init__(self, spec: str | StringAttr):
        super().__init__(StringAttr(spec) if isinstance(spec, str) else spec)

    def verify(self) -> None:
        parse_spec(self.spec.data)


def parse_spec(spec: str) -> tuple[str, int, str | None]:
    """(outer letters, block size, blocked letter); block size 1 and None when unblocked."""
    m = _SPEC.match(spec)
    if m is None:
        raise VerifyException(f"layout '{spec}' is not letters with an optional block (NCHW16c)")
    letters, block, blocked = m.group(1), m.group(2), m.group(3)
    if len(set(letters)) != len(letters):
        raise VerifyException(f"layout '{spec}' repeats a dimension")
    if blocked is None:
        return letters, 1, None
    if blocked.upper() not in letters or int(block) < 1:
        raise VerifyException(f"layout '{spec}' blocks a dimension it does not have")
    return letters, int(block), blocked.upper()


def layout_of(t: Attribute) -> str | None:
    """The layout spec of a tensor type, None when plain (a symbolic type names its layout
    in its `#graph.dims`)."""
    if isinstance(t, TensorType):
        if isinstance(t.encoding, LayoutSpecAttr):
            return t.encoding.spec.data
        if isinstance(t.encoding, SymbolicDimsAttr) and t.encoding.layout.data:
            return t.encoding.layout.data
    return None


def with_layout(t: TensorType, spec: str | None) -> TensorType:
    """`t` with layout `spec` (None: plain); a symbolic type keeps its sizes."""
    if isinstance(t.encoding, SymbolicDimsAttr):
        if spec is not None and parse_spec(spec)[2] is not None:
            raise VerifyException(f"layout '{spec}' blocks a dimension of symbolic size")
        return TensorType(t.get_element_type(), t.get_shape(),
                          SymbolicDimsAttr(t.encoding.dims, spec or ""))
    if spec is None:
        return TensorType(t.get_element_type(), t.get_shape())
    return TensorType(t.get_element_type(), t.get_shape(), LayoutSpecAttr(spec))


def physical_shape(shape: Sequence[Dim], spec: str | None) -> tuple[Dim, ...]:
    """The memory shape of a tensor of logical `shape` laid out as `spec` (sizes may be
    symbolic).

    "NHWC" on [N, C, H, W] gives [N, H, W, C]; "NCHW16c" gives [N, ceil(C/16), H, W, 16].
    """
    shape = tuple(shape)
    if spec is None:
        return shape
    letters, block, blocked = parse_spec(spec)
    plain = PLAIN_LETTERS.get(len(shape))
    if plain is None or sorted(plain) != sorted(letters):
        raise ValueError(f"layout '{spec}' does not fit a rank-{len(shape)} tensor")
    dims = [shape[plain.index(d)] for d in letters]
    if blocked is None:
        return tuple(dims)
    at = letters.index(blocked)
    dims[at] = -(-dims[at] // block)
    return (*dims, block)


def physical_permutation(spec: str, rank: int) -> tuple[int, ...]:
    """Logical dimension stored at each outer physical position (unblocked specs)."""
    letters, _, _ = parse_spec(spec)
    plain = PLAIN_LETTERS[rank]
    return tuple(plain.index(d) for d in letters)


def memory_order(t: TensorType) -> list[int] | None:
    """The logical dimensions of `t` larger than 1, in the order memory holds them; None
    for a blocked layout. Two tensors whose buffers list the same dimensions in the same
    order hold the same bytes (what `layout.convert` or `graph.transpose` between them
    would move: nothing)."""
    shape = shape_of(t)
    spec = layout_of(t)
    if spec is None:
        order: Sequence[int] = range(len(shape))
    elif parse_spec(spec)[2] is not None:
        return None
    else:
        order = physical_permutation(spec, len(shape))
    return [d for d in order if shape[d] != 1]


def transpose_moves_no_data(src: TensorType, dst: TensorType, perm: Sequence[int]) -> bool:
    """Whether transposing `src` by `perm` into `dst` (each in its layout) leaves the bytes
    where they are: dst's dimensions of size > 1, in memory order, are src's through perm."""
    a, b = memory_order(src), memory_order(dst)
    return a is not None and b is not None and [perm[d] for d in b] == a


def physical_size(t: TensorType) -> Dim:
    """Elements of the memory holding `t` (blocked layouts pad)."""
    return prod(physical_shape(shape_of(t), layout_of(t)))


@irdl_op_definition
class ConvertOp(IRDLOperation):
    """`layout.convert`: the same logical tensor re-laid in another layout (data moves)."""

    name = "layout.convert"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($output)"

    def __init__(self, value, result_type: TensorType):
        super().__init__(operands=[value], result_types=[result_type])

    def verify_(self) -> None:
        src, dst = self.input.type, self.output.type
        assert isinstance(src, TensorType) and isinstance(dst, TensorType)
        if src.get_shape() != dst.get_shape() or src.element_type != dst.element_type:
            raise VerifyException("layout.convert: input and result differ in shape or type")
        if shape_of(src) != shape_of(dst):
            raise VerifyException("layout.convert: input and result differ in shape or type")
        for t in (src, dst):
            try:
                physical_shape(t.get_shape(), layout_of(t))
            except ValueError as err:
                raise VerifyException(f"layout.convert: {err}") from err


Layout = Dialect("layout", [ConvertOp], [LayoutSpecAttr])
