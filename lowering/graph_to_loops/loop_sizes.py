"""Run sizes defined in a loop body: one value per iteration, measured over all iterations.

A run symbol defined inside a loop body (Resize sizes computed from each box) takes a new
value every iteration. Its buffers are allocated once, before the loop, for its bound or
its capacity (lowering/graph_to_loops/dynamic.py); the body's sizes are computed in the
body from the value of the iteration (control_flow._branch_sizes). An iteration whose size
outgrew its capacity stops the run, and the runtime runs the model again with room.

Run again once per size that outgrew its room, a loop of many different sizes would
re-run the whole model many times on its first call. A counted loop at the top level whose
iterations are independent (no carried values: each reads only its number and values from
before the loop) instead goes on measuring (`SoftLoop`): when a size outgrows its room, the
kernels that depend on it in that iteration are skipped (a kernel depends on a size when
its types name it, or its operands come from such a kernel), the others still run, and
every later iteration runs as usual. Each size's largest value goes to its `dims` entry,
and after the loop the first overflow stops the run as a failed capacity check would; the
runtime grows every size whose `dims` entry came out past its capacity at once
(runtime/compiled_model.py). A skipped kernel's sizes count as outgrown in its iteration,
so nothing runs on data it did not write.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, i8, i64
from xdsl.ir import Block, Operation, Region, SSAValue

from onnxc.dialects import graph
from onnxc.dialects.graph_checks import onnx_node_of
from onnxc.dialects.graph_dynamic import defined_sizes

_CONTROL = (graph.IfOp, graph.LoopOp)


def _index(fl, value: int) -> SSAValue:
    return fl.emit(arith.ConstantOp(IntegerAttr(value, IndexType())))


class SoftLoop:
    """The sizes of one loop body that go on being measured past their capacity."""

    def __init__(self, fl, op: graph.LoopOp, deps: dict[Operation, set[str]], local: list[str]):
        self.op = op
        self.deps = deps
        self.local = local
        self.position = {name: k for k, name in enumerate(local)}
        self.bad = fl.hoist(memref.AllocOp([], [], MemRefType(i8, [len(local)])))
        self.bad.name_hint = "outgrown"
        self.overflow = fl.hoist(memref.AllocOp([], [], MemRefType(i64, [2])))
        self.overflow.name_hint = "first_overflow"  # [site + 1, size], or [0, _]
        fl.emit(memref.StoreOp.get(fl.emit(arith.ConstantOp(IntegerAttr(0, i64))),
                                   self.overflow, [_index(fl, 0)]))

    @staticmethod
    def of(fl, op: graph.LoopOp) -> SoftLoop | None:
        """The soft form of loop `op`, when it has one: counted, at the top level, without
        carried values, its run symbols defined by ops of its body's own block, and no
        nested control flow that depends on them."""
        from onnxc.lowering.graph_to_loops.module_kernels import symbols_of_op

        if fl.block is not fl.top or op.carried or op.iteration_count() is None:
            return None
        body = op.body.block
        local = [n for o in body.ops for n in defined_sizes(o)]
        nested = {n for o in body.walk() if o.parent_block() is not body
                  for n in defined_sizes(o)}
        nested |= {o.trip_symbol.data for o in body.walk()
                   if isinstance(o, graph.LoopOp) and o.trip_symbol is not None}
        if not local or nested:
            return None
        names = set(local)
        deps: dict[Operation, set[str]] = {}
        for o in body.ops:
            own: set[str] = set()
            for inner in o.walk():
                own |= symbols_of_op(inner) & names
                own.update(*(deps.get(v.owner, ()) for v in inner.operands))  # type: ignore
            own -= set(defined_sizes(o))
            if own and isinstance(o, _CONTROL):
                return None
            deps[o] = own
        return SoftLoop(fl, op, deps, local)

    def start_iteration(self, fl) -> None:
        """No size of this iteration has outgrown its room yet."""
        zero = fl.emit(arith.ConstantOp(IntegerAttr(0, i8)))
        for k in range(len(self.local)):
            fl.emit(memref.StoreOp.get(zero, self.bad, [_index(fl, k)]))

    def guarded(self, op: Operation) -> bool:
        return bool(self.deps.get(op))

    def _good(self, fl, names) -> SSAValue:
        """i1: none of `names` outgrew its room this iteration."""
        flags = [fl.emit(memref.LoadOp.get(self.bad, [_index(fl, self.position[n])]))
                 for n in sorted(names)]
        any_bad = flags[0]
        for flag in flags[1:]:
            any_bad = fl.emit(arith.OrIOp(any_bad, flag))
        return fl.emit(arith.CmpiOp(any_bad, fl.emit(arith.ConstantOp(IntegerAttr(0, i8))),
                                    "eq"))

    def when_all_fit(self, fl, body: Callable[[], None]) -> None:
        """`body()` (the iteration's stores into the loop's results) only when every size of
        the iteration fitted: a value of a skipped kernel is not stored (its buffer may be
        smaller than its type says)."""
        block = Block()
        good = self._good(fl, self.local)
        saved, fl.block = fl.block, block
        body()
        fl.block = saved
        block.add_op(scf.YieldOp())
        fl.emit(scf.IfOp(good, [], Region(block)))

    def emit_call(self, fl, op: Operation, call: func.CallOp, cells: list[SSAValue]) -> None:
        """`call` (op's kernel) only when none of the sizes it depends on outgrew its room
        this iteration; skipped, the sizes it defines count as outgrown, their cells
        holding their capacities."""
        good = self._good(fl, self.deps[op])
        run = Block()
        run.add_ops([call, scf.YieldOp()])
        skip = Block()
        one = arith.ConstantOp(IntegerAttr(1, i8))
        zero = arith.ConstantOp(IntegerAttr(0, IndexType()))
        skip.add_ops([one, zero])
        for name, cell in zip(defined_sizes(op), cells):
            at = arith.ConstantOp(IntegerAttr(self.position[name], IndexType()))
            capacity = arith.IndexCastOp(fl.symbols[name], i64)
            skip.add_ops([at, memref.StoreOp.get(one, self.bad, [at]), capacity,
                          memref.StoreOp.get(capacity, cell, [zero])])
        skip.add_op(scf.YieldOp())
        fl.emit(scf.IfOp(good, [], Region(run), Region(skip)))

    def define(self, fl, op: Operation, name: str, count: SSAValue) -> None:
        """Size `name` came out `count` (i64) this iteration: outgrown when past its
        capacity (the first overflow is recorded for the failure after the loop), and its
        `dims` entry the largest value so far."""
        capacity = fl.emit(arith.IndexCastOp(fl.symbols[name], i64))
        over = fl.emit(arith.CmpiOp(count, capacity, "sgt"))
        fl.sites.append({"kind": "capacity", "node": onnx_node_of(op) or "",
                         "op_type": op.name, "operand": name})
        site = len(fl.sites)
        at = _index(fl, self.position[name])
        flag = fl.emit(arith.ExtUIOp(over, i8))
        old = fl.emit(memref.LoadOp.get(self.bad, [at]))
        fl.emit(memref.StoreOp.get(fl.emit(arith.OrIOp(old, flag)), self.bad, [at]))
        first = _index(fl, 0)
        recorded = fl.emit(memref.LoadOp.get(self.overflow, [first]))
        fresh = fl.emit(arith.CmpiOp(recorded, fl.emit(arith.ConstantOp(IntegerAttr(0, i64))),
                                     "eq"))
        record = Block()
        code = arith.ConstantOp(IntegerAttr(site, i64))
        zero, one = (arith.ConstantOp(IntegerAttr(k, IndexType())) for k in (0, 1))
        record.add_ops([code, zero, one, memref.StoreOp.get(code, self.overflow, [zero]),
                        memref.StoreOp.get(count, self.overflow, [one]), scf.YieldOp()])
        fl.emit(scf.IfOp(fl.emit(arith.AndIOp(over, fresh)), [], Region(record)))
        position = _index(fl, fl.symbol_order.index(name))
        largest = fl.emit(arith.MaxSIOp(fl.emit(memref.LoadOp.get(fl.dims, [position])), count))
        fl.emit(memref.StoreOp.get(largest, fl.dims, [position]))

    def finish(self, fl, sticky: SSAValue) -> None:
        """After the loop: a size that outgrew its room stops the run as a failed capacity
        check (its site in the sticky cell, the size in the status record), ahead of any
        other failure (the run is repeated with room, and then meets that one)."""
        recorded = fl.emit(memref.LoadOp.get(self.overflow, [_index(fl, 0)]))
        over = fl.emit(arith.CmpiOp(recorded, fl.emit(arith.ConstantOp(IntegerAttr(0, i64))),
                                    "ne"))
        status = fl.status_record()
        block = Block()
        zero, one, two = (arith.ConstantOp(IntegerAttr(k, IndexType())) for k in (0, 1, 2))
        size = memref.LoadOp.get(self.overflow, [one])
        nothing = arith.ConstantOp(IntegerAttr(0, i64))
        block.add_ops([zero, one, two, size, nothing,
                       memref.StoreOp.get(recorded, sticky, [zero]),
                       memref.StoreOp.get(nothing, status, [one]),
                       memref.StoreOp.get(size, status, [two]), scf.YieldOp()])
        fl.emit(scf.IfOp(over, [], Region(block)))


__all__ = ["SoftLoop"]
