"""NHWC pooling kernels: 2-D MaxPool / AveragePool and the global pools, vectorised along C.

In NHWC the channels of one pixel are contiguous, so a pool is the same loop for every
channel vector: per output pixel, a group of up to UNROLL channel vectors is initialised in
registers, folded over the window's valid rows and columns (bounds computed once per pixel,
so padding costs no test per element) and stored once. Channels that do not fill a vector
are a group of scalars. Output rows are independent (`kb.parallel_for`).

    for r in parallel(N * OH):                      # n, oh
      for ow in OW:                                 # edges, then the interior (static taps)
        for each channel group (c0, lanes):
          acc[lanes] = init
          for kh in valid(oh): for kw in valid(ow):
            acc[l] = fold(acc[l], x[n, oh*s - p + kh*d, ow*s - p + kw*d, c0 + l])
          y[n, oh, ow, c0 + l] = acc[l]             # AveragePool: * 1 / count
"""

from __future__ import annotations

import math as pymath
from collections.abc import Callable, Sequence

from xdsl.dialects import arith, vector
from xdsl.dialects.builtin import Float32Type, Signedness, VectorType
from xdsl.ir import SSAValue

from onnxc.dialects import graph
from onnxc.dialects.graph import int_of, ints_of, shape_of
from onnxc.dialects.graph_qlinear import is_byte_type
from onnxc.dialects.symbolic_dims import Dim, sym_max, sym_min
from onnxc.errors import LoweringError
from onnxc.lowering.graph_to_loops.element_types import min_value
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder
from onnxc.target import Target

UNROLL = 4
"""Channel vectors folded together per pixel: 4 x 16 lanes cover C = 64 in one pass."""


