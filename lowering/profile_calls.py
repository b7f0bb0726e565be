"""`profile-kernel-calls`: time every kernel call of the entry function (`profile=True`).

The last entry-ABI pass when a model is compiled with `profile=True` (pipeline.compile_passes;
never otherwise, so a model compiled without it has the same IR as before). Each call site
gets two i64 counters, (ticks, calls), in a block appended to the arena after plan-memory's
buffers, so no intermediate ever shares their bytes and each of the runtime's arenas (one
per concurrent run) keeps its own; the entry's own time is the last pair:

    func.call @conv_0(%x, %w, %y) : (...) -> ()
  becomes
    %t0 = func.call @llvm.readcyclecounter() : () -> i64
    func.call @conv_0(%x, %w, %y) : (...) -> ()
    %t1 = func.call @llvm.readcyclecounter() : () -> i64
    %d = arith.subi %t1, %t0 : i64
    %ticks = memref.load %counters[%c3, %c0] ...   (+ %d, stored back; calls + 1 likewise)

The counter is LLVM's `llvm.readcyclecounter` (rdtsc on x86-64: ~20 cycles, no call, no
libc symbol for the JIT or an artifact to resolve); on AArch64 that intrinsic reads
PMCCNTR_EL0, which Linux does not let user code read, so there it is
`llvm.readsteadycounter` (CNTVCT_EL0). Both tick at a constant rate, which the runtime
measures once per process (runtime/profile.py). A kernel's parallel loops run inside its
call, so its ticks are wall time on the calling thread.

Each site is described in `onnxc.profile_sites` (kernel, op, ONNX node, input and output
types) and the counters' byte offset is `onnxc.profile_offset`; the runtime reads them as
the ModelABI's `profile`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    NameLoc,
    StringAttr,
    i8,
    i64,
)
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from onnxc.dialects.entry_abi import entry_function, string_list
from onnxc.dialects.onnxc_attributes import (
    ARENA_BYTES_ATTR,
    CHECK_OPERANDS_ATTR,
    CHECK_SITE_ATTR,
    INPUT_NAMES_ATTR,
    KERNEL_ATTR,
    OUTPUT_NAMES_ATTR,
    PROFILE_OFFSET_ATTR,
    PROFILE_SITES_ATTR,
)
from onnxc.errors import LoweringError
from onnxc.lowering.plan_memory import ALIGNMENT
from onnxc.target import target_of

COUNTER_BYTES = 16
"""Per site: ticks and calls, two i64 (runtime/profile.py reads them)."""

_VIEWS = (memref.ReinterpretCastOp, memref.CastOp, memref.SubviewOp,
          memref.CollapseShapeOp, memref.ExpandShapeOp)


def counter_intrinsic(arch: str) -> str:
    """The LLVM intrinsic read around each call on `arch` (see the module docstring)."""
    return "llvm.readsteadycounter" if arch in ("aarch64", "arm64") else "llvm.readcyclecounter"


@dataclass(frozen=True)
class ProfileKernelCallsPass(ModulePass):
    """Count ticks and calls of every kernel call of the entry in the arena."""

    name = "profile-kernel-calls"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        entry = entry_function(op)
        size = entry.attributes.get(ARENA_BYTES_ATTR)
        if not isinstance(size, IntegerAttr):
            raise LoweringError("profile-kernel-calls: runs after plan-memory (no arena)")
        arena_bytes = size.value.data
        block = entry.body.blocks[0]
        arena = next((a for a in reversed(block.args)
                      if a.type == MemRefType(i8, [arena_bytes])), None)
        if arena is None:
            raise LoweringError("profile-kernel-calls: the entry has no arena argument")
        calls = [o for o in entry.walk() if isinstance(o, func.CallOp)]
        functions = {f.sym_name.data: f for f in op.ops if isinstance(f, func.FuncOp)}
        clock = counter_intrinsic(target_of(op).arch)
        if clock not in functions:
            op.body.block.add_op(func.FuncOp.external(clock, [], [i64]))

        offset = -(-arena_bytes // ALIGNMENT) * ALIGNMENT
        rows = len(calls) + 1  # the last: the entry itself
        grown = -(-(offset + rows * COUNTER_BYTES) // ALIGNMENT) * ALIGNMENT
        arena = Rewriter.replace_value_with_new_type(arena, MemRefType(i8, [grown]))
        outputs = entry.function_type.outputs.data
        entry.function_type = FunctionType.from_lists([a.type for a in block.args], outputs)

        at = arith.ConstantOp(IntegerAttr(offset, IndexType()))
        counters = memref.ViewOp(arena, at, [], MemRefType(i64, [rows, 2]))
        counters.result.name_hint = "profile"
        start = func.CallOp(clock, [], [i64])
        prologue: list[Operation] = [at, counters, start]
        index = [arith.ConstantOp(IntegerAttr(0, IndexType())),
                 arith.ConstantOp(IntegerAttr(1, IndexType()))]
        one = arith.ConstantOp(IntegerAttr(1, i64))
        Rewriter.insert_op([*prologue, *index, one], InsertPoint.at_start(block))
        timer = _Timer(clock, counters.result, [c.result for c in index], one.result)

        sites = _Sites(entry, calls)
        for row, call in enumerate(calls):
            sites.describe(row, call, functions.get(call.callee.root_reference.data))
            before = func.CallOp(clock, [], [i64])
            Rewriter.insert_op(before, InsertPoint.before(call))
            Rewriter.insert_op(timer.add(row, before.res[0]), InsertPoint.after(call))
        for b in entry.body.blocks:
            if isinstance(b.last_op, func.ReturnOp):
                Rewriter.insert_op(timer.add(rows - 1, start.res[0]),
                                   InsertPoint.before(b.last_op))

        entry.attributes[ARENA_BYTES_ATTR] = IntegerAttr(grown, 64)
        entry.attributes[PROFILE_OFFSET_ATTR] = IntegerAttr(offset, i64)
        entry.attributes[PROFILE_SITES_ATTR] = ArrayAttr(sites.rows)


@dataclass
class _Timer:
    """The ops that add the ticks since `since` and one call to a site's counters."""

    clock: str
    counters: SSAValue
    index: list[SSAValue]
    one: SSAValue

    def add(self, row: int, since: SSAValue) -> list[Operation]:
        now = func.CallOp(self.clock, [], [i64])
        ticks = arith.SubiOp(now.res[0], since)
        site = arith.ConstantOp(IntegerAttr(row, IndexType()))
        ops: list[Operation] = [now, ticks, site]
        for column, amount in ((self.index[0], ticks.result), (self.index[1], self.one)):
            old = memref.LoadOp.get(self.counters, [site.result, column])
            new = arith.AddiOp(old.res, amount)
            ops += [old, new, memref.StoreOp.get(new.result, self.counters,
                                                 [site.result, column])]
        return ops


