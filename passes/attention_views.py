"""attention-operand-views: the attention reads Q, K and V where the projection wrote them.

Exporters put copies between a projection and its attention: BERT, RoBERTa and T5 split a
fused QKV product, reshape each part to [B, S, H, D] and transpose it to [B, H, S, D]; ViT and
Swin stack Q, K and V on a new axis, permute it to the front and gather each; torch's
scaled_dot_product_attention export multiplies Q and K by D^-1/4 on the way. Each step copies
the whole tensor, and at two threads a transpose reads rows the other core's GEMM wrote.

For each of Q, K and V this pass composes the steps between the attention and the tensor
they start from (a product's result, most often) into one graph.as_strided: an offset and
strides into that tensor's row-major elements. The lowering hands it to the attention kernel
as a strided view (no copy), and the scalar factors on Q and K become the attention's
`scale` (the score is the same product of three numbers, rounded in another order). A
Transpose that is the attention's only reader (back to [B, S, H, D]) becomes its
`output_perm`: the kernel writes each element where the Transpose would have copied it.
Only static shapes; a chain of reshapes alone (already views) is left as it is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import DenseArrayBase, Float32Type, FloatAttr, IntegerAttr, i64
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from onnxc.dialects import graph
from onnxc.dialects.graph import float_of, int_of, ints_of, shape_of
from onnxc.dialects.graph_shapes import row_major_strides
from onnxc.dialects.symbolic_dims import is_static, num_elements
from onnxc.passes.base import GraphPatternPass
from onnxc.passes.constants import constant_value
from onnxc.passes.fusion_match import operand_orders, scalar_constant, with_scalar


@dataclass(frozen=True)
class View:
    """Elements offset + sum(i_k * strides[k]) of a source tensor's row-major elements."""

    offset: int
    sizes: tuple[int, ...]
    strides: tuple[int, ...]

    @staticmethod
    def of(shape: Sequence[int]) -> View:
        """The whole tensor of `shape`, as it is."""
        return View(0, tuple(shape), tuple(row_major_strides(shape)))

    def is_plain(self) -> bool:
        return self.offset == 0 and self.strides == tuple(row_major_strides(self.sizes))


def restride(view: View, sizes: Sequence[int]) -> View | None:
    """`view` reshaped to `sizes` without a copy, or None when its strides cannot express
    that (a reshape across a transposed pair of axes). Dimensions are matched in chunks that
    are contiguous within the view, from the last one, as PyTorch's `view` does."""
    sizes = tuple(sizes)
    if math.prod(view.sizes) == 0 or not view.sizes:
        return View(view.offset, sizes, tuple(row_major_strides(sizes)))
    old, strides = view.sizes, view.strides
    new = [0] * len(sizes)
    d = len(sizes) - 1
    base = strides[-1]
    chunk = viewed = 1
    for t in range(len(old) - 1, -1, -1):
        chunk *= old[t]
        if t == 0 or (old[t - 1] != 1 and strides[t - 1] != chunk * base):
            while d >= 0 and (viewed < chunk or sizes[d] == 1):
                new[d] = viewed * base
                viewed *= sizes[d]
                d -= 1
            if viewed != chunk:
                return None
            if t > 0:
                base, chunk, viewed = strides[t - 1], 1, 1
    return View(view.offset, sizes, tuple(new)) if d == -1 else None


_RESHAPES = (graph.ReshapeOp, graph.FlattenOp, graph.SqueezeOp, graph.UnsqueezeOp,
             graph.IdentityOp)
_MOVES = (graph.TransposeOp, graph.SplitOp, graph.GatherOp, graph.SliceOp, graph.AsStridedOp)


def _step(op: Operation, result: SSAValue, view: View) -> View | None:
    """`view` after data-movement op `op` (its result `result`), or None when the step is no
    strided view of its input."""
    if isinstance(op, _RESHAPES):
        return restride(view, shape_of(result))
    if isinstance(op, graph.TransposeOp):
        perm = ints_of(op.perm)
        return View(view.offset, tuple(view.sizes[p] for p in perm),
                    tuple(view.strides[p] for p in perm))
    if isinstance(op, graph.SplitOp):
        axis = int_of(op.axis) % len(view.sizes)
        start = sum(shape_of(r)[axis] for r in op.outputs[:result.index])
        return _narrowed(view, axis, start, shape_of(result)[axis], 1)
    if isinstance(op, graph.GatherOp):
        return _gathered(op, view)
    if isinstance(op, graph.SliceOp):
        return _sliced(op, result, view)
    if isinstance(op, graph.AsStridedOp):
        return compose(view, View(int_of(op.offset), shape_of(result),
                                  tuple(ints_of(op.strides))))
    return None


