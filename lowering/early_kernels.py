"""Early kernels: the JIT's convolution and GEMM kernels compiled while graph-to-loops runs.

A streamed compile (onnxc/pipeline.py `start_codegen`) hands its LLVM IR to the
code-generation lanes as it emits it, after graph-to-loops and the entry ABI. Until then the
lanes had nothing to do: on a conv net graph-to-loops is a fifth of the compile, with one of
the two cores idle, and LLVM's share ended after the emission (ResNet-50: 0.4-0.6 s of
`llvm-jit` on a 2-core Zen 3). Kernels of EARLY_KERNELS are complete when graph-to-loops
has built them, and nothing after it changes them but the removal of the constant arguments
they never read (bind-constants' `drop_unread_constant_arguments`: a conv's raw weight, of
which it reads the packed copy). So graph-to-loops (module_kernels.py
`ModuleKernels.kernel`) drops those arguments itself, leaves a declaration of the kernel in
the module, and gives the kernel to the `EarlyKernels` attached to that module
(`compiling_early`), which outlines its parallel loops, emits chunks of such
kernels (direct.py `emit_kernels_chunk`) and submits them to the lanes at once. The rest of
the module is emitted later as before, declaring the early kernels it calls.

Only the JIT's streamed compiles do this (`onnxc.compile` of a model whose forecast starts
code-generation workers before graph-to-loops); artifacts, `onnxc-opt` and small models
keep every kernel in the module.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterator
from typing import TYPE_CHECKING

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Operation, Region

from onnxc.lowering.graph_to_loops import kernels
from onnxc.lowering.to_llvm.func import KERNEL_ATTR

if TYPE_CHECKING:
    from onnxc.runtime.jit import PendingNativeModule
    from onnxc.target import Target

EARLY_KERNELS = kernels.EARLY_KERNELS
"""Kernel kinds (`onnxc.kernel`) compiled early, those whose rule says `early`
(graph_to_loops/rules.py): the largest kernels (convolutions, MatMul, Gemm, Attention: three
quarters of ResNet-50's LLVM IR and half of BERT's), which no pass after graph-to-loops
rewrites."""

CHUNK_OPS = 1000
"""Loops ops per early chunk (as pipeline.STREAMED_*_CHUNK_OPS bound the later ones)."""

_ATTACHED: weakref.WeakKeyDictionary[ModuleOp, EarlyKernels] = weakref.WeakKeyDictionary()
"""The early-kernel compile each module's graph-to-loops hands its kernels to (a live set of
code-generation lanes, not IR: attached to the module being lowered, not put in it)."""


def of(module: ModuleOp) -> EarlyKernels | None:
    """The early-kernel compile `module`'s graph-to-loops runs under, if any."""
    return _ATTACHED.get(module)


@contextlib.contextmanager
def compiling_early(module: ModuleOp, early: EarlyKernels | None) -> Iterator[None]:
    """Run `module`'s graph-to-loops with `early` taking its early kernels; the last chunk is
    submitted when the block ends."""
    if early is None:
        yield
        return
    _ATTACHED[module] = early
    try:
        yield
        early.flush()
    finally:
        _ATTACHED.pop(module, None)


class EarlyKernels:
    """Chunks of early kernels, emitted and submitted to `pending`'s lanes as they fill."""

    def __init__(self, pending: PendingNativeModule, target: Target, num_threads: int,
                 verify: bool = False, chunk_kernels: int | None = None):
        self.pending = pending
        self.target = target
        self.num_threads = num_threads
        self.verify = verify
        self.chunk_kernels = chunk_kernels
        """kernels per chunk at most (besides CHUNK_OPS): a model with few early kernels
        (the 2-layer BERT has five, 1,200 ops) gives each lane a share instead of one
        lane all of them in one chunk, which it compiled alone at the end (0.4 s)"""
        self._batch: list[func.FuncOp] = []
        self._ops = 0

    @staticmethod
    def wants(kernel: func.FuncOp) -> bool:
        kind = kernel.attributes.get(KERNEL_ATTR)
        return isinstance(kind, StringAttr) and kind.data in EARLY_KERNELS

    def take(self, kernel: func.FuncOp) -> func.FuncOp:
        """Compile `kernel` (detached, its final signature) early; returns its declaration,
        which takes its place in the module."""
        from onnxc.lowering.to_llvm.direct import keeps_strength_reduction

        if self._batch and (keeps_strength_reduction(kernel)
                            != keeps_strength_reduction(self._batch[0])):
            self.flush()  # a chunk keeps strength reduction or skips it, not both
        self._batch.append(kernel)
        self._ops += sum(1 for _ in kernel.walk())
        if self._ops >= CHUNK_OPS or len(self._batch) == self.chunk_kernels:
            self.flush()
        return declaration_of(kernel)

    def flush(self) -> None:
        """Emit the kernels taken so far as one chunk and submit it."""
        from onnxc.lowering.to_llvm.direct import emit_kernels_chunk
        from onnxc.lowering.to_llvm.parallel import outline_parallel_loops

        if not self._batch:
            return
        kernels, self._batch, self._ops = self._batch, [], 0
        module = ModuleOp(list(kernels))
        for kernel in kernels:
            outline_parallel_loops(kernel, self.num_threads)
        if self.verify:
            module.verify()
        text, reduced = emit_kernels_chunk(module, triple=self.target.triple,
                                           data_layout=self.target.data_layout)
        self.pending.submit(text, reduced)


def declaration_of(kernel: func.FuncOp) -> func.FuncOp:
    """A body-less private func.func with `kernel`'s name, type and attributes."""
    declaration = func.FuncOp(kernel.sym_name.data, kernel.function_type, Region(),
                              visibility="private")
    declaration.attributes.update(kernel.attributes)
    declaration.arg_attrs = kernel.arg_attrs
    return declaration


def drop_unread_constants(kernel: func.FuncOp, op: Operation) -> tuple[int, ...]:
    """Remove from `kernel` (built for graph op `op`) the arguments it never reads that `op`
    passes a graph constant (what bind-constants would remove later); their positions."""
    from onnxc.dialects import graph
    from onnxc.lowering.bind_constants import erase_arguments

    args = kernel.body.block.args
    dropped = tuple(i for i, value in enumerate(op.operands)
                    if isinstance(value.owner, graph.ConstantOp) and not args[i].uses)
    erase_arguments(kernel, dropped)
    return dropped

__all__ = ["CHUNK_OPS", "EARLY_KERNELS", "EarlyKernels", "compiling_early", "of",
           "declaration_of", "drop_unread_constants"]
