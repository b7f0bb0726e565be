"""Normalization fusion: normalizations recognised, and constants folded into them.

fuse-layernorm: PyTorch's decomposed LayerNorm -> graph.layer_normalization.

torch.onnx (opset < 17, and HF models at any opset) exports nn.LayerNorm as
  mean = ReduceMean(x, axes=[-1]); d = x - mean; var = ReduceMean(d^2)   (Pow 2 or d * d)
  y = d / Sqrt(var + eps) * gamma + beta                     (or d * Reciprocal(Sqrt(..)))
The core (up to the Div) becomes a layer_normalization with unit scale; gamma and beta
(constants that broadcast within the normalized dimensions) then fold into its scale and
bias, so LayerNorm without affine parameters, and with either of them, is caught too.

fuse-bn-scale folds a per-channel constant Mul or Add after a BatchNormalization into its
gamma and beta (BatchNormalization into a Conv or Gemm is in conv_fusion, gemm_fusion).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, i64
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from onnxc.dialects import graph
from onnxc.dialects.graph import int_of, shape_of
from onnxc.dialects.graph_fused import strip_leading_ones
from onnxc.dialects.symbolic_dims import is_static
from onnxc.passes.base import GraphPatternPass
from onnxc.passes.constants import (
    constant_value,
    element_type,
    insert_constant,
    is_float_tensor,
    per_channel,
    single_use,
)
from onnxc.passes.fusion_match import (
    binary_with_constant,
    float_result,
    operand_orders,
    producer,
    used_only_by,
    with_scalar,
)

# --------------------------------------------------------------------------- layer normalization


def _trailing_mean(value: SSAValue) -> tuple[graph.ReduceMeanOp, int] | None:
    """(op, axis) when `value` is a keepdims ReduceMean over the axes [axis, rank)."""
    mean = producer(value, graph.ReduceMeanOp)
    if mean is None or int_of(mean.keepdims) == 0:
        return None
    rank = len(shape_of(mean.input))
    axes = mean.reduced_axes()
    if not axes or list(axes) != list(range(axes[0], rank)):
        return None
    return mean, axes[0]


def _squared(value: SSAValue) -> SSAValue | None:
    """d when `value` is Pow(d, 2) or d * d."""
    power = with_scalar(value.owner, graph.PowOp)
    if power is not None and power[1] == 2.0:
        return power[0]
    mul = producer(value, graph.MulOp)
    if mul is not None and mul.lhs == mul.rhs:
        return mul.lhs
    return None


def _inverse_std(op: graph.DivOp | graph.MulOp) -> tuple[SSAValue, list[Operation]] | None:
    """(d, ops) when `op` is d / sqrt(var + eps) or d * reciprocal(sqrt(var + eps))."""
    candidates = []
    if isinstance(op, graph.DivOp):
        candidates.append((op.lhs, op.rhs, []))
    else:
        for d, r in operand_orders(op):
            recip = producer(r, graph.ReciprocalOp)
            if recip is not None:
                candidates.append((d, recip.input, [recip]))
    for d, root, extra in candidates:
        sqrt = producer(root, graph.SqrtOp)
        if sqrt is not None:
            return d, [sqrt, *extra]
    return None


class FuseLayerNormCore(RewritePattern):
    """(x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) -> layer_normalization(x, 1)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, (graph.DivOp, graph.MulOp)) or not float_result(op):
            return
        found = _inverse_std(op)
        if found is None:
            return
        d, (sqrt, *recip) = found
        shifted = with_scalar(sqrt.input.owner, graph.AddOp)
        sub = producer(d, graph.SubOp)
        if shifted is None or sub is None:
            return
        var_value, eps = shifted
        var = _trailing_mean(var_value)
        mean = _trailing_mean(sub.rhs)
        if var is None or mean is None or var[1] != mean[1]:
            return
        x = sub.lhs
        if mean[0].input != x or _squared(var[0].input) != d:
            return
        if shape_of(x) != shape_of(op.results[0]) or eps < 0.0:
            return
        square = var[0].input.owner
        inner = [sub, mean[0], square, var[0], sqrt.input.owner, sqrt, *recip, op]
        intermediates = [sub.rhs, d, var[0].input, var_value, sqrt.input, sqrt.output,
                         *(r.output for r in recip)]
        if not used_only_by(intermediates, inner):
            return
        axis = mean[1]
        el = element_type(x)
        # a unit scale over the last axis; one element, broadcast, when that size is symbolic
        last = shape_of(x)[-1:]
        ones = insert_constant(rewriter, np.ones(last if is_static(last) else (1,)), el, op)
        ln = graph.LayerNormalizationOp(
            operands=[x, ones, None],
            result_types=[x.type],
            properties={"axis": IntegerAttr(axis, i64), "epsilon": FloatAttr(eps, el)},
        )
        rewriter.replace(op, ln)


