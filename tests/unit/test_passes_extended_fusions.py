"""The Extended (-O3) fusion rows at the graph level (fuse-layernorm, fuse-gelu, fuse-prelu,
fuse-matmul-transpose, fuse-binary-eltwise, fuse-reduce-to-global-pool, fuse-attention,
horizontal-fusion, fuse-weight-only-matmul): every lit case keeps the numpy results,
positive cases really fuse, and randomised shapes and constants (Hypothesis) keep the
fusions exact.

The same rows compiled natively against onnxruntime are in test_extended_fusions_native.py;
one-channel Instance/GroupNorm through fuse-layernorm at every level in
ops/test_normalization.py."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.parser import Parser

from onnxc.dialects import graph
from onnxc.passes.verify_numerics import check_pass_equivalence
from onnxc.pipeline import make_context

LIT = Path(__file__).resolve().parents[1] / "lit" / "passes"

# row -> (the op its positive cases must produce, names of the negative cases)
ROWS = {
    "fuse-layernorm": (graph.LayerNormalizationOp, {"centred_value_escapes", "mismatched_axes"}),
    "fuse-gelu": (graph.GeluOp, {"other_operand", "wrong_half"}),
    "fuse-prelu": (graph.PReluOp, {"min_not_zero", "slope_broadcasts_up"}),
    "fuse-matmul-transpose": (graph.GemmOp, {"shared_and_batched"}),
    "fuse-binary-eltwise": (graph.WeightedSumOp, {"not_absorbable"}),
    "fuse-reduce-to-global-pool": (graph.GlobalAveragePoolOp, {"partial_means"}),
    "fuse-attention": (graph.AttentionOp, {"probabilities_escape", "not_causal"}),
    "horizontal-fusion": (graph.SplitOp, {"not_siblings"}),
    "fuse-weight-only-matmul": (graph.MatMulWeightQuantizedOp,
                                {"block_of_8", "run_time_weight"}),
}


def parse(text: str):
    return Parser(make_context(), text).parse_module()


def count(module, op_type) -> int:
    return sum(isinstance(op, op_type) for op in module.walk())


def lit_cases():
    for row in ROWS:
        for chunk in (LIT / f"{row}.mlir").read_text().split("// -----"):
            name = chunk.split("func.func @", 1)[1].split("(", 1)[0]
            yield pytest.param(row, name, chunk, id=f"{row}:{name}")


@pytest.mark.parametrize("row, name, text", list(lit_cases()))
def test_lit_case_is_equivalent(row: str, name: str, text: str) -> None:
    fused_op, negatives = ROWS[row]
    module = parse(text)
    after = check_pass_equivalence(module, row, distribution="normal")
    if name in negatives:
        assert count(after, fused_op) == count(module, fused_op), "negative case fused"
    else:
        assert count(after, fused_op) > count(module, fused_op), "positive case did not fuse"


# --------------------------------------------------------------------------- randomised


def dense(array: np.ndarray) -> str:
    body = np.array2string(np.asarray(array, np.float32), separator=", ", threshold=10**6,
                           floatmode="unique").replace("\n", "")
    return f"dense<{body}>"


def t(shape) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + "f32>"


@settings(max_examples=10, deadline=None)
@given(
    lead=st.lists(st.integers(1, 3), min_size=0, max_size=2),
    trailing=st.lists(st.integers(1, 5), min_size=1, max_size=2),
    eps=st.sampled_from([1e-12, 1e-5, 1e-3]),
    seed=st.integers(0, 2**16),
)
def test_layernorm_random(lead, trailing, eps, seed):
    rng = np.random.default_rng(seed)
    shape = (*lead, *trailing)
    rank, axis = len(shape), len(lead)
    axes = ", ".join(str(a) for a in range(axis, rank))
    red = (*lead, *(1,) * len(trailing))
    gamma, beta = rng.standard_normal(trailing[-1:]), rng.standard_normal(trailing[-1:])
    text = f"""