def vector_width(target: Target) -> int:
    """f32 lanes of `target`'s vectors."""
    return max(4, target.vector_bits // 32)


class Lanes:
    """Loads, folds and stores of one channel group: lanes of `vw` elements or scalars."""

    def __init__(self, kb: KernelBuilder, widths: Sequence[int]):
        self.kb = kb
        self.widths = list(widths)
        self.offsets = [sum(self.widths[:i]) for i in range(len(self.widths))]

    def splat(self, scalar: SSAValue) -> list[SSAValue]:
        return [
            scalar if w == 1 else self.kb.insert(
                vector.BroadcastOp(scalar, VectorType(scalar.type, [w])))
            for w in self.widths
        ]

    def load(self, mem: SSAValue, prefix: Sequence[Index], c0: Index) -> list[SSAValue]:
        kb, out = self.kb, []
        element = mem.type.get_element_type()
        for w, off in zip(self.widths, self.offsets):
            at = [*prefix, kb.iadd(c0, off)]
            if w == 1:
                out.append(kb.load(mem, at))
            else:
                out.append(kb.vload(
                    mem, [kb.idx(i) for i in at], VectorType(element, [w])))
        return out

    def store(self, values: Sequence[SSAValue], mem: SSAValue, prefix: Sequence[Index],
              c0: Index) -> None:
        kb = self.kb
        for v, w, off in zip(values, self.widths, self.offsets):
            at = [*prefix, kb.iadd(c0, off)]
            if w == 1:
                kb.store(v, mem, at)
            else:
                kb.vstore(v, mem, [kb.idx(i) for i in at])


def channel_groups(
    kb: KernelBuilder, channels: int, vw: int, body: Callable[[Index, Lanes], None],
    parallel: bool = False,
) -> None:
    """Cover channels [0, channels) with groups: UNROLL vectors at a time, then the
    remaining vectors, then the remaining channels as one group of halving vectors (7 = 4 +
    2 + 1): a few vector ops instead of one scalar chain per channel, and a loop with vector
    instructions, which LLVM's loop vectorizer leaves alone (on znver3 its cost models
    disagree on 7 strided scalar max-reductions and it aborts the process)."""
    nv, tail = divmod(channels, vw)
    full, rest = divmod(nv, UNROLL)
    step = UNROLL * vw
    if full:
        group = Lanes(kb, [vw] * UNROLL)
        loop = kb.parallel_for if parallel else kb.for_
        loop(0, full, lambda g: body(kb.imul(g, step), group))
    if rest:
        body(full * step, Lanes(kb, [vw] * rest))
    if tail:
        body(nv * vw, Lanes(kb, [1 << b for b in reversed(range(tail.bit_length()))
                                 if tail >> b & 1]))


def _folder(kb: KernelBuilder, average: bool,
            element=None) -> Callable[[SSAValue, SSAValue], SSAValue]:
    """acc + x, or max(acc, x) as `maxnum` with no-NaN semantics: one vmaxps (`maximumf`'s
    NaN propagation cost 3x the whole kernel; MLAS's max pool does not propagate NaN
    either); on ui8 / i8 an integer max (vpmaxub / vpmaxsb)."""
    if element is not None and is_byte_type(element):  # by the element: a vector's is ui8
        unsigned = element.signedness.data == Signedness.UNSIGNED  # i8 is signless
        return lambda a, b: kb.insert((arith.MaxUIOp if unsigned else arith.MaxSIOp)(a, b))
    if average:
        return lambda a, b: kb.insert(arith.AddfOp(a, b))
    no_nan = arith.FastMathFlagsAttr([arith.FastMathFlag.NO_NANS])
    return lambda a, b: kb.insert(arith.MaxnumfOp(a, b, no_nan))


def _scale(kb: KernelBuilder, values: list[SSAValue], lanes: Lanes, factor: SSAValue):
    splat = lanes.splat(factor)
    return [kb.insert(arith.MulfOp(v, s)) for v, s in zip(values, splat)]


def _check_f32(op, average: bool = True) -> None:
    """f32; a max pool also ui8 / i8 (a quantized MaxPool: max commutes with the monotone
    dequantization, so it needs no requantization)."""
    element = op.output.type.get_element_type()
    if not isinstance(element, Float32Type) and (average or not is_byte_type(element)):
        raise LoweringError(f"{op.name}: the NHWC kernel takes f32, not {element}")


def _interior(size: Dim, k: int, s: int, pad: int, dil: int, out: Dim) -> tuple[Dim, Dim]:
    """Outputs [lo, hi) whose whole window lies inside the input (no padding touched);
    sizes may be symbolic (run-time bounds)."""
    lo = sym_min(out, -(-pad // s))
    hi = sym_max(lo, sym_min(out, (size - 1 + pad - (k - 1) * dil) // s + 1))
    return lo, hi


def window_count(kb: KernelBuilder, start: Index, k: int, dilation: int, low: int,
                 high: int) -> Index:
    """How many of the window's taps start + j * dilation (j < k) lie in [low, high)."""
    first = kb.idiv(kb.iadd(kb.imax(kb.isub(low, start), 0), dilation - 1), dilation)
    end = kb.imin(k, kb.idiv(kb.iadd(kb.imax(kb.isub(high, start), 0), dilation - 1), dilation))
    return kb.imax(kb.isub(end, first), 0)


def pool_nhwc(op: graph.PoolOp, kb: KernelBuilder, ins, outs, average: bool) -> None:
    """2-D MaxPool / AveragePool on x [N, H, W, C] -> y [N, OH, OW, C]."""
    _check_f32(op, average)
    x, y = ins[0], outs[0]
    batch, channels, height, width = shape_of(op.input)
    out_h, out_w = shape_of(op.output)[2:]
    kernel, strides, pads = ints_of(op.kernel_shape), ints_of(op.strides), ints_of(op.pads)
    if len(kernel) != 2:
        raise LoweringError(f"{op.name}: the NHWC kernel is 2-D, got a {len(kernel)}-D window")
    dilations = op.window_dilations()
    include_pad = average and int_of(op.count_include_pad) != 0  # type: ignore[attr-defined]
    element = y.type.get_element_type()
    init = kb.constant(0.0 if average else min_value(element), element)
    one = kb.constant(1.0, element) if average else None
    fold = _folder(kb, average, element)
    vw = vector_width(kb.target) * (4 if is_byte_type(element) else 1)

    def window(o: Index, d: int) -> tuple[Index, Index, Index, Index]:
        """(first input index, valid kernel offsets [lo, hi), window element count)."""
        size, k, s, dil = (height, width)[d], kernel[d], strides[d], dilations[d]
        start = kb.isub(kb.imul(o, s), pads[d])
        lo = kb.idiv(kb.iadd(kb.imax(kb.isub(0, start), 0), dil - 1), dil)
        hi = kb.imin(k, kb.idiv(kb.iadd(kb.imax(kb.isub(size, start), 0), dil - 1), dil))
        if include_pad:
            count = window_count(kb, start, k, dil, -pads[d], size + pads[d + 2])
        else:
            count = kb.isub(hi, lo)
        return start, lo, hi, count

    def per_row(r: Index) -> None:
        n = 0 if batch == 1 else kb.idiv(r, out_h)
        oh = r if batch == 1 else kb.isub(r, kb.imul(n, out_h))
        row0, kh_lo, kh_hi, count_h = window(oh, 0)

        def per_pixel(ow: Index, inside: bool) -> None:
            if inside:  # the whole window is in the row: static bounds, unrolled taps
                col0, kw_lo, kw_hi, count_w = kb.isub(kb.imul(ow, strides[1]), pads[1]), \
                    0, kernel[1], kernel[1]
            else:
                col0, kw_lo, kw_hi, count_w = window(ow, 1)
            inverse = None
            if average:
                inverse = kb.div(one, kb.to_float(kb.imul(count_h, count_w), element))

            def group(c0: Index, lanes: Lanes) -> None:
                def over_kh(kh: Index, *accs: SSAValue):
                    ih = kb.iadd(row0, kb.imul(kh, dilations[0]))

                    def over_kw(kw: Index, *accs: SSAValue):
                        iw = kb.iadd(col0, kb.imul(kw, dilations[1]))
                        loaded = lanes.load(x, [n, ih, iw], c0)
                        return [fold(a, v) for a, v in zip(accs, loaded)]

                    return kb.for_(kw_lo, kw_hi, over_kw, iter_args=accs)

                accs = list(kb.for_(kh_lo, kh_hi, over_kh, iter_args=lanes.splat(init)))
                if inverse is not None:
                    accs = _scale(kb, accs, lanes, inverse)
                lanes.store(accs, y, [n, oh, ow], c0)

            channel_groups(kb, channels, vw, group)

        lo, hi = _interior(width, kernel[1], strides[1], pads[1], dilations[1], out_w)
        kb.for_(0, lo, lambda ow: per_pixel(ow, False))
        kb.for_(lo, hi, lambda ow: per_pixel(ow, True))
        kb.for_(hi, out_w, lambda ow: per_pixel(ow, False))

    kb.parallel_for(0, batch * out_h, per_row)


def global_pool_nhwc(op: graph.GlobalPoolOp, kb: KernelBuilder, ins, outs, average: bool):
    """x [N, H, W, C] -> y [N, C] (the [N, C, 1, 1] result is the same memory in NCHW and
    NHWC): per channel group, a register reduction over the H * W pixels."""
    _check_f32(op)
    shape = shape_of(op.input)
    batch, channels, pixels = shape[0], shape[1], pymath.prod(shape[2:])
    x = kb.view(ins[0], [batch, pixels, channels])
    y = kb.view(outs[0], [batch, channels])
    element = y.type.get_element_type()
    init = kb.constant(0.0 if average else -pymath.inf, element)
    fold = _folder(kb, average)
    inverse = kb.div(kb.constant(1.0, element), kb.to_float(kb.index(pixels), element))

    def per_image(n: Index, parallel: bool) -> None:
        def group(c0: Index, lanes: Lanes) -> None:
            def over_pixels(p: Index, *accs: SSAValue):
                return [fold(a, v) for a, v in zip(accs, lanes.load(x, [n, p], c0))]

            accs = list(kb.for_(0, pixels, over_pixels, iter_args=lanes.splat(init)))
            if average:
                accs = _scale(kb, accs, lanes, inverse)
            lanes.store(accs, y, [n], c0)

        channel_groups(kb, channels, vector_width(kb.target), group, parallel=parallel)

    if batch == 1:
        per_image(0, parallel=True)
    else:
        kb.parallel_for(0, batch, lambda n: per_image(n, parallel=False))
