"""Kernels of BatchNormalization (inference), LRN and Softmax.

All three view their operand as [outer, channels/axis, inner] so that per-channel scalars
are computed once outside a contiguous inner loop.

Sizes are `Index`es (`sizes`): ints for static dimensions, so static shapes build exactly
the code they always did, and run-time values for symbolic ones (every kernel here is in
SYMBOLIC); a tile or strip that a static size decided gets a run-time remainder instead.
"""

from __future__ import annotations

import math as pymath
from collections.abc import Sequence

from xdsl.dialects import arith, math, memref
from xdsl.dialects.arith import FastMathFlagsAttr
from xdsl.dialects.utils.fast_math import FastMathFlag
from xdsl.ir import SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from onnxc.dialects import graph, graph_shapes
from onnxc.dialects.graph import float_of, int_of, shape_of
from onnxc.errors import LoweringError
from onnxc.lowering.graph_to_loops.element_types import is_float
from onnxc.lowering.graph_to_loops.elementwise import convert
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder
from onnxc.lowering.graph_to_loops.rules import KernelRule

_REASSOC = FastMathFlagsAttr([FastMathFlag.REASSOC, FastMathFlag.ALLOW_CONTRACT])


def reassoc_add(kb: KernelBuilder, acc: SSAValue, x: SSAValue) -> SSAValue:
    """acc + x marked reassociable, so LLVM may vectorize a reduction (partial sums)."""
    return kb.insert(arith.AddfOp(acc, x, _REASSOC))


def reassoc_muladd(kb: KernelBuilder, a: SSAValue, b: SSAValue, acc: SSAValue) -> SSAValue:
    """acc + a * b as a reassociable, contractible reduction step."""
    return reassoc_add(kb, acc, kb.insert(arith.MulfOp(a, b, _REASSOC)))


def _rem(kb: KernelBuilder, a: Index, b: int) -> Index:
    """a mod b for a non-negative index and a positive constant."""
    return kb.isub(a, kb.imul(kb.idiv(a, b), b))


def sizes(kb: KernelBuilder, value: SSAValue) -> list[Index]:
    """The logical shape of a graph value as indexes: its static sizes as ints, a symbolic
    one as its run-time value (computed at the kernel's entry, so it dominates every use)."""
    return [kb.dim(d) for d in shape_of(value)]


def extents(shape: Sequence[Index]) -> list[int | tuple[Index, Index]]:
    """`shape` as `KernelBuilder.nest` bounds: a run-time size is the range (0, size)."""
    return [d if isinstance(d, int) else (0, d) for d in shape]


def is_zero(d: Index) -> bool:
    """Whether a size is statically 0 (a run-time size is a symbolic one: at least 1)."""
    return isinstance(d, int) and d == 0


def split_index(kb: KernelBuilder, f: Index, c: Index) -> list[Index]:
    """[f // c, f % c] of a flat index over [n, c]: by a constant as before, by a run-time
    size through signed division (both are non-negative)."""
    if isinstance(c, int):
        return [kb.idiv(f, c), _rem(kb, f, c)]
    quotient = kb.insert(arith.DivSIOp(kb.idx(f), c))
    return [quotient, kb.isub(f, kb.imul(quotient, c))]


def _require_float(op, element) -> None:
    if not is_float(element):
        raise LoweringError(f"{op.name}: element type {element} is not a float")


def batch_normalization_kernel(op: graph.BatchNormalizationOp, kb: KernelBuilder, ins, outs):
    """y = (x - mean) * (scale / sqrt(var + eps)) + bias, per channel."""
    x_shape = sizes(kb, op.input)
    n, c, size = x_shape[0], x_shape[1], kb.product(x_shape[2:])
    element = outs[0].type.get_element_type()
    _require_float(op, element)
    x, y = kb.view(ins[0], [n, c, size]), kb.view(outs[0], [n, c, size])
    scale, bias, mean, var = ins[1:5]
    eps = kb.constant(float_of(op.epsilon), element)

    def per_channel(ivs: list[Index]) -> None:
        ch = ivs[1]
        # ONNX allows the per-channel operands another float type than x.
        s, b, mu, v = (convert(kb, kb.load(p, [ch]), element) for p in (scale, bias, mean, var))
        factor = kb.div(s, kb.insert(math.SqrtOp(kb.add(v, eps))))

        def normalise(i: Index) -> None:
            centred = kb.sub(kb.load(x, [*ivs, i]), mu)
            kb.store(kb.muladd(centred, factor, b), y, [*ivs, i])

        kb.for_(0, size, normalise)

    kb.parallel_for(0, kb.imul(n, c), lambda f: per_channel(split_index(kb, f, c)))


