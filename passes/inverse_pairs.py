"""Inverse pairs: an op followed by the op that undoes it is the original value.

Each pattern matches the second op of a pair and checks that it is the exact inverse of the
first (same axes, composed permutation is the identity, same scale and zero point, slice
bounds equal to a concatenated part). The first op dies with DCE when nothing else reads it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import ml_dtypes
import numpy as np
from xdsl.ir import Operation
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from onnxc.dialects import graph
from onnxc.dialects import graph_shapes as shapes
from onnxc.dialects.graph import int_of, ints_of, shape_of
from onnxc.dialects.graph_quant import quantized_range
from onnxc.dialects.symbolic_dims import Dim
from onnxc.passes.base import GraphPatternPass
from onnxc.passes.constants import numpy_dtype
from onnxc.passes.layout_fold import DropIdentityConvert, MergeConvertChain
from onnxc.passes.rewrite_utils import i64_array

# --------------------------------------------------------------------------- cancel-squeeze-unsqueeze


def _axes(op: graph.SqueezeOp | graph.UnsqueezeOp, rank: int) -> set[int]:
    return {shapes.normalize_axis(a, rank) for a in ints_of(op.axes)}


class CancelSqueezeUnsqueeze(RewritePattern):
    """unsqueeze(squeeze(x, A), A) = x and squeeze(unsqueeze(x, A), A) = x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.SqueezeOp | graph.UnsqueezeOp,
                          rewriter: PatternRewriter):
        inner = op.input.owner
        inverse = graph.UnsqueezeOp if isinstance(op, graph.SqueezeOp) else graph.SqueezeOp
        if not isinstance(inner, inverse) or inner.input.type != op.output.type:
            return
        # both axis lists refer to the rank with the unit dimensions present
        rank = max(len(shape_of(inner.input)), len(shape_of(op.input)))
        if _axes(op, rank) == _axes(inner, rank):
            rewriter.replace(op, [], [inner.input])


@dataclass(frozen=True)
class CancelSqueezeUnsqueezePass(GraphPatternPass):
    """Remove Squeeze/Unsqueeze pairs on the same axes."""

    name = "cancel-squeeze-unsqueeze"
    patterns = (CancelSqueezeUnsqueeze,)


# --------------------------------------------------------------------------- cancel-transposes


def compose(first: Sequence[int], second: Sequence[int]) -> tuple[int, ...]:
    """The permutation of transpose(transpose(x, first), second)."""
    return tuple(first[p] for p in second)


def is_identity(perm: Sequence[int]) -> bool:
    return tuple(perm) == tuple(range(len(perm)))


class ComposeTransposes(RewritePattern):
    """transpose(transpose(x, p1), p2) = transpose(x, p1 o p2), and x when that is identity."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.TransposeOp, rewriter: PatternRewriter):
        perm = ints_of(op.perm)
        if is_identity(perm):
            rewriter.replace(op, [], [op.input])
            return
        inner = op.input.owner
        if not isinstance(inner, graph.TransposeOp):
            return
        composed = compose(ints_of(inner.perm), perm)
        if is_identity(composed):
            rewriter.replace(op, [], [inner.input])
        else:
            rewriter.replace(op, graph.TransposeOp(
                operands=[inner.input], result_types=[op.output.type],
                properties={"perm": i64_array(composed)}))


@dataclass(frozen=True)
class CancelTransposesPass(GraphPatternPass):
    """Compose consecutive Transposes; remove identity ones."""

    name = "cancel-transposes"
    patterns = (ComposeTransposes,)


# --------------------------------------------------------------------------- cancel-layout-conversions


@dataclass(frozen=True)
class CancelLayoutConversionsPass(GraphPatternPass):
    """Remove `layout.convert` round trips A->B->A (and merge A->B->C into A->C): the
    cancelling part of fold-layout-converts, as the catalog's -O3 row."""

    name = "cancel-layout-conversions"
    patterns = (DropIdentityConvert, MergeConvertChain)


# --------------------------------------------------------------------------- cancel-quant-dequant


def _same_params(a: graph.QuantizeLinearOp | graph.DequantizeLinearOp,
                 b: graph.QuantizeLinearOp | graph.DequantizeLinearOp) -> bool:
    return (a.axis_of() == b.axis_of() and a.block_size_of() == b.block_size_of()
            and a.scales().shape == b.scales().shape
            and np.array_equal(a.scales().astype(np.float64), b.scales().astype(np.float64))
            and np.array_equal(a.zero_points(), b.zero_points()))


def _normal_scale(op: graph.DequantizeLinearOp) -> bool:
    """(q - z) * scale is a normal float for every nonzero q - z of the integer type's range,
    and the result's mantissa holds that range, so dividing by the scale again returns q - z
    to far better than one half."""
    try:
        lo, hi = quantized_range(op.input.type.get_element_type())
    except ValueError:  # float8/float4 quantized types: not claimed exact
        return False
    info = ml_dtypes.finfo(numpy_dtype(op.output.type.get_element_type()))
    if (hi - lo).bit_length() > info.nmant:
        return False
    scales = np.abs(op.scales().astype(np.float64))  # the sign changes no rounding
    return bool(np.all((float(info.tiny) <= scales) & (scales <= float(info.max) / (hi - lo + 1))))


