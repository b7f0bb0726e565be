"""Compute nodes after graph optimization: onnxc -O3 next to onnxruntime ORT_ENABLE_EXTENDED.

A compute node is an op that is not a constant: for onnxc every graph op but graph.constant
and graph.constant_of_shape (after `onnxc.optimize(model, opt_level=3)`), for onnxruntime
every node of the model it saves with `SessionOptions.optimized_model_filepath` but Constant
(initializers are not nodes). Fewer nodes means fewer kernels and fewer passes over memory;
the ratio column is onnxc / onnxruntime. It also times the -O3 graph pipeline on each network
(densenet121, the largest graph, must stay under 10 s).

    python benchmarks/node_counts.py [--models densenet121,resnet50] [--opt-level 3]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections import Counter

import onnx
import onnxruntime as ort

import onnxc
from onnxc.passes.stats import compute_nodes, op_counts
from onnxc.zoo import ZOO_MODELS, benchmark_models, load_zoo


def ort_compute_nodes(model: onnx.ModelProto) -> tuple[int, Counter[str]]:
    """Nodes (but Constant) of the model onnxruntime writes after ORT_ENABLE_EXTENDED."""
    with tempfile.TemporaryDirectory(prefix="onnxc-node-counts-") as tmp:
        path = os.path.join(tmp, "optimized.onnx")
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        options.optimized_model_filepath = path
        options.log_severity_level = 3
        ort.InferenceSession(model.SerializeToString(), options,
                             providers=["CPUExecutionProvider"])
        optimized = onnx.load(path)
    kinds = Counter(n.op_type for n in optimized.graph.node if n.op_type != "Constant")
    return sum(kinds.values()), kinds


def onnxc_compute_nodes(model: onnx.ModelProto, opt_level: int) -> tuple[int, Counter, float]:
    """Compute nodes after the graph pipeline of `opt_level`, and the pipeline's wall time."""
    from onnxc.frontend import import_onnx

    module = import_onnx(model)
    start = time.perf_counter()
    onnxc.optimize(module, opt_level=opt_level)
    seconds = time.perf_counter() - start
    counts = op_counts(module)
    return compute_nodes(counts), counts, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    extra = [n for n in benchmark_models() if n not in ZOO_MODELS]
    parser.add_argument("--models", default=",".join([*ZOO_MODELS, *extra]),
                        help="zoo networks and/or benchmark models (onnxc.zoo.benchmark_models)")
    parser.add_argument("--opt-level", type=int, default=3)
    parser.add_argument("--verbose", action="store_true", help="print the op kinds too")
    args = parser.parse_args()

    print(f"{'model':<22}{'onnx':>7}{'onnxc -O' + str(args.opt_level):>11}{'ort ext':>9}"
          f"{'ratio':>7}{'-O' + str(args.opt_level) + ' s':>8}")
    for name in args.models.split(","):
        model = load_zoo(name) if name in ZOO_MODELS else benchmark_models()[name]()
        original = sum(1 for n in model.graph.node if n.op_type != "Constant")
        ours, kinds, seconds = onnxc_compute_nodes(model, args.opt_level)
        theirs, their_kinds = ort_compute_nodes(model)
        print(f"{name:<22}{original:>7}{ours:>11}{theirs:>9}{ours / theirs:>7.2f}"
              f"{seconds:>8.2f}", flush=True)
        if args.verbose:
            print("   onnxc:", dict(sorted((k, v) for k, v in kinds.items()
                                           if k not in ("graph.constant",
                                                        "graph.constant_of_shape"))))
            print("   ort:  ", dict(sorted(their_kinds.items())))


if __name__ == "__main__":
    import results_file

    with results_file.recording():
        main()
