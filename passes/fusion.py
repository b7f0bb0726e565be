"""Vertical fusion: a producer and its single consumer become one op (catalog "Operator fusion").

Weight folds (fuse-conv-bn, -conv-add, -conv-mul, -conv-matmul, -bn-scale, -matmul-bn) fire
only on float ops whose weights, biases and folded operands are graph constants, whose
folded operand is per output channel (it never enlarges the result), and whose
intermediate value has no other user. fuse-matmul-add / -matmul-scale turn 2-D MatMuls into
Gemm; fuse-activation makes the activation the producer's epilogue (dialects/graph_epilogue);
fuse-conv-add also folds a residual Add (a non-constant addend of the conv's shape) into a
graph.conv_add. fuse-elementwise lives in fusion_elementwise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, StringAttr, i64
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from onnxc.dialects import graph
from onnxc.dialects.graph import float_of, int_of, ints_of, shape_of
from onnxc.dialects.graph_epilogue import epilogue_of
from onnxc.passes.base import GraphPatternPass
from onnxc.passes.constants import (
    constant_value,
    element_type,
    insert_constant,
    is_float_tensor,
    per_channel,
    scalar,
    single_use,
    use_count,
)
from onnxc.passes.fusion_elementwise import FuseElementwiseChain

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
    """(weight, bias) as float64 arrays; an absent bias is zeros."""
    w = constant_value(conv.weight).astype(np.float64)
    b = constant_value(conv.bias) if conv.bias is not None else None
    return w, (np.zeros(w.shape[0]) if b is None else b.astype(np.float64))


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


def _binary_with_constant(
    op: graph.BinaryElementwiseOp,
) -> tuple[SSAValue, np.ndarray] | None:
    """(the other operand, the constant) of a binary op with one constant operand."""
    rhs = constant_value(op.rhs)
    if rhs is not None and constant_value(op.lhs) is None:
        return op.lhs, rhs
    lhs = constant_value(op.lhs)
    if lhs is not None and rhs is None and not isinstance(op, (graph.SubOp, graph.DivOp)):
        return op.rhs, lhs
    return None


def _bn_scale_shift(bn: graph.BatchNormalizationOp) -> tuple[np.ndarray, np.ndarray] | None:
    """BN as y = x * s + t per channel, when all its parameters are constants."""
    params = [constant_value(v) for v in (bn.scale, bn.bias, bn.mean, bn.var)]
    if any(p is None for p in params):
        return None
    scale, bias, mean, var = (p.astype(np.float64) for p in params)
    s = scale / np.sqrt(var + float_of(bn.epsilon))
    return s, bias - mean * s


def _gemm(
    a: SSAValue, b: SSAValue, c: SSAValue | None, result, alpha: float, beta: float,
    trans_a: int = 0, trans_b: int = 0, keep: Operation | None = None,
) -> graph.GemmOp:
    el = element_type(a)
    props = {
        "alpha": FloatAttr(alpha, el), "beta": FloatAttr(beta, el),
        "transA": IntegerAttr(trans_a, i64), "transB": IntegerAttr(trans_b, i64),
    }
    if keep is not None:  # carry the epilogue of the op being replaced
        props.update({k: v for k, v in keep.properties.items() if k.startswith("activation")})
    return graph.GemmOp(operands=[a, b, [c] if c is not None else []], result_types=[result],
                        properties=props)


def _plain_2d_matmul(value: SSAValue) -> graph.MatMulOp | None:
    """A 2-D x 2-D float MatMul without epilogue whose only user is the consumer."""
    mm = value.owner
    if not isinstance(mm, graph.MatMulOp) or epilogue_of(mm) is not None:
        return None
    if len(shape_of(mm.lhs)) != 2 or len(shape_of(mm.rhs)) != 2:
        return None
    if not is_float_tensor(value) or not single_use(value):
        return None
    return mm


# --------------------------------------------------------------------------- conv folds


class FoldBatchNormIntoConv(RewritePattern):
    """BN(conv(x, W, b)) -> conv(x, W * s, (b - mean) * s + beta), s = gamma/sqrt(var+eps)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, bn: graph.BatchNormalizationOp, rewriter: PatternRewriter):
        conv = _foldable_conv(bn.input)
        st = _bn_scale_shift(bn) if conv is not None else None
        if conv is None or st is None:
            return
        s, t = st
        w, b = _conv_params(conv)
        _replace_conv(rewriter, bn, conv, w * s.reshape((-1,) + (1,) * (w.ndim - 1)), b * s + t)


