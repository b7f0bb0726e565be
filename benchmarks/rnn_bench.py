"""Benchmark: a 2-layer bidirectional LSTM tagger, onnxc against onnxruntime at one thread.

The model is the torch-style export of tests/unit/test_rnn.py (`tagger_model`: two stacked
bidirectional LSTMs with Transpose/Reshape between them and a linear head), by default hidden
256, sequence 128, batch 1, embedding 256 (issue 11's "no slower than onnxruntime at T=1").
Both run in this process with one thread (onnxruntime intra_op_num_threads=1, onnxc
num_threads=1); the runs are interleaved (ort, onnxc per round) and the medians reported.
With one thread, times are process CPU time (the machine is shared: wall time would mostly
measure the neighbours); --threads N uses wall time.

Usage: python benchmarks/rnn_bench.py [--hidden 256] [--steps 128] [--batch 1] [--repeat 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--steps", type=int, default=128)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--embed", type=int, default=256)
    parser.add_argument("--tags", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=15, help="interleaved rounds")
    args = parser.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    clock = time.process_time if args.threads == 1 else time.perf_counter

    import onnxruntime

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "unit"))
    from test_rnn import tagger_model

    import onnxc

    model, feeds = tagger_model(args.steps, args.batch, args.embed, args.hidden, args.tags)
    so = onnxruntime.SessionOptions()
    so.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(model.SerializeToString(), so,
                                           providers=["CPUExecutionProvider"])
    start = time.perf_counter()
    compiled = onnxc.compile(model, num_threads=args.threads, cache_dir=False)
    compile_s = time.perf_counter() - start

    (expected,) = session.run(None, feeds)
    (actual,) = compiled.run(None, feeds)
    error = float(np.max(np.abs(actual - expected)))

    def timed(fn, seconds: float = 0.3) -> float:
        fn()
        n, begin = 0, clock()
        while True:
            fn()
            n += 1
            elapsed = clock() - begin
            if elapsed > seconds:
                return elapsed / n

    ort_ms, onnxc_ms = [], []
    for _ in range(args.repeat):
        ort_ms.append(1e3 * timed(lambda: session.run(None, feeds)))
        onnxc_ms.append(1e3 * timed(lambda: compiled.run(None, feeds)))
    ort_median, onnxc_median = statistics.median(ort_ms), statistics.median(onnxc_ms)
    print(f"2-layer bidirectional LSTM tagger: hidden {args.hidden}, seq {args.steps}, "
          f"batch {args.batch}, embed {args.embed}, threads {args.threads}")
    print(f"  compile {compile_s:.1f} s, max |onnxc - ort| = {error:.2e}")
    print(f"  onnxruntime {ort_median:8.3f} ms   onnxc {onnxc_median:8.3f} ms   "
          f"ratio onnxc/ort {onnxc_median / ort_median:.3f}  "
          f"(medians of {args.repeat} interleaved rounds, {clock.__name__})")


if __name__ == "__main__":
    import results_file

    with results_file.recording():
        main()
