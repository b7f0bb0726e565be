"""`onnxc-opt --emit=STAGE`: stop the compile at a stage and write what it produced.

The stages are those `onnxc.compile` goes through (onnxc.pipeline.STAGES), so
`onnxc-opt model.onnx -O3 --emit=llvm-ir` shows exactly the LLVM IR that `onnxc.compile`
JIT-compiles, and `--emit=obj`/`--emit=lib` write the object code and shared library that
`onnxc.compile_artifact` builds (runtime/artifact.py):

    graph         the graph dialect after the -O/-p passes (the default)
    loops         + graph -> loops and the entry ABI (scf/memref/arith on static memrefs)
    llvm-dialect  + loops -> xDSL's llvm dialect, with the `onnxc_entry` wrapper
    llvm-ir       that module translated to LLVM IR text
    asm, obj      LLVM's assembly text / ELF object for --compile-target (optimised at -O3)
    lib           the artifact's shared library (its C API: runtime/c/onnxc_model.c)

The passes of loops and llvm-dialect are appended to the pipeline, so --print-pipeline and
--mlir-print-ir-{before,after} see them; lib lowers through `Compilation.lower`
(onnxc/compilation.py: it also needs the constants' data, which bind-constants takes out of
the IR).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from onnxc import pipeline
from onnxc.errors import InvalidArgumentError
from onnxc.precision import DEFAULT_PRECISION
from onnxc.target import Target

if TYPE_CHECKING:
    from onnxc.compile_options import CompileOptions

STAGES = pipeline.EMIT_STAGES
"""graph, loops, llvm-dialect, llvm-ir, asm, obj, lib: where each pipeline stage stops."""
IR_STAGES = ("graph", "loops", "llvm-dialect")
"""Stages written as MLIR text (through -t mlir or -t llvm)."""
BINARY_STAGES = ("obj", "lib")
ARTIFACT_PREFIX = "model"
"""Symbol prefix of --emit=obj and --emit=lib: the entry is `model_entry`, as in
`onnxc compile`'s default artifact."""


def lowering_passes(emit: str, *, num_threads: int = 1, entry: str = "main",
                    precision: str = DEFAULT_PRECISION) -> tuple[str, ...]:
    """The pass specs after the graph passes that `--emit=emit` runs (every stage from llvm-ir
    on needs the llvm dialect; lib lowers as the compile does, pipeline.compile_passes)."""
    return pipeline.lowering_passes(emit, num_threads=num_threads, entry=entry,
                                    precision=precision)


def check_emit_output(emit: str, output_file: str | None, split_input: bool,
                      stdout: IO[str] | None = None) -> None:
    """InvalidArgumentError for binary output nobody can use: to a terminal, of several
    `--split-input-file` chunks into one file, or a library without a file name."""
    if emit not in BINARY_STAGES:
        return
    if split_input:
        raise InvalidArgumentError(f"--emit={emit} writes one binary file; it cannot be "
                                   f"combined with --split-input-file")
    if output_file is not None:
        return
    if emit == "lib":
        raise InvalidArgumentError("--emit=lib writes a shared library: give its path with "
                                   "-o FILE (e.g. -o model.so)")
    stream = sys.stdout if stdout is None else stdout
    if stream.isatty():
        raise InvalidArgumentError(f"--emit={emit} writes binary object code: give -o FILE "
                                   f"(or redirect stdout), not a terminal")


@dataclass
class _LLVMModule:
    """What runtime/artifact.py's emitters read of a lowered model: its LLVM module."""

    llvm_module: Any


def emit_text(emit: str, module: ModuleOp, target: Target) -> str:
    """llvm-ir or asm text of an llvm-dialect `module`."""
    ir_module = pipeline.translate_to_llvm_ir(module, target)
    if emit == "llvm-ir":
        return f"{ir_module}\n"
    from onnxc.runtime.artifact import emit_assembly

    return emit_assembly(_LLVMModule(ir_module), target, ARTIFACT_PREFIX)


def emit_object_file(module: ModuleOp, target: Target, output_file: str | None) -> None:
    """The object code of an llvm-dialect `module`, into `output_file` (else stdout)."""
    from onnxc.runtime.artifact import emit_object

    data = emit_object(_LLVMModule(pipeline.translate_to_llvm_ir(module, target)), target,
                       ARTIFACT_PREFIX)
    _write_binary(data, output_file)


def emit_library(ctx: Context, module: ModuleOp, options: CompileOptions,
                 output_file: str) -> None:
    """Lower a graph-dialect `module` (its graph passes run) as `onnxc.compile_artifact`
    does with `options` and copy the artifact's shared library to `output_file` (its header
    and manifest are not written: use `onnxc compile` for the whole artifact)."""
    from onnxc.compilation import Compilation
    from onnxc.runtime import artifact

    lowered = Compilation(options, ctx=ctx).lower(module)
    with tempfile.TemporaryDirectory(prefix="onnxc-opt-lib-") as tmp:
        built = artifact.build(lowered, tmp, ARTIFACT_PREFIX)
        shutil.copyfile(built.library, output_file)


def _write_binary(data: bytes, output_file: str | None) -> None:
    if output_file is None:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    with open(output_file, "wb") as out:
        out.write(data)


__all__ = ["BINARY_STAGES", "IR_STAGES", "STAGES", "check_emit_output", "emit_library",
           "emit_object_file", "emit_text", "lowering_passes"]