class FoldAddIntoConvBias(RewritePattern):
    """conv(x, W, b) + c -> conv(x, W, b + c) for a per-output-channel constant c."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, add: graph.AddOp, rewriter: PatternRewriter):
        split = _binary_with_constant(add)
        if split is None:
            return
        conv = _foldable_conv(split[0])
        c = per_channel(split[1], shape_of(add.output)) if conv is not None else None
        if conv is None or c is None or shape_of(add.output) != shape_of(conv.output):
            return
        w, b = _conv_params(conv)
        _replace_conv(rewriter, add, conv, w, b + c)


class FoldMulIntoConvWeights(RewritePattern):
    """conv(x, W, b) * c -> conv(x, W * c, b * c) for a per-output-channel constant c."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, mul: graph.MulOp, rewriter: PatternRewriter):
        split = _binary_with_constant(mul)
        if split is None:
            return
        conv = _foldable_conv(split[0])
        c = per_channel(split[1], shape_of(mul.output)) if conv is not None else None
        if conv is None or c is None or shape_of(mul.output) != shape_of(conv.output):
            return
        w, b = _conv_params(conv)
        c = c.astype(np.float64)
        _replace_conv(rewriter, mul, conv, w * c.reshape((-1,) + (1,) * (w.ndim - 1)), b * c)


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
        w = (m2 @ w1.reshape(c1, -1)).reshape((c2,) + w1.shape[1:])
        b = m2 @ b1 + (0.0 if b2 is None else b2.astype(np.float64))
        _replace_conv(rewriter, second, first, w, b, x=first.input)


# --------------------------------------------------------------------------- matmul folds


class MatMulAddToGemm(RewritePattern):
    """MatMul(A, B) + c (c broadcasting to M x N) -> Gemm(A, B, c); also fills an absent
    Gemm bias."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, add: graph.AddOp, rewriter: PatternRewriter):
        out = shape_of(add.output)
        for prod, c in ((add.lhs, add.rhs), (add.rhs, add.lhs)):
            if shape_of(prod) != out or len(out) != 2:
                continue
            mm = _plain_2d_matmul(prod)
            if mm is not None:
                rewriter.replace(add, _gemm(mm.lhs, mm.rhs, c, add.output.type, 1.0, 1.0))
                return
            gemm = prod.owner
            if (isinstance(gemm, graph.GemmOp) and gemm.c is None and single_use(prod)
                    and epilogue_of(gemm) is None):
                rewriter.replace(add, _gemm(
                    gemm.a, gemm.b, c, add.output.type, float_of(gemm.alpha), 1.0,
                    int_of(gemm.trans_a), int_of(gemm.trans_b)))
                return


def _scalar_factor(op: Operation) -> tuple[SSAValue, float] | None:
    """(x, s) for x * s, s * x or x / s with a single-element constant s."""
    if not isinstance(op, (graph.MulOp, graph.DivOp)):
        return None
    split = _binary_with_constant(op)
    s = scalar(split[1]) if split is not None else None
    if s is None or shape_of(op.output) != shape_of(split[0]):
        return None
    if isinstance(op, graph.DivOp):
        if s == 0.0:
            return None
        s = 1.0 / s
    return split[0], s


class ScaleIntoGemmAlpha(RewritePattern):
    """(A x B) * s, (A x B) / s, (A * s) x B and A x (B * s) -> Gemm with alpha * s."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter):
        if isinstance(op, (graph.MulOp, graph.DivOp)):
            self._after(op, rewriter)
        elif isinstance(op, (graph.MatMulOp, graph.GemmOp)):
            self._before(op, rewriter)

    def _after(self, op: Operation, rewriter: PatternRewriter) -> None:
        found = _scalar_factor(op)
        if found is None or not is_float_tensor(op.results[0]):
            return
        x, s = found
        mm = _plain_2d_matmul(x)
        if mm is not None:
            rewriter.replace(op, _gemm(mm.lhs, mm.rhs, None, op.results[0].type, s, 1.0))
            return
        gemm = x.owner
        if isinstance(gemm, graph.GemmOp) and single_use(x) and epilogue_of(gemm) is None:
            rewriter.replace(op, _gemm(
                gemm.a, gemm.b, gemm.c, op.results[0].type, float_of(gemm.alpha) * s,
                float_of(gemm.beta) * s, int_of(gemm.trans_a), int_of(gemm.trans_b)))

    def _before(self, op: graph.MatMulOp | graph.GemmOp, rewriter: PatternRewriter) -> None:
        if not is_float_tensor(op.output):
            return
        if isinstance(op, graph.MatMulOp):
            if len(shape_of(op.lhs)) != 2 or len(shape_of(op.rhs)) != 2:
                return
            a, b, c, alpha, beta, ta, tb = op.lhs, op.rhs, None, 1.0, 1.0, 0, 0
        else:
            a, b, c = op.a, op.b, op.c
            alpha, beta = float_of(op.alpha), float_of(op.beta)
            ta, tb = int_of(op.trans_a), int_of(op.trans_b)
        for side in (0, 1):
            operand = (a, b)[side]
            found = _scalar_factor(operand.owner) if isinstance(operand.owner, Operation) else None
            if found is None or not single_use(operand):
                continue
            x, s = found
            a2, b2 = (x, b) if side == 0 else (a, x)
            rewriter.replace(op, _gemm(a2, b2, c, op.output.type, alpha * s, beta, ta, tb,
                                          keep=op))
            return


