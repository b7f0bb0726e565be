"""onnxc next to onnxruntime while other processes load the machine: time ratios per load.

For each load (nothing; N CPU-hog processes; a multi-threaded torch or numpy/OpenBLAS job,
every one of its threads busy in bursts with Python in between, as a torch job exporting
models is) this starts the load, lets it ramp up, then times onnxc and onnxruntime on each
model, each runtime in its own process (two engines' thread pools in one process spin
against each other), at the same thread count (default: onnxc's default, the CPUs this
process may use), in interleaved rounds (alternating which goes first), and prints the
median time per call and the onnxc/onnxruntime ratios (of the medians and of the means: a
stall shows in the mean first). The load is stopped before the next one starts.

    python benchmarks/contention.py [--models resnet50,mobilenet_v2_like,bert_encoder]
        [--loads quiet,hog1,hog2,torch] [--threads T] [--rounds 6] [--round-seconds 0.4]
    python benchmarks/contention.py --overhead    # cost of a parallel region, back to back

Loads: `quiet` (nothing), `hogN` (N processes spinning in a Python loop), `torch` (a small
CNN's forward passes on torch.get_num_threads() = the CPU count; needs torch, which is not a
dependency of onnxc), `blas` (numpy matmuls on OpenBLAS threads, the stand-in without torch).
Models: as benchmarks/bench.py (seeded random weights; onnxc's outputs are checked against
onnxruntime's once in each onnxc process). onnxc uses its disk compile cache.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
RAMP_SECONDS = 1.0  # a load's threads are all busy by then
SETTLE_SECONDS = 0.05  # the other engine's idle workers stop spinning before a round


# ---------------------------------------------------------------- loads (child processes)

HOG = "while True: pass"

TORCH_JOB = """
import torch
torch.set_num_threads({threads})
net = torch.nn.Sequential(
    torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.ReLU(),
    torch.nn.Conv2d(32, 64, 3, padding=1, stride=2), torch.nn.ReLU(),
    torch.nn.Conv2d(64, 64, 3, padding=1), torch.nn.ReLU(),
    torch.nn.Flatten(), torch.nn.LazyLinear(256),
).eval()
x = torch.randn(1, 3, 96, 96)
with torch.no_grad():
    while True:
        net(x)
        sum(range(20000))  # Python between the ops, as an exporter's tracing has
"""

BLAS_JOB = """
import os
import numpy as np
a = np.random.default_rng(0).random((384, 384), dtype=np.float32)
while True:
    for _ in range(4):
        a = np.tanh(a @ a)
    sum(range(20000))
