"""A compile as a value: `Compilation` owns what one compile of one model uses (its frozen
`CompileOptions`, the xDSL context, the stage log) and its methods are the stages after the
import, in order: `optimize` (the graph passes), `lower` (graph -> loops, the entry ABI, the
LLVM IR: a `LoweredModel` with its `ModelABI`) and `jit` (machine code: a `CompiledModel`).
The pass lists come from `pipeline.compile_passes(options)`, so what `onnxc-opt
--print-pipeline` prints is what runs. `onnxc.compile`, `onnxc.compile_artifact`, `onnxc-opt
--emit=lib` and the tests compile through it; onnxc/api.py adds the batch strategy and the
cache around it.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import onnx
from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, TensorType
from xdsl.ir import Operation

from onnxc import pipeline
from onnxc.collector import CollectorPause, collector_paused
from onnxc.compile_options import CompileOptions
from onnxc.dialects.entry_abi import (
    ARENA_BYTES_ATTR,
    CONSTANTS_ATTR,
    DYNAMIC_ARENA_ATTR,
    INPUT_NAMES_ATTR,
    INTERMEDIATE_BYTES_ATTR,
    OUTPUT_NAMES_ATTR,
    PROFILE_OFFSET_ATTR,
    RUN_BOUNDS_ATTR,
    RUN_SYMBOLS_ATTR,
    STATUS_OFFSET_ATTR,
    SYMBOLS_ATTR,
    WRAPPER_NAME,
    check_sites,
    entry_function,
    input_defaults,
    profile_sites,
    string_list,
)
from onnxc.dialects.graph import Graph, shape_of
from onnxc.dialects.graph_traits import StaticSizesKernel
from onnxc.errors import LoweringError, OnnxcError, ShapeInferenceError
from onnxc.frontend.batch_axes import (
    BatchAxis,
    batch_axis,
    symbolic_batch,
    with_batch,
    with_fixed_shapes,
)
from onnxc.frontend.onnx_converters import checked_model
from onnxc.frontend.onnx_importer import ImportStopped, import_onnx, import_onnx_unless
from onnxc.frontend.onnx_model import ParsedOnce, holds_all_data, load_model
from onnxc.lowering.bind_constants import constant_arrays, numpy_dtype
from onnxc.lowering.early_kernels import compiling_early
from onnxc.progress import CompileProgress
from onnxc.runtime import thread_pool
from onnxc.runtime.compiled_model import CompiledModel, TensorSpec
from onnxc.runtime.model_abi import ModelABI
from onnxc.runtime.symbolic_shapes import SymbolicSignature
from onnxc.target import set_module_target

ModelLike = str | os.PathLike | bytes | onnx.ModelProto


class StageLog:
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


@dataclass
class Compilation:
    """One compile of one model with `options`: the stages are its methods."""

    options: CompileOptions
    log: StageLog = field(default_factory=lambda: StageLog(False))
    ctx: Context = field(default_factory=pipeline.make_context)

    def import_model(self, model: Any) -> ModuleOp:
        """import: an ONNX model (static shapes, or symbolic ones) -> graph dialect."""
        with self.log.stage(pipeline.TIMED_AS["import"]):
            return pipeline.import_model(model)

    def optimize(self, module: ModuleOp, collector=None) -> None:
        """graph-passes: the -O level's passes, or the user's pipeline."""
        with self.log.stage(pipeline.TIMED_AS["graph-passes"]):
            passes = pipeline.compile_passes(self.options)["graph-passes"]
            pipeline.optimize_graph(self.ctx, module, passes,
                                    verify_numerics=self.options.verify_numerics)
            if collector is not None:
                collector.collect()  # what the rewrites replaced (docs: onnxc/collector.py)

    def lower_to_llvm(self, model: Any, per_sample: bool = False, for_jit: bool = False,
                      collector: CollectorPause | None = None) -> LoweredModel:
        """Import, graph passes, graph -> loops, the entry ABI and loops -> LLVM IR, for
        `options.target` (recorded on the module: onnxc.target): every stage but machine code.
        `per_sample`: a batch-separable model always runs once per sample (ahead-of-time
        artifacts, which take static shapes). `for_jit`: a large model's LLVM IR may be
        streamed to code-generation workers as it is emitted (`llvm_module` is then a
        PendingNativeModule). Garbage collection is paused throughout (onnxc/collector.py), by
        `collector` when the caller holds the pause."""
        if collector is not None:
            return self._lower_to_llvm(model, per_sample, for_jit, collector)
        with collector_paused() as own:
            return self._lower_to_llvm(model, per_sample, for_jit, own)

    def _lower_to_llvm(self, model: Any, per_sample: bool, for_jit: bool,
                       collector: CollectorPause) -> LoweredModel:
        given = model
        plan = _static_model(model, self.options.shapes)
        model, batch, separable = plan.model, None, plan.symbol
        if separable is not None and not per_sample:
            module, read, failed = None, None, None
            try:
                with self.log.stage(pipeline.TIMED_AS["import"]):
                    module = import_onnx_unless(model, _has_static_kernel)
            except ImportStopped as stopped:  # an op of static kernels: once per sample
                read = stopped.initializers
            except OnnxcError as err:  # as before: raised unless one sample has static kernels
                failed = err
            if module is None:
                return self._lower_one_sample(plan, for_jit, collector, read, failed)
            del plan  # nor its proto
            try:
                self.optimize(module, collector)
                lowered = self.lower(module, None, for_jit)
            except LoweringError:  # an op has no kernel for symbolic sizes: one sample after all
                pass
            else:
                symbolic = lowered.abi.symbolic
                assert symbolic is not None
                lowered.abi = dataclasses.replace(
                    lowered.abi, symbolic=dataclasses.replace(symbolic, separable_batch=separable))
                return lowered
            model, batch = _per_sample(load_model(given), separable)
        elif separable is not None:
            model, batch = plan.one_sample()
        return self.lower_model(model, batch, for_jit, collector)

    def _lower_one_sample(self, plan: _BatchPlan, for_jit: bool, collector: CollectorPause,
                          initializers: Mapping[str, Any] | None = None,
                          symbolic_error: OnnxcError | None = None) -> LoweredModel:
        """A separable model lowered for one sample, with the `initializers` the import of
        its symbolic form read; `symbolic_error`, what that import raised, is raised instead
        unless it has an op of static kernels (it was compiled per sample without trying
        its symbolic form then)."""
        model, batch = plan.one_sample()
        del plan
        with self.log.stage(pipeline.TIMED_AS["import"]):
            module = import_onnx(model, initializers=initializers)
        if symbolic_error is not None and not any(map(_has_static_kernel, module.walk())):
            raise symbolic_error
        self.optimize(module, collector)
        return self.lower(module, batch, for_jit)

    def lower_model(self, model: Any, batch: BatchAxis | None = None, for_jit: bool = False,
                    collector=None) -> LoweredModel:
        """import, graph passes and `lower`."""
        module = self.import_model(model)
        self.optimize(module, collector)
        return self.lower(module, batch, for_jit)

    def lower(self, module: ModuleOp, batch: BatchAxis | None = None,
              for_jit: bool = False) -> LoweredModel:
        """The stages of `lower_to_llvm` after the graph passes, on a graph-dialect `module`
        (also what `onnxc-opt --emit=lib` builds its library from). `for_jit`: a large model's
        LLVM IR goes to code-generation lanes as it is emitted (pipeline.start_codegen), and
        when its workers start before graph-to-loops, its convolution and GEMM kernels as
        graph-to-loops builds them (lowering/early_kernels.py)."""
        ctx, log, options = self.ctx, self.log, self.options
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
                    with compiling_early(module, early):
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
                rows, symbolic_signature(entry), tuple(profile_sites(entry)),
                _int_attr(entry, PROFILE_OFFSET_ATTR) if PROFILE_OFFSET_ATTR in entry.attributes
                else -1)
            lowered = LoweredModel(None, abi, [arrays[name] for name in constant_names],
                                   constant_names, input_defaults(entry), batch)
            entry_name = entry.sym_name.data
            with log.stage(pipeline.TIMED_AS["loops-to-llvm"]):  # llvm-ir is timed with it
                lowered.llvm_module = pipeline.lower_to_llvm_ir(
                    ctx, module, target, entry_name, threads, streamed=for_jit, spare=spare,
                    early=early)
        return lowered

    def jit(self, model: Any) -> tuple[CompiledModel, Any, list[str]]:
        """The compile for this process: `lower_to_llvm` then machine code; (the
        CompiledModel, its NativeModule, the names of its constants)."""
        options, log = self.options, self.log
        if options.num_threads > 1:  # its parallel loops will call the pool: compiled while
            thread_pool.preload()    # this imports
        with collector_paused() as collector:
            lowered = self.lower_to_llvm(model, for_jit=True, collector=collector)
            with log.stage(pipeline.TIMED_AS["machine-code"]):
                # the loops IR is garbage now (its ops point at each other: only the collector
                # frees them, ~0.1 s for 86,000 objects); collected while the code-generation
                # lanes still compile its last chunks, not after
                collector.collect()
                native = pipeline.jit_compile(lowered.llvm_module, options.target)
        compiled = CompiledModel(native, native.function_address(WRAPPER_NAME), lowered.abi,
                                 lowered.constants, lowered.input_defaults)
        return compiled, native, lowered.constant_names


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


STATIC_KERNEL_OPS: frozenset[type[Operation]] = frozenset(
    op for op in Graph.operations if op.has_trait(StaticSizesKernel))
"""Graph ops whose kernels are built for static sizes (their trait StaticSizesKernel: image
sizes' register tiles, a recurrence's batch): a batch-separable model that imports to one
of them runs once per sample (the kernels keep their static tiles), any other compiles its
batch as a symbolic dimension, or once per sample after all when its lowering finds an op
without a symbolic kernel (one made by a graph pass) (one GEMM over every sample's rows:
0.6x the per-sample time for a BERT encoder at seq 16, batch 8; never slower,
benchmarks/batch_modes.py)."""


def _has_static_kernel(op: Operation) -> bool:
    return type(op) in STATIC_KERNEL_OPS


@dataclass
class _BatchPlan:
    """How a model's batch is compiled (`_static_model`)."""

    model: ModelLike
    """the model to import: static shapes, or its separable batch symbolic"""
    separable: BatchAxis | None = None
    """the separable batch, symbolic in `model`"""
    proto: onnx.ModelProto | None = None
    """`model` parsed, when separable"""

    @property
    def symbol(self) -> str | None:
        return None if self.separable is None else self.separable.symbol

    def one_sample(self) -> tuple[ModelLike, BatchAxis]:
        """A separable model for one sample, and its batch axis."""
        assert self.proto is not None and self.separable is not None
        return with_batch(self.proto, self.separable.symbol, 1), self.separable


