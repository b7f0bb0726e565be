"""One inference of a model in each runtime `onnxc bench` compares, prepared once.

Every runner binds fixed inputs and writes preallocated outputs, so a timed call is the
inference alone: onnxc `run(..., out=)`; onnxruntime ORT_ENABLE_ALL with IOBinding (it
otherwise pays 4-7% allocating and page-faulting its outputs on every call),
intra_op_num_threads=T, inter_op_num_threads=1; OpenVINO `compile_model(path, "CPU")` with
INFERENCE_NUM_THREADS=T, the LATENCY hint and f32 inference precision (its default computes
floats in bf16 on CPUs that have it, which would not compare with onnxc's fp32), shared
input and output buffers.

onnxruntime and OpenVINO are the `bench` extra, imported here lazily and only for the
runtime asked for: onnxc's own execution path never imports them.
"""

from __future__ import annotations

import importlib
import importlib.util
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType

import numpy as np

from onnxc.errors import InvalidArgumentError, ToolchainError

REFERENCE = "onnxc"
COMPARABLE = ("onnxruntime", "openvino")
"""The runtimes `--compare` accepts, each the name of its Python module."""

INSTALL_HINT = "pip install 'onnxc[bench]'"


@dataclass
class Runner:
    """A prepared model: `call()` runs one inference and returns the outputs in graph
    order (the same preallocated arrays every call)."""

    call: Callable[[], Sequence[np.ndarray]]
    prepare_seconds: float
    """compile (onnxc) or session creation (the others), first inference excluded"""
    version: str
    details: dict[str, float] = field(default_factory=dict)
    """runtime-specific figures (onnxc: its arena and intermediate bytes)"""


def parse_compare(text: str) -> list[str]:
    """The runtimes of `--compare a,b` ("none": onnxc alone), InvalidArgumentError for an
    unknown name."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if names == ["none"]:
        return []
    unknown = [n for n in names if n not in COMPARABLE]
    if unknown or not names:
        raise InvalidArgumentError(
            f"--compare {text!r}: unknown runtime {', '.join(map(repr, unknown)) or '(none)'};"
            f" choose from {', '.join(COMPARABLE)} (comma-separated) or none")
    return list(dict.fromkeys(names))


def check_available(runtime: str) -> None:
    """ToolchainError naming the extra to install when `runtime` cannot be imported; looks
    the module up without importing it."""
    if runtime == REFERENCE:
        return
    try:
        found = importlib.util.find_spec(runtime) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise ToolchainError(f"{runtime} is not installed; it is a benchmark-only extra: "
                             f"{INSTALL_HINT}")


def import_runtime(runtime: str) -> ModuleType:
    """The runtime's module, ToolchainError (not a traceback) when it does not import."""
    try:
        return importlib.import_module(runtime)
    except ImportError as err:
        raise ToolchainError(f"{runtime} cannot be imported ({err}); it is a benchmark-only "
                             f"extra: {INSTALL_HINT}") from err


def make_runner(runtime: str, model_path: str, feeds: Mapping[str, np.ndarray], threads: int,
                *, opt_level: int | None = None, cache: bool = False) -> Runner:
    """`runtime` prepared on `model_path` with `feeds` bound, at `threads` threads."""
    if runtime == REFERENCE:
        return _onnxc_runner(model_path, feeds, threads, opt_level, cache)
    if runtime == "onnxruntime":
        return _onnxruntime_runner(model_path, feeds, threads)
    if runtime == "openvino":
        return _openvino_runner(model_path, feeds, threads)
    raise InvalidArgumentError(f"unknown runtime {runtime!r}; choose from "
                               f"{', '.join((REFERENCE, *COMPARABLE))}")


def _onnxc_runner(model_path: str, feeds: Mapping[str, np.ndarray], threads: int,
                  opt_level: int | None, cache: bool) -> Runner:
    """onnxc with its disk cache off unless asked, so the prepare time is a cold compile."""
    import onnxc

    options = {} if opt_level is None else {"opt_level": opt_level}
    start = time.perf_counter()
    compiled = onnxc.compile(model_path, num_threads=threads,
                             cache_dir=None if cache else False, **options)
    prepare = time.perf_counter() - start
    bound = dict(feeds)
    outputs = [np.empty_like(a) for a in compiled.run(None, bound)]
    return Runner(lambda: compiled.run(None, bound, out=outputs), prepare, onnxc.__version__,
                  {"arena_bytes": compiled.arena_bytes,
                   "intermediate_bytes": compiled.intermediate_bytes})


class OrtRunner:
    """An onnxruntime session bound once to fixed inputs and preallocated outputs."""

    def __init__(self, model: str | bytes, feeds: Mapping[str, np.ndarray], threads: int):
        ort = import_runtime("onnxruntime")
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self.version = ort.__version__
        self.session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        shaped = self.session.run(None, dict(feeds))  # output shapes may be symbolic
        self.outputs = [np.empty_like(a) for a in shaped]
        self.binding = self.session.io_binding()
        self._feeds = {k: np.ascontiguousarray(v) for k, v in feeds.items()}  # kept alive
        for name, value in self._feeds.items():
            self.binding.bind_cpu_input(name, value)
        for meta, out in zip(self.session.get_outputs(), self.outputs):
            self.binding.bind_output(meta.name, "cpu", 0, out.dtype, out.shape, out.ctypes.data)

    def __call__(self) -> list[np.ndarray]:
        self.session.run_with_iobinding(self.binding)
        return self.outputs


def _onnxruntime_runner(model_path: str, feeds: Mapping[str, np.ndarray],
                        threads: int) -> Runner:
    start = time.perf_counter()
    runner = OrtRunner(model_path, feeds, threads)
    return Runner(runner, time.perf_counter() - start, runner.version)


def _openvino_runner(model_path: str, feeds: Mapping[str, np.ndarray], threads: int) -> Runner:
    import onnx

    ov = import_runtime("openvino")
    start = time.perf_counter()
    compiled = ov.Core().compile_model(model_path, "CPU", {
        "INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY",
        "INFERENCE_PRECISION_HINT": "f32"})
    request = compiled.create_infer_request()
    prepare = time.perf_counter() - start
    # a port may carry several tensor names (an input read only by a Reshape also gets the
    # Reshape's output name) and `any_name` may be the other one: match the feed's name
    inputs = {port: np.ascontiguousarray(feeds[next(n for n in port.get_names() if n in feeds)])
              for port in compiled.inputs}
    ports = {name: port for port in compiled.outputs for name in port.get_names()}
    order = [o.name for o in onnx.load(model_path, load_external_data=False).graph.output]

    def call() -> list[np.ndarray]:
        result = request.infer(inputs, share_inputs=True, share_outputs=True)
        return [result[ports[name]] for name in order]

    return Runner(call, prepare, ov.__version__)