"""


def _python(code: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def start_load(name: str) -> list[subprocess.Popen]:
    """The processes of load `name` (already running)."""
    cpus = os.cpu_count() or 1
    if name == "quiet":
        return []
    if name.startswith("hog"):
        return [_python(HOG) for _ in range(int(name[3:] or "1"))]
    if name == "torch":
        return [_python(TORCH_JOB.format(threads=cpus))]
    if name == "blas":
        env = dict(os.environ, OPENBLAS_NUM_THREADS=str(cpus))
        env.pop("OPENBLAS_CORETYPE", None)
        return [_python(BLAS_JOB, env)]
    raise SystemExit(f"unknown load {name!r}: quiet, hogN, torch or blas")


def stop_load(processes: Sequence[subprocess.Popen]) -> None:
    for process in processes:
        process.kill()
    for process in processes:
        process.wait()


def load_is_available(name: str) -> bool:
    if name != "torch":
        return True
    probe = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True,
                           check=False)
    return probe.returncode == 0


# ---------------------------------------------------------------- one runtime per process


def serve(runtime: str, model_name: str, threads: int) -> None:
    """Child process: build `runtime` on the model, then answer `run SECONDS` lines with the
    seconds of each call made in that time (after one untimed call)."""
    sys.path.insert(0, HERE)
    import numpy as np
    from bench import OrtRunner, build, feeds_for

    model = build(model_name)
    feeds = feeds_for(model_name, model)
    if runtime == "onnxc":
        import onnxc

        compiled = onnxc.compile(model, num_threads=threads)
        outs = [np.empty_like(a) for a in compiled.run(None, feeds)]
        reference = OrtRunner(model, feeds, 1)()
        for ours, theirs in zip(compiled.run(None, feeds, out=outs), reference):
            np.testing.assert_allclose(ours, theirs, rtol=1e-3, atol=1e-4)
        del reference

        def call() -> None:
            compiled.run(None, feeds, out=outs)
    else:
        call = OrtRunner(model, feeds, threads)
    print("ready", flush=True)
    for line in sys.stdin:
        seconds = float(line.split()[1])
        call()
        times: list[float] = []
        start = time.perf_counter()
        while len(times) < 3 or time.perf_counter() - start < seconds:
            before = time.perf_counter()
            call()
            times.append(time.perf_counter() - before)
        print(json.dumps(times), flush=True)


class Runtime:
    """A `serve` child process."""

    def __init__(self, runtime: str, model: str, threads: int):
        env = dict(os.environ)
        env.pop("OMP_WAIT_POLICY", None)  # as a user runs it
        self.name = runtime
        self.process = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--serve", runtime, "--models", model,
             "--threads", str(threads)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
        )

    def wait_ready(self) -> None:
        line = self.process.stdout.readline()
        if line.strip() != "ready":
            raise SystemExit(f"{self.name} worker failed to start (exit {self.process.wait()})")

    def round(self, seconds: float) -> list[float]:
        self.process.stdin.write(f"run {seconds}\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


# ---------------------------------------------------------------- region overhead

OVERHEAD_KERNEL = """
func.func @regions(%out: memref<64xi64>, %count: index, %trips: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %r = %c0 to %count step %c1 {
    scf.for %i = %c0 to %trips step %c1 {
      %v = arith.index_cast %r : index to i64
      memref.store %v, %out[%i] : memref<64xi64>
    } {onnxc.parallel}
  }
  func.return
}
"""


def region_overhead(threads: int, trips: int, count: int = 200_000, repeat: int = 5) -> float:
    """Median microseconds per parallel region of `trips` one-store iterations, `count`
    regions back to back in native code (no Python between them)."""
    import ctypes

    import numpy as np
    from xdsl.parser import Parser

    from onnxc.pipeline import lower_loops_to_llvm, make_context
    from onnxc.lowering.to_llvm.translate import to_llvmlite
    from onnxc.runtime.jit import NativeModule, host_target

    ctx = make_context()
    module = Parser(ctx, OVERHEAD_KERNEL).parse_module()
    lower_loops_to_llvm(ctx, module, num_threads=threads)
    host = host_target()
    native = NativeModule.from_llvm_ir(
        str(to_llvmlite(module, triple=host.triple, data_layout=host.data_layout)))
    fn = native.ctypes_function("regions", None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
    out = np.zeros(64, np.int64)
    fn(out.ctypes.data, 1000, trips)  # workers started and awake
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(out.ctypes.data, count, trips)
        samples.append((time.perf_counter() - start) / count * 1e6)
    assert (out[:trips] == count - 1).all()
    return statistics.median(samples)


def print_overheads(threads: int) -> None:
    print(f"per-region cost, regions back to back in native code, T={threads} "
          f"(T=1: a plain call); load average {os.getloadavg()[0]:.2f}")
    for trips in (2, 16, 64):
        us = [region_overhead(t, trips) for t in (1, threads)]
        print(f"  {trips:>3} one-store iterations: T=1 {us[0]:.3f} us, T={threads} "
              f"{us[1]:.3f} us", flush=True)


# ---------------------------------------------------------------- parent


@dataclass
class Result:
    model: str
    load: str
    onnxc: list[float]
    ort: list[float]

    @property
    def median_ratio(self) -> float:
        return statistics.median(self.onnxc) / statistics.median(self.ort)

    @property
    def mean_ratio(self) -> float:
        return statistics.fmean(self.onnxc) / statistics.fmean(self.ort)


def measure(runtimes: Sequence[Runtime], rounds: int, seconds: float) -> list[list[float]]:
    samples: list[list[float]] = [[] for _ in runtimes]
    for r in range(rounds):
        order = range(len(runtimes)) if r % 2 == 0 else reversed(range(len(runtimes)))
        for i in order:
            time.sleep(SETTLE_SECONDS)
            samples[i] += runtimes[i].round(seconds)
    return samples


def geomean(values: Sequence[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def main(argv: Sequence[str] | None = None) -> list[Result]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet50,mobilenet_v2_like,bert_encoder")
    parser.add_argument("--loads", default="quiet,hog1,hog2,torch")
    parser.add_argument("--threads", type=int, help="both engines (default: onnxc's default)")
    parser.add_argument("--rounds", type=int, default=6, help="timed rounds per engine and load")
    parser.add_argument("--round-seconds", type=float, default=0.4)
    parser.add_argument("--overhead", action="store_true",
                        help="only measure the cost of an empty parallel region")
    parser.add_argument("--serve", choices=["onnxc", "ort"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.threads is None:
        from onnxc.runtime.threads import default_num_threads

        args.threads = default_num_threads()
    if args.serve:
        serve(args.serve, args.models, args.threads)
        return []
    if args.overhead:
        print_overheads(args.threads)
        return []
    loads = args.loads.split(",")
    for name in loads:
        if not load_is_available(name):
            raise SystemExit(f"load {name!r} needs torch (pip install torch), or use blas")
    print(f"T={args.threads} for both engines, each in its own process; {args.rounds} "
          f"interleaved rounds of ~{args.round_seconds} s each; load average at start "
          f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print(f"{'model':<20}{'load':<8}{'onnxc ms':>10}{'ort ms':>9}{'median ratio':>14}"
          f"{'mean ratio':>12}{'onnxc p90':>11}{'ort p90':>9}", flush=True)
    results: list[Result] = []
    for model in args.models.split(","):
        runtimes = [Runtime("onnxc", model, args.threads), Runtime("ort", model, args.threads)]
        try:
            for runtime in runtimes:
                runtime.wait_ready()
            for load in loads:
                processes = start_load(load)
                try:
                    time.sleep(RAMP_SECONDS if processes else 0)
                    ours, theirs = measure(runtimes, args.rounds, args.round_seconds)
                finally:
                    stop_load(processes)
                result = Result(model, load, ours, theirs)
                results.append(result)
                p90 = [statistics.quantiles(s, n=10)[-1] * 1e3 for s in (ours, theirs)]
                print(f"{model:<20}{load:<8}{statistics.median(ours) * 1e3:>10.2f}"
                      f"{statistics.median(theirs) * 1e3:>9.2f}{result.median_ratio:>14.2f}"
                      f"{result.mean_ratio:>12.2f}{p90[0]:>11.2f}{p90[1]:>9.2f}", flush=True)
        finally:
            for runtime in runtimes:
                runtime.process.kill() if runtime.process.poll() is None else None
                runtime.process.wait()
    for load in loads:
        rows = [r for r in results if r.load == load]
        print(f"geometric mean onnxc/onnxruntime under {load}: median "
              f"{geomean([r.median_ratio for r in rows]):.2f}, mean "
              f"{geomean([r.mean_ratio for r in rows]):.2f} over {len(rows)} models")
    print(f"load average at end {os.getloadavg()[0]:.2f}")
    return results


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    main()
