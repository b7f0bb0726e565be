"""1-D convolutions on the NHWC kernels (passes/conv1d_as_2d.py, run by assign-layout).

Each model is ONNX Conv1d (with a bias, a residual Add and a GELU where asked), compiled the
normal way and compared with onnxruntime at rtol/atol 1e-4 (f32 sums in another order); a spy
asserts that the conv was rewritten as a 2-D one, so that a change of the rewrite's limits
cannot leave a case untested. Cases: strides, dilations, asymmetric pads, groups, depthwise,
a run-time length compiled once and run at several, and a non-constant weight, which stays
on the plain kernel.
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxc
from onnxc.passes import conv1d_as_2d
from tests.single_op import graph_model

RNG = np.random.default_rng(3)
TOL = 1e-4


@pytest.fixture
def rewritten(monkeypatch):
    """The convs made 2-D in this test."""
    seen = []
    rewrite = conv1d_as_2d._as_2d

    def spy(op):
        seen.append(op.name)
        rewrite(op)

    monkeypatch.setattr(conv1d_as_2d, "_as_2d", spy)
    return seen


def conv1d_model(c, m, k, length, *, residual=False, gelu=False, bias=True, const=True,
                 **attrs):
    nodes = [helper.make_node("Conv", ["x", "w", *(["b"] if bias else [])], ["c"], **attrs)]
    inits = []
    w = (RNG.standard_normal((m, c // attrs.get("group", 1), k)) * 0.3).astype(np.float32)
    inputs = {"x": (np.float32, [1, c, length])}
    if const:
        inits.append(numpy_helper.from_array(w, "w"))
    else:
        inputs["w"] = (np.float32, list(w.shape))
    if bias:
        inits.append(numpy_helper.from_array(RNG.standard_normal(m).astype(np.float32), "b"))
    last = "c"
    if residual:
        nodes.append(helper.make_node("Add", ["c", "z"], ["s"]))
        last = "s"
    if gelu:
        nodes.append(helper.make_node("Gelu", [last], ["g"]))
        last = "g"
    nodes.append(helper.make_node("Identity", [last], ["y"]))
    model = graph_model(nodes, inputs, {"y": (np.float32, None)}, initializers=inits,
                        opset=20, ir_version=9)
    return model, w


def _run_ort(model, feeds):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]


CASES = {
    "stride5": (1, 32, 10, 400, {"strides": [5]}),
    "kernel3_pads": (32, 48, 3, 50, {"pads": [1, 1]}),
    "asymmetric_dilated": (16, 16, 3, 41, {"pads": [2, 0], "dilations": [2]}),
    "grouped": (32, 32, 8, 64, {"pads": [4, 3], "group": 4}),
    "depthwise": (16, 16, 5, 30, {"pads": [2, 2], "group": 16}),
}


@pytest.mark.parametrize("name", CASES)
def test_matches_onnxruntime(name, rewritten):
    c, m, k, length, attrs = CASES[name]
    model, _ = conv1d_model(c, m, k, length, **attrs)
    feeds = {"x": RNG.standard_normal((1, c, length)).astype(np.float32)}
    actual = onnxc.compile(model, cache_dir=False).run(None, feeds)[0]
    np.testing.assert_allclose(actual, _run_ort(model, feeds), rtol=TOL, atol=TOL)
    assert rewritten == ["graph.conv"]


def test_residual_and_activation_fused(rewritten):
    """Whisper's conv -> GELU and a residual: the 2-D conv_add keeps both."""
    model, _ = conv1d_model(16, 16, 3, 40, pads=[1, 1], residual=True, gelu=True)
    model.graph.input.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 16, 40]))
    feeds = {"x": RNG.standard_normal((1, 16, 40)).astype(np.float32),
             "z": RNG.standard_normal((1, 16, 40)).astype(np.float32)}
    actual = onnxc.compile(model, cache_dir=False).run(None, feeds)[0]
    np.testing.assert_allclose(actual, _run_ort(model, feeds), rtol=TOL, atol=TOL)
    assert rewritten == ["graph.conv_add"]


def test_runtime_length(rewritten):
    """A length known only at run time: compiled once, run at several lengths."""
    model, _ = conv1d_model(8, 16, 3, 40, strides=[2], pads=[1, 1])
    model.graph.input[0].type.tensor_type.shape.dim[2].dim_param = "T"
    compiled = onnxc.compile(model, cache_dir=False)
    for length in (7, 40, 129):
        feeds = {"x": RNG.standard_normal((1, 8, length)).astype(np.float32)}
        np.testing.assert_allclose(compiled.run(None, feeds)[0], _run_ort(model, feeds),
                                   rtol=TOL, atol=TOL)
    assert rewritten == ["graph.conv"]


def test_weight_given_at_run_time_stays_plain(rewritten):
    model, w = conv1d_model(4, 4, 3, 20, const=False)
    feeds = {"x": RNG.standard_normal((1, 4, 20)).astype(np.float32), "w": w}
    actual = onnxc.compile(model, cache_dir=False).run(None, feeds)[0]
    np.testing.assert_allclose(actual, _run_ort(model, feeds), rtol=TOL, atol=TOL)
    assert rewritten == []
