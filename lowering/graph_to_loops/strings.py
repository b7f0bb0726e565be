"""Kernels of the string ops (dialects/graph_strings.py; docs/strings.md): each reads and
writes `{ptr, len}` string elements through string_bytes.py.
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType

from onnxc.dialects import graph_strings
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


RULES = (KernelRule(graph_strings.StringsOp, strings_kernel, symbolic=True),)
