"""Textual pass pipelines: MLIR's nested form, xDSL's flat form, and the pass registry.

MLIR writes `builtin.module(func.func(cse,canonicalize),convert-func-to-llvm{opt=1})`;
xDSL only accepts the flat `cse,canonicalize,convert-func-to-llvm{opt=1}`. Every pass we run
is a `ModulePass` over the whole module, so the op anchors carry no meaning here and are
dropped. `onnxc-opt --pass-pipeline` and `onnxc.compile` both build pipelines through
`build_pipeline`, so the two accept exactly the same text.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable

from xdsl.passes import ModulePass, PassPipeline, PassPipelineCallbackType
from xdsl.utils.arg_spec import ArgSpec, parse_pipeline
from xdsl.utils.exceptions import ArgSpecParseError

from onnxc.errors import OnnxcError
from onnxc.registry import ONNXC_PASSES

PassFactory = Callable[[], type[ModulePass]]


def spec_error_reason(err: ArgSpecParseError) -> str:
    """The reason line of xDSL's multi-line pipeline/target spec error (its last line)."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return lines[-1] if lines else "malformed"


_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")


class PipelineSyntaxError(OnnxcError):
    """The pipeline text is malformed (unbalanced anchors or option braces, stray tokens)."""


class UnknownPassError(OnnxcError):
    """A pipeline names a pass that no registry provides."""

    def __init__(self, name: str, known: list[str]):
        self.name = name
        close = difflib.get_close_matches(name, known, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        super().__init__(f"unknown pass '{name}'{hint} (see --list-passes)")


class PassOptionError(OnnxcError):
    """A pass option is unknown or has a value of the wrong type."""


def default_pass_registry() -> dict[str, PassFactory]:
    """xDSL's passes plus onnxc's (onnxc wins a name clash: its lowerings are the ones we need)."""
    from xdsl.transforms import get_all_passes

    return {**get_all_passes(), **ONNXC_PASSES}


def _skip_braces(text: str, start: int) -> int:
    """Index just past the `{...}` option block opening at `start` (nesting and quotes aware)."""
    depth, i, quote = 0, start, False
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == '"':
                quote = False
        elif ch == '"':
            quote = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise PipelineSyntaxError(f"unterminated '{{' at column {start + 1} in pipeline '{text}'")


def split_pipeline(text: str) -> list[str]:
    """The pass specs (`name` or `name{options}`) of a nested or flat pipeline, in order.

    `builtin.module(func.func(cse),dce{a=1})` -> ["cse", "dce{a=1}"]; `cse,dce` -> ["cse", "dce"].
    A name directly followed by `(` is an anchor; its parentheses are dropped.
    """
    specs: list[str] = []
    anchors: list[int] = []  # columns of open anchors, for error messages
    i, expect_item = 0, True
    while i < len(text):
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch == ",":
            if expect_item:
                raise PipelineSyntaxError(f"empty pass name at column {i + 1} in '{text}'")
            expect_item = True
            i += 1
        elif ch == ")":
            if not anchors:
                raise PipelineSyntaxError(f"unbalanced ')' at column {i + 1} in '{text}'")
            if expect_item and text[anchors[-1] + 1 : i].strip():
                raise PipelineSyntaxError(f"empty pass name at column {i + 1} in '{text}'")
            anchors.pop()
            expect_item = False
            i += 1
        elif (match := _NAME.match(text, i)) is not None:
            if not expect_item:
                raise PipelineSyntaxError(f"expected ',' before column {i + 1} in '{text}'")
            end = match.end()
            while end < len(text) and text[end].isspace():
                end += 1
            if end < len(text) and text[end] == "(":
                anchors.append(end)
                i, expect_item = end + 1, True
                continue
            spec_end = match.end()
            if end < len(text) and text[end] == "{":
                spec_end = _skip_braces(text, end)
            specs.append(match.group() + text[end:spec_end] if spec_end > end else match.group())
            i, expect_item = spec_end, False
        else:
            raise PipelineSyntaxError(f"unexpected '{ch}' at column {i + 1} in '{text}'")
    if anchors:
        raise PipelineSyntaxError(f"unbalanced '(' at column {anchors[-1] + 1} in '{text}'")
    if expect_item and specs:
        raise PipelineSyntaxError(f"trailing ',' in pipeline '{text}'")
    return specs


def flatten_pipeline(text: str) -> str:
    """The flat, comma-separated xDSL form of a (possibly nested MLIR) pipeline."""
    return ",".join(split_pipeline(text))


_CONFIGURED: dict[tuple[type[ModulePass], str], ModulePass] = {}
_MAX_CONFIGURED = 4096


def _configured(pass_class: type[ModulePass], spec: ArgSpec) -> ModulePass:
    """`pass_class` configured by `spec`, made once per distinct spec: every compile builds
    its pipelines from text, xDSL's option parsing reads the pass's type hints each time
    (~13 ms per pipeline, a fifth of a small model's compile), and a ModulePass is a frozen
    dataclass (xDSL refuses a mutable subclass), so one instance serves every compile."""
    key = (pass_class, str(spec))
    configured = _CONFIGURED.get(key)
    if configured is None:
        if len(_CONFIGURED) >= _MAX_CONFIGURED:  # e.g. endless distinct option values
            _CONFIGURED.clear()
        configured = _CONFIGURED[key] = pass_class.from_pass_spec(spec)
    return configured


def build_pipeline(
    text: str,
    available: dict[str, PassFactory] | None = None,
    callback: PassPipelineCallbackType | None = None,
) -> PassPipeline:
    """Parse nested or flat pipeline text into a `PassPipeline` of configured passes.

    Raises `PipelineSyntaxError`, `UnknownPassError` or `PassOptionError` (all `OnnxcError`s)
    instead of xDSL's `ValueError`/`ArgSpecParseError`, so callers report one clean line.
    """
    available = default_pass_registry() if available is None else available
    flat = flatten_pipeline(text)
    try:
        specs = list(parse_pipeline(flat))
    except ArgSpecParseError as err:
        reason = spec_error_reason(err)
        raise PipelineSyntaxError(f"invalid pass pipeline '{flat}': {reason}") from None
    passes: list[ModulePass] = []
    for spec in specs:
        if spec.name not in available:
            raise UnknownPassError(spec.name, sorted(available))
        try:
            passes.append(_configured(available[spec.name](), spec))
        except (ValueError, TypeError) as err:
            raise PassOptionError(f"bad options for pass '{spec.name}': {err}") from err
    return PassPipeline(tuple(passes), callback)


def nested_pipeline(specs: list[str]) -> str:
    """MLIR's `builtin.module(a,b{x=1})` form of a list of pass specs (what mlir-opt's
    `--dump-pass-pipeline` prints and `--pass-pipeline` takes back)."""
    return f"builtin.module({','.join(specs)})"
