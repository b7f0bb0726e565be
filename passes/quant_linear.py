"""`fuse-qdq-linear`: QDQ Conv / MatMul / Gemm become graph.qlinear_conv / qlinear_matmul.

A QDQ model (onnxruntime's quantize_static) computes every linear op in float between a
DequantizeLinear of each operand and a QuantizeLinear of the result:
    Q_y(op(DQ_x(x), DQ_w(W), DQ_b(B)))
With a constant integer W (and B), that is the integer product of graph_qlinear's contract:
W stays the constant i8 weight (the weight DQ folds into the op's weight_zero_point and
output_scale), B the i32 bias, and the result is requantized with
output_scale[m] = f32(x_scale) * f32(w_scale[m]) / f32(y_scale), as onnxruntime's
QLinearConv computes it. Without a Q after the op (or when the Q cannot be taken) the
result stays float: output_scale[m] = x_scale * w_scale[m].

A Relu or Clip between the op and the Q narrows [output_min, output_max]: quantization is
monotone, so with a positive y_scale Q(relu(y)) = max(Q(y), Q(0)) = max(Q(y), y_zero_point)
and Q(clip(y, a, b)) = clip(Q(y), Q(a), Q(b)) exactly; with a negative y_scale Q is
decreasing and the bounds swap: Q(relu(y)) = min(Q(y), y_zero_point),
Q(clip(y, a, b)) = clip(Q(y), Q(b), Q(a)). Negative x or weight scales only change the
sign of output_scale.

The bias is taken only when it is already in the accumulator's scale (an i32 DQ with zero
point 0 and scale f32(x_scale * w_scale[m]), what quantize_static writes): any other bias
would have to be rounded, so the op is left alone.

A residual block's tail, Q(relu?(DQ(qlinear_conv(..)) + DQ(a))), becomes one
graph.qlinear_conv_add: the conv's kernel computes the sum in its epilogue, with the same
f32 steps (and bits) as the DQ, Add and Q, instead of a kernel of its own reading the conv's
output back from memory.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import DenseArrayBase, Float16Type, Float32Type, f32, i64
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from onnxc.dialects import graph
from onnxc.dialects.graph import float_of, int_of, shape_of
from onnxc.dialects.graph_epilogue import epilogue_of
from onnxc.passes.base import GraphPatternPass
from onnxc.passes.constants import constant_value, element_type, insert_constant
from onnxc.passes.quant_params import (
    QParams,
    byte_range,
    i64_attr,
    is_byte,
    is_i32,
    qparams,
    quantize_scalar,
)
from onnxc.passes.rewrite_utils import single_user


@dataclass(frozen=True)
class Operand:
    """The integer side of a dequantized operand and its parameters."""

    value: SSAValue
    params: QParams


def dequantized(value: SSAValue, integer=is_byte) -> Operand | None:
    """`value` = DQ(q) with non-blocked parameters and q of the `integer` kind (ui8/i8)."""
    dq = value.owner
    if not isinstance(dq, graph.DequantizeLinearOp) or not integer(dq.input):
        return None
    p = qparams(dq)
    return None if p is None else Operand(dq.input, p)


def activation_operand(value: SSAValue) -> Operand | None:
    """A per-tensor dequantized activation."""
    x = dequantized(value)
    return x if x is not None and x.params.per_tensor else None


def constant_weight(value: SSAValue, channel_axis: int) -> tuple[np.ndarray, Operand] | None:
    """DQ(constant W) quantized per tensor or along `channel_axis`: (W, operand)."""
    w = dequantized(value)
    if w is None or (w.params.axis is not None and w.params.axis != channel_axis):
        return None
    array = constant_value(w.value)
    return None if array is None else (array, w)


def accumulator_scales(x: QParams, w: QParams) -> np.ndarray:
    """f32(x_scale) * f32(w_scale[m]) in float32, per output channel (or one value)."""
    return (x.scale() * w.scales).astype(np.float32)


def bias_operand(value: SSAValue | None, acc_scales: np.ndarray, channels: int,
                 ) -> tuple[SSAValue | None] | None:
    """(the i32 bias or None) when `value` is absent or an i32 DQ in the accumulator's
    scale; None when the bias would have to be rounded."""
    if value is None:
        return (None,)
    b = dequantized(value, is_i32)
    if b is None or constant_value(b.value) is None:
        return None
    array = constant_value(b.value)
    if (array.size != channels or b.params.scales.size not in (1, channels)
            or np.any(b.params.zero_points != 0)):
        return None
    want = np.broadcast_to(acc_scales, (channels,))
    have = np.broadcast_to(b.params.scales, (channels,))
    if have.tobytes() != want.astype(np.float32).tobytes():
        return None
    return (b.value,)


# --------------------------------------------------------------------------- the requantizing tail


@dataclass(frozen=True)
class Tail:
    """The Quantize that ends a QDQ op (through an optional Relu/Clip) and its bounds."""

    quantize: graph.QuantizeLinearOp
    params: QParams
    bounds: tuple[int, int]


def requantize_tail(value: SSAValue) -> Tail | None:
    """The per-tensor Q reading `value` alone, directly or through one Relu/Clip read only
    by it, with the [min, max] the activation leaves in the quantized domain."""
    user = single_user(value)
    activation = None
    if isinstance(user, (graph.ReluOp, graph.ClipOp)):
        activation, user = user, single_user(user.results[0])
    if not isinstance(user, graph.QuantizeLinearOp) or not is_byte(user.output):
        return None
    p = qparams(user)
    if p is None or not p.per_tensor:
        return None
    lo, hi = byte_range(user.output)
    if isinstance(activation, graph.ReluOp):
        if p.positive:
            lo = max(lo, p.zero_point())
        else:  # Q decreasing: y >= 0 is q <= Q(0)
            hi = min(hi, p.zero_point())
    elif isinstance(activation, graph.ClipOp):
        if not isinstance(user.division_type(), Float32Type):
            return None  # the bounds are quantized as the Q divides: in f32 here
        a = float_of(activation.min) if activation.min is not None else -np.inf
        b = float_of(activation.max) if activation.max is not None else np.inf
        if not a <= b:
            return None
        qa, qb = quantize_scalar(a, p, lo, hi), quantize_scalar(b, p, lo, hi)
        lo, hi = (qa, qb) if p.positive else (qb, qa)
    return Tail(user, p, (lo, hi))


def representable(x: QParams, w: QParams, tail: Tail | None) -> bool:
    """Whether the output scales are finite nonzero f32 numbers, of either sign (tiny or huge
    parameters could underflow to 0 or overflow, which the op's contract forbids)."""
    scales = accumulator_scales(x, w)
    if tail is not None:
        scales = (scales / tail.params.scale()).astype(np.float32)
    return bool(np.all(np.isfinite(scales) & (scales != 0)))


def output_properties(x: QParams, w: Operand, acc_scales: np.ndarray, tail: Tail | None,
                      ) -> dict:
    """The zero points and the output rule of the new op."""
    props = {
        "input_zero_point": i64_attr(x.zero_point()),
        "weight_zero_point": DenseArrayBase.from_list(
            i64, [int(z) for z in w.params.zero_points]),
    }
    if tail is None:
        props["output_scale"] = DenseArrayBase.from_list(f32, [float(s) for s in acc_scales])
        return props
    scales = (acc_scales / tail.params.scale()).astype(np.float32)
    lo, hi = byte_range(tail.quantize.output)
    props["output_scale"] = DenseArrayBase.from_list(f32, [float(s) for s in scales])
    props["output_zero_point"] = i64_attr(tail.params.zero_point())
    if tail.bounds[0] != lo:
        props["output_min"] = i64_attr(tail.bounds[0])
    if tail.bounds[1] != hi:
        props["output_max"] = i64_attr(tail.bounds[1])
    return props


def float_result(value: SSAValue) -> bool:
    """An f32/f16 result (the float form's result types)."""
    return isinstance(element_type(value), Float32Type | Float16Type)


def replace_with(rewriter: PatternRewriter, op: Operation, tail: Tail | None,
                 build) -> None:
    """Replace `tail`'s Q (or `op` itself for the float form) by `build(result_type)`."""
    if tail is not None:
        rewriter.replace(tail.quantize, build(tail.quantize.output.type))
    else:
        rewriter.replace(op, build(op.results[0].type))


# --------------------------------------------------------------------------- Conv


class QdqConvToQLinearConv(RewritePattern):
    """Q(conv(DQ(x), DQ(W), DQ(B))) -> graph.qlinear_conv(x, W, B), and the float form."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ConvOp, rewriter: PatternRewriter):
        if epilogue_of(op) is not None or not float_result(op.output):
            return
        x = activation_operand(op.input)
        weight = constant_weight(op.weight, 0)
        if x is None or weight is None:
            return
        _, w = weight
        channels = shape_of(op.weight)[0]
        acc = accumulator_scales(x.params, w.params)
        bias = bias_operand(op.bias, acc, channels)
        if bias is None:
            return
        tail = requantize_tail(op.output)
        if not representable(x.params, w.params, tail):
            return
        props = {k: op.properties[k] for k in ("strides", "pads", "dilations", "group")}
        props.update(output_properties(x.params, w, acc, tail))
        operands = [x.value, w.value, [bias[0]] if bias[0] is not None else []]
        replace_with(rewriter, op, tail, lambda t: graph.QLinearConvOp(
            operands=operands, result_types=[t], properties=props))


# --------------------------------------------------------------------------- residual add


def _conv_term(value: SSAValue) -> Operand | None:
    """DQ(q) read only by the add, q a byte qlinear_conv (group 1, f32 dequantization) read
    only by that DQ: the side of a residual sum the conv's epilogue can compute."""
    term = activation_operand(value)
    if term is None or single_user(value) is None or single_user(term.value) is None:
        return None
    conv = term.value.owner
    if (type(conv) is not graph.QLinearConvOp or int_of(conv.group, 1) != 1
            or not is_byte(conv.output) or not isinstance(element_type(value), Float32Type)):
        return None
    return term


class QdqResidualAddToQLinearConvAdd(RewritePattern):
    """Q(relu?(DQ(qlinear_conv(..)) + DQ(a))) with per-tensor parameters and no broadcast
    -> graph.qlinear_conv_add(.., a) (the conv's other side when both are convs: the
    first)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.AddOp | graph.SumOp, rewriter: PatternRewriter):
        operands = list(op.operands)
        if len(operands) != 2 or not isinstance(element_type(op.results[0]), Float32Type):
            return
        shape = shape_of(op.results[0])
        if any(shape_of(v) != shape for v in operands):
            return
        for i in (0, 1):
            term, other = _conv_term(operands[i]), activation_operand(operands[1 - i])
            if term is not None and other is not None:
                break
        else:
            return
        conv = term.value.owner
        tail = requantize_tail(op.results[0])
        if (tail is None or element_type(tail.quantize.output) != element_type(conv.output)
                or not isinstance(tail.quantize.division_type(), Float32Type)):
            return
        scales = [term.params.scale(), other.params.scale(), tail.params.scale()]
        props = dict(conv.properties)
        props["addend_zero_point"] = i64_attr(other.params.zero_point())
        props["sum_scales"] = DenseArrayBase.from_list(f32, [float(s) for s in scales])
        props["sum_zero_point"] = i64_attr(tail.params.zero_point())
        lo, hi = byte_range(tail.quantize.output)
        if tail.bounds[0] != lo:
            props["sum_min"] = i64_attr(tail.bounds[0])
        if tail.bounds[1] != hi:
            props["sum_max"] = i64_attr(tail.bounds[1])
        bias = [conv.bias] if conv.bias is not None else []
        fused = graph.QLinearConvAddOp(
            operands=[conv.input, conv.weight, bias, other.value],
            result_types=[tail.quantize.output.type], properties=props)
        rewriter.replace(tail.quantize, fused)


# --------------------------------------------------------------------------- MatMul / Gemm


def _kn_weight(rewriter: PatternRewriter, w: Operand, transposed: bool,
               before: Operation) -> SSAValue:
    """The [K, N] integer weight: the DQ's constant itself, or its transpose (Gemm transB)
    as a new constant."""
    if not transposed:
        return w.value
    array = constant_value(w.value)
    return insert_constant(rewriter, np.ascontiguousarray(array.T), element_type(w.value),
                           before)


def _matmul_parts(lhs: SSAValue, rhs: SSAValue, transposed: bool, bias: SSAValue | None):
    """(x, w, acc scales, bias) when the product is quantizable, without rewriting."""
    x = activation_operand(lhs)
    if x is None or len(shape_of(rhs)) != 2:
        return None
    weight = constant_weight(rhs, 0 if transposed else 1)
    if weight is None:
        return None
    _, w = weight
    channels = shape_of(rhs)[0 if transposed else 1]
    acc = accumulator_scales(x.params, w.params)
    b = bias_operand(bias, acc, channels)
    return None if b is None else (x, w, acc, b[0])


def _rewrite_matmul(op: Operation, lhs: SSAValue, rhs: SSAValue, transposed: bool,
                    bias: SSAValue | None, rewriter: PatternRewriter) -> None:
    parts = _matmul_parts(lhs, rhs, transposed, bias)
    if parts is None:
        return
    x, w, acc, b = parts
    tail = requantize_tail(op.results[0])
    if not representable(x.params, w.params, tail):
        return
    if b is not None and len(shape_of(b)) != 1:
        b = _flat_bias(rewriter, b, op)
    kn = _kn_weight(rewriter, w, transposed, op)
    props = output_properties(x.params, w, acc, tail)
    operands = [x.value, kn, [b] if b is not None else []]
    replace_with(rewriter, op, tail, lambda t: graph.QLinearMatMulOp(
        operands=operands, result_types=[t], properties=props))


def _flat_bias(rewriter: PatternRewriter, bias: SSAValue, before: Operation) -> SSAValue:
    """A [1, N] constant bias as [N] (the operand qlinear_matmul takes)."""
    array = constant_value(bias)
    return insert_constant(rewriter, array.reshape(-1), element_type(bias), before)


class QdqMatMulToQLinearMatMul(RewritePattern):
    """Q(matmul(DQ(x), DQ(W))) with a constant 2-D W -> graph.qlinear_matmul(x, W)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.MatMulOp, rewriter: PatternRewriter):
        if epilogue_of(op) is None and float_result(op.output):
            _rewrite_matmul(op, op.lhs, op.rhs, False, None, rewriter)


class QdqGemmToQLinearMatMul(RewritePattern):
    """Q(gemm(DQ(x), DQ(W), DQ(B))) with alpha = beta = 1, no transA and constant W (W^T
    when transB) -> graph.qlinear_matmul(x, W, B)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.GemmOp, rewriter: PatternRewriter):
        if epilogue_of(op) is not None or not float_result(op.output):
            return
        if int_of(op.trans_a) != 0 or float_of(op.alpha) != 1.0:
            return
        if op.c is not None and (float_of(op.beta) != 1.0
                                 or shape_of(op.c) not in ((shape_of(op.output)[-1],),
                                                           (1, shape_of(op.output)[-1]))):
            return
        _rewrite_matmul(op, op.a, op.b, int_of(op.trans_b) != 0, op.c, rewriter)


@dataclass(frozen=True)
class FuseQdqLinearPass(GraphPatternPass):
    """Recognise QDQ Conv / MatMul / Gemm as integer ops with requantization."""

    name = "fuse-qdq-linear"
    patterns = (QdqConvToQLinearConv, QdqMatMulToQLinearMatMul, QdqGemmToQLinearMatMul,
                QdqResidualAddToQLinearConvAdd)
