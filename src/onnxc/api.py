"""The Python API: `onnxc.compile` (ONNX -> native CompiledModel) and `onnxc.optimize`.

compile() runs the stages of `onnxc.pipeline` (its STAGES, one function each) in
order: import, graph optimization at `opt_level`, graph -> loops, the entry ABI (arena and
constants), loops -> LLVM dialect, translation to LLVM IR, and the llvmlite JIT; this module
adds what is not IR: the batch binding, the cache, the timing of each stage.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

import onnx
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, TensorType

from onnxc import pipeline
from onnxc.arguments import (
    check_artifact_arguments,
    check_compile_arguments,
    check_optimize_arguments,
)
from onnxc.collector import CollectorPause, collector_paused
from onnxc.compile_options import CompileOptions
from onnxc.dialects.entry_abi import (
    ARENA_BYTES_ATTR,
    CONSTANTS_ATTR,
    DYNAMIC_ARENA_ATTR,
    INPUT_NAMES_ATTR,
    INTERMEDIATE_BYTES_ATTR,
    OUTPUT_NAMES_ATTR,
    RUN_BOUNDS_ATTR,
    RUN_SYMBOLS_ATTR,
    STATUS_OFFSET_ATTR,
    SYMBOLS_ATTR,
    WRAPPER_NAME,
    check_sites,
    entry_function,
    input_defaults,
    string_list,
)
from onnxc.dialects.graph import shape_of
from onnxc.errors import LoweringError, ShapeInferenceError
from onnxc.frontend import import_onnx
from onnxc.frontend.batch_axes import (
    BatchAxis,
    batch_axis,
    symbolic_batch,
    with_batch,
    with_fixed_shapes,
)
from onnxc.frontend.onnx_importer import checked_model
from onnxc.frontend.onnx_model import ParsedOnce, holds_all_data, load_model
from onnxc.lowering.bind_constants import constant_arrays, numpy_dtype
from onnxc.lowering.early_kernels import compiling_early
from onnxc.passes.levels import graph_pipeline
from onnxc.passes.stats import OptimizationStats
from onnxc.progress import CompileProgress
from onnxc.runtime import thread_pool
from onnxc.runtime.compiled_model import CompiledModel, TensorSpec
from onnxc.runtime.model_abi import ModelABI
from onnxc.runtime.symbolic_shapes import SymbolicSignature
from onnxc.target import Target, set_module_target

ModelLike = str | os.PathLike | bytes | onnx.ModelProto


class _StageLog:
    """Wall time per compile stage; printed to stderr when verbose (or ONNXC_DEBUG=1). Unless
    `quiet`, also the progress line on a terminal (onnxc.progress), from `with` to its end."""

    def __init__(self, verbose: bool, quiet: bool = True):
        self.verbose = verbose or os.environ.get("ONNXC_DEBUG", "") not in ("", "0")
        self.seconds: dict[str, float] = {}
        self.progress = None if quiet else CompileProgress()

    def __enter__(self):
        if self.progress is not None:
            self.progress.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.progress is not None:
            self.progress.close()

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        if self.progress is not None:
            self.progress.stage(name)
        start = time.perf_counter()
        yield
        self.seconds[name] = time.perf_counter() - start
        if self.verbose:
            line = f"[onnxc] {name}: {self.seconds[name] * 1e3:.1f} ms"
            if self.progress is not None:
                self.progress.message(line)  # above the progress line
            else:
                print(line, file=sys.stderr)


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
    dimensions (the graph dialect is static), as for `compile`."""
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


def _signature(module: ModuleOp) -> tuple[list[TensorSpec], list[TensorSpec]]:
    entry = entry_function(module)
    in_types = entry.function_type.inputs.data
    out_types = entry.function_type.outputs.data
    in_names = string_list(entry, INPUT_NAMES_ATTR) or [f"input_{i}" for i in range(len(in_types))]
    out_names = string_list(entry, OUTPUT_NAMES_ATTR) or [
        f"output_{i}" for i in range(len(out_types))
    ]

    def spec(name: str, t) -> TensorSpec:
        assert isinstance(t, TensorType)
        shape = tuple(d if isinstance(d, int) else str(d) for d in shape_of(t))
        return TensorSpec(name, shape, numpy_dtype(t.get_element_type()))

    return ([spec(n, t) for n, t in zip(in_names, in_types)],
            [spec(n, t) for n, t in zip(out_names, out_types)])


