"""Every stage of the compiler, in order, from ONNX import to machine code.

`onnxc.compile`, `onnxc.compile_artifact`, `onnxc-opt` (its --emit stages and
--print-pipeline) and the tests all go through here, so a stage changes in one place. STAGES
lists the stages as data; each has one function below, applied in STAGES order:

    import          ONNX model -> graph dialect                    import_model
    graph-passes    the graph passes of the -O level (or -p)       optimize_graph
    graph-to-loops  graph -> scf/memref/arith loops (precision)    lower_graph_to_loops
    loops-abi       the entry's calling convention (arena, ...)    apply_loops_abi
    loops-to-llvm   loops -> xDSL's llvm dialect, entry wrapper    lower_to_llvm_dialect
    llvm-ir         llvm dialect -> llvmlite LLVM IR               translate_to_llvm_ir
                    (onnxc.compile does both in one walk, without  lower_to_llvm_ir
                    the llvm dialect: lowering/to_llvm/direct.py)
    machine-code    LLVM IR -> JIT-compiled native code            jit_compile
                    (or an object file: runtime/artifact.py)

A stage that runs passes names them in `stage_passes` (registered names, see
onnxc.registry); `", ".join(...)` of them is text that `onnxc-opt -p` accepts.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from onnxc.errors import LoweringError
from onnxc.pass_manager import make_context, run_passes
from onnxc.pass_manager.verifier import verify_ir_requested, verify_module
from onnxc.precision import DEFAULT_PRECISION

if TYPE_CHECKING:
    from onnxc.compile_options import CompileOptions
    from onnxc.lowering.early_kernels import EarlyKernels
    from onnxc.passes.stats import OptimizationStats
    from onnxc.passes.verify_numerics import BisectReport
    from onnxc.runtime.jit import NativeModule, PendingNativeModule
    from onnxc.runtime.parallel_codegen import SpareWorkers
    from onnxc.target import Target


@dataclass(frozen=True)
class Stage:
    """One stage of the compile."""

    name: str
    timed_as: str
    """the name `onnxc.compilation.StageLog` times it under (and onnxc.progress shows)"""
    emits: tuple[str, ...]
    """the `onnxc-opt --emit` values that stop right after this stage"""
    summary: str


STAGES: tuple[Stage, ...] = (
    Stage("import", "import", (), "ONNX model -> graph dialect"),
    Stage("graph-passes", "graph-opt", ("graph",), "graph passes of the -O level"),
    Stage("graph-to-loops", "graph-to-loops", (), "graph -> loops, with the compute precision"),
    Stage("loops-abi", "graph-to-loops", ("loops",), "the entry function's calling convention"),
    Stage("loops-to-llvm", "loops-to-llvm", ("llvm-dialect",),
          "loops -> llvm dialect, with the entry wrapper"),
    Stage("llvm-ir", "loops-to-llvm", ("llvm-ir",), "llvm dialect -> LLVM IR (llvmlite)"),
    Stage("machine-code", "llvm-jit", ("asm", "obj", "lib"),
          "LLVM IR -> machine code (JIT, or object code for an artifact)"),
)

TIMED_AS: dict[str, str] = {stage.name: stage.timed_as for stage in STAGES}
"""Stage name -> the name its time and progress are reported under."""

EMIT_STAGES: tuple[str, ...] = tuple(emit for stage in STAGES for emit in stage.emits)
"""Every `onnxc-opt --emit` value, in pipeline order."""


# --------------------------------------------------------------------------- pass lists

GRAPH_TO_LOOPS: tuple[str, ...] = (
    "widen-half-precision", "insert-runtime-checks", "assign-layout", "fold-layout-converts",
    "fuse-pointwise-depthwise", "convert-graph-to-loops",
)
"""Graph dialect on tensors -> kernels of scf/memref/arith/math loops on static memrefs.
Run-time indices and divisors get their checks first (never optional: memory safety does not
depend on -O). fp16/bf16 ops without a half kernel compute in f32 between casts at every -O
level (passes/half_precision.py; at -O1 and above the graph levels did it already). Layouts
are a lowering decision (as in MLIR), so they are chosen here at every -O level: convolutions
and what their outputs flow through run in NHWC on SIMD hosts; then a 1x1 conv whose result
is too large for the cache fuses into the depthwise conv that reads it (a memory decision
too: passes/depthwise_fusion.py)."""


def graph_to_loops(precision: str = DEFAULT_PRECISION) -> tuple[str, ...]:
    """GRAPH_TO_LOOPS; with precision="bf16" the GEMMs and convs that can are marked to
    compute in bf16 first (lowering/compute_precision.py)."""
    if precision == DEFAULT_PRECISION:
        return GRAPH_TO_LOOPS
    at = GRAPH_TO_LOOPS.index("fuse-pointwise-depthwise")  # bf16 convs stay unfused
    mark = f"set-compute-precision{{precision={precision}}}"
    return (*GRAPH_TO_LOOPS[:at], mark, *GRAPH_TO_LOOPS[at:])


LOOPS_ABI: tuple[str, ...] = ("bind-constants", "inplace", "plan-memory", "return-check-status")
"""Fix the entry function's calling convention: one arena (elementwise results written over
dying inputs first), constants as arguments, and an i32 status: nonzero when a run-time check
failed, naming the check (the entry returns right after it)."""
PROFILE: tuple[str, ...] = ("profile-kernel-calls",)
"""With `profile=True`, after LOOPS_ABI: counters around every kernel call of the entry, in
the arena (lowering/profile_calls.py); without it the IR has none of them."""

LOOPS_TO_LLVM_PIPELINE: tuple[str, ...] = (
    "outline-parallel-loops",  # serial by default; loops_to_llvm_pipeline(n) threads them
    "convert-scf-to-cf-with-while",  # xDSL's convert-scf-to-cf, plus scf.while
    "convert-to-llvm",  # = convert-{arith,math,vector,memref,cf,func}-to-llvm in one walk
    "reconcile-unrealized-casts",
)
"""Loops -> the xDSL llvm dialect (lowering/to_llvm: its type conversion scheme)."""


def loops_to_llvm_pipeline(num_threads: int = 1) -> tuple[str, ...]:
    """LOOPS_TO_LLVM_PIPELINE with loops marked parallel split over `num_threads` threads."""
    if num_threads <= 1:
        return LOOPS_TO_LLVM_PIPELINE
    return (f"outline-parallel-loops{{num-threads={num_threads}}}", *LOOPS_TO_LLVM_PIPELINE[1:])


def loops_to_llvm(entry: str = "main", num_threads: int = 1) -> tuple[str, ...]:
    """Loops -> the xDSL llvm dialect, plus the `onnxc_entry(argv)` wrapper around `entry`;
    loops kernels mark parallel run on up to `num_threads` threads."""
    return (*loops_to_llvm_pipeline(num_threads), f"emit-entry-wrapper{{entry={entry}}}")


def stage_passes(name: str, *, precision: str = DEFAULT_PRECISION, entry: str = "main",
                 num_threads: int = 1) -> tuple[str, ...]:
    """The passes lowering stage `name` runs on the way to the llvm dialect (`onnxc-opt
    --emit` up to llvm-dialect and the stages after it; none for the stages that run no
    passes; the graph passes are the -O level's: onnxc.passes.levels)."""
    if name == "graph-to-loops":
        return graph_to_loops(precision)
    if name == "loops-abi":
        return LOOPS_ABI
    if name == "loops-to-llvm":
        return loops_to_llvm(entry, num_threads)
    return ()


def compile_passes(options: CompileOptions) -> dict[str, tuple[str, ...]]:
    """Stage name -> the pass specs `onnxc.compile` runs in it, in order, for `options`
    (`compile_artifact` and `onnxc-opt --emit=lib` too: they lower the same way). The
    compile reads its pass lists from here and `onnxc-opt --print-pipeline` prints them, so
    the printed pipeline is the one that runs. What is not listed is not a pass: the import,
    the LLVM IR (emitted in one walk of the loops module, lowering/to_llvm/direct.py, after
    the parallel loops are outlined) and the machine code."""
    from onnxc.pass_manager.pipeline_text import split_pipeline
    from onnxc.passes.levels import graph_pipeline

    graph = (graph_pipeline(options.opt_level) if options.pass_pipeline is None
             else options.pass_pipeline)
    return {
        "graph-passes": tuple(split_pipeline(graph) if isinstance(graph, str) else graph),
        "graph-to-loops": graph_to_loops(options.precision),
        "loops-abi": (*LOOPS_ABI, *PROFILE) if options.profile else LOOPS_ABI,
        "llvm-ir": _outline(options.num_threads),
    }


def lowering_passes(emit: str, **options: Any) -> tuple[str, ...]:
    """Every pass after the graph passes up to the stage that `onnxc-opt --emit=emit` stops
    after (`options` as for stage_passes)."""
    last = next(i for i, stage in enumerate(STAGES) if emit in stage.emits)
    start = next(i for i, stage in enumerate(STAGES) if stage.name == "graph-passes") + 1
    return tuple(p for stage in STAGES[start:last + 1]
                 for p in stage_passes(stage.name, **options))


# --------------------------------------------------------------------------- the stages


def import_onnx(model: Any) -> ModuleOp:
    """onnxc.frontend.import_onnx, imported on first use: onnx and the importer take about
    0.4 s to import, which every onnxc-opt run on .mlir text would pay for nothing (the lit
    suite starts onnxc-opt a few hundred times)."""
    from onnxc.frontend import import_onnx as import_onnx_model

    return import_onnx_model(model)


def import_model(model: Any) -> ModuleOp:
    """import: an ONNX model (path, bytes or ModelProto, static shapes) -> graph dialect."""
    return import_onnx(model)


def optimize_graph(
    ctx: Context, module: ModuleOp, passes: str | Sequence[str] | PassPipeline, *,
    verify_numerics: bool = False, stats: bool = False, verify: bool = True,
    on_report: Callable[[BisectReport], None] | None = None,
) -> OptimizationStats | None:
    """graph-passes: the graph pipeline (`passes.levels.graph_pipeline(opt_level)` or a
    user's; `onnxc-opt` gives its instrumented PassPipeline), optionally one pass at a time
    under the numpy evaluator (raising NumericDriftError at the first pass that changes the
    results; `on_report` sees the report first) and with statistics. `verify=False`: the
    caller's instrumentation verifies, or nothing does (`onnxc-opt --disable-verify`)."""
    from onnxc.passes.base import STATISTICS
    from onnxc.passes.stats import OptimizationStats, op_counts

    before = op_counts(module) if stats else None
    STATISTICS.reset()
    if verify_numerics:  # its evaluator imports ml_dtypes: 0.2 s of every onnxc-opt run
        from onnxc.passes.verify_numerics import NumericDriftError, bisect_pipeline

        specs = list(passes.passes) if isinstance(passes, PassPipeline) else passes
        report = bisect_pipeline(module, specs)
        if on_report is not None:
            on_report(report)
        if not report.ok:
            raise NumericDriftError(report)
    else:
        run_passes(ctx, module, passes, verify=verify)
    if before is None:
        return None
    return OptimizationStats(before, op_counts(module), STATISTICS.snapshot())


def lower_graph_to_loops(ctx: Context, module: ModuleOp,
                         passes: Sequence[str] = GRAPH_TO_LOOPS) -> None:
    """graph-to-loops (`compile_passes(...)["graph-to-loops"]`): verified with loops ->
    LLVM, once (pass_manager/verifier.py)."""
    run_passes(ctx, module, passes, verify=False)


def apply_loops_abi(ctx: Context, module: ModuleOp, passes: Sequence[str] = LOOPS_ABI) -> None:
    """loops-abi: verified with loops -> LLVM, once (pass_manager/verifier.py)."""
    run_passes(ctx, module, passes, verify=False)


def lower_to_llvm_dialect(ctx: Context, module: ModuleOp, entry: str = "main",
                          num_threads: int = 1) -> None:
    """loops-to-llvm: the loops module (entry ABI applied) -> llvm dialect, verified."""
    run_passes(ctx, module, stage_passes("loops-to-llvm", entry=entry, num_threads=num_threads))


def lower_to_llvm_ir(ctx: Context, module: ModuleOp, target: Target, entry: str = "main",
                     num_threads: int = 1, streamed: bool = False,
                     spare: SpareWorkers | None = None,
                     early: EarlyKernels | None = None) -> Any:
    """loops-to-llvm and llvm-ir in one walk (lowering/to_llvm/direct.py): the parallel loops
    of the loops module (entry ABI applied) are outlined and its LLVM IR is emitted with the
    `onnxc_entry` wrapper, without building the llvm dialect (which `--emit=llvm-dialect`
    still does, through the passes of stage_passes("loops-to-llvm")). The module is verified
    first only when `verify_loops()`.

    `streamed` (for the JIT): a module large enough for code-generation lanes
    (`start_codegen`) is emitted in chunks that they compile while the next is emitted, and
    a PendingNativeModule is returned instead of the IR (jit_compile links it). Each chunk's
    parallel loops are outlined just before it is emitted (`_outlined_one_by_one`). Its
    workers are the `spare` ones first (`prestart_codegen`; the caller ends the others).
    With `early` (`start_early_kernels`), its lanes take the rest of the module, which
    declares the early kernels."""
    from onnxc.lowering.to_llvm.direct import emit_llvm_chunks, emit_llvm_ir

    pending = early.pending if early is not None else None
    try:
        started = start_codegen(module, target, spare, pending) if streamed else None
        if started is None:
            run_passes(ctx, module, _outline(num_threads), verify=verify_loops())
            return emit_llvm_ir(module, triple=target.triple, data_layout=target.data_layout,
                                entry=entry)
        pending, chunks = started
        texts = emit_llvm_chunks(module, _outlined_one_by_one(ctx, module, chunks, num_threads),
                                 triple=target.triple, data_layout=target.data_layout,
                                 entry=entry)
        for chunk, text in zip(chunks, texts):
            pending.submit(text, chunk.strength_reduction)
        return pending
    except BaseException as error:
        if pending is not None:
            pending.abort()
        if isinstance(error, LoweringError):  # invalid IR from a pass is the real error
            run_passes(ctx, module, (), verify=True)
        raise


def _outline(num_threads: int) -> tuple[str, ...]:
    """The passes of the llvm-ir stage before the emission: `compile_passes`'s."""
    return loops_to_llvm_pipeline(num_threads)[:1]


def _outlined_one_by_one(ctx: Context, module: ModuleOp, chunks: list,
                         num_threads: int) -> Iterator:
    """`chunks` (of `start_codegen`), each as the emitter takes it, its functions' parallel
    loops outlined then (outline-parallel-loops, a function at a time, each body function
    joining its kernel's chunk). Done for the whole module first, it kept the other cores
    idle until the first chunk was out: MobileNetV2-like's outlining takes about 0.09 s."""
    from xdsl.dialects import func

    from onnxc.lowering.to_llvm.parallel import OutlineParallelLoopsPass, outline_parallel_loops
    from onnxc.pass_manager.verifier import record_piecewise_pass, verify_functions

    verify = verify_loops()
    if verify:
        run_passes(ctx, module, (), verify=True)
    record_piecewise_pass(module, OutlineParallelLoopsPass(num_threads))
    for chunk in chunks:
        functions = []
        for function in chunk.functions:
            functions.append(function)
            if isinstance(function, func.FuncOp):
                functions += outline_parallel_loops(function, num_threads)
        chunk.functions = functions
        if verify:
            verify_functions(module, functions, OutlineParallelLoopsPass.name)
        yield chunk


def start_codegen(module: ModuleOp, target: Target, spare: SpareWorkers | None = None,
                  pending: PendingNativeModule | None = None,
                  ) -> tuple[PendingNativeModule, list] | None:
    """Code-generation lanes for a loops `module` (entry ABI applied) large enough to share
    out, with the chunks of it they are to receive (`direct.plan_chunks`); None for a
    smaller one (STREAMED_MIN_OPS), or with one job (ONNXC_CODEGEN_JOBS=1, one CPU). The
    lanes are a thread of this process and a worker process for each other job: the `spare`
    ones started before graph-to-loops (`prestart_codegen`), or, without them, workers
    started now, from STREAMED_MIN_WORKER_OPS on (runtime/parallel_codegen.py). The lanes
    of `pending` (`start_early_kernels`) already compile its early kernels: they take the
    rest, whatever its size."""
    from onnxc.lowering.to_llvm.direct import plan_chunks
    from onnxc.runtime.jit import PendingNativeModule, codegen_jobs

    jobs = codegen_jobs()
    if jobs < 2:  # (early kernels' lanes, `pending`, exist only with two jobs or more)
        return None
    chunks = plan_chunks(module, STREAMED_CHUNKS_PER_JOB * jobs, STREAMED_MIN_CHUNK_OPS,
                         STREAMED_MAX_CHUNK_OPS)
    if pending is not None:
        return pending, chunks
    ops = sum(chunk.ops for chunk in chunks)
    if ops < STREAMED_MIN_OPS:
        return None
    workers = jobs - 1 if spare is not None or ops >= STREAMED_MIN_WORKER_OPS else 0
    return PendingNativeModule(target, workers, in_process=True, spare=spare), chunks


def start_early_kernels(spare: SpareWorkers, target: Target, num_threads: int,
                        forecast: KernelForecast) -> EarlyKernels:
    """The lanes of a streamed compile, started before graph-to-loops so that they compile
    its convolution and GEMM kernels while it builds the others (lowering/early_kernels.py):
    the thread and the `spare` workers of `prestart_codegen`. A model with few of them
    (`forecast.early_kernels`) splits them evenly over the lanes."""
    from onnxc.lowering.early_kernels import EarlyKernels
    from onnxc.runtime.jit import PendingNativeModule, codegen_jobs

    lanes = codegen_jobs()
    pending = PendingNativeModule(target, lanes - 1, in_process=True, spare=spare)
    per_chunk = max(1, math.ceil(forecast.early_kernels / lanes))
    return EarlyKernels(pending, target, num_threads, verify=verify_loops(),
                        chunk_kernels=per_chunk)


def prestart_codegen(forecast: KernelForecast) -> SpareWorkers | None:
    """For the JIT of a graph-dialect module (graph passes done) that is likely to gain
    from code-generation workers (`forecast.loops_ops` of PRESTARTED_MIN_WORKER_OPS or
    more): the workers, started now, so that their start-up runs during graph-to-loops,
    while this process leaves the other cores idle (runtime/parallel_codegen.py
    SpareWorkers). Interleaved compiles, median of seven, against starting them with the
    emission: ResNet-50 2.63 -> 2.39 s, MobileNetV2-like 2.12 -> 1.91 s, squeezenet 1.69 ->
    1.58 s."""
    from onnxc.runtime.jit import codegen_jobs
    from onnxc.runtime.parallel_codegen import SpareWorkers

    jobs = codegen_jobs()
    if jobs < 2 or forecast.loops_ops < PRESTARTED_MIN_WORKER_OPS:
        return None
    return SpareWorkers(jobs - 1)


FORECAST_KERNEL_OPS = 100
"""Loops ops of an ordinary kernel, for `KernelForecast.loops_ops`; a kernel rule's `weight`
scales it (a convolution's 3: its fused epilogue, tiles and remainders,
lowering/graph_to_loops/kernels.py `forecast_weight`). graph-to-loops builds one kernel per
distinct op, properties and types, so repeated layers add calls, not kernels. Measured
(distinct convolutions + other kernels -> loops ops): ResNet-50 24 + 5 -> 7,800,
MobileNetV2-like 27 + 3 -> 9,400, squeezenet 18 + 9 -> 6,000, shufflenet 17 + 18 -> 8,100,
BERT 0 + 18 -> 1,800-1,950 for 1, 2 or 4 layers."""


@dataclass(frozen=True)
class KernelForecast:
    """What graph-to-loops will build of a graph-dialect module, from its distinct kernels
    (op, properties, types; constants and views make none): taken once per compile
    (`forecast_kernels`; densenet121's 193 kernels take 12 ms), it decides whether
    workers start early and how the early kernels are chunked."""

    kinds: tuple[str, ...]
    """the op name of each distinct kernel"""

    @property
    def loops_ops(self) -> int:
        """About how many loops ops graph-to-loops will make, convolutions weighing most."""
        from onnxc.lowering.graph_to_loops.kernels import forecast_weight

        return sum(FORECAST_KERNEL_OPS * forecast_weight(name) for name in self.kinds)

    @property
    def early_kernels(self) -> int:
        """About how many early kernels (early_kernels.EARLY_KERNELS) it will build."""
        from onnxc.lowering.early_kernels import EARLY_KERNELS

        return sum(1 for name in self.kinds if name in EARLY_KERNELS)


def forecast_kernels(module: ModuleOp) -> KernelForecast:
    """The KernelForecast of a graph-dialect `module`."""
    from onnxc.dialects.graph import ConstantOp, is_view

    kernels: set[tuple] = set()
    kinds: list[str] = []
    for op in module.walk():
        if not op.name.startswith("graph.") or isinstance(op, ConstantOp) or is_view(op):
            continue
        key = (op.name, tuple(sorted(op.properties.items())), tuple(op.operand_types),
               tuple(op.result_types))
        if key not in kernels:
            kernels.add(key)
            kinds.append(op.name)
    return KernelForecast(tuple(kinds))


STREAMED_MIN_OPS = 600
"""Loops ops from which the JIT streams a model's LLVM IR to code-generation lanes: two
chunks (STREAMED_MIN_CHUNK_OPS), so that one compiles while the next is emitted. Below it a
model is emitted and compiled in one piece, as are the test suite's one-node models."""
STREAMED_MIN_WORKER_OPS = 3000
"""Loops ops from which worker processes started with the emission join the thread lane. A
worker costs about 0.2 s of CPU to start; started then, it is paid on the same two cores as
the emission. With the thread alone, the 2-layer BERT (1,900 ops, about 0.5 s of LLVM)
compiled in 1.06-1.22 s at best against 1.18-1.42 s in one piece (three interleaved
series); two workers started with the emission had gained it nothing (1.30 s in one piece
against 1.55 s). MobileNetV2-like (9,400 ops) and ResNet-50 (7,800) gain 0.7-1 s from
workers. For them the thread replaces one worker: the same two lanes once the emission is
done, 0.2 s of CPU less (ResNet-50 2.66-2.70 s at best against 2.77-2.91 s with two
workers)."""
PRESTARTED_MIN_WORKER_OPS = 1000
"""Forecast loops ops from which the workers start before graph-to-loops
(`prestart_codegen`). Their start-up then runs on a core the compile leaves idle, so a
module too small to pay for a worker started with the emission gains from one: the thread
alone leaves LLVM's last chunks to one core while the other waits. Interleaved compiles,
median of eight to ten, thread alone against thread and prestarted worker: BERT 1.57 ->
1.02 s (2 layers, 1,900 loops ops), 1.29 -> 0.95 s (1 layer, 1,800), 1.83 -> 1.54 s (4
layers, 1,950)."""
STREAMED_CHUNKS_PER_JOB = 4
STREAMED_MIN_CHUNK_OPS = 300
STREAMED_MAX_CHUNK_OPS = 1500
"""Chunks are of four per worker, in loops ops, within these bounds: each is one LLVM module,
with its own set-up (a few ms), but the workers wait for the first, and the compile for the
last (densenet121 has 29,500 loops ops). With two per worker (1,000-3,000 ops), ResNet-50's
workers still had 0.8 s of work when the last chunk was emitted; with four, 0.4 s."""


def verify_loops() -> bool:
    """Whether the loops module is verified before its LLVM IR is emitted: with
    ONNXC_VERIFY_IR=1 (the test suite sets it). Off by default, as in release builds of
    LLVM: it cost about 1 s of ResNet-50's compile and finds only onnxc bugs, which still
    surface without it: the emitter and llvmlite check operand types, LLVM verifies the
    module, and an emitter failure verifies the module then, to blame the pass that broke
    it (pass_manager/verifier.py)."""
    return verify_ir_requested()


def translate_to_llvm_ir(module: ModuleOp, target: Target) -> Any:
    """llvm-ir: the llvmlite module of an llvm-dialect `module`, for `target`'s triple and
    data layout."""
    from onnxc.lowering.to_llvm.translate import to_llvmlite

    return to_llvmlite(module, triple=target.triple, data_layout=target.data_layout)


def jit_compile(llvm_module: Any, target: Target) -> NativeModule:
    """machine-code: LLVM IR optimised and JIT-compiled for `target` (runtime/jit.py; an
    artifact's object code is emitted by runtime/artifact.py from the same LLVM IR), or
    the objects of a streamed module (`lower_to_llvm_ir(streamed=True)`) linked."""
    from onnxc.runtime.jit import NativeModule, PendingNativeModule

    if isinstance(llvm_module, PendingNativeModule):
        return llvm_module.finish()
    return NativeModule.from_llvm_ir(llvm_module, target=target)


def lower_loops_to_llvm(ctx: Context, module: ModuleOp, num_threads: int = 1) -> None:
    """LOOPS_TO_LLVM_PIPELINE alone on a loops module without an entry ABI (hand-written
    kernels in tests and benchmarks); the result is pure `llvm` dialect, and invalid IR is a
    LoweringError."""
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


__all__ = [
    "EMIT_STAGES",
    "GRAPH_TO_LOOPS",
    "LOOPS_ABI",
    "LOOPS_TO_LLVM_PIPELINE",
    "PRESTARTED_MIN_WORKER_OPS",
    "STAGES",
    "TIMED_AS",
    "KernelForecast",
    "Stage",
    "apply_loops_abi",
    "compile_passes",
    "forecast_kernels",
    "graph_to_loops",
    "import_model",
    "jit_compile",
    "loops_to_llvm",
    "loops_to_llvm_pipeline",
    "lower_graph_to_loops",
    "lower_loops_to_llvm",
    "lower_to_llvm_dialect",
    "lower_to_llvm_ir",
    "lowering_passes",
    "make_context",
    "optimize_graph",
    "prestart_codegen",
    "run_passes",
    "stage_passes",
    "start_codegen",
    "translate_to_llvm_ir",
    "verify_loops",
]
