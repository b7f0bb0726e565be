"""outline-parallel-loops: kernel loops marked parallel -> a body function + `par.launch`.

`KernelBuilder.parallel_for` emits an ordinary `scf.for` carrying the unit attribute
`onnxc.parallel` (every other pass, and the loops interpreter, see a plain loop). This pass,
run first in the loops -> LLVM pipeline, turns each outermost marked loop into

    func.func private @k_par0(%lo: index, %hi: index, %a: memref<..>, ...) {
      scf.for %i = %lo to %hi step %step { <the loop body> }
    }
    par.launch @k_par0(%lb, %ub, %step) captures(%a, ...) threads 2

Values the body uses from outside the loop are passed as arguments, except side-effect-free
ops without regions (constants, index math, memref views), which are cloned into the body
function: each captured memref is then a root buffer (a kernel argument or a heap
allocation), so the `noalias` that convert-func-to-llvm puts on memref arguments stays true.
Stack scratch (`memref.alloca`) from outside the loop is cloned too, so each thread gets its
own: kernels hoist per-iteration scratch to their entry, and since iterations are
independent, nothing may flow through it from before the loop or between iterations.
`par.launch` operands are in their LLVM types already (bridged with unrealized casts, like
every conversion here); translate.py emits it through `launch.emit_launch`: the calling
thread and the thread pool's helpers claiming chunks of the trip count
(runtime/thread_pool.py), or a direct call when one thread would do.

With `num-threads=1` (the default, so `onnxc-opt` output does not depend on the machine), a
loop of static trip count below two, a loop with iter_args, a marked loop nested inside
another marked loop, or a loop whose whole work is small (`static_work` below
`min-parallel-ops`: waking the pool's helpers costs more than they save), the marker is
dropped and the loop stays serial.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IndexType,
    IntegerAttr,
    ModuleOp,
    SymbolRefAttr,
    UnitAttr,
    UnrealizedConversionCastOp,
    i64,
)
from xdsl.ir import Block, BlockArgument, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    prop_def,
    var_operand_def,
)
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import is_side_effect_free
from xdsl.utils.exceptions import VerifyException

from onnxc.dialects.onnxc_attributes import PARALLEL_ATTR
from onnxc.lowering.to_llvm.type_conversion import convert_type


@irdl_op_definition
class LaunchOp(IRDLOperation):
    """Run `callee(lo, hi, captured...)` over chunks [lo, hi) of lb..ub (step `step`) on
    up to `threads` threads; returns when every chunk is done."""

    name = "par.launch"
    callee = prop_def(SymbolRefAttr)
    threads = prop_def(IntegerAttr)
    lower_bound = operand_def(i64)
    upper_bound = operand_def(i64)
    step = operand_def(i64)
    captured = var_operand_def()

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = (
        "$callee `(` $lower_bound `,` $upper_bound `,` $step `)` "
        "`captures` `(` $captured `)` attr-dict `:` type($captured)"
    )

    def __init__(
        self,
        callee: str,
        lower_bound: SSAValue,
        upper_bound: SSAValue,
        step: SSAValue,
        captured: list[SSAValue],
        threads: int,
    ):
        super().__init__(
            operands=[lower_bound, upper_bound, step, captured],
            properties={
                "callee": SymbolRefAttr(callee),
                "threads": IntegerAttr(threads, i64),
            },
        )

    def verify_(self) -> None:
        if self.threads.value.data < 2:
            raise VerifyException("par.launch needs threads >= 2 (one thread is a plain call)")


Par = Dialect("par", [LaunchOp])


def _static(value: SSAValue) -> int | None:
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def _static_trips(loop: scf.ForOp) -> int | None:
    lb, ub, step = (_static(v) for v in (loop.lb, loop.ub, loop.step))
    if lb is None or ub is None or step is None or step <= 0:
        return None
    return len(range(lb, ub, step))


MIN_PARALLEL_OPS = 6_000
"""A parallel loop doing fewer ops than this in all (`static_work`) runs serially: launching
a region on the pool and joining it costs about as much as two threads save on it. Measured
at two threads (Zen 4, medians over 5 processes each, this VM's two vCPUs being noisy):
20,000 made MobileNetV2-like 5% faster but ShuffleNet 4% slower; 6,000 left ShuffleNet and
SqueezeNet unchanged and MobileNetV2-like 1-2% faster."""


def static_work(loop: scf.ForOp) -> float | None:
    """Ops the loop executes in all: its body's ops (a vector op counts one) times its
    trips, nested loops multiplied in, the larger branch of an `scf.if`; None when a trip
    count is known only at run time (such loops are taken to be large)."""
    trips = _static_trips(loop)
    body = _block_work(loop.body.block)
    if trips is None or body is None:
        return None
    return trips * body


def _block_work(block: Block) -> float | None:
    total = 0.0
    for op in block.ops:
        if isinstance(op, scf.ForOp):
            inner = static_work(op)
        elif op.regions:
            branches = [_block_work(b) for r in op.regions for b in r.blocks]
            inner = None if None in branches else 1 + max(branches, default=0.0)
        else:
            inner = 1.0
        if inner is None:
            return None
        total += inner
    return total


def _clonable(value: SSAValue) -> Operation | None:
    """The defining op of `value` if the body function makes its own: side-effect-free ops
    are recomputed, stack scratch (`memref.alloca`) becomes private to each thread."""
    owner = value.owner
    if not isinstance(owner, Operation) or owner.regions or owner.successors:
        return None
    if isinstance(owner, memref.AllocaOp) or is_side_effect_free(owner):
        return owner
    return None


class _Outliner:
    """Builds the body function of one loop: clones pure producers, captures the rest."""

    def __init__(self, loop: scf.ForOp, entry: Block):
        self.loop = loop
        self.entry = entry
        self.mapping: dict[SSAValue, SSAValue] = {}
        self.captured: list[SSAValue] = []

    def resolve(self, value: SSAValue) -> SSAValue:
        if value in self.mapping:
            return self.mapping[value]
        producer = _clonable(value)
        if producer is not None:
            for operand in producer.operands:
                self.resolve(operand)
            clone = producer.clone(value_mapper=self.mapping)  # maps its results too
            self.entry.add_op(clone)
            return self.mapping[value]
        self.captured.append(value)
        arg = self.entry.insert_arg(value.type, len(self.entry.args))
        arg.name_hint = value.name_hint
        self.mapping[value] = arg
        return arg

    def outside_values(self, inside: Sequence[Operation]) -> list[SSAValue]:
        """Values defined outside the loop that its body or step uses, in first-use order;
        `inside` is every op of the body, in walk order. (Set lookups: `is_ancestor` per
        operand was a fifth of the outlining.)"""
        ops = set(inside)
        ops.add(self.loop)
        seen: dict[SSAValue, None] = {self.loop.step: None}
        for op in inside:
            for operand in op.operands:
                owner = operand.owner  # a block (argument) or an op (result)
                defined_by = owner if isinstance(owner, Operation) else owner.parent_op()
                if defined_by not in ops:
                    seen.setdefault(operand, None)
        return list(seen)


def _outline(loop: scf.ForOp, name: str, threads: int) -> func.FuncOp:
    """Replace `loop` by a `par.launch` of a new body function named `name` (returned)."""
    entry = Block(arg_types=[IndexType(), IndexType()])
    entry.args[0].name_hint, entry.args[1].name_hint = "lo", "hi"
    outliner = _Outliner(loop, entry)
    ops = list(loop.body.walk())
    for value in outliner.outside_values(ops):
        outliner.resolve(value)
    step = outliner.mapping[loop.step]
    body = Region()
    loop.body.move_blocks(body)  # moved, not cloned: the loop is erased below
    inside = set(ops)
    for outside, mapped in outliner.mapping.items():
        outside.replace_uses_with_if(mapped, lambda use: use.operation in inside)
    for inner in ops:
        if PARALLEL_ATTR in inner.attributes:  # nested parallel loops run serially
            del inner.attributes[PARALLEL_ATTR]
    entry.add_ops([
        scf.ForOp(entry.args[0], entry.args[1], step, [], body),
        func.ReturnOp(),
    ])
    arg_types = [a.type for a in entry.args]
    body_fn = func.FuncOp(name, (arg_types, []), Region(entry), visibility="private")
    kernel = loop.parent_op()
    while kernel is not None and not isinstance(kernel, func.FuncOp):
        kernel = kernel.parent_op()
    if kernel is not None and kernel.arg_attrs is not None:  # keep facts on kernel arguments
        kernel_args = kernel.body.blocks[0].args
        body_fn.arg_attrs = ArrayAttr([DictionaryAttr({}), DictionaryAttr({}), *(
            kernel.arg_attrs.data[v.index] if isinstance(v, BlockArgument)
            and v.block.args is kernel_args else DictionaryAttr({})
            for v in outliner.captured
        )])

    casts: dict[SSAValue, Operation] = {}

    def lowered(value: SSAValue) -> SSAValue:
        target = convert_type(value.type)
        if target == value.type:
            return value
        if value not in casts:  # cast_one's op, built with `create`
            casts[value] = UnrealizedConversionCastOp.create(operands=[value],
                                                             result_types=[target])
        return casts[value].results[0]

    bounds = [lowered(v) for v in (loop.lb, loop.ub, loop.step)]
    captured = [lowered(v) for v in outliner.captured]
    launch = LaunchOp(name, *bounds, captured, threads)
    Rewriter.insert_op([*casts.values(), launch], InsertPoint.before(loop))
    Rewriter.erase_op(loop)
    return body_fn


def _marked(op: Operation) -> bool:
    return isinstance(op, scf.ForOp) and PARALLEL_ATTR in op.attributes


def _outermost_marked(fn: func.FuncOp) -> list[scf.ForOp]:
    """Marked loops with no marked ancestor; markers of nested ones are dropped."""
    result: list[scf.ForOp] = []
    for op in fn.walk():
        if not _marked(op):
            continue
        parent = op.parent_op()
        while parent is not None and parent is not fn and not _marked(parent):
            parent = parent.parent_op()
        if parent is not None and _marked(parent):
            del op.attributes[PARALLEL_ATTR]
        else:
            assert isinstance(op, scf.ForOp)
            result.append(op)
    return result


@dataclass(frozen=True)
class OutlineParallelLoopsPass(ModulePass):
    """Outline loops marked `onnxc.parallel` into body functions run by `par.launch`."""

    name = "outline-parallel-loops"

    num_threads: int = 1
    min_parallel_ops: int | None = None
    """None: MIN_PARALLEL_OPS"""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in list(op.ops):
            if isinstance(fn, func.FuncOp):
                outline_parallel_loops(fn, self.num_threads, self.min_parallel_ops)


def outline_parallel_loops(fn: func.FuncOp, num_threads: int,
                           min_parallel_ops: int | None = None) -> list[func.FuncOp]:
    """The pass on one function of a module: its body functions, inserted after it (the
    JIT outlines each chunk of kernels just before it emits it: onnxc/pipeline.py)."""
    if min_parallel_ops is None:
        min_parallel_ops = MIN_PARALLEL_OPS
    bodies: list[func.FuncOp] = []
    for loop in _outermost_marked(fn):
        trips = _static_trips(loop)
        work = static_work(loop)
        if (num_threads < 2 or loop.iter_args or (trips is not None and trips < 2)
                or (work is not None and work < min_parallel_ops)):
            del loop.attributes[PARALLEL_ATTR]
            continue
        body_fn = _outline(loop, f"{fn.sym_name.data}_par{len(bodies)}", num_threads)
        Rewriter.insert_op(body_fn, InsertPoint.after(bodies[-1] if bodies else fn))
        bodies.append(body_fn)
    return bodies


def mark_parallel(loop: scf.ForOp) -> None:
    """Mark `loop` as having independent iterations (what KernelBuilder.parallel_for does)."""
    loop.attributes[PARALLEL_ATTR] = UnitAttr()


__all__ = [
    "PARALLEL_ATTR", "LaunchOp", "OutlineParallelLoopsPass", "Par", "mark_parallel",
    "outline_parallel_loops",
]