def compile(
    model: ModelLike,
    *,
    opt_level: int = 3,
    pass_pipeline: str | Sequence[str] | None = None,
    verbose: bool = False,
    verify_numerics: bool = False,
    cache_dir: str | os.PathLike | bool | None = None,
    num_threads: int | None = None,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    precision: str = "fp32",
    target: str | Target | None = None,
    quiet: bool = False,
) -> CompiledModel:
    """Compile an ONNX model (path, bytes or ModelProto) to native code for this CPU.

    `verify_numerics=True` runs the graph passes one at a time under the numpy evaluator
    on random inputs and raises NumericDriftError naming the first pass that changes the
    results (slow: a debugging aid, like `onnxc-opt --verify-numerics`).

    Compiled models are kept in a disk cache (`onnxc.runtime.cache`): `cache_dir`, else
    $ONNXC_CACHE_DIR, else ~/.cache/onnxc; `cache_dir=False` or ONNXC_CACHE=0 disables it.
    Entries are authenticated with a per-user secret; an unsafe cache directory (another
    user's, or writable by others) is not used, with a CacheWarning.

    Loops kernels mark parallel run on `num_threads` threads (onnxc's thread pool): default
    $ONNXC_NUM_THREADS, else the CPUs this process may use (affinity and cgroup quota); 1
    where the pool does not run (not Linux). The count is compiled in;
    `CompiledModel.num_threads` reports it.

    Dynamic shapes: a model whose inputs share one symbolic leading (batch) dimension and is
    batch-separable (frontend/batch_axes.py) is compiled once, for one sample, and runs once
    per sample. Any other symbolic dimension compiles symbolically, once for every size
    (runtime/symbolic_shapes.py); an op with no symbolic kernel is a LoweringError naming
    the node. `input_shapes={name: shape}` fixes sizes instead: one compilation per shape.

    `precision="bf16"` (default "fp32") computes the products of f32 GEMMs and convs in
    bf16 with f32 accumulation (AVX512-BF16 `vdpbf16ps`; weights rounded at compile time,
    activations by each such kernel as it reads them); everything else stays f32. On a CPU without AVX512-BF16 it is
    an InvalidArgumentError. `CompiledModel.precision` reports it (docs/precision.md).

    `target` (default "host") is what the code is built for: a preset such as "x86-64-v3"
    (AVX2, no AVX-512) or "x86-64-v4", or "TRIPLE[:CPU[:FEATURES]]" in LLVM's names
    (onnxc/target.py). The code runs in this process, so the host must have every feature
    the target uses (InvalidArgumentError otherwise). `CompiledModel.target` reports it.

    On a terminal, a compile that takes over a second shows its stage and elapsed time on
    stderr (onnxc.progress); `quiet=True` turns that off. It changes nothing compiled."""
    check_compile_arguments(**locals())  # InvalidArgumentError naming a bad one
    options = CompileOptions.of(opt_level=opt_level, pass_pipeline=pass_pipeline,
                                num_threads=num_threads, input_shapes=input_shapes,
                                precision=precision, target=target,
                                verify_numerics=verify_numerics)
    with _StageLog(verbose, quiet) as log:
        return _compile_logged(model, log, options, cache_dir)


