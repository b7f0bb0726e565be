"""Compile time and latency of the nine model-zoo networks: onnxc next to onnxruntime.

Both run in this process on the same seeded random-weight models (onnxc.zoo), interleaved,
after a warm-up, one thread for onnxruntime (onnxc's code is single-threaded for now). The
table reports medians and the onnxc/onnxruntime ratio: absolute times on a shared machine are
noise, ratios are what to compare across runs.

    python benchmarks/zoo_latency.py [--repeat 5] [--models resnet50,squeezenet]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import onnxruntime as ort

import onnxc
from onnxc.zoo import ZOO_MODELS, load_zoo, random_inputs, randomize_weights


def _median_seconds(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--models", default=",".join(ZOO_MODELS))
    parser.add_argument("--opt-level", type=int, default=1)
    args = parser.parse_args()

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    print(f"{'model':<14}{'compile s':>10}{'onnxc ms':>11}{'ort ms':>9}{'ratio':>8}"
          f"{'arena MB':>10}{'interm. MB':>11}{'max |diff|':>12}")
    for name in args.models.split(","):
        model = randomize_weights(load_zoo(name), seed=1)
        feeds = random_inputs(model, seed=2)
        start = time.perf_counter()
        compiled = onnxc.compile(model, opt_level=args.opt_level)
        compile_s = time.perf_counter() - start
        session = ort.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
        ours = compiled.run(None, feeds)  # warm-up
        theirs = session.run(None, feeds)
        diff = max(float(np.abs(a - b).max()) for a, b in zip(ours, theirs))
        t_ours, t_ort = [], []
        for _ in range(args.repeat):  # interleaved
            t_ours.append(_median_seconds(lambda: compiled.run(None, feeds), 1))
            t_ort.append(_median_seconds(lambda: session.run(None, feeds), 1))
        ours_ms, ort_ms = statistics.median(t_ours) * 1e3, statistics.median(t_ort) * 1e3
        print(f"{name:<14}{compile_s:>10.1f}{ours_ms:>11.1f}{ort_ms:>9.1f}"
              f"{ours_ms / ort_ms:>8.1f}{compiled.arena_bytes / 2**20:>10.1f}"
              f"{compiled.intermediate_bytes / 2**20:>11.1f}{diff:>12.2e}", flush=True)


if __name__ == "__main__":
    main()
