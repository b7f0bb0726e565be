"""Operator replacement: an op (or a known composition) becomes a cheaper equivalent.

Rows of the catalog with no pass here, and why (listed in docs/graph-passes.md's catalog):
- shapen-to-shapes: ShapeN is a TensorFlow op; ONNX has no ShapeN, so no graph we import
  can contain one.
- group-conv: splitting a grouped Conv into Slice + Conv + Concat only pays where no
  grouped kernel exists; ours handles groups (and depthwise) directly, with the same
  contiguous inner loop as a plain conv, so the split would only add copies.
- linear-as-conv: measured with onnxc.compile (-O0) on a 1x1 conv 256 -> 256 channels over
  1 x 256 x 56 x 56: Conv 12.09 ms, Reshape + Gemm(W, X, b) + Reshape 11.93 ms, Reshape +
  MatMul + Reshape + Add 12.00 ms (median of 7, 2 shared cores): equal within noise. Our
  1x1 conv kernel already runs one contiguous loop over the whole plane, the same loop as
  the Gemm i-k-j kernel, so neither direction is a win and no pass is written; the case
  that does pay, a 1x1 conv on a 1x1 plane, is conv-after-global-pool-to-gemm (in
  gemm_fusion, with the other rewrites into Gemm).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    i64,
)
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from onnxc.dialects import graph
from onnxc.dialects.graph import float_of, int_of, ints_of, shape_of
from onnxc.dialects.graph_base import static_ints
from onnxc.dialects.symbolic_dims import is_static
from onnxc.passes.base import GraphPatternPass
from onnxc.passes.constants import (
    constant_value,
    element_type,
    insert_constant,
    is_float_tensor,
    single_use,
)
from onnxc.passes.rewrite_utils import i64_array, rebuild

# --------------------------------------------------------------------------- bn-to-scale


class BatchNormToScaleShift(RewritePattern):
    """Inference BN with constant parameters -> x * s + t with per-channel constants
    s = gamma / sqrt(var + eps), t = beta - mean * s (one multiply-add per element)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, bn: graph.BatchNormalizationOp, rewriter: PatternRewriter):
        params = [constant_value(v) for v in (bn.scale, bn.bias, bn.mean, bn.var)]
        if any(p is None for p in params) or not is_float_tensor(bn.input):
            return
        gamma, beta, mean, var = (p.astype(np.float64) for p in params)
        s = gamma / np.sqrt(var + float_of(bn.epsilon))
        t = beta - mean * s
        x_shape = shape_of(bn.input)
        if not isinstance(x_shape[1], int):
            return  # the constants' shape needs the channel count
        per_channel = (x_shape[1],) + (1,) * (len(x_shape) - 2)
        el = element_type(bn.input)
        s_val = insert_constant(rewriter, s.reshape(per_channel), el, bn)
        t_val = insert_constant(rewriter, t.reshape(per_channel), el, bn)
        scaled = graph.MulOp(operands=[bn.input, s_val], result_types=[bn.output.type])
        rewriter.insert(scaled, InsertPoint.before(bn))
        rewriter.replace(bn, graph.AddOp(operands=[scaled.output, t_val],
                                            result_types=[bn.output.type]))


# --------------------------------------------------------------------------- prelu


def _uniform(array: np.ndarray | None) -> float | None:
    """The value every element of `array` has, if there is one."""
    if array is None or array.size == 0:
        return None
    first = array.reshape(-1)[0]
    return float(first) if bool(np.all(array == first)) else None


def _leaky(x: SSAValue, alpha: float, result) -> graph.LeakyReluOp:
    return graph.LeakyReluOp(operands=[x], result_types=[result],
                             properties={"alpha": FloatAttr(alpha, element_type(x))})


