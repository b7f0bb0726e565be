"""`CompileOptions`: what decides the code of one compile, as one frozen value.

A compile option is one field here, and only here. Its `option(...)` metadata says how a
caller gives it: the check that refuses a bad value (onnxc.arguments), how the given value
is resolved (the thread count, the target), its help text and its command-line flag. From
the fields alone come:

- the keyword arguments of `onnxc.compile` and `onnxc.compile_artifact` (`**options`, their
  signatures and docstrings completed by `with_option_parameters`),
- the flags of `onnxc run` and `onnxc compile` (`add_option_flags`, `given_options`),
- the compile cache's key (`key_text`): an option added here is in the key by construction,
  so a forgotten one can never give a wrong cache hit; a field that changes nothing
  compiled says so with `key=False`,
- the options table of docs/python-api.md (`options_table`; a test fails when it is stale).

The stages read the fields of the resolved value instead of a dozen positional arguments.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import inspect
import json
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from onnxc import arguments
from onnxc.errors import InvalidArgumentError
from onnxc.precision import DEFAULT_PRECISION, PRECISIONS
from onnxc.target import Target, host_target, parse_target

Shapes = tuple[tuple[str, tuple[int, ...]], ...]
"""`input_shapes` frozen: (name, dims) pairs sorted by name"""

Check = Callable[[object, Mapping[str, object], bool], None]
"""(the given value, every given option, whether the code must run in this process) ->
None, or InvalidArgumentError naming the option"""


@dataclass(frozen=True)
class OptionSpec:
    """How one option is given (see the module docstring)."""

    help: str
    """one sentence for `help(onnxc.compile)`, `onnxc run --help` and docs/python-api.md"""
    check: Check
    given_default: object = None
    """what the caller's argument defaults to, before `resolve`"""
    resolve: Callable[[object], object] = lambda value: value
    key: bool = True
    """False: the field changes nothing compiled, so it is not in the cache key"""
    flag: dict[str, Any] | None = None
    """argparse keyword arguments of `--<name>` (None: no flag)"""
    from_flag: Callable[[Any], object] = lambda value: value
    """the flag's parsed value -> the option's value"""


def option(default: object, spec: OptionSpec) -> Any:
    """A CompileOptions field: `default` is the resolved value of `spec.given_default`."""
    if callable(default):
        return field(default_factory=default, metadata={"spec": spec})
    return field(default=default, metadata={"spec": spec})


def _spec_of(f: dataclasses.Field) -> OptionSpec:
    return f.metadata["spec"]


def _of_value(check: Callable[[object], None]) -> Check:
    """A Check that reads only the option's own value."""
    return lambda value, given, runs_here: check(value)


def _check_target(value: object, given: Mapping[str, object], runs_here: bool) -> None:
    arguments.check_target(value, runs_here=runs_here)


def _frozen_pipeline(pipeline: str | Sequence[str] | None) -> str | tuple[str, ...] | None:
    return pipeline if pipeline is None or isinstance(pipeline, str) else tuple(pipeline)


def _frozen_shapes(shapes: Mapping[str, Sequence[int]] | None) -> Shapes | None:
    if shapes is None:
        return None
    return tuple(sorted((str(name), tuple(int(d) if isinstance(d, numbers.Integral) else d
                                          for d in dims))
                        for name, dims in shapes.items()))


def _resolve_threads(num_threads: int | None) -> int:
    from onnxc.runtime.threads import resolve_num_threads

    return resolve_num_threads(num_threads)


def parse_input_shapes(entries: Sequence[str]) -> dict[str, tuple[int, ...]]:
    """`--input-shapes x=1x3x224x224[,mask=1x128]` (repeatable) as {name: shape}."""
    shapes: dict[str, tuple[int, ...]] = {}
    for entry in (e for text in entries for e in text.split(",") if e.strip()):
        name, sep, dims = entry.strip().rpartition("=")
        try:
            shape = tuple(int(d) for d in dims.split("x")) if dims else ()
        except ValueError:
            shape = (0,)
        if not sep or not name or any(d < 1 for d in shape):
            raise InvalidArgumentError(f"--input-shapes {entry!r}: expected NAME=D1xD2x... "
                                       f"with positive sizes, e.g. x=1x3x224x224")
        shapes[name] = shape
    return shapes


