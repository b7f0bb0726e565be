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


def _split_one(text: str, delimiter: str, maxsplit: int) -> list[str]:
    """onnxruntime's StringSplit of one string: "" has no pieces; a delimiter splits as
    Python's str.split; without one, runs of spaces do, the ends trimmed of spaces."""
    if not text:
        return []
    if delimiter:
        return text.split(delimiter, maxsplit)
    trimmed = text.strip(" ")
    if not trimmed:
        return []
    return [trimmed] if maxsplit == 0 else re.split(" +", trimmed, maxsplit=max(maxsplit, 0))


def _string_split(op, inputs):
    strings = np.asarray(inputs[0], dtype=object)
    split = [_split_one(s, op.delimiter.data, op.maxsplit.value.data)
             for s in strings.reshape(-1).tolist()]
    most = max((len(p) for p in split), default=0)
    pieces = np.array([p + [""] * (most - len(p)) for p in split], dtype=object)
    counts = np.array([len(p) for p in split], np.int64).reshape(strings.shape)
    return [pieces.reshape((*strings.shape, most)), counts]


def _string_keep(op, inputs):
    kept = np.asarray(inputs[0], dtype=object)[np.asarray(inputs[1], bool)]
    return [kept if kept.size else np.array([""], dtype=object)]


def _made(strings: np.ndarray, size: int | None = None) -> list[np.ndarray]:
    """The bytes a MakesBytes kernel writes (each result's UTF-8 bytes, one after the
    other, in row-major order; zeros up to `size`, the run size its kernel defines) and
    the strings."""
    data = b"".join(t.encode("utf-8") for t in strings.reshape(-1).tolist())
    data += bytes((size or len(data)) - len(data))
    return [np.frombuffer(data, np.int8).copy(), strings]


def _string_concat(op, inputs):
    a, b = (np.asarray(v, dtype=object) for v in inputs)
    shape = np.broadcast_shapes(a.shape, b.shape)
    joined = np.empty(shape, dtype=object)
    for index in np.ndindex(*shape):
        joined[index] = np.broadcast_to(a, shape)[index] + np.broadcast_to(b, shape)[index]
    return _made(joined)


def _string_case(op, inputs):
    table = graph_strings.case_table(bool(op.upper.value.data))
    strings = np.asarray(inputs[0], dtype=object)
    mapped = np.empty(strings.shape, dtype=object)
    for i, text in enumerate(strings.reshape(-1).tolist()):
        mapped.reshape(-1)[i] = "".join(chr(table[ord(c)]) if ord(c) < len(table) else c
                                        for c in text)
    return _made(mapped, sum(len(t.encode("utf-8")) for t in strings.reshape(-1).tolist()))


def _string_lookup(op, inputs):
    index: dict[str, int] = {}
    for i, key in enumerate(op.key_list()):
        index.setdefault(key, i)
    strings = np.asarray(inputs[0], dtype=object)
    found = [index.get(s, -1) for s in strings.reshape(-1).tolist()]
    return [np.array(found, np.int64).reshape(strings.shape)]


def _string_of_integers(op, inputs):
    values = np.asarray(inputs[0])
    text = np.empty(values.shape, dtype=object)
    text.reshape(-1)[:] = [str(int(v)) for v in values.reshape(-1).tolist()]
    return _made(text)


_INTEGER = re.compile(r"[ \t\n\v\f\r]*([+-]?)([0-9]+)")


def _integers_of_strings(op, inputs):
    """strtoll / strtoull: the value's bits as int64 and whether it parsed in range."""
    unsigned = bool(op.unsigned.value.data)
    strings = np.asarray(inputs[0], dtype=object)
    values, valid = [], []
    for text in strings.reshape(-1).tolist():
        found = _INTEGER.match(text)
        if found is None:
            values.append(0)
            valid.append(False)
            continue
        magnitude = int(found.group(2))
        negative = found.group(1) == "-"
        value = -magnitude if negative else magnitude
        if unsigned:
            ok = magnitude < 1 << 64
            bits = value % (1 << 64)
        else:
            ok = -(1 << 63) <= value < 1 << 63
            bits = value % (1 << 64)
        values.append(bits - (1 << 64) if bits >= 1 << 63 else bits)
        valid.append(ok)
    return [np.array(values, np.int64).reshape(strings.shape),
            np.array(valid, np.bool_).reshape(strings.shape)]


EVALUATORS = {
    graph_strings.StringsOp: _strings,
    graph_strings.RegexFullMatchOp: _regex_full_match,
    graph_strings.StringSplitOp: _string_split,
    graph_strings.StringKeepOp: _string_keep,
    graph_strings.StringConcatOp: _string_concat,
    graph_strings.StringCaseOp: _string_case,
    graph_strings.StringLookupOp: _string_lookup,
    graph_strings.StringOfIntegersOp: _string_of_integers,
    graph_strings.IntegersOfStringsOp: _integers_of_strings,
}
