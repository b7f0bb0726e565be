"""int4 weight-only models (com.microsoft MatMulNBits) in onnxc and onnxruntime: decode latency.

Two models, both quantized here by onnxruntime's `MatMulNBitsQuantizer` (block_size 32,
asymmetric, QOperator: MatMulNBits with uint8 zero points):
- `llama`: the corpus llama (tests/models/real_exports: hidden 64, 2 layers, vocab 256), one
  decode step: one new token after a past of 32 (KV caches [1, 2, 32, 16]);
- `gemv<K>`: a chain of 4 MatMulNBits of K x K weights applied to one row (M = 1), where the
  weights (K * K / 2 bytes each: 8 MiB at K = 4096) stream from memory every call, as an LLM's
  decode step does; K = 2048 and 4096.

onnxruntime: ORT_ENABLE_ALL, intra_op_num_threads = T, accuracy_level as the quantizer
leaves it (unset: f32 compute, as onnxc computes it) and, in the `-int8` columns, the same
models with accuracy_level 4 (A quantized to int8 per block: onnxruntime's VNNI / AVX2 int8
kernels; onnxc's vpdpbusd kernel on AVX512-VNNI, weight_quant_int8.py, else f32).

At one thread the runtimes run interleaved in this process (`--rounds` rounds alternating
between them, median ms per call); at two threads each (runtime, model) runs in a worker
process of its own (two spinning thread pools in one process would fight for the cores),
`--passes` times in alternating order, the median of the workers' medians.

    python benchmarks/nbits_decode.py [--models llama,gemv2048,gemv4096] [--threads 1,2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from onnxc.tools.bench_timing import round_samples

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

MODELS = ("llama", "gemv2048", "gemv4096")
RUNTIMES = ("onnxc", "ort", "onnxc-int8", "ort-int8")
PAST = 32
MIN_ROUND_SECONDS = 0.05


# ----------------------------------------------------------------------- models


def _quantize(model, level: int | None):
    from onnxruntime.quantization import QuantFormat
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    quantizer = MatMulNBitsQuantizer(model, block_size=32, is_symmetric=False,
                                     accuracy_level=level, quant_format=QuantFormat.QOperator)
    quantizer.process()
    return quantizer.model.model


def _float_model(name: str):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    if name == "llama":
        from tests.models.real_exports import corpus

        return corpus.load("llama")
    k = int(name.removeprefix("gemv"))
    rng = np.random.default_rng(0)
    nodes, weights, x = [], [], "a"
    for i in range(4):
        w = (rng.standard_normal((k, k)) / np.sqrt(k)).astype(np.float32)
        weights.append(numpy_helper.from_array(w, f"w{i}"))
        nodes.append(helper.make_node("MatMul", [x, f"w{i}"], [f"y{i}"]))
        x = f"y{i}"
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info(
        "a", TensorProto.FLOAT, ["m", k])], [helper.make_tensor_value_info(
            x, TensorProto.FLOAT, ["m", k])], weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return onnx.shape_inference.infer_shapes(model)


def feeds_of(name: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(2)
    if name == "llama":
        feeds = {"input_ids": np.array([[7]], np.int64),
                 "attention_mask": np.ones((1, PAST + 1), np.int64),
                 "position_ids": np.array([[PAST]], np.int64)}
        for layer in range(2):
            for kind in ("key", "value"):
                feeds[f"past_key_values.{layer}.{kind}"] = rng.standard_normal(
                    (1, 2, PAST, 16)).astype(np.float32)
        return feeds
    return {"a": rng.standard_normal((1, int(name.removeprefix("gemv")))).astype(np.float32)}


def write_models(models, directory: Path) -> dict[tuple[str, str], str]:
    """(model, runtime) -> path of its quantized ONNX file (accuracy level 4 for the int8
    columns)."""
    import onnx

    paths = {}
    for name in models:
        base = _float_model(name)
        for level, runtimes in ((None, ("onnxc", "ort")), (4, ("onnxc-int8", "ort-int8"))):
            path = directory / f"{name}-{level or 0}.onnx"
            onnx.save(_quantize(base, level), path)
            for runtime in runtimes:
                paths[(name, runtime)] = str(path)
    return paths


# ----------------------------------------------------------------------- runners


def runner(runtime: str, path: str, feeds, threads: int):
    """A callable running the model once: quantized_bench.py's runners (onnxc's positional
    call; onnxruntime through IOBinding into preallocated outputs)."""
    from quantized_bench import onnxc_runner, ort_runner

    return (onnxc_runner if runtime.startswith("onnxc") else ort_runner)(path, feeds, threads)


def worker(runtime: str, name: str, path: str, threads: int, rounds: int) -> dict:
    run = runner(runtime, path, feeds_of(name), threads)
    for _ in range(3):
        run()
    return {"ms": statistics.median(round_samples(run, rounds, MIN_ROUND_SECONDS)) * 1e3}


def interleaved(name: str, paths, runtimes, rounds: int) -> dict[str, float]:
    """One thread, every runtime in this process, calls alternating between them."""
    feeds = feeds_of(name)
    runs = {r: runner(r, paths[(name, r)], feeds, 1) for r in runtimes}
    for run in runs.values():
        for _ in range(3):
            run()
    times: dict[str, list[float]] = {r: [] for r in runtimes}
    for i in range(rounds):
        for r in (runtimes if i % 2 == 0 else runtimes[::-1]):
            begin = time.perf_counter()
            runs[r]()
            times[r].append((time.perf_counter() - begin) * 1e3)
    return {r: statistics.median(v) for r, v in times.items()}


def _spawn(runtime: str, name: str, path: str, threads: int, rounds: int) -> float | None:
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--worker", runtime, name, path,
         str(threads), "--rounds", str(rounds)], check=False, capture_output=True, text=True,
        env=dict(os.environ, OMP_NUM_THREADS=str(threads)))
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["?"])[-1]
        print(f"  {runtime} {name} T={threads}: failed ({tail})", file=sys.stderr)
        return None
    return json.loads(lines[-1])["ms"]


def check_outputs(name: str, paths) -> float:
    """Largest difference of onnxc's outputs from onnxruntime's (f32, optimizations off),
    relative to the largest magnitude."""
    import onnxruntime as ort

    import onnxc

    feeds = feeds_of(name)
    ours = onnxc.compile(paths[(name, "onnxc")], cache_dir=False).run(None, feeds)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    theirs = ort.InferenceSession(paths[(name, "ort")], options,
                                  providers=["CPUExecutionProvider"]).run(None, feeds)
    return max(float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))
               for a, b in zip(ours, theirs, strict=True))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--runtimes", default=",".join(RUNTIMES))
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=200,
                        help="interleaved calls per runtime at T=1 (workers: rounds / 10)")
    parser.add_argument("--worker", nargs=4, metavar=("RUNTIME", "MODEL", "PATH", "THREADS"))
    args = parser.parse_args(argv)
    if args.worker:
        runtime, name, path, threads = args.worker
        print(json.dumps(worker(runtime, name, path, int(threads), args.rounds)))
        return
    models, runtimes = args.models.split(","), args.runtimes.split(",")
    threads = [int(t) for t in args.threads.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_models(models, Path(tmp))
        table = []
        for name in models:
            error = check_outputs(name, paths)
            for t in threads:
                if t == 1:
                    ms = interleaved(name, paths, runtimes, args.rounds)
                else:
                    runs: dict[str, list[float]] = {r: [] for r in runtimes}
                    for p in range(args.passes):
                        for r in (runtimes if p % 2 == 0 else runtimes[::-1]):
                            value = _spawn(r, name, paths[(name, r)], t,
                                           max(5, args.rounds // 10))
                            if value is not None:
                                runs[r].append(value)
                    ms = {r: statistics.median(v) for r, v in runs.items() if v}
                table.append((name, t, ms, error))
                print(f"  {name} T={t}: " + ", ".join(f"{r} {v:.3f} ms" for r, v in ms.items()),
                      file=sys.stderr, flush=True)
    print("Machine shared with other work while measured: medians of many calls.")
    header = (f"{'model':<10} {'T':>2} " + " ".join(f"{r + ' ms':>12}" for r in runtimes)
              + "  " + " ".join(f"{r + '/onnxc':>15}" for r in runtimes if r != "onnxc")
              + "  max |onnxc - ort| / max |ort|")
    print(header)
    for name, t, ms, error in table:
        cells = " ".join(f"{ms[r]:>12.3f}" if r in ms else f"{'-':>12}" for r in runtimes)
        ratios = " ".join(f"{ms[r] / ms['onnxc']:>15.2f}" if r in ms and "onnxc" in ms
                          else f"{'-':>15}" for r in runtimes if r != "onnxc")
        print(f"{name:<10} {t:>2} {cells}  {ratios}  {error:.1e}")


if __name__ == "__main__":
    if "--worker" in sys.argv:
        main()
    else:
        import results_file

        with results_file.recording(topic="nbits"):
            main()
