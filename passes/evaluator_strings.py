"""numpy references of the string ops (dialects/graph_strings.py): string tensors are numpy
object arrays of str here, as onnxruntime gives them."""

from __future__ import annotations

from onnxc.dialects import graph_strings


def _strings(op, inputs):
    return [graph_strings.decode_strings(inputs[0], inputs[1])]


EVALUATORS = {
    graph_strings.StringsOp: _strings,
}
