"""onnxc next to onnxruntime on the performance work's models: latency, ratio, GFLOP/s, % of peak.

Both engines run in this one process on the same seeded models and inputs, interleaved
(alternating which goes first each round) after a warm-up; the table shows medians. Absolute
times on a shared machine are noise: compare the onnxc/onnxruntime ratios across runs.
onnxc is compiled with num_threads=T; onnxruntime gets ORT_ENABLE_ALL, intra_op_num_threads=T,
inter_op_num_threads=1 and IOBinding with preallocated outputs (it otherwise pays 4-7%
allocating and page-faulting its outputs on every call); onnxc likewise gets `run(..., out=)`. Every run checks onnxc's outputs
against onnxruntime's (rtol 1e-3, atol 1e-4).

    python benchmarks/bench.py [--threads 1,2] [--models resnet50,matmul_512] [--repeat 10]
                               [--opt-level 3] [--clock-ghz 3.9] [--cache] [--png out.png]

Models: onnxc.zoo.benchmark_models(), matmul_1024, and any model-zoo name (onnxc.zoo.ZOO_MODELS,
e.g. densenet121) with seeded random weights.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import onnx
import onnxruntime as ort

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from flops import count_flops

import onnxc
from onnxc.zoo import (
    ZOO_MODELS,
    benchmark_models,
    bert_inputs,
    expose_logits,
    load_zoo,
    matmul_model,
    random_inputs,
    randomize_weights,
)

def flops_per_cycle_per_core() -> int:
    """Two FMA pipes of the host's widest vectors, 2 flops per f32 lane: 64 with AVX-512
    (Zen 5), 32 with AVX2 (Zen 3)."""
    from onnxc.runtime.target import host_target

    return 2 * (host_target().vector_bits // 32) * 2
RTOL, ATOL = 1e-3, 1e-4
MIN_ROUND_SECONDS = 0.02  # each timed round repeats a fast model until it lasts this long
SETTLE_SECONDS = 0.05
"""Pause before each round: both engines' idle workers spin for a while after a call (onnxc's
pool ~0.2 ms, onnxruntime's longer); on 2 cores they would steal the other engine's time."""


def model_builders() -> dict[str, Callable[[], onnx.ModelProto]]:
    builders = dict(benchmark_models())
    builders["matmul_1024"] = lambda: matmul_model(1024)
    return builders


def build(name: str) -> onnx.ModelProto:
    """The named model; a classifier also outputs its logits, since random weights saturate
    its softmax to 0/1 and would hide errors from the check."""
    builders = model_builders()
    if name in builders:
        model = builders[name]()
    elif name in ZOO_MODELS:
        model = randomize_weights(load_zoo(name), seed=1)
    else:
        raise SystemExit(f"unknown model {name!r}; choose from "
                         f"{sorted(builders) + list(ZOO_MODELS)}")
    outputs = {o.name for o in model.graph.output}
    if any(n.op_type == "Softmax" and n.output[0] in outputs for n in model.graph.node):
        model = expose_logits(model)
    return model


def feeds_for(name: str, model: onnx.ModelProto) -> dict[str, np.ndarray]:
    return bert_inputs(model, seed=2) if name.startswith("bert") else random_inputs(model, seed=2)


def compile_model(model: onnx.ModelProto, opt_level: int, use_cache: bool, threads: int = 1):
    """onnxc.compile, with onnxc's disk cache off unless asked, so compile s is a cold compile."""
    saved = os.environ.get("ONNXC_CACHE")
    if not use_cache:
        os.environ["ONNXC_CACHE"] = "0"
    try:
        return onnxc.compile(model, opt_level=opt_level, num_threads=threads)
    finally:
        if saved is None:
            os.environ.pop("ONNXC_CACHE", None)
        else:
            os.environ["ONNXC_CACHE"] = saved


class OrtRunner:
    """An onnxruntime session bound once to fixed inputs and preallocated outputs."""

    def __init__(self, model: onnx.ModelProto, feeds: dict[str, np.ndarray], threads: int):
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self.session = ort.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
        shaped = self.session.run(None, feeds)  # output shapes may be symbolic in the model
        self.outputs = [np.empty_like(a) for a in shaped]
        self.binding = self.session.io_binding()
        self._feeds = {k: np.ascontiguousarray(v) for k, v in feeds.items()}
        for name, value in self._feeds.items():
            self.binding.bind_cpu_input(name, value)
        for meta, out in zip(self.session.get_outputs(), self.outputs):
            self.binding.bind_output(meta.name, "cpu", 0, out.dtype, out.shape, out.ctypes.data)

    def __call__(self) -> list[np.ndarray]:
        self.session.run_with_iobinding(self.binding)
        return self.outputs


