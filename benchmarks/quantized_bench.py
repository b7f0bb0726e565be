"""Quantized and half-precision models in onnxc, onnxruntime and OpenVINO: latency and ratios.

Each (runtime, model, threads) is timed in a process of its own (`--worker`): at two threads
two runtimes' spinning pools in one process fight for the 2 cores and the numbers mean
nothing. A worker loads the model (benchmarks/quantized_models.py), warms up, then times
`--rounds` rounds of back-to-back calls and prints the median ms per call as JSON. The parent
runs the workers one after another, `--passes` times in alternating order, and prints each
runtime's median of the passes' medians and the ratio to onnxc.

    python benchmarks/quantized_bench.py [--models resnet50_qdq,bert_dynamic] [--threads 1,2]
                                         [--runtimes onnxc,onnxruntime,openvino] [--passes 2]
    python benchmarks/quantized_bench.py --interleaved --rounds 60   # T=1, one process
    python benchmarks/quantized_bench.py --layers     # ResNet-50's int8 conv shapes, 1 thread

onnxruntime: ORT_ENABLE_ALL, intra_op_num_threads=T, IOBinding with preallocated outputs.
OpenVINO (`pip install openvino`, the `bench` extra; never imported by onnxc itself):
compile_model(path, "CPU", {INFERENCE_NUM_THREADS: T, PERFORMANCE_HINT: LATENCY}), its
defaults otherwise (it computes the float parts in bf16 on a CPU with AVX512-BF16; forcing
f32 also turned off its int8 convolutions: ResNet-50 QDQ took 113 ms instead of ~11). The
runtime `onnxc-bf16` (`--runtimes onnxc,onnxc-bf16,onnxruntime,openvino`) is onnxc with
precision="bf16", its like for the float16 models; `onnxc` computes them in f32.

`--layers` times each distinct convolution shape of ResNet-50 as one QLinearConv (u8 input,
per-channel s8 weight, i32 bias, u8 output) in onnxc (its int8 kernel over NHWC data, no
layout conversion timed) and onnxruntime, interleaved in one process at one thread, checks
the outputs agree, and prints GOPS and the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

MODELS = ("resnet50_qdq", "bert_dynamic", "resnet50_fp16", "bert_fp16")
RUNTIMES = ("onnxc", "onnxruntime", "openvino")
MIN_ROUND_SECONDS = 0.05


# ----------------------------------------------------------------------- workers


def _feeds(name: str, model) -> dict[str, np.ndarray]:
    from onnxc.zoo import bert_inputs, random_inputs

    return bert_inputs(model, seed=2) if name.startswith("bert") else random_inputs(model, seed=2)


def onnxc_runner(path: str, feeds, threads: int, **options):
    import onnxc

    compiled = onnxc.compile(path, num_threads=threads, cache_dir=False, **options)
    args = [feeds[spec.name] for spec in compiled.inputs]
    return lambda: compiled(*args)


def ort_runner(path: str, feeds, threads: int):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    outputs = [np.empty_like(a) for a in session.run(None, feeds)]
    inputs = {k: np.ascontiguousarray(v) for k, v in feeds.items()}  # bound: kept alive
    binding = session.io_binding()
    for name, value in inputs.items():
        binding.bind_cpu_input(name, value)
    for meta, out in zip(session.get_outputs(), outputs):
        binding.bind_output(meta.name, "cpu", 0, out.dtype, out.shape, out.ctypes.data)
    return lambda: (session.run_with_iobinding(binding), inputs, outputs)


def _openvino_runner(path: str, feeds, threads: int):
    import openvino as ov

    config = {"INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY"}
    compiled = ov.Core().compile_model(path, "CPU", config)
    request = compiled.create_infer_request()
    inputs = {port.any_name: feeds[port.any_name] for port in compiled.inputs}
    return lambda: request.infer(inputs)


def worker(runtime: str, name: str, threads: int, rounds: int) -> dict:
    import onnx
    from quantized_models import model_path

    path = model_path(name)
    feeds = _feeds(name, onnx.load(path, load_external_data=False))
    start = time.perf_counter()
    if runtime == "onnxc":
        run = onnxc_runner(path, feeds, threads)
    elif runtime == "onnxc-bf16":
        run = onnxc_runner(path, feeds, threads, precision="bf16")
    elif runtime == "onnxruntime":
        run = ort_runner(path, feeds, threads)
    else:
        run = _openvino_runner(path, feeds, threads)
    prepare = time.perf_counter() - start
    for _ in range(3):
        run()
    begin = time.perf_counter()
    run()
    calls = max(1, int(MIN_ROUND_SECONDS / max(time.perf_counter() - begin, 1e-6)))
    medians = []
    for _ in range(rounds):
        begin = time.perf_counter()
        for _ in range(calls):
            run()
        medians.append((time.perf_counter() - begin) / calls * 1e3)
    return {"ms": statistics.median(medians), "prepare_s": prepare}


def interleaved(name: str, runtimes, rounds: int) -> dict[str, float]:
    """One thread, every runtime in this process, rounds alternating between them: the
    fairest comparison on a loaded machine (at two threads the pools would fight)."""
    import onnx
    from quantized_models import model_path

    path = model_path(name)
    feeds = _feeds(name, onnx.load(path, load_external_data=False))
    makers = {"onnxc": onnxc_runner, "onnxruntime": ort_runner,
              "openvino": _openvino_runner,
              "onnxc-bf16": lambda *a: onnxc_runner(*a, precision="bf16")}
    runs = {r: makers[r](path, feeds, 1) for r in runtimes}
    times: dict[str, list[float]] = {r: [] for r in runtimes}
    for run in runs.values():
        for _ in range(3):
            run()
    for i in range(rounds):
        for r in (runtimes if i % 2 == 0 else runtimes[::-1]):
            begin = time.perf_counter()
            runs[r]()
            times[r].append((time.perf_counter() - begin) * 1e3)
    return {r: statistics.median(v) for r, v in times.items()}


# ----------------------------------------------------------------------- parent


def _spawn(runtime: str, name: str, threads: int, rounds: int) -> dict | None:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    proc = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--worker", runtime, name, str(threads),
         "--rounds", str(rounds)], check=False, capture_output=True, text=True, env=env)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["?"])[-1]
        print(f"  {runtime} {name} T={threads}: failed ({tail})", file=sys.stderr)
        return None
    return json.loads(lines[-1])


def compare(models, runtimes, threads, passes: int, rounds: int) -> None:
    results: dict[tuple[str, int, str], list[float]] = {}
    for name in models:
        for t in threads:
            for p in range(passes):
                order = runtimes if p % 2 == 0 else runtimes[::-1]
                for runtime in order:
                    r = _spawn(runtime, name, t, rounds)
                    if r is not None:
                        results.setdefault((name, t, runtime), []).append(r["ms"])
                        print(f"  {name} T={t} {runtime}: {r['ms']:.2f} ms "
                              f"(prepare {r['prepare_s']:.1f} s)", file=sys.stderr, flush=True)
    header = f"{'model':<16} {'T':>2} " + " ".join(f"{r + ' ms':>15}" for r in runtimes)
    header += "  " + " ".join(f"{r + '/onnxc':>18}" for r in runtimes if r != "onnxc")
    print(header)
    for name in models:
        for t in threads:
            ms = {r: statistics.median(results[(name, t, r)]) for r in runtimes
                  if (name, t, r) in results}
            cells = " ".join(f"{ms[r]:>15.2f}" if r in ms else f"{'-':>15}" for r in runtimes)
            ratios = " ".join(
                f"{ms[r] / ms['onnxc']:>18.2f}" if r in ms and "onnxc" in ms else f"{'-':>18}"
                for r in runtimes if r != "onnxc")
            print(f"{name:<16} {t:>2} {cells}  {ratios}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--runtimes", default=",".join(RUNTIMES))
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--layers", action="store_true",
                        help="time ResNet-50's conv shapes one by one (quantized_layers.py)")
    parser.add_argument("--interleaved", action="store_true",
                        help="T=1 only, all runtimes in one process, alternating calls")
    parser.add_argument("--worker", nargs=3, metavar=("RUNTIME", "MODEL", "THREADS"))
    args = parser.parse_args(argv)
    if args.worker:
        runtime, name, threads = args.worker
        print(json.dumps(worker(runtime, name, int(threads), args.rounds)), flush=True)
        return
    import results_file  # the parent's tables only: a worker prints one JSON line

    with results_file.recording(None if argv is None else [sys.argv[0], *argv]):
        measure(args)


def measure(args: argparse.Namespace) -> None:
    if args.interleaved:
        runtimes = args.runtimes.split(",")
        print(f"{'model':<16} " + " ".join(f"{r + ' ms':>15}" for r in runtimes)
              + "  (T=1, interleaved in one process)")
        for name in args.models.split(","):
            ms = interleaved(name, runtimes, args.rounds)
            print(f"{name:<16} " + " ".join(f"{ms[r]:>15.2f}" for r in runtimes), flush=True)
        return
    if args.layers:
        from quantized_layers import main as layers_main

        layers_main([])
        return
    compare(args.models.split(","), args.runtimes.split(","),
            [int(t) for t in args.threads.split(",")], args.passes, args.rounds)


if __name__ == "__main__":
    main()
