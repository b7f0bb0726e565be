"""One runtime timed alone in a process of its own, for `onnxc bench`, and the parent's side.

Two runtimes in one process at T >= 2 threads each run a spinning thread pool; on a 2-core
machine the pools steal each other's cores and the timings say nothing (onnxc at T=2 came
out slower than at T=1 next to onnxruntime, and on par alone). So the parent starts

    python -m onnxc.tools.bench_worker RUNTIME MODEL.onnx INPUTS.npz OUTPUTS.npz --threads T

once per runtime and thread count, one after another. The worker prepares the runtime
(bench_runners.py), warms it up, times `--repeat` rounds (bench_timing.py), saves the
outputs of its first inference to OUTPUTS.npz (in graph output order) and prints one JSON
line: the per-call seconds of each round, the prepare time and the runtime's version. A
failure is a JSON line too, `{"error": ..., "kind": "ToolchainError"}` with exit status 1,
which the parent raises again as the same onnxc error.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from onnxc import errors
from onnxc.tools.bench_runners import COMPARABLE, REFERENCE, make_runner
from onnxc.tools.bench_timing import MIN_ROUND_SECONDS, round_samples
from onnxc.tools.diagnostics import one_line

_MESSAGE_ERRORS = (
    errors.ToolchainError, errors.CompilationError, errors.InvalidArgumentError,
    errors.InvalidInputError, errors.ModelLoadError, errors.ShapeInferenceError,
    errors.ResourceLimitError, errors.LoweringError,
)
"""onnxc errors a worker's message is raised again as (the others take more than a message:
they come back as OnnxcError with the same text)."""


@dataclass
class Measurement:
    """One runtime at one thread count: its round timings and first outputs."""

    runtime: str
    threads: int
    samples: list[float]
    """seconds per call, one per timed round"""
    prepare_seconds: float
    version: str
    outputs: list[np.ndarray]
    details: dict[str, float] = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        """Median seconds per call."""
        return statistics.median(self.samples)


@dataclass(frozen=True)
class TimingSettings:
    repeat: int = 10
    min_round_seconds: float = MIN_ROUND_SECONDS
    opt_level: int | None = None
    cache: bool = False


def measure(runtime: str, model_path: str, feeds: Mapping[str, np.ndarray], threads: int,
            settings: TimingSettings) -> Measurement:
    """Time `runtime` in this process (the worker's body)."""
    runner = make_runner(runtime, model_path, feeds, threads, opt_level=settings.opt_level,
                         cache=settings.cache)
    outputs = [np.array(a, copy=True) for a in runner.call()]
    samples = round_samples(runner.call, settings.repeat, settings.min_round_seconds)
    return Measurement(runtime, threads, samples, runner.prepare_seconds, runner.version,
                       outputs, runner.details)


def run_worker(runtime: str, model_path: str, inputs_path: str, outputs_path: str,
               threads: int, settings: TimingSettings) -> Measurement:
    """`measure` in a fresh Python process; its error raised here as the same onnxc error."""
    command = [sys.executable, "-m", "onnxc.tools.bench_worker", runtime, model_path,
               inputs_path, outputs_path, "--threads", str(threads),
               "--repeat", str(settings.repeat), "--min-time", repr(settings.min_round_seconds)]
    if settings.opt_level is not None:
        command += ["--opt-level", str(settings.opt_level)]
    if settings.cache:
        command.append("--cache")
    env = {**os.environ, "ONNXC_DEBUG": "0"}  # the worker reports errors as JSON, always
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    report = _last_json_line(done.stdout)
    if report is None or "error" in report:
        raise _worker_error(runtime, threads, done, report)
    if done.stderr.strip():
        sys.stderr.write(done.stderr)  # the runtime's own warnings
    with np.load(outputs_path, allow_pickle=False) as saved:
        outputs = [saved[f"arr_{i}"] for i in range(len(saved.files))]
    return Measurement(runtime, threads, report["samples"], report["prepare_seconds"],
                       report["version"], outputs, report.get("details", {}))


def save_feeds(path: str, feeds: Mapping[str, np.ndarray]) -> None:
    """The feeds as arr_0, arr_1, ... and their names (any string, even `file`)."""
    np.savez(path, *feeds.values(), input_names=np.array(list(feeds), dtype=str))


def load_feeds(path: str) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as npz:
        names = [str(n) for n in npz["input_names"]]
        return {name: npz[f"arr_{i}"] for i, name in enumerate(names)}


def _last_json_line(stdout: str) -> dict | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                return None
    return None


def _worker_error(runtime: str, threads: int, done: subprocess.CompletedProcess,
                  report: dict | None) -> errors.OnnxcError:
    if report is not None and "error" in report:
        cls = getattr(errors, report.get("kind", ""), None)
        if cls in _MESSAGE_ERRORS:
            return cls(report["error"])
        return errors.OnnxcError(report["error"])
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    last = one_line(lines[-1]) if lines else "no output"
    return errors.OnnxcError(f"the {runtime} worker (T={threads}) exited with status "
                             f"{done.returncode} without a result: {last}")


def _describe(runtime: str, err: Exception) -> dict:
    """The JSON report of a failure: onnxc's errors by kind, anything else (a runtime that
    cannot run the model) as that runtime's error."""
    if isinstance(err, errors.OnnxcError):
        return {"error": one_line(str(err)) or type(err).__name__, "kind": type(err).__name__}
    return {"error": f"{runtime} failed: {type(err).__name__}: {one_line(str(err))}",
            "kind": "OnnxcError"}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m onnxc.tools.bench_worker",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("runtime", choices=(REFERENCE, *COMPARABLE))
    parser.add_argument("model", help="the .onnx file, every input static")
    parser.add_argument("inputs", help=".npz of the feeds (save_feeds)")
    parser.add_argument("outputs", help=".npz written with the outputs, arr_0, arr_1, ...")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--min-time", type=float, default=MIN_ROUND_SECONDS)
    parser.add_argument("--opt-level", type=int)
    parser.add_argument("--cache", action="store_true")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    settings = TimingSettings(args.repeat, args.min_time, args.opt_level, args.cache)
    try:
        feeds = load_feeds(args.inputs)
        result = measure(args.runtime, args.model, feeds, args.threads, settings)
        np.savez(args.outputs, *result.outputs)
    except Exception as err:  # noqa: BLE001 - every failure goes back to the parent as JSON
        print(json.dumps(_describe(args.runtime, err)), flush=True)
        return 1
    print(json.dumps({"runtime": result.runtime, "threads": result.threads,
                      "samples": result.samples, "prepare_seconds": result.prepare_seconds,
                      "version": result.version, "details": result.details}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
