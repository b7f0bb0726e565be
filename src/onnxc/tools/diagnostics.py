"""One-line, MLIR-shaped error reports for the command-line tools.

Users of `mlir-opt` expect `file:line:col: error: 'op' op message` on stderr and exit code 1,
not a Python traceback. Parsed ops carry no source location in xDSL, so the parser records
where each op starts and a verifier failure is traced back to the first op that fails alone.
`ONNXC_DEBUG=1` re-raises instead, to get the traceback when debugging onnxc itself.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from typing import TypeVar

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, ModuleOp
from xdsl.ir import Attribute, Operation, TypeAttribute
from xdsl.parser import Parser
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError
from xdsl.utils.lexer import Span

from onnxc.errors import OnnxcError
from onnxc.pass_manager.pipeline_text import spec_error_reason


def debug_enabled() -> bool:
    return os.environ.get("ONNXC_DEBUG", "") not in ("", "0")


def one_line(text: str) -> str:
    return " ".join(part.strip() for part in str(text).splitlines() if part.strip())


MAX_NESTING = 50
"""Deepest nesting of operations (regions in regions), attributes and types that onnxc-opt
reads. xDSL's parser, verifier, printer and passes recurse once per level, about ten Python
frames each, so a few hundred levels exhaust Python's stack; real IR nests a dozen deep."""

T = TypeVar("T")


class LocatingParser(Parser):
    """An xDSL `Parser` that remembers the source span where each op begins, and refuses
    nesting deeper than MAX_NESTING with a located error (not a RecursionError)."""

    def __init__(self, ctx: Context, text: str | bytes, name: str, line_offset: int = 0):
        super().__init__(ctx, text, name)
        self.line_offset = line_offset
        self.op_spans: dict[Operation, Span] = {}
        self._depth = 0

    def _nested(self, parse: Callable[[], T]) -> T:
        if self._depth >= MAX_NESTING:
            self.raise_error(f"nested more than {MAX_NESTING} levels deep (operations in "
                             f"regions, attributes, types): more than onnxc-opt reads")
        self._depth += 1
        try:
            return parse()
        finally:
            self._depth -= 1

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        try:
            return super().parse_module(allow_implicit_module)
        except RecursionError:  # nesting MAX_NESTING does not count (e.g. dense literals)
            self.raise_error("nested too deeply to parse (Python's recursion limit)")

    def parse_operation(self) -> Operation:
        span = self._current_token.span
        op = self._nested(super().parse_operation)
        self.op_spans[op] = replace(span, line_offset=self.line_offset)
        return op

    def parse_optional_attribute(self) -> Attribute | None:
        return self._nested(super().parse_optional_attribute)

    def parse_optional_type(self) -> TypeAttribute | None:
        return self._nested(super().parse_optional_type)


def op_location(op: Operation, spans: dict[Operation, Span]) -> str | None:
    """`file:line:col` of an op: its explicit `loc(...)` if any, else where it was parsed."""
    if isinstance(op.location, FileLineColLoc):
        loc = op.location
        return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
    span = spans.get(op)
    return None if span is None else str(span.get_location())


def op_message(op: Operation, err: BaseException) -> str:
    """MLIR's `'graph.add' op <reason>`, dropping the `graph.add: ` prefix our verifiers add."""
    text = one_line(str(err)).removeprefix(f"{op.name}: ").removeprefix(f"{op.name} ")
    return f"'{op.name}' op {text}"


def locate_verify_failure(
    module: ModuleOp, spans: dict[Operation, Span]
) -> tuple[str | None, str] | None:
    """(location, message) of the first op, in program order, that fails verification alone."""
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except Exception as err:  # noqa: BLE001 - any verifier failure is what we look for
            return op_location(op, spans), op_message(op, err)
    return None


class LocatedInputError(Exception):
    """Input the parser cannot even read (not UTF-8), reported at `location` (file:line:col)."""

    def __init__(self, location: str, message: str):
        super().__init__(f"{location}: {message}")
        self.location, self.message = location, message


def decode_source(data: bytes, name: str, line_offset: int = 0) -> str:
    """`data` as UTF-8 text, else LocatedInputError at the first byte that is not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1 + line_offset
        column = err.start - (data.rfind(b"\n", 0, err.start) + 1) + 1
        raise LocatedInputError(
            f"{name}:{line}:{column}",
            f"input is not UTF-8 text (byte 0x{data[err.start]:02x})") from None


def error_line(message: str, location: str | None = None) -> str:
    return f"{location}: error: {message}" if location else f"error: {message}"


def describe(err: BaseException) -> str:
    """The one-line report of an error that carries no op (or whose op we could not find)."""
    if isinstance(err, ParseError):
        return error_line(one_line(err.msg), str(err.span.get_location()))
    if isinstance(err, LocatedInputError):
        return error_line(err.message, err.location)
    if isinstance(err, ArgSpecParseError):
        return error_line(f"invalid specification: {spec_error_reason(err)}")
    if isinstance(err, (OnnxcError, DiagnosticException)):
        return error_line(one_line(str(err)) or type(err).__name__)
    if isinstance(err, OSError) and err.filename is not None:
        return error_line(f"cannot open '{err.filename}': {err.strerror}")
    return error_line(
        f"internal error ({type(err).__name__}): {one_line(str(err))}"
        " (set ONNXC_DEBUG=1 for a traceback)"
    )
