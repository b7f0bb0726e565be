"""Kernel of graph.attention: softmax(scale * Q K^T + mask) V without the score matrix.

FlashAttention's online softmax, vectorized across queries: the vector lanes are VW
consecutive query rows of one (batch, head), so every softmax step is a lane-wise vector op
and no horizontal reduction is needed. Per query block:
- Q^T of the block, pre-scaled, is copied to a [D, VW] stack buffer;
- keys are visited a block at a time (8 keys, 6 with 16 vector registers): their scores
  are that many vector accumulators per query vector over D, each
  step one Q^T row times a broadcast scalar of K (an outer-product micro-kernel);
- the running maximum m and normaliser l are vectors carried through the key loop; the
  output block O^T [Dv, VW] (a stack buffer, in L1) is rescaled by exp(m_old - m_new) once
  per key block and accumulates the block's probabilities times broadcast scalars of V;
- at the end O^T / l is written back transposed.
With a causal offset (graph.attention's `causal_offset`), a query block visits only the key
blocks some of its queries may see: those every query sees run unmasked, those across the
diagonal add min(i + offset - j, 0) * FLT_MAX * FLT_MAX to the scores (0, or -inf as an -inf
mask entry would be, so a row with no key left is the same 0 / 0 either way; float arithmetic
because vector compares do not lower), the rest are skipped.
Masked keys (-inf scores) give exactly 0: the exponent base is the running maximum clamped
to the lowest finite value (see `finite_base`), so a block whose keys are all masked so far
adds nothing instead of exp(-inf - -inf) = NaN; a row with no key left at all is 0 / 0 = NaN,
as Softmax of an all -inf row is (Attention-23's importer zeroes such rows).
exp is `math.exp` on vectors, expanded inline by convert-math-to-llvm. No Sq x Sk (or Sk)
buffer exists; K and V are streamed once per query block. The outer loop (batch x query
blocks) is a parallel_for. Non-f32 element types use the scalar kernel at the end.

Symbolic sizes (a query length `seq`, a key length `past+seq`, batch dimensions) take the
same code with run-time bounds: the full query blocks are one parallel loop with static
lanes, the last partial block (a run-time lane count) runs with one or two vectors of
queries as it needs, and the keys after the last full key block are one block whose keys
past the end are masked. Head sizes D and Dv must be static (they size the stack buffers),
else the scalar kernel runs.
"""

from __future__ import annotations

import math as pymath
from collections.abc import Callable

from xdsl.dialects import arith, math, memref
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    MemRefType,
    VectorType,
)
from xdsl.ir import SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from onnxc.dialects import graph
from onnxc.dialects.graph import float_of, int_of, ints_of, is_symbolic, shape_of
from onnxc.dialects.graph_shapes import row_major_strides
from onnxc.lowering.graph_to_loops.buffer_views import strided_view
from onnxc.lowering.graph_to_loops.data_movement import sizes
from onnxc.lowering.graph_to_loops.fused import require_float
from onnxc.lowering.graph_to_loops.loops import (
    Index,
    KernelBuilder,
    broadcast_indices,
    nest_bounds,
    unflatten,
)
from onnxc.lowering.graph_to_loops.rules import KernelRule
from onnxc.target import Target

KEYS = 8
"""Keys per block of the vector kernel with 32 vector registers: KEYS x QUERY_VECTORS score
accumulators live in registers, with the query vectors and a broadcast key (`_keys`)."""
QUERY_VECTORS = 2
"""Vectors of queries per block (lanes = QUERY_VECTORS x the vector width)."""
KEY_BLOCK = 16
"""Keys per block of the scalar kernel (its score buffer's length)."""


