"""What the run-time index checks cost: onnxc with and without them, and onnxruntime.

Every op that reads run-time indices (Gather, GatherElements, ScatterND, ...) gets a
`graph.check_indices` kernel before it (passes/insert_checks.py), and its own kernel clamps
each index into range. This times, at one thread, interleaved in one process (medians):

- `checked`: onnxc as it compiles by default;
- `no checks`: the same compile without the check kernels (the clamps stay), which is what the
  checks cost on their own, and never something a user can select;
- onnxruntime (ORT_ENABLE_ALL, one intra-op thread, preallocated outputs on both sides).

Cases: a 2-layer BERT-base encoder behind its embedding Gather (token ids [1, 128] into a
30522 x 768 table), and Gather-heavy micro-benchmarks (rows, scalars, GatherElements,
ScatterND rows).

    python benchmarks/index_checks.py [--repeat 50]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from unittest import mock

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import onnxc
from onnxc import pipeline
from onnxc.zoo_bert import bert_encoder, bert_inputs

VOCAB, SEQ, HIDDEN = 30522, 128, 768


def with_embeddings(encoder: onnx.ModelProto, rng: np.random.Generator) -> onnx.ModelProto:
    """`encoder` fed by word + position embeddings of int64 input_ids [1, SEQ]."""
    model = onnx.ModelProto()
    model.CopyFrom(encoder)
    graph = model.graph
    words = (rng.standard_normal((VOCAB, HIDDEN)) * 0.02).astype(np.float32)
    positions = (rng.standard_normal((SEQ, HIDDEN)) * 0.02).astype(np.float32)
    graph.initializer.extend([numpy_helper.from_array(words, "word_embeddings"),
                              numpy_helper.from_array(positions, "position_embeddings")])
    embedding = [helper.make_node("Gather", ["word_embeddings", "input_ids"], ["words"],
                                  name="embeddings.word"),
                 helper.make_node("Add", ["words", "position_embeddings"], ["hidden_states"],
                                  name="embeddings.add")]
    nodes = list(graph.node)
    del graph.node[:]
    graph.node.extend(embedding + nodes)
    inputs = [i for i in graph.input if i.name != "hidden_states"]
    del graph.input[:]
    graph.input.extend([helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, SEQ]),
                        *inputs])
    onnx.checker.check_model(model)
    return model


def one_node(op: str, data: tuple[int, ...], index: np.ndarray, extra: dict | None = None,
             **attrs) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """`op` on a float data input and an int64 index input (and float updates for scatters)."""
    rng = np.random.default_rng(1)
    feeds = {"x": rng.standard_normal(data).astype(np.float32), "i": index}
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(data)),
              helper.make_tensor_value_info("i", TensorProto.INT64, list(index.shape))]
    for name, array in (extra or {}).items():
        feeds[name] = array
        inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(array.shape)))
    graph = helper.make_graph([helper.make_node(op, list(feeds), ["y"], **attrs)], op, inputs,
                              [helper.make_empty_tensor_value_info("y")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    return model, feeds


def cases() -> list[tuple[str, onnx.ModelProto, dict[str, np.ndarray]]]:
    rng = np.random.default_rng(0)
    bert = with_embeddings(bert_encoder(layers=2), rng)
    bert_feeds = {"input_ids": rng.integers(0, VOCAB, (1, SEQ)),
                  "attention_mask": bert_inputs(bert_encoder(layers=1))["attention_mask"]}
    rows = rng.integers(-50_000, 50_000, 16_384)
    scalars = rng.integers(-1 << 20, 1 << 20, 1 << 20)
    elements = rng.integers(-1024, 1024, (1024, 1024))
    scatter_rows = rng.permutation(4096)[:2048].reshape(2048, 1)
    return [
        ("BERT-base 2 layers + embedding Gather", bert, bert_feeds),
        ("Gather 16384 rows of 256 from 50000", *one_node("Gather", (50_000, 256), rows)),
        ("Gather 1M scalars from 1M", *one_node("Gather", (1 << 20,), scalars)),
        ("GatherElements 1024x1024 axis 1",
         *one_node("GatherElements", (1024, 1024), elements, axis=1)),
        ("ScatterND 2048 rows of 256 into 4096",
         *one_node("ScatterND", (4096, 256), scatter_rows,
                   {"u": np.ones((2048, 256), np.float32)})),
    ]


def compile_variants(model: onnx.ModelProto) -> dict[str, onnxc.CompiledModel]:
    """onnxc as shipped, and the same compile with the check kernels left out."""
    checked = onnxc.compile(model, num_threads=1, cache_dir=False)
    unchecked_stage = tuple(p for p in pipeline.GRAPH_TO_LOOPS if p != "insert-runtime-checks")
    with mock.patch.object(pipeline, "GRAPH_TO_LOOPS", unchecked_stage):
        unchecked = onnxc.compile(model, num_threads=1, cache_dir=False)
    assert len(checked.check_sites) > len(unchecked.check_sites) == 0
    return {"checked": checked, "no checks": unchecked}


def median_ms(runs: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """Interleaved rounds: every runner once per round, in a shuffled order (the runner
    after a slow one finds its data evicted from the caches, the one after a fast one warm;
    rotating the order would keep each runner's predecessor), medians over `repeat` rounds."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for run in runs.values():
        run()  # warm-up
    order = list(runs.items())
    shuffle = np.random.default_rng(0)
    for _ in range(repeat):
        for k in shuffle.permutation(len(order)):
            name, run = order[k]
            start = time.perf_counter()
            run()
            times[name].append((time.perf_counter() - start) * 1e3)
    return {name: statistics.median(t) for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    print("| case | checked ms | no checks ms | onnxruntime ms | checks' cost | checked / ORT |")
    print("|---|---|---|---|---|---|")
    for name, model, feeds in cases():
        variants = compile_variants(model)
        outputs = {k: [np.empty(o.shape, o.dtype) for o in c.outputs]
                   for k, c in variants.items()}
        session = ort.InferenceSession(model.SerializeToString(), options,
                                       providers=["CPUExecutionProvider"])
        binding = session.io_binding()
        for key, value in feeds.items():
            binding.bind_cpu_input(key, value)
        ort_out = [np.empty_like(o) for o in outputs["checked"]]
        for out, array in zip(session.get_outputs(), ort_out):
            binding.bind_output(out.name, "cpu", 0, array.dtype, array.shape,
                                array.ctypes.data)
        runs: dict[str, Callable[[], object]] = {
            k: (lambda c=c, o=outputs[k]: c.run(None, feeds, out=o))
            for k, c in variants.items()}
        runs["onnxruntime"] = lambda: session.run_with_iobinding(binding)
        ms = median_ms(runs, args.repeat)
        for k in variants:
            np.testing.assert_allclose(outputs[k][0], ort_out[0], rtol=1e-3, atol=1e-4)
        cost = ms["checked"] / ms["no checks"] - 1
        print(f"| {name} | {ms['checked']:.3f} | {ms['no checks']:.3f} | "
              f"{ms['onnxruntime']:.3f} | {cost:+.1%} | {ms['checked'] / ms['onnxruntime']:.2f} |",
              flush=True)


if __name__ == "__main__":
    import results_file

    with results_file.recording():
        main()
