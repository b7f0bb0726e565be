"""Which graph inputs that share a `dim_param` name one size, and which independent sizes.

A `dim_param` on two inputs is one input symbol: the run checks the two agree before native
code starts (runtime/symbolic_shapes.py), and every kernel may rely on it. onnxruntime never
checks it, and exporters reuse names for sizes that need not agree: optimum's merged Whisper
decoder names the encoder cache and `encoder_hidden_states` both `encoder_sequence_length`,
but at prefill the cache is empty. Its If reads the cache only in one branch and the states
only in the other.

The rule: two inputs sharing a `dim_param` name independent sizes when no path through the
graph reads both, i.e. every read of one and every read of the other lie in different
branches of one If (at the top level or in an If branch; a Loop or Scan body runs its If
both ways across iterations, so an If there separates nothing). Inputs some path reads
together may meet in an op, and stay one symbol (kept checked by name, and known equal to
every kernel); the groups are closed under that relation, so an input read outside the If
keeps both branches' inputs together. Split sizes are always sound: the import types each
branch with its own symbol, the If's outputs become run symbols where the branches differ,
and anything later ops need of them is a guard. An input no node reads stays with the
first group (nothing depends on it: its declared name is kept checked).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import onnx

from onnxc.dialects.symbolic_dims import symbol_name
from onnxc.frontend.onnx_model import subgraphs

Path = tuple[tuple[int, int], ...]
"""The If branches a read lies in, outermost first: (the If node's id, branch index)."""


def split_symbols(graph: onnx.GraphProto,
                  inputs: Sequence[onnx.ValueInfoProto]) -> dict[str, dict[str, str]]:
    """Per input: its `dim_param`s that name a size of their own (dim_param -> the symbol
    that replaces `symbol_name(dim_param)`); inputs and dim_params not listed keep theirs."""
    names = {vi.name for vi in inputs}
    reads: dict[str, set[Path]] = {name: set() for name in names}
    _collect(graph, (), True, names, reads)
    for out in graph.output:  # an input returned as it is
        if out.name in names:
            reads[out.name].add(())
    sharing: dict[str, list[str]] = {}
    taken: set[str] = set()
    for vi in inputs:
        for axis, d in enumerate(_dims(vi)):
            if d.HasField("dim_value"):
                continue
            if d.dim_param in ("", "?"):
                taken.add(f"{symbol_name(vi.name)}_dim{axis}")
                continue
            symbol = symbol_name(d.dim_param)
            taken.add(symbol)
            members = sharing.setdefault(symbol, [])
            if vi.name not in members:
                members.append(vi.name)
    renamed: dict[str, dict[str, str]] = {}
    for symbol, members in sharing.items():
        groups = _groups([m for m in members if reads[m]], reads)
        for group in groups[1:]:
            k = 2
            while f"{symbol}_{k}" in taken:
                k += 1
            taken.add(f"{symbol}_{k}")
            for name in group:
                vi = next(v for v in inputs if v.name == name)
                for d in _dims(vi):
                    if d.dim_param not in ("", "?") and symbol_name(d.dim_param) == symbol:
                        renamed.setdefault(name, {})[d.dim_param] = f"{symbol}_{k}"
    return renamed


def _dims(vi: onnx.ValueInfoProto) -> Iterable[onnx.TensorShapeProto.Dimension]:
    tt = vi.type.tensor_type
    return tt.shape.dim if tt.HasField("shape") else []


def _collect(graph: onnx.GraphProto, path: Path, branches: bool, names: set[str],
             reads: dict[str, set[Path]], hidden: frozenset[str] = frozenset()) -> None:
    """Record the path of every read of an input in `graph` and its subgraphs. `branches`:
    whether an If here separates its branches (not inside a Loop or Scan body); `hidden`:
    names a subgraph defines itself, which are not the input of that name."""
    def read(name: str, where: Path) -> None:
        if name in names and name not in hidden:
            reads[name].add(where)

    for node in graph.node:
        for name in node.input:
            read(name, path)
        separates = branches and node.op_type == "If" and node.domain in ("", "ai.onnx")
        for index, body in enumerate(subgraphs(node)):
            inner = path + ((id(node), index),) if separates else path
            defined = {vi.name for vi in body.input} | {t.name for t in body.initializer}
            defined.update(o for n in body.node for o in n.output)
            _collect(body, inner, separates, names, reads, hidden | defined)
            for out in body.output:
                if out.name not in defined:
                    read(out.name, inner)


def _exclusive(p: Path, q: Path) -> bool:
    """Whether no run takes both paths: they part in two branches of one If."""
    for a, b in zip(p, q):
        if a != b:
            return a[0] == b[0]
    return False


def _groups(members: list[str], reads: dict[str, set[Path]]) -> list[list[str]]:
    """`members` in groups closed under "some path reads both", each in input order, the
    groups in the order of their first member."""
    group = list(range(len(members)))
    for i, name in enumerate(members):
        for j in range(i):
            if group[j] != group[i] and any(not _exclusive(p, q) for p in reads[name]
                                            for q in reads[members[j]]):
                old, new = max(group[i], group[j]), min(group[i], group[j])
                group = [new if g == old else g for g in group]
    return [[m for m, g in zip(members, group) if g == first]
            for first in sorted(set(group))]
