"""Conv fusion: ops after a Conv fold into its weights and bias (catalog "Operator fusion").

The folds fire only on float convs whose weights and bias are graph constants, whose folded
operand is per output channel (it never enlarges the result), and whose intermediate value
has no other user: BatchNormalization (fuse-conv-bn), a constant Mul or Add (fuse-conv-mul,
fuse-conv-add) and a following 1x1 Conv (fuse-conv-matmul). fuse-conv-add also folds a
residual Add (a non-constant addend of the conv's shape) into a graph.conv_add, whose kernel
starts from the addend. A Conv that becomes a Gemm is in gemm_fusion.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from onnxc.dialects import graph
from onnxc.dialects.dense_data import zeros
from onnxc.dialects.graph import int_of, ints_of, shape_of
from onnxc.dialects.graph_epilogue import epilogue_of
from onnxc.passes.base import GraphPatternPass
from onnxc.passes.constants import (
    constant_value,
    element_type,
    insert_constant,
    is_float_tensor,
    numpy_dtype,
    per_channel,
    single_use,
)
from onnxc.passes.fusion_match import binary_with_constant, bn_scale_shift

# --------------------------------------------------------------------------- helpers


def _foldable_conv(value: SSAValue) -> graph.ConvOp | None:
    """The conv defining `value` when its weights can absorb a consumer: float, constant
    weight and bias, no epilogue yet, and `value` read by nothing else."""
    conv = value.owner
    if not isinstance(conv, graph.ConvOp) or epilogue_of(conv) is not None:
        return None
    if not is_float_tensor(value) or not single_use(value):
        return None
    if constant_value(conv.weight) is None:
        return None
    if conv.bias is not None and constant_value(conv.bias) is None:
        return None
    return conv


def _conv_params(conv: graph.ConvOp) -> tuple[np.ndarray, np.ndarray]:
    """(weight as stored, bias as float64); an absent bias is zeros."""
    w = constant_value(conv.weight)
    b = constant_value(conv.bias) if conv.bias is not None else None
    return w, (np.zeros(w.shape[0]) if b is None else b.astype(np.float64))


def _scaled_weight(conv: graph.ConvOp, w: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """`w` times a per-output-channel `scale`, computed in float64 and rounded once to the
    conv's element type, as one pass over the weights: no float64 copy of them (ResNet-50's
    batch-norm folds spent half their time making and converting those), written into the
    bytes the new constant keeps (dense_data.zeros: no copy into the attribute either)."""
    out = zeros(w.shape, numpy_dtype(element_type(conv.output)))
    np.multiply(w, scale.reshape((-1,) + (1,) * (w.ndim - 1)), out=out, dtype=np.float64,
                casting="unsafe")
    return out


def _replace_conv(
    rewriter: PatternRewriter, old: Operation, conv: graph.ConvOp, w: np.ndarray, b: np.ndarray,
    x: SSAValue | None = None,
) -> None:
    """Replace `old` (the consumer) by `conv` with weights `w` and bias `b`."""
    el = element_type(conv.output)
    w_val = insert_constant(rewriter, w, el, old)
    b_val = insert_constant(rewriter, b, el, old)
    new = graph.ConvOp(
        operands=[x if x is not None else conv.input, w_val, b_val],
        result_types=[old.results[0].type],
        properties=dict(conv.properties),
    )
    rewriter.replace(old, new)


# --------------------------------------------------------------------------- conv folds


class FoldBatchNormIntoConv(RewritePattern):
    """BN(conv(x, W, b)) -> conv(x, W * s, (b - mean) * s + beta), s = gamma/sqrt(var+eps)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, bn: graph.BatchNormalizationOp, rewriter: PatternRewriter):
        conv = _foldable_conv(bn.input)
        st = bn_scale_shift(bn) if conv is not None else None
        if conv is None or st is None:
            return
        s, t = st
        w, b = _conv_params(conv)
        _replace_conv(rewriter, bn, conv, _scaled_weight(conv, w, s), b * s + t)


def _conv_and_channel_constant(op: graph.AddOp | graph.MulOp) -> tuple[Operation, np.ndarray] | None:
    """conv(...) <op> c for a foldable conv and a per-output-channel constant c, as
    (conv, c); None otherwise."""
    split = binary_with_constant(op)
    if split is None:
        return None
    conv = _foldable_conv(split[0])
    if conv is None or shape_of(op.output) != shape_of(conv.output):
        return None
    c = per_channel(split[1], shape_of(op.output))
    return None if c is None else (conv, c)


