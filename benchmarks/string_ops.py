"""String ops against onnxruntime on one shared machine: run time per call of one-node
models over a batch of short strings (median of interleaved repetitions: onnxc, then
onnxruntime, then onnxc, ...), and what part of onnxc's call is the boundary's work
(encoding the inputs into UTF-8 blobs, reading the string outputs back).

    python benchmarks/string_ops.py [--n 20000] [--reps 15]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper

sys.path.insert(0, str(Path(__file__).resolve().parent))

import onnxc  # noqa: E402
import results_file  # noqa: E402

S = onnx.TensorProto.STRING


def _model(op: str, attrs: dict, out_type: int, outputs=("y",), opset=20, domain=""):
    node = helper.make_node(op, ["x"], list(outputs), domain=domain or None, **attrs)
    outs = [helper.make_tensor_value_info(outputs[0], out_type, None)]
    outs += [helper.make_tensor_value_info(o, onnx.TensorProto.INT64, None)
             for o in outputs[1:]]
    graph = helper.make_graph([node], op.lower(), [helper.make_tensor_value_info("x", S, ["n"])],
                              outs)
    imports = [helper.make_opsetid("", opset)]
    if domain:
        imports.append(helper.make_opsetid(domain, 2))
    return helper.make_model(graph, opset_imports=imports, ir_version=9)


CASES = {
    "Identity (boundary only)": _model("Identity", {}, S, opset=17),
    "RegexFullMatch email": _model("RegexFullMatch", {"pattern": r"[a-z0-9.]+@[a-z]+\.(com|org)"},
                                   onnx.TensorProto.BOOL),
    "StringSplit ' '": _model("StringSplit", {"delimiter": " "}, S, outputs=("y", "z")),
    "StringNormalizer LOWER": _model("StringNormalizer", {"case_change_action": "LOWER",
                                                          "locale": "C.UTF-8"}, S, opset=10),
    "LabelEncoder 50 keys": _model("LabelEncoder", {
        "keys_strings": [f"user{i}@mail.com" for i in range(50)],
        "values_int64s": list(range(50))}, onnx.TensorProto.INT64, domain="ai.onnx.ml"),
}


def _median_us(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    words = np.array([f"user{i}@mail.com" for i in range(80)] + ["Héllo Wörld", "a b c d",
                                                                  "日本語 テキスト"], dtype=object)
    x = rng.choice(words, size=args.n)
    print(f"{args.n} strings of 7-19 bytes, median of {args.reps} interleaved calls "
          f"(2-vCPU machine shared with other jobs: expect noise)\n")
    print("| model | onnxc (us) | onnxruntime (us) | onnxruntime / onnxc |")
    print("|---|---|---|---|")
    for name, model in CASES.items():
        compiled = onnxc.compile(model, num_threads=1)
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        session = ort.InferenceSession(model.SerializeToString(), options,
                                       providers=["CPUExecutionProvider"])
        feeds = {"x": x}
        for g, e in zip(compiled.run(None, feeds), session.run(None, feeds)):
            assert np.array_equal(np.asarray(g), np.asarray(e)), name
        ours, theirs = [], []
        for _ in range(3):  # interleaved rounds
            ours.append(_median_us(lambda: compiled.run(None, feeds), args.reps))
            theirs.append(_median_us(lambda: session.run(None, feeds), args.reps))
        a, b = statistics.median(ours), statistics.median(theirs)
        print(f"| {name} | {a:.0f} | {b:.0f} | {b / a:.2f} |")


if __name__ == "__main__":
    with results_file.recording(topic="strings"):
        main()
