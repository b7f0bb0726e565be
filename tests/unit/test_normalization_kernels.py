"""Softmax and LayerNormalization kernels (vectorized reductions: reassociable sums, maximum
reductions) against onnxruntime, on row lengths that leave vector remainders and on
non-last axes."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxc

RTOL, ATOL = 1e-5, 1e-6


def _model(node, shape, inits=()):
    g = helper.make_graph(
        [node], "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(a, n) for n, a in inits])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _check(model, shape, scale=3.0):
    x = (np.random.default_rng(0).standard_normal(shape) * scale).astype(np.float32)
    expected = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]
    for threads in (1, 2):  # the row loops are parallel_for
        got = onnxc.compile(model, cache_dir=False, num_threads=threads).run(None, {"x": x})[0]
        np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("shape, axis", [((3, 7, 37), -1), ((2, 130), -1), ((3, 7, 5), 1),
                                         ((4, 1), -1)])
def test_softmax(shape, axis):
    _check(_model(helper.make_node("Softmax", ["x"], ["y"], axis=axis), shape), shape, 10.0)


@pytest.mark.parametrize("shape, axis", [((2, 5, 33), -1), ((3, 4, 5, 6), 2), ((1, 768), -1)])
def test_layer_normalization(shape, axis):
    width = shape[axis:]
    rng = np.random.default_rng(1)
    inits = [("g", (1 + 0.1 * rng.standard_normal(width)).astype(np.float32)),
             ("b", (0.1 * rng.standard_normal(width)).astype(np.float32))]
    node = helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=axis,
                            epsilon=1e-5)
    _check(_model(node, shape, inits), shape)


@pytest.mark.parametrize("shape, axis", [((2, 6, 300), 1), ((2, 5, 7, 9), 1), ((3, 4, 600), 0)])
def test_softmax_non_last_axis_strips(shape, axis):
    """Column strips of 256 with a partial last strip, and strips per outer index."""
    _check(_model(helper.make_node("Softmax", ["x"], ["y"], axis=axis), shape), shape, 10.0)
