"""Kernel of graph.random: counter-based SplitMix64 numbers (dialects/graph_random.py says
which), one element per counter, so the elements run in parallel and come out the same
whatever the thread split. The key is a compile-time constant for a seeded op, else
SplitMix64 of `llvm.readcyclecounter` read once per kernel call (new numbers each run).
"""

from __future__ import annotations

import math as pymath

from xdsl.dialects import arith, llvm, math
from xdsl.dialects.builtin import f32, f64, i64

from onnxc.dialects.dense_data import element_dtype
from onnxc.dialects.graph import float_of
from onnxc.dialects.graph_random import GOLDEN, MASK, MIX, RandomOp, below_high, seed_key
from onnxc.errors import LoweringError
from onnxc.lowering.graph_to_loops.data_movement import sizes
from onnxc.lowering.graph_to_loops.element_types import is_float
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder
from onnxc.lowering.graph_to_loops.rules import KernelRule


def _signed(v: int) -> int:
    v &= MASK
    return v - (1 << 64) if v >= 1 << 63 else v


def random_kernel(op: RandomOp, kb: KernelBuilder, ins, outs):
    t = outs[0].type.get_element_type()
    if not is_float(t) or t.bitwidth not in (16, 32, 64) or t.name == "bf16":
        raise LoweringError(f"{op.name}: f16, f32 or f64 results only, not {t}")
    n = kb.product(sizes(kb, op.output, outs[0]))
    if isinstance(n, int) and n == 0:
        return
    y = kb.view(outs[0], [n])

    def c64(v: int):
        return kb.constant(_signed(v), i64)

    def binary(cls, a, b):
        return kb.insert(cls(a, b))

    def mix(z):
        z = binary(arith.MuliOp, binary(arith.XOrIOp, z, binary(arith.ShRUIOp, z, c64(30))),
                   c64(MIX[0]))
        z = binary(arith.MuliOp, binary(arith.XOrIOp, z, binary(arith.ShRUIOp, z, c64(27))),
                   c64(MIX[1]))
        return binary(arith.XOrIOp, z, binary(arith.ShRUIOp, z, c64(31)))

    if op.seed is not None:
        key = c64(seed_key(float_of(op.seed)))
    else:
        ticks = kb.insert(llvm.CallIntrinsicOp("llvm.readcyclecounter", [], [i64]))
        key = mix(ticks)
    normal = op.distribution.data == "normal"
    a, b = float_of(op.a), float_of(op.b)

    def unit(counter):
        """The counter's number as a float64 in [0, 1): its top 53 bits / 2^53."""
        bits = mix(binary(arith.AddiOp, key,
                          binary(arith.MuliOp, binary(arith.AddiOp, counter, c64(1)),
                                 c64(GOLDEN))))
        top = kb.insert(arith.UIToFPOp(binary(arith.ShRUIOp, bits, c64(11)), f64))
        return kb.mul(top, kb.constant(2.0 ** -53, f64))

    below = None if normal else below_high(a, b, element_dtype(t))

    def scaled(value):
        value = kb.muladd(value, kb.constant(b if normal else b - a, f64), kb.constant(a, f64))
        value = value if t == f64 else kb.insert(arith.TruncFOp(value, t))
        return value if below is None else kb.min(value, kb.constant(below, t))

    def element(i: Index) -> None:
        counter = kb.insert(arith.IndexCastOp(kb.idx(i), i64))
        kb.store(scaled(unit(counter)), y, [i])

    def pair(p: Index) -> None:
        """Box-Muller on (1 - u1) in (0, 1] and u2 of counters 2p, 2p + 1: the cosine to
        element 2p, the sine to 2p + 1 (stored first: for an odd count the last pair's
        sine lands on the last element and the cosine overwrites it)."""
        first = binary(arith.MuliOp, kb.insert(arith.IndexCastOp(kb.idx(p), i64)), c64(2))
        u1 = kb.sub(kb.constant(1.0, f64), unit(first))
        u2 = unit(binary(arith.AddiOp, first, c64(1)))
        m = f64 if t == f64 else f32
        if m != f64:
            u1, u2 = kb.insert(arith.TruncFOp(u1, m)), kb.insert(arith.TruncFOp(u2, m))
        radius = kb.insert(math.SqrtOp(kb.mul(kb.constant(-2.0, m),
                                              kb.insert(math.LogOp(u1)))))
        angle = kb.mul(kb.constant(2 * pymath.pi, m), u2)
        if m != f64:
            radius = kb.insert(arith.ExtFOp(radius, f64))
        even = kb.imul(p, 2)
        odd = kb.imin(kb.iadd(even, 1), kb.isub(n, 1))
        def turn(cls):
            v = kb.insert(cls(angle))
            return v if m == f64 else kb.insert(arith.ExtFOp(v, f64))

        kb.store(scaled(kb.mul(radius, turn(math.SinOp))), y, [odd])
        kb.store(scaled(kb.mul(radius, turn(math.CosOp))), y, [even])

    if normal:
        kb.parallel_for(0, kb.idiv(kb.iadd(n, 1), 2), pair)
    else:
        kb.parallel_for(0, n, element)


RULES = (KernelRule(RandomOp, random_kernel, symbolic=True),)
"""symbolic: the element count is read in the run."""
