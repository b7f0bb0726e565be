"""`fold-layout-converts`: clean up `layout.convert`s once layouts are assigned.

assign-layout places conversions where a value's layout changes; this pass removes the ones
that move no data or that later rewrites made redundant:
- a conversion to the type it already has disappears;
- a chain A -> B -> C becomes A -> C (A -> B -> A disappears);
- a conversion of a constant becomes the constant stored in the new layout (weights and
  biases are re-laid at compile time, never at run time);
- a conversion whose two layouts order the dimensions of size > 1 alike moves no bytes
  (GlobalAveragePool's [N, C, 1, 1] is the same memory in NCHW and NHWC): it becomes a
  `graph.reshape`, which the lowering turns into a view of the same buffer;
- two conversions of one value to one type become one.

The data of a laid-out constant is stored in physical order (the order `physical_shape`
names), so the bytes are exactly the buffer the kernels read; `to_physical`/`to_logical`
map between that and the logical array (the bytes themselves are read and written by
dialects/dense_data.py).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from onnxc.dialects import graph
from onnxc.dialects.dense_data import element_dtype, flat_values, from_numpy
from onnxc.dialects.layout import (
    PLAIN_LETTERS,
    ConvertOp,
    layout_of,
    memory_order,
    parse_spec,
    physical_shape,
)
from onnxc.passes.base import GraphPatternPass

# --------------------------------------------------------------------------- data in a layout


def _split_order(spec: str, rank: int) -> tuple[list[int], int | None, int]:
    """(order, blocked axis, block): for each physical dimension, the dimension of the
    logical array with the blocked axis split in (outer, inner) that it holds."""
    letters, block, blocked = parse_spec(spec)
    plain = PLAIN_LETTERS[rank]
    perm = [plain.index(d) for d in letters]
    if blocked is None:
        return perm, None, 1
    axis = plain.index(blocked)
    return [d if d <= axis else d + 1 for d in perm] + [axis + 1], axis, block


def to_physical(array: np.ndarray, spec: str | None) -> np.ndarray:
    """`array` (logical order) as the contiguous buffer of layout `spec`."""
    if spec is None:
        return np.ascontiguousarray(array)
    order, axis, block = _split_order(spec, array.ndim)
    if axis is not None:
        pad = -array.shape[axis] % block
        array = np.pad(array, [(0, pad if d == axis else 0) for d in range(array.ndim)])
        s = array.shape
        array = array.reshape(*s[:axis], s[axis] // block, block, *s[axis + 1 :])
    return np.ascontiguousarray(array.transpose(order))


def to_logical(physical: np.ndarray, shape: Sequence[int], spec: str | None) -> np.ndarray:
    """The logical array of `shape` held by buffer `physical` of layout `spec`."""
    shape = tuple(shape)
    if spec is None:
        return physical.reshape(shape)
    order, axis, _ = _split_order(spec, len(shape))
    split = physical.reshape(physical_shape(shape, spec)).transpose(np.argsort(order))
    if axis is None:
        return split
    merged = split.reshape(*shape[:axis], -1, *shape[axis + 1 :])
    return merged[(slice(None),) * axis + (slice(0, shape[axis]),)]


def constant_value(value: DenseIntOrFPElementsAttr) -> np.ndarray:
    """The logical array of a (possibly laid-out) dense constant."""
    t = value.type
    assert isinstance(t, TensorType)
    flat = flat_values(value)
    if layout_of(t) is None:
        return flat.reshape(tuple(t.get_shape()))
    return to_logical(flat, t.get_shape(), layout_of(t))


def laid_out_dense(array: np.ndarray, t: TensorType) -> DenseIntOrFPElementsAttr:
    """The dense attribute of type `t` holding logical `array` (broadcast to `t`'s shape:
    a [C, 1, 1] bias fits [1, C, 1, 1]) in `t`'s layout."""
    logical = np.broadcast_to(np.asarray(array, element_dtype(t.get_element_type())),
                              tuple(t.get_shape()))
    return from_numpy(to_physical(logical, layout_of(t)), t)


