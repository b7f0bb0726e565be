"""The kernel of graph.dynamic_quantize_linear: two passes over the data.

1. min and max, with four pairs of vector accumulators (`vector.load` of W f32 lanes,
   `arith.minnumf` / `maxnumf`, so NaN is ignored as onnxruntime's x86 kernel does)
   started at 0, since the range always includes 0; the lanes are folded through a small
   stack buffer, a scalar loop does the tail.
2. scale = (max - min) / 255 (1 / 255 for an empty range), zero point =
   round_half_even(clamp(-min / scale, 0, 255)), both in f32 exactly as onnx.reference and
   onnxruntime compute them; then the quantize pass, a plain elementwise loop LLVM
   vectorizes (one division per element, as onnxruntime's MlasQuantizeLinear).
"""

from __future__ import annotations

import math as pymath

from xdsl.dialects import arith, math, memref
from xdsl.dialects.builtin import VectorType, f32, i32
from xdsl.ir import SSAValue

from onnxc.dialects import graph
from onnxc.dialects.graph import shape_of
from onnxc.dialects.symbolic_dims import Dim
from onnxc.lowering.graph_to_loops.elementwise import convert, map_elementwise
from onnxc.lowering.graph_to_loops.loops import KernelBuilder
from onnxc.lowering.graph_to_loops.pool_nhwc import vector_width
from onnxc.lowering.graph_to_loops.quantize import round_saturate
from onnxc.lowering.graph_to_loops.rules import KernelRule

ACCUMULATORS = 4
"""Independent (min, max) vector pairs: one pair would wait on the compare's latency."""


def _lesser(kb: KernelBuilder, acc: SSAValue, x: SSAValue) -> SSAValue:
    """minnum: NaN never replaces the accumulator (vminps and a blend on x86)."""
    return kb.insert(arith.MinnumfOp(acc, x))


def _greater(kb: KernelBuilder, acc: SSAValue, x: SSAValue) -> SSAValue:
    return kb.insert(arith.MaxnumfOp(acc, x))


def _min_max(kb: KernelBuilder, flat: SSAValue, n: Dim) -> tuple[SSAValue, SSAValue]:
    """(min(0, min(x)), max(0, max(x))) of a flat f32 buffer of n elements, NaN ignored."""
    lanes = vector_width(kb.target)
    vt = VectorType(f32, [lanes])
    group = lanes * ACCUMULATORS
    zero = kb.constant(0.0, f32)
    full = n // group * group
    lo, hi = zero, zero
    if not (isinstance(full, int) and full == 0):  # a symbolic n: at run time
        splat = kb.vsplat(zero, vt)

        def step(i, *accs):
            out_lo, out_hi = [], []
            for k in range(ACCUMULATORS):
                at = kb.iadd(kb.imul(i, group), k * lanes)
                v = kb.vload(flat, [kb.idx(at)], vt)
                out_lo.append(_lesser(kb, accs[k], v))
                out_hi.append(_greater(kb, accs[ACCUMULATORS + k], v))
            return out_lo + out_hi

        accs = kb.reduce(0, n // group, [splat] * (2 * ACCUMULATORS), step)
        spill = kb.insert(memref.AllocaOp.get(f32, shape=[2 * group]))
        for k, acc in enumerate(accs):
            kb.vstore(acc, spill, [kb.idx(k * lanes)])

        def fold(j, a, b):
            return [_lesser(kb, a, kb.load(spill, [j])),
                    _greater(kb, b, kb.load(spill, [kb.iadd(j, group)]))]

        lo, hi = kb.reduce(0, group, [lo, hi], fold)

    def tail(i, a, b):
        x = kb.load(flat, [i])
        return [_lesser(kb, a, x), _greater(kb, b, x)]

    return tuple(kb.reduce(full, n, [lo, hi], tail))


def dynamic_quantize_kernel(op: graph.DynamicQuantizeLinearOp, kb: KernelBuilder, ins, outs):
    n = pymath.prod(shape_of(op.input))
    flat = kb.view(ins[0], [n])
    lo, hi = _min_max(kb, flat, n)
    empty = kb.insert(arith.CmpfOp(hi, lo, "oeq"))
    span = kb.select(empty, kb.constant(1.0, f32), kb.sub(hi, lo))
    scale = kb.div(span, kb.constant(255.0, f32))
    initial = kb.sub(kb.constant(0.0, f32), kb.div(lo, scale))
    clamped = kb.min(kb.max(initial, kb.constant(0.0, f32)), kb.constant(255.0, f32))
    zero = kb.insert(math.RoundEvenOp(clamped))
    ordered = kb.insert(arith.CmpfOp(zero, zero, "ord"))
    zero = kb.select(ordered, zero, kb.constant(0.0, f32))
    ui8 = outs[2].type.get_element_type()
    kb.store(scale, outs[1], [])
    kb.store(convert(kb, kb.insert(arith.FPToSIOp(zero, i32)), ui8), outs[2], [])

    def quantize(kb: KernelBuilder, args):
        # the parameters are re-read from the result buffers: a loop outlined onto threads
        # gets its buffers as arguments
        s, z = kb.load(outs[1], []), convert(kb, kb.load(outs[2], []), f32)
        return round_saturate(kb, kb.div(args[0], s), z, ui8)

    map_elementwise(kb, [flat], kb.view(outs[0], [n]), quantize)


RULES = (KernelRule(graph.DynamicQuantizeLinearOp, dynamic_quantize_kernel, symbolic=True),)
"""symbolic: the element count may be symbolic (a dynamically quantized activation
[1, seq, K])."""
