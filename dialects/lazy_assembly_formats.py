"""Declarative assembly formats parsed when an op is first parsed or printed, not at import.

xDSL 0.74 parses every op's `assembly_format` string when the op class is defined
(`irdl_op_definition` -> `FormatProgram.from_str`). onnxc loads about 300 ops that have one
(xDSL's arith, memref, vector, llvm, scf, func, math, cf and onnxc's own), which made the
format parser about a quarter of the imports a compile pays for: 0.13 s of each process,
5% of the 2-layer BERT's cold compile. `onnxc.compile` never parses or prints IR text, and
`onnxc-opt` only does so for the ops in its input and output.

`install` wraps `FormatProgram.from_str` (when xDSL's format module is first imported:
installing imports nothing) so that it returns a `LazyFormatProgram`, which
parses the format on its first `parse` or `print` (an invalid format then raises the
`PyRDLOpDefinitionError` xDSL would have raised at definition). Only the dialects listed in
LAZY_DIALECTS get it: a dialect of the user's is defined as xDSL defines it. Op classes
defined before `install` (xDSL modules imported before onnxc's dialects) keep their eager
programs. tests/unit/test_lazy_assembly_formats.py parses every registered op's format, so
a format onnxc ships that does not parse still fails the suite.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec
    from types import ModuleType

    from xdsl.irdl import IRDLOperation, OpDef
    from xdsl.irdl.declarative_assembly_format import FormatProgram
    from xdsl.parser import Parser
    from xdsl.printer import Printer

LAZY_DIALECTS = frozenset({
    "arith", "builtin", "cf", "func", "llvm", "math", "memref", "scf", "vector",  # xDSL's
    "graph", "layout", "llvmx", "par",  # onnxc's (registry.ONNXC_DIALECTS)
})
"""Op namespaces whose formats are parsed on first use."""

FORMATS_MODULE = "xdsl.irdl.declarative_assembly_format"

_eager: Any = None
"""xDSL's own `FormatProgram.from_str`, once patched"""


class LazyFormatProgram:
    """What `FormatProgram.from_str` returns for a lazy op: the format, parsed on first use
    (xDSL's op classes only call `parse` and `print` on it)."""

    __slots__ = ("_op_def", "_program", "_text")

    def __init__(self, text: str, op_def: OpDef):
        self._text, self._op_def = text, op_def
        self._program: FormatProgram | None = None

    def program(self) -> FormatProgram:
        if self._program is None:
            from xdsl.utils.exceptions import ParseError, PyRDLOpDefinitionError

            try:
                self._program = _eager(self._text, self._op_def)
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
    return _eager(text, op_def)


def _patch(formats: ModuleType) -> None:
    global _eager
    if _eager is None:
        _eager = formats.FormatProgram.from_str
        formats.FormatProgram.from_str = staticmethod(_from_str)


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Patches xDSL's format module as it is first imported (by the first op definition
    with a format), so that installing imports nothing: onnxc.load of an artifact loads
    neither xDSL nor onnx. It leaves sys.meta_path at its first use."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        if name != FORMATS_MODULE:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _PatchingLoader(spec.loader)
        return spec


class _PatchingLoader(importlib.abc.Loader):
    """The module's own loader, then `_patch`."""

    def __init__(self, inner: importlib.abc.Loader):
        self._inner = inner

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self._inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._inner.exec_module(module)
        _patch(module)

    def __getattr__(self, name: str) -> Any:  # get_source, get_filename: the real loader's
        return getattr(self._inner, name)


def install() -> None:
    """Make the LAZY_DIALECTS' formats lazy for the op classes defined from now on."""
    if FORMATS_MODULE in sys.modules:
        _patch(sys.modules[FORMATS_MODULE])
    elif not any(isinstance(f, _PatchOnImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport())


def eager_from_str(text: str, op_def: OpDef) -> FormatProgram:
    """xDSL's own parse of a format (what the tests check every lazy format with)."""
    import xdsl.irdl.declarative_assembly_format as formats

    return (_eager or formats.FormatProgram.from_str)(text, op_def)


__all__ = ["LAZY_DIALECTS", "LazyFormatProgram", "eager_from_str", "install"]
