"""Benchmark: a symbolic batch run once per sample against the batch as a symbolic dimension.

A model whose inputs share a symbolic leading batch and that is batch-separable compiles for
one sample and runs once per sample (frontend/batch_axes.py); any other symbolic batch is an
ordinary symbolic dimension of one native run. This compares both on the same model: the
zoo BERT encoder (2 layers, width 768, seq 128 by default) with `batch` as its leading
dimension (its reshape targets copy the batch, as exporters write them), at several batch
sizes, one thread, interleaved in this process with onnxruntime; medians, and the ratios.

Usage: python benchmarks/batch_modes.py [--batches 1,4,8] [--seq 128] [--repeat 7]
"""

from __future__ import annotations

import argparse
import time
from unittest import mock

import numpy as np


def batched_bert(seq: int, layers: int):
    """The zoo BERT encoder with a symbolic leading `batch`."""
    from onnx import numpy_helper

    from onnxc.zoo_bert import bert_encoder

    model = bert_encoder(layers=layers, seq=seq)
    for k, init in enumerate(model.graph.initializer):
        if init.name.startswith("shape"):  # [1, seq, ...] -> [0 (copy the batch), seq, ...]
            target = numpy_helper.to_array(init).copy()
            target[0] = 0
            model.graph.initializer[k].CopyFrom(numpy_helper.from_array(target, init.name))
    for value in [*model.graph.input, *model.graph.output]:
        first = value.type.tensor_type.shape.dim[0]
        first.Clear()
        first.dim_param = "batch"
    return model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", default="1,4,8")
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()

    import onnxruntime

    import onnxc
    import onnxc.api
    from onnxc.errors import ShapeInferenceError
    from onnxc.tools.bench_timing import interleaved_medians

    model = batched_bert(args.seq, args.layers)
    start = time.perf_counter()
    per_sample = onnxc.compile(model, cache_dir=False, num_threads=1, quiet=True)
    print(f"per-sample compile: {time.perf_counter() - start:.2f} s")
    assert per_sample.symbolic is None

    def not_separable(_):
        raise ShapeInferenceError("measuring the batch as a symbolic dimension")

    start = time.perf_counter()
    with mock.patch.object(onnxc.api, "batch_axis", not_separable):
        symbolic = onnxc.compile(model, cache_dir=False, num_threads=1, quiet=True)
    print(f"symbolic compile: {time.perf_counter() - start:.2f} s")
    assert symbolic.symbolic is not None
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    reference = onnxruntime.InferenceSession(model.SerializeToString(), options,
                                             providers=["CPUExecutionProvider"])
    print("| batch | per sample | symbolic batch | symbolic / per sample | onnxruntime | "
          "best / ORT |")
    print("|---|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    for batch in (int(b) for b in args.batches.split(",")):
        feeds = {"hidden_states": rng.standard_normal((batch, args.seq, 768)).astype(np.float32),
                 "attention_mask": np.ones((batch, args.seq), np.float32)}
        feeds["attention_mask"][:, -args.seq // 4:] = 0
        want = reference.run(None, feeds)[0]
        for compiled in (per_sample, symbolic):
            np.testing.assert_allclose(compiled.run(None, feeds)[0], want, rtol=1e-3, atol=1e-3)
        times = interleaved_medians([lambda f=feeds: per_sample.run(None, f),
                                     lambda f=feeds: symbolic.run(None, f),
                                     lambda f=feeds: reference.run(None, f)], args.repeat)
        p, s, o = (t * 1e3 for t in times)
        print(f"| {batch} | {p:.2f} ms | {s:.2f} ms | {s / p:.2f} | {o:.2f} ms | "
              f"{min(p, s) / o:.2f} |")


if __name__ == "__main__":
    import results_file

    with results_file.recording():
        main()
