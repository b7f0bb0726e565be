"""Kernels of the ops the fusion and replacement passes create (dialects/graph_composite).

`graph.fused_elementwise` runs its steps on scalars inside one broadcast loop nest
(`map_elementwise`), reusing the scalar code of the single-op kernels. `graph.channel_shuffle`
copies whole channel planes: out[n, j * g + i] = in[n, i * k + j] (in NHWC, per pixel).
"""

from __future__ import annotations

import math as pymath

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import Signedness, f32, i32

from onnxc.dialects import graph
from onnxc.dialects.graph import int_of, shape_of
from onnxc.dialects.layout import layout_of
from onnxc.errors import LoweringError
from onnxc.lowering.graph_to_loops.elementwise import (
    BINARY,
    UNARY,
    map_elementwise,
    require_physical_broadcast,
)
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder, is_float

_UNARY_OPS = {
    "relu": graph.ReluOp, "sigmoid": graph.SigmoidOp, "tanh": graph.TanhOp,
    "exp": graph.ExpOp, "log": graph.LogOp, "sqrt": graph.SqrtOp, "neg": graph.NegOp,
    "abs": graph.AbsOp, "reciprocal": graph.ReciprocalOp,
}
_BINARY_OPS = {
    "add": graph.AddOp, "sub": graph.SubOp, "mul": graph.MulOp, "div": graph.DivOp,
    "pow": graph.PowOp, "max": graph.MaxOp, "min": graph.MinOp,
}


def _step(kb: KernelBuilder, name: str, args, params):
    if name in _UNARY_OPS:
        return UNARY[_UNARY_OPS[name]](kb, args[0], None)
    if name in _BINARY_OPS:
        return BINARY[_BINARY_OPS[name]](kb, args[0], args[1])
    x = args[0]
    if name.endswith("_scalar"):
        return BINARY[_BINARY_OPS[name[: -len("_scalar")]]](kb, x, kb.constant(params[0], x.type))
    if name == "leaky_relu":
        scaled = kb.mul(x, kb.constant(params[0], x.type))
        return kb.select(kb.less_than(x, kb.constant(0.0, x.type)), scaled, x)
    if name == "dequantize":
        return _dequantize_step(kb, x, *params)
    if name == "quantize":
        scale, zero, lo, hi = params
        q = kb.insert(math.RoundEvenOp(kb.div(x, kb.constant(scale, x.type))))
        q = kb.add(q, kb.constant(zero, x.type))
        return kb.min(kb.max(q, kb.constant(lo, x.type)), kb.constant(hi, x.type))
    if name == "clip":
        lo, hi = params
        if lo != -pymath.inf:
            x = kb.max(x, kb.constant(lo, x.type))
        if hi != pymath.inf:
            x = kb.min(x, kb.constant(hi, x.type))
        return x
    raise LoweringError(f"graph.fused_elementwise: no lowering for step '{name}'")


def _dequantize_step(kb: KernelBuilder, x, scale: float, zero: float):
    """(x - zero) * scale in f32; an integer x is widened exactly first."""
    if is_float(x.type):
        return kb.mul(kb.sub(x, kb.constant(zero, x.type)), kb.constant(scale, x.type))
    unsigned = x.type.signedness.data == Signedness.UNSIGNED
    wide = kb.insert((arith.ExtUIOp if unsigned else arith.ExtSIOp)(x, i32))
    centred = kb.sub(wide, kb.constant(int(zero), i32))
    return kb.mul(kb.insert(arith.SIToFPOp(centred, f32)), kb.constant(scale, f32))


def fused_elementwise_kernel(op: graph.FusedElementwiseOp, kb: KernelBuilder, ins, outs):
    dst = outs[0].type.get_element_type()
    if not is_float(dst) and op.parsed_steps()[-1].op != "quantize":
        raise LoweringError(f"{op.name}: element type is not a float")
    require_physical_broadcast(op)
    steps = op.parsed_steps()

    def body(kb: KernelBuilder, args):
        values = list(args)
        for s in steps:
            values.append(_step(kb, s.op, [values[r] for r in s.refs], s.params))
        if is_float(dst):
            return values[-1]
        # a quantize step's integral float value, already clamped to dst's range
        return kb.insert(arith.TruncIOp(kb.insert(arith.FPToSIOp(values[-1], i32)), dst))

    map_elementwise(kb, ins, outs[0], body)


def channel_shuffle_kernel(op: graph.ChannelShuffleOp, kb: KernelBuilder, ins, outs):
    shape = shape_of(op.input)
    n, c, plane = shape[0], shape[1], pymath.prod(shape[2:])
    g = int_of(op.group)
    k = c // g
    layouts = {layout_of(op.input.type), layout_of(op.output.type)}
    if layouts == {"NHWC"}:
        _channel_shuffle_nhwc(kb, ins[0], outs[0], n * plane, g, k)
        return
    if layouts != {None}:
        raise LoweringError(f"{op.name}: no kernel for layouts {sorted(map(str, layouts))}")
    x = kb.view(ins[0], [n, g, k, plane])
    y = kb.view(outs[0], [n, k, g, plane])

    def copy(ivs: list[Index]) -> None:
        b, i, j, p = ivs
        kb.store(kb.load(x, [b, i, j, p]), y, [b, j, i, p])

    kb.nest([n, g, k, plane], copy)


def _channel_shuffle_nhwc(kb: KernelBuilder, src, dst, pixels: int, g: int, k: int) -> None:
    """NHWC: each pixel's channels are a [g, k] matrix transposed to [k, g]."""
    x = kb.view(src, [pixels, g, k])
    y = kb.view(dst, [pixels, k, g])

    def pixel(p: Index) -> None:
        kb.nest([k, g], lambda ji: kb.store(kb.load(x, [p, ji[1], ji[0]]), y, [p, *ji]))

    kb.parallel_for(0, pixels, pixel)


KERNELS = {
    graph.FusedElementwiseOp: fused_elementwise_kernel,
    graph.ChannelShuffleOp: channel_shuffle_kernel,
}