class FoldAddIntoConvBias(RewritePattern):
    """conv(x, W, b) + c -> conv(x, W, b + c) for a per-output-channel constant c."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, add: graph.AddOp, rewriter: PatternRewriter):
        match = _conv_and_channel_constant(add)
        if match is None:
            return
        conv, c = match
        w, b = _conv_params(conv)
        _replace_conv(rewriter, add, conv, w, b + c)


class FoldMulIntoConvWeights(RewritePattern):
    """conv(x, W, b) * c -> conv(x, W * c, b * c) for a per-output-channel constant c."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, mul: graph.MulOp, rewriter: PatternRewriter):
        match = _conv_and_channel_constant(mul)
        if match is None:
            return
        conv, c = match
        w, b = _conv_params(conv)
        c = c.astype(np.float64)
        _replace_conv(rewriter, mul, conv, _scaled_weight(conv, w, c), b * c)


class ResidualAddIntoConv(RewritePattern):
    """conv(x, W, b) + z (Add, or Sum of two) -> graph.conv_add(x, W, b, z) for a z of the
    result's shape (a residual connection): the conv kernel starts from z, and a following activation can
    still become the epilogue (act(conv + z), as ResNet and MobileNetV2 blocks end)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, add: Operation, rewriter: PatternRewriter):
        if isinstance(add, graph.SumOp) and len(add.inputs) == 2:  # ResNet's Sum
            lhs, rhs = add.inputs
        elif isinstance(add, graph.AddOp):
            lhs, rhs = add.lhs, add.rhs
        else:
            return
        out = shape_of(add.output)
        for value, z in ((lhs, rhs), (rhs, lhs)):
            conv = value.owner
            if not isinstance(conv, graph.ConvOp) or epilogue_of(conv) is not None:
                continue
            if not single_use(value) or not is_float_tensor(value) or z == value:
                continue
            if shape_of(value) != out or shape_of(z) != out:
                continue
            rewriter.replace(add, graph.ConvAddOp(
                operands=[conv.input, conv.weight, [conv.bias] if conv.bias is not None else [],
                          z],
                result_types=[add.output.type], properties=dict(conv.properties)))
            return


def _is_pointwise_conv(conv: graph.ConvOp) -> bool:
    """1x1 kernel, stride 1, no padding, one group: a linear map on channels per pixel."""
    w_shape = shape_of(conv.weight)
    return (
        all(k == 1 for k in w_shape[2:]) and all(s == 1 for s in ints_of(conv.strides))
        and all(p == 0 for p in ints_of(conv.pads)) and int_of(conv.group, 1) == 1
    )


class FoldPointwiseConvIntoConv(RewritePattern):
    """conv1x1(conv(x, W1, b1), M, b2) -> conv(x, M @ W1, M @ b1 + b2).

    The 1x1 conv is a linear map on the channels of each pixel, so it composes with the
    first conv's weights. It fires only when the composed conv does no more multiplies
    than the two convs did (C2 * C0 * k <= C1 * C0 * k + C2 * C1).
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, second: graph.ConvOp, rewriter: PatternRewriter):
        if not _is_pointwise_conv(second) or epilogue_of(second) is not None:
            return
        m = constant_value(second.weight)
        b2 = constant_value(second.bias) if second.bias is not None else None
        if m is None or (second.bias is not None and b2 is None):
            return
        first = _foldable_conv(second.input)
        if first is None or int_of(first.group, 1) != 1:
            return
        w1, b1 = _conv_params(first)
        c2, c1 = m.shape[0], m.shape[1]
        taps = int(np.prod(w1.shape[1:]))
        if c2 * taps > c1 * taps + c2 * c1:
            return
        m2 = m.reshape(c2, c1).astype(np.float64)
        w = (m2 @ w1.reshape(c1, -1).astype(np.float64)).reshape((c2,) + w1.shape[1:])
        b = m2 @ b1 + (0.0 if b2 is None else b2.astype(np.float64))
        _replace_conv(rewriter, second, first, w, b, x=first.input)


# --------------------------------------------------------------------------- passes


@dataclass(frozen=True)
class FuseConvBnPass(GraphPatternPass):
    """Fold an inference BatchNormalization after a Conv into the conv's weights and bias."""

    name = "fuse-conv-bn"
    patterns = (FoldBatchNormIntoConv,)


@dataclass(frozen=True)
class FuseConvAddPass(GraphPatternPass):
    """Fold a per-channel constant Add into a conv's bias; a residual Add becomes graph.conv_add."""

    name = "fuse-conv-add"
    patterns = (FoldAddIntoConvBias, ResidualAddIntoConv)


@dataclass(frozen=True)
class FuseConvMulPass(GraphPatternPass):
    """Fold a per-output-channel constant Mul after a Conv into its weights and bias."""

    name = "fuse-conv-mul"
    patterns = (FoldMulIntoConvWeights,)


@dataclass(frozen=True)
class FuseConvMatmulPass(GraphPatternPass):
    """Fold a 1x1 Conv after a Conv into the first conv's weights and bias."""

    name = "fuse-conv-matmul"
    patterns = (FoldPointwiseConvIntoConv,)
