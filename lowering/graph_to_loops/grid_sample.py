"""Kernel of graph.grid_sample (ONNX GridSample, N-D).

For every output position the grid's coordinates are turned, per spatial axis, into taps
(input position as a float, weight): denormalize, round for nearest, bring coordinates
outside the border back (clamp for `border`, fold for `reflection`), then one tap (nearest),
two (linear) or four (cubic, Keys' kernel with a = -0.75). Each tap's position is checked
(zeros padding: outside reads 0) or brought inside again, exactly as onnx.reference does.
All of that is computed once per output position; the channel loop inside then only loads
and weights the taps. Batches run in order, the first output axis in parallel.

Input and grid sizes may be symbolic: an axis' float extents (its size minus one, half of
it, the reflection bounds) are then computed once from the run's size (`_Axis`); static
sizes keep them constants.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from xdsl.dialects import arith, math
from xdsl.ir import SSAValue

from onnxc.dialects.graph import int_of, shape_of
from onnxc.dialects.graph_vision import GridSampleOp
from onnxc.dialects.symbolic_dims import Dim
from onnxc.errors import LoweringError
from onnxc.lowering.graph_to_loops.element_types import is_float
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder
from onnxc.lowering.graph_to_loops.rules import KernelRule

Real = float | SSAValue
"""A float known when compiling, or computed in the run (from a symbolic size)."""

CUBIC_A = -0.75


class _Float:
    """Scalar float arithmetic of one element type on a KernelBuilder."""

    def __init__(self, kb: KernelBuilder, t):
        self.kb, self.t = kb, t

    def c(self, v: Real):
        return v if isinstance(v, SSAValue) else self.kb.constant(v, self.t)

    def lt(self, a, b):
        return self.kb.insert(arith.CmpfOp(a, b, "olt"))

    def clamp(self, v, lo: float, hi: Real):
        return self.kb.min(self.kb.max(v, self.c(lo)), self.c(hi))

    def floor(self, v):
        return self.kb.insert(math.FloorOp(v))

    def reflect(self, v, lo: float, hi: Real):
        """Fold v into [lo, hi] by reflecting at the borders (periodically)."""
        kb = self.kb
        below, above = self.lt(v, self.c(lo)), self.lt(self.c(hi), v)
        dx = kb.select(below, kb.sub(self.c(lo), v), kb.sub(v, self.c(hi)))
        if isinstance(hi, SSAValue):  # a run-time span, 0 for one pixel with align_corners
            span = kb.sub(hi, self.c(lo))
            empty = kb.insert(arith.CmpfOp(span, self.c(0.0), "oeq"))
            n = kb.select(empty, self.c(0.0), self.floor(kb.div(dx, span)))
        else:
            span = hi - lo
            n = self.floor(kb.div(dx, self.c(span))) if span else self.c(0.0)
        r = kb.sub(dx, kb.mul(n, self.c(span)))
        # n's parity in floats: fptosi of a huge or NaN n would be poison
        half = self.floor(kb.mul(n, self.c(0.5)))
        even = kb.insert(arith.CmpfOp(kb.sub(n, kb.mul(half, self.c(2.0))), self.c(0.0), "oeq"))
        to_low = kb.insert(arith.CmpiOp(below, even, "eq"))
        folded = kb.select(to_low, kb.add(self.c(lo), r), kb.sub(self.c(hi), r))
        outside = kb.insert(arith.OrIOp(below, above))
        return kb.select(outside, folded, v)


@dataclass(frozen=True)
class _Axis:
    """One input axis' float extents: the scale from [-1, 1] to pixels, the border [lo, hi]
    of the coordinates and the last pixel `size - 1`."""

    scale: Real
    lo: float
    hi: Real
    last: Real

    @staticmethod
    def of(f: _Float, size: Dim, align: bool) -> _Axis:
        lo = 0.0 if align else -0.5
        if isinstance(size, int):
            if align:
                return _Axis((size - 1) / 2, lo, size - 1.0, size - 1.0)
            return _Axis(size / 2, lo, size - 0.5, size - 1.0)
        kb = f.kb
        real = kb.to_float(kb.index(size), f.t)  # before the loops: computed once
        last = kb.sub(real, f.c(1.0))
        scale = kb.mul(last if align else real, f.c(0.5))  # exact, as the constants are
        return _Axis(scale, lo, last if align else kb.sub(real, f.c(0.5)), last)


def _axis_taps(f: _Float, v, axis: _Axis, mode: str, padding: str, align: bool):
    """[(index, valid or None, weight or None)] along one axis for grid value v."""
    kb = f.kb
    lo, hi = axis.lo, axis.hi
    if align:
        x = kb.mul(kb.add(v, f.c(1.0)), f.c(axis.scale))
    else:
        x = kb.sub(kb.mul(kb.add(v, f.c(1.0)), f.c(axis.scale)), f.c(0.5))
    if mode == "nearest":
        x = kb.insert(math.RoundEvenOp(x))
    if padding == "border":
        outside = kb.insert(arith.OrIOp(f.lt(x, f.c(lo)), f.lt(f.c(hi), x)))
        x = kb.select(outside, f.clamp(x, 0.0, axis.last), x)
    elif padding == "reflection":
        x = f.reflect(x, lo, hi)
    if mode == "nearest":
        positions = [(kb.insert(math.TruncOp(x)), None)]
    else:
        x0 = f.floor(x)
        t = kb.sub(x, x0)
        if mode == "linear":
            positions = [(x0, kb.sub(f.c(1.0), t)), (kb.add(x0, f.c(1.0)), t)]
        else:
            a = CUBIC_A

            def outer(d):  # the weight of a tap at distance d in [1, 2]
                return kb.sub(kb.mul(kb.add(kb.mul(kb.sub(kb.mul(f.c(a), d), f.c(5 * a)), d),
                                            f.c(8 * a)), d), f.c(4 * a))

            def inner(d):  # the weight of a tap at distance d in [0, 1]
                return kb.add(kb.mul(kb.mul(kb.sub(kb.mul(f.c(a + 2), d), f.c(a + 3)), d), d),
                              f.c(1.0))

            one_minus = kb.sub(f.c(1.0), t)
            weights = [outer(kb.add(t, f.c(1.0))), inner(t), inner(one_minus),
                       outer(kb.add(one_minus, f.c(1.0)))]
            positions = [(kb.add(x0, f.c(float(k))), w) for k, w in zip((-1, 0, 1, 2), weights)]
    taps = []
    for p, w in positions:
        valid = None
        if padding == "zeros":
            valid = kb.insert(arith.AndIOp(kb.insert(arith.CmpfOp(p, f.c(0.0), "oge")),
                                           kb.insert(arith.CmpfOp(p, f.c(axis.last), "ole"))))
        elif padding == "reflection":
            p = kb.insert(math.TruncOp(f.reflect(p, lo, hi)))
        index = kb.float_to_index(p, 0.0, axis.last)  # NaN and inf grid values too
        taps.append((index, valid, w))
    return taps


def grid_sample_kernel(op: GridSampleOp, kb: KernelBuilder, ins, outs):
    element = outs[0].type.get_element_type()
    if not is_float(element) or ins[1].type.get_element_type() != element:
        raise LoweringError(f"{op.name}: input and grid must share a float element type")
    x_shape, y_shape = shape_of(op.input), shape_of(op.output)
    if 0 in y_shape or 0 in x_shape:
        return
    n, c = x_shape[:2]
    spatial = x_shape[2:]
    dims = len(spatial)
    out_spatial = y_shape[2:]
    mode, padding = op.mode.data, op.padding_mode.data
    align = bool(int_of(op.align_corners))
    f = _Float(kb, element)
    x, grid, y = ins[0], ins[1], outs[0]
    axes = [_Axis.of(f, size, align) for size in spatial]

    def position(b: Index, o: list[Index]) -> None:
        per_axis = []
        for i in range(dims):  # grid's last dimension lists the innermost axis first
            v = kb.load(grid, [b, *o, dims - 1 - i])
            per_axis.append(_axis_taps(f, v, axes[i], mode, padding, align))
        combos = []
        for taps in itertools.product(*per_axis):
            weight, valid = None, None
            for _, v, w in taps:
                if w is not None:
                    weight = w if weight is None else kb.mul(weight, w)
                if v is not None:
                    valid = v if valid is None else kb.insert(arith.AndIOp(valid, v))
            combos.append(([t[0] for t in taps], valid, weight))

        def channel(ch: Index) -> None:
            acc = None
            for idx, valid, weight in combos:
                value = kb.load(x, [b, ch, *idx])
                if valid is not None:
                    value = kb.select(valid, value, f.c(0.0))
                if weight is not None:
                    value = kb.mul(value, weight)
                acc = value if acc is None else kb.add(acc, value)
            kb.store(acc, y, [b, ch, *o])

        kb.for_(0, c, channel)

    def batch(b: Index) -> None:
        kb.parallel_for(0, out_spatial[0], lambda o0: kb.nest(
            list(out_spatial[1:]), lambda rest: position(b, [o0, *rest])))

    kb.for_(0, n, batch)


RULES = (KernelRule(GridSampleOp, grid_sample_kernel, symbolic=True),)
"""symbolic: the kernel reads its sizes from the KernelBuilder (symbolic dims welcome): the
importer guards that a symbolic input axis is not empty (a tap always reads a pixel)."""
