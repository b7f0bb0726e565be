"""Kernels of the run-time checks (`graph.check_indices`, `graph.check_divisor`,
`graph.check_sizes`) and the index clamp that every kernel reading run-time indices applies.

A check kernel takes the checked tensor and the run's status record, `memref<3xi64>`:
[failed (0 or 1), flat position of the first bad element, its value]. It always writes
`failed`, so the record needs no reset between runs, and `return-check-status` makes the
entry return right after a failed check. The scan is one loop carrying the first bad
position as a min-reduction of `select(bad, position, size)`: no branch in the loop, so LLVM
vectorizes it (a compare, a select and a min per element), and the record is written once
after it. A valid index in [-n, n) is found with one unsigned compare, `index + n <u 2n`
(wrapping adds push everything outside the range above 2n).
"""

from __future__ import annotations

import math as pymath
from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    IndexType,
    IntegerType,
    MemRefType,
    Signedness,
    UnrealizedConversionCastOp,
    i64,
)
from xdsl.ir import SSAValue

from onnxc.dialects import graph
from onnxc.dialects.graph import int_of, shape_of
from onnxc.dialects.symbolic_dims import Dim, SymDim
from onnxc.lowering.graph_to_loops.element_types import is_unsigned
from onnxc.lowering.graph_to_loops.loops import (
    Index,
    KernelBuilder,
    may_exceed,
    parallel_nest,
)
from onnxc.lowering.graph_to_loops.rules import KernelRule

STATUS_TYPE = MemRefType(i64, [3])
"""The run's check status: failed, position of the first bad element, its value."""


def as_i64(kb: KernelBuilder, value: SSAValue) -> SSAValue:
    """An integer element as a signless i64 (zero-extended when unsigned)."""
    t = value.type
    assert isinstance(t, IntegerType)
    unsigned = is_unsigned(t) or t.width.data == 1
    if t.signedness.data != Signedness.SIGNLESS:  # arith works on signless bits
        t = IntegerType(t.width.data)
        value = kb.insert(UnrealizedConversionCastOp.get([value], [t]))
    if t.width.data == 64:
        return value
    return kb.insert((arith.ExtUIOp if unsigned else arith.ExtSIOp)(value, i64))


def _first_bad(kb: KernelBuilder, flat: SSAValue, columns: int,
               is_bad) -> tuple[SSAValue, SSAValue]:
    """(position, size) of the first element e (at column c) with is_bad(e, c) of `flat`
    viewed as rows of `columns`; position == size when there is none."""
    (size,) = kb.shape(flat)
    rows = kb.idiv(size, columns)
    table = kb.view(flat, [rows, columns])
    none = index_as_i64(kb, size)

    def step(r: Index, first: SSAValue):
        row_start = kb.insert(arith.MuliOp(kb.insert(arith.IndexCastOp(kb.idx(r), i64)),
                                           kb.constant(columns, i64)))
        for c in range(columns):
            bad = is_bad(as_i64(kb, kb.load(table, [r, c])), c)
            at = kb.insert(arith.AddiOp(row_start, kb.constant(c, i64))) if c else row_start
            first = kb.insert(arith.MinSIOp(first, kb.select(bad, at, none)))
        return [first]

    (first,) = kb.reduce(0, rows, [none], step)
    return first, none


def _report(kb: KernelBuilder, flat: SSAValue, status: SSAValue, first: SSAValue,
            none: SSAValue) -> None:
    """Write the status record for the scan's result `first`."""
    failed = kb.insert(arith.CmpiOp(first, none, "ne"))
    kb.store(kb.insert(arith.ExtUIOp(failed, i64)), status, [0])
    kb.store(first, status, [1])
    (size,) = kb.shape(flat)
    if isinstance(size, int):  # a static size here is at least 1 (_flat_or_pass)
        at = kb.insert(arith.MinSIOp(first, kb.constant(size - 1, i64)))
        value = as_i64(kb, kb.load(flat, [kb.insert(arith.IndexCastOp(at, IndexType()))]))
        kb.store(value, status, [2])
        return
    # a run-time size may be 0: the bad value is read only where there is one
    kb.for_(0, kb.insert(arith.IndexCastOp(kb.insert(arith.ExtUIOp(failed, i64)),
                                           IndexType())),
            lambda _: kb.store(as_i64(kb, kb.load(flat, [kb.insert(
                arith.IndexCastOp(first, IndexType()))])), status, [2]))