def compose(view: View, inner: View) -> View | None:
    """`inner` (a view of the row-major elements of a tensor of shape view.sizes) read
    through `view`, or None when an inner step would carry from one of view's axes into the
    next. Each inner stride must be a multiple c of one row-major stride R_k of that shape
    with c * R_k < R_(k-1), and the steps along each axis k must stay inside it."""
    shape = view.sizes
    rows = tuple(row_major_strides(shape))
    start = list(np.unravel_index(inner.offset, shape)) if shape else []
    reach = list(start)
    strides = []
    for size, stride in zip(inner.sizes, inner.strides, strict=True):
        if size == 1:
            strides.append(0)
            continue
        axis = next((k for k in range(len(shape) - 1, -1, -1)
                     if stride % rows[k] == 0 and (k == 0 or stride < rows[k - 1])), None)
        if axis is None:
            return None
        c = stride // rows[axis]
        reach[axis] += (size - 1) * c
        strides.append(c * view.strides[axis])
    if any(r >= n for r, n in zip(reach, shape, strict=True)):
        return None
    offset = view.offset + sum(int(u) * t for u, t in zip(start, view.strides, strict=True))
    return View(offset, inner.sizes, tuple(strides))


def _narrowed(view: View, axis: int, start: int, size: int, step: int) -> View:
    sizes, strides = list(view.sizes), list(view.strides)
    sizes[axis], strides[axis] = size, strides[axis] * step
    return View(view.offset + start * view.strides[axis], tuple(sizes), tuple(strides))


def _gathered(op: graph.GatherOp, view: View) -> View | None:
    """A Gather of one constant index: a narrowing (dropping the axis for a scalar index)."""
    index = constant_value(op.indices)
    if index is None or index.size != 1 or index.ndim > 1:
        return None
    axis = int_of(op.axis) % len(view.sizes)
    i = int(index.reshape(())) % view.sizes[axis]
    narrowed = _narrowed(view, axis, i, 1, 1)
    if index.ndim == 1:
        return narrowed
    return View(narrowed.offset, narrowed.sizes[:axis] + narrowed.sizes[axis + 1:],
                narrowed.strides[:axis] + narrowed.strides[axis + 1:])


def _sliced(op: graph.SliceOp, result: SSAValue, view: View) -> View | None:
    """A Slice with constant bounds and positive steps."""
    starts, _ = op.bounds()
    steps = ints_of(op.steps)
    if not all(isinstance(s, int) for s in starts) or any(s <= 0 for s in steps):
        return None
    out = shape_of(result)
    for start, axis, step in zip(starts, ints_of(op.axes), steps, strict=True):
        axis %= len(view.sizes)
        dim = view.sizes[axis]
        first = min(max(start + dim if start < 0 else start, 0), dim)
        view = _narrowed(view, axis, first, out[axis], step)
    return view


def _factor(op: Operation) -> tuple[SSAValue, float] | None:
    """(x, c) when `op` multiplies x by a scalar constant c, broadcasting at most to more
    unit dimensions (ViT's K * c of shape [1, 1, 1, 1])."""
    found = with_scalar(op, graph.MulOp)
    if found is not None or not isinstance(op, graph.MulOp):
        return found
    for x, c in operand_orders(op):
        value = scalar_constant(c)
        if value is not None and num_elements(shape_of(x)) == num_elements(shape_of(op.output)):
            return x, value
    return None


@dataclass(frozen=True)
class Operand:
    """How an attention operand reads its source: view and scalar factor."""

    source: SSAValue
    view: View
    factor: float
    copies: int
    """data-moving steps and multiplies the view replaces"""