def _vector_width(target: Target) -> int:
    return max(4, target.vector_bits // 32)


def _keys(query_vectors: int, target: Target) -> int:
    """Keys per block: as many as leave `target`'s registers for the query vectors and a
    broadcast key. With AVX2's 16, 8 keys spilled three accumulators through the stack in
    every step of the dot loop (BERT's attention at seq 128 on Zen 3: 6 keys take 18% less
    time)."""
    registers = target.vector_registers
    return max(1, min(KEYS, (registers - query_vectors - 1) // query_vectors))


_LOWEST = {Float16Type: -65504.0, BFloat16Type: -3.3895313892515355e38,
           Float32Type: -3.4028234663852886e38, Float64Type: -1.7976931348623157e308}


def lowest_finite(element) -> float:
    """The most negative finite value of a float element type."""
    return _LOWEST.get(type(element), -3.4028234663852886e38)


def finite_base(kb: KernelBuilder, maximum: SSAValue, lowest: SSAValue) -> SSAValue:
    """The running maximum as an exponent base: max(m, lowest finite) is m itself whenever
    m is finite, and keeps exp(s - base) = 0 (not NaN) for s = m = -inf."""
    return kb.insert(arith.MaximumfOp(maximum, lowest))


def kv_index(kb: KernelBuilder, bi: list[Index], groups: int) -> list[Index]:
    """K/V's leading indices for query batch index `bi`: head h // groups when grouped."""
    return bi if groups == 1 else [*bi[:-1], kb.idiv(bi[-1], groups)]


def zero_unless_positive(kb: KernelBuilder, total: SSAValue, x: SSAValue) -> SSAValue:
    """x where the softmax normaliser `total` is > 0, else 0 (`zero_nan_rows`: no key, or
    NaN probabilities)."""
    zero = kb.constant(0.0, x.type)
    return kb.select(kb.insert(arith.CmpfOp(total, zero, "ogt")), x, zero)


def causal_offset(op: graph.AttentionOp, kb: KernelBuilder, sq: Index,
                  sk: Index) -> Index | None:
    """The causal mask's offset: query i sees key j <= i + offset (None: no causal mask);
    `causal_from_end` takes it at run time as Sk - Sq."""
    if op.causal_from_end is not None:
        return kb.isub(sk, sq)
    return None if op.causal_offset is None else int_of(op.causal_offset)


def attention_sizes(op: graph.AttentionOp, kb: KernelBuilder, ins):
    """(batch dims, Sq, D, Sk, Dv): ints, or run-time values for symbolic dimensions."""
    q, k, v = (sizes(kb, value, mem) for value, mem in zip(
        (op.query, op.key, op.value), ins))
    return list(q[:-2]), q[-2], q[-1], k[-2], v[-1]


def _alloca(kb: KernelBuilder, shape: list[int], element) -> SSAValue:
    """Stack scratch at the kernel entry (private to each thread of a parallel loop)."""
    op = memref.AllocaOp.get(element, shape=shape)
    Rewriter.insert_op(op, InsertPoint.at_start(kb.entry))
    return op.memref


class _VectorAttention:
    def __init__(self, op: graph.AttentionOp, kb: KernelBuilder, ins, outs):
        self.kb = kb
        self.batch, self.sq, self.d, self.sk, self.dv = attention_sizes(op, kb, ins)
        self.vw = _vector_width(kb.target)
        # two vectors of queries per block when there are enough: each broadcast K / V
        # scalar then feeds two FMAs, which halves the loads per FMA (a run-time query
        # count may be large; its partial last block takes one vector when that suffices)
        self.qv = QUERY_VECTORS if not isinstance(self.sq, int) or (
            self.sq >= QUERY_VECTORS * self.vw) else 1
        self.width = self.qv * self.vw
        self.keys = _keys(self.qv, kb.target)
        element = outs[0].type.get_element_type()
        self.element = element
        self.vtype = VectorType(element, [self.vw])
        self.q, self.k, self.v, self.y = ins[0], ins[1], ins[2], outs[0]
        self.mask = ins[3] if op.mask is not None else None
        self.mask_shape = sizes(kb, op.mask, ins[3]) if op.mask is not None else []
        self.scale = float_of(op.scale)
        self.qt = _alloca(kb, [self.d, self.width], element)
        self.ot = _alloca(kb, [self.dv, self.width], element)
        # a mask that varies along the query axis is gathered lane by lane
        rank = len(self.batch) + 2
        padded = [1] * (rank - len(self.mask_shape)) + self.mask_shape
        self.mask_per_query = self.mask is not None and not (
            isinstance(padded[-2], int) and padded[-2] == 1)
        self.mbuf = _alloca(kb, [self.width], element) if self.mask_per_query else None
        self.causal = causal_offset(op, kb, self.sq, self.sk)
        self.groups = op.kv_groups()
        self.iota = _alloca(kb, [self.width], element) if self.causal is not None else None
        # zero_nan_rows: each lane's normaliser, read by the output stores (a lane whose sum
        # is not positive - 0 with no key, NaN from a NaN score - stores 0)
        self.sums = _alloca(kb, [self.width], element) if op.zero_nan_rows else None

    # ---------------------------------------------------------------- vector helpers

    def splat(self, x: SSAValue) -> SSAValue:
        return self.kb.vsplat(x, self.vtype)

    def vconst(self, value: float) -> SSAValue:
        return self.splat(self.kb.constant(value, self.element))

    def vload(self, mem: SSAValue, at: list[Index]) -> SSAValue:
        return self.kb.vload(mem, [self.kb.idx(i) for i in at], self.vtype)

    def vstore(self, value: SSAValue, mem: SSAValue, at: list[Index]) -> None:
        self.kb.vstore(value, mem, [self.kb.idx(i) for i in at])

    def fma(self, a: SSAValue, b: SSAValue, c: SSAValue) -> SSAValue:
        return self.kb.vfma(a, b, c)

    def exp(self, x: SSAValue) -> SSAValue:
        return self.kb.insert(math.ExpOp(x))

    def binary(self, op_type, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.kb.insert(op_type(a, b))

    # ---------------------------------------------------------------- structure

    def build(self) -> None:
        kb = self.kb
        if not isinstance(self.sq, int) or not all(isinstance(b, int) for b in self.batch):
            self.build_symbolic()
            return
        full, tail = divmod(self.sq, self.width)
        count = pymath.prod(self.batch)

        def block(flat: Index, blocks: int, lanes: int, first: int) -> None:
            ivs = unflatten(kb, flat, [*self.batch, blocks])
            self.query_block(ivs[:-1], kb.iadd(kb.imul(ivs[-1], self.width), first), lanes)

        if full:
            kb.parallel_for(0, count * full, lambda f: block(f, full, self.width, 0))
        if tail:
            kb.parallel_for(0, count, lambda f: block(f, 1, tail, full * self.width))

    def build_symbolic(self) -> None:
        """`build` for a run-time query count or batch: one parallel loop over the full
        blocks of qv vectors (static lanes: their Q^T packing and output stores are
        unrolled, as for static shapes: 20% of BERT's attention at seq 128 when they were
        run-time loops), then the last partial block (a run-time lane count) of each
        (batch, head), with qv vectors, or one when its queries fit in one."""
        kb, vw, width = self.kb, self.vw, self.width
        count = kb.product(self.batch)
        full = kb.idiv(self.sq, width)
        tail = kb.isub(self.sq, kb.imul(full, width))

        def block(flat: Index) -> None:
            ivs = unflatten(kb, flat, [*self.batch, full])
            self.query_block(ivs[:-1], kb.imul(ivs[-1], width), width)

        kb.parallel_for(0, kb.imul(count, full), block)

        def last_block(qv: int) -> Callable[[Index], None]:
            def run(flat: Index) -> None:
                self.query_block(unflatten(kb, flat, self.batch), kb.imul(full, width), tail,
                                 qv)
            return run

        some = kb.insert(arith.CmpiOp(kb.idx(tail), kb.idx(0), "sgt"))
        if self.qv == 1:
            kb.parallel_for(0, kb.select(some, kb.idx(count), kb.idx(0)), last_block(1))
            return
        wide = kb.insert(arith.CmpiOp(kb.idx(tail), kb.idx(vw), "sgt"))
        narrow = kb.insert(arith.AndIOp(some, kb.insert(arith.XOrIOp(
            wide, kb.constant(1, wide.type)))))
        kb.parallel_for(0, kb.select(wide, kb.idx(count), kb.idx(0)), last_block(self.qv))
        kb.parallel_for(0, kb.select(narrow, kb.idx(count), kb.idx(0)), last_block(1))

    def query_block(self, bi: list[Index], i0: Index, lanes: Index, qv: int = 0) -> None:
        """Queries i0 .. i0 + lanes of (batch, head) `bi`; a run-time `lanes` (at most qv
        vectors' worth) comes with the number of vectors `qv` to compute."""
        kb, vw = self.kb, self.vw
        if isinstance(lanes, int):
            qv = -(-lanes // vw)  # vectors that hold the block's queries
        width = qv * vw
        zero = kb.constant(0.0, self.element)
        scale = kb.constant(self.scale, self.element)

        # Q^T of the block, scaled; lanes past the last query are zero
        def pack(ivs: list[Index]) -> None:
            c, lane = ivs
            x = kb.load(self.q, [*bi, kb.iadd(i0, lane), c])
            kb.store(kb.mul(x, scale), self.qt, [c, lane])

        kb.nest(nest_bounds([self.d, lanes]), pack)
        if not isinstance(lanes, int) or lanes < width:
            kb.nest([self.d, (lanes, width)], lambda ivs: kb.store(zero, self.qt, ivs))
        vzero = self.vconst(0.0)

        def clear(c: Index) -> None:
            for u in range(qv):
                self.vstore(vzero, self.ot, [c, u * vw])

        kb.for_(0, self.dv, clear)

        keys = self.keys
        if isinstance(self.sk, int):
            full_blocks, rest = divmod(self.sk, keys)
        else:  # the keys after the full blocks are one masked block (see below)
            full_blocks, rest = kb.idiv(self.sk, keys), 0
        state = [self.vconst(-pymath.inf)] * qv + [vzero] * qv
        free, needed = full_blocks, full_blocks  # key blocks [0, free) need no causal mask
        first: Index = 0
        if self.causal is not None:
            assert self.iota is not None
            kb.for_(0, width, lambda lane: kb.store(kb.to_float(lane, self.element),
                                                     self.iota, [lane]))
            first = kb.iadd(i0, self.causal)  # the last key the block's first query sees
            free = kb.imin(full_blocks, kb.idiv(kb.iadd(first, 1), keys))
            after = kb.iadd(first, lanes + keys - 1) if isinstance(lanes, int) else \
                kb.iadd(kb.iadd(first, lanes), keys - 1)
            needed = kb.imin(full_blocks, kb.idiv(after, keys))

        def blocks(lb: Index, ub: Index, causal: bool, state: list[SSAValue]) -> list[SSAValue]:
            return list(kb.for_(lb, ub, lambda b, *st: self.key_block(
                bi, i0, lanes, qv, kb.imul(b, keys), keys, list(st), causal), iter_args=state))

        if not isinstance(full_blocks, int) or full_blocks:
            state = blocks(0, free, False, state)
            if self.causal is not None:
                state = blocks(free, needed, True, state)
        if rest:
            state = self.key_block(bi, i0, lanes, qv, full_blocks * keys, rest, state,
                                   self.causal is not None)
        elif not isinstance(self.sk, int):
            # the last sk mod keys keys, up to the last one the block's last query sees: one
            # block of `keys` whose keys from `stop` on are masked (none when it is empty)
            stop = self.sk if self.causal is None else kb.imin(self.sk, kb.iadd(first, lanes))
            j0 = kb.imul(full_blocks, keys)
            some = kb.insert(arith.CmpiOp(kb.idx(stop), kb.idx(j0), "sgt"))
            state = list(kb.for_(0, kb.select(some, kb.idx(1), kb.idx(0)),
                                 lambda _, *st: self.key_block(
                                     bi, i0, lanes, qv, j0, keys, list(st),
                                     self.causal is not None, stop), iter_args=state))
        one = self.vconst(1.0)
        inverse = [self.binary(arith.DivfOp, one, state[qv + u]) for u in range(qv)]

        def finish(c: Index) -> None:
            for u in range(qv):
                o = self.binary(arith.MulfOp, self.vload(self.ot, [c, u * vw]), inverse[u])
                self.vstore(o, self.ot, [c, u * vw])

        kb.for_(0, self.dv, finish)
        if self.sums is not None:
            for u in range(qv):
                self.vstore(state[qv + u], self.sums, [u * vw])

        def store(ivs: list[Index]) -> None:
            lane, c = ivs
            x = kb.load(self.ot, [c, lane])
            if self.sums is not None:
                x = zero_unless_positive(kb, kb.load(self.sums, [lane]), x)
            kb.store(x, self.y, [*bi, kb.iadd(i0, lane), c])

        kb.nest(nest_bounds([lanes, self.dv]), store)

    def mask_vectors(self, bi: list[Index], i0: Index, lanes: Index, qv: int,
                     j: Index) -> list[SSAValue]:
        kb = self.kb
        assert self.mask is not None
        if not self.mask_per_query:
            at = broadcast_indices([*bi, 0, j], self.mask_shape)
            return [self.splat(kb.load(self.mask, at))] * qv
        assert self.mbuf is not None

        def gather(lane: Index) -> None:
            at = broadcast_indices([*bi, kb.iadd(i0, lane), j], self.mask_shape)
            kb.store(kb.load(self.mask, at), self.mbuf, [lane])

        kb.for_(0, lanes, gather)
        return [self.vload(self.mbuf, [u * self.vw]) for u in range(qv)]

    def causal_bias(self, i0: Index, qv: int, j: Index) -> list[SSAValue]:
        """Per lane: 0 where query i0 + lane sees key j, -inf where it does not (the
        distance, at most -1, times FLT_MAX twice)."""
        kb = self.kb
        assert self.iota is not None and self.causal is not None
        distance = kb.to_float(kb.isub(kb.iadd(i0, self.causal), j), self.element)
        zero, big = self.vconst(0.0), self.vconst(-lowest_finite(self.element))
        out = []
        for u in range(qv):
            t = self.binary(arith.AddfOp, self.vload(self.iota, [u * self.vw]),
                            self.splat(distance))
            behind = self.binary(arith.MulfOp, self.binary(arith.MinimumfOp, t, zero), big)
            out.append(self.binary(arith.MulfOp, behind, big))
        return out

    def key_block(self, bi, i0, lanes: Index, qv: int, j0: Index, keys: int,
                  state: list[SSAValue], causal: bool = False,
                  stop: Index | None = None) -> list[SSAValue]:
        """One block of `keys` keys; state = qv running maxima, then qv running sums. With
        `stop`, keys from `stop` on are masked: they read key stop - 1 (in bounds), their
        scores are -inf and their values 0 (so they add exactly nothing)."""
        kb, vw = self.kb, self.vw
        kvi = kv_index(kb, bi, self.groups)
        key = [kb.iadd(j0, j) if stop is None else kb.imin(kb.iadd(j0, j), kb.isub(stop, 1))
               for j in range(keys)]
        valid = [] if stop is None else [
            kb.insert(arith.CmpiOp(kb.idx(kb.iadd(j0, j)), kb.idx(stop), "slt"))
            for j in range(keys)]

        def dot(c: Index, *acc: SSAValue) -> list[SSAValue]:
            qs = [self.vload(self.qt, [c, u * vw]) for u in range(qv)]
            out = list(acc)
            for j in range(keys):
                kv = self.splat(kb.load(self.k, [*kvi, key[j], c]))
                for u in range(qv):
                    out[j * qv + u] = self.fma(qs[u], kv, out[j * qv + u])
            return out

        vzero = self.vconst(0.0)
        scores = list(kb.for_(0, self.d, dot, iter_args=[vzero] * (keys * qv)))
        if self.mask is not None:
            for j in range(keys):
                masks = self.mask_vectors(bi, i0, lanes, qv, key[j])
                for u in range(qv):
                    scores[j * qv + u] = self.binary(arith.AddfOp, scores[j * qv + u], masks[u])
        if causal:
            for j in range(keys):
                bias = self.causal_bias(i0, qv, kb.iadd(j0, j))
                for u in range(qv):
                    scores[j * qv + u] = self.binary(arith.AddfOp, scores[j * qv + u], bias[u])
        if valid:
            minus_inf = self.vconst(-pymath.inf)
            scores = [kb.select(valid[i // qv], x, minus_inf) for i, x in enumerate(scores)]
        maxima, sums = state[:qv], state[qv:]
        new_max, base, correction, total = [], [], [], []
        lowest = self.vconst(lowest_finite(self.element))
        for u in range(qv):
            m = maxima[u]
            for j in range(keys):
                m = self.binary(arith.MaximumfOp, m, scores[j * qv + u])
            new_max.append(m)
            base.append(finite_base(kb, m, lowest))
            correction.append(self.exp(self.binary(arith.SubfOp, maxima[u], base[u])))
        probs = [self.exp(self.binary(arith.SubfOp, scores[j * qv + u], base[u]))
                 for j in range(keys) for u in range(qv)]
        for u in range(qv):
            t = self.binary(arith.MulfOp, sums[u], correction[u])
            for j in range(keys):
                t = self.binary(arith.AddfOp, t, probs[j * qv + u])
            total.append(t)

        def accumulate(c: Index) -> None:
            outs = [self.binary(arith.MulfOp, self.vload(self.ot, [c, u * vw]), correction[u])
                    for u in range(qv)]
            for j in range(keys):
                vv = self.splat(kb.load(self.v, [*kvi, key[j], c]))
                if valid:
                    vv = kb.select(valid[j], vv, self.vconst(0.0))
                for u in range(qv):
                    outs[u] = self.fma(probs[j * qv + u], vv, outs[u])
            for u in range(qv):
                self.vstore(outs[u], self.ot, [c, u * vw])

        kb.for_(0, self.dv, accumulate)
        return [*new_max, *total]


def product_view(op: graph.AttentionOp, kb: KernelBuilder, out: SSAValue) -> SSAValue:
    """The result buffer seen as the untransposed product [..., Sq, Dv]: itself, or with
    `output_perm` a strided view of it (the kernel then writes each element where the
    transpose would have put it)."""
    if op.output_perm is None:
        return out
    perm = ints_of(op.output_perm)
    shape = shape_of(op.output)
    rows = row_major_strides(shape)
    product = [0] * len(perm)
    strides = [0] * len(perm)
    for k, p in enumerate(perm):
        product[p], strides[p] = shape[k], rows[k]
    return kb.insert(strided_view(out, 0, product, strides))


def attention_kernel(op: graph.AttentionOp, kb: KernelBuilder, ins, outs):
    require_float(op, outs[0])
    q_shape, k_shape, v_shape = shape_of(op.query), shape_of(op.key), shape_of(op.value)
    if pymath.prod(q_shape[:-2]) * q_shape[-2] * v_shape[-1] == 0:
        return
    if k_shape[-2] == 0:  # no keys: an empty softmax contributes nothing
        zero = kb.constant(0.0, outs[0].type.get_element_type())
        out_shape = sizes(kb, op.output, outs[0]) if is_symbolic(op.output) else list(
            outs[0].type.get_shape())
        kb.nest(nest_bounds(out_shape), lambda ivs: kb.store(zero, outs[0], ivs))
        return
    static_heads = isinstance(q_shape[-1], int) and isinstance(v_shape[-1], int)
    outs = [product_view(op, kb, outs[0])]
    if isinstance(outs[0].type.get_element_type(), Float32Type) and static_heads:
        _VectorAttention(op, kb, ins, outs).build()
    else:
        scalar_attention_kernel(op, kb, ins, outs)


def scalar_attention_kernel(op: graph.AttentionOp, kb: KernelBuilder, ins, outs):
    """One query row at a time, keys in blocks of KEY_BLOCK (f64 and other float types)."""
    batch, sq, d, sk, dv = attention_sizes(op, kb, ins)
    q, k, v, y = ins[0], ins[1], ins[2], outs[0]
    mask = ins[3] if op.mask is not None else None
    mask_shape = sizes(kb, op.mask, ins[3]) if op.mask is not None else ()
    causal = causal_offset(op, kb, sq, sk)
    element = y.type.get_element_type()
    zero = kb.constant(0.0, element)
    lowest = kb.constant(-pymath.inf, element)
    finite = kb.constant(lowest_finite(element), element)
    scale = kb.constant(float_of(op.scale), element)
    block = max(1, min(KEY_BLOCK, sk)) if isinstance(sk, int) else KEY_BLOCK
    buf = _alloca(kb, [block], element)
    assert isinstance(buf.type, MemRefType)

    def per_query(ivs: list[Index]) -> None:
        bi, i = ivs[:-1], ivs[-1]
        kvi = kv_index(kb, bi, op.kv_groups())
        kb.for_(0, dv, lambda c: kb.store(zero, y, [*bi, i, c]))
        # the keys this query sees: all, or j <= i + causal_offset
        if causal is None:
            limit = sk
        else:
            after = causal + 1 if isinstance(causal, int) else kb.iadd(causal, 1)
            limit = kb.imin(sk, kb.iadd(i, after))

        def per_block(j0: Index, running_max, running_sum):
            hi = kb.imin(kb.iadd(j0, block), limit)

            def score(j: Index, block_max):
                (dot,) = kb.reduce(0, d, [zero], lambda c, acc: [
                    kb.muladd(kb.load(q, [*bi, i, c]), kb.load(k, [*kvi, j, c]), acc)
                ])
                s = kb.mul(dot, scale)
                if mask is not None:
                    s = kb.add(s, kb.load(mask, broadcast_indices([*bi, i, j], mask_shape)))
                kb.store(s, buf, [kb.isub(j, j0)])
                return [kb.max(block_max, s)]

            (block_max,) = kb.for_(j0, hi, score, iter_args=[lowest])
            new_max = kb.max(running_max, block_max)
            base = finite_base(kb, new_max, finite)
            correction = kb.insert(math.ExpOp(kb.sub(running_max, base)))
            kb.for_(0, dv, lambda c: kb.store(
                kb.mul(kb.load(y, [*bi, i, c]), correction), y, [*bi, i, c]))

            def accumulate(j: Index, total):
                weight = kb.insert(math.ExpOp(kb.sub(kb.load(buf, [kb.isub(j, j0)]), base)))
                kb.for_(0, dv, lambda c: kb.store(
                    kb.muladd(weight, kb.load(v, [*kvi, j, c]), kb.load(y, [*bi, i, c])),
                    y, [*bi, i, c]))
                return [kb.add(total, weight)]

            (block_sum,) = kb.for_(j0, hi, accumulate, iter_args=[zero])
            return [new_max, kb.muladd(running_sum, correction, block_sum)]

        _, total = kb.for_(0, limit, per_block, step=block, iter_args=[lowest, zero])
        inverse = kb.div(kb.constant(1.0, element), total)

        def normalise(c: Index) -> None:
            x = kb.mul(kb.load(y, [*bi, i, c]), inverse)
            if op.zero_nan_rows is not None:
                x = zero_unless_positive(kb, total, x)
            kb.store(x, y, [*bi, i, c])

        kb.for_(0, dv, normalise)

    kb.nest(nest_bounds([*batch, sq]), per_query)


RULES = (KernelRule(graph.AttentionOp, attention_kernel, symbolic=True, early=True,
                    strided_operands=(0, 1, 2)),)
"""symbolic: the kernel reads its sizes from the KernelBuilder (symbolic dims welcome);
early: one of the largest kernels (early_kernels.py); Q, K and V are read element by element
through their memrefs, so they may be strided views (graph.as_strided)."""