@dataclass(frozen=True)
class CompileOptions:
    """One compile's options, resolved (see the module docstring)."""

    opt_level: int = option(3, OptionSpec(
        "graph optimization level: 0 (none) to 3 (default: every graph pass)",
        _of_value(arguments.check_opt_level), given_default=3,
        flag={"type": int, "metavar": "N"}))
    pass_pipeline: str | tuple[str, ...] | None = option(None, OptionSpec(
        "graph passes to run instead of opt_level's: pipeline text or a list of pass names",
        _of_value(arguments.check_pass_pipeline), resolve=_frozen_pipeline,
        flag={"metavar": "PIPELINE"}))
    num_threads: int = option(1, OptionSpec(
        "threads compiled into parallel loops (default: $ONNXC_NUM_THREADS, else the CPUs "
        "this process may use)",
        _of_value(arguments.check_num_threads), resolve=_resolve_threads,
        flag={"type": int, "metavar": "N"}))
    input_shapes: Shapes | None = option(None, OptionSpec(
        "fixed sizes for inputs with symbolic dimensions, {name: shape} (default: keep "
        "them symbolic)",
        _of_value(arguments.check_input_shapes), resolve=_frozen_shapes,
        flag={"action": "append", "metavar": "NAME=D1xD2...",
              "help": "fix an input's symbolic dimensions, e.g. x=1x3x224x224 (repeatable "
                      "or comma-separated; default: keep them symbolic)"},
        from_flag=parse_input_shapes))
    precision: str = option(DEFAULT_PRECISION, OptionSpec(
        "what GEMMs and convs compute in: 'fp32' (default) or 'bf16' (needs AVX512-BF16)",
        lambda v, given, here: arguments.check_precision(v, given.get("target")),
        given_default=DEFAULT_PRECISION, flag={"choices": PRECISIONS}))
    target: Target = option(host_target, OptionSpec(
        "what the code is built for: 'host' (default), a preset (x86-64-v2/v3/v4, "
        "aarch64, cortex-a76, neoverse-n1, ...) or 'TRIPLE[:CPU[:FEATURES]]'",
        _check_target, resolve=parse_target, flag={"metavar": "TARGET"}))
    gemm_blocking: str = option("auto", OptionSpec(
        "the packed GEMM's k-block depth x N-stripe width: 'auto' (default: measured once "
        "on this CPU and recorded in the cache directory), 'off' (1024x512) or 'KCxNC'",
        _of_value(arguments.check_gemm_blocking), given_default="auto",
        key=False,  # what it resolves to is the target's `blocking`, which is in the key
        flag={"metavar": "auto|off|KCxNC"}))
    profile: bool = option(False, OptionSpec(
        "time every kernel call of a run (cycle counters around each call of the entry; "
        "CompiledModel.profile() gives the rows, `onnxc run --profile` a table)",
        _of_value(functools.partial(arguments.check_flag, "profile")),
        given_default=False, flag={"action": "store_true"}))
    verify_numerics: bool = option(False, OptionSpec(
        "run the graph passes one at a time under the numpy evaluator and name the first "
        "that changes the results (slow; compiles the same code)",
        _of_value(functools.partial(arguments.check_flag, "verify_numerics")),
        given_default=False, key=False, flag={"action": "store_true"}))

    @classmethod
    def of(cls, *, runs_here: bool = True, **given: object) -> CompileOptions:
        """Check the given options (InvalidArgumentError naming a bad or unknown one) and
        resolve them; `runs_here=False` for code built for another machine."""
        specs = option_specs()
        for name in given:
            if name not in specs:
                raise InvalidArgumentError(
                    f"unknown compile option {name!r}; the options are {', '.join(specs)}")
        values = {}
        for name, spec in specs.items():
            value = given.get(name, spec.given_default)
            spec.check(value, given, runs_here)
            values[name] = spec.resolve(value)
        from onnxc.runtime.gemm_tuning import tuned_target

        values["target"] = tuned_target(values["gemm_blocking"], values["target"], runs_here)
        return cls(**values)

    @property
    def shapes(self) -> dict[str, tuple[int, ...]] | None:
        """`input_shapes` as the mapping the importer takes."""
        return None if self.input_shapes is None else dict(self.input_shapes)

    def key_text(self) -> str:
        """The code-changing fields as canonical JSON (a pipeline given as names and the
        same passes given as text stay different: a miss at worst, never a wrong hit)."""
        return json.dumps({name: _canonical(name, getattr(self, name))
                           for name, spec in option_specs().items() if spec.key},
                          sort_keys=True, default=repr)


def option_specs() -> dict[str, OptionSpec]:
    """Every compile option's spec, in field order."""
    return {f.name: _spec_of(f) for f in dataclasses.fields(CompileOptions)}


def _canonical(name: str, value: object) -> object:
    if isinstance(value, Target):
        return list(value.key())
    if name == "pass_pipeline" and isinstance(value, tuple):
        return ["list", *value]
    return value


# ------------------------------------------------------------- the callers' spellings


def with_option_parameters(function: Callable) -> Callable:
    """Give a function taking `**options` the options as keyword parameters in its
    signature (what `help()` and editors show) and their help in its docstring."""
    signature = inspect.signature(function)
    params = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
    params += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY,
                                 default=spec.given_default)
               for name, spec in option_specs().items()]
    function.__signature__ = signature.replace(parameters=params)
    lines = [f"    `{name}`: {spec.help}." for name, spec in option_specs().items()]
    function.__doc__ = (function.__doc__ or "") + "\n\n    Compile options:\n" + "\n".join(
        lines)
    return function


def add_option_flags(parser: argparse.ArgumentParser) -> None:
    """One `--name` flag per option that has one; an absent flag leaves the option at its
    default (`given_options` skips it)."""
    for name, spec in option_specs().items():
        if spec.flag is None:
            continue
        kwargs = {"help": spec.help, **spec.flag, "default": argparse.SUPPRESS}
        parser.add_argument("--" + name.replace("_", "-"), dest=name, **kwargs)


def given_options(args: argparse.Namespace) -> dict[str, object]:
    """The options given as flags, as `onnxc.compile` keyword arguments."""
    specs = option_specs()
    return {name: specs[name].from_flag(value) for name, value in vars(args).items()
            if name in specs}


def options_table() -> str:
    """The Markdown table of docs/python-api.md's "Compile options"."""
    rows = ["| option | default | flag | in the cache key | what it is |",
            "|---|---|---|---|---|"]
    for name, spec in option_specs().items():
        flag = "" if spec.flag is None else f"`--{name.replace('_', '-')}`"
        rows.append(f"| `{name}` | `{spec.given_default!r}` | {flag} | "
                    f"{'yes' if spec.key else 'no'} | {spec.help} |")
    return "\n".join(rows) + "\n"