class FoldBatchNormIntoGemm(RewritePattern):
    """BN over the columns of MatMul(A, B) / Gemm(A, B, C) with constant B folds into B
    and the bias: the result is one Gemm."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, bn: graph.BatchNormalizationOp, rewriter: PatternRewriter):
        producer = bn.input.owner
        if len(shape_of(bn.input)) != 2 or not is_float_tensor(bn.input):
            return
        if not isinstance(producer, (graph.MatMulOp, graph.GemmOp)) or not single_use(bn.input):
            return
        if epilogue_of(producer) is not None:
            return
        st = _bn_scale_shift(bn)
        if st is None:
            return
        s, t = st
        if isinstance(producer, graph.MatMulOp):
            if len(shape_of(producer.lhs)) != 2:
                return
            a, b, c, alpha, beta, ta, tb = producer.lhs, producer.rhs, None, 1.0, 1.0, 0, 0
        else:
            a, b, c = producer.a, producer.b, producer.c
            alpha, beta = float_of(producer.alpha), float_of(producer.beta)
            ta, tb = int_of(producer.trans_a), int_of(producer.trans_b)
        w = constant_value(b)
        c_val = constant_value(c) if c is not None else np.zeros(())
        if w is None or c_val is None:
            return
        w = w.astype(np.float64)
        w = w * s[:, None] if tb else w * s[None, :]
        new_c = (beta * c_val.astype(np.float64)) * s + t
        el = element_type(bn.output)
        w_val = insert_constant(rewriter, w, el, bn)
        c_new = insert_constant(rewriter, new_c, el, bn)
        rewriter.replace(bn, _gemm(a, w_val, c_new, bn.output.type, alpha, 1.0, ta, tb))


class FoldScaleIntoBatchNorm(RewritePattern):
    """BN(x) * c -> BN with gamma * c, beta * c; BN(x) + c -> BN with beta + c (c per
    channel)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter):
        if not isinstance(op, (graph.MulOp, graph.AddOp)):
            return
        split = _binary_with_constant(op)
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


# --------------------------------------------------------------------------- activation


def _activation_of(op: Operation) -> dict[str, object] | None:
    """The epilogue properties expressing activation op `op`, or None if it is not one."""
    el = element_type(op.results[0])
    if isinstance(op, graph.ReluOp):
        return {"activation": StringAttr("relu")}
    if isinstance(op, graph.SigmoidOp):
        return {"activation": StringAttr("sigmoid")}
    if isinstance(op, graph.TanhOp):
        return {"activation": StringAttr("tanh")}
    if isinstance(op, graph.GeluOp):
        tanh = op.approximate.data == "tanh"
        return {"activation": StringAttr("gelu_tanh" if tanh else "gelu")}
    if isinstance(op, graph.LeakyReluOp):
        return {"activation": StringAttr("leaky_relu"),
                "activation_alpha": FloatAttr(float_of(op.alpha), el)}
    if isinstance(op, graph.ClipOp):
        props: dict[str, object] = {"activation": StringAttr("clip")}
        if op.min is not None:
            props["activation_alpha"] = FloatAttr(float_of(op.min), el)
        if op.max is not None:
            props["activation_beta"] = FloatAttr(float_of(op.max), el)
        return props
    return None


EPILOGUE_PRODUCERS = (graph.ConvOp, graph.ConvAddOp, graph.GemmOp, graph.MatMulOp)


def _operand_groups(op: Operation) -> list:
    """`op`'s operands grouped as its constructor wants them (optional bias as a list)."""
    if isinstance(op, graph.ConvOp):
        return [op.input, op.weight, [op.bias] if op.bias is not None else []]
    if isinstance(op, graph.ConvAddOp):
        return [op.input, op.weight, [op.bias] if op.bias is not None else [], op.addend]
    if isinstance(op, graph.GemmOp):
        return [op.a, op.b, [op.c] if op.c is not None else []]
    return list(op.operands)