def moves_no_data(src: TensorType, dst: TensorType) -> bool:
    """Whether the buffers of `src` and `dst` hold the same bytes: both unblocked, and
    their dimensions of size > 1 in the same physical order."""
    a, b = memory_order(src), memory_order(dst)
    return a is not None and a == b


# --------------------------------------------------------------------------- patterns


class DropIdentityConvert(RewritePattern):
    """convert(x : T) -> T  ==>  x"""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ConvertOp, rewriter: PatternRewriter, /):
        if op.input.type == op.output.type:
            rewriter.replace(op, [], [op.input])


class MergeConvertChain(RewritePattern):
    """convert(convert(x : A) : B) : C  ==>  convert(x) : C (x itself when C == A)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ConvertOp, rewriter: PatternRewriter, /):
        inner = op.input.owner
        if not isinstance(inner, ConvertOp):
            return
        if inner.input.type == op.output.type:
            rewriter.replace(op, [], [inner.input])
        else:
            rewriter.replace(op, ConvertOp(inner.input, op.output.type))


class FoldConstantConvert(RewritePattern):
    """convert(constant) ==> the constant stored in the result's layout."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ConvertOp, rewriter: PatternRewriter, /):
        source = op.input.owner
        if not isinstance(source, graph.ConstantOp):
            return
        out = op.output.type
        assert isinstance(out, TensorType)
        dense = laid_out_dense(constant_value(source.value), out)
        rewriter.replace(op, graph.ConstantOp(dense))


class FreeConvertToView(RewritePattern):
    """A conversion that moves no bytes ==> graph.reshape (a view of the same buffer)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ConvertOp, rewriter: PatternRewriter, /):
        src, dst = op.input.type, op.output.type
        assert isinstance(src, TensorType) and isinstance(dst, TensorType)
        if src != dst and moves_no_data(src, dst):
            rewriter.replace(op, graph.ReshapeOp(operands=[op.input], result_types=[dst]))


class TransposeThroughConvert(RewritePattern):
    """transpose(convert(x)) ==> transpose(x), and convert(transpose(y)) ==> transpose(y)
    of the conversion's result type, where the new transpose moves no bytes (`is_view`):
    ConvNeXt's `permute(0, 2, 3, 1)` of an NHWC conv's output and the permute back to the
    next NHWC op. Each was a transpose kernel and a layout conversion, two copies of the
    activation, and is now a view of the buffer."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.TransposeOp | ConvertOp, rewriter: PatternRewriter, /):
        inner = op.operands[0].owner
        if isinstance(op, graph.TransposeOp) and isinstance(inner, ConvertOp):
            perm = op.perm
        elif isinstance(op, ConvertOp) and isinstance(inner, graph.TransposeOp):
            perm = inner.perm
        else:
            return
        new = graph.TransposeOp(operands=[inner.operands[0]], result_types=[op.output.type],
                                properties={"perm": perm})
        if new.is_view():
            rewriter.replace(op, new)


class MergeSiblingConverts(RewritePattern):
    """Two conversions of one value to one type ==> the earlier one."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ConvertOp, rewriter: PatternRewriter, /):
        for use in op.input.uses:
            other = use.operation
            if (
                other is not op and isinstance(other, ConvertOp)
                and other.output.type == op.output.type
                and other.parent_block() is op.parent_block()
                and other.is_before_in_block(op)
            ):
                rewriter.replace(op, [], [other.output])
                return


class FoldLayoutConvertsPass(GraphPatternPass):
    """Remove layout conversions that cancel, move no data or apply to constants."""

    name = "fold-layout-converts"
    patterns = (
        DropIdentityConvert, MergeConvertChain, FoldConstantConvert, FreeConvertToView,
        TransposeThroughConvert, MergeSiblingConverts,
    )
