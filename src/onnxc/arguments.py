"""Validation of the arguments of `onnxc.compile` and `onnxc.optimize`, before any work.

A wrong argument is the caller's mistake, not the model's: it is reported as
InvalidArgumentError naming the argument and the value it got, instead of whatever
TypeError or ValueError it would cause several stages later (or a silent misbehaviour:
`opt_level="3"`, `num_threads=10**6`, `input_shapes={"x": [-1]}`). The ONNXC_* settings
these arguments default to are read here too, so that garbage in them fails as early.
Checks that need the model (input names, ranks, declared dims) are in
frontend/batch_axes.py `with_fixed_shapes`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import onnx

from onnxc.errors import InvalidArgumentError
from onnxc.precision import PRECISIONS
from onnxc.resource_limits import max_alloc_bytes

OPT_LEVELS = range(4)


_fail = InvalidArgumentError.expected


def check_input_shapes(input_shapes: object) -> None:
    """frontend/batch_axes.py `check_input_shapes`, imported on first use: the frontend
    package imports the whole importer (about 0.4 s), which `import onnxc` must not pay."""
    from onnxc.frontend.batch_axes import check_input_shapes as check

    check(input_shapes)


def check_model(model: object, *, module_allowed: bool = False) -> None:
    if isinstance(model, str | os.PathLike | bytes | bytearray | memoryview | onnx.ModelProto):
        return
    if module_allowed:
        from xdsl.dialects.builtin import ModuleOp

        if isinstance(model, ModuleOp):
            return
    expected = "a path, bytes or an onnx.ModelProto"
    raise _fail("model", expected + (" (or an xDSL ModuleOp)" if module_allowed else ""), model)


def check_opt_level(opt_level: object) -> None:
    if isinstance(opt_level, bool) or not isinstance(opt_level, int) \
            or opt_level not in OPT_LEVELS:
        raise _fail("opt_level", "an int from 0 to 3", opt_level)


def check_pass_pipeline(pass_pipeline: object) -> None:
    """None, pipeline text, or a sequence of pass names (each a string)."""
    if pass_pipeline is None or isinstance(pass_pipeline, str):
        return
    if isinstance(pass_pipeline, Sequence) and not isinstance(pass_pipeline, bytes):
        for i, name in enumerate(pass_pipeline):
            if not isinstance(name, str):
                raise _fail(f"pass_pipeline[{i}]", "a pass name (str)", name)
        return
    raise _fail("pass_pipeline", "None, a pipeline string or a sequence of pass names",
                pass_pipeline)


def check_flag(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise _fail(name, "True or False", value)


def check_gemm_blocking(value: object) -> None:
    """"auto", "off" or KCxNC (kc 16..2048, nc a multiple of 64 up to 8192)."""
    from onnxc.lowering.graph_to_loops.gemm_tiles import parse_blocking

    if not isinstance(value, str) or (value not in ("auto", "off")
                                      and parse_blocking(value) is None):
        raise _fail("gemm_blocking", "'auto', 'off' or 'KCxNC' (e.g. '256x512'; kc 16 to "
                    "2048, nc a multiple of 64 up to 8192)", value)


def check_cache_dir(cache_dir: object) -> None:
    if cache_dir is None or isinstance(cache_dir, bool):
        return
    if isinstance(cache_dir, str | os.PathLike) and os.fspath(cache_dir) not in ("", b""):
        return
    raise _fail("cache_dir", "None, False, True or a directory path", cache_dir)


def check_num_threads(num_threads: object) -> None:
    """An explicit count, or (None) $ONNXC_NUM_THREADS when set."""
    from onnxc.runtime.threads import check_thread_count, default_num_threads

    if num_threads is None:
        if os.environ.get("ONNXC_NUM_THREADS", "").strip():
            default_num_threads()
    else:
        check_thread_count(num_threads)


def check_precision(precision: object, target: object = None) -> None:
    """"fp32" or "bf16"; "bf16" only on a CPU with AVX512-BF16. A bf16 request this host
    cannot honour is refused here, as a bad argument value for this machine, before any
    work (rather than silently computing in f32, or failing later in LLVM)."""
    if not isinstance(precision, str) or precision not in PRECISIONS:
        raise _fail("precision", " or ".join(map(repr, PRECISIONS)), precision)
    if precision == "bf16":
        from onnxc.lowering.graph_to_loops.gemm_bf16 import supports_bf16
        from onnxc.target import parse_target

        compiled_for = parse_target(target)
        if not supports_bf16(compiled_for):
            raise InvalidArgumentError(
                f"precision 'bf16' needs a CPU with AVX512-BF16 (vdpbf16ps); the target "
                f"{compiled_for.name} ({compiled_for.cpu}) has none: use precision='fp32'")


def check_target(target: object, runs_here: bool = True) -> None:
    """A target LLVM knows (`onnxc.target`) and, with `runs_here`, one this process
    can run: the host, or a target of its architecture whose features it has. Code for
    another machine needs an ahead-of-time artifact (`onnxc.compile_artifact`)."""
    from onnxc.target import Target, host_target, parse_target

    if target is not None and not isinstance(target, str | Target):
        raise _fail("target", "a target name, TRIPLE[:CPU[:FEATURES]] or a Target", target)
    compiled_for = parse_target(target)
    if not runs_here:
        return
    reason = compiled_for.why_it_cannot_run_on(host_target())
    if reason is not None:
        raise InvalidArgumentError(
            f"target {compiled_for.name!r} cannot run in this process: {reason}")


def check_call_arguments(*, model: object, verbose: object, quiet: object,
                         cache_dir: object = None, directory: object = None,
                         prefix: object = "model") -> None:
    """The arguments of `onnxc.compile` and `onnxc.compile_artifact` that are not compile
    options (those are checked by `CompileOptions.of`), and the ONNXC_* settings they read."""
    check_model(model)
    check_flag("verbose", verbose)
    check_flag("quiet", quiet)
    check_cache_dir(cache_dir)
    if directory is not None and not isinstance(directory, str | os.PathLike):
        raise _fail("directory", "a path", directory)
    if not isinstance(prefix, str) or not prefix.isidentifier() or not prefix.isascii():
        raise _fail("prefix", "a C identifier", prefix)
    max_alloc_bytes()  # $ONNXC_MAX_ALLOC_MB


def check_optimize_arguments(*, model: object, opt_level: object, pass_pipeline: object,
                             stats: object, verify_numerics: object,
                             as_onnx: object = False, input_shapes: object = None) -> None:
    """Every argument of `onnxc.optimize`."""
    check_model(model, module_allowed=True)
    check_input_shapes(input_shapes)
    if input_shapes is not None and not isinstance(model, str | os.PathLike | bytes
                                                   | bytearray | memoryview | onnx.ModelProto):
        raise InvalidArgumentError("input_shapes applies to an ONNX model, not to an "
                                   "imported module (give them to import_onnx instead)")
    check_opt_level(opt_level)
    check_pass_pipeline(pass_pipeline)
    check_flag("stats", stats)
    check_flag("verify_numerics", verify_numerics)
    check_flag("as_onnx", as_onnx)
    max_alloc_bytes()
