"""`plan-memory`: one arena for all intermediates of the entry function, sized by liveness.

Every `memref.alloc` in the entry function becomes a `memref.view` at a fixed byte offset of
a single `memref<Nxi8>` arena, which is appended as the entry function's last argument: the
runtime allocates it once per compiled model. Two buffers share bytes only when their
lifetimes (first to last use, following reshape views) do not overlap. The plan is a greedy
best-fit over buffers sorted by size, the usual heuristic of static memory planners. An arena
larger than onnxc may allocate (onnxc.resource_limits) is a ResourceLimitError here, at
compile time.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, ModuleOp, i8
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from onnxc.lowering.entry_abi import (
    ARENA_BYTES_ATTR,
    INPLACE_BYTES_ATTR,
    INTERMEDIATE_BYTES_ATTR,
    append_argument,
    entry_function,
)
from onnxc.lowering.pass_verifier import origin_of
from onnxc.resource_limits import check_allocation, format_bytes, max_alloc_bytes

ALIGNMENT = 64
"""Byte alignment of every buffer in the arena: one cache line, one AVX-512 vector."""

_VIEW_OPS = (memref.ReinterpretCastOp, memref.CastOp, memref.ViewOp)


def byte_size(t: MemRefType) -> int:
    """Bytes of a static memref; i1 is stored as one byte, like numpy's bool."""
    width = getattr(t.get_element_type(), "bitwidth", 8)
    return t.element_count() * max(1, (width + 7) // 8)


@dataclass
class _Buffer:
    alloc: memref.AllocOp
    size: int
    start: int
    end: int
    offset: int = -1


def last_use(value: SSAValue, position: dict[Operation, int]) -> int:
    """Index of the last op in the entry block that reads `value` or a view of it (a use
    nested in a region counts at its top-level op)."""
    last = -1
    for use in value.uses:
        user = use.operation
        while user.parent_op() is not None and user not in position:
            user = user.parent_op()  # a use nested in a region counts at its top-level op
        if user not in position:
            continue
        last = max(last, position[user])
        if isinstance(user, _VIEW_OPS):
            for r in user.results:
                last = max(last, last_use(r, position))
    return last


def plan_offsets(buffers: list[_Buffer]) -> int:
    """Assign offsets so that live-overlapping buffers never share bytes; return arena size."""
    placed: list[_Buffer] = []
    for buf in sorted(buffers, key=lambda b: (-b.size, b.start)):
        conflicts = sorted(
            (p for p in placed if p.start <= buf.end and buf.start <= p.end),
            key=lambda p: p.offset,
        )
        best, best_gap, cursor = None, None, 0
        for p in conflicts:
            gap = p.offset - cursor
            if gap >= buf.size and (best_gap is None or gap < best_gap):
                best, best_gap = cursor, gap
            cursor = max(cursor, _align(p.offset + p.size))
        buf.offset = best if best is not None else cursor
        placed.append(buf)
    return _align(max((b.offset + b.size for b in placed), default=0))


def _check_arena(arena_size: int, buffers: list[_Buffer]) -> None:
    """ResourceLimitError when the arena is larger than onnxc may allocate (each tensor was
    checked at import, but many can be live at once), naming its largest buffer's node."""
    if arena_size <= max_alloc_bytes():
        return
    largest = max(buffers, key=lambda b: b.size)
    origin = origin_of(largest.alloc) or "an unnamed value"
    check_allocation(arena_size, f"the arena of intermediate tensors ({len(buffers)} buffers; "
                                 f"the largest, {format_bytes(largest.size)}, for {origin})")


def _align(n: int) -> int:
    return (n + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT


@dataclass(frozen=True)
class PlanMemoryPass(ModulePass):
    """Replace the entry function's allocations by views into one liveness-planned arena."""

    name = "plan-memory"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        entry = entry_function(op)
        block = entry.body.block
        position = {o: i for i, o in enumerate(block.ops)}
        buffers = []
        for o in block.ops:
            if isinstance(o, memref.AllocOp):
                t = o.memref.type
                assert isinstance(t, MemRefType)
                first = min((position.get(u.operation, position[o]) for u in o.memref.uses),
                            default=position[o])
                last = max(last_use(o.memref, position), first)
                buffers.append(_Buffer(o, byte_size(t), first, last))
        arena_size = plan_offsets(buffers)
        _check_arena(arena_size, buffers)
        total = sum(b.size for b in buffers)
        if isinstance(merged := entry.attributes.get(INPLACE_BYTES_ATTR), IntegerAttr):
            total += merged.value.data  # results that `inplace` wrote over their inputs

        arena_type = MemRefType(i8, [max(arena_size, ALIGNMENT)])
        arena = append_argument(entry, arena_type, "arena")

        rewriter = Rewriter()
        for buf in buffers:
            offset = arith.ConstantOp(IntegerAttr(buf.offset, IndexType()))
            view = memref.ViewOp(arena, offset, [], buf.alloc.memref.type)
            rewriter.insert_op([offset, view], InsertPoint.before(buf.alloc))
            buf.alloc.memref.replace_all_uses_with(view.result)
            rewriter.erase_op(buf.alloc)
        for o in list(block.ops):
            if isinstance(o, memref.DeallocOp):
                rewriter.erase_op(o)

        entry.attributes[ARENA_BYTES_ATTR] = IntegerAttr(arena_type.get_shape()[0], 64)
        entry.attributes[INTERMEDIATE_BYTES_ATTR] = IntegerAttr(total, 64)