class CancelDequantizeQuantize(RewritePattern):
    """quantize(dequantize(q)) = q with the same scale and zero point: (q - z) * s / s rounds
    back to q - z exactly (the float error is far below one half), so this is always exact."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.QuantizeLinearOp, rewriter: PatternRewriter):
        inner = op.input.owner
        if (isinstance(inner, graph.DequantizeLinearOp) and _same_params(op, inner)
                and inner.input.type == op.output.type and _normal_scale(inner)):
            rewriter.replace(op, [], [inner.input])


class CancelQuantizeDequantize(RewritePattern):
    """dequantize(quantize(x)) = x up to the quantization rounding: a change of results, so
    only when the user opts in (pass option allow-rounding-change; no -O level sets it)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.DequantizeLinearOp, rewriter: PatternRewriter):
        inner = op.input.owner
        if (isinstance(inner, graph.QuantizeLinearOp) and _same_params(op, inner)
                and inner.input.type == op.output.type):
            rewriter.replace(op, [], [inner.input])


@dataclass(frozen=True)
class CancelQuantDequantPass(GraphPatternPass):
    """Remove Quantize/Dequantize pairs with the same scale and zero point. Dequantize then
    Quantize is exact and always removed; Quantize then Dequantize only with the opt-in
    `cancel-quant-dequant{allow-rounding-change=true}` (a pass_pipeline the user writes, never
    an -O level), since it drops the rounding and saturation."""

    name = "cancel-quant-dequant"
    allow_rounding_change: bool = False

    def rewrite_patterns(self):
        patterns: list[RewritePattern] = [CancelDequantizeQuantize()]
        if self.allow_rounding_change:
            patterns.append(CancelQuantizeDequantize())
        return patterns


# --------------------------------------------------------------------------- cancel-concat-slice


def _parts(concat: graph.ConcatOp) -> tuple[int, list[tuple[int, int]]]:
    """(axis, [(offset, size)] of each input along it)."""
    rank = len(shape_of(concat.output))
    axis = shapes.normalize_axis(int_of(concat.axis), rank)
    parts, offset = [], 0
    for v in concat.inputs:
        size = shape_of(v)[axis]
        parts.append((offset, size))
        offset += size
    return axis, parts


def keeps_whole_axis(dim: Dim, first: Dim, last: Dim, step: int) -> bool:
    """Whether a slice with normalized bounds [first, last) and `step` keeps all `dim`
    elements of an axis in order. Exact for symbolic sizes too: the clamped `last` of a
    forward slice is at most `dim`, so it is short of the end exactly when it differs."""
    if isinstance(dim, int) and dim <= 1:
        return True
    return step == 1 and first == 0 and last == dim


class SliceOfConcat(RewritePattern):
    """slice(concat(x1..xn)) that cuts exactly x_i along the concat axis (and keeps every other
    axis whole) is x_i."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.SliceOp, rewriter: PatternRewriter):
        concat = op.input.owner
        if not isinstance(concat, graph.ConcatOp):
            return
        x = shape_of(op.input)
        axis, parts = _parts(concat)
        window = None
        for start, end, a, step in zip(*op.bounds(), ints_of(op.axes), ints_of(op.steps)):
            a = shapes.normalize_axis(a, len(x))
            first, last = shapes.normalized_slice_bounds(x[a], start, end, step)
            if a == axis:
                if step != 1:
                    return
                window = (first, last - first)
            elif not keeps_whole_axis(x[a], first, last, step):
                return
        if window is None or window not in parts:
            return
        part = concat.inputs[parts.index(window)]
        if part.type == op.output.type:
            rewriter.replace(op, [], [part])


class SplitOfConcat(RewritePattern):
    """split(concat(x1..xn)) on the same axis with the same part sizes is x1..xn."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.SplitOp, rewriter: PatternRewriter):
        concat = op.input.owner
        if not isinstance(concat, graph.ConcatOp):
            return
        axis, _ = _parts(concat)
        if shapes.normalize_axis(int_of(op.axis), len(shape_of(op.input))) != axis:
            return
        if [v.type for v in concat.inputs] != [r.type for r in op.outputs]:
            return
        rewriter.replace(op, [], list(concat.inputs))


@dataclass(frozen=True)
class CancelConcatSlicePass(GraphPatternPass):
    """Replace Slices (or a Split) that cut a Concat back into its parts by the parts."""

    name = "cancel-concat-slice"
    patterns = (SliceOfConcat, SplitOfConcat)


def permutation_of(op: Operation | None) -> tuple[int, ...] | None:
    """The permutation a Transpose applies, else None."""
    if isinstance(op, graph.TransposeOp):
        return ints_of(op.perm)
    return None
