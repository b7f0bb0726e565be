"""`onnxc bench MODEL`: onnxc against onnxruntime / OpenVINO, each runtime in its own process.

For each thread count T, onnxc and then every `--compare` runtime are timed one after another,
each in a fresh worker process (bench_worker.py) on the same model file and inputs: medians
of `--repeat` rounds after a warm-up. Isolation is the default because two spinning thread
pools in one process fight over a small machine's cores at T >= 2; `--interleaved` keeps the
runtimes in this process, alternating rounds, which is fair at T = 1 only. Every runtime's
outputs are checked against onnxc's (rtol 1e-3, atol 1e-4). The table gives the median
latency, the ratio onnxc time / runtime time (below 1: onnxc is faster) and GFLOP/s from the
model's FLOP count (flops.py).
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import onnx

from onnxc.compile_options import parse_input_shapes
from onnxc.errors import InvalidArgumentError, InvalidInputError, ToolchainError
from onnxc.tools.bench_runners import REFERENCE, check_available, make_runner, parse_compare
from onnxc.tools.bench_timing import MIN_ROUND_SECONDS, interleaved_samples
from onnxc.tools.bench_worker import Measurement, TimingSettings, run_worker, save_feeds
from onnxc.tools.flops import count_flops

DESCRIPTION = (
    "Time onnxc and each --compare runtime on MODEL at each --threads count, every runtime "
    "in its own process (so their thread pools cannot fight over the cores), and print the "
    "median latency, the ratio onnxc time / runtime time (below 1: onnxc is faster), "
    "GFLOP/s and whether each runtime's outputs match onnxc's (rtol 1e-3, atol 1e-4).")

RTOL, ATOL = 1e-3, 1e-4
INPUT_SEED = 2


# ------------------------------------------------------------------ models and inputs


def model_builders() -> dict[str, Callable[[], onnx.ModelProto]]:
    """The built-in benchmark models by name (onnxc.zoo.benchmark_models and matmul_1024)."""
    from onnxc.zoo import benchmark_models, matmul_model

    builders = dict(benchmark_models())
    builders["matmul_1024"] = lambda: matmul_model(1024)
    return builders


def builtin_names() -> list[str]:
    from onnxc.zoo import ZOO_MODELS

    return [*model_builders(), *(n for n in ZOO_MODELS if n not in model_builders())]


def build(name: str) -> onnx.ModelProto:
    """The named built-in model with seeded random weights; a classifier also outputs its
    logits, since random weights saturate its softmax to 0/1 and would hide errors."""
    from onnxc.zoo import ZOO_MODELS, expose_logits, load_zoo, randomize_weights

    builders = model_builders()
    if name in builders:
        model = builders[name]()
    elif name in ZOO_MODELS:
        model = randomize_weights(load_zoo(name), seed=1)
    else:
        raise InvalidArgumentError(f"unknown benchmark model {name!r}; choose from "
                                   f"{', '.join(builtin_names())}")
    outputs = {o.name for o in model.graph.output}
    if any(n.op_type == "Softmax" and n.output[0] in outputs for n in model.graph.node):
        model = expose_logits(model)
    return model


def seeded_inputs(builtin: str | None, model: onnx.ModelProto) -> dict[str, np.ndarray]:
    """Seeded random feeds (floats uniform in [0, 1), integers zero); the built-in BERT gets
    hidden states and a padding mask."""
    from onnxc.zoo import bert_inputs, random_inputs

    if builtin is not None and builtin.startswith("bert"):
        return bert_inputs(model, seed=INPUT_SEED)
    return random_inputs(model, seed=INPUT_SEED)


def load_benchmark_model(spec: str) -> tuple[onnx.ModelProto, bool]:
    """(model, whether it is built in) for MODEL: an .onnx path or a built-in name."""
    from onnxc.frontend.onnx_model import load_model

    if os.path.exists(spec):
        return load_model(spec), False
    if spec in builtin_names():
        return build(spec), True
    if spec.endswith(".onnx") or os.sep in spec:
        raise FileNotFoundError(2, "No such file or directory", spec)
    raise InvalidArgumentError(f"MODEL {spec!r} is neither a file nor a built-in benchmark "
                               f"model ({', '.join(builtin_names())})")


def _graph_inputs(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    initializers = {i.name for i in model.graph.initializer}
    return [vi for vi in model.graph.input if vi.name not in initializers]


def _symbolic(vi: onnx.ValueInfoProto) -> bool:
    t = vi.type.tensor_type
    return not t.HasField("shape") or any(not d.HasField("dim_value") for d in t.shape.dim)


def _input_specs(model: onnx.ModelProto) -> list[tuple[str, tuple[int, ...], np.dtype]]:
    return [(vi.name, tuple(d.dim_value for d in vi.type.tensor_type.shape.dim),
             onnx.helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type))
            for vi in _graph_inputs(model)]


def static_model(model: onnx.ModelProto, shapes: Mapping[str, tuple[int, ...]],
                 feeds: Mapping[str, np.ndarray] | None) -> onnx.ModelProto:
    """`model` with every input static: sizes from `shapes`, else from the given feeds;
    InvalidArgumentError asking for --input-shapes when a symbolic dimension is left."""
    from onnxc.frontend.batch_axes import with_fixed_shapes

    fixed = dict(shapes)
    for vi in _graph_inputs(model):
        if vi.name not in fixed and feeds is not None and _symbolic(vi):
            fixed[vi.name] = tuple(feeds[vi.name].shape)
    if fixed:
        model = with_fixed_shapes(model, fixed)
    for vi in _graph_inputs(model):
        if _symbolic(vi):
            dims = [str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?")
                    for d in vi.type.tensor_type.shape.dim]
            example = "x".join("1" if not d.isdigit() else d for d in dims) or "1"
            raise InvalidArgumentError(
                f"input '{vi.name}' has symbolic dimensions [{', '.join(dims)}]; give fixed "
                f"sizes with --input-shapes {vi.name}={example}")
    return model


def check_feeds(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> None:
    """InvalidInputError for a feed whose shape or dtype is not the (static) input's."""
    for name, shape, dtype in _input_specs(model):
        value = feeds[name]
        if tuple(value.shape) != shape or value.dtype != dtype:
            raise InvalidInputError(
                f"input '{name}': the model takes {dtype} {list(shape)}, --inputs has "
                f"{value.dtype} {list(value.shape)}")


