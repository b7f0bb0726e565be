"""The scalar meaning of each fusable graph op: the `arith` / `math` ops computing one result
element from one element of each operand. `fuse-elementwise` builds a
`graph.fused_elementwise` body from these, so SCALAR_MEANINGS is the one table of what a
fused op computes (the kernel, the evaluator and the ONNX exporter read the body it builds).

    graph.leaky_relu {alpha = 0.1}  ->  %c = arith.constant 0.1 : f32
                                        %z = arith.constant 0.0 : f32
                                        %s = arith.mulf %x, %c : f32
                                        %n = arith.cmpf olt, %x, %z : f32
                                        %r = arith.select %n, %s, %x : f32
"""

from __future__ import annotations

import math as pymath
from collections.abc import Callable, Sequence

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import Float32Type, FloatAttr, IntegerType, Signedness
from xdsl.ir import Attribute, Block, Operation, SSAValue

from onnxc.dialects import graph
from onnxc.dialects.activations import activation_of
from onnxc.dialects.graph import float_of
from onnxc.dialects.graph_fused_elementwise import inline_body
from onnxc.passes.constants import element_type, is_float_tensor
from onnxc.passes.quant_params import QuantOp, byte_range, is_byte, qparams, quantized_value


class BodyBuilder:
    """Appends scalar ops to a body block; equal constants are built once."""

    def __init__(self, block: Block):
        self.block = block
        self._constants: dict[tuple[float, Attribute], SSAValue] = {}

    def emit(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]

    def constant(self, value: float, t: Attribute) -> SSAValue:
        key = (float(value), t)
        if key not in self._constants:
            self._constants[key] = self.emit(arith.ConstantOp(FloatAttr(float(value), t), t))
        return self._constants[key]

    def inline(self, op: graph.FusedElementwiseOp, args: Sequence[SSAValue]) -> SSAValue:
        """Clone `op`'s body on `args`; the value it yields."""
        return inline_body(op, args, self.constant, self.block.add_op)


Emit = Callable[[BodyBuilder, Sequence[SSAValue]], SSAValue]
Meaning = tuple[list[SSAValue], Emit]
"""The tensor operands an op reads, and how its scalar result is built from their elements."""


def _binary(cls: type[Operation]) -> Emit:
    return lambda b, a: b.emit(cls(a[0], a[1]))


def _unary(cls: type[Operation]) -> Emit:
    return lambda b, a: b.emit(cls(a[0]))


def _reciprocal(b: BodyBuilder, a: Sequence[SSAValue]) -> SSAValue:
    return b.emit(arith.DivfOp(b.constant(1.0, a[0].type), a[0]))


def _emits(cls: type[Operation]) -> Callable[..., SSAValue]:
    return lambda self, *args: self.b.emit(cls(*args))


class _BodyOps:
    """A formula's ops (dialects/activations.py) as float scalar ops of a fused body."""

    def __init__(self, b: BodyBuilder):
        self.b = b

    def constant(self, value: float, like: SSAValue) -> SSAValue:
        return self.b.constant(value, like.type)

    def less_than(self, x: SSAValue, y: SSAValue) -> SSAValue:
        return self.b.emit(arith.CmpfOp(x, y, "olt"))

    add, mul, div = _emits(arith.AddfOp), _emits(arith.MulfOp), _emits(arith.DivfOp)
    max, min = _emits(arith.MaximumfOp), _emits(arith.MinimumfOp)
    neg, exp, tanh, erf = (_emits(arith.NegfOp), _emits(math.ExpOp), _emits(math.TanhOp),
                           _emits(math.ErfOp))
    muladd, select = _emits(math.FmaOp), _emits(arith.SelectOp)


