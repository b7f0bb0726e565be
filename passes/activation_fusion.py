"""Activation fusion: activations become an op's epilogue or one graph op.

fuse-activation makes an activation (Relu, Clip, Sigmoid, Tanh, Gelu, LeakyRelu, HardSwish,
SiLU written as x * Sigmoid(x)) the epilogue of the Conv/Gemm/MatMul that feeds it (dialects/graph_epilogue), when it is the
producer's only user. fuse-gelu and fuse-prelu recognise activations that exporters write out
as elementwise formulas.

GELU (torch.nn.GELU, HF BERT, the importer's own Gelu-tanh decomposition):
  erf form   0.5 * x * (1 + erf(x / sqrt(2)))          (x / 1.4142 or x * 0.7071)
  tanh form  0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))   (x^3 as Pow or Mul)
in any association and order of the three factors, so the match collects the leaves of the
product tree and asks for {0.5, x, 1 + phi(x)}.

PReLU: the importer decomposes ONNX PRelu into relu(x) + slope * min(x, 0), and Keras-style
exports write relu(x) - slope * relu(-x); both become graph.prelu(x, slope).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects.builtin import FloatAttr, StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from onnxc.dialects import graph, graph_shapes
from onnxc.dialects.activations import ACTIVATIONS, activation_of
from onnxc.dialects.graph import float_of, shape_of
from onnxc.dialects.graph_epilogue import epilogue_of
from onnxc.passes.base import GraphPatternPass
from onnxc.passes.constants import (
    constant_value,
    element_type,
    is_float_tensor,
    scalar,
    single_use,
    use_count,
)
from onnxc.passes.fusion_match import (
    binary_with_constant,
    close,
    float_result,
    operand_orders,
    producer,
    product_factors,
    same_data,
    scaled_by,
    used_only_by,
    with_scalar,
)

# --------------------------------------------------------------------------- epilogues


def _activation_of(op: Operation) -> dict[str, object] | None:
    """The epilogue properties expressing activation op `op`, or None if it is not one
    (dialects/activations.py `activation_of`: Relu, Sigmoid, Tanh, Gelu, LeakyRelu, Clip)."""
    found = activation_of(op)
    if found is None:
        return None
    activation, alpha, beta = found
    el = element_type(op.results[0])
    props: dict[str, object] = {"activation": StringAttr(activation.name)}
    if alpha is not None:
        props["activation_alpha"] = FloatAttr(alpha, el)
    if beta is not None:
        props["activation_beta"] = FloatAttr(beta, el)
    return props


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
        producer, view = op.input.owner, None
        if isinstance(producer, graph.ReshapeOp) and producer.shape is None:
            # a Gemm of a Linear's rows seen in the activation's shape (fuse-matmul-add)
            view, producer = producer, producer.input.owner
            if not single_use(view.input):
                return
        if not isinstance(producer, EPILOGUE_PRODUCERS) or epilogue_of(producer) is not None:
            return
        if not single_use(op.input):
            return
        props = _activation_of(op)
        if props is None:
            return
        if not ACTIVATIONS[props["activation"].data].integer and not is_float_tensor(op.input):
            return
        new = type(producer)(
            operands=_operand_groups(producer),
            result_types=[op.output.type if view is None else producer.results[0].type],
            properties={**producer.properties, **props},
        )
        if view is None:
            rewriter.replace(op, new)
            return
        reshaped = graph.ReshapeOp(operands=[new.results[0]], result_types=[op.output.type])
        rewriter.replace(op, [new, reshaped], [reshaped.output])


class _GateAsEpilogue(RewritePattern):
    """x * gate(x) with x = conv/gemm/matmul(...) read by the gate and the product alone ->
    the producer with the epilogue `epilogue(gate, x)` describes."""

    def epilogue(self, gate: SSAValue, x: SSAValue) -> dict[str, object] | None:
        raise NotImplementedError

    @op_type_rewrite_pattern
    def match_and_rewrite(self, mul: graph.MulOp, rewriter: PatternRewriter):
        for x, gate in ((mul.lhs, mul.rhs), (mul.rhs, mul.lhs)):
            producer = x.owner
            if not isinstance(producer, EPILOGUE_PRODUCERS) or epilogue_of(producer) is not None:
                continue
            props = self.epilogue(gate, x)
            if props is None or use_count(x) != 2 or not single_use(gate):
                continue
            if not is_float_tensor(x) or shape_of(mul.output) != shape_of(x):
                continue
            rewriter.replace(mul, type(producer)(
                operands=_operand_groups(producer), result_types=[mul.output.type],
                properties={**producer.properties, **props}))
            return


class HardSwishAsEpilogue(_GateAsEpilogue):
    """x * clip(x * a + b, 0, 1) with x = conv/gemm/matmul(...) (the importer's HardSwish
    and x * HardSigmoid) -> the producer with a hard_swish epilogue."""

    def epilogue(self, gate: SSAValue, x: SSAValue) -> dict[str, object] | None:
        ab = _hard_sigmoid_of(gate, x)
        if ab is None:
            return None
        el = element_type(x)
        return {"activation": StringAttr("hard_swish"), "activation_alpha": FloatAttr(ab[0], el),
                "activation_beta": FloatAttr(ab[1], el)}


class SiluAsEpilogue(_GateAsEpilogue):
    """x * sigmoid(x) with x = conv/gemm/matmul(...) (torch's SiLU as exported: Sigmoid and
    Mul) -> the producer with a silu epilogue: the product is taken while the tile is in
    registers, not in one more pass over memory (EfficientNet's expansions: 4.8 MB)."""

    def epilogue(self, gate: SSAValue, x: SSAValue) -> dict[str, object] | None:
        sigmoid = gate.owner
        if not isinstance(sigmoid, graph.SigmoidOp) or sigmoid.input != x:
            return None
        return {"activation": StringAttr("silu")}


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
    split = binary_with_constant(add)
    b = scalar(split[1]) if split is not None else None
    if b is None or not single_use(split[0]):
        return None
    mul = split[0].owner
    if not isinstance(mul, graph.MulOp):
        return None
    split = binary_with_constant(mul)
    a = scalar(split[1]) if split is not None else None
    if a is None or split[0] != x:
        return None
    return a, b


# --------------------------------------------------------------------------- GELU


def _erf_argument(phi: graph.ErfOp) -> SSAValue | None:
    """x when erf's argument is x / sqrt(2)."""
    scaled = scaled_by(phi.input)
    if scaled is not None and close(scaled[1], math.sqrt(0.5)):
        return scaled[0]
    return None


def _is_cube_of(value: SSAValue, x: SSAValue) -> bool:
    """value is x^3 as Pow(x, 3), x * x * x or x * (x * x)."""
    power = with_scalar(value.owner, graph.PowOp)
    if power is not None:
        return same_data(power[0], x) and power[1] == 3.0
    if not isinstance(value.owner, graph.MulOp):
        return False
    factors = product_factors(value.owner, limit=3)
    return (factors is not None and factors[1] == 1.0 and len(factors[0]) == 3
            and all(same_data(f, x) for f in factors[0]))


def _tanh_argument(phi: graph.TanhOp) -> SSAValue | None:
    """x when tanh's argument is sqrt(2/pi) * (x + 0.044715 * x^3)."""
    scaled = scaled_by(phi.input)
    if scaled is None or not close(scaled[1], math.sqrt(2 / math.pi), rel=1e-4):
        return None
    inner = producer(scaled[0], graph.AddOp)
    if inner is None:
        return None
    for x, cubic in operand_orders(inner):
        term = scaled_by(cubic)
        if term is not None and close(term[1], 0.044715, rel=1e-4) and _is_cube_of(term[0], x):
            return x
    return None


def _one_plus_phi(value: SSAValue) -> tuple[SSAValue, str, Operation] | None:
    """(x, approximate, phi op) when `value` is 1 + erf(x/sqrt 2) or 1 + tanh(...)."""
    plus_one = with_scalar(value.owner, graph.AddOp)
    if plus_one is None or plus_one[1] != 1.0:
        return None
    phi = plus_one[0].owner
    if isinstance(phi, graph.ErfOp):
        x = _erf_argument(phi)
        return None if x is None else (x, "none", phi)
    if isinstance(phi, graph.TanhOp):
        x = _tanh_argument(phi)
        return None if x is None else (x, "tanh", phi)
    return None


class FuseGelu(RewritePattern):
    """{0.5, x, 1 + phi(x)} multiplied in any order -> graph.gelu(x)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, (graph.MulOp, graph.MulScalarOp)) or not float_result(op):
            return
        factors = product_factors(op, limit=2)
        if factors is None or len(factors[0]) != 2 or not close(factors[1], 0.5):
            return
        for a, x in (factors[0], factors[0][::-1]):
            found = _one_plus_phi(a)
            if found is None or not same_data(found[0], x) or not a.has_one_use():
                continue
            if shape_of(x) != shape_of(op.results[0]):
                continue
            gelu = graph.GeluOp(operands=[x], result_types=[op.results[0].type],
                                properties={"approximate": StringAttr(found[1])})
            rewriter.replace(op, gelu)
            return


# --------------------------------------------------------------------------- PReLU


def _negative_part_of(value: SSAValue) -> SSAValue | None:
    """x when `value` is min(x, 0) (a zero constant of any broadcastable shape)."""
    minimum = producer(value, graph.MinOp)
    if minimum is None or len(minimum.inputs) != 2:
        return None
    a, b = minimum.inputs
    for x, zero in ((a, b), (b, a)):
        z = constant_value(zero)
        if z is not None and z.size >= 1 and not z.any() and shape_of(x) == shape_of(value):
            return x
    return None


def _relu_of_neg(value: SSAValue) -> SSAValue | None:
    """x when `value` is relu(-x)."""
    relu = producer(value, graph.ReluOp)
    neg = producer(relu.input, graph.NegOp) if relu is not None else None
    return neg.input if neg is not None else None


def _slope_times(value: SSAValue) -> tuple[SSAValue, SSAValue] | None:
    """(slope, other) for every way `value` = slope * other can be read."""
    mul = producer(value, graph.MulOp)
    if mul is None or not value.has_one_use():
        return None
    return mul.lhs, mul.rhs


def _prelu(rewriter: PatternRewriter, op: Operation, x: SSAValue, slope: SSAValue) -> bool:
    x_shape = shape_of(x)
    try:
        if graph_shapes.broadcast_shapes(x_shape, shape_of(slope)) != x_shape:
            return False
    except ValueError:
        return False
    if x_shape != shape_of(op.results[0]):
        return False
    rewriter.replace(op, graph.PReluOp(operands=[x, slope], result_types=[x.type]))
    return True


class FusePreluFromMin(RewritePattern):
    """relu(x) + slope * min(x, 0) -> prelu(x, slope)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.AddOp, rewriter: PatternRewriter) -> None:
        if not float_result(op):
            return
        for positive, negative in operand_orders(op):
            relu = producer(positive, graph.ReluOp)
            factors = _slope_times(negative)
            if relu is None or factors is None:
                continue
            for slope, part in (factors, factors[::-1]):
                if (_negative_part_of(part) == relu.input and part.has_one_use()
                        and _prelu(rewriter, op, relu.input, slope)):
                    return