def prepare(spec: str, inputs_path: str | None, input_shapes: Sequence[str]
            ) -> tuple[onnx.ModelProto, dict[str, np.ndarray], bool]:
    """(static model, feeds, whether it differs from the file MODEL names) for the run."""
    from onnxc.tools.run import load_inputs

    model, builtin = load_benchmark_model(spec)
    given = None
    if inputs_path is not None:
        given = load_inputs(inputs_path, _input_specs(model))
    shapes = parse_input_shapes(input_shapes)
    static = static_model(model, shapes, given)
    feeds = given if given is not None else seeded_inputs(spec if builtin else None, static)
    check_feeds(static, feeds)
    return static, feeds, builtin or static is not model


# ------------------------------------------------------------------ measuring


def check_interleaved(threads: Sequence[int]) -> None:
    if any(t != 1 for t in threads):
        raise InvalidArgumentError(
            f"--interleaved is fair at 1 thread only, not {','.join(map(str, threads))}: in "
            f"one process the runtimes' thread pools fight over the cores")


def measure_runtimes(runtimes: Sequence[str], model_path: str, feeds: Mapping[str, np.ndarray],
                     threads: int, settings: TimingSettings, workdir: str, *,
                     interleaved: bool = False, passes: int = 1) -> list[Measurement]:
    """Every runtime at `threads` threads: each in its own worker process, one after
    another (`passes` times, in alternating order, the rounds of all passes pooled), or
    (`interleaved`, T = 1 only) all in this process in alternating rounds."""
    if interleaved:
        check_interleaved([threads])
        runners = [make_runner(r, model_path, feeds, 1, opt_level=settings.opt_level,
                               cache=settings.cache) for r in runtimes]
        outputs = [[np.array(a, copy=True) for a in r.call()] for r in runners]
        samples = interleaved_samples([r.call for r in runners], settings.repeat,
                                      settings.min_round_seconds)
        return [Measurement(name, 1, s, r.prepare_seconds, r.version, o, r.details)
                for name, r, s, o in zip(runtimes, runners, samples, outputs)]
    inputs_path = os.path.join(workdir, "inputs.npz")
    if not os.path.exists(inputs_path):
        save_feeds(inputs_path, feeds)
    outputs_path = os.path.join(workdir, "outputs.npz")
    merged: dict[str, Measurement] = {}
    for p in range(passes):  # alternating order: a burst of outside load hits both sides
        for runtime in runtimes if p % 2 == 0 else runtimes[::-1]:
            m = run_worker(runtime, model_path, inputs_path, outputs_path, threads, settings)
            if runtime in merged:
                merged[runtime].samples.extend(m.samples)
            else:
                merged[runtime] = m
    return [merged[r] for r in runtimes]