def _affine_parameter(ln: graph.LayerNormalizationOp, value: SSAValue) -> np.ndarray | None:
    """The constant `value` when it broadcasts within the normalized dimensions only."""
    array = constant_value(value)
    if array is None:
        return None
    trailing = shape_of(ln.input)[ln.normalized_axis():]
    squeezed = array.reshape(strip_leading_ones(array.shape))
    if squeezed.ndim > len(trailing):
        return None
    if any(d not in (1, t) for d, t in zip(squeezed.shape[::-1], trailing[::-1])):
        return None
    return squeezed.astype(np.float64)


class FoldLayerNormAffine(RewritePattern):
    """layer_normalization(x, s, b) * gamma + beta -> layer_normalization(x, s*g, b*g + beta)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, (graph.MulOp, graph.AddOp)) or not float_result(op):
            return
        for value, param in operand_orders(op):
            ln = producer(value, graph.LayerNormalizationOp)
            if ln is None or not value.has_one_use() or shape_of(value) != shape_of(op.results[0]):
                continue
            p = _affine_parameter(ln, param)
            scale = constant_value(ln.scale)
            bias = constant_value(ln.bias) if ln.bias is not None else np.zeros(1)
            if p is None or scale is None or bias is None:
                continue
            if isinstance(op, graph.MulOp):
                scale, bias = scale * p, bias * p
            else:
                bias = bias + p
            el = element_type(value)
            operands = [
                ln.input,
                insert_constant(rewriter, np.asarray(scale), el, op),
                insert_constant(rewriter, np.asarray(bias), el, op),
            ]
            fused = graph.LayerNormalizationOp(
                operands=operands, result_types=[ln.output.type],
                properties={"axis": ln.axis, "epsilon": ln.epsilon},
            )
            rewriter.replace(op, fused)
            return


# --------------------------------------------------------------------------- batch normalization


class FoldScaleIntoBatchNorm(RewritePattern):
    """BN(x) * c -> BN with gamma * c, beta * c; BN(x) + c -> BN with beta + c (c per
    channel)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter):
        if not isinstance(op, (graph.MulOp, graph.AddOp)):
            return
        split = binary_with_constant(op)
        if split is None:
            return
        bn = split[0].owner
        if not isinstance(bn, graph.BatchNormalizationOp) or not single_use(split[0]):
            return
        if shape_of(op.output) != shape_of(bn.output) or not is_float_tensor(bn.output):
            return
        c = per_channel(split[1], shape_of(op.output))
        gamma, beta = constant_value(bn.scale), constant_value(bn.bias)
        if c is None or gamma is None or beta is None:
            return
        c = c.astype(np.float64)
        gamma, beta = gamma.astype(np.float64), beta.astype(np.float64)
        if isinstance(op, graph.MulOp):
            gamma, beta = gamma * c, beta * c
        else:
            beta = beta + c
        g_val = insert_constant(rewriter, gamma, element_type(bn.scale), op)
        b_val = insert_constant(rewriter, beta, element_type(bn.bias), op)
        rewriter.replace(op, graph.BatchNormalizationOp(
            operands=[bn.input, g_val, b_val, bn.mean, bn.var],
            result_types=[op.results[0].type], properties=dict(bn.properties)))


# --------------------------------------------------------------------------- passes


@dataclass(frozen=True)
class FuseLayernormPass(GraphPatternPass):
    """Decomposed LayerNorm (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add)."""

    name = "fuse-layernorm"
    patterns = (FuseLayerNormCore, FoldLayerNormAffine)


@dataclass(frozen=True)
class FuseBnScalePass(GraphPatternPass):
    """Fold a per-channel constant Mul or Add after a BatchNormalization into its gamma and beta."""

    name = "fuse-bn-scale"
    patterns = (FoldScaleIntoBatchNorm,)
