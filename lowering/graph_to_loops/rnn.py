"""Kernels of graph.lstm_recurrence / gru_recurrence / rnn_recurrence: the sequential part.

The input projection X W^T + b is already a GEMM before the op (frontend/onnx_ops_rnn.py);
what is left is, per direction, per step, per batch row:
- H_prev R^T, a GEMV. R is re-laid as a table [D][G][NB][H][CH] (CH = chunk of output
  columns, a few vectors wide, zero-padded past H): at compile time when R is a constant
  (KERNEL_CONSTANTS), else once per run into scratch. Each chunk's CH / VW vector
  accumulators walk k = 0..H with one broadcast of h[k] and contiguous vector loads, and
  land in the scratch `hr` [D][B][G][NB * CH];
- the gate math, fused and vectorized over the hidden units (a scalar tail when H is not a
  multiple of the vector width): activations are their formulas (dialects/activations.py
  GATE_ACTIVATIONS) over `Lanes`, inline vector code (math.exp / math.tanh become the
  polynomial expansions of to_llvm/polynomial.py), the state lives in the y_h (and y_c)
  results themselves.
GRU without linear_before_reset needs r before its h-gate GEMV: z and r chunks first, then
r * H_prev into scratch, then the h chunks. Steps past a row's sequence length keep the state
and write zeros to y, a row of length 0 ends with zero states, as in onnxruntime (selects;
the lengths were checked by graph.check_indices). The
directions of a bidirectional layer are the iterations of a parallel loop, so they run on
separate threads.
"""

from __future__ import annotations

import math as pymath
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float64Type,
    IndexType,
    MemRefType,
    VectorType,
)
from xdsl.ir import Attribute, Operation, SSAValue

from onnxc.dialects import graph
from onnxc.dialects.activations import ACTIVATIONS, GATE_ACTIVATIONS
from onnxc.dialects.dense_data import from_numpy, values_in_shape
from onnxc.dialects.graph import int_of, shape_of
from onnxc.dialects.graph_rnn import (
    GRURecurrenceOp,
    LSTMRecurrenceOp,
    RecurrenceOp,
    RNNRecurrenceOp,
)
from onnxc.dialects.symbolic_dims import Dim
from onnxc.errors import LoweringError
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder
from onnxc.lowering.graph_to_loops.rules import rules
from onnxc.target import Target

VECTORS_PER_CHUNK = 8
"""Vector accumulators per GEMV chunk (CH = this many vectors at most, fewer for small H)."""


@dataclass(frozen=True)
class Geometry:
    d: int
    s: Dim
    """steps: may be symbolic (the kernel reads it at run time); everything else is static"""
    b: int
    h: int
    g: int
    vw: int
    ch: int
    """output columns per GEMV chunk (a multiple of vw)"""
    nb: int
    """chunks per gate"""
    layout: int

    @property
    def table_size(self) -> int:
        return self.d * self.g * self.nb * self.h * self.ch

    @property
    def row(self) -> int:
        """hr elements per (direction, batch row)"""
        return self.g * self.nb * self.ch


