"""LLVM IR -> optimised module -> relocatable object: the one code-generation step that the
JIT (runtime/jit.py), its code-generation lanes (runtime/parallel_codegen.py: worker
processes and the in-process thread) and ahead-of-time artifacts (runtime/artifact.py) share.

LLVM's command-line options are process-wide, and two of them matter here: the unroller's
(UNROLL_OPTIONS, the same for every module) and `-disable-lsr`, which the streamed JIT turns
on for chunks of convolution kernels (lowering/to_llvm/direct.py UNREDUCED_KERNELS). A code-generation pipeline reads `-disable-lsr` when it is built,
so setting it and generating code happen under CODEGEN_LOCK, by `emit_object` and
`with_strength_reduction`: a thread of this process compiling a chunk without strength
reduction cannot take it away from another thread's JIT or artifact compile.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import llvmlite.binding as llvm
from llvmlite.binding import ffi
from llvmlite.binding.context import ContextRef
from llvmlite.binding.newpassmanagers import NewPassManager

from onnxc.errors import CompilationError

UNROLL_OPTIONS = ("-unroll-allow-partial=0", "-unroll-runtime=0", "-unroll-threshold=50")
"""LLVM's loop unroller, held back: the kernels unroll their register tiles themselves, and
their micro-kernels' k loops four steps deep (gemm_microkernel.K_UNROLL, full tiles only);
LLVM's partial / runtime unrolling of every loop (and full unrolling of large loop bodies)
only multiplied code. With these, ResNet-50's object code is half the size and LLVM's time
falls by two fifths, at the same speed (0.97-1.02x on the benchmark models). Small loops
are still unrolled fully: turning the unroller off altogether sends them to the loop
vectorizer, and this LLVM build (with assertions) aborts on some of them ("VPlan cost model
and legacy cost model disagreed", e.g. DynamicQuantizeLinear on 5x7). LLVM options are
process-wide, and set again in every code-generation worker."""

CODEGEN_LOCK = threading.Lock()
"""Held while `-disable-lsr` is set and code is generated with it (see the module docstring)."""


def optimize(module: llvm.ModuleRef, machine: llvm.TargetMachine, opt_level: int) -> None:
    """The new pass manager's O`opt_level` pipeline with loop and SLP vectorisation and the
    unroller as UNROLL_OPTIONS sets it."""
    if opt_level <= 0:
        return
    for option in UNROLL_OPTIONS:
        llvm.set_option("", option)
    tuning = llvm.create_pipeline_tuning_options(speed_level=min(opt_level, 3))
    tuning.loop_vectorization = opt_level >= 2
    tuning.slp_vectorization = opt_level >= 2
    tuning.loop_unrolling = True
    builder = llvm.create_pass_builder(machine, tuning)
    manager = builder.getModulePassManager()
    try:
        manager.run(module, builder)
    finally:
        dispose_pass_manager(manager)


def dispose_pass_manager(manager: llvm.ModulePassManager) -> None:
    """Free a pass manager's C++ pipeline now; llvmlite 0.50 never does (its `_dispose` is
    shadowed by `ObjectRef._dispose` in the MRO), which leaked ~85 KB of native memory per
    compile."""
    if type(manager)._dispose is ffi.ObjectRef._dispose and not manager.closed:
        NewPassManager._dispose(manager)  # the disposal the MRO hides
        manager.detach()
    else:
        manager.close()


@contextlib.contextmanager
def with_strength_reduction(enabled: bool = True) -> Iterator[None]:
    """Generate code (emit_object, MCJIT's finalize_object) with LLVM's loop strength
    reduction on or off, no other thread of this process changing it meanwhile."""
    with CODEGEN_LOCK:
        llvm.set_option("", "-disable-lsr=" + ("false" if enabled else "true"))
        yield


def emit_object(module: llvm.ModuleRef, machine: llvm.TargetMachine, *,
                strength_reduction: bool = True) -> bytes:
    """`module` (optimised) as a relocatable object for `machine`."""
    with with_strength_reduction(strength_reduction):
        return machine.emit_object(module)


def compile_object(text: str, machine: llvm.TargetMachine, opt_level: int, *,
                   strength_reduction: bool = True,
                   context: ContextRef | None = None) -> bytes:
    """One module's LLVM IR text, parsed (into `context`, or LLVM's global one), verified,
    optimised and compiled to a relocatable object; CompilationError if LLVM rejects it."""
    try:
        module = llvm.parse_assembly(text, context=context)
        module.verify()
    except RuntimeError as error:
        raise CompilationError(f"LLVM rejected the generated IR: {error}") from error
    try:
        module.triple = machine.triple
        module.data_layout = str(machine.target_data)
        optimize(module, machine, opt_level)
        return emit_object(module, machine, strength_reduction=strength_reduction)
    finally:
        module.close()  # before its context goes


__all__ = ["CODEGEN_LOCK", "UNROLL_OPTIONS", "compile_object", "dispose_pass_manager",
           "emit_object", "optimize", "with_strength_reduction"]
