"""Loops level -> xDSL `llvm` dialect -> llvmlite IR.

xDSL 0.74 has no `convert-{arith,math,memref,cf,func}-to-llvm`, so these are ours, one module
per source dialect, and `translate.py` turns the result into an `llvmlite.ir.Module`.

Type conversion scheme (type_conversion.py): `index` is `i64` and a memref is a bare
`!llvm.ptr` to its base element, with shape, strides and offset static in its type. Each pass
converts only its own ops; where a converted value meets a not-yet-converted user (or the
reverse) it inserts a `builtin.unrealized_conversion_cast`, so every pass runs alone on its
own input, in any order. Converting a branch converts its destination blocks' argument types
and converting a function its entry block's; `reconcile-unrealized-casts` then removes the
A -> B -> A cast chains that remain once every pass has run.

The three LLVM casts xDSL's `llvm` dialect lacks (`fptosi`, `fptoui`, `uitofp`) are the ops
of our small `llvmx` dialect (llvm_ext.py); intrinsics xDSL has no op for are
`llvm.call_intrinsic` with the type-mangled name, and libm functions (`erff`) are external
`llvm.func` declarations. `translate.to_llvmlite` emits all of them.
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from onnxc.errors import LoweringError
from onnxc.lowering.pass_verifier import verify_module

LOOPS_TO_LLVM_PIPELINE: tuple[str, ...] = (
    "outline-parallel-loops",  # serial by default; loops_to_llvm_pipeline(n) threads them
    "convert-scf-to-cf-with-while",  # xDSL's convert-scf-to-cf, plus scf.while
    "convert-to-llvm",  # = convert-{arith,math,vector,memref,cf,func}-to-llvm in one walk
    "reconcile-unrealized-casts",
)


def loops_to_llvm_pipeline(num_threads: int = 1) -> tuple[str, ...]:
    """LOOPS_TO_LLVM_PIPELINE with loops marked parallel split over `num_threads` threads."""
    if num_threads <= 1:
        return LOOPS_TO_LLVM_PIPELINE
    return (f"outline-parallel-loops{{num-threads={num_threads}}}", *LOOPS_TO_LLVM_PIPELINE[1:])


def lower_loops_to_llvm(ctx: Context, module: ModuleOp, num_threads: int = 1) -> None:
    """Run the loops->LLVM pipeline on `module` in place; the result is pure `llvm` dialect."""
    from xdsl.transforms import get_all_passes

    from onnxc.registry import ONNXC_PASSES

    xdsl_passes = get_all_passes()
    for name in LOOPS_TO_LLVM_PIPELINE:
        factory = ONNXC_PASSES.get(name) or xdsl_passes[name]
        if name == "outline-parallel-loops":
            factory()(num_threads=num_threads).apply(ctx, module)
        else:
            factory()().apply(ctx, module)
    try:
        verify_module(module)
    except (VerifyException, DiagnosticException) as error:
        raise LoweringError(f"loops->LLVM lowering produced invalid IR: {error}") from error
