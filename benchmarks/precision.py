"""bf16 compute (`onnxc.compile(..., precision="bf16")`) against f32, on the zoo nets with
seeded random weights: accuracy and one-thread speed (docs/precision.md).

Accuracy: for each of `--seeds` seeded inputs, the f32 and bf16 compiles of the same model
run on it; the table gives the top-1 agreement (argmax of the logits per image; for the
BERT encoder, of the output hidden state per token), the largest absolute difference of that
output, the same relative to the largest |f32 value|, and the largest relative L2 error per
input. Speed: the two compiles run interleaved in one process at one thread on seed 0's
input, `--rounds` rounds after a warm-up, medians and their ratio. With `--openvino`
(`pip install openvino`; never imported by onnxc) OpenVINO runs the same model with
INFERENCE_PRECISION_HINT f32 and bf16 in the same interleaved rounds, and its bf16 error
is measured against its own f32 the same way.

    python benchmarks/precision.py [--models resnet50,squeezenet,...] [--seeds 32]
        [--rounds 15] [--openvino] [--conv-chains 256x14x3,64x56x3]

Models: those of onnxc.zoo.benchmark_models, or resnet50_fp32 / bert_fp32 from
benchmarks/quantized_models.py.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable

import numpy as np
import onnx

import onnxc
from onnxc.zoo import benchmark_models, expose_logits, random_inputs
from onnxc.zoo_bert import bert_inputs

MODELS = ("resnet50", "squeezenet", "shufflenet", "mobilenet_v2_like", "bert_encoder")
Run = Callable[[dict], list[np.ndarray]]


def _model(name: str) -> tuple[onnx.ModelProto, Callable[[int], dict]]:
    if name in benchmark_models():
        model = benchmark_models()[name]()
    else:  # resnet50_fp32 or bert_fp32: the opset-17 models of benchmarks/quantized_models.py
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import quantized_models

        model = quantized_models.load(name)
        if name.startswith("bert"):
            return model, lambda seed: bert_inputs(model, seed)
    if name == "bert_encoder":  # its Softmaxes are inside attention: keep its output
        return model, lambda seed: bert_inputs(model, seed)
    model = expose_logits(model)  # random weights saturate the probabilities
    return model, lambda seed: random_inputs(model, seed)


def _top1_rows(name: str, y: np.ndarray) -> np.ndarray:
    rows = y.shape[0] * (y.shape[1] if name == "bert_encoder" else 1)
    return y.reshape(rows, -1).argmax(-1)


def _compare(name: str, ref: Run, other: Run, feeds_of, seeds: int) -> tuple:
    agree = total = 0
    max_abs = max_ref = max_l2 = 0.0
    for seed in range(seeds):
        feeds = feeds_of(seed)
        a, b = ref(feeds)[-1], other(feeds)[-1]
        top_a, top_b = _top1_rows(name, a), _top1_rows(name, b)
        agree, total = agree + int((top_a == top_b).sum()), total + top_a.size
        max_abs = max(max_abs, float(np.abs(a - b).max()))
        max_ref = max(max_ref, float(np.abs(a).max()))
        max_l2 = max(max_l2, float(np.linalg.norm(a - b) / np.linalg.norm(a)))
    return agree, total, max_abs, max_abs / max_ref, max_l2


def _openvino(path: str, precision: str) -> Run:
    import openvino

    compiled = openvino.Core().compile_model(path, "CPU", {
        "INFERENCE_NUM_THREADS": 1, "PERFORMANCE_HINT": "LATENCY",
        "INFERENCE_PRECISION_HINT": precision})
    request = compiled.create_infer_request()

    def run(feeds: dict) -> list[np.ndarray]:
        result = request.infer(feeds)
        return [np.asarray(result[o]) for o in compiled.outputs]

    return run


def _onnxc(compiled: onnxc.CompiledModel) -> Run:
    outs = [np.empty(s.shape, s.dtype) for s in compiled.outputs]
    return lambda feeds: compiled.run(None, feeds, out=outs)


def measure(name: str, seeds: int, rounds: int, openvino: bool) -> None:
    model, feeds_of = _model(name)
    runs: dict[str, Run] = {
        "onnxc fp32": _onnxc(onnxc.compile(model, num_threads=1, cache_dir=False)),
        "onnxc bf16": _onnxc(onnxc.compile(model, num_threads=1, cache_dir=False,
                                           precision="bf16")),
    }
    pairs = [("onnxc fp32", "onnxc bf16")]
    if openvino:
        path = os.path.join(tempfile.mkdtemp(), f"{name}.onnx")
        onnx.save(model, path)
        runs["openvino f32"] = _openvino(path, "f32")
        runs["openvino bf16"] = _openvino(path, "bf16")
        pairs.append(("openvino f32", "openvino bf16"))
    for ref, other in pairs:
        agree, total, max_abs, rel, l2 = _compare(name, runs[ref], runs[other], feeds_of, seeds)
        print(f"| {name} | {other} vs {ref} | {agree}/{total} | {max_abs:.3g} | {rel:.3g} | "
              f"{l2:.3g} |", flush=True)
    feeds = feeds_of(0)
    times: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(3):
        for run in runs.values():
            run(feeds)
    for _ in range(rounds):
        for key, run in runs.items():
            start = time.perf_counter()
            run(feeds)
            times[key].append(time.perf_counter() - start)
    med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    line = " | ".join(f"{k} {v:.2f} ms" for k, v in med.items())
    speedup = med["onnxc fp32"] / med["onnxc bf16"]
    print(f"| {name} | T=1 | {line} | onnxc fp32/bf16 {speedup:.2f}x |", flush=True)


def conv_chain(spec: str, rounds: int) -> None:
    """Eight C -> C convs (KxK, pads K//2) with Relu at HxW, `spec` = CxHWxK: the conv
    kernels nearly alone (one layout conversion at each end)."""
    from onnx import helper, numpy_helper

    c, hw, k = map(int, spec.split("x"))
    rng = np.random.default_rng(0)
    nodes, inits, x = [], [], "x"
    for i in range(8):
        w = (rng.standard_normal((c, c, k, k)) / np.sqrt(c * k * k)).astype(np.float32)
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        nodes += [helper.make_node("Conv", [x, f"w{i}"], [f"c{i}"], pads=[k // 2] * 4),
                  helper.make_node("Relu", [f"c{i}"], [f"r{i}"])]
        x = f"r{i}"
    shape = [1, c, hw, hw]
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", 1, shape)],
                              [helper.make_tensor_value_info(x, 1, shape)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              ir_version=8)
    flops = 8 * 2 * c * c * k * k * hw * hw
    runs = {p: _onnxc(onnxc.compile(model, num_threads=1, cache_dir=False, precision=p))
            for p in ("fp32", "bf16")}
    feeds = {"x": rng.random((1, c, hw, hw), dtype=np.float32)}
    times: dict[str, list[float]] = {p: [] for p in runs}
    for _ in range(rounds):
        for p, run in runs.items():
            start = time.perf_counter()
            run(feeds)
            times[p].append(time.perf_counter() - start)
    med = {p: statistics.median(v) for p, v in times.items()}
    print(f"| conv chain {spec} | " + " | ".join(
        f"{p} {t * 1e3:.2f} ms {flops / t / 1e9:.0f} GFLOP/s" for p, t in med.items())
        + f" | fp32/bf16 {med['fp32'] / med['bf16']:.2f}x |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--seeds", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--openvino", action="store_true")
    parser.add_argument("--conv-chains", default="",
                        help="also time conv chains, e.g. 256x14x3,64x56x3 (CxHWxK)")
    args = parser.parse_args()
    for name in filter(None, args.models.split(",")):
        measure(name, args.seeds, args.rounds, args.openvino)
    for spec in filter(None, args.conv_chains.split(",")):
        conv_chain(spec, args.rounds)


if __name__ == "__main__":
    import results_file

    with results_file.recording():
        main()
