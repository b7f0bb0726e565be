"""The compiler's stages as data: which passes run, in which order, from graph to LLVM.

`onnxc.compile`, `onnxc-opt` and the tests all take their pipelines from here, so a stage
changes in one place. Each stage is a tuple of registered pass names (see onnxc.registry);
printing `", ".join(stage)` gives text that `onnxc-opt -p` accepts.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.context import Context
from xdsl.dialects import get_all_dialects
from xdsl.dialects.builtin import ModuleOp

from onnxc.lowering.pass_verifier import run_verified
from onnxc.registry import ONNXC_DIALECTS
from onnxc.tools.pipeline_text import build_pipeline

GRAPH_TO_LOOPS: tuple[str, ...] = (
    "widen-half-precision", "insert-runtime-checks", "assign-layout", "fold-layout-converts",
    "convert-graph-to-loops",
)
"""Graph dialect on tensors -> kernels of scf/memref/arith/math loops on static memrefs.
Run-time indices and divisors get their checks first (never optional: memory safety does not
depend on -O). fp16/bf16 ops without a half kernel compute in f32 between casts at every -O
level (passes/half_precision.py; at -O1 and above the graph levels did it already). Layouts
are a lowering decision (as in MLIR), so they are chosen here at every -O level: convolutions
and what their outputs flow through run in NHWC on SIMD hosts."""


def graph_to_loops(precision: str = "fp32") -> tuple[str, ...]:
    """GRAPH_TO_LOOPS; with precision="bf16" the GEMMs and convs that can are marked to
    compute in bf16 first (lowering/compute_precision.py)."""
    if precision == "fp32":
        return GRAPH_TO_LOOPS
    at = GRAPH_TO_LOOPS.index("convert-graph-to-loops")
    mark = f"set-compute-precision{{precision={precision}}}"
    return (*GRAPH_TO_LOOPS[:at], mark, *GRAPH_TO_LOOPS[at:])


LOOPS_ABI: tuple[str, ...] = ("bind-constants", "inplace", "plan-memory", "return-check-status")
"""Fix the entry function's calling convention: one arena (elementwise results written over
dying inputs first), constants as arguments, and an i32 status: nonzero when a run-time check
failed, naming the check (the entry returns right after it)."""


def loops_to_llvm(entry: str = "main", num_threads: int = 1) -> tuple[str, ...]:
    """Loops -> the xDSL llvm dialect, plus the `onnxc_entry(argv)` wrapper around `entry`;
    loops kernels mark parallel run on up to `num_threads` threads."""
    from onnxc.lowering.to_llvm import loops_to_llvm_pipeline

    return (*loops_to_llvm_pipeline(num_threads), f"emit-entry-wrapper{{entry={entry}}}")


def make_context() -> Context:
    """A context that knows every xDSL dialect and onnxc's own (loaded lazily)."""
    ctx = Context()
    for name, factory in {**get_all_dialects(), **ONNXC_DIALECTS}.items():
        ctx.register_dialect(name, factory)
    return ctx


def run_passes(
    ctx: Context, module: ModuleOp, passes: str | Sequence[str], verify: bool = True
) -> None:
    """Apply `passes` (MLIR nested or xDSL flat text, or a sequence of specs), then verify.

    Invalid IR raises `InternalCompilerError` naming the pass that produced it, the op and
    its ONNX node (found by replaying the module's passes one at a time, only on failure:
    see lowering/pass_verifier.py). `verify=False` defers the check to the next call that
    verifies (it then covers these passes as well)."""
    text = passes if isinstance(passes, str) else ",".join(passes)
    pipeline = build_pipeline(text).passes if text.strip() else ()
    run_verified(ctx, module, pipeline, verify)


__all__ = [
    "GRAPH_TO_LOOPS", "LOOPS_ABI", "graph_to_loops", "loops_to_llvm", "make_context",
    "run_passes",
]