def _compile_logged(model, log: _StageLog, options: CompileOptions,
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
    compiled, native, constant_names = _compile_static(model, log, options)
    if disk is not None and key is not None:
        with log.stage("cache-store"):
            # compiled from the hashed bytes alone, else from files that must still hold them
            if (hashed is not None and not hashed.reread) or cache.unchanged(given, source):
                disk.store(key, compiled, native.object_code(), constant_names, WRAPPER_NAME)
    compiled.compile_seconds = dict(log.seconds)
    return compiled


def compile_artifact(
    model: ModelLike,
    directory: str | os.PathLike,
    *,
    target: str | Target | None = None,
    prefix: str = "model",
    opt_level: int = 3,
    num_threads: int | None = None,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    precision: str = "fp32",
    verbose: bool = False,
    quiet: bool = False,
):
    """Compile `model` ahead of time for `target` into `directory`: a shared library with a
    C API (`<prefix>_run`, and `<prefix>_output_shapes` / `<prefix>_run_shaped` that take
    the input shapes), its header, a manifest and a `run` program, all built for the
    target (runtime/artifact.py). Any target LLVM knows, not only this machine's; its C
    compiler must be installed (ToolchainError names the package otherwise).

    `num_threads` (default: this machine's, as for `compile`) is compiled in. A model with
    symbolic dimensions keeps them: one artifact for every shape (`input_shapes=` fixes
    them instead). One whose only symbol is a separable batch is compiled for one sample
    (`<prefix>_run` runs one, `<prefix>_run_shaped` any number). `onnxc.load(directory)`
    runs a host artifact in Python.
    `quiet=True`: no progress line on a terminal (as for `compile`)."""
    check_artifact_arguments(**locals())
    from onnxc.runtime import artifact

    options = CompileOptions.of(opt_level=opt_level, num_threads=num_threads,
                                input_shapes=input_shapes, precision=precision, target=target)
    with _StageLog(verbose, quiet) as log:
        lowered = lower_to_llvm(model, log, options, per_sample=True)
        if lowered.abi.symbolic is not None and lowered.batch is not None:
            # a batch-separable model with other symbolic sizes: one artifact for
            # every batch size, as the symbols say (not run per sample)
            lowered = lower_to_llvm(model, log, options)
        with log.stage("artifact"):
            return artifact.build(lowered, directory, prefix)


@dataclass
class LoweredModel:
    """A model lowered to one LLVM module, with everything a CompiledModel (or an
    ahead-of-time artifact) is made of besides the machine code."""

    llvm_module: Any
    """the llvmlite `ir.Module` (its entry wrapper is `WRAPPER_NAME`), or for the JIT the
    runtime.jit.PendingNativeModule it is being compiled into"""
    abi: ModelABI
    constants: list[Any]
    constant_names: list[str]
    input_defaults: dict[str, Any]
    batch: BatchAxis | None
    """the batch axis the model was compiled one sample of (its rows are in the ABI)"""


def lower_to_llvm(model, log: _StageLog, options: CompileOptions,
                  per_sample: bool = False, for_jit: bool = False,
                  collector: CollectorPause | None = None) -> LoweredModel:
    """Import, graph passes, graph -> loops, the entry ABI and loops -> LLVM IR, for
    `options.target` (recorded on the module: onnxc.target): every stage but machine code.
    `per_sample`: a batch-separable model always runs once per sample (ahead-of-time
    artifacts, which take static shapes). `for_jit`: a large model's LLVM IR may be streamed to code-generation
    workers as it is emitted (`llvm_module` is then a PendingNativeModule). Garbage
    collection is paused throughout (onnxc/collector.py), by `collector` when the caller
    holds the pause."""
    if collector is not None:
        return _lower_to_llvm(model, log, options, per_sample, for_jit, collector)
    with collector_paused() as own:
        return _lower_to_llvm(model, log, options, per_sample, for_jit, own)


def _lower_to_llvm(model, log: _StageLog, options: CompileOptions, per_sample: bool,
                   for_jit: bool, collector) -> LoweredModel:
    given = model
    model, batch, separable = _static_model(model, options.shapes)
    if separable is not None and not per_sample:
        try:
            lowered = _lower(model, log, options, None, for_jit, collector)
        except LoweringError:  # an op has no kernel for symbolic sizes: one sample after all
            pass
        else:
            symbolic = lowered.abi.symbolic
            assert symbolic is not None
            lowered.abi = dataclasses.replace(
                lowered.abi, symbolic=dataclasses.replace(symbolic, separable_batch=separable))
            return lowered
    if separable is not None:
        model, batch = _per_sample(load_model(given), separable)
    return _lower(model, log, options, batch, for_jit, collector)


def _lower(model, log: _StageLog, options: CompileOptions, batch: BatchAxis | None,
           for_jit: bool, collector) -> LoweredModel:
    ctx = pipeline.make_context()
    with log.stage(pipeline.TIMED_AS["import"]):
        module = pipeline.import_model(model)
    with log.stage(pipeline.TIMED_AS["graph-passes"]):
        passes = pipeline.compile_passes(options)["graph-passes"]
        pipeline.optimize_graph(ctx, module, passes, verify_numerics=options.verify_numerics)
        collector.collect()  # what the rewrites replaced (docs: onnxc/collector.py)
    return lower_graph(ctx, module, log, options, batch, for_jit)


def lower_graph(ctx, module: ModuleOp, log: _StageLog, options: CompileOptions,
                batch: BatchAxis | None = None, for_jit: bool = False) -> LoweredModel:
    """The stages of `lower_to_llvm` after the graph passes, on a graph-dialect `module`
    (also what `onnxc-opt --emit=lib` builds its library from). `for_jit`: a large model's
    LLVM IR goes to code-generation lanes as it is emitted (pipeline.start_codegen), and
    when its workers start before graph-to-loops, its convolution and GEMM kernels as
    graph-to-loops builds them (lowering/early_kernels.py)."""
    inputs, outputs = _signature(module)
    precision, threads, target = options.precision, options.num_threads, options.target
    set_module_target(module, target)  # what its passes build for
    passes = pipeline.compile_passes(options)
    forecast = pipeline.forecast_kernels(module) if for_jit else None
    spare = pipeline.prestart_codegen(forecast) if forecast is not None else None
    with spare or nullcontext():  # ends the workers lower_to_llvm_ir did not take
        early = (pipeline.start_early_kernels(spare, target, threads, forecast)
                 if spare is not None and forecast is not None else None)
        try:
            with log.stage(pipeline.TIMED_AS["graph-to-loops"]):  # loops-abi timed with it
                with compiling_early(early):
                    pipeline.lower_graph_to_loops(ctx, module, passes["graph-to-loops"])
                arrays = constant_arrays(module)  # bind-constants takes them out of the IR
                pipeline.apply_loops_abi(ctx, module, passes["loops-abi"])
        except BaseException:
            if early is not None:
                early.pending.abort()
            raise
        entry = entry_function(module)
        constant_names = string_list(entry, CONSTANTS_ATTR)
        sites = check_sites(entry)
        rows = None if batch is None else (
            tuple(batch.inputs.get(s.name, 0) for s in inputs),
            tuple(batch.outputs.get(s.name, 0) for s in outputs))
        abi = ModelABI(
            tuple(inputs), tuple(outputs), _int_attr(entry, ARENA_BYTES_ATTR),
            _int_attr(entry, INTERMEDIATE_BYTES_ATTR), tuple(sites),
            _int_attr(entry, STATUS_OFFSET_ATTR) if sites else -1, threads, precision, target,
            rows, symbolic_signature(entry))
        lowered = LoweredModel(None, abi, [arrays[name] for name in constant_names],
                               constant_names, input_defaults(entry), batch)
        entry_name = entry.sym_name.data
        with log.stage(pipeline.TIMED_AS["loops-to-llvm"]):  # llvm-ir is timed with it
            lowered.llvm_module = pipeline.lower_to_llvm_ir(
                ctx, module, target, entry_name, threads, streamed=for_jit, spare=spare,
                early=early)
    return lowered


def _compile_static(model, log: _StageLog, options: CompileOptions):
    """The compile itself: (the CompiledModel, its NativeModule, the names of its
    constants)."""
    if options.num_threads > 1:  # its parallel loops will call the pool: compiled while
        thread_pool.preload()    # this imports
    with collector_paused() as collector:
        lowered = lower_to_llvm(model, log, options, for_jit=True, collector=collector)
        with log.stage(pipeline.TIMED_AS["machine-code"]):
            # the loops IR is garbage now (its ops point at each other: only the collector
            # frees them, ~0.1 s for 86,000 objects); collected while the code-generation
            # lanes still compile its last chunks, not after
            collector.collect()
            native = pipeline.jit_compile(lowered.llvm_module, options.target)
    compiled = CompiledModel(native, native.function_address(WRAPPER_NAME), lowered.abi,
                             lowered.constants, lowered.input_defaults)
    return compiled, native, lowered.constant_names


STATIC_KERNEL_OPS = frozenset({
    "Conv", "ConvTranspose", "ConvInteger", "QLinearConv", "DeformConv", "MaxPool",
    "AveragePool", "LpPool", "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool",
    "MaxRoiPool", "RoiAlign", "MaxUnpool", "Resize", "Upsample", "GridSample", "Col2Im",
    "LRN", "InstanceNormalization", "SpaceToDepth", "DepthToSpace", "LSTM", "GRU", "RNN",
})
"""ONNX ops whose kernels take static image sizes (or a static batch: the recurrences): a
batch-separable model with one of them runs once per sample (the kernels keep their static
tiles), any other compiles its batch as a symbolic dimension, or once per sample after all
when its lowering finds an op without a symbolic kernel (one made by a graph pass) (one GEMM over every sample's rows: 0.6x the per-sample time for a
BERT encoder at seq 16, batch 8; never slower, benchmarks/batch_modes.py)."""


def _static_model(
    model: ModelLike, input_shapes: Mapping[str, Sequence[int]] | None
) -> tuple[ModelLike, BatchAxis | None, str | None]:
    """`model` with static input shapes, and its batch axis when compiled for one sample;
    or a batch-separable model to compile with its batch symbolic, and that batch's symbol
    (a run with no samples then gives empty outputs, as a per-sample run does).

    A model whose inputs are all static is returned as given."""
    # parsing is ~10 ms even for 100 MB of weights; external weight files are read only once,
    # by the importer, unless the shapes must be rewritten
    proto = load_model(model, external_data=input_shapes is not None)
    if input_shapes is not None:
        fixed = with_fixed_shapes(proto, {k: tuple(v) for k, v in input_shapes.items()})
        return fixed, None, None
    try:
        if symbolic_batch(proto) is None:
            return _parsed(model, proto), None, None
    except ShapeInferenceError:  # symbolic dims beyond a batch: compiled symbolically
        return _parsed(model, proto), None, None
    if not holds_all_data(proto):
        proto = load_model(model)  # with its external data now
    checked_model(proto)  # an unsupported op is the first thing to say, as without batch
    try:
        batch = batch_axis(proto)
    except ShapeInferenceError:  # a batch that is not separable: compiled symbolically
        return _parsed(model, proto), None, None
    assert batch is not None
    if not _op_types(proto.graph) & STATIC_KERNEL_OPS:
        return _parsed(model, proto), None, batch.symbol
    return with_batch(proto, batch.symbol, 1), batch, None


def _parsed(model: ModelLike, proto: onnx.ModelProto) -> ModelLike:
    """`model` for the importer, with `proto`, its parse, when that holds all of the
    model's data (no external weights left unread): parsed once, not twice."""
    if isinstance(model, onnx.ModelProto) or not holds_all_data(proto):
        return model
    return ParsedOnce(model, proto)


def _per_sample(proto: onnx.ModelProto, symbol: str) -> tuple[onnx.ModelProto, BatchAxis]:
    """A batch-separable model compiled for one sample (an artifact, or an op of it has no
    kernel for symbolic sizes)."""
    batch = batch_axis(proto)
    assert batch is not None and batch.symbol == symbol
    return with_batch(proto, symbol, 1), batch


def _op_types(graph: onnx.GraphProto) -> set[str]:
    """The op types of `graph` and of its subgraphs."""
    found = set()
    for node in graph.node:
        found.add(node.op_type)
        for attribute in node.attribute:
            for sub in [attribute.g, *attribute.graphs] if attribute.HasField("g") \
                    else attribute.graphs:
                found |= _op_types(sub)
    return found


def symbolic_signature(entry) -> SymbolicSignature | None:
    """The size symbols and dynamic arena slots the entry's ABI names, if it has any."""
    symbols = string_list(entry, SYMBOLS_ATTR)
    if not symbols:
        return None
    return SymbolicSignature(tuple(symbols), tuple(string_list(entry, DYNAMIC_ARENA_ATTR)),
                             tuple(string_list(entry, RUN_SYMBOLS_ATTR)),
                             run_bounds=tuple(string_list(entry, RUN_BOUNDS_ATTR)))


def _int_attr(entry, name: str) -> int:
    attr = entry.attributes.get(name)
    return attr.value.data if isinstance(attr, IntegerAttr) else 0
