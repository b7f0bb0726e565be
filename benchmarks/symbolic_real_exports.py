"""Benchmark: real exports compiled once with their symbolic dimensions against one compile
per shape (`input_shapes=`), one thread.

The models are the test corpus's (tests/models/real_exports: small configs, seeded weights):
a Llama decode step (optimum-onnx, past 64), BERT at sequence 128 (optimum-onnx), and the
dynamic-resolution CNNs of torch.onnx (resnet18 and deeplabv3, TorchScript exporter, dynamic
H and W). Each shape runs the same inputs through the symbolic model, the fixed-shape model
and onnxruntime (one thread each), interleaved in this process; the table gives medians and
symbolic / fixed (the goal: at most 1.15) and symbolic / onnxruntime.

Usage: python benchmarks/symbolic_real_exports.py [--repeat 21] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CASES = [  # (model, case name, dims): each row of the table
    ("llama", "decode past 64", {"batch_size": 1, "sequence_length": 1,
                                 "past_sequence_length": 64}),
    ("bert", "seq 128", {"batch_size": 1, "sequence_length": 128}),
    ("resnet18_ts", "224x224", {"batch": 1, "height": 224, "width": 224}),
    ("resnet18_ts", "160x200", {"batch": 1, "height": 160, "width": 200}),
    ("deeplabv3_mobilenet_v3_large_ts", "224x224", {"batch": 1, "height": 224, "width": 224}),
    ("deeplabv3_mobilenet_v3_large_ts", "320x256", {"batch": 1, "height": 320, "width": 256}),
]


def cpu_name() -> str:
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return platform.processor() or "unknown CPU"
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    flags = fields.get("Flags", "")
    isa = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "no AVX2"
    return (f"{fields.get('Model name', '?').strip()}, {fields.get('CPU(s)', '?').strip()} "
            f"vCPUs, {isa}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--out", type=Path, help="also write the table to this file")
    args = parser.parse_args()

    sys.path.insert(0, str(ROOT))
    import onnxruntime

    import onnxc
    from onnxc.tools.bench_timing import interleaved_medians
    from tests.models.real_exports import corpus

    header = (f"CPU: {cpu_name()}; onnxc one thread, onnxruntime {onnxruntime.__version__} "
              f"one thread; medians of {args.repeat} interleaved rounds.")
    columns = ("| model | shape | symbolic | fixed | symbolic / fixed | onnxruntime | "
               "symbolic / ORT |")
    lines = [header, "", columns, "|---|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    compiled: dict[str, tuple] = {}
    rng = np.random.default_rng(0)
    for name, label, dims in CASES:
        if name not in compiled:
            model = corpus.load(name)
            start = time.perf_counter()
            symbolic = onnxc.compile(model, cache_dir=False, num_threads=1, quiet=True)
            seconds = time.perf_counter() - start
            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = 1
            session = onnxruntime.InferenceSession(model.SerializeToString(), options,
                                                   providers=["CPUExecutionProvider"])
            compiled[name] = (model, symbolic, session)
            print(f"<!-- {name}: symbolic compile {seconds:.1f} s -->", flush=True)
        model, symbolic, session = compiled[name]
        corpus.cases(name)[label] = {"dims": dims}  # a case of this run only
        feeds = corpus.feeds(name, label, rng)
        fixed = onnxc.compile(model, cache_dir=False, num_threads=1, quiet=True,
                              input_shapes={k: v.shape for k, v in feeds.items()})
        for a, b in zip(symbolic.run(None, feeds), fixed.run(None, feeds), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)
        runs = [lambda m=symbolic, x=feeds: m.run(None, x),
                lambda m=fixed, x=feeds: m.run(None, x),
                lambda m=session, x=feeds: m.run(None, x)]
        s, f, o = (t * 1e3 for t in interleaved_medians(runs, args.repeat))
        row = (f"| {name} | {label} | {s:.3f} ms | {f:.3f} ms | {s / f:.2f} | {o:.3f} ms | "
               f"{s / o:.2f} |")
        lines.append(row)
        print(row, flush=True)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    import results_file

    with results_file.recording():
        main()
