"""`onnxc run MODEL.onnx`: compile a model, run it, and print checksums and timings;
`onnxc compile MODEL.onnx -o DIR`: compile it ahead of time into a deployable directory;
`onnxc serve REPO`: serve a model repository (onnxc.serving.launcher).

The quickest end-to-end check of the whole compiler on a real network: it reports how long
compilation took, a checksum of every output (to compare against another runtime), and the
median latency of one inference. Without a model it uses the model-zoo ResNet-50 that ships
inside the `onnx` package, so `onnxc run` works on a fresh install; its shipped weights are all
0.02 (a flat softmax), so it runs with seeded random weights instead (`zoo.randomize_weights`).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from onnxc.compile_options import add_option_flags, given_options
from onnxc.dialects.string_dtype import STRING_DTYPE
from onnxc.errors import InvalidArgumentError, InvalidInputError, OnnxcError
from onnxc.serving import launcher as serve_launcher
from onnxc.tools import bench as bench_tool
from onnxc.tools import diagnostics
from onnxc.tools.optimize_onnx import optimize_model
from onnxc.tools.show import show_command

DEFAULT_MODEL = os.path.join("backend", "test", "data", "light", "light_resnet50.onnx")
"""The default model, relative to the installed `onnx` package."""


DEFAULT_WEIGHT_SEED = 0
"""Seed of the default model's random weights."""

PROFILE_ROWS = 30
"""Call sites `onnxc run --profile` lists one by one (the rest on one line)."""


def default_model_path() -> str:
    import onnx

    return os.path.join(os.path.dirname(onnx.__file__), DEFAULT_MODEL)


def default_model() -> Any:
    """The shipped ResNet-50 with seeded random weights: its own are all 0.02, which makes every
    class equally likely and the output useless as a check."""
    import onnx

    from onnxc.zoo import randomize_weights

    return randomize_weights(onnx.load(default_model_path()), seed=DEFAULT_WEIGHT_SEED)


def _spec(entry: Any) -> tuple[str, tuple[int, ...], np.dtype]:
    """(name, shape, dtype) of one `CompiledModel.inputs` entry (a TensorSpec or a tuple)."""
    if hasattr(entry, "name"):
        return entry.name, tuple(entry.shape), np.dtype(entry.dtype)
    name, shape, dtype = entry
    return name, tuple(shape), np.dtype(dtype)