def _static_model(model: ModelLike,
                  input_shapes: Mapping[str, Sequence[int]] | None) -> _BatchPlan:
    """`model` with static input shapes; or a batch-separable model to compile with its
    batch symbolic, with that batch's symbol (a run with no samples then gives empty
    outputs, as a per-sample run does) and its form for one sample (an op of static
    kernels, STATIC_KERNEL_OPS, makes it run once per sample).

    A model whose inputs are all static is returned as given."""
    # parsing is ~10 ms even for 100 MB of weights; external weight files are read only once,
    # by the importer, unless the shapes must be rewritten
    proto = load_model(model, external_data=input_shapes is not None)
    if input_shapes is not None:
        return _BatchPlan(with_fixed_shapes(proto, {k: tuple(v) for k, v in input_shapes.items()}))
    try:
        if symbolic_batch(proto) is None:
            return _BatchPlan(_parsed(model, proto))
    except ShapeInferenceError:  # symbolic dims beyond a batch: compiled symbolically
        return _BatchPlan(_parsed(model, proto))
    if not holds_all_data(proto):
        proto = load_model(model)  # with its external data now
    checked_model(proto)  # an unsupported op is the first thing to say, as without batch
    try:
        batch = batch_axis(proto)
    except ShapeInferenceError:  # a batch that is not separable: compiled symbolically
        return _BatchPlan(_parsed(model, proto))
    assert batch is not None
    return _BatchPlan(_parsed(model, proto), batch, proto)


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


__all__ = ["STATIC_KERNEL_OPS", "Compilation", "LoweredModel", "StageLog", "symbolic_signature"]
