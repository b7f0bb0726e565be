"""Kernels of the elementwise ops: unary math, casts, broadcast binary and variadic ops, fills.

Every elementwise kernel runs one loop nest over the result. Operands are first viewed
with collapsed shapes (adjacent dimensions that broadcast alike are merged, size-1 result
dimensions dropped), so the common no-broadcast case is a single loop over a flat buffer
and a bias add over NCHW is a 2-deep nest with a contiguous innermost loop.
"""

from __future__ import annotations

import math as pymath
from collections.abc import Callable, Sequence

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import (
    Float8E8M0FNUType,
    Float16Type,
    Float64Type,
    FloatAttr,
    IntegerType,
    Signedness,
    f32,
    f64,
    i32,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue

from onnxc.dialects import graph
from onnxc.dialects.activations import activation_of
from onnxc.dialects.graph import shape_of
from onnxc.dialects.layout import layout_of
from onnxc.errors import LoweringError
from onnxc.lowering.graph_to_loops import cast_formats
from onnxc.lowering.graph_to_loops.activation_ops import emit_activation
from onnxc.lowering.graph_to_loops.element_types import is_bool, is_float
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder, broadcast_indices
from onnxc.lowering.graph_to_loops.rules import KernelRule, rules

ScalarFn = Callable[[KernelBuilder, Sequence[SSAValue]], SSAValue]

MIN_PARALLEL_ELEMENTS = 1 << 15
"""Below this many results an elementwise kernel takes microseconds: not worth threads."""


def collapse_broadcast(
    out_shape: Sequence[Index], in_shapes: Sequence[Sequence[Index]],
    product: Callable[[Sequence[Index]], Index] = pymath.prod,
) -> tuple[list[Index], list[list[Index]]]:
    """Merge adjacent result dimensions in which every operand broadcasts the same way
    (`product` multiplies sizes: `KernelBuilder.product` when some are run-time values)."""
    rank = len(out_shape)
    padded = [[1] * (rank - len(s)) + list(s) for s in in_shapes]
    groups: list[tuple[list[int], tuple[bool, ...]]] = []
    for d in range(rank):
        if out_shape[d] == 1:
            continue
        pattern = tuple(p[d] == 1 for p in padded)
        if groups and groups[-1][1] == pattern:
            groups[-1][0].append(d)
        else:
            groups.append(([d], pattern))
    if not groups:
        return [1], [[1] for _ in in_shapes]
    out = [product([out_shape[d] for d in dims]) for dims, _ in groups]
    ins = [[product([p[d] for d in dims]) for dims, _ in groups] for p in padded]
    return out, ins


def require_physical_broadcast(op: Operation) -> None:
    """Kernels broadcast PHYSICAL shapes: right when every operand that is not a single
    element has the result's layout and rank (e.g. all NHWC, [1, C, 1, 1] against
    [N, C, H, W]); a mix would broadcast along the wrong axes, so it is refused."""
    result = op.results[0].type
    spec, rank = layout_of(result), len(shape_of(op.results[0]))
    for v in op.operands:
        if pymath.prod(shape_of(v)) == 1:
            continue
        if layout_of(v.type) != spec or (spec is not None and len(shape_of(v)) != rank):
            raise LoweringError(
                f"{op.name}: operand {v.type} and result {result} are not in one layout "
                "and rank (insert layout.convert first)")


def map_elementwise(
    kb: KernelBuilder,
    inputs: Sequence[SSAValue],
    output: SSAValue,
    fn: ScalarFn,
) -> None:
    """output[i] = fn(inputs[broadcast(i)]...), one loop nest over the collapsed result."""
    out_shape, in_shapes = collapse_broadcast(
        kb.shape(output), [kb.shape(v) for v in inputs], kb.product
    )
    views = [kb.view(v, s) for v, s in zip(inputs, in_shapes)]
    out_view = kb.view(output, out_shape)

    def body(ivs):
        args = [kb.load(v, broadcast_indices(ivs, s)) for v, s in zip(views, in_shapes)]
        kb.store(fn(kb, args), out_view, ivs)

    static = all(isinstance(d, int) for d in out_shape)
    if static and pymath.prod(out_shape) < MIN_PARALLEL_ELEMENTS:
        kb.nest(out_shape, body)
        return
    kb.parallel_for(0, out_shape[0], lambda i: kb.nest(out_shape[1:], lambda ivs: body([i, *ivs])))


# --------------------------------------------------------------------------- unary


def _activation(kb: KernelBuilder, x: SSAValue, op) -> SSAValue:
    """Relu, Sigmoid, Tanh, LeakyRelu, Clip: their formula in dialects/activations.py."""
    found = activation_of(op)
    assert found is not None
    activation, alpha, beta = found
    return emit_activation(kb, activation, x, alpha, beta)


def _neg(kb: KernelBuilder, x: SSAValue, op) -> SSAValue:
    if is_float(x.type):
        return kb.insert(arith.NegfOp(x))
    return kb.insert(arith.SubiOp(kb.constant(0, x.type), x))


def _abs(kb: KernelBuilder, x: SSAValue, op) -> SSAValue:
    if is_float(x.type):
        return kb.insert(math.AbsFOp(x))
    negative = kb.less_than(x, kb.constant(0, x.type))
    return kb.select(negative, _neg(kb, x, op), x)


def _reciprocal(kb: KernelBuilder, x: SSAValue, op) -> SSAValue:
    return kb.div(kb.constant(1, x.type), x)


def _math(op_cls) -> Callable[[KernelBuilder, SSAValue, object], SSAValue]:
    return lambda kb, x, op: kb.insert(op_cls(x))


UNARY: dict[type, Callable[[KernelBuilder, SSAValue, object], SSAValue]] = {
    graph.ReluOp: _activation,
    graph.SigmoidOp: _activation,
    graph.TanhOp: _activation,
    graph.ExpOp: _math(math.ExpOp),
    graph.LogOp: _math(math.LogOp),
    graph.SqrtOp: _math(math.SqrtOp),
    graph.NegOp: _neg,
    graph.AbsOp: _abs,
    graph.ReciprocalOp: _reciprocal,
    graph.LeakyReluOp: _activation,
    graph.ClipOp: _activation,
}


FLOAT_ONLY = (graph.SigmoidOp, graph.TanhOp, graph.ExpOp, graph.LogOp, graph.SqrtOp,
              graph.LeakyReluOp)


def unary_kernel(op, kb: KernelBuilder, ins: Sequence[SSAValue], outs: Sequence[SSAValue]):
    require_physical_broadcast(op)
    fn = UNARY[type(op)]
    element = outs[0].type.get_element_type()
    if isinstance(op, FLOAT_ONLY) and not is_float(element):
        raise LoweringError(f"{op.name}: element type {element} is not a float")
    map_elementwise(kb, ins, outs[0], lambda kb, args: fn(kb, args[0], op))


# --------------------------------------------------------------------------- casts


def _unsigned(t: Attribute) -> bool:
    return isinstance(t, IntegerType) and (
        t.signedness.data == Signedness.UNSIGNED or t.width.data == 1)


def _to_f32_round_to_odd(kb: KernelBuilder, x: SSAValue) -> SSAValue:
    """f64 -> f32 rounding to odd (truncate, then set the last bit if inexact): rounding that
    to half gives the correctly rounded f64 -> half (LLVM's direct one calls __truncdfhf2,
    which the JIT cannot resolve)."""
    t = kb.insert(arith.TruncFOp(x, f32))
    back = kb.insert(arith.ExtFOp(t, f64))
    bits = kb.insert(arith.BitcastOp(t, i32))
    away = kb.insert(arith.CmpfOp(kb.insert(math.AbsFOp(back)), kb.insert(math.AbsFOp(x)), "ogt"))
    bits = kb.select(away, kb.sub(bits, kb.constant(1, i32)), bits)  # toward zero
    inexact = kb.insert(arith.CmpfOp(back, x, "one"))
    bits = kb.select(inexact, kb.insert(arith.OrIOp(bits, kb.constant(1, i32))), bits)
    return kb.insert(arith.BitcastOp(bits, f32))


def convert(kb: KernelBuilder, x: SSAValue, dst: Attribute, saturate: bool = True,
            round_mode: str = "up") -> SSAValue:
    """ONNX Cast of one scalar: float->int truncates, anything->bool is `!= 0`; unsigned
    sources zero-extend, integers narrow by dropping high bits (as numpy's astype)."""
    src = x.type
    if src == dst:
        return x
    if cast_formats.is_storage_float(src):  # bf16 / 8-bit / 4-bit floats: exact in f32
        return convert(kb, cast_formats.to_f32(kb, x), dst)
    if cast_formats.is_storage_float(dst):
        # from f64 through f32 rounded to odd: rounding that again is exact (as for half)
        # (E8M0 rounds by the f32 mantissa, as onnx.numpy_helper.to_float8e8m0: plain f32)
        if isinstance(src, Float64Type) and not isinstance(dst, Float8E8M0FNUType):
            wide = _to_f32_round_to_odd(kb, x)
        else:
            wide = convert(kb, x, f32)
        return cast_formats.from_f32(kb, wide, dst, saturate, round_mode)
    if isinstance(src, Float16Type) and not is_float(dst):  # half <-> integers through f32
        return convert(kb, kb.insert(arith.ExtFOp(x, f32)), dst)
    if isinstance(dst, Float16Type) and not is_float(src):
        # exact: f32 holds every integer below 2**24, and larger ones overflow half anyway
        return kb.insert(arith.TruncFOp(convert(kb, x, f32), dst))
    if isinstance(src, Float64Type) and isinstance(dst, Float16Type):
        return kb.insert(arith.TruncFOp(_to_f32_round_to_odd(kb, x), dst))
    if is_bool(dst):
        if is_float(src):
            return kb.insert(arith.CmpfOp(x, kb.constant(0.0, src), "une"))
        return kb.insert(arith.CmpiOp(x, kb.constant(0, src), "ne"))
    if is_float(src) and is_float(dst):
        wider = dst.bitwidth > src.bitwidth  # type: ignore[union-attr]
        return kb.insert((arith.ExtFOp if wider else arith.TruncFOp)(x, dst))
    assert isinstance(dst, IntegerType) or is_float(dst)
    if is_float(src):
        if _unsigned(dst) and dst.width.data == 64:  # type: ignore[union-attr]
            # negative values wrap as numpy's do (fptoui would give poison)
            wrapped = kb.insert(arith.BitcastOp(kb.insert(arith.FPToSIOp(x, i64)), dst))
            negative = kb.less_than(x, kb.constant(0.0, src))
            return kb.select(negative, wrapped, kb.insert(arith.FPToUIOp(x, dst)))
        if dst.width.data < 64:  # type: ignore[union-attr]
            # through i64, so that e.g. -1.0 -> uint8 wraps to 255 as numpy does
            return convert(kb, kb.insert(arith.FPToSIOp(x, i64)), dst)
        return kb.insert(arith.FPToSIOp(x, dst))
    if is_float(dst):
        return kb.insert((arith.UIToFPOp if _unsigned(src) else arith.SIToFPOp)(x, dst))
    assert isinstance(src, IntegerType) and isinstance(dst, IntegerType)
    if dst.width.data > src.width.data:
        return kb.insert((arith.ExtUIOp if _unsigned(src) else arith.ExtSIOp)(x, dst))
    if dst.width.data < src.width.data:
        return kb.insert(arith.TruncIOp(x, dst))
    return kb.insert(arith.BitcastOp(x, dst))  # same width, other signedness


def cast_kernel(op, kb: KernelBuilder, ins, outs):
    require_physical_broadcast(op)
    dst = outs[0].type.get_element_type()
    saturate = op.saturate is None or op.saturate.value.data != 0
    round_mode = "up" if op.round_mode is None else op.round_mode.data
    map_elementwise(kb, ins, outs[0],
                    lambda kb, args: convert(kb, args[0], dst, saturate, round_mode))


# --------------------------------------------------------------------------- binary


def _constant_float(v: SSAValue) -> float | None:
    owner = v.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, FloatAttr):
        return owner.value.value.data
    return None