def lrn_kernel(op: graph.LRNOp, kb: KernelBuilder, ins, outs):
    """y = x / (bias + alpha / size * sum of x^2 over nearby channels) ^ beta.

    The channel window sum is accumulated in the output plane itself (contiguous inner
    loops, no scratch buffer), then turned into the result in place.
    """
    x_shape = sizes(kb, op.input)
    n, c, plane = x_shape[0], x_shape[1], kb.product(x_shape[2:])
    element = outs[0].type.get_element_type()
    _require_float(op, element)
    x, y = kb.view(ins[0], [n, c, plane]), kb.view(outs[0], [n, c, plane])
    size = int_of(op.size)
    before, after = (size - 1) // 2, (size - 1) - (size - 1) // 2
    zero = kb.constant(0.0, element)
    bias = kb.constant(float_of(op.bias), element)
    coefficient = kb.constant(float_of(op.alpha) / size, element)
    beta = kb.constant(float_of(op.beta), element)

    def per_channel(ivs: list[Index]) -> None:
        b, ch = ivs
        kb.for_(0, plane, lambda s: kb.store(zero, y, [b, ch, s]))
        lo = kb.imax(kb.isub(ch, before), 0)
        hi = kb.imin(kb.iadd(ch, after + 1), c)

        def add_channel(other: Index) -> None:
            def square(s: Index) -> None:
                v = kb.load(x, [b, other, s])
                kb.store(kb.muladd(v, v, kb.load(y, [b, ch, s])), y, [b, ch, s])

            kb.for_(0, plane, square)

        kb.for_(lo, hi, add_channel)

        def normalise(s: Index) -> None:
            base = kb.muladd(coefficient, kb.load(y, [b, ch, s]), bias)
            denominator = kb.insert(math.PowFOp(base, beta))
            kb.store(kb.div(kb.load(x, [b, ch, s]), denominator), y, [b, ch, s])

        kb.for_(0, plane, normalise)

    kb.parallel_for(0, kb.imul(n, c), lambda f: per_channel(split_index(kb, f, c)))


SOFTMAX_COLUMNS = 256
"""Softmax over a non-last axis runs on column strips this wide (two stack rows of it)."""


def softmax_kernel(op: graph.SoftmaxOp, kb: KernelBuilder, ins, outs):
    """Numerically stable softmax: subtract the maximum, exponentiate and sum, scale.

    Over the last axis each row is contiguous: reductions along it vectorize. Over another
    axis (x viewed as [outer, length, inner]) the work runs on strips of up to
    SOFTMAX_COLUMNS contiguous inner columns, so every pass over `length` is a contiguous,
    vectorizable loop over the strip, with the strip's maxima and sums in stack rows.

    Symbolic sizes (rows, the softmax axis, the inner columns) are run-time loop bounds; a
    symbolic inner size runs full strips and then a run-time remainder strip."""
    shape = sizes(kb, op.input)
    axis = graph_shapes.normalize_axis(int_of(op.axis), len(shape))
    outer, length, inner = (kb.product(shape[:axis]), shape[axis],
                            kb.product(shape[axis + 1:]))
    element = outs[0].type.get_element_type()
    _require_float(op, element)
    if any(is_zero(d) for d in (outer, length, inner)):
        return
    x = kb.view(ins[0], [outer, length, inner])
    y = kb.view(outs[0], [outer, length, inner])
    lowest = kb.constant(-pymath.inf, element)
    zero = kb.constant(0.0, element)
    one = kb.constant(1.0, element)
    if not isinstance(inner, int) or inner > 1:
        _softmax_strips(kb, x, y, outer, length, inner, element)
        return

    def per_row(o: Index) -> None:
        (peak,) = kb.reduce(0, length, [lowest],
                            lambda a, m: [kb.max(m, kb.load(x, [o, a, 0]))])

        def exponentiate(a: Index, total):
            e = kb.insert(math.ExpOp(kb.sub(kb.load(x, [o, a, 0]), peak)))
            kb.store(e, y, [o, a, 0])
            return [reassoc_add(kb, total, e)]

        (total,) = kb.reduce(0, length, [zero], exponentiate)
        factor = kb.div(one, total)
        kb.for_(0, length, lambda a: kb.store(kb.mul(kb.load(y, [o, a, 0]), factor), y, [o, a, 0]))

    kb.parallel_for(0, outer, per_row)