def index_as_i64(kb: KernelBuilder, i: Index) -> SSAValue:
    """An index (a size, static or a run-time value) as an i64."""
    if isinstance(i, int):
        return kb.constant(i, i64)
    return kb.insert(arith.IndexCastOp(i, i64))


def _flat_or_pass(kb: KernelBuilder, value: SSAValue, shape: Sequence[Dim],
                  status: SSAValue) -> SSAValue | None:
    """`value` (the checked operand, of `shape`) as a flat view; None, with the status
    record saying "passed", when it has no elements (a symbolic size may be 0 in a run:
    `_report` reads no element then)."""
    total = pymath.prod(shape)
    if total == 0:
        kb.store(kb.constant(0, i64), status, [0])
        return None
    return kb.view(value, [kb.dim(total)])


def check_indices_kernel(op: graph.CheckIndicesOp, kb: KernelBuilder, ins, outs):
    indices, status = ins
    flat = _flat_or_pass(kb, indices, shape_of(op.indices), status)
    if flat is None:
        return
    negative = bool(int_of(op.negative))
    # (extent, 2 * extent) per column as i64: constants, or for a symbolic bound the run's
    # size (from the symbol arguments, computed once before the scan; a polynomial that a
    # run makes negative, as TensorScatter's `past - seq + 1` may, admits nothing)
    extents = [_static_extent(kb, e, negative) if isinstance(e, int)
               else _run_time_extent(kb, e, negative) for e in op.extents()]

    def is_bad(value: SSAValue, column: int) -> SSAValue:
        extent, twice = extents[column]
        if negative:  # valid: -extent <= value < extent
            shifted = kb.insert(arith.AddiOp(value, extent))
            return kb.insert(arith.CmpiOp(shifted, twice, "uge"))
        return kb.insert(arith.CmpiOp(value, extent, "uge"))

    _report(kb, flat, status, *_first_bad(kb, flat, len(extents), is_bad))


def _static_extent(kb: KernelBuilder, extent: int,
                   negative: bool) -> tuple[SSAValue, SSAValue | None]:
    """(extent, 2 * extent when `negative`) as i64 constants."""
    return kb.constant(extent, i64), kb.constant(2 * extent, i64) if negative else None


def _run_time_extent(kb: KernelBuilder, extent: SymDim,
                     negative: bool) -> tuple[SSAValue, SSAValue | None]:
    """(extent, 2 * extent when `negative`) as i64 for this run's symbol values, at least 0
    (a polynomial with a negative coefficient may be negative in a run)."""
    size = kb.dim(extent)
    size = index_as_i64(kb, size if extent.lower_bound() is not None else kb.imax(size, 0))
    return size, kb.insert(arith.AddiOp(size, size)) if negative else None


def check_divisor_kernel(op: graph.CheckDivisorOp, kb: KernelBuilder, ins, outs):
    divisor, status = ins
    flat = _flat_or_pass(kb, divisor, shape_of(op.divisor), status)
    if flat is None:
        return
    zero = kb.constant(0, i64)
    _report(kb, flat, status, *_first_bad(
        kb, flat, 1, lambda value, _: kb.insert(arith.CmpiOp(value, zero, "eq"))))


def clamped_index(kb: KernelBuilder, raw: SSAValue, extent: Index,
                  negative: bool = True) -> SSAValue:
    """`raw` (an integer element) as an index into an axis of `extent`: negative values
    wrapped when `negative`, anything still outside [0, extent) replaced by 0.

    The checks already refused such data; the clamp makes the kernel itself unable to leave
    its buffers whatever the data (two selects, no branch)."""
    return checked_index(kb, raw, extent, negative)[0]


