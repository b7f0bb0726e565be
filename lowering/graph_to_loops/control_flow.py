"""`graph.if` / `graph.loop` -> `scf.if` / `scf.for` / `scf.while` in the entry function.

A body is lowered like the function around it, into the region of its scf op: kernel calls
in the region, their buffers hoisted to the function's block (plan-memory places top-level
buffers; one used inside a loop lives for the whole loop). Values cross iterations in
buffers, not SSA values:
- a loop's carried values live in its result buffers: copied in from the initial values,
  read by the body through its block arguments, and overwritten by what the body yields at
  the end of each iteration (through a temporary when a yield reads another state buffer,
  e.g. a swap);
- the iteration number and the condition are one-element buffers the body reads;
- scan slices are stored at the iteration's row of their stacked result, before the
  carried values are overwritten (a slice may be a carried value as received).

A loop with a known iteration count is an `scf.for`; otherwise an `scf.while` that runs while
`i < max_trips` and the condition holds. A while loop with a `trip_symbol` (scan outputs of
run-time length, returned by the model) stores its count in the entry's `dims` buffer when it
stops; its scan outputs have as many rows as the caller allocated (the symbol's value during
the run), and a row past them is clamped onto the last one: the caller sees the count, and
runs again with enough rows (runtime/symbolic_shapes.py).

Symbolic sizes: a value with symbols lives in a flat buffer of a run-time element count
(`fl.allocation`), is copied by a dynamic copy (`fl.copy(src, dst, value)`), and a scan output
`[count, *slice]` with a symbol in it is filled by a store-slice kernel taking its row count
and row size as index arguments; a counted loop over a size polynomial runs to that size. All
index arithmetic on the symbols (`fl.sizes`) is emitted in the function's block as the body is
built, so it comes before the scf op (emitted once the body is complete) and dominates every
use inside; plan-memory keeps each buffer a body uses, static or in the dynamic arena, live
from its allocation (before the scf op) through the scf op.

Run-time checks inside a body cannot return from the function as top-level ones do
(return-check-status). A failed check instead records its site + 1 in a "sticky" cell and
everything after it in its body is skipped (`scf.if`): a kernel that needs a check always
comes after it in the same block, so it never runs on refused data. Later iterations do
nothing (`scf.for`) or the loop stops (`scf.while`), and right after the top-level
control-flow op a small kernel turns the sticky cell into the status record's flag, which
return-check-status tests like any check, returning the recorded site.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import contextmanager

from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, i1, i64
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint

from onnxc.dialects import graph
from onnxc.dialects.entry_abi import CHECK_SITE_ATTR, NESTED_CHECKS_ATTR
from onnxc.dialects.graph import is_symbolic, shape_of
from onnxc.dialects.symbolic_dims import SymDim, num_elements
from onnxc.lowering.graph_to_loops.branches import when
from onnxc.lowering.graph_to_loops.checks import STATUS_TYPE
from onnxc.lowering.graph_to_loops.dynamic import COUNT_TYPE
from onnxc.lowering.graph_to_loops.loop_sizes import SoftLoop
from onnxc.lowering.graph_to_loops.loops import KernelBuilder

CONTROL_FLOW_OPS = graph.IfOp | graph.LoopOp

STICKY_TYPE = MemRefType(i64, [1])
"""The cell where a failed check inside a control-flow body records its site + 1."""


def lower_control_flow(fl, op: Operation) -> None:
    """Lower `op` where `fl` (a convert-graph-to-loops function lowering) emits."""
    for r in op.results:
        if r not in fl.buffers:
            alloc = fl.hoist(fl.allocation(r))
            alloc.name_hint = r.name_hint
            fl.buffers[r] = fl.bases[r] = alloc
    sites_before = len(fl.sites)
    if isinstance(op, graph.IfOp):
        _lower_if(fl, op)
    else:
        assert isinstance(op, graph.LoopOp)
        _lower_loop(fl, op)
    if len(fl.sites) == sites_before:
        return
    if fl.block is fl.top:
        _raise_recorded_failure(fl)
    else:
        guard_rest(fl, None)


# ------------------------------------------------------------------------------ checks


def _index(fl, value: int) -> SSAValue:
    return fl.emit(arith.ConstantOp(IntegerAttr(value, IndexType())))


def _sticky(fl) -> SSAValue:
    """The sticky cell, made (and zeroed, at the top level before the op being lowered)
    on first use."""
    if fl.sticky is None:
        fl.sticky = fl.hoist(memref.AllocOp([], [], STICKY_TYPE))
        fl.sticky.name_hint = "failed_site"
        zero = fl.hoist(arith.ConstantOp(IntegerAttr(0, i64)))
        at = fl.hoist(arith.ConstantOp(IntegerAttr(0, IndexType())))
        fl.top.add_op(memref.StoreOp.get(zero, fl.sticky, [at]))
    return fl.sticky


def _nothing_failed(fl) -> SSAValue:
    """i1: no check inside a control-flow body has failed in this run (yet)."""
    zero = fl.emit(arith.ConstantOp(IntegerAttr(0, i64)))
    return fl.emit(arith.CmpiOp(_load_one(fl, _sticky(fl)), zero, "eq"))


def guard_rest(fl, code: int | None) -> None:
    """Run the rest of the current body only if nothing failed: after a check call (which
    records `code` when its flag is set) or after a nested control-flow op with checks."""
    if code is not None:
        zero = fl.emit(arith.ConstantOp(IntegerAttr(0, i64)))
        flag = fl.emit(memref.LoadOp.get(fl.status_record(), [_index(fl, 0)]))
        bad = fl.emit(arith.CmpiOp(flag, zero, "ne"))
        value = arith.ConstantOp(IntegerAttr(code, i64))
        at = arith.ConstantOp(IntegerAttr(0, IndexType()))
        fl.emit(scf.IfOp(bad, [], [value, at, memref.StoreOp.get(value, _sticky(fl), [at]),
                                   scf.YieldOp()]))
        ok = fl.emit(arith.CmpiOp(flag, zero, "eq"))
    else:
        ok = _nothing_failed(fl)
    rest = Block()
    fl.emit(scf.IfOp(ok, [], Region(rest)))
    fl.guards.append(rest)
    if isinstance(fl.sizes, _BranchSizes) and fl.sizes.follows is fl.block:
        fl.sizes.follow(rest)  # the branch's sizes go where its kernels are called
    fl.block = rest


def _raise_recorded_failure(fl) -> None:
    """After a top-level control-flow op with checks inside: the status flag is set iff a
    check failed in it, and return-check-status returns the recorded site."""
    ins = [_sticky(fl), fl.status_record()]
    name = fl.mod.kernel("graph.nested_checks", ("nested_checks",), _nested_checks_kernel,
                         None, [STICKY_TYPE, STATUS_TYPE], [])
    call = func.CallOp(name, ins, [])
    call.attributes[CHECK_SITE_ATTR] = IntegerAttr(-1, i64)
    call.attributes[NESTED_CHECKS_ATTR] = IntegerAttr(0, i64)
    fl.emit(call)


def _nested_checks_kernel(op, kb: KernelBuilder, ins, outs) -> None:
    sticky, status = ins
    recorded = kb.load(sticky, [0])
    failed = kb.insert(arith.CmpiOp(recorded, kb.constant(0, i64), "ne"))
    kb.store(kb.insert(arith.ExtUIOp(failed, i64)), status, [0])


# ------------------------------------------------------------------------------ bodies


def _lower_body(fl, source: Block, into: Block, finish: Callable[[Sequence[SSAValue]], None]):
    """Lower the ops of `source` into `into`, then `finish(yielded values)` (their copies
    into state buffers), inside whatever check guards the body opened."""
    saved, guards = fl.block, len(fl.guards)
    fl.block = into
    yielded: Sequence[SSAValue] = ()
    for o in source.ops:
        if isinstance(o, graph.YieldOp):
            yielded = tuple(o.values)
        else:
            fl.lower_op(o)
    finish(yielded)
    while len(fl.guards) > guards:
        fl.guards.pop().add_op(scf.YieldOp())
    fl.block = saved


def _load_one(fl, buffer: SSAValue) -> SSAValue:
    """The single element of a one-element buffer."""
    assert isinstance(buffer.type, MemRefType)
    return fl.emit(memref.LoadOp.get(buffer, [_index(fl, 0) for _ in buffer.type.get_shape()]))


def _lower_if(fl, op: graph.IfOp) -> None:
    """Each branch copies what it yields into the result buffers. A result size the If
    defines (branches of different sizes) was allocated for its bound: the branch copies
    its value to the buffer's start and writes the size into a cell, which defines the run
    symbol after the scf.if (as a kernel's count does)."""
    targets = [fl.buffers[r] for r in op.results]
    defined = op.defined_positions()
    cells = {name: fl.hoist(memref.AllocOp([], [], COUNT_TYPE)) for name in defined}

    def finish(values: Sequence[SSAValue]) -> None:
        for v, t, r in zip(values, targets, op.results):
            fl.copy(fl.buffers[v], t, v if v.type != r.type else r)
        for name, (i, k) in defined.items():
            size = fl.sizes.idx(fl.sizes.dim(shape_of(values[i])[k]))
            fl.emit(memref.StoreOp.get(fl.emit(arith.IndexCastOp(size, i64)), cells[name],
                                       [_index(fl, 0)]))

    cond = _load_one(fl, fl.buffers[op.cond])
    branches = []
    for region in (op.then_region, op.else_region):
        block = Block()
        with _branch_sizes(fl, region, block):
            _lower_body(fl, region.block, block, finish)
        block.add_op(scf.YieldOp())
        branches.append(Region(block))
    fl.emit(scf.IfOp(cond, [], *branches))
    for name, cell in cells.items():
        fl.define_size(op, name, _load_one(fl, cell), cell)


class _BranchSizes(KernelBuilder):
    """Size arithmetic in an If branch that defines run symbols: at the end of the block
    its kernel calls go to (`follows`; a check guard opens a nested one)."""

    def __init__(self, block: Block):
        super().__init__(block)
        self.follows = block

    def follow(self, block: Block) -> None:
        self.follows, self.ip = block, InsertPoint.at_end(block)


@contextmanager
def _branch_sizes(fl, region: Region, block: Block):
    """A branch that defines run symbols (an NMS in it) computes sizes in its own block,
    from the values the symbols get there; the function's block keeps their capacities
    (fl.top_sizes, which sizes the buffers)."""
    if not any(graph.defined_sizes(o) for o in region.walk()):
        yield
        return
    saved_sizes, saved_symbols = fl.sizes, dict(fl.symbols)
    fl.sizes = _BranchSizes(block)
    fl.sizes.bind_symbols(dict(fl.symbols))
    try:
        yield
    finally:
        fl.sizes, fl.symbols = saved_sizes, saved_symbols


def _update_states(fl, targets: Sequence[SSAValue], values: Sequence[SSAValue],
                   states: Sequence[SSAValue]) -> None:
    """targets[k] = values[k] for all k at once: a value read from another state buffer
    goes through a temporary, so no copy reads a buffer an earlier copy overwrote.
    `states[k]`: the tensor targets[k] holds (the loop's result or condition), whose
    symbolic size sizes the temporary and the copies."""
    staged, direct = [], []
    for t, v, state in zip(targets, values, states):
        base = fl.bases.get(v)
        if base is t:
            continue  # carried through unchanged (or as a view of itself)
        if any(base is other for other in targets):
            if is_symbolic(state):
                temporary = fl.hoist(fl.allocation(state))
            else:
                temporary = fl.hoist(memref.AllocOp([], [], t.type))
            temporary.name_hint = "staged"
            fl.copy(fl.buffers[v], temporary, state)
            staged.append((temporary, t, state))
        else:
            direct.append((fl.buffers[v], t, state))
    for source, t, state in [*direct, *staged]:
        fl.copy(source, t, state)


def _store_slice(fl, value: SSAValue, iteration: SSAValue, stacked: SSAValue,
                 result: SSAValue) -> None:
    """Row `iteration` of `stacked` (the buffer of scan output `result`) = `value`."""
    if is_symbolic(result):
        _store_slice_dynamic(fl, value, iteration, stacked, result)
        return
    source = fl.buffers[value]
    rows = stacked.type.get_shape()[0]
    size = source.type.element_count()
    flat = MemRefType(source.type.get_element_type(), [size])
    table = MemRefType(source.type.get_element_type(), [rows, size])
    name = fl.mod.kernel("graph.store_slice", ("store_slice", flat, table), _store_slice_kernel,
                         None, [flat, iteration.type], [table])
    fl.emit(func.CallOp(name, [fl.view(source, [size]), iteration, fl.view(stacked, [rows, size])],
                        []))


def _store_slice_kernel(op, kb: KernelBuilder, ins, outs) -> None:
    source, iteration = ins
    (table,) = outs
    rows, size = table.type.get_shape()
    row = kb.insert(arith.IndexCastOp(kb.load(iteration, []), IndexType()))
    row = kb.imax(kb.imin(row, rows - 1), 0)  # never trust an index from memory
    kb.for_(0, size, lambda j: kb.store(kb.load(source, [j]), table, [row, j]))


def _store_slice_dynamic(fl, value: SSAValue, iteration: SSAValue, stacked: SSAValue,
                         result: SSAValue) -> None:
    """`_store_slice` for a scan output with a symbol in its row count or row size: both
    are index arguments of the kernel, computed in the function's block (fl.sizes)."""
    rows, *row = shape_of(result)
    count, size = (fl.sizes.idx(fl.sizes.dim(d)) for d in (rows, num_elements(row)))
    source = fl.buffers[value]
    if not is_symbolic(value):
        source = fl.view(source, [source.type.element_count()])
    table = stacked.type
    block = Block(arg_types=[source.type, iteration.type, table, IndexType(), IndexType()])
    name = fl.mod.kernel_from("graph.store_slice", ("store_slice", source.type, table),
                              _store_slice_dynamic_kernel, block)
    fl.emit(func.CallOp(name, [source, iteration, stacked, count, size], []))


def _store_slice_dynamic_kernel(op, kb: KernelBuilder, ins, outs) -> None:
    source, iteration, table, rows, size = kb.entry.args
    row = kb.insert(arith.IndexCastOp(kb.load(iteration, []), IndexType()))
    row = kb.imax(kb.imin(row, kb.isub(rows, 1)), 0)  # never trust an index from memory
    start = kb.imul(row, size)
    inside = kb.insert(arith.CmpiOp(row, rows, "slt"))  # no row at all when rows is 0
    when(kb, inside, lambda: kb.for_(
        0, size, lambda j: kb.store(kb.load(source, [j]), table, [kb.iadd(start, j)])))


def _lower_loop(fl, op: graph.LoopOp) -> None:
    n = op.carried
    carried = [fl.buffers[r] for r in op.results[:n]]
    stacked = [fl.buffers[r] for r in op.results[n:]]
    for init, target, r in zip(op.initial, carried, op.results[:n]):
        fl.copy(fl.buffers[init], target, r)
    iteration = fl.hoist(memref.AllocOp([], [], MemRefType(i64, [])))
    iteration.name_hint = "iteration"
    cond = fl.hoist(memref.AllocOp([], [], MemRefType(i1, [])))
    cond.name_hint = "cond"
    fl.copy(fl.buffers[op.condition], cond)
    args = op.body.block.args
    for arg, buffer in zip(args, [iteration, cond, *carried]):
        fl.buffers[arg] = fl.bases[arg] = buffer
    counted = op.iteration_count() is not None

    def finish(values: Sequence[SSAValue]) -> None:
        # Slices first: one may be a carried value as this iteration received it (its
        # state buffer), which the update below overwrites.
        def store() -> None:
            for v, target, r in zip(values[1 + n:], stacked, op.results[n:]):
                _store_slice(fl, v, iteration, target, r)

        if fl.soft is not None and fl.soft.op is op:
            fl.soft.when_all_fit(fl, store)
        else:
            store()
        states = list(op.results[:n])
        if counted:  # the condition stays true: only the carried values change
            _update_states(fl, carried, values[1:1 + n], states)
        else:
            _update_states(fl, [cond, *carried], values[:1 + n], [op.condition, *states])

    if not counted:
        _emit_while(fl, op, iteration, cond, finish)
        return
    soft = SoftLoop.of(fl, op)
    saved, fl.soft = fl.soft, soft
    try:
        _emit_for(fl, op, iteration, finish)
    finally:
        fl.soft = saved
    if soft is not None:
        soft.finish(fl, _sticky(fl))


def _emit_for(fl, op: graph.LoopOp, iteration: SSAValue,
              finish: Callable[[Sequence[SSAValue]], None]) -> None:
    """A loop of known count: `scf.for`, its body skipped once a check in it failed."""
    sites_before = len(fl.sites)
    body = Block(arg_types=[IndexType()])
    inner = Block()
    with _branch_sizes(fl, op.body, inner):
        if fl.soft is not None:
            saved, fl.block = fl.block, inner
            fl.soft.start_iteration(fl)
            fl.block = saved
        _lower_body(fl, op.body.block, inner, finish)
    saved, fl.block = fl.block, body
    fl.emit(memref.StoreOp.get(fl.emit(arith.IndexCastOp(body.args[0], i64)), iteration, []))
    if len(fl.sites) > sites_before:  # once a check failed, later iterations do nothing
        inner.add_op(scf.YieldOp())
        fl.emit(scf.IfOp(_nothing_failed(fl), [], Region(inner)))
    else:
        for o in list(inner.ops):
            o.detach()
            body.add_op(o)
    body.add_op(scf.YieldOp())
    fl.block = saved
    count = op.iteration_count()
    if isinstance(count, SymDim):  # the run's size, computed in the function's block
        upper = fl.sizes.idx(fl.sizes.dim(count))
    else:
        upper = _index(fl, count)
    bounds = [_index(fl, 0), upper, _index(fl, 1)]
    fl.emit(scf.ForOp(*bounds, [], Region(body)))


def _emit_while(fl, op: graph.LoopOp, iteration: SSAValue, cond: SSAValue,
                finish: Callable[[Sequence[SSAValue]], None]) -> None:
    """Any other loop: `scf.while` i < trip count and the condition holds (and no check in
    it failed)."""
    sites_before = len(fl.sites)
    after = Block(arg_types=[i64])
    saved, fl.block = fl.block, after
    fl.emit(memref.StoreOp.get(after.args[0], iteration, []))
    step = fl.emit(arith.ConstantOp(IntegerAttr(1, i64)))
    following = fl.emit(arith.AddiOp(after.args[0], step))
    fl.block = saved
    with _branch_sizes(fl, op.body, after):
        _lower_body(fl, op.body.block, after, finish)
    after.add_op(scf.YieldOp(following))

    before = Block(arg_types=[i64])
    fl.block = before
    go = fl.emit(arith.CmpiOp(before.args[0], _load_one(fl, fl.buffers[op.max_trips]), "slt"))
    go = fl.emit(arith.AndIOp(go, _load_one(fl, cond)))
    if len(fl.sites) > sites_before:  # stop once a check failed
        go = fl.emit(arith.AndIOp(go, _nothing_failed(fl)))
    fl.emit(scf.ConditionOp(go, before.args[0]))
    fl.block = saved
    start = fl.emit(arith.ConstantOp(IntegerAttr(0, i64)))
    loop = fl.emit(scf.WhileOp([start], [i64], Region(before), Region(after)))
    if op.trip_symbol is not None:  # the count: a run symbol (entry_abi.RUN_SYMBOLS_ATTR)
        fl.define_size(op, op.trip_symbol.data, loop)

__all__ = ["CONTROL_FLOW_OPS", "guard_rest", "lower_control_flow"]
