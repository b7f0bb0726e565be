"""Batched f32 MatMul with a non-constant B (gemm.batched_matmul_kernel: register-blocked
outer products per batch slice) against onnxruntime: row and column remainders, broadcast
batch dimensions, a 2-D A against a batched B, attention-sized products."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import onnxc

RTOL, ATOL = 1e-4, 1e-5

SHAPES = {
    "attention_qk": ((1, 12, 128, 64), (1, 12, 64, 128)),
    "remainders": ((3, 13, 7), (3, 7, 37)),
    "broadcast_batch": ((2, 1, 9, 5), (1, 3, 5, 16)),
    "matrix_times_batch": ((10, 6), (4, 6, 48)),
    "few_rows": ((2, 3, 20), (2, 20, 17)),
}


@pytest.mark.parametrize("a_shape, b_shape", SHAPES.values(), ids=SHAPES.keys())
def test_batched_matmul(a_shape, b_shape):
    g = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["y"])], "mm",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, list(a_shape)),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, list(b_shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    rng = np.random.default_rng(0)
    feeds = {"a": rng.standard_normal(a_shape).astype(np.float32),
             "b": rng.standard_normal(b_shape).astype(np.float32)}
    expected = ort.InferenceSession(model.SerializeToString()).run(None, feeds)[0]
    got = onnxc.compile(model, cache_dir=False).run(None, feeds)[0]
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)
