"""The assembly formats onnxc makes lazy (dialects/lazy_assembly_formats.py): every one of
them parses, ops still print and parse through them, and other dialects stay eager."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest
from xdsl.dialects import get_all_dialects
from xdsl.dialects.builtin import i32
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, result_def
from xdsl.irdl.declarative_assembly_format import FormatProgram
from xdsl.utils.exceptions import PyRDLOpDefinitionError

from onnxc.dialects import lazy_assembly_formats
from onnxc.dialects.lazy_assembly_formats import LAZY_DIALECTS, LazyFormatProgram
from onnxc.registry import ONNXC_DIALECTS
from tests.ir_helpers import parse_graph


def _lazy_dialects():
    factories = {**get_all_dialects(), **ONNXC_DIALECTS}
    return [factories[name]() for name in sorted(LAZY_DIALECTS)]


def test_every_lazy_format_parses():
    """What irdl_op_definition would have checked at import, for each op with a format."""
    checked = 0
    for dialect in _lazy_dialects():
        for op in dialect.operations:
            if not issubclass(op, IRDLOperation):
                continue  # builtin's UnregisteredOp
            op_def = op.get_irdl_definition()
            if op_def.assembly_format is not None:
                lazy_assembly_formats.eager_from_str(op_def.assembly_format, op_def)
                checked += 1
    assert checked > 250


def test_ops_print_and_parse_through_their_lazy_formats():
    text = """func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = graph.constant {value = dense<1.000000e+00> : tensor<4xf32>} : tensor<4xf32>
  %0 = graph.add(%x, %c) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}"""
    printed = str(parse_graph(text))
    assert "%0 = graph.add(%x, %c) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>" in printed
    assert str(parse_graph(printed)) == printed


def _program(op: type[IRDLOperation]):
    """The format program an op class parses with (held by xDSL's parse closure)."""
    return inspect.getclosurevars(op.parse.__func__).nonlocals["assembly_program"]


def _define(name: str, assembly_format: str) -> type[IRDLOperation]:
    class _Op(IRDLOperation):
        x = operand_def(i32)
        y = result_def(i32)

    _Op.name = name
    _Op.assembly_format = assembly_format
    return irdl_op_definition(_Op)


def test_an_invalid_lazy_format_fails_on_first_use():
    op = _define("graph.test_bad_format", "$x `:` type($nonexistent)")
    with pytest.raises(PyRDLOpDefinitionError, match="assembly format"):
        op.parse(None)  # the format is parsed before the parser is touched


def test_other_dialects_stay_eager():
    with pytest.raises(PyRDLOpDefinitionError, match="assembly format"):
        _define("user_dialect.bad_format", "$x `:` type($nonexistent)")
    good = _define("user_dialect.good_format", "$x attr-dict `:` type($x) `->` type($y)")
    assert isinstance(_program(good), FormatProgram)


def test_onnxc_and_xdsl_ops_are_lazy():
    """In a fresh process, as a compile imports them (in this one another test module may
    have imported xDSL's dialects first)."""
    from onnxc.dialects import graph

    assert isinstance(_program(graph.AddOp), LazyFormatProgram)
    probe = ("import onnxc.api, inspect; from xdsl.dialects import arith, memref; "
             "from onnxc.dialects.lazy_assembly_formats import LazyFormatProgram as L; "
             "print(all(isinstance(inspect.getclosurevars(op.parse.__func__)"
             ".nonlocals['assembly_program'], L) for op in (arith.AddfOp, memref.LoadOp)))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "True"


def test_the_import_hook_is_a_plain_finder():
    """Before xDSL's format module is imported, the hook sits in sys.meta_path: importlib's
    other users (metadata lookups walk every finder) must still work, and importing
    onnxc.dialects imports no xDSL."""
    probe = ("import sys, importlib.metadata as md, onnxc.dialects; "
             "assert 'xdsl' not in sys.modules; md.version('onnxc'); "
             "import onnxc.api; print('ok')")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "ok"
