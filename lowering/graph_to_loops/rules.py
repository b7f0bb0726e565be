"""One record per graph op's lowering (in the style of JAX's lowering rules).

Each kernel module declares `RULES = (KernelRule(...), ...)`: the op class, the builder of
its kernel's body and every fact the rest of the compile needs about that kernel (its
constant tables, scratch buffers, kernel key, whether it takes symbolic sizes, whether the
early-kernel lanes compile it, whether its LLVM chunk keeps loop strength reduction, its
weight in the compile's forecast). kernels.py derives the lookup tables from the rules, so
a new op is one record, not an entry in five tables keyed three ways.

The hooks that compute something from the op (`constants`, `scratch`, `key`) are called as
`hook(op, target)`, with the target the kernel is built for (the module's, `onnxc.target`):
packed weights, scratch sizes and the int8 multiply form follow its vector registers. The
body's builder reads the same target from its KernelBuilder (`kb.target`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, MemRefType
from xdsl.ir import Operation, SSAValue

from onnxc.lowering.graph_to_loops.buffer_types import RunTimeScratch
from onnxc.lowering.graph_to_loops.loops import KernelBuilder
from onnxc.target import Target

KernelFn = Callable[[Operation, KernelBuilder, Sequence[SSAValue], Sequence[SSAValue]], None]
ConstantsFn = Callable[[Operation, Target], list[DenseIntOrFPElementsAttr]]
ScratchFn = Callable[[Operation, Target], list[MemRefType | RunTimeScratch]]
KeyFn = Callable[[Operation, Target], tuple]


@dataclass(frozen=True)
class KernelRule:
    """How graph op `op` becomes a kernel, and what the compile must know of that kernel."""

    op: type[Operation]
    build: KernelFn
    """`build(op, kb, ins, outs)`: the kernel's body (kernels.py's docstring)"""
    constants: ConstantsFn | None = None
    """`constants(op, target)`: constant tables computed from the op, passed after the
    operands"""
    scratch: ScratchFn | None = None
    """`scratch(op, target)`: scratch buffers the caller allocates, passed after the
    constants"""
    key: KeyFn | None = None
    """`key(op, target)`: what the kernel's code depends on besides its argument types, when
    that is not all the op's properties (kernels.KERNEL_KEYS)"""
    symbolic: bool = False
    """it reads every size through `KernelBuilder.shape` / `dim`: symbolic dims welcome"""
    early: bool = False
    """the JIT's early-kernel lanes compile it while graph-to-loops runs (early_kernels.py):
    large kernels that no later pass rewrites"""
    strength_reduction: bool = True
    """LLVM's loop strength reduction runs on its chunk (direct.py UNREDUCED_KERNELS)"""
    weight: int = 1
    """loops ops of its kernel against an ordinary kernel's, for the compile's forecast of
    graph-to-loops' output (onnxc.pipeline KernelForecast): a convolution's is three"""
    bf16: bool = False
    """it has a bf16 form (`precision="bf16"`: set-compute-precision marks the instances
    that qualify, lowering/compute_precision.py)"""
    strided_operands: tuple[int, ...] = ()
    """operands it reads only through multi-dimensional loads of their memrefs, whatever
    their layout: a graph.as_strided there comes as a strided view of its input's buffer
    instead of a copy (convert_graph_to_loops)"""


def rules(ops: Iterable[type[Operation]], build: KernelFn, **facts) -> tuple[KernelRule, ...]:
    """One rule per op of `ops`, all built by `build` with the same `facts`."""
    return tuple(KernelRule(op, build, **facts) for op in ops)


__all__ = ["ConstantsFn", "KernelFn", "KernelRule", "KeyFn", "ScratchFn", "rules"]
