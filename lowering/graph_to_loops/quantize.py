"""Kernels of linear quantization with a per-tensor scale and zero point.

QuantizeLinear divides by the scale, rounds half to even (`math.roundeven`), adds the zero
point and saturates in float before converting, so the integer conversion never overflows.
"""

from __future__ import annotations

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import IntegerType, Signedness, i32

from onnxc.dialects import graph
from onnxc.dialects.graph import float_of, int_of
from onnxc.dialects.graph_quant import quantized_range
from onnxc.lowering.graph_to_loops.elementwise import map_elementwise


def _is_unsigned(t: IntegerType) -> bool:
    return t.signedness.data == Signedness.UNSIGNED


def quantize_kernel(op: graph.QuantizeLinearOp, kb, ins, outs):
    dst = outs[0].type.get_element_type()
    lo, hi = quantized_range(dst)

    def body(kb, args):
        x = args[0]
        q = kb.insert(math.RoundEvenOp(kb.div(x, kb.constant(float_of(op.scale), x.type))))
        q = kb.add(q, kb.constant(float(int_of(op.zero_point)), x.type))
        q = kb.min(kb.max(q, kb.constant(float(lo), x.type)), kb.constant(float(hi), x.type))
        return kb.insert(arith.TruncIOp(kb.insert(arith.FPToSIOp(q, i32)), dst))

    map_elementwise(kb, ins, outs[0], body)


def dequantize_kernel(op: graph.DequantizeLinearOp, kb, ins, outs):
    real = outs[0].type.get_element_type()

    def body(kb, args):
        x = args[0]
        wide = kb.insert((arith.ExtUIOp if _is_unsigned(x.type) else arith.ExtSIOp)(x, i32))
        centred = kb.sub(wide, kb.constant(int_of(op.zero_point), i32))
        return kb.mul(kb.insert(arith.SIToFPOp(centred, real)),
                      kb.constant(float_of(op.scale), real))

    map_elementwise(kb, ins, outs[0], body)


KERNELS = {
    graph.QuantizeLinearOp: quantize_kernel,
    graph.DequantizeLinearOp: dequantize_kernel,
}
