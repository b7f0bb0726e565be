"""Operator-forwarding rows: lit cases keep their results, positives really rewrite, and the
slice and transpose moves hold on random shapes and broadcasts."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from onnxc.passes.verify_numerics import check_pass_equivalence
from tests.ir_helpers import parse_graph as parse
from tests.ir_helpers import split_lit_cases

LIT = Path(__file__).parents[1] / "lit" / "passes"
ROWS = ["slice-before-elementwise", "transpose-through-elementwise", "reduce-before-shift"]



def lit_cases(row: str) -> list[str]:
    return split_lit_cases(LIT / f"{row}.mlir")


def op_names(module) -> list[str]:
    return sorted(op.name for op in module.walk())


def t(shape) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + "f32>"




@settings(max_examples=30, deadline=None)
@given(st.data())
def test_slice_moves_above_a_broadcast_binary(data):
    out = data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=3))
    b = [d if data.draw(st.booleans()) else 1 for d in out][data.draw(st.integers(0, len(out))):]
    axis = data.draw(st.integers(0, len(out) - 1))
    start = data.draw(st.integers(-out[axis], out[axis]))
    end = data.draw(st.integers(-out[axis] - 1, out[axis] + 1))
    step = data.draw(st.sampled_from([1, 2, -1]))
    from onnxc.dialects.graph_shapes import slice_shape

    sliced = slice_shape(tuple(out), [start], [end], [axis], [step])
    text = f"""
func.func @main(%x: {t(out)}, %b: {t(b)}) -> {t(sliced)} {{
  %0 = graph.sub(%x, %b) : ({t(out)}, {t(b)}) -> {t(out)}
  %1 = graph.slice(%0) {{starts = array<i64: {start}>, ends = array<i64: {end}>, axes = array<i64: {axis}>, steps = array<i64: {step}>}} : ({t(out)}) -> {t(sliced)}
  func.return %1 : {t(sliced)}
}}"""
    after = check_pass_equivalence(parse(text), "slice-before-elementwise")
    assert [op.name for op in after.walk()][-2] == "graph.sub"


@settings(max_examples=30, deadline=None)
@given(st.permutations(range(3)), st.lists(st.integers(1, 4), min_size=3, max_size=3),
       st.integers(0, 3))
def test_transpose_sinks_through_unary_and_constant_binary(perm, shape, const_rank):
    tshape = [shape[p] for p in perm]
    cshape = [d if i % 2 else 1 for i, d in enumerate(tshape)][3 - const_rank:]
    values = ", ".join(str(float(i)) for i in range(1, 1 + _size(cshape)))
    dense = f"dense<[{values}]>" if cshape else f"dense<{values}>"
    p = ", ".join(map(str, perm))
    text = f"""
func.func @main(%x: {t(shape)}) -> {t(tshape)} {{
  %c0 = graph.constant {{value = {dense} : {t([_size(cshape)])}}} : {t([_size(cshape)])}
  %c = graph.reshape(%c0) : ({t([_size(cshape)])}) -> {t(cshape)}
  %0 = graph.transpose(%x) {{perm = array<i64: {p}>}} : ({t(shape)}) -> {t(tshape)}
  %1 = graph.tanh(%0) : ({t(tshape)}) -> {t(tshape)}
  %2 = graph.mul(%1, %c) : ({t(tshape)}, {t(cshape)}) -> {t(tshape)}
  func.return %2 : {t(tshape)}
}}"""
    after = check_pass_equivalence(parse(text), "fold-unsqueeze-const,transpose-through-elementwise")
    names = [op.name for op in after.walk()]
    assert names.count("graph.transpose") <= 1 and names[-2] in ("graph.transpose", "graph.mul")


def _size(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n