def _activation(op: Operation) -> Meaning:
    """Relu, Sigmoid, Tanh, LeakyRelu, Clip: their formula (dialects/activations.py), as
    the kernels emit it; an infinite Clip bound is none here."""
    found = activation_of(op)
    assert found is not None
    activation, alpha, beta = found
    if activation.name == "clip":
        alpha = None if alpha == -pymath.inf else alpha
        beta = None if beta == pymath.inf else beta
    return [op.operands[0]], lambda b, a: activation.formula(_BodyOps(b), a[0], alpha, beta)


def _with_constant(cls: type[Operation], s: float) -> Emit:
    return lambda b, a: b.emit(cls(a[0], b.constant(s, a[0].type)))


def _power(s: float) -> Emit:
    """x ** s; small integer exponents (x^2 of a variance, x^3 of GELU's tanh form) as
    products, since powf is a libm call that keeps the kernel's loop from vectorizing."""
    def emit(b: BodyBuilder, a: Sequence[SSAValue]) -> SSAValue:
        x = a[0]
        if s == 1.0:
            return x
        if s in (2.0, 3.0):
            square = b.emit(arith.MulfOp(x, x))
            return square if s == 2.0 else b.emit(arith.MulfOp(square, x))
        if s == -1.0:
            return _reciprocal(b, a)
        return b.emit(math.PowFOp(x, b.constant(s, x.type)))
    return emit


_SCALAR_OPS: dict[type[Operation], type[Operation]] = {
    graph.AddScalarOp: arith.AddfOp, graph.SubScalarOp: arith.SubfOp,
    graph.MulScalarOp: arith.MulfOp, graph.DivScalarOp: arith.DivfOp,
}


def _scalar_binary(op: graph.ScalarBinaryOp) -> Meaning:
    s = float_of(op.scalar)
    if isinstance(op, graph.PowScalarOp):
        return [op.operands[0]], _power(s)
    return [op.operands[0]], _with_constant(_SCALAR_OPS[type(op)], s)


def _fold(cls: type[Operation]) -> Callable[[Operation], Meaning | None]:
    """A variadic op as a left fold of binary ones (one operand is a copy: no fusion)."""
    def meaning(op: Operation) -> Meaning | None:
        if len(op.operands) < 2:
            return None

        def emit(b: BodyBuilder, a: Sequence[SSAValue]) -> SSAValue:
            acc = a[0]
            for x in a[1:]:
                acc = b.emit(cls(acc, x))
            return acc
        return list(op.operands), emit
    return meaning


def _weighted_sum(op: graph.WeightedSumOp) -> Meaning:
    """sum_i c_i x_i: a product per coefficient other than 1, then adds (the algebra
    passes turn `x * a + b` into a weighted sum, which must still fuse)."""
    coefficients = op.coefficient_values()

    def emit(b: BodyBuilder, a: Sequence[SSAValue]) -> SSAValue:
        terms = [x if c == 1.0 else b.emit(arith.MulfOp(x, b.constant(c, x.type)))
                 for x, c in zip(a, coefficients, strict=True)]
        acc = terms[0]
        for term in terms[1:]:
            acc = b.emit(arith.AddfOp(acc, term))
        return acc
    return list(op.inputs), emit


def _is_unsigned(t: Attribute) -> bool:
    return isinstance(t, IntegerType) and t.signedness.data == Signedness.UNSIGNED


