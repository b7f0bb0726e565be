"""Conditionals in a kernel, built at a `KernelBuilder`'s insertion point as `scf.if`.

A condition is an `i1` value, or a Python bool when it is known while the kernel is built
(a k-block that is statically the first or the last, lowering/graph_to_loops/k_blocks.py):
then no `scf.if` is built, only the branch taken.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects import arith, scf
from xdsl.ir import Block, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder

Condition = bool | SSAValue


def when(kb: KernelBuilder, cond: Condition, body: Callable[[], None]) -> None:
    """`scf.if cond { body() }`."""
    if isinstance(cond, bool):
        if cond:
            body()
        return
    block = Block()
    saved, kb.ip = kb.ip, InsertPoint.at_end(block)
    body()
    Rewriter.insert_op(scf.YieldOp(), kb.ip)
    kb.ip = saved
    kb.insert(scf.IfOp(cond, [], Region(block)))


def unless(kb: KernelBuilder, cond: Condition, body: Callable[[], None]) -> None:
    """`scf.if cond {} else { body() }`."""
    if isinstance(cond, bool):
        if not cond:
            body()
        return

    def otherwise() -> list[SSAValue]:
        body()
        return []

    choose(kb, cond, list, otherwise)


def choose(kb: KernelBuilder, cond: Condition, then: Callable[[], Sequence[SSAValue]],
           otherwise: Callable[[], Sequence[SSAValue]]) -> list[SSAValue]:
    """`scf.if cond -> (then()) else (otherwise())`: the values of the branch taken."""
    if isinstance(cond, bool):
        return list(then() if cond else otherwise())
    blocks = []
    saved = kb.ip
    for branch in (then, otherwise):
        block = Block()
        kb.ip = InsertPoint.at_end(block)
        Rewriter.insert_op(scf.YieldOp(*branch()), kb.ip)
        blocks.append(block)
    kb.ip = saved
    assert blocks[0].last_op is not None
    types = [v.type for v in blocks[0].last_op.operands]
    op = scf.IfOp(cond, types, Region(blocks[0]), Region(blocks[1]))
    kb.insert(op)
    return list(op.results)


def each_remainder(kb: KernelBuilder, rem: Index, mr: int, fn: Callable[[int], None]) -> None:
    """`fn(rem)` for a remainder `rem` in [0, mr) of rows (nothing for 0): a static one
    directly; a run-time one by one `scf.if` per possible value, so that each row count
    gets the code a static remainder would (a register tile of that many rows)."""
    rem = kb.index(rem)
    if isinstance(rem, int):
        if rem:
            fn(rem)
        return
    for r in range(1, mr):
        when(kb, kb.insert(arith.CmpiOp(rem, kb.idx(r), "eq")), lambda r=r: fn(r))
