"""ONNX exporters of the string ops (dialects/graph_strings.py)."""

from __future__ import annotations

from xdsl.ir import Operation

from onnxc.dialects import graph_strings
from onnxc.dialects.dense_data import values_in_shape
from onnxc.dialects.graph import shape_of
from onnxc.frontend.onnx_export import Emitter, OnnxWriter


def _strings(w: OnnxWriter, op: graph_strings.StringsOp) -> None:
    """A string constant: an initializer of its strings (its data and spans are constants:
    the op's verifier holds the data to it, and import makes both at once)."""
    data, spans = (values_in_shape(v.owner.value, shape_of(v))  # type: ignore[union-attr]
                   for v in (op.data, op.spans))
    strings = graph_strings.decode_strings(data, spans)
    w.value_names[op.output] = w.const(strings, op.output.name_hint or "strings")


def _regex_full_match(w: OnnxWriter, op: graph_strings.RegexFullMatchOp) -> None:
    w.emit(op, "RegexFullMatch", [w.name(op.input)], pattern=op.pattern.data)


STRING_EMITTERS: dict[type[Operation], Emitter] = {
    graph_strings.StringsOp: _strings,
    graph_strings.RegexFullMatchOp: _regex_full_match,
}
