"""Declarative assembly formats parsed when an op is first parsed or printed, not at import.

xDSL 0.74 parses every op's `assembly_format` string when the op class is defined
(`irdl_op_definition` -> `FormatProgram.from_str`). onnxc loads about 300 ops that have one
(xDSL's arith, memref, vector, llvm, scf, func, math, cf and onnxc's own), which made the
format parser about a quarter of the imports a compile pays for: 0.13 s of each process,
5% of the 2-layer BERT's cold compile. `onnxc.compile` never parses or prints IR text, and
`onnxc-opt` only does so for the ops in its input and output.

`install` wraps `FormatProgram.from_str` so that it returns a `LazyFormatProgram`, which
parses the format on its first `parse` or `print` (an invalid format then raises the
`PyRDLOpDefinitionError` xDSL would have raised at definition). Only the dialects listed in
LAZY_DIALECTS get it: a dialect of the user's is defined as xDSL defines it. Op classes
defined before `install` (xDSL modules imported before onnxc's dialects) keep their eager
programs. tests/unit/test_lazy_assembly_formats.py parses every registered op's format, so
a format onnxc ships that does not parse still fails the suite.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from xdsl.irdl import declarative_assembly_format as formats
from xdsl.utils.exceptions import ParseError, PyRDLOpDefinitionError

if TYPE_CHECKING:
    from xdsl.irdl import IRDLOperation, OpDef
    from xdsl.parser import Parser
    from xdsl.printer import Printer

LAZY_DIALECTS = frozenset({
    "arith", "builtin", "cf", "func", "llvm", "math", "memref", "scf", "vector",  # xDSL's
    "graph", "layout", "llvmx", "par",  # onnxc's (registry.ONNXC_DIALECTS)
})
"""Op namespaces whose formats are parsed on first use."""

_EAGER = formats.FormatProgram.from_str


class LazyFormatProgram:
    """What `FormatProgram.from_str` returns for a lazy op: the format, parsed on first use
    (xDSL's op classes only call `parse` and `print` on it)."""

    __slots__ = ("_op_def", "_program", "_text")

    def __init__(self, text: str, op_def: OpDef):
        self._text, self._op_def = text, op_def
        self._program: formats.FormatProgram | None = None

    def program(self) -> formats.FormatProgram:
        if self._program is None:
            try:
                self._program = _EAGER(self._text, self._op_def)
            except ParseError as error:  # what irdl_op_definition raises for it
                raise PyRDLOpDefinitionError(
                    "Error during the parsing of the assembly format: ", error.args) from error
        return self._program

    def parse(self, parser: Parser, op_type: type[IRDLOperation]) -> IRDLOperation:
        return self.program().parse(parser, op_type)

    def print(self, printer: Printer, op: IRDLOperation) -> None:
        self.program().print(printer, op)


def _from_str(text: str, op_def: OpDef) -> Any:
    if op_def.name.split(".", 1)[0] in LAZY_DIALECTS:
        return LazyFormatProgram(text, op_def)
    return _EAGER(text, op_def)


def install() -> None:
    """Make the LAZY_DIALECTS' formats lazy for the op classes defined from now on."""
    formats.FormatProgram.from_str = staticmethod(_from_str)  # type: ignore[method-assign]


__all__ = ["LAZY_DIALECTS", "LazyFormatProgram", "install"]