def write_model(model: onnx.ModelProto, workdir: str) -> str:
    """The model saved for the workers (weights past 1.5 GB in a side file: protobuf's 2 GB
    limit)."""
    path = os.path.join(workdir, "model.onnx")
    large = sum(len(t.raw_data) for t in model.graph.initializer) > 1.5 * 2**30
    onnx.save_model(model, path, save_as_external_data=large, location="model.onnx.data")
    return path


def compare_outputs(reference: Sequence[np.ndarray], other: Sequence[np.ndarray]
                    ) -> tuple[float, bool]:
    """(max |difference|, whether all agree within RTOL/ATOL); outputs of other counts or
    shapes disagree with an infinite difference."""
    if len(reference) != len(other) or any(a.shape != b.shape for a, b in zip(reference, other)):
        return float("inf"), False
    wide = [(a.astype(np.float64), b.astype(np.float64)) for a, b in zip(reference, other)]
    diff = max((float(np.abs(a - b).max()) if a.size else 0.0 for a, b in wide), default=0.0)
    ok = all(np.allclose(b, a, rtol=RTOL, atol=ATOL, equal_nan=True) for a, b in wide)
    return diff, ok


@dataclass
class Row:
    """One line of the table: a runtime's measurement next to onnxc's at the same T."""

    label: str
    measurement: Measurement
    reference: Measurement
    flops: int

    @property
    def runtime(self) -> str:
        return self.measurement.runtime

    @property
    def threads(self) -> int:
        return self.measurement.threads

    @property
    def seconds(self) -> float:
        return self.measurement.seconds

    @property
    def ratio(self) -> float:
        """onnxc's time / this runtime's: below 1, onnxc is faster."""
        return self.reference.seconds / self.measurement.seconds

    @property
    def gflops(self) -> float | None:
        return self.flops / self.seconds / 1e9 if self.flops else None

    @property
    def is_reference(self) -> bool:
        return self.measurement is self.reference

    def check(self) -> tuple[float, bool]:
        return compare_outputs(self.reference.outputs, self.measurement.outputs)


HEADER = (f"{'runtime':<13}{'T':>3}{'median ms':>11}{'ratio':>7}{'GFLOP/s':>9}"
          f"{'prepare s':>11}{'max|diff|':>11}  check")


def _digits4(value: float) -> str:
    """Four significant digits without an exponent: a 10 us model's time is 0.01034 ms."""
    decimals = 3 - math.floor(math.log10(value)) if value > 0 else 1
    return f"{value:.{min(max(decimals, 1), 6)}f}"


def format_row(row: Row) -> str:
    gflops = "-" if row.gflops is None else _digits4(row.gflops)
    if row.is_reference:
        diff, check = "-", "reference"
    else:
        value, ok = row.check()
        diff, check = f"{value:.1e}", "ok" if ok else "MISMATCH"
    return (f"{row.runtime:<13}{row.threads:>3}{_digits4(row.seconds * 1e3):>11}{row.ratio:>7.2f}"
            f"{gflops:>9}{row.measurement.prepare_seconds:>11.2f}{diff:>11}  {check}")