class PreluOpToLeakyRelu(RewritePattern):
    """graph.prelu(x, slope) with one slope value -> leaky_relu(x, alpha = slope)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.PReluOp, rewriter: PatternRewriter):
        alpha = _uniform(constant_value(op.slope))
        if alpha is not None and op.output.type == op.input.type:
            rewriter.replace(op, _leaky(op.input, alpha, op.output.type))


def _min_with_zero(v: SSAValue) -> SSAValue | None:
    """x when v = min(x, 0) (the importer's negative part), else None."""
    op = v.owner
    if not isinstance(op, graph.MinOp) or len(op.inputs) != 2:
        return None
    for x, zero in ((op.inputs[0], op.inputs[1]), (op.inputs[1], op.inputs[0])):
        if _uniform(constant_value(zero)) == 0.0 and x.type == v.type:
            return x
    return None


class DecomposedPreluToLeakyRelu(RewritePattern):
    """relu(x) + min(x, 0) * s (the importer's PRelu) with one slope value s ->
    leaky_relu(x, s)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, add: graph.AddOp, rewriter: PatternRewriter):
        for relu_v, neg_v in ((add.lhs, add.rhs), (add.rhs, add.lhs)):
            relu, mul = relu_v.owner, neg_v.owner
            if not isinstance(relu, graph.ReluOp) or not isinstance(mul, graph.MulOp):
                continue
            x = relu.input
            for part, slope in ((mul.lhs, mul.rhs), (mul.rhs, mul.lhs)):
                alpha = _uniform(constant_value(slope))
                if alpha is None or _min_with_zero(part) != x:
                    continue
                if x.type != add.output.type or not is_float_tensor(x):
                    continue
                rewriter.replace(add, _leaky(x, alpha, add.output.type))
                return


# --------------------------------------------------------------------------- padding taps


def live_taps(size: int, out: int, kernel: int, stride: int, dilation: int,
              pad_begin: int) -> tuple[int, int]:
    """The first and last kernel index along one axis that reads the input for at least
    one output position (a dilated tap past the border reads only padding everywhere)."""
    live = [k for k in range(kernel)
            if any(0 <= o * stride - pad_begin + k * dilation < size for o in range(out))]
    return (live[0], live[-1]) if live else (0, kernel - 1)


class DropPaddingTaps(RewritePattern):
    """A conv tap that reads only padding for every output adds zeros: drop the kernel rows
    and columns of such taps (the weights are sliced at compile time) and the padding they
    alone reached. The output is unchanged. DeepLabV3's ASPP convs (3x3, dilation 12/24/36
    on a 14x14 map) become 1x1 or narrower convs; ONNX Runtime skips these taps too."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, conv: graph.ConvOp, rewriter: PatternRewriter):
        weight = constant_value(conv.weight)
        if weight is None:
            return
        spatial = shape_of(conv.input)[2:]
        outs = shape_of(conv.output)[2:]
        if not is_static((*spatial, *outs)):
            return  # which taps read only padding depends on the image size
        kernel = weight.shape[2:]
        strides, dilations, pads = ints_of(conv.strides), ints_of(conv.dilations), ints_of(conv.pads)
        rank = len(kernel)
        ranges = [live_taps(spatial[d], outs[d], kernel[d], strides[d], dilations[d], pads[d])
                  for d in range(rank)]
        if all(r == (0, k - 1) for r, k in zip(ranges, kernel)):
            return
        begin = [pads[d] - ranges[d][0] * dilations[d] for d in range(rank)]
        end = [pads[rank + d] - (kernel[d] - 1 - ranges[d][1]) * dilations[d] for d in range(rank)]
        if min(begin + end) < 0:
            return  # the dead taps also reach real rows elsewhere: not a pure border cut
        sliced = weight[(slice(None), slice(None), *(slice(a, b + 1) for a, b in ranges))]
        new_weight = insert_constant(rewriter, np.ascontiguousarray(sliced),
                                     element_type(conv.weight), conv)
        operands = [conv.input, new_weight, *([conv.bias] if conv.bias is not None else [])]
        new = rebuild(conv, operands, [conv.output.type])
        new.properties["pads"] = i64_array([*begin, *end])
        rewriter.replace(conv, new)


# --------------------------------------------------------------------------- channel shuffle


