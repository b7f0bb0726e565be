"""numpy references of the string ops (dialects/graph_strings.py): string tensors are numpy
object arrays of str here, as onnxruntime gives them."""

from __future__ import annotations

import re

import numpy as np

from onnxc.dialects import graph_strings


def _strings(op, inputs):
    return [graph_strings.decode_strings(inputs[0], inputs[1])]


def _regex_full_match(op, inputs):
    """Python's `re.fullmatch` with ASCII classes (RE2's \\d, \\w, \\s): an independent
    reference of the DFA the kernel walks."""
    pattern = re.compile(op.pattern.data, re.ASCII)
    strings = np.asarray(inputs[0], dtype=object)
    return [np.vectorize(lambda s: pattern.fullmatch(s) is not None, otypes=[np.bool_])(
        strings) if strings.size else np.zeros(strings.shape, np.bool_)]


EVALUATORS = {
    graph_strings.StringsOp: _strings,
    graph_strings.RegexFullMatchOp: _regex_full_match,
}