def vector_width(element: Attribute, target: Target) -> int:
    """Lanes of `element` in `target`'s vectors."""
    bits = 64 if isinstance(element, Float64Type) else 32
    return max(2, target.vector_bits // bits)


def geometry(op: RecurrenceOp, target: Target) -> Geometry:
    element = op.gates.type.get_element_type()
    vw = vector_width(element, target)
    s, b = op.steps_and_batch()
    h = op.hidden()
    ch = vw * max(1, min(VECTORS_PER_CHUNK, -(-h // vw)))
    return Geometry(op.directions(), s, b, h, op.GATES, vw, ch, -(-h // ch),
                    int_of(op.layout))


def _constant_r(op: RecurrenceOp):
    owner = op.recurrence.owner
    return owner.value if isinstance(owner, graph.ConstantOp) else None


def pack_recurrence(r: np.ndarray, geo: Geometry) -> np.ndarray:
    """R [D, G*H, H] as the flat table [D][G][NB][H(k)][CH] (columns past H are zero)."""
    d, g, h, nb, ch = geo.d, geo.g, geo.h, geo.nb, geo.ch
    padded = np.zeros((d, g, nb * ch, h), r.dtype)
    padded[:, :, :h, :] = r.reshape(d, g, h, h)
    return np.ascontiguousarray(padded.reshape(d, g, nb, ch, h).transpose(0, 1, 2, 4, 3))


def rnn_constants(op: Operation, target: Target) -> list[DenseIntOrFPElementsAttr]:
    """The packed R table when R is a constant (chunks of `target`'s vectors)."""
    assert isinstance(op, RecurrenceOp)
    value = _constant_r(op)
    if value is None:
        return []
    geo = geometry(op, target)
    element = op.recurrence.type.get_element_type()
    packed = pack_recurrence(values_in_shape(value, shape_of(value.type)), geo)
    return [from_numpy(packed.reshape(-1), element)]


def rnn_scratch(op: Operation, target: Target) -> list[MemRefType]:
    """hr (H_prev R^T per direction and row), GRU's r * H_prev, and the packed R table
    when R is not a constant."""
    assert isinstance(op, RecurrenceOp)
    geo = geometry(op, target)
    if not isinstance(geo.b, int):
        raise LoweringError(f"{op.name}: the batch of a recurrence must be static "
                            f"(it sizes the scratch), not {geo.b}")
    element = op.gates.type.get_element_type()
    out = [MemRefType(element, [geo.d * geo.b * geo.row])]
    if isinstance(op, GRURecurrenceOp) and not int_of(op.linear_before_reset):
        out.append(MemRefType(element, [geo.d * geo.b * geo.h]))
    if _constant_r(op) is None:
        out.append(MemRefType(element, [geo.table_size]))
    return out


class Lanes:
    """Math on `width` consecutive elements: vectors, or scalars when width is 1; the `ops`
    of dialects/activations.py's formulas. Comparisons take scalars only (arith.cmpf gives
    one i1), and log1p is log(1 + x) (libm's log1p has no vector form)."""

    def __init__(self, kb: KernelBuilder, element: Attribute, width: int):
        self.kb, self.element, self.width = kb, element, width
        self.vtype = VectorType(element, [width]) if width > 1 else element

    def c(self, value: float) -> SSAValue:
        s = self.kb.constant(value, self.element)
        return s if self.width == 1 else self.kb.vsplat(s, self.vtype)

    def splat(self, s: SSAValue) -> SSAValue:
        return s if self.width == 1 else self.kb.vsplat(s, self.vtype)

    def load(self, mem: SSAValue, at: list[Index]) -> SSAValue:
        if self.width == 1:
            return self.kb.load(mem, at)
        flat, indices = self.kb.address(mem, at)
        return self.kb.vload(flat, indices, self.vtype)

    def store(self, value: SSAValue, mem: SSAValue, at: list[Index]) -> None:
        if self.width == 1:
            self.kb.store(value, mem, at)
        else:
            flat, indices = self.kb.address(mem, at)
            self.kb.vstore(value, flat, indices)

    def op(self, kind, *args: SSAValue) -> SSAValue:
        return self.kb.insert(kind(*args))

    def constant(self, value: float, like: SSAValue) -> SSAValue:
        return self.c(value)

    def add(self, a, b):
        return self.op(arith.AddfOp, a, b)

    def sub(self, a, b):
        return self.op(arith.SubfOp, a, b)

    def mul(self, a, b):
        return self.op(arith.MulfOp, a, b)

    def div(self, a, b):
        return self.op(arith.DivfOp, a, b)

    def max(self, a, b):
        return self.op(arith.MaximumfOp, a, b)

    def min(self, a, b):
        return self.op(arith.MinimumfOp, a, b)

    def fma(self, a, b, c):
        return self.op(math.FmaOp, a, b, c)

    muladd = fma

    def neg(self, x):
        return self.op(arith.NegfOp, x)

    def abs(self, x):
        return self.op(math.AbsFOp, x)

    def exp(self, x):
        return self.op(math.ExpOp, x)

    def log1p(self, x):
        return self.op(math.LogOp, self.add(self.c(1.0), x))

    def tanh(self, x):
        return self.op(math.TanhOp, x)

    def less_than(self, a, b):
        assert self.width == 1, "a comparison of vector lanes"
        return self.kb.insert(arith.CmpfOp(a, b, "olt"))

    def select(self, cond: SSAValue, a, b):
        return self.op(arith.SelectOp, cond, a, b)


class _Recurrence:
    def __init__(self, op: RecurrenceOp, kb: KernelBuilder, ins, outs):
        self.op, self.kb = op, kb
        self.geo = geo = geometry(op, kb.target)
        n = len(op.operands)
        self.m = op.operand_map(ins[:n])
        extra = list(ins[n:])
        constant = _constant_r(op) is not None
        self.table = extra.pop(0) if constant else extra.pop()
        self.hr = extra.pop(0)
        self.rh = extra.pop(0) if extra else None
        self.y, self.yh = outs[0], outs[1]
        self.yc = outs[2] if len(outs) > 2 else None
        self.element = op.gates.type.get_element_type()
        self.acts = op.activation_list()
        per = op.ACTIVATIONS_PER_DIRECTION
        self.scalar_only = any("less_than" in GATE_ACTIVATIONS[a[0]].calls for a in self.acts)
        self.clip = op.clip.value.data if op.clip is not None else None
        self.per = per
        self.runtime_pack = not constant
        self.vector = Lanes(kb, self.element, geo.vw)
        del geo

    # ---------------------------------------------------------------- indexing

    def gate_at(self, t: Index, b: Index, d: int, col: Index) -> list[Index]:
        return [b, t, d, col] if self.geo.layout else [t, b, d, col]

    def state_at(self, d: int, b: Index, j: Index) -> list[Index]:
        return [b, d, j] if self.geo.layout else [d, b, j]

    def y_at(self, t: Index, d: int, b: Index, j: Index) -> list[Index]:
        return [b, t, d, j] if self.geo.layout else [t, d, b, j]

    def hr_base(self, d: int, b: Index) -> Index:
        return self.kb.linear([(b, self.geo.row)], d * self.geo.b * self.geo.row)

    # ---------------------------------------------------------------- structure

    def build(self) -> None:
        kb, geo = self.kb, self.geo
        if self.runtime_pack:
            self.pack()
        if geo.d == 1:
            self.direction(0)
            return

        def body(d: Index) -> None:
            for dd in range(geo.d):  # an iteration runs only for its own direction
                kb.for_(kb.imax(d, dd), kb.imin(kb.iadd(d, 1), dd + 1),
                        lambda _i, dd=dd: self.direction(dd))

        kb.parallel_for(0, geo.d, body)

    def pack(self) -> None:
        """The R table at run time (R is not a constant)."""
        kb, geo = self.kb, self.geo
        zero = kb.constant(0.0, self.element)
        r = self.m["recurrence"]
        kb.for_(0, geo.table_size, lambda i: kb.store(zero, self.table, [i]))

        def put(ivs: list[Index]) -> None:
            d, g, col, k = ivs
            nb = kb.idiv(col, geo.ch)
            c = kb.isub(col, kb.imul(nb, geo.ch))
            at = kb.linear([(d, geo.g * geo.nb * geo.h * geo.ch), (g, geo.nb * geo.h * geo.ch),
                            (nb, geo.h * geo.ch), (k, geo.ch), (c, 1)])
            kb.store(kb.load(r, [d, kb.linear([(g, geo.h), (col, 1)]), k]), self.table, [at])

        kb.nest([geo.d, geo.g, geo.h, geo.h], put)

    def direction(self, d: int) -> None:
        kb, geo = self.kb, self.geo
        zero = kb.constant(0.0, self.element)

        def init(ivs: list[Index]) -> None:
            # a row of length 0 ends with zero states, as in onnxruntime
            b, j = ivs
            at = self.state_at(d, b, j)
            empty = self.valid(0, b)
            for state, initial in ((self.yh, self.m.get("initial_h")),
                                   (self.yc, self.m.get("initial_c"))):
                if state is None:
                    continue
                value = kb.load(initial, at) if initial is not None else zero
                if initial is not None and empty is not None:
                    value = kb.select(empty, value, zero)
                kb.store(value, state, at)

        kb.nest([geo.b, geo.h], init)
        reverse = self.op.is_reverse(d)

        steps = kb.dim(geo.s)

        def step(s: Index) -> None:
            t = kb.isub(kb.isub(steps, 1), s) if reverse else s
            kb.for_(0, geo.b, lambda b: self.cell(d, t, b, s))

        kb.for_(0, steps, step)

    def valid(self, t: Index, b: Index) -> SSAValue | None:
        lens = self.m.get("sequence_lens")
        if lens is None:
            return None
        n = self.kb.insert(arith.IndexCastOp(self.kb.load(lens, [b]), IndexType()))
        return self.kb.insert(arith.CmpiOp(self.kb.idx(t), n, "slt"))

    def gemv(self, d: int, b: Index, s: Index, gates: tuple[int, int], source) -> None:
        """hr[d, b, gate chunks] = h @ R^T for gates [g0, g1); source(k) is h[k].

        Odd steps `s` visit the chunks in reverse: R (H * G * H floats per direction) is
        often a little larger than the L2, and a cyclic sweep would then miss on every
        line; sweeping back and forth starts each step on the lines the last one left in
        the cache."""
        kb, geo, lanes = self.kb, self.geo, self.vector
        u = geo.ch // geo.vw
        base = self.hr_base(d, b)
        lo, hi = gates[0] * geo.nb, gates[1] * geo.nb
        odd = (s % 2 if isinstance(s, int) else
               kb.insert(arith.AndIOp(s, kb.idx(1))))

        def chunk(q_visit: Index) -> None:
            # q = q_visit on even steps, lo + hi - 1 - q_visit on odd ones
            q = kb.iadd(q_visit, kb.imul(odd, kb.isub(lo + hi - 1, kb.imul(q_visit, 2))))
            table_base = kb.imul(kb.iadd(q, d * geo.g * geo.nb), geo.h * geo.ch)

            def k_step(k: Index, *acc: SSAValue) -> list[SSAValue]:
                hk = lanes.splat(source(k))
                at = kb.iadd(table_base, kb.imul(k, geo.ch))
                return [lanes.fma(lanes.load(self.table, [kb.iadd(at, v * geo.vw)]), hk, acc[v])
                        for v in range(u)]

            acc = kb.for_(0, geo.h, k_step, iter_args=[lanes.c(0.0)] * u)
            out = kb.iadd(base, kb.imul(q, geo.ch))
            for v in range(u):
                lanes.store(acc[v], self.hr, [kb.iadd(out, v * geo.vw)])

        kb.for_(lo, hi, chunk)

    def over_hidden(self, fn) -> None:
        """fn(lanes, j) over the hidden units: vectors, then a scalar tail."""
        kb, geo = self.kb, self.geo
        width = 1 if self.scalar_only else geo.vw
        full = geo.h // width
        if full:
            lanes = self.vector if width > 1 else Lanes(kb, self.element, 1)
            kb.for_(0, full, lambda i: fn(lanes, kb.imul(i, width)))
        if full * width < geo.h:
            scalar = Lanes(kb, self.element, 1)
            kb.for_(full * width, geo.h, lambda j: fn(scalar, j))

    def cell(self, d: int, t: Index, b: Index, s: Index) -> None:
        kb, geo = self.kb, self.geo
        h_prev = lambda k: kb.load(self.yh, self.state_at(d, b, k))
        valid = self.valid(t, b)
        acts = self.acts[d * self.per:(d + 1) * self.per]
        base = self.hr_base(d, b)

        def x_part(lanes: Lanes, g: int, j: Index) -> SSAValue:
            return lanes.load(self.m["gates"], self.gate_at(t, b, d, kb.iadd(j, g * geo.h)))

        def r_part(lanes: Lanes, g: int, j: Index) -> SSAValue:
            return lanes.load(self.hr, [kb.iadd(base, kb.iadd(j, g * geo.nb * geo.ch))])

        def pre(lanes: Lanes, g: int, j: Index) -> SSAValue:
            return lanes.add(x_part(lanes, g, j), r_part(lanes, g, j))

        def act(lanes: Lanes, which: int, x: SSAValue, clip: bool = True) -> SSAValue:
            if self.clip is not None and clip:
                x = ACTIVATIONS["clip"].formula(lanes, x, -self.clip, self.clip)
            name, alpha, beta = acts[which]
            return GATE_ACTIVATIONS[name].formula(lanes, x, alpha, beta)

        def finish(lanes: Lanes, j: Index, h_new: SSAValue, h_old: SSAValue,
                   c_new: SSAValue | None = None, c_old: SSAValue | None = None) -> None:
            y_value = h_new
            if valid is not None:
                h_new = lanes.select(valid, h_new, h_old)
                y_value = lanes.select(valid, h_new, lanes.c(0.0))
                if c_new is not None:
                    c_new = lanes.select(valid, c_new, c_old)
            lanes.store(h_new, self.yh, self.state_at(d, b, j))
            lanes.store(y_value, self.y, self.y_at(t, d, b, j))
            if c_new is not None:
                lanes.store(c_new, self.yc, self.state_at(d, b, j))

        op = self.op
        if isinstance(op, LSTMRecurrenceOp):
            self.gemv(d, b, s, (0, 4), h_prev)
            peep = self.m.get("peepholes")
            forget_coupled = bool(int_of(op.input_forget))

            def lstm(lanes: Lanes, j: Index) -> None:
                c_old = lanes.load(self.yc, self.state_at(d, b, j))
                h_old = lanes.load(self.yh, self.state_at(d, b, j))
                xi, xo, xf = pre(lanes, 0, j), pre(lanes, 1, j), pre(lanes, 2, j)
                if peep is not None:
                    xi = lanes.fma(lanes.load(peep, [d, j]), c_old, xi)
                    xf = lanes.fma(lanes.load(peep, [d, kb.iadd(j, 2 * geo.h)]), c_old, xf)
                i = act(lanes, 0, xi)
                f = lanes.sub(lanes.c(1.0), i) if forget_coupled else act(lanes, 0, xf)
                c = lanes.fma(f, c_old, lanes.mul(i, act(lanes, 1, pre(lanes, 3, j))))
                if peep is not None:
                    xo = lanes.fma(lanes.load(peep, [d, kb.iadd(j, geo.h)]), c, xo)
                o = act(lanes, 0, xo)
                h = lanes.mul(o, act(lanes, 2, c, clip=False))  # as onnxruntime: C unclipped
                finish(lanes, j, h, h_old, c, c_old)

            self.over_hidden(lstm)
        elif isinstance(op, GRURecurrenceOp):
            before_reset = bool(int_of(op.linear_before_reset))
            if before_reset:
                self.gemv(d, b, s, (0, 3), h_prev)
            else:
                self.gemv(d, b, s, (0, 2), h_prev)
                rh, rh_base = self.rh, kb.linear([(b, geo.h)], d * geo.b * geo.h)
                assert rh is not None

                def reset(lanes: Lanes, j: Index) -> None:
                    r = act(lanes, 0, pre(lanes, 1, j))
                    h_old = lanes.load(self.yh, self.state_at(d, b, j))
                    lanes.store(lanes.mul(r, h_old), rh, [kb.iadd(rh_base, j)])

                self.over_hidden(reset)
                self.gemv(d, b, s, (2, 3), lambda k: kb.load(rh, [kb.iadd(rh_base, k)]))

            def gru(lanes: Lanes, j: Index) -> None:
                h_old = lanes.load(self.yh, self.state_at(d, b, j))
                z = act(lanes, 0, pre(lanes, 0, j))
                if before_reset:
                    r = act(lanes, 0, pre(lanes, 1, j))
                    rbh = lanes.load(self.m["recurrence_bias"], [d, j])
                    xh = lanes.fma(r, lanes.add(r_part(lanes, 2, j), rbh), x_part(lanes, 2, j))
                else:
                    xh = pre(lanes, 2, j)
                candidate = act(lanes, 1, xh)
                # (1 - z) h~ + z H = h~ + z (H - h~)
                h = lanes.fma(z, lanes.sub(h_old, candidate), candidate)
                finish(lanes, j, h, h_old)

            self.over_hidden(gru)
        else:
            assert isinstance(op, RNNRecurrenceOp)
            self.gemv(d, b, s, (0, 1), h_prev)

            def rnn(lanes: Lanes, j: Index) -> None:
                h_old = lanes.load(self.yh, self.state_at(d, b, j))
                finish(lanes, j, act(lanes, 0, pre(lanes, 0, j)), h_old)

            self.over_hidden(rnn)


def recurrence_kernel(op: Operation, kb: KernelBuilder, ins, outs) -> None:
    assert isinstance(op, RecurrenceOp)
    geo = geometry(op, kb.target)
    if any(not isinstance(v, int) for v in (geo.d, geo.b, geo.h)):
        raise LoweringError(f"{op.name}: only the sequence length may be symbolic "
                            f"(batch {geo.b}, hidden {geo.h})")
    if pymath.prod((geo.d, geo.b, geo.h)) == 0:
        return
    _Recurrence(op, kb, ins, outs).build()


def rnn_kernel_key(op: Operation, target: Target) -> tuple:
    """All properties, and whether R is a constant: the constant table and the run-time
    packing scratch have the same type, but the kernels differ (packing, argument order)."""
    props = tuple(sorted((k, str(v)) for k, v in op.properties.items()))
    assert isinstance(op, RecurrenceOp)
    return (*props, ("recurrence_constant", _constant_r(op) is not None))


RULES = rules((LSTMRecurrenceOp, GRURecurrenceOp, RNNRecurrenceOp), recurrence_kernel,
              constants=rnn_constants, scratch=rnn_scratch, key=rnn_kernel_key, symbolic=True)
"""symbolic: the sequence length may be symbolic (a run-time trip count); batch and hidden
may not."""