def _pow(kb: KernelBuilder, a: SSAValue, b: SSAValue) -> SSAValue:
    if is_float(a.type):
        # small integer exponents (x^2 of a variance, x^3 of GELU's tanh form) as products:
        # powf is a scalar libm call that keeps the loop from vectorizing
        exponent = _constant_float(b)
        if exponent == 1.0:
            return a
        if exponent in (2.0, 3.0):
            square = kb.mul(a, a)
            return square if exponent == 2.0 else kb.mul(square, a)
        if exponent == -1.0:
            return kb.div(kb.constant(1.0, a.type), a)
        return kb.insert(math.PowFOp(a, b))
    # Integer Pow goes through f64, exact for results below 2**53.
    fa, fb = convert(kb, a, f64), convert(kb, b, f64)
    return convert(kb, kb.insert(math.PowFOp(fa, fb)), a.type)


BINARY: dict[type, Callable[[KernelBuilder, SSAValue, SSAValue], SSAValue]] = {
    graph.AddOp: KernelBuilder.add,
    graph.SubOp: KernelBuilder.sub,
    graph.MulOp: KernelBuilder.mul,
    graph.DivOp: KernelBuilder.div,
    graph.PowOp: _pow,
    graph.SumOp: KernelBuilder.add,
    graph.MaxOp: KernelBuilder.max,
    graph.MinOp: KernelBuilder.min,
}


