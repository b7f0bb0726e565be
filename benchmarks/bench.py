"""onnxc next to onnxruntime (and OpenVINO) on the performance work's models: latency, ratio, GFLOP/s, % of peak.

The multi-model form of `onnxc bench` (src/onnxc/tools/bench.py), whose parts it uses: for
each model and thread count T, onnxc and then onnxruntime are timed each in a process of its
own (at T >= 2 two spinning thread pools in one process fight over a 2-core machine and
falsify both numbers), on the same seeded model and inputs, medians of `--repeat` rounds
after a warm-up. `--interleaved` (T=1 only) keeps both engines in this one process in
alternating rounds, the fairest comparison on a loaded machine at one thread. Absolute
times on a shared machine are noise: compare the onnxc/onnxruntime ratios across runs.
onnxc is compiled with num_threads=T; onnxruntime gets ORT_ENABLE_ALL, intra_op_num_threads=T,
inter_op_num_threads=1 and IOBinding with preallocated outputs (it otherwise pays 4-7%
allocating and page-faulting its outputs on every call); onnxc likewise gets `run(..., out=)`.
Every run checks onnxc's outputs against onnxruntime's (rtol 1e-3, atol 1e-4).
`--openvino` times OpenVINO too (its own process, same thread count; `pip install
'onnxc[bench]'`) and adds the ratio to the better of the two peers ("vs best").

    python benchmarks/bench.py [--threads 1,2] [--models resnet50,matmul_512] [--repeat 10]
                               [--opt-level 3] [--peak-gflops G] [--cache] [--png out.png]
                               [--interleaved] [--openvino] [--passes N]

Models: onnxc.zoo.benchmark_models(), matmul_1024, and any model-zoo name (onnxc.zoo.ZOO_MODELS,
e.g. densenet121) with seeded random weights.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from onnxc.errors import OnnxcError
from onnxc.tools import bench as command
from onnxc.tools.bench_timing import interleaved_medians
from onnxc.tools.bench_worker import Measurement, TimingSettings
from onnxc.tools.flops import count_flops
from onnxc.tools.fma_peak import measured_fma_peak


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
    measured: tuple[Measurement, ...]  # onnxc's, onnxruntime's [, openvino's] (no outputs)
    ov_s: float | None = None

    @property
    def ratio(self) -> float:
        return self.onnxc_s / self.ort_s

    @property
    def best_ratio(self) -> float:
        """onnxc / the faster of onnxruntime and OpenVINO (when it was timed)."""
        return self.onnxc_s / min(self.ort_s, self.ov_s or self.ort_s)

    def gflops(self, seconds: float) -> float:
        return self.flops / seconds / 1e9


def bench_model(name: str, threads: Sequence[int], args) -> list[Row]:
    model = command.build(name)
    feeds = command.seeded_inputs(name, model)
    flops = count_flops(model)
    settings = TimingSettings(args.repeat, opt_level=args.opt_level, cache=args.cache)
    rows = []
    with tempfile.TemporaryDirectory(prefix="onnxc-bench-") as workdir:
        path = command.write_model(model, workdir)
        for t in threads:
            ours, theirs, *ov = command.measure_runtimes(
                ["onnxc", "onnxruntime", *(["openvino"] if args.openvino else [])], path,
                feeds, t, settings, workdir, interleaved=args.interleaved,
                passes=args.passes)
            diff, ok = command.compare_outputs(ours.outputs, theirs.outputs)
            io_bytes = sum(a.nbytes for a in feeds.values()) + sum(a.nbytes for a in ours.outputs)
            rows.append(Row(name, t, ours.prepare_seconds, ours.seconds, theirs.seconds, flops,
                            diff, ok, io_bytes, ours.details["arena_bytes"] / 2**20,
                            ours.details["intermediate_bytes"] / 2**20,
                            tuple(replace(m, outputs=[]) for m in (ours, theirs, *ov)),
                            ov[0].seconds if ov else None))
    return rows


HEADER = (f"{'model':<22}{'T':>2}{'compile s':>10}{'onnxc ms':>10}{'ort ms':>9}{'ratio':>7}"
          f"{'GFLOP':>8}{'onnxc GF/s':>11}{'ort GF/s':>9}{'onnxc %pk':>10}{'ort %pk':>8}"
          f"{'max|diff|':>10}{'arena MB':>9}{'interm MB':>10}{'ov ms':>9}{'vs best':>8}  check")


def format_row(row: Row, peak_per_core: float) -> str:
    ours, theirs = row.gflops(row.onnxc_s), row.gflops(row.ort_s)
    ours_pk = 100 * ours / (peak_per_core * row.threads)
    ort_pk = 100 * theirs / (peak_per_core * row.threads)
    peer = (f"{row.ov_s * 1e3:>9.2f}{row.best_ratio:>8.2f}" if row.ov_s
            else f"{'-':>9}{'-':>8}")
    return (f"{row.model:<22}{row.threads:>2}{row.compile_s:>10.1f}{row.onnxc_s * 1e3:>10.2f}"
            f"{row.ort_s * 1e3:>9.2f}{row.ratio:>7.2f}{row.flops / 1e9:>8.3f}{ours:>11.1f}"
            f"{theirs:>9.1f}{ours_pk:>9.1f}%{ort_pk:>7.1f}%{row.max_diff:>10.1e}{row.arena_mb:>9.1f}"
            f"{row.intermediate_mb:>10.1f}{peer}  {'ok' if row.matches else 'MISMATCH'}")


def geomean(values: Sequence[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def draw_png(rows: Sequence[Row], peak_per_core: float, path: str) -> None:
    """The table as bars: latency (log scale) and % of peak per model and thread count."""
    groups = [(f"{r.model}\nT={r.threads}",
               [command.Row(r.model, m, r.measured[0], r.flops) for m in r.measured])
              for r in rows]
    command.draw_chart(groups, path, "onnxc / onnxruntime", peak_per_core)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(command.model_builders()),
                        help="comma-separated names (default: all benchmark models)")
    parser.add_argument("--threads", default="1", help="thread counts (both engines), e.g. 1,2")
    parser.add_argument("--repeat", type=int, default=10, help="timed rounds per engine")
    parser.add_argument("--opt-level", type=int, default=3)
    parser.add_argument("--peak-gflops", type=float,
                        help="FP32 peak of one core for the %%pk columns (default: measured, "
                             "onnxc.tools.fma_peak)")
    parser.add_argument("--cache", action="store_true",
                        help="let onnxc use its disk compile cache (compile s is then a load)")
    parser.add_argument("--png", help="also draw the table as a bar chart (needs matplotlib)")
    parser.add_argument("--interleaved", action="store_true",
                        help="both engines in this process, alternating rounds (T=1 only)")
    parser.add_argument("--passes", type=int, default=1,
                        help="start each engine's worker N times in alternating order and "
                             "pool their rounds (steadier where a VM's cores are noisy)")
    parser.add_argument("--openvino", action="store_true",
                        help="time OpenVINO as well; ratios to the better peer ('vs best')")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> list[Row]:
    args = parse_args(argv)
    threads = command.parse_threads(args.threads)
    if args.interleaved:
        command.check_interleaved(threads)
    if args.png:
        command.require_matplotlib()
    peak = args.peak_gflops or measured_fma_peak()
    where = ("both in this process, interleaved" if args.interleaved
             else "each engine in its own process")
    print(f"onnxruntime ORT_ENABLE_ALL, IOBinding with preallocated outputs; "
          f"onnxc -O{args.opt_level} num_threads=T (ONNXC_SPIN_US="
          f"{os.environ.get('ONNXC_SPIN_US', 'unset')}), %pk of T cores, "
          f"preallocated outputs (run(..., out=))")
    print(f"peak = {peak:.0f} GFLOP/s per core ("
          f"{'given' if args.peak_gflops else 'measured: an FP32 FMA loop'}); "
          f"medians of {args.repeat} rounds, {where}; "
          f"compile s {'may be a disk-cache load' if args.cache else 'is a cold compile'}")
    print(HEADER, flush=True)
    rows: list[Row] = []
    for name in args.models.split(","):
        for row in bench_model(name, threads, args):
            rows.append(row)
            print(format_row(row, peak), flush=True)
    print("versions: " + ", ".join(f"{m.runtime} {m.version}" for m in rows[0].measured))
    for t in threads:
        ratios = [r.ratio for r in rows if r.threads == t]
        print(f"geometric mean of onnxc/onnxruntime at T={t}: {geomean(ratios):.2f} "
              f"over {len(ratios)} models")
        if args.openvino:
            best = [r.best_ratio for r in rows if r.threads == t]
            print(f"geometric mean of onnxc/best of onnxruntime and openvino at T={t}: "
                  f"{geomean(best):.2f} (max {max(best):.2f})")
    mismatches = [f"{r.model} (T={r.threads})" for r in rows if not r.matches]
    if mismatches:
        print(f"MISMATCH beyond rtol {command.RTOL}/atol {command.ATOL}: "
              f"{', '.join(mismatches)}")
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
        draw_png(rows, peak, args.png)
        print(f"wrote {args.png}")
    return rows


if __name__ == "__main__":
    import results_file

    try:
        with results_file.recording():
            main()
    except OnnxcError as err:
        sys.exit(f"error: {err}")