def _softmax_strips(kb: KernelBuilder, x, y, outer: Index, length: Index, inner: Index,
                    element):
    width = min(inner, SOFTMAX_COLUMNS) if isinstance(inner, int) else SOFTMAX_COLUMNS
    rows = []
    for _ in range(2):
        alloca = memref.AllocaOp.get(element, shape=[width])
        Rewriter.insert_op(alloca, InsertPoint.at_start(kb.entry))
        rows.append(alloca.memref)
    peak, total = rows

    def strip(o: Index, c0: Index, w: Index) -> None:
        def columns(body) -> None:
            kb.for_(0, w, body)

        columns(lambda c: kb.store(kb.constant(-pymath.inf, element), peak, [c]))
        columns(lambda c: kb.store(kb.constant(0.0, element), total, [c]))

        def at(a: Index, c: Index) -> list[Index]:
            return [o, a, kb.iadd(c0, c)]

        kb.for_(0, length, lambda a: columns(lambda c: kb.store(
            kb.max(kb.load(peak, [c]), kb.load(x, at(a, c))), peak, [c])))

        def exponentiate(a: Index) -> None:
            def column(c: Index) -> None:
                e = kb.insert(math.ExpOp(kb.sub(kb.load(x, at(a, c)), kb.load(peak, [c]))))
                kb.store(e, y, at(a, c))
                kb.store(kb.add(kb.load(total, [c]), e), total, [c])

            columns(column)

        kb.for_(0, length, exponentiate)
        columns(lambda c: kb.store(kb.div(kb.constant(1.0, element), kb.load(total, [c])),
                                   total, [c]))
        kb.for_(0, length, lambda a: columns(lambda c: kb.store(
            kb.mul(kb.load(y, at(a, c)), kb.load(total, [c])), y, at(a, c))))

    if not isinstance(inner, int):
        # full strips of constant width, then one remainder strip per outer index where
        # the run-time size leaves one (a loop of 0 or 1 trips stands for the `if`)
        full = kb.idiv(inner, width)
        start = kb.imul(full, width)
        rest = kb.isub(inner, start)

        def per_strip(f: Index) -> None:
            o, s = [0, f] if isinstance(outer, int) and outer == 1 else split_index(kb, f, full)
            strip(o, kb.imul(s, width), width)

        kb.parallel_for(0, kb.imul(outer, full), per_strip)
        kb.for_(0, kb.imin(rest, 1), lambda _: kb.parallel_for(
            0, outer, lambda o: strip(o, start, rest)))
        return
    full, rest = divmod(inner, width)

    def per_outer_strip(f: Index) -> None:
        o, s = kb.idiv(f, full), _rem(kb, f, full)
        strip(o, kb.imul(s, width), width)

    if full:
        kb.parallel_for(0, kb.imul(outer, full), per_outer_strip)
    if rest:
        kb.parallel_for(0, outer, lambda o: strip(o, full * width, rest))


RULES = (
    KernelRule(graph.BatchNormalizationOp, batch_normalization_kernel, symbolic=True),
    KernelRule(graph.LRNOp, lrn_kernel, symbolic=True),
    KernelRule(graph.SoftmaxOp, softmax_kernel, symbolic=True),
)
"""symbolic: the kernels read their sizes from the KernelBuilder (symbolic dims welcome)."""
