"""Normalizations: the Softmax and LayerNormalization kernels (vectorized reductions:
reassociable sums, maximum reductions) against onnxruntime, on row lengths that leave vector
remainders and on non-last axes (rtol 1e-5 / atol 1e-6); Instance-, Group- and
MeanVarianceNormalization (and LpPool) one-node models against onnx.reference and the numpy
evaluator (rtol 1e-4 / atol 1e-5), MeanVarianceNormalization over a symbolic batch.

LayerNormalization's Mean/InvStdDev outputs are in test_layer_norm_statistics.py,
RMSNormalization in test_rms_normalization.py.
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator

import onnxc
from tests.single_op import check_single_op as check
from tests.single_op import graph_model, single_op_model

RTOL, ATOL = 1e-5, 1e-6


def _model(node, shape, inits=()):
    """`node` of a float input x of `shape`, opset 17, IR version 8 (onnxruntime's)."""
    return graph_model([node], {"x": (np.float32, shape)}, {"y": (np.float32, None)},
                       initializers=dict(inits), opset=17, ir_version=8)


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


# --------------------------------------------------------------------------- one-node models
# (from test_ops_tensor.py)

RNG = np.random.default_rng(11)


def _f(*shape) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)




def test_normalizations_and_lp_pool():
    check("InstanceNormalization", [_f(2, 3, 4, 5)], [_f(3), _f(3)], {"epsilon": 1e-3})
    check("GroupNormalization", [_f(2, 4, 3, 3)], [_f(4), _f(4)], {"num_groups": 2})
    check("GroupNormalization", [_f(2, 4, 3)], [_f(2), _f(2)], {"num_groups": 2}, opset=18)
    check("MeanVarianceNormalization", [_f(2, 3, 4, 5)], opset=13)
    check("LpPool", [_f(1, 2, 5, 5)], attrs={"kernel_shape": [3, 3], "p": 2,
                                             "pads": [1, 1, 1, 1], "strides": [2, 2]})
    check("LpPool", [_f(1, 2, 6)], attrs={"kernel_shape": [2], "p": 3})


def test_mvn_with_a_symbolic_batch():
    """MeanVarianceNormalization's default axes include the batch: such a model cannot run
    per sample, so the batch stays a symbolic dimension of the compiled code; over the
    other axes it runs per sample. Both match the reference at two batch sizes."""

    def model(attrs):
        spec = (np.float32, ["N", 3, 4, 5])
        return single_op_model("MeanVarianceNormalization", {"x": spec}, {"y": spec},
                               attrs=attrs, opset=13)

    # (the default axes are [0, 2, 3]; spelled out since onnx's shape inference of the
    # function body fails without the attribute)
    for attrs in ({"axes": [0, 2, 3]}, {"axes": [2, 3]}):
        compiled = onnxc.compile(model(attrs))
        for n in (1, 3):
            x = _f(n, 3, 4, 5)
            (expected,) = ReferenceEvaluator(model(attrs)).run(None, {"x": x})
            (got,) = compiled.run(None, {"x": x})
            np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
