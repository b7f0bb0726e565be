"""How compile cost scales: graph size, number of compiles, size of the weights.

Three measurements, each printed as a table:

1. **Graph size.** `-O3` compiles of a chain of N Adds (`y = x + x + ... + x`, every node
   on the critical path) and of a wide graph of N mixed nodes in parallel branches (MatMul,
   Add, Relu, Transpose pairs, Mul, Sigmoid, Sub; Conv, BatchNormalization, Relu, residual
   Add, Reshape pairs), with the wall time of every compile stage. The graph passes should
   grow linearly: the seconds per 1,000 nodes column stays flat.
2. **Many compiles.** RSS growth of one process over K compiles of a small model with the
   cache off (`cache_dir=False`), after a few warm-up compiles; a leak shows as KB per
   compile. Native memory is what this catches (the JIT's engines, LLVM pass managers):
   RSS from /proc/self/statm.
3. **Large weights.** Peak RSS (VmHWM) of a fresh process that compiles a model with
   about 100 MB of weights from its file, against the goal of 2x the weights + 300 MB; two
   models: MatMuls (packed GEMM panels) and 3x3 Convs (NHWC implicit GEMM).

Sections 2 and 3 each run in a child process of their own, so that nothing measured before
(or the other section) is in their RSS. Compiles run at one thread. On this shared 2-core
machine other work changes the times; the ratios between rows are what to read.

    python benchmarks/compile_scaling.py [--chain 500,1000,2000,5000] [--wide 1000,2500,5000]
        [--compiles 1000] [--weights-mb 100] [--only graph|compiles|weights]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx

from onnxc.zoo_scaling import add_chain, small_model, weights_model, wide_graph

STAGES = ("import", "graph-opt", "graph-to-loops", "loops-to-llvm", "llvm-jit")


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_rss_bytes() -> int:
    """This process's peak RSS: VmHWM, not ru_maxrss, which after fork + exec starts from
    the parent's RSS at the fork (it would report the parent's size, not the child's)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


# ------------------------------------------------------------------------- 1. graph size


def graph_size(chain: list[int], wide: list[int]) -> None:
    import onnxc

    print("1. -O3 compile time by graph size (s; one compile each, cache off, one thread)")
    header = f"{'graph':<8}{'nodes':>7}" + "".join(f"{s:>16}" for s in STAGES)
    print(header + f"{'total':>9}{'graph-opt s/1k':>16}")
    for label, sizes, build in (("chain", chain, add_chain), ("wide", wide, wide_graph)):
        for n in sizes:
            model = build(n)
            start = time.perf_counter()
            compiled = onnxc.compile(model, cache_dir=False, num_threads=1)
            total = time.perf_counter() - start
            seconds = compiled.compile_seconds
            row = f"{label:<8}{len(model.graph.node):>7}"
            row += "".join(f"{seconds.get(s, 0.0):>16.2f}" for s in STAGES)
            per_k = seconds.get("graph-opt", 0.0) / len(model.graph.node) * 1000
            print(row + f"{total:>9.2f}{per_k:>16.3f}", flush=True)
            del compiled, model
            gc.collect()


# --------------------------------------------------------------------- 2. many compiles


def compiles_child(count: int, warmup: int) -> dict:
    import onnxc

    model = small_model()
    x = np.ones((4, 8), np.float32)
    for _ in range(warmup):
        onnxc.compile(model, cache_dir=False, num_threads=1).run(None, {"x": x})
    gc.collect()
    before = rss_bytes()
    start = time.perf_counter()
    marks = {}
    for i in range(1, count + 1):
        onnxc.compile(model, cache_dir=False, num_threads=1).run(None, {"x": x})
        if i % max(1, count // 4) == 0:
            gc.collect()
            marks[i] = rss_bytes() - before
    gc.collect()
    return {"growth": rss_bytes() - before, "marks": marks, "warmup": warmup,
            "seconds_each": (time.perf_counter() - start) / count}


def many_compiles(count: int, warmup: int) -> None:
    result = _in_child(["--child-compiles", str(count), "--warmup", str(warmup)])
    print(f"\n2. RSS growth over {count} compiles of a small model (cache off, after "
          f"{result['warmup']} warm-up compiles, {result['seconds_each'] * 1e3:.0f} ms each)")
    print(f"{'compiles':>9}{'RSS growth MB':>15}{'KB / compile':>14}")
    for i, grown in result["marks"].items():
        print(f"{int(i):>9}{grown / 1e6:>15.2f}{grown / int(i) / 1e3:>14.1f}")
    print(f"goal: {count} compiles grow RSS by at most 5 MB")


# ---------------------------------------------------------------------- 3. large weights


def weights_child(path: str) -> dict:
    import onnxc

    onnxc.compile(small_model(), cache_dir=False, num_threads=1)  # imports every stage
    gc.collect()
    imported = rss_bytes()
    start = time.perf_counter()
    compiled = onnxc.compile(path, cache_dir=False, num_threads=1)
    seconds = time.perf_counter() - start
    return {"peak": peak_rss_bytes(), "imported": imported,
            "seconds": seconds, "after": rss_bytes(), "stages": compiled.compile_seconds}


def large_weights(megabytes: float) -> None:
    print(f"\n3. Peak RSS of a fresh process compiling ~{megabytes:.0f} MB of weights from a "
          "file (cache off)")
    print(f"{'model':<9}{'weights MB':>11}{'python+onnxc MB':>17}{'peak MB':>9}"
          f"{'peak / weights':>16}{'(peak - python) / weights':>27}{'goal MB':>9}"
          f"{'compile s':>11}")
    with tempfile.TemporaryDirectory(prefix="onnxc-scaling-") as tmp:
        for kind in ("matmul", "conv"):
            path = os.path.join(tmp, f"{kind}.onnx")
            onnx.save(weights_model(kind, megabytes), path)
            weights = os.path.getsize(path)
            result = _in_child(["--child-weights", path])
            goal = 2 * weights + 300 * 2**20
            print(f"{kind:<9}{weights / 2**20:>11.0f}{result['imported'] / 2**20:>17.0f}"
                  f"{result['peak'] / 2**20:>9.0f}{result['peak'] / weights:>16.2f}"
                  f"{(result['peak'] - result['imported']) / weights:>27.2f}"
                  f"{goal / 2**20:>9.0f}{result['seconds']:>11.1f}", flush=True)
    print("goal: peak at most 2x the weights + 300 MB (python+onnxc: RSS after one small "
          "compile, before the large one)")


def _in_child(args: list[str]) -> dict:
    done = subprocess.run([sys.executable, os.path.abspath(__file__), *args],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"child {args} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chain", default="500,1000,2000,5000")
    parser.add_argument("--wide", default="1000,2500,5000")
    parser.add_argument("--compiles", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--weights-mb", type=float, default=100.0)
    parser.add_argument("--only", choices=("graph", "compiles", "weights"))
    parser.add_argument("--child-compiles", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--child-weights", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_compiles is not None:
        print(json.dumps(compiles_child(args.child_compiles, args.warmup)))
        return
    if args.child_weights is not None:
        print(json.dumps(weights_child(args.child_weights)))
        return

    def sizes(text: str) -> list[int]:
        return [int(s) for s in text.split(",") if s]

    import results_file  # the parent's tables only: a child prints one JSON line

    with results_file.recording():
        if args.only in (None, "graph"):
            graph_size(sizes(args.chain), sizes(args.wide))
        if args.only in (None, "compiles"):
            many_compiles(args.compiles, args.warmup)
        if args.only in (None, "weights"):
            large_weights(args.weights_mb)


if __name__ == "__main__":
    main()