class FusePreluFromNegatedRelu(RewritePattern):
    """relu(x) - slope * relu(-x) -> prelu(x, slope)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.SubOp, rewriter: PatternRewriter) -> None:
        if not float_result(op):
            return
        relu = producer(op.lhs, graph.ReluOp)
        factors = _slope_times(op.rhs)
        if relu is None or factors is None:
            return
        for slope, part in (factors, factors[::-1]):
            if (_relu_of_neg(part) == relu.input and used_only_by([part], [op.rhs.owner])
                    and _prelu(rewriter, op, relu.input, slope)):
                return


# --------------------------------------------------------------------------- passes


@dataclass(frozen=True)
class FuseActivationPass(GraphPatternPass):
    """Fuse an activation (Relu, Clip, Sigmoid, HardSwish, SiLU, ...) into the Conv/Gemm/MatMul
    that feeds it, as its epilogue."""

    name = "fuse-activation"
    patterns = (ActivationAsEpilogue, HardSwishAsEpilogue, SiluAsEpilogue)


@dataclass(frozen=True)
class FuseGeluPass(GraphPatternPass):
    """The erf form and the tanh approximation of GELU -> graph.gelu."""

    name = "fuse-gelu"
    patterns = (FuseGelu,)


@dataclass(frozen=True)
class FusePreluPass(GraphPatternPass):
    """relu(x) + slope * min(x, 0) and relu(x) - slope * relu(-x) -> graph.prelu."""

    name = "fuse-prelu"
    patterns = (FusePreluFromMin, FusePreluFromNegatedRelu)