def checked_index(kb: KernelBuilder, raw: SSAValue, extent: Index,
                  negative: bool = True) -> tuple[SSAValue, SSAValue]:
    """(clamped index, was it in range?) of `raw`, for kernels that check their own."""
    index = kb.insert(arith.IndexCastOp(as_i64(kb, raw), IndexType()))
    if negative:
        below = kb.insert(arith.CmpiOp(index, kb.idx(0), "slt"))
        index = kb.select(below, kb.idx(kb.iadd(index, extent)), index)
    inside = kb.insert(arith.CmpiOp(index, kb.idx(extent), "ult"))
    return kb.select(inside, index, kb.idx(0)), inside


GUARD_BLOCK = 4096
"""Iterations per parallel chunk of a one-dimensional guarded loop."""


def guarded_nest(kb: KernelBuilder, shape: Sequence[Index], body,
                 status: SSAValue | None) -> None:
    """A loop nest over `shape`, its outermost loop of more than one index parallel, where
    `body(ivs)` returns whether the index it used was in range.

    This is the fused form of a `graph.check_indices` (convert_graph_to_loops.py fuses a check into the
    Gather / GatherElements right after it): instead of a separate scan of the indices, the
    consumer ANDs its clamps' flags through its innermost loop (a reduction, so the loop still
    vectorizes) and a failure sets the status record's `failed` word. Every writer writes the
    same 1, so threads do not race; the entry then runs the full check kernel to find the
    first bad element. `status` None: no flags are kept (nothing checks them). Extents may
    be run-time sizes (symbolic dimensions, at least 1)."""
    if status is None:
        parallel_nest(kb, list(shape), body)
        return
    kb.store(kb.constant(0, i64), status, [0])
    if any(_is_zero(d) for d in shape):
        return
    true, one = kb.constant(1, IntegerType(1)), kb.constant(1, i64)

    def all_inside(start: Index, stop: Index, ivs_of) -> None:
        (ok,) = kb.reduce(start, stop, [true], lambda j, acc: [
            kb.insert(arith.AndIOp(acc, body(ivs_of(j))))])
        kb.for_(0, kb.select(ok, kb.idx(0), kb.idx(1)), lambda _: kb.store(one, status, [0]))

    *outer, last = shape
    if _all_one(outer) and may_exceed(last, GUARD_BLOCK):  # chunks of one long loop
        outer = [0] * len(outer)
        blocks = kb.idiv(kb.iadd(last, GUARD_BLOCK - 1), GUARD_BLOCK)

        def block(b: Index) -> None:
            start = kb.imul(b, GUARD_BLOCK)
            all_inside(start, kb.imin(kb.iadd(start, GUARD_BLOCK), last),
                       lambda j: [*outer, j])

        kb.parallel_for(0, blocks, block)
        return
    parallel_nest(kb, outer, lambda ivs: all_inside(0, last, lambda j: [*ivs, j]))


def _is_zero(d: Index) -> bool:
    return isinstance(d, int) and d == 0


def _all_one(shape: Sequence[Index]) -> bool:
    return all(isinstance(d, int) and d == 1 for d in shape)


def check_sizes_kernel(op: graph.CheckSizesOp, kb: KernelBuilder, ins, outs):
    """Evaluate the guard for the run's sizes: [failed, 0, the guarded size]."""
    (status,) = ins
    guard = op.parsed()
    size = index_as_i64(kb, kb.dim(guard.size))
    zero = kb.constant(0, i64)
    failed = kb.insert(arith.CmpiOp(size, zero, "slt" if guard.relation == ">=" else "ne"))
    kb.store(kb.insert(arith.ExtUIOp(failed, i64)), status, [0])
    kb.store(zero, status, [1])
    kb.store(size, status, [2])


RULES = (
    KernelRule(graph.CheckIndicesOp, check_indices_kernel, symbolic=True),
    KernelRule(graph.CheckDivisorOp, check_divisor_kernel, symbolic=True),
    KernelRule(graph.CheckSizesOp, check_sizes_kernel, symbolic=True),
)
"""symbolic: the kernels read their sizes from the KernelBuilder: the checked tensor's element
count may be symbolic, and so may the bounds it is checked against (the extent of a symbolic
axis, from the symbol arguments `CheckIndicesOp.size_symbols` gives the kernel)."""
