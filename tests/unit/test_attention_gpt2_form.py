"""The attention block as transformers' SDPA export writes GPT-2's: a constant causal triangle
And the padding mask, Where(allowed, 0, -inf) added to the scores, and the probabilities
through Where(IsNaN(P), 0, P) so that a query with no key left (left padding) gets 0.

fuse-attention makes one graph.attention of it with `zero_nan_rows` and `causal_offset`
(the mask left is the padding row); attention-operand-views reads Q, K, V in place. Checked
against onnxruntime on the model as exported (rtol 1e-4, atol 1e-5 in f32, 1e-10 in f64,
whose attention runs the scalar kernel): rows with no key are exactly 0, at one and two
threads, cold and from the compile cache.
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxc
from onnxc.dialects import graph

S, H, D = 12, 2, 16
E = H * D
TOLERANCE = {np.float32: (1e-4, 1e-5), np.float64: (1e-10, 1e-10)}


def _gpt2_block(dtype) -> helper.ModelProto:
    rng = np.random.default_rng(5)
    onnx_type = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    causal = np.tril(np.ones((S, S), bool)).reshape(1, 1, S, S)
    init = [numpy_helper.from_array((rng.standard_normal((E, 3 * E)) / 4).astype(dtype), "w"),
            numpy_helper.from_array(causal, "causal"),
            numpy_helper.from_array(np.array([1, 1, 1, S], np.int64), "pad_shape"),
            numpy_helper.from_array(np.array([1, S, H, D], np.int64), "heads"),
            numpy_helper.from_array(np.array([1, S, E], np.int64), "merged"),
            numpy_helper.from_array(np.array([E, E, E], np.int64), "parts"),
            numpy_helper.from_array(np.array([0], dtype), "zero"),
            numpy_helper.from_array(np.array([-np.inf], dtype), "ninf"),
            numpy_helper.from_array(np.array(D ** -0.25, dtype), "s")]
    n = helper.make_node
    nodes = [n("Cast", ["attention_mask"], ["pad_b"], to=TensorProto.BOOL),
             n("Reshape", ["pad_b", "pad_shape"], ["pad"]),
             n("And", ["causal", "pad"], ["allowed"]),
             n("Where", ["allowed", "zero", "ninf"], ["bias"]),
             n("MatMul", ["x", "w"], ["qkv"]),
             n("Split", ["qkv", "parts"], ["q0", "k0", "v0"], axis=2)]
    for name in "qkv":
        nodes.append(n("Reshape", [f"{name}0", "heads"], [f"{name}1"]))
    nodes += [n("Transpose", ["q1"], ["q2"], perm=[0, 2, 1, 3]),
              n("Transpose", ["k1"], ["k2"], perm=[0, 2, 3, 1]),
              n("Transpose", ["v1"], ["v2"], perm=[0, 2, 1, 3]),
              n("Mul", ["q2", "s"], ["q3"]), n("Mul", ["k2", "s"], ["k3"]),
              n("MatMul", ["q3", "k3"], ["scores"]), n("Add", ["scores", "bias"], ["masked"]),
              n("Softmax", ["masked"], ["p"], axis=-1), n("IsNaN", ["p"], ["nan"]),
              n("Where", ["nan", "zero", "p"], ["p0"]), n("MatMul", ["p0", "v2"], ["o"]),
              n("Transpose", ["o"], ["ot"], perm=[0, 2, 1, 3]),
              n("Reshape", ["ot", "merged"], ["y"])]
    g = helper.make_graph(nodes, "gpt2_block",
                          [helper.make_tensor_value_info("x", onnx_type, [1, S, E]),
                           helper.make_tensor_value_info("attention_mask", TensorProto.INT64,
                                                         [1, S])],
                          [helper.make_tensor_value_info("y", onnx_type, [1, S, E])], init)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


def test_one_attention_with_causal_offset_and_zeroed_rows():
    module = onnxc.optimize(_gpt2_block(np.float32), opt_level=3)
    (attention,) = [op for op in module.walk() if isinstance(op, graph.AttentionOp)]
    assert attention.zero_nan_rows is not None and attention.causal_offset is not None
    assert attention.causal_offset.value.data == 0
    assert attention.mask is not None  # one row of S, the padding, for every query
    assert int(np.prod(attention.mask.type.get_shape())) == S
    names = {op.name for op in module.walk()}
    assert not names & {"graph.softmax", "graph.is_nan", "graph.transpose", "graph.split"}


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("padding", [0, 3], ids=["unpadded", "left_padded"])
def test_matches_onnxruntime(dtype, threads, padding, tmp_path):
    model = _gpt2_block(dtype)
    rng = np.random.default_rng(6)
    mask = np.ones((1, S), np.int64)
    mask[0, :padding] = 0  # queries 0 .. padding-1 see no key: their rows are 0
    feeds = {"x": rng.standard_normal((1, S, E)).astype(dtype), "attention_mask": mask}
    (expected,) = ort.InferenceSession(model.SerializeToString(),
                                       providers=["CPUExecutionProvider"]).run(None, feeds)
    cold = onnxc.compile(model, cache_dir=tmp_path, num_threads=threads)
    warm = onnxc.compile(model, cache_dir=tmp_path, num_threads=threads)
    (y,) = cold.run(None, feeds)
    np.testing.assert_array_equal(warm.run(None, feeds)[0], y)
    rtol, atol = TOLERANCE[dtype]
    np.testing.assert_allclose(y, expected, rtol=rtol, atol=atol)
    assert not np.isnan(y).any()
    assert (y[0, :padding] == 0).all() and (expected[0, :padding] == 0).all()
