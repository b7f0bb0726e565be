"""Tree ensembles: onnxc against onnxruntime, one thread, batch 1 and batch 1,000.

    python benchmarks/tree_ensemble.py [--models gbr_500_diabetes,...] [--repeats 3000]

The models are tests/models/ml_exports' exports (generate_trees.py). Both runtimes run in
this process with one thread (onnxruntime: intra_op_num_threads=1; onnxc: num_threads=1),
their calls interleaved so that load on a shared machine hits both alike; each row is the
median of the runs, rows of a batch drawn from the model's stored held-out inputs; at batch
1 each run takes the next of 40 stored rows (one row repeated would let a branch
predictor learn its paths, which no stream of different samples allows). Compile
time is onnxc's cold compile (no compile cache), onnxruntime's session creation. Appends
its table to benchmarks/results/<date>-trees-<cpu>.md (results_file.py).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

sys.path.insert(0, str(Path(__file__).resolve().parent))
import results_file  # noqa: E402

import onnxc  # noqa: E402

MODELS = Path(__file__).resolve().parents[1] / "tests" / "models" / "ml_exports" / "models"
DEFAULT = ("gbr_500_diabetes", "rf_classifier_classification", "lgbm_regressor_regression",
           "lgbm_classifier_breast_cancer", "xgb_regressor_diabetes", "xgb_classifier_wine",
           "gbc_multiclass_iris")
BATCHES = (1, 1000)


def _median_us(samples: list[float]) -> float:
    return float(np.median(samples)) * 1e6


def bench(name: str, repeats: int) -> list[str]:
    model = onnx.load(MODELS / f"{name}.onnx")
    x_all = np.load(MODELS / f"{name}.npz")["X"]
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    start = time.perf_counter()
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    ort_setup = time.perf_counter() - start
    start = time.perf_counter()
    compiled = onnxc.compile(model, num_threads=1, cache_dir=False)
    compile_s = time.perf_counter() - start
    input_name = session.get_inputs()[0].name
    rng = np.random.default_rng(0)
    rows = []
    for batch in BATCHES:
        if batch == 1:
            xs = [np.ascontiguousarray(x_all[i:i + 1]) for i in range(len(x_all))]
        else:
            xs = [np.ascontiguousarray(x_all[rng.integers(0, len(x_all), batch)])]
        runs = repeats if batch == 1 else max(20, repeats // 100)
        for i in range(min(runs, 50)):  # warm both up
            session.run(None, {input_name: xs[i % len(xs)]})
            compiled(xs[i % len(xs)])
        theirs, ours = [], []
        for i in range(runs):
            x = xs[i % len(xs)]
            feeds = {input_name: x}
            t = time.perf_counter()
            session.run(None, feeds)
            theirs.append(time.perf_counter() - t)
            t = time.perf_counter()
            compiled(x)
            ours.append(time.perf_counter() - t)
        o, c = _median_us(theirs), _median_us(ours)
        rows.append(f"| {name} | {batch} | {o:,.1f} | {c:,.1f} | {o / c:.2f}x | "
                    f"{compile_s:.2f} s | {ort_setup * 1e3:.0f} ms |")
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(DEFAULT))
    parser.add_argument("--repeats", type=int, default=3000)
    args = parser.parse_args(argv)
    print("one thread each, interleaved, medians; onnxc compiled with a symbolic batch, "
          f"onnxruntime {ort.__version__}\n")
    print("| model | batch | onnxruntime µs | onnxc µs | speedup | onnxc compile | "
          "onnxruntime session |")
    print("|---|---|---|---|---|---|---|")
    for name in args.models.split(","):
        for row in bench(name, args.repeats):
            print(row, flush=True)


if __name__ == "__main__":
    with results_file.recording(topic="trees"):
        main()