def random_inputs(specs: Sequence[Any], seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded inputs: floats uniform in [0, 1), everything else (indices, masks) zeros."""
    rng = np.random.default_rng(seed)
    feeds: dict[str, np.ndarray] = {}
    for entry in specs:
        name, shape, dtype = _spec(entry)
        if not all(isinstance(d, int) for d in shape):  # symbolic: no size to make one of
            raise InvalidArgumentError(
                f"input '{name}' has symbolic dimensions {list(shape)}: give the inputs "
                f"with --inputs X.npz (the compiled model runs at any size)")
        if dtype == STRING_DTYPE:  # strings: empty ones, as numbers are zeros
            feeds[name] = np.full(shape, "", dtype=object)
        elif np.issubdtype(dtype, np.floating):
            feeds[name] = rng.random(shape).astype(dtype)
        else:
            feeds[name] = np.zeros(shape, dtype=dtype)
    return feeds


def load_inputs(path: str, specs: Sequence[Any]) -> dict[str, np.ndarray]:
    """Feeds from an .npz keyed by input name (or `np.savez` positional arr_0, arr_1, ...)."""
    names = [_spec(entry)[0] for entry in specs]
    with np.load(path, allow_pickle=False) as npz:
        arrays = {key: npz[key] for key in npz.files}
    positional = [f"arr_{i}" for i in range(len(names))]
    if sorted(arrays) == sorted(positional) and not set(names) & set(arrays):
        arrays = {name: arrays[key] for name, key in zip(names, positional)}
    missing = [n for n in names if n not in arrays]
    extra = sorted(set(arrays) - set(names))
    if missing or extra:
        raise InvalidInputError(
            f"{path} does not match the model's inputs {names}: "
            f"missing {missing}, unexpected {extra}"
        )
    return arrays


def checksum_line(name: str, value: np.ndarray) -> str:
    """Shape, dtype, sum, mean |x| and max: the max tells softmax outputs apart (sum is 1);
    for strings, their count of characters and the first one."""
    if value.dtype == object:
        texts = [str(t) for t in value.reshape(-1).tolist()]
        first = repr(texts[0]) if texts else "none"
        return (f"output '{name}': shape {tuple(value.shape)} string  "
                f"characters {sum(map(len, texts))}  first {first}")
    wide = value.astype(np.float64)
    mean_abs, top = (np.abs(wide).mean(), wide.max()) if wide.size else (0.0, 0.0)
    return (
        f"output '{name}': shape {tuple(value.shape)} {value.dtype}  "
        f"sum {wide.sum():.6e}  mean|x| {mean_abs:.6e}  max {top:.6e}"
    )


def run_model(args: argparse.Namespace) -> None:
    import onnxc

    path = args.model or default_model_path()
    if not os.path.isfile(path):
        raise FileNotFoundError(2, "No such file or directory", path)
    if args.repeat < 1:
        raise OnnxcError(f"--repeat must be >= 1, got {args.repeat}")
    options = {**given_options(args), "verbose": args.verbose, "quiet": args.quiet}

    started = time.perf_counter()
    model = path if args.model else default_model()  # loading counts as compile time
    compiled = onnxc.compile(model, **options)
    compile_seconds = time.perf_counter() - started
    level = str(options.get("opt_level", "default"))
    weights = "" if args.model else f" (weights: seeded random, seed {DEFAULT_WEIGHT_SEED})"
    print(f"model: {path}{weights}")
    bf16 = ", precision bf16" if options.get("precision") == "bf16" else ""
    print(f"compile: {compile_seconds:.3f} s (opt-level {level}{bf16}, target "
          f"{compiled.target})")

    feeds: Mapping[str, np.ndarray] = (
        load_inputs(args.inputs, compiled.inputs) if args.inputs
        else random_inputs(compiled.inputs, seed=0)
    )
    names = list(compiled.output_names)
    outputs = compiled.run(names, feeds)  # also the warm-up run
    for name, value in zip(names, outputs):
        print(checksum_line(name, value))

    profiling = options.get("profile", False)
    if profiling:
        compiled.reset_profile()  # the timed runs only, not the warm-up
    times = []
    for _ in range(args.repeat):
        started = time.perf_counter()
        compiled.run(names, feeds)
        times.append(time.perf_counter() - started)
    print(
        f"run: median {statistics.median(times) * 1e3:.3f} ms over {args.repeat} run(s) "
        f"(min {min(times) * 1e3:.3f} ms)"
    )
    if profiling:
        print(f"profile of the {args.repeat} timed run(s), longest first:")
        print(compiled.profile().table(PROFILE_ROWS, wall_seconds=statistics.mean(times)))
    sys.stdout.flush()


def compile_model(args: argparse.Namespace) -> None:
    """`onnxc compile MODEL -o DIR`: an ahead-of-time artifact (runtime/artifact.py)."""
    import onnxc

    if not os.path.isfile(args.model):
        raise FileNotFoundError(2, "No such file or directory", args.model)
    options = {**given_options(args), "prefix": args.prefix, "verbose": args.verbose,
               "quiet": args.quiet}
    started = time.perf_counter()
    artifact = onnxc.compile_artifact(args.model, args.output, **options)
    print(f"{artifact.directory}: {artifact.library.name}, {artifact.header.name}, "
          f"{artifact.manifest.name}, {artifact.run.name} for {options.get('target', 'host')} "
          f"({time.perf_counter() - started:.1f} s)")


def build_parser() -> argparse.ArgumentParser:
    from importlib.metadata import version

    parser = argparse.ArgumentParser(prog="onnxc", description="onnxc: ONNX to native code")
    parser.add_argument("--version", action="version", version=f"onnxc {version('onnxc')}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run = commands.add_parser(
        "run",
        help="compile a model, run it, print output checksums and timings",
        description="Compile MODEL with onnxc.compile, run it on seeded random inputs "
        "(floats uniform in [0, 1), integers zero) or on --inputs, and print the compile "
        "time, a checksum per output, and the median time per run.",
    )
    run.add_argument(
        "model", nargs="?", metavar="MODEL.onnx",
        help="the model to run (default: the ResNet-50 shipped with the onnx package, with "
        "seeded random weights)",
    )
    run.add_argument("--inputs", metavar="X.npz", help="inputs keyed by model input name")
    run.add_argument(
        "--repeat", type=int, default=10, metavar="N",
        help="timed runs after the first (default: 10)",
    )
    add_option_flags(run)
    run.add_argument("-v", "--verbose", "--timings", action="store_true",
                     help="print each compile stage's wall time to stderr")
    run.add_argument("-q", "--quiet", action="store_true",
                     help="no progress line on a terminal during a long compile")
    run.set_defaults(handler=run_model)

    build = commands.add_parser(
        "compile",
        help="compile a model ahead of time into a shared library, header and run program",
        description="Compile MODEL for --target into DIR: model.so (C API <prefix>_run, "
        "and <prefix>_output_shapes / <prefix>_run_shaped taking the input shapes: a model "
        "with symbolic dimensions runs at any shape; weights embedded), model.h, "
        "manifest.json and `run IN[@D0xD1..]... OUT...` (raw files), all built with the "
        "target's C compiler. `onnxc.load(DIR)` runs a host artifact in Python.",
    )
    build.add_argument("model", metavar="MODEL.onnx", help="the model to compile")
    build.add_argument("-o", "--output", required=True, metavar="DIR",
                       help="the artifact directory (created)")
    build.add_argument("--prefix", default="model", help="C symbol prefix (default: model)")
    add_option_flags(build)
    build.add_argument("-v", "--verbose", "--timings", action="store_true",
                       help="print each compile stage's wall time to stderr")
    build.add_argument("-q", "--quiet", action="store_true",
                       help="no progress line on a terminal during a long compile")
    build.set_defaults(handler=compile_model)

    show = commands.add_parser(
        "show", help="draw a model's graph (as imported, or after -O N) with graphviz",
        description="Draw MODEL's graph-dialect module into OUTPUT (.svg, .png or .dot): as "
        "imported, or after the graph passes of -O N; --compare draws both side by side. "
        "Needs the graphviz Python package, and Graphviz's dot program for .svg/.png.")
    show.add_argument("model", metavar="MODEL.onnx", help="the model to draw")
    show.add_argument("-o", "--output", required=True, metavar="G.svg|G.png|G.dot")
    show.add_argument("-O", "--opt-level", type=int, metavar="N",
                      help="draw after this level's graph passes (default: as imported; "
                      "with --compare, 3)")
    show.add_argument("--compare", action="store_true",
                      help="as imported and after -O N, side by side, with node counts")
    show.set_defaults(handler=show_command)

    bench = commands.add_parser(
        "bench", help="time onnxc against onnxruntime/OpenVINO, each in its own process",
        description=bench_tool.DESCRIPTION)
    bench_tool.add_arguments(bench)

    optimize = commands.add_parser(
        "optimize", help="save the model after onnxc's graph passes as standard ONNX",
        description="Run onnxc's graph passes (-O N, default 3) on IN and write the result "
        "to OUT as standard ONNX (opset 23; fused ops as `onnxc` local functions), then "
        "print the node counts before and after.")
    optimize.add_argument("model", metavar="IN.onnx", help="the model to optimize")
    optimize.add_argument("-o", "--output", required=True, metavar="OUT.onnx")
    optimize.add_argument("-O", "--opt-level", type=int, metavar="N",
                          help="graph optimization level 0-3 (default: 3)")
    optimize.set_defaults(handler=optimize_model)

    serve = commands.add_parser(
        "serve", help="serve a model repository over HTTP and gRPC (Open Inference Protocol)",
        description=serve_launcher.DESCRIPTION)
    serve_launcher.add_arguments(serve)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point: 0 on success, 1 with one `error:` line on stderr otherwise."""
    args = build_parser().parse_args(argv)
    try:
        args.handler(args)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as err:
        if diagnostics.debug_enabled():
            raise
        sys.stdout.flush()
        print(diagnostics.describe(err), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
