"""Redundant-node rows: every lit case computes what it computed before the pass (numpy
evaluator on seeded random inputs), the positive cases really change the graph, and a few
rewrites are checked on random shapes."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onnxc.dialects import graph
from onnxc.pipeline import make_context
from onnxc.passes.redundant import lossless
from onnxc.passes.verify_numerics import check_pass_equivalence
from tests.ir_helpers import parse_graph as parse
from tests.ir_helpers import split_lit_cases

LIT = Path(__file__).parents[1] / "lit" / "passes"
ROWS = [
    "drop-no-op", "drop-noop-cast", "drop-full-slice", "drop-identity-pool",
    "drop-layout-cast-at-output", "drop-orphans", "drop-reshape-before-binary",
    "drop-flatten-after-global-pool", "drop-flatten-after-linear", "merge-reshapes",
    "merge-casts",
]



def lit_cases(row: str) -> list[str]:
    return split_lit_cases(LIT / f"{row}.mlir")


def op_names(module) -> list[str]:
    return sorted(op.name for op in module.walk())




def test_softmax_coercion_of_squeezenet_shape():
    text = """
func.func @main(%x: tensor<2x7x1x1xf32>) -> tensor<2x7x1x1xf32> {
  %0 = graph.flatten(%x) {axis = 1 : i64} : (tensor<2x7x1x1xf32>) -> tensor<2x7xf32>
  %1 = graph.softmax(%0) {axis = 1 : i64} : (tensor<2x7xf32>) -> tensor<2x7xf32>
  %2 = graph.reshape(%1) : (tensor<2x7xf32>) -> tensor<2x7x1x1xf32>
  func.return %2 : tensor<2x7x1x1xf32>
}"""
    after = check_pass_equivalence(parse(text), "merge-reshapes", distribution="normal")
    assert [op.name for op in after.walk() if op.name.startswith("graph.")] == ["graph.softmax"]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=4), st.data())
def test_merge_reshapes_on_random_chains(shape, data):
    """reshape chains through random shapes of the same size end as one reshape (or none)."""
    size = 1
    for d in shape:
        size *= d
    mids = data.draw(st.lists(st.sampled_from([(size,), (1, size), (size, 1), tuple(shape)]),
                              min_size=1, max_size=3))
    last = data.draw(st.sampled_from([(size,), tuple(shape)]))
    t = lambda s: "tensor<" + "x".join(map(str, s)) + "xf32>"
    lines, prev, cur = [], "%x", tuple(shape)
    for i, s in enumerate([*mids, last]):
        lines.append(f"  %{i} = graph.reshape({prev}) : ({t(cur)}) -> {t(s)}")
        prev, cur = f"%{i}", s
    text = (f"func.func @main(%x: {t(shape)}) -> {t(last)} {{\n" + "\n".join(lines)
            + f"\n  func.return {prev} : {t(last)}\n}}")
    after = check_pass_equivalence(parse(text), "merge-reshapes")
    assert sum(isinstance(op, graph.ReshapeOp) for op in after.walk()) <= 1


@pytest.mark.parametrize("src, mid, exact", [
    ("f32", "f64", True), ("f64", "f32", False), ("i32", "i64", True), ("i64", "i32", False),
    ("i32", "f64", True), ("i32", "f32", False), ("i8", "f32", True), ("ui8", "i16", True),
    ("i8", "ui8", False), ("i1", "i8", True), ("f32", "i64", False),
])
def test_lossless_intermediate_types(src, mid, exact):
    from xdsl.dialects.builtin import TensorType

    module = parse(f"func.func @f(%a: tensor<{src}>, %b: tensor<{mid}>) {{\n func.return\n}}")
    fn = next(op for op in module.walk() if op.name == "func.func")
    a, b = (t.get_element_type() for t in fn.function_type.inputs if isinstance(t, TensorType))
    assert lossless(a, b) is exact


@pytest.mark.parametrize("producer", ["Gemm", "MatMul"])
def test_output_transpose_absorbed_by_linear_runs_natively(producer):
    """The Gemm written transposed (swapped operands, flipped flags, bias as a column) runs
    natively and matches onnxruntime on the unrewritten model."""
    import numpy as np
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    import onnxc

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((5, 8)).astype(np.float32), "w"),
             numpy_helper.from_array(rng.standard_normal(5).astype(np.float32), "c")]
    if producer == "Gemm":
        node = helper.make_node("Gemm", ["a", "w", "c"], ["y"], transB=1, alpha=0.5)
    else:
        inits[0] = numpy_helper.from_array(rng.standard_normal((8, 5)).astype(np.float32), "w")
        node = helper.make_node("MatMul", ["a", "w"], ["y"])
    g = helper.make_graph(
        [node, helper.make_node("Transpose", ["y"], ["t"], perm=[1, 0])], "g",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [3, 8])],
        [helper.make_tensor_value_info("t", TensorProto.FLOAT, [5, 3])], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 9
    a = rng.standard_normal((3, 8)).astype(np.float32)
    (expected,) = ort.InferenceSession(model.SerializeToString()).run(None, {"a": a})
    compiled = onnxc.compile(model, pass_pipeline="drop-layout-cast-at-output")
    (actual,) = compiled(a)
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5)
    from onnxc.frontend import import_onnx
    from onnxc.pipeline import run_passes

    module = import_onnx(model)
    run_passes(make_context(), module, "drop-layout-cast-at-output")
    names = [op.name for op in module.walk() if op.name.startswith("graph.")]
    assert "graph.transpose" not in names and names.count("graph.gemm") == 1