PNG_HINT = "--png needs matplotlib (pip install matplotlib)"


def require_matplotlib() -> None:
    """ToolchainError before any timing when --png cannot be drawn."""
    if importlib.util.find_spec("matplotlib") is None:
        raise ToolchainError(PNG_HINT)


def draw_chart(groups: Sequence[tuple[str, Sequence[Row]]], path: str, title: str,
               peak_per_core: float | None = None) -> None:
    """Latency bars (log scale) per runtime in each group, the ratio above each compared
    bar, and GFLOP/s (or % of `peak_per_core` x T) below when the FLOPs are known."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as err:
        raise ToolchainError(PNG_HINT) from err
    runtimes = list(dict.fromkeys(r.runtime for _, rows in groups for r in rows))
    width = 0.8 / len(runtimes)
    x = np.arange(len(groups))
    with_flops = any(r.gflops for _, rows in groups for r in rows)
    fig, axes = plt.subplots(2 if with_flops else 1, 1, squeeze=False, sharex=True,
                             figsize=(max(6, 1.4 * len(groups) * len(runtimes)),
                                      8 if with_flops else 4.5))
    top = axes[0][0]
    for k, runtime in enumerate(runtimes):
        offset = (k - (len(runtimes) - 1) / 2) * width
        found = [(i, r) for i, (_, rows) in enumerate(groups) for r in rows
                 if r.runtime == runtime]
        top.bar([i + offset for i, _ in found], [r.seconds * 1e3 for _, r in found], width,
                label=runtime)
        for i, r in found:
            if not r.is_reference:
                top.annotate(f"{r.ratio:.2f}", (i + offset, r.seconds * 1e3), ha="center",
                             va="bottom", fontsize=8)
        if with_flops:
            scale = [100 / (peak_per_core * r.threads) if peak_per_core else 1 for _, r in found]
            axes[1][0].bar([i + offset for i, _ in found],
                           [(r.gflops or 0) * s for (_, r), s in zip(found, scale)], width,
                           label=runtime)
    top.set_yscale("log")
    top.set_ylabel("median latency, ms")
    top.set_title(f"{title} (onnxc time / runtime time above the bars)")
    top.legend()
    if with_flops:
        axes[1][0].set_ylabel("% of FP32 peak" if peak_per_core else "GFLOP/s")
    axes[-1][0].set_xticks(x, [label for label, _ in groups], rotation=30, ha="right",
                           fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ------------------------------------------------------------------ the command


def parse_threads(text: str) -> list[int]:
    try:
        threads = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        threads = []
    if not threads or any(t < 1 for t in threads):
        raise InvalidArgumentError(f"--threads {text!r}: expected positive thread counts, "
                                   f"comma-separated (e.g. 1,2)")
    return list(dict.fromkeys(threads))


def check_settings(args: argparse.Namespace) -> None:
    """Every mistake in the command line, before anything is compiled or timed."""
    if args.repeat < 1:
        raise InvalidArgumentError(f"--repeat must be at least 1, got {args.repeat}")
    if args.passes < 1:
        raise InvalidArgumentError(f"--passes must be at least 1, got {args.passes}")
    if not args.min_time > 0:
        raise InvalidArgumentError(f"--min-time must be positive, got {args.min_time}")
    if args.png:
        require_matplotlib()


def bench_command(args: argparse.Namespace) -> list[Row]:
    """`onnxc bench`: prints the table as the rows come in; returns them."""
    runtimes = [REFERENCE, *parse_compare(args.compare)]
    threads = parse_threads(args.threads)
    check_settings(args)
    for runtime in runtimes:
        check_available(runtime)
    if args.interleaved:
        check_interleaved(threads)
    model, feeds, rewritten = prepare(args.model, args.inputs, args.input_shapes)
    settings = TimingSettings(args.repeat, args.min_time, args.opt_level, args.cache)
    flops = count_flops(model)
    where = ("all in this process, interleaved rounds" if args.interleaved
             else "each runtime in its own process")
    print(f"model: {args.model}  ({flops / 1e9:.3f} GFLOP per inference; inputs "
          f"{args.inputs or f'seeded random (seed {INPUT_SEED})'})")
    rounds = args.repeat * (1 if args.interleaved else args.passes)
    print(f"medians of {rounds} rounds, {where}; onnxc -O"
          f"{3 if args.opt_level is None else args.opt_level}; ratio = onnxc time / runtime "
          f"time (below 1: onnxc is faster); outputs checked against onnxc's "
          f"(rtol {RTOL:.0e}, atol {ATOL:.0e})")
    print(HEADER, flush=True)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="onnxc-bench-") as workdir:
        path = write_model(model, workdir) if rewritten else args.model
        for t in threads:
            measured = measure_runtimes(runtimes, path, feeds, t, settings, workdir,
                                        interleaved=args.interleaved, passes=args.passes)
            for m in measured:
                rows.append(Row(args.model, m, measured[0], flops))
                print(format_row(rows[-1]), flush=True)
    print("versions: " + ", ".join(f"{r.runtime} {r.measurement.version}"
                                   for r in rows if r.threads == threads[0]))
    mismatches = [f"{r.runtime} (T={r.threads})" for r in rows
                  if not r.is_reference and not r.check()[1]]
    if mismatches:
        print(f"MISMATCH: outputs differ from onnxc's beyond rtol {RTOL:.0e}/atol {ATOL:.0e}: "
              f"{', '.join(mismatches)}")
    if args.png:
        groups = [(f"T={t}", [r for r in rows if r.threads == t]) for t in threads]
        draw_chart(groups, args.png, os.path.basename(args.model))
        print(f"wrote {args.png}")
    return rows


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `onnxc bench` options (the subparser itself is made in tools/run.py)."""
    parser.add_argument("model", metavar="MODEL",
                        help="an .onnx file, or a built-in benchmark model (matmul_512, "
                        "resnet50, bert_encoder, ... with seeded random weights)")
    parser.add_argument("--compare", default="onnxruntime", metavar="RUNTIMES",
                        help="runtimes to time next to onnxc, comma-separated: onnxruntime, "
                        "openvino, or none (default: onnxruntime; pip install 'onnxc[bench]')")
    parser.add_argument("--threads", default="1", metavar="T1,T2",
                        help="thread counts, each runtime at each (default: 1)")
    parser.add_argument("--repeat", type=int, default=10, metavar="N",
                        help="timed rounds per runtime and thread count (default: 10)")
    parser.add_argument("--passes", type=int, default=1, metavar="N",
                        help="start each runtime's worker N times, in alternating order, "
                        "and pool their rounds: steadier on a busy machine (default: 1)")
    parser.add_argument("--min-time", type=float, default=MIN_ROUND_SECONDS, metavar="S",
                        help="a round repeats a fast model until it lasts S seconds "
                        f"(default: {MIN_ROUND_SECONDS})")
    parser.add_argument("-O", "--opt-level", type=int, metavar="N",
                        help="onnxc's graph optimization level (default: 3)")
    parser.add_argument("--inputs", metavar="X.npz",
                        help="inputs keyed by input name (default: seeded random)")
    parser.add_argument("--input-shapes", action="append", default=[],
                        metavar="NAME=D1xD2...",
                        help="fix an input's symbolic dimensions, e.g. x=1x3x224x224 "
                        "(repeatable or comma-separated)")
    parser.add_argument("--interleaved", action="store_true",
                        help="time all runtimes in this process in alternating rounds "
                        "(1 thread only; default: one process per runtime)")
    parser.add_argument("--cache", action="store_true",
                        help="let onnxc load from its disk cache (default: cold compiles)")
    parser.add_argument("--png", metavar="F", help="draw the table as a bar chart "
                        "(needs matplotlib)")
    parser.set_defaults(handler=bench_command)
