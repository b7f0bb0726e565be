"""The pass manager: how every IR level of onnxc runs passes.

One context factory, one pipeline-text parser (`pipeline_text`), one runner that verifies
and, when verification fails, replays to blame the pass (`verifier`), and the op census that
leaves out graph passes with nothing to match (`census`). `onnxc.compile`, `onnxc-opt`, the
numeric bisection and the tests all run passes through `run_passes`. It sits below every
IR level (dialects, frontend, passes, lowering) so that each may use it.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.context import Context
from xdsl.dialects import get_all_dialects
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline

from onnxc.pass_manager.pipeline_text import build_pipeline
from onnxc.pass_manager.verifier import run_verified
from onnxc.registry import ONNXC_DIALECTS


def make_context() -> Context:
    """A context that knows every xDSL dialect and onnxc's own (loaded lazily)."""
    ctx = Context()
    for name, factory in {**get_all_dialects(), **ONNXC_DIALECTS}.items():
        ctx.register_dialect(name, factory)
    return ctx


def run_passes(
    ctx: Context, module: ModuleOp, passes: str | Sequence[str] | PassPipeline,
    verify: bool = True,
) -> None:
    """Apply `passes` (MLIR nested or xDSL flat text, or a sequence of specs), then verify.

    Invalid IR raises `InternalCompilerError` naming the pass that produced it, the op and
    its ONNX node (found by replaying the module's passes one at a time, only on failure:
    see pass_manager/verifier.py). `verify=False` defers the check to the next call that
    verifies (it then covers these passes as well). A built `PassPipeline` runs with its
    callback as the instrumentation (`onnxc-opt`'s)."""
    if isinstance(passes, PassPipeline):
        run_verified(ctx, module, passes.passes, verify, passes.callback)
        return
    text = passes if isinstance(passes, str) else ",".join(passes)
    pipeline = build_pipeline(text).passes if text.strip() else ()
    run_verified(ctx, module, pipeline, verify)


__all__ = ["make_context", "run_passes"]