class RecogniseChannelShuffle(RewritePattern):
    """reshape(N, C, *S -> N, g, C/g, *S) + transpose(0, 2, 1, ...) + reshape(-> N, C, *S)
    -> graph.channel_shuffle {group = g}, one copy instead of three ops."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, last: graph.ReshapeOp, rewriter: PatternRewriter):
        transpose = last.input.owner
        if not isinstance(transpose, graph.TransposeOp) or not single_use(last.input):
            return
        first = transpose.input.owner
        if not isinstance(first, graph.ReshapeOp) or not single_use(transpose.input):
            return
        x = first.input
        x_shape, split = shape_of(x), shape_of(first.output)
        rank = len(x_shape)
        if rank < 2 or shape_of(last.output) != x_shape or len(split) != rank + 1:
            return
        g = split[1]
        if not isinstance(g, int):
            return  # a symbolic group count is no property
        if split[0] != x_shape[0] or g * split[2] != x_shape[1] or split[3:] != x_shape[2:]:
            return
        if ints_of(transpose.perm) != (0, 2, 1, *range(3, rank + 1)):
            return
        rewriter.replace(last, graph.ChannelShuffleOp(
            operands=[x], result_types=[last.output.type],
            properties={"group": IntegerAttr(g, i64)}))


# --------------------------------------------------------------------------- pad into op


def _zero_spatial_pad(pad: graph.PadOp) -> tuple[int, ...] | None:
    """The spatial [begin..., end...] pads of a constant-zero, non-negative Pad that leaves
    the batch and channel dimensions alone, else None."""
    if pad.mode.data != "constant" or float_of(pad.value) != 0.0:
        return None
    pads = static_ints(pad.pads)
    if pads is None:
        return None
    rank = len(pads) // 2
    begin, end = pads[:rank], pads[rank:]
    if any(p < 0 for p in pads) or any(begin[:2]) or any(end[:2]):
        return None
    return (*begin[2:], *end[2:])


class FoldPadIntoConv(RewritePattern):
    """conv(pad(x, zeros)) -> conv(x) with the pads added to its own (and likewise for an
    AveragePool that counts padding): the kernel skips the padding instead of reading a
    padded copy."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter):
        if isinstance(op, graph.ConvOp) or isinstance(op, graph.AveragePoolOp) and int_of(op.count_include_pad) != 0:
            source = op.input
        else:
            return
        pad = source.owner
        if not isinstance(pad, graph.PadOp) or not single_use(source):
            return
        extra = _zero_spatial_pad(pad)
        if extra is None:
            return
        if isinstance(op, graph.AveragePoolOp) and int_of(op.ceil_mode) != 0:
            return  # ceil-mode windows past the end would count padding differently
        pads = tuple(a + b for a, b in zip(ints_of(op.pads), extra))
        props = {**op.properties, "pads": DenseArrayBase.from_list(i64, pads)}
        operands = ([pad.input] if isinstance(op, graph.AveragePoolOp) else
                    [pad.input, op.weight, [op.bias] if op.bias is not None else []])
        rewriter.replace(op, type(op)(operands=operands,
                                         result_types=[op.results[0].type], properties=props))


# --------------------------------------------------------------------------- passes


@dataclass(frozen=True)
class BnToScalePass(GraphPatternPass):
    """Replace an inference BatchNormalization by a per-channel multiply-add x * s + t."""

    name = "bn-to-scale"
    patterns = (BatchNormToScaleShift,)


@dataclass(frozen=True)
class PreluToLeakyreluPass(GraphPatternPass):
    """PRelu with a single slope value becomes LeakyRelu."""

    name = "prelu-to-leakyrelu"
    patterns = (PreluOpToLeakyRelu, DecomposedPreluToLeakyRelu)


@dataclass(frozen=True)
class DropPaddingTapsPass(GraphPatternPass):
    """Drop conv taps that read only padding (dilated convs on small maps)."""

    name = "drop-padding-taps"
    patterns = (DropPaddingTaps,)


@dataclass(frozen=True)
class ShuffleChannelPass(GraphPatternPass):
    """Recognise the reshape-transpose-reshape of a channel shuffle as one graph.channel_shuffle."""

    name = "shuffle-channel"
    patterns = (RecogniseChannelShuffle,)


@dataclass(frozen=True)
class PadToInputPass(GraphPatternPass):
    """Fold a zero Pad before a Conv (or AveragePool counting padding) into the op's own pads."""

    name = "pad-to-input"
    patterns = (FoldPadIntoConv,)