func.func @main(%x: {t(shape)}) -> {t(shape)} {{
  %two = graph.constant {{value = dense<2.0> : tensor<f32>}} : tensor<f32>
  %eps = graph.constant {{value = dense<{eps:.6e}> : tensor<f32>}} : tensor<f32>
  %g = graph.constant {{value = {dense(gamma)} : {t(gamma.shape)}}} : {t(gamma.shape)}
  %b = graph.constant {{value = {dense(beta)} : {t(beta.shape)}}} : {t(beta.shape)}
  %m = graph.reduce_mean(%x) {{axes = array<i64: {axes}>, keepdims = 1 : i64}} : ({t(shape)}) -> {t(red)}
  %d = graph.sub(%x, %m) : ({t(shape)}, {t(red)}) -> {t(shape)}
  %p = graph.pow(%d, %two) : ({t(shape)}, tensor<f32>) -> {t(shape)}
  %v = graph.reduce_mean(%p) {{axes = array<i64: {axes}>, keepdims = 1 : i64}} : ({t(shape)}) -> {t(red)}
  %ve = graph.add(%v, %eps) : ({t(red)}, tensor<f32>) -> {t(red)}
  %s = graph.sqrt(%ve) : ({t(red)}) -> {t(red)}
  %n = graph.div(%d, %s) : ({t(shape)}, {t(red)}) -> {t(shape)}
  %y0 = graph.mul(%g, %n) : ({t(gamma.shape)}, {t(shape)}) -> {t(shape)}
  %y = graph.add(%y0, %b) : ({t(shape)}, {t(beta.shape)}) -> {t(shape)}
  func.return %y : {t(shape)}
}}"""
    module = parse(text)
    after = check_pass_equivalence(module, "fuse-layernorm", seed=seed, distribution="normal",
                                   rtol=1e-3, atol=1e-4)
    assert count(after, graph.LayerNormalizationOp) == 1
    assert count(after, graph.ReduceMeanOp) == 0


@settings(max_examples=10, deadline=None)
@given(
    batch=st.lists(st.integers(1, 3), min_size=0, max_size=2),
    sq=st.integers(1, 6), sk=st.integers(1, 6), d=st.integers(1, 5), dv=st.integers(1, 5),
    masked=st.booleans(), seed=st.integers(0, 2**16),
)
def test_attention_random(batch, sq, sk, d, dv, masked, seed):
    q, k, kt, v = (*batch, sq, d), (*batch, sk, d), (*batch, d, sk), (*batch, sk, dv)
    s, o, mask = (*batch, sq, sk), (*batch, sq, dv), (sk,)
    rank = len(q)
    perm = ", ".join(str(i) for i in [*range(rank - 2), rank - 1, rank - 2])
    args = f"%q: {t(q)}, %k: {t(k)}, %v: {t(v)}" + (f", %mask: {t(mask)}" if masked else "")
    scores = "%sc"
    add = ""
    if masked:
        add = f"  %am = graph.add(%sc, %mask) : ({t(s)}, {t(mask)}) -> {t(s)}\n"
        scores = "%am"
    text = f"""
