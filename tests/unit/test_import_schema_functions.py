"""Ops onnxc has no converter for, imported as the function body their ONNX schema defines
(frontend/onnx_schema_functions.py), compiled and run against onnx.reference's own kernels
of those ops (op_swiglu.py, op_causal_conv_with_state.py, op_linear_attention.py), which
do not go through the function.

Tolerances: rtol/atol 1e-5 for elementwise and convolution bodies (float32, a few terms);
1e-4 for LinearAttention, whose recurrent state sums t products per step in another order
than the reference.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import onnxc
from onnxc.errors import UnsupportedOpError
from onnxc.frontend.onnx_converters import checked_model
from tests.single_op import graph_model, reference_run, run_both, single_op_model

RNG = np.random.default_rng(5)
F32 = np.float32


def _f(*shape) -> np.ndarray:
    return RNG.standard_normal(shape).astype(F32)


def test_swiglu_is_its_function_body():
    a, b = _f(3, 8), _f(3, 8)
    model = single_op_model("SwiGLU", {"a": a, "b": b}, {"y": None}, attrs={"alpha": 0.5},
                            opset=28)
    ops = {n.op_type for n in checked_model(model).graph.node}
    assert "SwiGLU" not in ops and "Mul" in ops
    run_both(model, {"a": a, "b": b}, reference="onnx", rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("activation", ["none", "silu"])
@pytest.mark.parametrize("past,bias", [(False, False), (True, False), (True, True)])
def test_causal_conv_with_state_at_several_symbolic_sizes(activation, past, bias):
    channels, k = 4, 3
    inputs = {"input": (F32, ["b", channels, "t"]), "weight": (F32, [channels, 1, k])}
    names = ["input", "weight", "", ""]
    if bias:
        inputs["bias"], names[2] = (F32, [channels]), "bias"
    if past:
        inputs["past_state"], names[3] = (F32, ["b", channels, k - 1]), "past_state"
    model = single_op_model("CausalConvWithState", inputs, {"y": None, "state": None},
                            node_inputs=names, attrs={"activation": activation}, opset=27)
    compiled = onnxc.compile(model)
    for batch, length in ((1, 5), (3, 1), (2, 9)):
        feeds = {"input": _f(batch, channels, length), "weight": _f(channels, 1, k)}
        if bias:
            feeds["bias"] = _f(channels)
        if past:
            feeds["past_state"] = _f(batch, channels, k - 1)
        expected = reference_run(model, feeds, "onnx")
        for got, want in zip(compiled.run(None, feeds), expected, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("update_rule", ["linear", "gated", "delta", "gated_delta"])
def test_linear_attention_update_rules(update_rule):
    batch, length, heads, dk, dv = 2, 5, 2, 8, 4
    feeds = {"query": _f(batch, length, heads * dk), "key": _f(batch, length, heads * dk),
             "value": _f(batch, length, heads * dv),
             "past_state": _f(batch, heads, dk, dv)}
    names = ["query", "key", "value", "past_state", "", ""]
    if "gated" in update_rule:  # decay in (0, 1): exp of a negative log-decay
        feeds["decay"] = np.exp(-np.abs(_f(batch, length, heads * dk)))
        names[4] = "decay"
    if "delta" in update_rule:
        feeds["beta"] = 1 / (1 + np.exp(-_f(batch, length, heads))).astype(F32)
        names[5] = "beta"
    feeds = {k: v.astype(F32) for k, v in feeds.items()}
    model = single_op_model("LinearAttention", feeds, {"y": None, "state": None},
                            node_inputs=names, opset=27,
                            attrs={"q_num_heads": heads, "kv_num_heads": heads,
                                   "update_rule": update_rule})
    run_both(model, feeds, reference="onnx", rtol=1e-4, atol=1e-4)


def test_a_model_without_such_ops_is_left_as_it_is():
    model = single_op_model("Relu", {"x": (F32, [2])}, {"y": None})
    assert checked_model(model) is model


def test_an_op_inside_a_loop_body_is_not_expanded():
    """Only top-level nodes are expanded: inside a subgraph SwiGLU is still refused."""
    body = helper.make_graph(
        [helper.make_node("SwiGLU", ["a", "a"], ["s"]),
         helper.make_node("Identity", ["cond"], ["cond_out"])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("a", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("s", TensorProto.FLOAT, [2])])
    loop = helper.make_node("Loop", ["n", "", "x"], ["y"], body=body)
    model = graph_model([loop], {"x": (F32, [2])}, {"y": None},
                        initializers={"n": np.array(2, np.int64)}, opset=28)
    with pytest.raises(UnsupportedOpError, match="SwiGLU"):
        onnxc.compile(model)