def _calls_per_round(fn: Callable[[], object]) -> int:
    start = time.perf_counter()
    fn()
    once = time.perf_counter() - start
    return max(1, math.ceil(MIN_ROUND_SECONDS / max(once, 1e-7)))


def _round(fn: Callable[[], object], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls


def interleaved_medians(fns: Sequence[Callable[[], object]], repeat: int) -> list[float]:
    """Median seconds per call of each fn, timed in alternating rounds after a warm-up."""
    calls = [_calls_per_round(fn) for fn in fns]  # doubles as the warm-up
    samples: list[list[float]] = [[] for _ in fns]
    for r in range(repeat):
        order = range(len(fns)) if r % 2 == 0 else reversed(range(len(fns)))
        for i in order:
            time.sleep(SETTLE_SECONDS)  # the other engine's thread pool stops spinning
            fns[i]()  # wakes this engine's workers, untimed
            samples[i].append(_round(fns[i], calls[i]))
    return [statistics.median(s) for s in samples]


def numpy_add_bandwidth(elements: int, repeat: int) -> float:
    """GB/s of numpy's c = a + b into a preallocated c (reads 2, writes 1 array)."""
    a = np.random.default_rng(0).random(elements, dtype=np.float32)
    b, c = a.copy(), np.empty_like(a)
    (seconds,) = interleaved_medians([lambda: np.add(a, b, out=c)], max(repeat, 3))
    return 3 * a.nbytes / seconds / 1e9


@dataclass
class Row:
    model: str
    threads: int
    compile_s: float
    onnxc_s: float
    ort_s: float
    flops: int
    max_diff: float
    matches: bool
    io_bytes: int
    arena_mb: float  # onnxc's static memory plan
    intermediate_mb: float  # every intermediate tensor's size, summed (no reuse)

    @property
    def ratio(self) -> float:
        return self.onnxc_s / self.ort_s

    def gflops(self, seconds: float) -> float:
        return self.flops / seconds / 1e9


def _compare(ours: Sequence[np.ndarray], theirs: Sequence[np.ndarray]) -> tuple[float, bool]:
    diff = max(float(np.abs(a - b).max()) if a.size else 0.0 for a, b in zip(ours, theirs))
    ok = all(np.allclose(a, b, rtol=RTOL, atol=ATOL) for a, b in zip(ours, theirs))
    return diff, ok


def bench_model(name: str, threads: Sequence[int], args) -> list[Row]:
    model = build(name)
    feeds = feeds_for(name, model)
    flops = count_flops(model)
    rows = []
    for t in threads:
        start = time.perf_counter()
        compiled = compile_model(model, args.opt_level, args.cache, t)
        compile_s = time.perf_counter() - start
        ours = compiled.run(None, feeds)
        io_bytes = sum(a.nbytes for a in feeds.values()) + sum(a.nbytes for a in ours)
        theirs = OrtRunner(model, feeds, t)
        diff, ok = _compare(ours, [a.copy() for a in theirs()])
        outs = [np.empty_like(a) for a in ours]  # both engines write preallocated outputs
        onnxc_s, ort_s = interleaved_medians(
            [lambda compiled=compiled, outs=outs: compiled.run(None, feeds, out=outs), theirs], args.repeat
        )
        rows.append(Row(name, t, compile_s, onnxc_s, ort_s, flops, diff, ok, io_bytes,
                        compiled.arena_bytes / 2**20, compiled.intermediate_bytes / 2**20))
    return rows


HEADER = (f"{'model':<22}{'T':>2}{'compile s':>10}{'onnxc ms':>10}{'ort ms':>9}{'ratio':>7}"
          f"{'GFLOP':>8}{'onnxc GF/s':>11}{'ort GF/s':>9}{'onnxc %pk':>10}{'ort %pk':>8}"
          f"{'max|diff|':>10}{'arena MB':>9}{'interm MB':>10}  check")


def format_row(row: Row, peak_per_core: float) -> str:
    ours, theirs = row.gflops(row.onnxc_s), row.gflops(row.ort_s)
    ours_pk = 100 * ours / (peak_per_core * row.threads)
    ort_pk = 100 * theirs / (peak_per_core * row.threads)
    return (f"{row.model:<22}{row.threads:>2}{row.compile_s:>10.1f}{row.onnxc_s * 1e3:>10.2f}"
            f"{row.ort_s * 1e3:>9.2f}{row.ratio:>7.2f}{row.flops / 1e9:>8.3f}{ours:>11.1f}"
            f"{theirs:>9.1f}{ours_pk:>9.1f}%{ort_pk:>7.1f}%{row.max_diff:>10.1e}{row.arena_mb:>9.1f}"
            f"{row.intermediate_mb:>10.1f}  "
            f"{'ok' if row.matches else 'MISMATCH'}")


def geomean(values: Sequence[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def draw_png(rows: Sequence[Row], peak_per_core: float, path: str) -> bool:
    """The table as bars: latency (log scale) and % of peak per model; False without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    labels = [f"{r.model}\nT={r.threads}" for r in rows]
    x = np.arange(len(rows))
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(max(8, 1.3 * len(rows)), 8), sharex=True)
    top.bar(x - 0.2, [r.onnxc_s * 1e3 for r in rows], 0.4, label="onnxc")
    top.bar(x + 0.2, [r.ort_s * 1e3 for r in rows], 0.4, label="onnxruntime")
    top.set_yscale("log")
    top.set_ylabel("median latency, ms")
    for i, r in enumerate(rows):
        top.annotate(f"{r.ratio:.2f}x", (i, max(r.onnxc_s, r.ort_s) * 1e3), ha="center",
                     va="bottom", fontsize=8)
    top.legend()
    top.set_title("onnxc / onnxruntime (ratio above the bars)")
    bottom.bar(x - 0.2, [100 * r.gflops(r.onnxc_s) / (peak_per_core * r.threads)
                         for r in rows], 0.4, label="onnxc")
    bottom.bar(x + 0.2, [100 * r.gflops(r.ort_s) / (peak_per_core * r.threads) for r in rows],
               0.4, label="onnxruntime")
    bottom.set_ylabel("% of FP32 peak")
    bottom.set_xticks(x, labels, rotation=30, ha="right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(model_builders()),
                        help="comma-separated names (default: all benchmark models)")
    parser.add_argument("--threads", default="1", help="thread counts (both engines), e.g. 1,2")
    parser.add_argument("--repeat", type=int, default=10, help="timed rounds per engine")
    parser.add_argument("--opt-level", type=int, default=3)
    parser.add_argument("--clock-ghz", type=float, default=3.9,
                        help="running clock for the peak (/proc/cpuinfo shows the nominal one)")
    parser.add_argument("--cache", action="store_true",
                        help="let onnxc use its disk compile cache (compile s is then a load)")
    parser.add_argument("--png", help="also draw the table as a bar chart (needs matplotlib)")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> list[Row]:
    args = parse_args(argv)
    threads = [int(t) for t in args.threads.split(",")]
    per_cycle = flops_per_cycle_per_core()
    peak = per_cycle * args.clock_ghz
    print(f"onnxruntime {ort.__version__}, ORT_ENABLE_ALL, IOBinding with preallocated outputs; "
          f"onnxc -O{args.opt_level} num_threads=T (ONNXC_SPIN_US="
          f"{os.environ.get('ONNXC_SPIN_US', 'unset')}), %pk of T cores, "
          f"preallocated outputs (run(..., out=))")
    print(f"peak = {per_cycle} flops/cycle/core x {args.clock_ghz} GHz = "
          f"{peak:.0f} GFLOP/s per core; medians of {args.repeat} interleaved rounds; "
          f"compile s {'may be a disk-cache load' if args.cache else 'is a cold compile'}")
    print(HEADER, flush=True)
    rows: list[Row] = []
    for name in args.models.split(","):
        for row in bench_model(name, threads, args):
            rows.append(row)
            print(format_row(row, peak), flush=True)
    for t in threads:
        ratios = [r.ratio for r in rows if r.threads == t]
        print(f"geometric mean of onnxc/onnxruntime at T={t}: {geomean(ratios):.2f} "
              f"over {len(ratios)} models")
    mismatches = [f"{r.model} (T={r.threads})" for r in rows if not r.matches]
    if mismatches:
        print(f"MISMATCH beyond rtol {RTOL}/atol {ATOL}: {', '.join(mismatches)}")
    bandwidth_rows = [r for r in rows if r.model.startswith("elementwise")]
    if bandwidth_rows:
        elements = max(r.io_bytes for r in bandwidth_rows) // 8  # one f32 in, one out
        numpy_gbs = numpy_add_bandwidth(elements, args.repeat)
        print(f"memory bandwidth (input + output bytes / time); numpy c = a + b: "
              f"{numpy_gbs:.1f} GB/s")
        for r in bandwidth_rows:
            ours, theirs = r.io_bytes / r.onnxc_s / 1e9, r.io_bytes / r.ort_s / 1e9
            print(f"  {r.model} T={r.threads}: onnxc {ours:.1f} GB/s ({ours / numpy_gbs:.2f} "
                  f"of numpy), onnxruntime {theirs:.1f} GB/s ({theirs / numpy_gbs:.2f} of numpy)")
    if args.png:
        if draw_png(rows, peak, args.png):
            print(f"wrote {args.png}")
        else:
            print("--png: matplotlib is not installed (pip install matplotlib); no chart drawn")
    return rows


if __name__ == "__main__":
    main()