def trace(value: SSAValue, scalable: bool) -> Operand | None:
    """The source, view and factor behind attention operand `value`; multiplies by scalars
    are looked through only when `scalable` (Q and K). None when a shape on the way is not
    static."""
    chain: list[tuple[Operation, SSAValue, float | None]] = []  # (op, its result, factor)
    x = value
    while isinstance(x.owner, Operation):
        op = x.owner
        scaled = _factor(op) if scalable else None
        if scaled is not None:
            chain.append((op, x, scaled[1]))
            x = scaled[0]
            continue
        if not isinstance(op, (*_RESHAPES, *_MOVES)) or (
                isinstance(op, graph.GatherOp) and constant_value(op.indices) is None):
            break
        chain.append((op, x, None))
        x = op.operands[0]
    if not all(is_static(shape_of(v)) for v in (x, *(r for _, r, _ in chain))):
        return None
    source, view, factor, copies = x, View.of(shape_of(x)), 1.0, 0
    for op, result, c in reversed(chain):
        if c is not None:  # a multiply keeps the view (up to unit dimensions)
            reshaped = restride(view, shape_of(result))
            assert reshaped is not None  # only unit dimensions differ
            view, factor, copies = reshaped, factor * c, copies + 1
            continue
        stepped = _step(op, result, view)
        if stepped is None:  # that step's result is a buffer of its own: start from it
            source, view, factor, copies = result, View.of(shape_of(result)), 1.0, 0
            continue
        view = stepped
        copies += not isinstance(op, (*_RESHAPES, graph.AsStridedOp))
    return Operand(source, view, factor, copies)


class AttentionOperandViews(RewritePattern):
    """graph.attention's Q, K, V through their copies -> graph.as_strided of their sources,
    the factors on Q and K into `scale`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.AttentionOp, rewriter: PatternRewriter) -> None:
        values = [op.query, op.key, op.value]
        if not all(isinstance(v.type.get_element_type(), Float32Type) for v in values):
            return
        traced = [trace(v, scalable=i < 2) for i, v in enumerate(values)]
        if not any(t is not None and t.copies for t in traced):
            return
        scale = float_of(op.scale)
        operands = list(op.operands)
        for i, t in enumerate(traced):
            if t is None or not t.copies:
                continue
            scale *= t.factor
            operands[i] = self.view(rewriter, op, t, values[i])
        attention = graph.AttentionOp(
            operands=[operands[0], operands[1], operands[2], op.mask],
            result_types=[op.output.type],
            properties={**op.properties,
                        "scale": FloatAttr(scale, op.query.type.get_element_type())},
        )
        rewriter.replace(op, attention)

    @staticmethod
    def view(rewriter: PatternRewriter, at: Operation, t: Operand, value: SSAValue) -> SSAValue:
        if t.view.is_plain() and t.view.sizes == shape_of(t.source):
            return t.source
        strided = graph.AsStridedOp(
            operands=[t.source], result_types=[value.type],
            properties={"offset": IntegerAttr(t.view.offset, i64),
                        "strides": DenseArrayBase.from_list(i64, list(t.view.strides))})
        rewriter.insert(strided, InsertPoint.before(at))
        return strided.output


class AttentionResultInPlace(RewritePattern):
    """Transpose(graph.attention), its only reader -> graph.attention with `output_perm`:
    the kernel writes each row where the Transpose would have copied it."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.TransposeOp, rewriter: PatternRewriter) -> None:
        attention = op.input.owner
        if not isinstance(attention, graph.AttentionOp) or not attention.output.has_one_use() \
                or op.is_view() or not is_static(shape_of(op.output)) \
                or not isinstance(op.output.type.get_element_type(), Float32Type):
            return
        rank = len(shape_of(op.output))
        inner = ints_of(attention.output_perm) if attention.output_perm else range(rank)
        perm = [inner[p] for p in ints_of(op.perm)]
        fused = graph.AttentionOp(
            operands=[attention.query, attention.key, attention.value, attention.mask],
            result_types=[op.output.type],
            properties={**attention.properties,
                        "output_perm": DenseArrayBase.from_list(i64, perm)})
        rewriter.replace(op, fused)
        rewriter.erase_op(attention)


@dataclass(frozen=True)
class AttentionOperandViewsPass(GraphPatternPass):
    """graph.attention reads Q, K, V in place (graph.as_strided), scalar factors in `scale`,
    and writes its result where a Transpose after it would have copied it."""

    name = "attention-operand-views"
    patterns = (AttentionOperandViews, AttentionResultInPlace)

