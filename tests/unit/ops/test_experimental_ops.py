"""ONNX's removed experimental ops and onnxruntime's device copies
(frontend/onnx_ops_experimental.py) as old models hold them (default domain, opset 9), beside
onnxruntime 1.32, which still runs them. Tolerance: rtol/atol 1e-5 (float32 math in
another order); exact for the slices and copies."""

from __future__ import annotations

import numpy as np
import pytest

import onnxc
from onnxc.errors import ModelLoadError
from tests.single_op import run_both, single_op_model


def model(op, x, **attrs):
    return single_op_model(op, {"x": (x.dtype, list(x.shape))}, attrs=attrs, opset=9,
                           ir_version=8, node_name="n")


@pytest.fixture
def x():
    return np.random.default_rng(0).standard_normal((2, 3, 5, 6)).astype(np.float32)


@pytest.mark.parametrize("op, attrs", [
    ("Affine", {"alpha": 0.5, "beta": -1.25}),
    ("Affine", {}),
    ("Scale", {"scale": 3.0}),
    ("ScaledTanh", {"alpha": 2.0, "beta": 0.7}),
    ("ParametricSoftplus", {"alpha": 1.5, "beta": 2.0}),
    ("ImageScaler", {"scale": 0.5, "bias": [1.0, -2.0, 0.25]}),
])
def test_elementwise_forms(x, op, attrs):
    run_both(model(op, x, **attrs), {"x": x}, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("attrs", [{"border": [1, 2, 0, 1]},
                                   {"border": [2, 1, 0, 0], "scale": [3, 2]}])
def test_crop(x, attrs):
    run_both(model("Crop", x, **attrs), {"x": x}, exact=True)


def test_crop_outside_the_image_is_refused(x):
    with pytest.raises(ModelLoadError, match="outside the 5x6 image"):
        onnxc.compile(model("Crop", x, border=[0, 4, 0, 0], scale=[3, 2]))


def test_scaled_tanh_needs_its_attributes(x):
    with pytest.raises(ModelLoadError, match="attribute 'alpha' is required"):
        onnxc.compile(model("ScaledTanh", x, beta=1.0))


def test_dynamic_slice(x):
    m = single_op_model("DynamicSlice", {"x": (np.float32, [2, 3, 5, 6])},
                        initializers={"s": np.array([1, -4], np.int64),
                                      "e": np.array([3, 100], np.int64),
                                      "a": np.array([2, 3], np.int64)},
                        node_inputs=["x", "s", "e", "a"], opset=9, ir_version=8)
    run_both(m, {"x": x}, exact=True)


@pytest.mark.parametrize("op", ["MemcpyFromHost", "MemcpyToHost"])
def test_memcpy_is_an_identity(x, op):
    m = single_op_model(op, {"x": (np.float32, [2, 3, 5, 6])}, opset=13, ir_version=8)
    assert np.array_equal(onnxc.compile(m).run(None, {"x": x})[0], x)
