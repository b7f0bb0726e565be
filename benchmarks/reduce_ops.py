"""onnxc vs onnxruntime on reduction and index ops, one node each.

Both run interleaved in one process (median of 30 runs each); on a shared machine the ratio
(onnxc / ORT) is what counts, not the absolute times. ORT uses one intra-op thread.

    python benchmarks/reduce_ops.py [--threads N]   # onnxc threads (default: onnxc's choice)
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import onnxc


def one_node(op: str, shapes: list[tuple[int, ...]], consts: list[np.ndarray], attrs: dict,
             opset: int, outputs: int = 1) -> onnx.ModelProto:
    """A model of one `op` node on float inputs x0.. and constant inputs c0.."""
    inputs = [helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, s)
              for i, s in enumerate(shapes)]
    inits = [numpy_helper.from_array(c, f"c{i}") for i, c in enumerate(consts)]
    names = [v.name for v in inputs] + [t.name for t in inits]
    outs = [f"y{i}" for i in range(outputs)]
    graph = helper.make_graph([helper.make_node(op, names, outs, **attrs)], op.lower(), inputs,
                              [helper.make_empty_tensor_value_info(o) for o in outs], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8  # readable by onnxruntime
    return model


def axes(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


ROWS, WIDE = (256, 4096), (4096, 256)
CASES = [
    ("ReduceMax last axis 256x4096", one_node("ReduceMax", [ROWS], [axes(1)], {}, 18)),
    ("ReduceMax first axis 4096x256", one_node("ReduceMax", [WIDE], [axes(0)], {}, 18)),
    ("ReduceSum first axis 4096x256", one_node("ReduceSum", [WIDE], [axes(0)], {}, 18)),
    ("ReduceLogSumExp last axis 256x4096",
     one_node("ReduceLogSumExp", [ROWS], [axes(1)], {}, 18)),
    ("ArgMax last axis 256x4096", one_node("ArgMax", [ROWS], [], {"axis": 1}, 13)),
    ("ArgMax first axis 4096x256", one_node("ArgMax", [WIDE], [], {"axis": 0}, 13)),
    ("TopK k=5 last axis 64x1000", one_node("TopK", [(64, 1000)], [axes(5)], {}, 13, 2)),
    ("CumSum axis 1 256x4096", one_node("CumSum", [ROWS], [np.array(1)], {}, 14)),
    ("CumSum axis 0 4096x256", one_node("CumSum", [WIDE], [np.array(0)], {}, 14)),
    ("Trilu 16x256x256", one_node("Trilu", [(16, 256, 256)], [], {}, 14)),
    ("Einsum bhqd,bhkd->bhqk 1x8x128x64",
     one_node("Einsum", [(1, 8, 128, 64), (1, 8, 128, 64)], [],
              {"equation": "bhqd,bhkd->bhqk"}, 12)),
]


def timed_ms(run, feeds: dict[str, np.ndarray]) -> float:
    start = time.perf_counter()
    run(None, feeds)
    return (time.perf_counter() - start) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    rng = np.random.default_rng(0)
    for name, model in CASES:
        feeds = {v.name: rng.standard_normal([d.dim_value for d in
                                              v.type.tensor_type.shape.dim]).astype(np.float32)
                 for v in model.graph.input}
        session = ort.InferenceSession(model.SerializeToString(), options,
                                       providers=["CPUExecutionProvider"])
        compiled = onnxc.compile(model, num_threads=args.threads)
        ours, theirs = [], []
        for _ in range(args.repeat):  # interleaved: both see the same machine load
            ours.append(timed_ms(compiled.run, feeds))
            theirs.append(timed_ms(session.run, feeds))
        a, b = float(np.median(ours)), float(np.median(theirs))
        print(f"{name:38s} onnxc {a:8.3f} ms  ort {b:8.3f} ms  ratio {a / b:5.2f}x")


if __name__ == "__main__":
    import results_file

    with results_file.recording():
        main()
