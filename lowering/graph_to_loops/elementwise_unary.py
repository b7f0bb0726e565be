"""Kernels of the unary float math ops of graph_unary: rounding, Sign, trigonometric and
hyperbolic functions, Softplus, Mish, ThresholdedRelu and Shrink.

The transcendental ones are single `math` ops, lowered by convert-math-to-llvm to LLVM
intrinsics or libm calls (scalar: correctness first, these are rare in models). Softplus,
Mish and ThresholdedRelu are their formulas in dialects/activations.py.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith, math
from xdsl.ir import SSAValue

from onnxc.dialects import graph
from onnxc.dialects.activations import MISH, SOFTPLUS, THRESHOLDED_RELU
from onnxc.dialects.graph import float_of
from onnxc.errors import LoweringError
from onnxc.lowering.graph_to_loops.activation_ops import emit_activation
from onnxc.lowering.graph_to_loops.element_types import is_bool, is_float
from onnxc.lowering.graph_to_loops.elementwise import map_elementwise, require_physical_broadcast
from onnxc.lowering.graph_to_loops.elementwise_logic import is_unsigned
from onnxc.lowering.graph_to_loops.loops import KernelBuilder
from onnxc.lowering.graph_to_loops.rules import KernelRule, rules

_MATH: dict[type, type] = {
    graph.CeilOp: math.CeilOp,
    graph.FloorOp: math.FloorOp,
    graph.RoundOp: math.RoundEvenOp,
    graph.SinOp: math.SinOp,
    graph.CosOp: math.CosOp,
    graph.TanOp: math.TanOp,
    graph.AsinOp: math.AsinOp,
    graph.AcosOp: math.AcosOp,
    graph.AtanOp: math.AtanOp,
    graph.SinhOp: math.SinhOp,
    graph.CoshOp: math.CoshOp,
    graph.AsinhOp: math.AsinhOp,
    graph.AcoshOp: math.AcoshOp,
    graph.AtanhOp: math.AtanhOp,
}


def _sign(kb: KernelBuilder, x: SSAValue, op) -> SSAValue:
    """1, -1 or 0; a float 0, -0 or NaN is returned as it is (as numpy.sign)."""
    zero = kb.constant(0, x.type)
    if is_unsigned(x.type):
        return kb.insert(arith.ExtUIOp(kb.insert(arith.CmpiOp(x, zero, "ne")), x.type))
    rest = x if is_float(x.type) else zero
    inner = kb.select(kb.less_than(x, zero), kb.constant(-1, x.type), rest)
    return kb.select(kb.less_than(zero, x), kb.constant(1, x.type), inner)


def _softplus(kb: KernelBuilder, x: SSAValue, op) -> SSAValue:
    return emit_activation(kb, SOFTPLUS, x)


def _mish(kb: KernelBuilder, x: SSAValue, op) -> SSAValue:
    return emit_activation(kb, MISH, x)


def _thresholded_relu(kb: KernelBuilder, x: SSAValue, op: graph.ThresholdedReluOp) -> SSAValue:
    return emit_activation(kb, THRESHOLDED_RELU, x, float_of(op.alpha))


def _shrink(kb: KernelBuilder, x: SSAValue, op: graph.ShrinkOp) -> SSAValue:
    """Shrink accepts every numeric type; integer bias and lambd are whole numbers."""

    def const(v: float) -> SSAValue:
        return kb.constant(v if is_float(x.type) else int(v), x.type)

    lambd, bias = float_of(op.lambd), float_of(op.bias)
    zero = const(0)
    if is_unsigned(x.type) and lambd >= 0:  # nothing is below -lambd
        return kb.select(kb.less_than(const(lambd), x), kb.sub(x, const(bias)), zero)
    below = kb.less_than(x, const(-lambd))
    above = kb.less_than(const(lambd), x)
    return kb.select(below, kb.add(x, const(bias)),
                     kb.select(above, kb.sub(x, const(bias)), zero))


def _math(op_cls) -> Callable[[KernelBuilder, SSAValue, object], SSAValue]:
    return lambda kb, x, op: kb.insert(op_cls(x))


UNARY: dict[type, Callable[[KernelBuilder, SSAValue, object], SSAValue]] = {
    **{cls: _math(m) for cls, m in _MATH.items()},
    graph.SignOp: _sign,
    graph.SoftplusOp: _softplus,
    graph.MishOp: _mish,
    graph.ThresholdedReluOp: _thresholded_relu,
    graph.ShrinkOp: _shrink,
}

_ANY_NUMERIC = (graph.SignOp, graph.ShrinkOp)


def unary_math_kernel(op, kb: KernelBuilder, ins, outs):
    require_physical_broadcast(op)
    element = outs[0].type.get_element_type()
    if is_bool(element) or (not isinstance(op, _ANY_NUMERIC) and not is_float(element)):
        raise LoweringError(f"{op.name}: element type {element} is not supported")
    fn = UNARY[type(op)]
    map_elementwise(kb, ins, outs[0], lambda kb, a: fn(kb, a[0], op))


def bit_cast_kernel(op, kb: KernelBuilder, ins, outs):
    """Same-width types: a bitcast; bool (a 0/1 byte) <-> 8-bit integers: extend / != 0."""
    require_physical_broadcast(op)
    src, dst = ins[0].type.get_element_type(), outs[0].type.get_element_type()

    def body(kb: KernelBuilder, a) -> SSAValue:
        if is_bool(src):
            return kb.insert(arith.ExtUIOp(a[0], dst))
        if is_bool(dst):
            return kb.insert(arith.CmpiOp(a[0], kb.constant(0, src), "ne"))
        return kb.insert(arith.BitcastOp(a[0], dst))

    map_elementwise(kb, ins, outs[0], body)


RULES = (
    *rules(UNARY, unary_math_kernel, symbolic=True),
    KernelRule(graph.BitCastOp, bit_cast_kernel, symbolic=True),
)
"""symbolic: the kernels read their sizes from the KernelBuilder (symbolic dims welcome)."""