def _quant(op: graph.QuantizeLinearOp | graph.DequantizeLinearOp) -> Meaning | None:
    """A per-tensor ui8/i8 <-> f32 Quantize or Dequantize (QDQ residual adds then run as one
    loop over the 8-bit tensors), else None.
    Dequantize: (float(a) - z) * s. Quantize: clamp(round_half_even(a / s) + z, lo, hi)
    converted to the integer type (exact: an integral value in its range)."""
    p = qparams(op)
    real = op.input if isinstance(op, graph.QuantizeLinearOp) else op.output
    if p is None or not p.per_tensor or not is_byte(quantized_value(op)):
        return None
    if not isinstance(element_type(real), Float32Type):
        return None
    scale, zero = float(p.scale()), float(p.zero_point())
    if isinstance(op, graph.DequantizeLinearOp):
        wide = element_type(op.output)

        def dequantize(b: BodyBuilder, a: Sequence[SSAValue]) -> SSAValue:
            to_float = arith.UIToFPOp if _is_unsigned(a[0].type) else arith.SIToFPOp
            x = b.emit(to_float(a[0], wide))
            shifted = b.emit(arith.SubfOp(x, b.constant(zero, wide)))
            return b.emit(arith.MulfOp(shifted, b.constant(scale, wide)))
        return [op.input], dequantize
    if not isinstance(op.division_type(), Float32Type):
        return None
    lo, hi = byte_range(op.output)
    narrow = element_type(op.output)

    def quantize(b: BodyBuilder, a: Sequence[SSAValue]) -> SSAValue:
        t = a[0].type
        q = b.emit(math.RoundEvenOp(b.emit(arith.DivfOp(a[0], b.constant(scale, t)))))
        q = b.emit(arith.AddfOp(q, b.constant(zero, t)))
        q = b.emit(arith.MinimumfOp(b.emit(arith.MaximumfOp(q, b.constant(lo, t))),
                                    b.constant(hi, t)))
        to_int = arith.FPToUIOp if _is_unsigned(narrow) else arith.FPToSIOp
        return b.emit(to_int(q, narrow))
    return [op.input], quantize


def _fused(op: graph.FusedElementwiseOp) -> Meaning:
    return list(op.inputs), lambda b, a: b.inline(op, a)


def _one(emit: Emit) -> Callable[[Operation], Meaning]:
    return lambda op: ([op.operands[0]], emit)


def _two(cls: type[Operation]) -> Callable[[Operation], Meaning]:
    return lambda op: ([op.operands[0], op.operands[1]], _binary(cls))


SCALAR_MEANINGS: dict[type[Operation], Callable[[Operation], Meaning | None]] = {
    graph.ReluOp: _activation,
    graph.SigmoidOp: _activation,
    graph.TanhOp: _activation,
    graph.ExpOp: _one(_unary(math.ExpOp)),
    graph.LogOp: _one(_unary(math.LogOp)),
    graph.SqrtOp: _one(_unary(math.SqrtOp)),
    graph.NegOp: _one(_unary(arith.NegfOp)),
    graph.AbsOp: _one(_unary(math.AbsFOp)),
    graph.ReciprocalOp: _one(_reciprocal),
    graph.LeakyReluOp: _activation,
    graph.ClipOp: _activation,
    graph.AddOp: _two(arith.AddfOp),
    graph.SubOp: _two(arith.SubfOp),
    graph.MulOp: _two(arith.MulfOp),
    graph.DivOp: _two(arith.DivfOp),
    graph.PowOp: _two(math.PowFOp),
    graph.SumOp: _fold(arith.AddfOp),
    graph.MaxOp: _fold(arith.MaximumfOp),
    graph.MinOp: _fold(arith.MinimumfOp),
    **{cls: _scalar_binary for cls in (*_SCALAR_OPS, graph.PowScalarOp)},
    graph.WeightedSumOp: _weighted_sum,
    graph.QuantizeLinearOp: _quant,
    graph.DequantizeLinearOp: _quant,
    graph.FusedElementwiseOp: _fused,
}
"""Graph op class -> its scalar meaning ((operands read, builder) or None: not fusable)."""


def scalar_meaning(op: Operation) -> Meaning | None:
    """What `op` reads and how to build its scalar result, or None if it does not fuse:
    float elementwise ops, per-tensor 8-bit Q/DQ, and fused ops themselves."""
    rule = SCALAR_MEANINGS.get(type(op))
    if rule is None:
        return None
    if not isinstance(op, QuantOp | graph.FusedElementwiseOp) and not (
            op.results and is_float_tensor(op.results[0])):
        return None
    return rule(op)


def is_fusable(op: Operation) -> bool:
    """Whether `scalar_meaning(op)` is not None (cheap: builds no ops)."""
    return scalar_meaning(op) is not None