class _Sites:
    """Each call's description: kernel, op, node and its input and output types. Kernels
    take their results last, in destination style: a call's outputs are the entry's outputs
    and the arena buffers it writes first that a later call reads; one it writes first and
    nothing reads after is its scratch (not shown), nor are rank-0 cells and sizes or the
    checks' status record. A result written over its input (in place) is its last buffer.
    Inside control flow (a Loop's body) the split is approximate."""

    def __init__(self, entry: func.FuncOp, calls: list[func.CallOp]):
        n_in = len(string_list(entry, INPUT_NAMES_ATTR))
        n_out = len(string_list(entry, OUTPUT_NAMES_ATTR))
        self.outputs = set(entry.body.blocks[0].args[n_in:n_in + n_out])
        self.last: dict[SSAValue, int] = {}
        """each buffer's last call"""
        self.status: set[SSAValue] = set()
        """the run-time checks' status record (return-check-status), not shown"""
        for i, call in enumerate(calls):
            for value in _buffers(call):
                self.last[_root(value)] = i
            if CHECK_SITE_ATTR in call.attributes:
                positions = call.attributes.get(CHECK_OPERANDS_ATTR)
                at = (positions.data[1].value.data  # type: ignore[attr-defined]
                      if isinstance(positions, ArrayAttr) else len(call.arguments) - 1)
                self.status.add(_root(call.arguments[at]))
        self.seen: set[SSAValue] = set()
        self.rows: list[DictionaryAttr] = []

    def describe(self, i: int, call: func.CallOp, callee: func.FuncOp | None) -> None:
        inputs, outputs = [], []
        over = False  # whether the last buffer is an intermediate it reads
        for value in _buffers(call):
            root = _root(value)
            if root in self.status:
                continue
            view = isinstance(root.owner, memref.ViewOp)
            over = False
            if root in self.outputs:
                outputs.append(value.type)
            elif root in self.seen or not view:
                inputs.append(value.type)
                over = view
            elif self.last[root] > i:
                outputs.append(value.type)
            self.seen.add(root)
        if not outputs and over:
            outputs.append(inputs.pop())  # written in place over its last input
        kernel = callee.attributes.get(KERNEL_ATTR) if callee is not None else None
        node = call.location.desc.data if isinstance(call.location, NameLoc) else ""
        self.rows.append(DictionaryAttr({
            "kernel": StringAttr(call.callee.root_reference.data),
            "op": StringAttr(kernel.data if isinstance(kernel, StringAttr) else ""),
            "node": StringAttr(node),
            "inputs": StringAttr(", ".join(map(type_text, inputs))),
            "outputs": StringAttr(", ".join(map(type_text, outputs))),
        }))


def _buffers(call: func.CallOp) -> list[SSAValue]:
    """The buffers a call passes (not its rank-0 cells and sizes)."""
    return [v for v in call.arguments
            if isinstance(v.type, MemRefType) and v.type.get_shape()]


def _root(value: SSAValue) -> SSAValue:
    """The buffer `value` views: an entry argument, an arena buffer (its memref.view) or a
    global."""
    while isinstance(value.owner, _VIEWS):
        value = value.owner.operands[0]
    return value


def type_text(t: MemRefType) -> str:
    """`1x64x56x56xf32`, `?` for a run-time size."""
    dims = ["?" if d < 0 else str(d) for d in t.get_shape()]
    return "x".join([*dims, str(t.get_element_type())])


__all__ = ["COUNTER_BYTES", "ProfileKernelCallsPass", "counter_intrinsic", "type_text"]