def binary_kernel(op, kb: KernelBuilder, ins, outs):
    """Binary and variadic ops: a left fold of the broadcast operands."""
    require_physical_broadcast(op)
    fn = BINARY[type(op)]
    if is_bool(outs[0].type.get_element_type()) and type(op) not in (graph.MaxOp, graph.MinOp):
        raise LoweringError(f"{op.name}: boolean operands are not supported")

    def body(kb: KernelBuilder, args: Sequence[SSAValue]) -> SSAValue:
        acc = args[0]
        for v in args[1:]:
            acc = fn(kb, acc, v)
        return acc

    map_elementwise(kb, ins, outs[0], body)


# --------------------------------------------------------------------------- fills


def constant_of_shape_kernel(op: graph.ConstantOfShapeOp, kb: KernelBuilder, ins, outs):
    (value,) = op.value.get_values()
    element = outs[0].type.get_element_type()
    fill = kb.constant(value, element)
    map_elementwise(kb, [], outs[0], lambda kb, args: fill)


RULES = (
    *rules(UNARY, unary_kernel, symbolic=True),
    KernelRule(graph.CastOp, cast_kernel, symbolic=True),
    *rules(BINARY, binary_kernel, symbolic=True),
    KernelRule(graph.ConstantOfShapeOp, constant_of_shape_kernel, symbolic=True),
)
"""symbolic: the kernels read their sizes from the KernelBuilder (symbolic dims welcome)."""
