"""ONNX exporters of the string ops (dialects/graph_strings.py)."""

from __future__ import annotations

import numpy as np
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


def _string_split(w: OnnxWriter, op: graph_strings.StringSplitOp) -> None:
    maxsplit = op.maxsplit.value.data
    w.emit(op, "StringSplit", [w.name(op.input)], delimiter=op.delimiter.data or None,
           maxsplit=maxsplit if maxsplit >= 0 else None)


def _string_keep(w: OnnxWriter, op: graph_strings.StringKeepOp) -> None:
    """Compress by the mask, then Concat an empty string and keep max(count, 1) of it."""
    kept = w.apply("Compress", [w.name(op.input), w.name(op.keep)], "kept")
    padded = w.apply("Concat", [kept, w.const(np.array([""], dtype=object), "empty")],
                     "padded", axis=0)
    count = w.apply("Size", [kept], "count")
    one = w.const(np.array(1, np.int64), "one")
    end = w.apply("Unsqueeze", [w.apply("Max", [count, one], "end"),
                                w.const(np.array([0], np.int64), "axis")], "ends")
    w.emit(op, "Slice", [padded, w.const(np.array([0], np.int64), "starts"), end])


STRING_EMITTERS: dict[type[Operation], Emitter] = {
    graph_strings.StringsOp: _strings,
    graph_strings.RegexFullMatchOp: _regex_full_match,
    graph_strings.StringSplitOp: _string_split,
    graph_strings.StringKeepOp: _string_keep,
}