class ActivationAsEpilogue(RewritePattern):
    """act(conv/gemm/matmul(...)) -> the producer with `activation` set, when the producer
    has no epilogue yet and the activation is its only user."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter):
        if not isinstance(op, (graph.UnaryElementwiseOp, graph.GeluOp)):
            return
        producer = op.input.owner
        if not isinstance(producer, EPILOGUE_PRODUCERS) or epilogue_of(producer) is not None:
            return
        if not single_use(op.input):
            return
        props = _activation_of(op)
        if props is None:
            return
        if props["activation"].data not in ("relu", "clip") and not is_float_tensor(op.input):
            return
        new = type(producer)(
            operands=_operand_groups(producer),
            result_types=[op.output.type],
            properties={**producer.properties, **props},
        )
        rewriter.replace(op, new)


class HardSwishAsEpilogue(RewritePattern):
    """x * clip(x * a + b, 0, 1) with x = conv/gemm/matmul(...) (the importer's HardSwish
    and x * HardSigmoid) -> the producer with a hard_swish epilogue."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, mul: graph.MulOp, rewriter: PatternRewriter):
        for x, gate in ((mul.lhs, mul.rhs), (mul.rhs, mul.lhs)):
            producer = x.owner
            if not isinstance(producer, EPILOGUE_PRODUCERS) or epilogue_of(producer) is not None:
                continue
            ab = _hard_sigmoid_of(gate, x)
            if ab is None or use_count(x) != 2 or not single_use(gate):
                continue
            if not is_float_tensor(x) or shape_of(mul.output) != shape_of(x):
                continue
            el = element_type(x)
            props = {"activation": StringAttr("hard_swish"),
                     "activation_alpha": FloatAttr(ab[0], el),
                     "activation_beta": FloatAttr(ab[1], el)}
            rewriter.replace(mul, type(producer)(
                operands=_operand_groups(producer), result_types=[mul.output.type],
                properties={**producer.properties, **props}))
            return


def _hard_sigmoid_of(gate: SSAValue, x: SSAValue) -> tuple[float, float] | None:
    """(a, b) when gate = clip(x * a + b, 0, 1) with scalar constants a, b."""
    clip = gate.owner
    if not isinstance(clip, graph.ClipOp) or clip.min is None or clip.max is None:
        return None
    if float_of(clip.min) != 0.0 or float_of(clip.max) != 1.0:
        return None
    add = clip.input.owner
    if not isinstance(add, graph.AddOp) or not single_use(clip.input):
        return None
    split = _binary_with_constant(add)
    b = scalar(split[1]) if split is not None else None
    if b is None or not single_use(split[0]):
        return None
    mul = split[0].owner
    if not isinstance(mul, graph.MulOp):
        return None
    split = _binary_with_constant(mul)
    a = scalar(split[1]) if split is not None else None
    if a is None or split[0] != x:
        return None
    return a, b


# --------------------------------------------------------------------------- passes


@dataclass(frozen=True)
class FuseConvBnPass(GraphPatternPass):
    name = "fuse-conv-bn"
    patterns = (FoldBatchNormIntoConv,)


@dataclass(frozen=True)
class FuseConvAddPass(GraphPatternPass):
    name = "fuse-conv-add"
    patterns = (FoldAddIntoConvBias, ResidualAddIntoConv)


@dataclass(frozen=True)
class FuseConvMulPass(GraphPatternPass):
    name = "fuse-conv-mul"
    patterns = (FoldMulIntoConvWeights,)


@dataclass(frozen=True)
class FuseConvMatmulPass(GraphPatternPass):
    name = "fuse-conv-matmul"
    patterns = (FoldPointwiseConvIntoConv,)


@dataclass(frozen=True)
class FuseMatmulAddPass(GraphPatternPass):
    name = "fuse-matmul-add"
    patterns = (MatMulAddToGemm,)


@dataclass(frozen=True)
class FuseMatmulScalePass(GraphPatternPass):
    name = "fuse-matmul-scale"
    patterns = (ScaleIntoGemmAlpha,)


@dataclass(frozen=True)
class FuseBnScalePass(GraphPatternPass):
    name = "fuse-bn-scale"
    patterns = (FoldScaleIntoBatchNorm,)


@dataclass(frozen=True)
class FuseMatmulBnPass(GraphPatternPass):
    name = "fuse-matmul-bn"
    patterns = (FoldBatchNormIntoGemm,)


@dataclass(frozen=True)
class FuseActivationPass(GraphPatternPass):
    name = "fuse-activation"
    patterns = (ActivationAsEpilogue, HardSwishAsEpilogue)


@dataclass(frozen=True)
class FuseElementwisePass(GraphPatternPass):
    name = "fuse-elementwise"
    patterns = (FuseElementwiseChain,)
