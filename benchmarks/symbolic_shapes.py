"""Benchmark: one compile with a symbolic sequence axis against one compile per fixed length.

The GPT of `onnxc.zoo_gpt` (prefill model, by default width 256, 4 heads, 2 layers) is
compiled once with its symbolic `seq`, and once per length with `input_shapes`; both run the
same inputs at each length with one thread, interleaved in this process with onnxruntime
(one thread each, so the engines do not compete for cores), and the medians are reported
with the ratio symbolic / fixed (issue 11's goal: at most 1.15) and against onnxruntime.
Compile times are reported too: the symbolic model's is paid once for every length.

`--model FILE.onnx` measures an ONNX model with one size symbol instead (e.g. the torch
exports in tests/models/torch_exports: tagger.onnx, gru.onnx, countedrnn_seq.onnx): every
symbolic dimension of its inputs takes the length, float inputs are normal samples and
integer inputs token ids in [0, 200).

Usage: python benchmarks/symbolic_shapes.py [--lengths 16,128] [--width 256] [--repeat 11]
       python benchmarks/symbolic_shapes.py --model FILE.onnx [--lengths 16,128]
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", default="16,128")
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=11)
    parser.add_argument("--model", help="an ONNX file with one size symbol instead of the GPT")
    args = parser.parse_args()

    import onnx
    import onnxruntime

    import onnxc
    from onnxc.tools.bench_timing import interleaved_medians
    from onnxc.zoo_gpt import GptConfig, gpt

    config = GptConfig(vocab=512, width=args.width, heads=args.heads, layers=args.layers)
    model = gpt(config) if args.model is None else onnx.load(args.model)
    start = time.perf_counter()
    symbolic = onnxc.compile(model, cache_dir=False, num_threads=1, quiet=True)
    print(f"symbolic compile: {time.perf_counter() - start:.2f} s (once for every length)")
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    reference = onnxruntime.InferenceSession(model.SerializeToString(), options,
                                             providers=["CPUExecutionProvider"])
    print("| seq | symbolic | fixed | symbolic / fixed | onnxruntime | symbolic / ORT |")
    print("|---|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    for seq in (int(s) for s in args.lengths.split(",")):
        if args.model is None:
            feeds = {"input_ids": rng.integers(0, config.vocab, (1, seq)),
                     "position_ids": np.arange(seq, dtype=np.int64)[None]}
        else:
            feeds = _feeds(symbolic, seq, rng)
        shapes = {name: value.shape for name, value in feeds.items()}
        start = time.perf_counter()
        fixed = onnxc.compile(model, cache_dir=False, num_threads=1, quiet=True,
                              input_shapes=shapes)
        fixed_seconds = time.perf_counter() - start
        ours = symbolic.run(None, feeds)
        for a, b in zip(ours, fixed.run(None, feeds)):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
        times = interleaved_medians([lambda f=feeds: symbolic.run(None, f),
                                     lambda f=feeds, m=fixed: m.run(None, f),
                                     lambda f=feeds: reference.run(None, f)], args.repeat)
        s, f, o = (t * 1e3 for t in times)
        print(f"| {seq} | {s:.3f} ms | {f:.3f} ms (compile {fixed_seconds:.1f} s) | "
              f"{s / f:.2f} | {o:.3f} ms | {s / o:.2f} |")


def _feeds(model, seq: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Inputs of `model` (a symbolic CompiledModel) with every symbolic dimension `seq`."""
    feeds = {}
    for spec in model.inputs:
        shape = tuple(seq if isinstance(d, str) else d for d in spec.shape)
        if np.issubdtype(spec.dtype, np.integer):
            feeds[spec.name] = rng.integers(0, 200, shape).astype(spec.dtype)
        else:
            feeds[spec.name] = rng.standard_normal(shape).astype(spec.dtype)
    return feeds


if __name__ == "__main__":
    import results_file

    with results_file.recording():
        main()
