"""The Extended (-O3) fusion rows natively: each row's fused graph (PRelu, MatMul-Transpose,
weighted sums, global pooling, attention, horizontal Conv/Gemm fusion) compiled and compared
with onnxruntime on the unfused model, the attention kernel's memory, and a BERT encoder
fused by the Extended rows against onnxruntime (rtol 1e-3 / atol 1e-4).

The rows at the graph level (lit cases, Hypothesis) are in test_passes_extended_fusions.py;
the ops they produce imported from ONNX (Gelu, Erf, LayerNormalization, ReduceMean/Sum) in
ops/test_elementwise.py, ops/test_normalization.py and ops/test_reductions_and_indices.py."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper

import onnxc
from onnxc.dialects import graph
from onnxc.zoo import BERT_TINY, bert_encoder, bert_inputs
from tests.single_op import graph_model

RTOL, ATOL = 1e-3, 1e-4


def make_model(nodes, inputs: dict[str, tuple], inits: dict[str, np.ndarray], opset: int):
    """float inputs of the given shapes, one float output y, IR version 8."""
    return graph_model(nodes, {n: (np.float32, s) for n, s in inputs.items()},
                       {"y": (np.float32, None)}, initializers=inits, opset=opset, ir_version=8)


def feeds_for(inputs: dict[str, tuple], seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {n: rng.standard_normal(s).astype(np.float32) for n, s in inputs.items()}


def run_both(model, feeds, pipeline: str | None = None):
    expected = ort.InferenceSession(model.SerializeToString()).run(None, feeds)[0]
    compiled = (onnxc.compile(model, opt_level=0) if pipeline is None
                else onnxc.compile(model, pass_pipeline=pipeline))
    return compiled.run(None, feeds)[0], expected, compiled


def i64(*values) -> np.ndarray:
    return np.array(values, np.int64)


# --------------------------------------------------------------------------- per row, natively


def _prelu():
    slope = np.array([0.1, 0.2, 0.3], np.float32).reshape(3, 1, 1)
    return ([helper.make_node("PRelu", ["x", "s"], ["y"])], {"x": (1, 3, 4, 4)}, {"s": slope},
            "fuse-prelu", graph.PReluOp)


def _matmul_transpose():
    nodes = [helper.make_node("Transpose", ["w"], ["wt"], perm=[1, 0]),
             helper.make_node("MatMul", ["x", "wt"], ["y"])]
    return nodes, {"x": (4, 5), "w": (6, 5)}, {}, "fuse-matmul-transpose", graph.GemmOp


def _weighted_sum():
    nodes = [helper.make_node("Mul", ["x", "a"], ["p"]), helper.make_node("Mul", ["z", "b"], ["q"]),
             helper.make_node("Sub", ["p", "q"], ["y"])]
    consts = {"a": np.array(0.3, np.float32), "b": np.array(1.7, np.float32)}
    return nodes, {"x": (3, 4), "z": (4,)}, consts, "fuse-binary-eltwise", graph.WeightedSumOp


def _global_pool():
    nodes = [helper.make_node("ReduceMean", ["x"], ["m"], axes=[3], keepdims=0),
             helper.make_node("ReduceMean", ["m"], ["y"], axes=[2], keepdims=0)]
    return nodes, {"x": (2, 3, 5, 6)}, {}, "fuse-reduce-to-global-pool", graph.GlobalAveragePoolOp


def _attention(batch=2, heads=3, sq=7, sk=7, d=4, dv=5):
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 3, 1]),
             helper.make_node("MatMul", ["q", "kt"], ["s"]),
             helper.make_node("Div", ["s", "c"], ["sc"]),
             helper.make_node("Add", ["sc", "mask"], ["sm"]),
             helper.make_node("Softmax", ["sm"], ["p"], axis=-1),
             helper.make_node("MatMul", ["p", "v"], ["y"])]
    inputs = {"q": (batch, heads, sq, d), "k": (batch, sk, heads, d),
              "v": (batch, heads, sk, dv), "mask": (batch, 1, 1, sk)}
    return nodes, inputs, {"c": np.array(2.0, np.float32)}, "fuse-attention", graph.AttentionOp


def _horizontal():
    rng = np.random.default_rng(2)
    w1, w2 = (rng.standard_normal((n, 3, 1, 1)).astype(np.float32) for n in (2, 4))
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"]),
             helper.make_node("Conv", ["x", "w2"], ["c2"]),
             helper.make_node("Concat", ["c1", "c2"], ["y"], axis=1)]
    inits = {"w1": w1, "w2": w2, "b1": np.array([0.5, -0.5], np.float32)}
    return nodes, {"x": (1, 3, 5, 5)}, inits, "horizontal-fusion", graph.SplitOp


def _horizontal_linear():
    rng = np.random.default_rng(3)
    w1, w2 = (rng.standard_normal((n, 6)).astype(np.float32) for n in (3, 5))
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["g1"], transB=1),
             helper.make_node("Gemm", ["x", "w2", "b2"], ["g2"], transB=1, beta=1.0),
             helper.make_node("Concat", ["g1", "g2"], ["y"], axis=1)]
    inits = {"w1": w1, "w2": w2, "b1": rng.standard_normal(3).astype(np.float32),
             "b2": rng.standard_normal((1, 5)).astype(np.float32)}
    return nodes, {"x": (4, 6)}, inits, "horizontal-fusion", graph.SplitOp


def _gelu_and_layernorm():
    """The BERT tiny encoder covers fuse-layernorm and fuse-gelu (see test below)."""


def _attention_key_blocks():
    """More keys than one kernel block (16), with a partial last block."""
    return _attention(batch=1, heads=2, sq=5, sk=37, d=8, dv=3)


ROW_MODELS = [_prelu, _matmul_transpose, _weighted_sum, _global_pool, _attention,
              _attention_key_blocks, _horizontal, _horizontal_linear]


@pytest.mark.parametrize("build", ROW_MODELS, ids=[b.__name__[1:] for b in ROW_MODELS])
def test_fused_row_runs_natively(build):
    nodes, inputs, inits, row, fused_op = build()
    model = make_model(nodes, inputs, inits, 17)
    optimized = onnxc.optimize(model, pass_pipeline=row)
    assert any(isinstance(op, fused_op) for op in optimized.walk()), f"{row} did not fire"
    got, expected, _ = run_both(model, feeds_for(inputs), pipeline=row)
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)


def test_attention_kernel_needs_no_score_buffer():
    """The fused graph has no Sq x Sk intermediate: its arena shrinks by at least that."""
    nodes, inputs, inits, row, _ = _attention()
    model = make_model(nodes, inputs, inits, 17)
    _, _, unfused = run_both(model, feeds_for(inputs), pipeline="")
    _, _, fused = run_both(model, feeds_for(inputs), pipeline=row)
    scores_bytes = 2 * 3 * 7 * 7 * 4
    assert fused.intermediate_bytes + scores_bytes <= unfused.intermediate_bytes


# --------------------------------------------------------------------------- BERT encoder


EXTENDED_BERT = "fuse-layernorm,fuse-gelu,fuse-attention,horizontal-fusion"


def test_bert_tiny_fuses_and_matches_onnxruntime():
    model = bert_encoder(layers=2, **BERT_TINY)
    feeds = bert_inputs(model)
    optimized = onnxc.optimize(model, pass_pipeline=EXTENDED_BERT)
    kinds = [op.name for op in optimized.walk() if op.name.startswith("graph.")
             and op.name != "graph.constant"]
    for name, per_layer in (("graph.layer_normalization", 2), ("graph.gelu", 1),
                            ("graph.attention", 1), ("graph.split", 1)):
        assert kinds.count(name) == 2 * per_layer, name
    for gone in ("graph.reduce_mean", "graph.softmax", "graph.erf", "graph.sqrt"):
        assert gone not in kinds
    assert len(kinds) <= 2 * 23 + 4  # 50 ops a layer before, 23 after (+4 for the mask)
    got, expected, _ = run_both(model, feeds, pipeline=EXTENDED_BERT)
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)


def test_bert_encoder_is_a_valid_export():
    model = bert_encoder(layers=1, hidden=24, heads=3, seq=4)
    onnx.checker.check_model(model, full_check=True)
    types = {n.op_type for n in model.graph.node}
    assert {"ReduceMean", "Pow", "Sqrt", "Erf", "Softmax", "Reshape", "Transpose"} <= types
    with pytest.raises(ValueError):
        bert_encoder(hidden=30, heads=4)
