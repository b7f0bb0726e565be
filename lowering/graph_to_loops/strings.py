"""Kernels of the string ops (dialects/graph_strings.py; docs/strings.md): each reads and
writes `{ptr, len}` string elements through string_bytes.py.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, i32, i64

from onnxc.dialects import graph_strings
from onnxc.dialects.dense_data import from_numpy
from onnxc.dialects.regex_dfa import compile_dfa
from onnxc.lowering.graph_to_loops import string_bytes
from onnxc.lowering.graph_to_loops.loops import KernelBuilder
from onnxc.lowering.graph_to_loops.rules import KernelRule


def strings_kernel(op: graph_strings.StringsOp, kb: KernelBuilder, ins, outs):
    """out[i] = {&data[spans[i, 0]], spans[i, 1]}: the spans were checked at import."""
    data, spans = ins
    n = kb.count(outs[0])
    out = kb.view(outs[0], [n])
    pairs = kb.view(spans, [n, 2])
    base = string_bytes.address_of(kb, data)

    def element(i):
        offset, length = kb.load(pairs, [i, 0]), kb.load(pairs, [i, 1])
        ptr = kb.insert(arith.AddiOp(base, offset))
        kb.store(string_bytes.string_of(kb, ptr, kb.insert(arith.IndexCastOp(length,
                                                                              IndexType()))),
                 out, [i])

    kb.for_(0, n, element)


def _index(kb: KernelBuilder, value):
    if value.type != i64:
        value = kb.insert(arith.ExtUIOp(value, i64))
    return kb.insert(arith.IndexCastOp(value, IndexType()))


def dfa_tables(op: graph_strings.RegexFullMatchOp, target) -> list:
    """The pattern's DFA (dialects/regex_dfa.py): next state by state * 256 + byte (i32),
    accepting states (i8)."""
    next_state, accept = compile_dfa(op.pattern.data)
    return [from_numpy(next_state.reshape(-1)), from_numpy(accept.astype(np.int8))]


def regex_full_match_kernel(op: graph_strings.RegexFullMatchOp, kb: KernelBuilder, ins,
                            outs):
    """Per string, the DFA walked over its bytes from state 0; matched when it ends in an
    accepting state. Every byte value has a next state, so no input leaves the table."""
    x, next_state, accept = ins
    n = kb.count(outs[0])
    strings, matched = kb.view(x, [n]), kb.view(outs[0], [n])
    zero = kb.constant(0, i32)

    def element(i):
        ptr, length = string_bytes.parts(kb, kb.load(strings, [i]))
        data = string_bytes.bytes_at(kb, ptr)

        def step(k, state):
            row = kb.insert(arith.MuliOp(_index(kb, state), kb.idx(256)))
            at = kb.insert(arith.AddiOp(row, _index(kb, kb.load(data, [k]))))
            return [kb.load(next_state, [at])]

        (state,) = kb.reduce(0, length, [zero], step)
        accepted = kb.load(accept, [_index(kb, state)])
        kb.store(kb.insert(arith.CmpiOp(accepted, kb.constant(0, accepted.type), "ne")),
                 matched, [i])

    kb.parallel_for(0, n, element)


RULES = (
    KernelRule(graph_strings.StringsOp, strings_kernel, symbolic=True),
    KernelRule(graph_strings.RegexFullMatchOp, regex_full_match_kernel, symbolic=True,
               constants=dfa_tables),
)