func.func @main({args}) -> {t(o)} {{
  %c = graph.constant {{value = dense<{math.sqrt(d):.8e}> : tensor<f32>}} : tensor<f32>
  %kt = graph.transpose(%k) {{perm = array<i64: {perm}>}} : ({t(k)}) -> {t(kt)}
  %s = graph.matmul(%q, %kt) : ({t(q)}, {t(kt)}) -> {t(s)}
  %sc = graph.div(%s, %c) : ({t(s)}, tensor<f32>) -> {t(s)}
{add}  %p = graph.softmax({scores}) {{axis = -1 : i64}} : ({t(s)}) -> {t(s)}
  %o = graph.matmul(%p, %v) : ({t(s)}, {t(v)}) -> {t(o)}
  func.return %o : {t(o)}
}}"""
    module = parse(text)
    after = check_pass_equivalence(module, "fuse-attention", seed=seed, distribution="normal")
    assert count(after, graph.AttentionOp) == 1
    assert count(after, graph.SoftmaxOp) == 0


@settings(max_examples=10, deadline=None)
@given(widths=st.lists(st.integers(1, 4), min_size=2, max_size=4), k=st.integers(1, 4),
       bias=st.booleans(), seed=st.integers(0, 2**16))
def test_sibling_matmuls_random(widths, k, bias, seed):
    rng = np.random.default_rng(seed)
    lines, results, types = [], [], []
    for i, n in enumerate(widths):
        w = rng.standard_normal((k, n))
        lines.append(f"  %w{i} = graph.constant {{value = {dense(w)} : {t(w.shape)}}} : {t(w.shape)}")
        lines.append(f"  %m{i} = graph.matmul(%x, %w{i}) : ({t((3, k))}, {t(w.shape)}) -> {t((3, n))}")
        results.append(f"%m{i}")
        if bias:
            b = rng.standard_normal(n)
            lines.append(f"  %b{i} = graph.constant {{value = {dense(b)} : {t(b.shape)}}} : {t(b.shape)}")
            lines.append(f"  %a{i} = graph.add(%m{i}, %b{i}) : ({t((3, n))}, {t(b.shape)}) -> {t((3, n))}")
            results[-1] = f"%a{i}"
        types.append(t((3, n)))
    text = (f"func.func @main(%x: {t((3, k))}) -> ({', '.join(types)}) {{\n" + "\n".join(lines)
            + f"\n  func.return {', '.join(results)} : {', '.join(types)}\n}}")
    module = parse(text)
    after = check_pass_equivalence(module, "horizontal-fusion", seed=seed, distribution="normal")
    assert count(after, graph.MatMulOp) == 1
    assert count(after, graph.AddOp) == int(bias)


@settings(max_examples=10, deadline=None)
@given(coefficients=st.lists(st.floats(-4, 4, allow_nan=False, width=32).filter(bool),
                             min_size=2, max_size=4),
       seed=st.integers(0, 2**16))
def test_weighted_sum_random(coefficients, seed):
    lines, acc = [], None
    for i, c in enumerate(coefficients):
        lines.append(f"  %c{i} = graph.constant {{value = dense<{c:.8e}> : tensor<f32>}} : tensor<f32>")
        lines.append(f"  %m{i} = graph.mul(%x{i}, %c{i}) : (tensor<5xf32>, tensor<f32>) -> tensor<5xf32>")
        if acc is None:
            acc = f"%m{i}"
        else:
            lines.append(f"  %s{i} = graph.add({acc}, %m{i}) : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>")
            acc = f"%s{i}"
    args = ", ".join(f"%x{i}: tensor<5xf32>" for i in range(len(coefficients)))
    text = (f"func.func @main({args}) -> tensor<5xf32> {{\n" + "\n".join(lines)
            + f"\n  func.return {acc} : tensor<5xf32>\n}}")
    after = check_pass_equivalence(parse(text), "fuse-binary-eltwise", seed=seed)
    ops = [op for op in after.walk() if isinstance(op, graph.WeightedSumOp)]
    assert len(ops) == 1 and len(ops[0].inputs) == len(coefficients)


def test_same_data_sees_through_leading_unit_reshapes_only():
    """fuse-gelu's x may be read as the Gemm's rows and as those rows reshaped to [1, seq, n]
    (GPT-2); a reshape that regroups elements is another tensor."""
    from onnxc.passes.fusion_match import same_data

    module = parse("""
    func.func @f(%g: tensor<3x4xf32>, %c: tensor<3x1xf32>) -> (tensor<1x3x4xf32>, tensor<4x3xf32>, tensor<1x3xf32>) {
      %up = graph.reshape(%g) : (tensor<3x4xf32>) -> tensor<1x3x4xf32>
      %regrouped = graph.reshape(%g) : (tensor<3x4xf32>) -> tensor<4x3xf32>
      %column = graph.reshape(%c) : (tensor<3x1xf32>) -> tensor<1x3xf32>
      func.return %up, %regrouped, %column : tensor<1x3x4xf32>, tensor<4x3xf32>, tensor<1x3xf32>
    }""")
    g, c = module.ops.first.body.block.args
    up, regrouped, column = (op.results[0] for op in module.walk()
                             if isinstance(op, graph.ReshapeOp))
    assert same_data(up, g) and same_data(g, up) and same_data(g, g)
    assert not same_data(regrouped, g) and not same_data(column, c)
    assert not same_data(up, regrouped)
