"""The Python API: `onnxc.compile` (ONNX -> native CompiledModel), `onnxc.compile_artifact`
and `onnxc.optimize`.

Each checks its arguments once (onnxc.arguments; the compile options through
`CompileOptions.of`, which freezes them) and runs a `Compilation` (onnxc/compilation.py: the
stages, in the order of `onnxc.pipeline`); this module adds what is not a stage: the
compile cache and the timing log's lifetime."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import onnx
from xdsl.dialects.builtin import ModuleOp

from onnxc import pipeline
from onnxc.arguments import check_call_arguments, check_optimize_arguments
from onnxc.compilation import Compilation, ModelLike, StageLog
from onnxc.compile_options import CompileOptions, with_option_parameters
from onnxc.container_io import CompiledContainerModel, has_container_io
from onnxc.dialects.entry_abi import (
    WRAPPER_NAME,
)
from onnxc.errors import UnsupportedOpError
from onnxc.frontend import import_onnx
from onnxc.frontend.onnx_model import ParsedOnce, load_model
from onnxc.passes.levels import graph_pipeline
from onnxc.passes.stats import OptimizationStats
from onnxc.runtime.compiled_model import CompiledModel


def optimize(
    model: ModelLike | ModuleOp,
    opt_level: int = 3,
    pass_pipeline: str | None = None,
    *,
    stats: bool = False,
    verify_numerics: bool = False,
    as_onnx: bool = False,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> ModuleOp | onnx.ModelProto | tuple[ModuleOp | onnx.ModelProto, OptimizationStats]:
    """The graph-dialect module after the graph passes of `opt_level` (before lowering).

    With `stats=True` returns `(module, OptimizationStats)`: node counts by op type before
    and after, and how often each pattern fired (what `onnxc-opt --stats` prints).

    With `as_onnx=True` returns that graph as a standard `onnx.ModelProto` instead
    (frontend/onnx_export.py: opset 23, fused ops as `onnxc` local functions). Every level
    exports, and the default -O3 gives the best ONNX: its layout rows only cancel layout
    conversions, which the graph passes never create (onnxc's NHWC/blocked layouts are
    assigned later, in lowering); a layout-typed tensor (`layout.convert` and what it
    feeds) raises UnsupportedOpError.

    `input_shapes={"x": (1, 3, 224, 224)}` fixes the sizes of inputs with symbolic
    dimensions, as for `compile`; without it they stay symbolic."""
    check_optimize_arguments(**locals())  # InvalidArgumentError naming a bad one
    module = model if isinstance(model, ModuleOp) else import_onnx(
        model, input_shapes=input_shapes)
    passes = graph_pipeline(opt_level) if pass_pipeline is None else pass_pipeline
    result = pipeline.optimize_graph(pipeline.make_context(), module, passes,
                                     verify_numerics=verify_numerics, stats=stats)
    if as_onnx:
        from onnxc.frontend.onnx_export import export_onnx

        exported = export_onnx(module)
        return (exported, result) if stats else exported
    return (module, result) if stats else module


@with_option_parameters
def compile(
    model: ModelLike,
    *,
    cache_dir: str | os.PathLike | bool | None = None,
    verbose: bool = False,
    quiet: bool = False,
    **options: object,
) -> CompiledModel | CompiledContainerModel:
    """Compile an ONNX model (path, bytes or ModelProto) to native code for this CPU.

    A model with sequence or optional graph inputs or outputs gives a CompiledContainerModel
    (onnxc.container_io): sequences in and out as lists of arrays, optionals as None or a
    value, each new signature of its container inputs compiled on first use.

    The compile options below are the fields of `onnxc.compile_options.CompileOptions`
    (docs/python-api.md, "Compile options"); a bad or unknown one is InvalidArgumentError.

    Compiled models are kept in a disk cache (`onnxc.runtime.cache`): `cache_dir`, else
    $ONNXC_CACHE_DIR, else ~/.cache/onnxc; `cache_dir=False` or ONNXC_CACHE=0 disables it.
    Entries are authenticated with a per-user secret; an unsafe cache directory (another
    user's, or writable by others) is not used, with a CacheWarning.

    Loops kernels mark parallel run on `num_threads` threads (onnxc's thread pool); 1 where
    the pool does not run (not Linux). The count is compiled in; `CompiledModel.num_threads`
    reports it.

    Dynamic shapes: a model whose inputs share one symbolic leading (batch) dimension and is
    batch-separable (frontend/batch_axes.py) is compiled once, for one sample, and runs once
    per sample. Any other symbolic dimension compiles symbolically, once for every size
    (runtime/symbolic_shapes.py); an op with no symbolic kernel is a LoweringError naming
    the node. `input_shapes={name: shape}` fixes sizes instead: one compilation per shape.

    `precision="bf16"` computes the products of f32 GEMMs and convs in bf16 with f32
    accumulation (AVX512-BF16 `vdpbf16ps`; weights rounded at compile time, activations by
    each such kernel as it reads them); everything else stays f32 (docs/precision.md).

    `target` names LLVM's triple, CPU and features (onnxc/target.py). The code runs in this
    process, so the host must have every feature the target uses (InvalidArgumentError
    otherwise). `CompiledModel.target` reports it.

    On a terminal, a compile that takes over a second shows its stage and elapsed time on
    stderr (onnxc.progress); `quiet=True` turns that off, `verbose=True` prints each stage's
    time. Neither changes anything compiled."""
    check_call_arguments(model=model, cache_dir=cache_dir, verbose=verbose, quiet=quiet)
    resolved = CompileOptions.of(**options)
    try:
        with StageLog(verbose, quiet) as log:
            return _compile_logged(model, log, resolved, cache_dir)
    except UnsupportedOpError as error:
        if error.op_type not in ("graph input", "graph output"):
            raise
        proto = load_model(model)
        if not has_container_io(proto):
            raise
    # sequences or optionals in or out: compiled per signature of the container inputs
    return CompiledContainerModel(proto, lambda m: compile(
        m, cache_dir=cache_dir, verbose=verbose, quiet=quiet, **options))


def _compile_logged(model, log: StageLog, options: CompileOptions,
                    cache_dir) -> CompiledModel:
    """The body of `compile`, its arguments checked, stages timed by `log`."""
    from onnxc.runtime import cache

    disk = cache.open_cache(cache_dir)  # None: off, or unsafe (a CacheWarning says why)
    given, key, hashed = model, None, None
    if disk is not None:
        with log.stage("cache-lookup"):
            found = cache.snapshot_parsed(model)  # None: unreadable (the importer says why)
            source = None if found is None else found[0]
            if found is not None and found[1] is not None:
                # compiled from the parse of the bytes the key hashed (and not kept alive
                # here: ParsedOnce gives it up to the importer)
                model = hashed = ParsedOnce(model, found[1])
            del found
            if source is not None:
                key = cache.compile_key(source, options)
            hit = None if options.verify_numerics or key is None else disk.load(key)
        if hit is not None:  # the entry restores everything, the batch binding included
            hit.compile_seconds = dict(log.seconds)
            hit.from_cache = True
            return hit
    compiled, native, constant_names = Compilation(options, log).jit(model)
    if disk is not None and key is not None:
        with log.stage("cache-store"):
            # compiled from the hashed bytes alone, else from files that must still hold them
            if (hashed is not None and not hashed.reread) or cache.unchanged(given, source):
                disk.store(key, compiled, native.object_code(), constant_names, WRAPPER_NAME)
    compiled.compile_seconds = dict(log.seconds)
    return compiled


@with_option_parameters
def compile_artifact(
    model: ModelLike,
    directory: str | os.PathLike,
    *,
    prefix: str = "model",
    verbose: bool = False,
    quiet: bool = False,
    **options: object,
):
    """Compile `model` ahead of time for `target` into `directory`: a shared library with a
    C API (`<prefix>_run`, and `<prefix>_output_shapes` / `<prefix>_run_shaped` that take
    the input shapes), its header, a manifest and a `run` program, all built for the
    target (runtime/artifact.py). Any target LLVM knows, not only this machine's; its C
    compiler must be installed (ToolchainError names the package otherwise).

    The compile options are `onnxc.compile`'s. `num_threads` (default: this machine's) is
    compiled in. A model with symbolic dimensions keeps them: one artifact for every shape
    (`input_shapes=` fixes them instead). One whose only symbol is a separable batch is
    compiled for one sample (`<prefix>_run` runs one, `<prefix>_run_shaped` any number).
    `onnxc.load(directory)` runs a host artifact in Python."""
    check_call_arguments(model=model, directory=directory, prefix=prefix, verbose=verbose,
                         quiet=quiet)
    from onnxc.runtime import artifact

    resolved = CompileOptions.of(runs_here=False, **options)
    with StageLog(verbose, quiet) as log:
        compilation = Compilation(resolved, log)
        lowered = compilation.lower_to_llvm(model, per_sample=True)
        if lowered.abi.symbolic is not None and lowered.batch is not None:
            # a batch-separable model with other symbolic sizes: one artifact for
            # every batch size, as the symbols say (not run per sample)
            lowered = compilation.lower_to_llvm(model)
        with log.stage("artifact"):
            return artifact.build(lowered, directory, prefix)
