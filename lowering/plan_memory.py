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
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    i8,
)
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from onnxc.dialects.entry_abi import (
    ARENA_BYTES_ATTR,
    DIMS_ARGUMENT_ATTR,
    DYNAMIC_ARENA_ATTR,
    ELEMENTS_ATTR,
    INPLACE_BYTES_ATTR,
    INTERMEDIATE_BYTES_ATTR,
    SYMBOLS_ATTR,
    append_argument,
    entry_function,
    string_list,
)
from onnxc.dialects.size_text import parse_dim
from onnxc.lowering.graph_to_loops.loops import KernelBuilder
from onnxc.pass_manager.verifier import origin_of
from onnxc.resource_limits import check_allocation, format_bytes, max_alloc_bytes

ALIGNMENT = 64
"""Byte alignment of every buffer in the arena: one cache line, one AVX-512 vector."""

_VIEW_OPS = (memref.ReinterpretCastOp, memref.CastOp, memref.ViewOp)


def element_size(t: MemRefType) -> int:
    """Bytes of one element; i1 is stored as one byte, like numpy's bool."""
    return max(1, (getattr(t.get_element_type(), "bitwidth", 8) + 7) // 8)


def byte_size(t: MemRefType) -> int:
    """Bytes of a static memref."""
    return t.element_count() * element_size(t)


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


def dynamic_slots(sizes: list[str], starts: list[int], ends: list[int]) -> tuple[list[str], list[int]]:
    """Slots of the dynamic arena for buffers of symbolic byte sizes (polynomials, as text),
    live from starts[i] to ends[i]: a buffer reuses a slot of the same polynomial (the same
    size for every run) whose last occupant is dead; sizes of different polynomials are not
    comparable at compile time, so they never share. Returns (slot sizes, slot of each)."""
    slots: list[str] = []
    free_after: list[int] = []
    assigned = [-1] * len(sizes)
    for i in sorted(range(len(sizes)), key=lambda i: starts[i]):
        slot = next((k for k, (size, end) in enumerate(zip(slots, free_after))
                     if size == sizes[i] and end < starts[i]), None)
        if slot is None:
            slots.append(sizes[i])
            free_after.append(ends[i])
            slot = len(slots) - 1
        free_after[slot] = max(free_after[slot], ends[i])
        assigned[i] = slot
    return slots, assigned


def place_dynamic(entry, allocs: list[memref.AllocOp], position: dict[Operation, int]) -> None:
    """Buffers with symbolic sizes become views of a dynamic arena (the entry's last
    argument, `memref<?xi8>`), at offsets the entry computes from the symbols' values."""
    sizes, starts, ends = [], [], []
    for o in allocs:
        t = o.memref.type
        elements = o.attributes.get(ELEMENTS_ATTR)
        assert isinstance(t, MemRefType) and isinstance(elements, StringAttr)
        sizes.append(str(parse_dim(elements.data) * element_size(t)))
        first = min((position.get(u.operation, position[o]) for u in o.memref.uses),
                    default=position[o])
        starts.append(first)
        ends.append(max(last_use(o.memref, position), first))
    slots, assigned = dynamic_slots(sizes, starts, ends)

    symbols = string_list(entry, SYMBOLS_ATTR)
    block = entry.body.block
    position_attr = entry.attributes[DIMS_ARGUMENT_ATTR]
    assert isinstance(position_attr, IntegerAttr)
    dims_arg = block.args[position_attr.value.data]
    prologue = Block()
    kb = KernelBuilder(prologue)
    values = {}
    for k, name in enumerate(symbols):
        loaded = kb.insert(memref.LoadOp.get(dims_arg, [kb.idx(k)]))
        values[name] = kb.insert(arith.IndexCastOp(loaded, IndexType()))
    kb.bind_symbols(values)
    offsets: list[SSAValue] = []
    cursor: int | SSAValue = 0
    for size in slots:
        offsets.append(kb.idx(cursor))
        end = kb.iadd(cursor, kb.dim(parse_dim(size)))
        cursor = kb.imul(kb.idiv(kb.iadd(end, ALIGNMENT - 1), ALIGNMENT), ALIGNMENT)
    ops = list(prologue.ops)
    for o in ops:
        o.detach()
    Rewriter.insert_op(ops, InsertPoint.at_start(block))

    arena = append_argument(entry, MemRefType(i8, [DYNAMIC_INDEX]), "dynamic_arena")
    rewriter = Rewriter()
    for o, slot in zip(allocs, assigned):
        view = memref.ViewOp(arena, offsets[slot], list(o.dynamic_sizes), o.memref.type)
        rewriter.insert_op(view, InsertPoint.before(o))
        o.memref.replace_all_uses_with(view.result)
        rewriter.erase_op(o)
    entry.attributes[DYNAMIC_ARENA_ATTR] = ArrayAttr([StringAttr(s) for s in slots])


@dataclass(frozen=True)
class PlanMemoryPass(ModulePass):
    """Replace the entry function's allocations by views into one liveness-planned arena."""

    name = "plan-memory"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        entry = entry_function(op)
        block = entry.body.block
        position = {o: i for i, o in enumerate(block.ops)}
        buffers = []
        dynamic = []
        for o in block.ops:
            if isinstance(o, memref.AllocOp) and o.dynamic_sizes:
                dynamic.append(o)
            elif isinstance(o, memref.AllocOp):
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
        if dynamic:
            place_dynamic(entry, dynamic, position)
