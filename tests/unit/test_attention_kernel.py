"""The vectorized graph.attention kernel (lowering/graph_to_loops/attention.py) against
onnxruntime on the unfused Q K^T / softmax / V graph, over shapes that exercise its edges:
query counts below, at and above the vector width with a partial last block, key counts
with a partial key block, masks broadcast per key or varying per query, several heads."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxc
from onnxc.dialects import graph

RTOL, ATOL = 1e-4, 1e-5


def attention_model(batch, heads, sq, sk, d, dv, mask_shape):
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["q", "kt"], ["s"]),
             helper.make_node("Mul", ["s", "c"], ["sc"])]
    scores = "sc"
    inputs = {"q": (batch, heads, sq, d), "k": (batch, heads, sk, d),
              "v": (batch, heads, sk, dv)}
    if mask_shape is not None:
        nodes.append(helper.make_node("Add", ["sc", "mask"], ["sm"]))
        inputs["mask"] = mask_shape
        scores = "sm"
    nodes += [helper.make_node("Softmax", [scores], ["p"], axis=-1),
              helper.make_node("MatMul", ["p", "v"], ["y"])]
    g = helper.make_graph(
        nodes, "attention",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in inputs.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(np.array(d ** -0.5, np.float32), "c")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model, inputs


CASES = {
    "bert_like": (1, 3, 32, 40, 16, 16, (1, 1, 1, 40)),
    "tail_only": (2, 2, 5, 9, 8, 3, (2, 1, 1, 9)),
    "full_and_tail": (1, 2, 37, 13, 4, 5, (1, 1, 1, 13)),
    "mask_per_query": (2, 2, 19, 11, 8, 6, (2, 1, 19, 11)),
    "mask_per_head_and_query": (1, 3, 17, 8, 4, 4, (1, 3, 17, 8)),
    "no_mask": (1, 2, 16, 24, 8, 8, None),
    "two_vector_blocks_mask_per_query": (1, 2, 50, 12, 8, 5, (1, 2, 50, 12)),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_attention_matches_onnxruntime(case):
    model, inputs = attention_model(*case)
    optimized = onnxc.optimize(model, pass_pipeline="fuse-attention")
    assert any(isinstance(op, graph.AttentionOp) for op in optimized.walk())
    rng = np.random.default_rng(0)
    feeds = {n: rng.standard_normal(s).astype(np.float32) for n, s in inputs.items()}
    if "mask" in feeds:
        feeds["mask"] = np.where(feeds["mask"] > 1.0, -10000.0, feeds["mask"]).astype(np.float32)
    expected = ort.InferenceSession(model.SerializeToString()).run(None, feeds)[0]
    got = onnxc.compile(model, pass_pipeline="fuse-attention", cache_dir=False).run(None, feeds)[0]
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)
