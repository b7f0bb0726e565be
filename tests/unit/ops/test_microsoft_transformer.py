"""com.microsoft contrib ops (frontend/onnx_ops_microsoft*.py) against onnxruntime 1.32's CPU
kernels: one-node models built with tests/single_op.py in the com.microsoft domain (opset 1),
compiled by onnxc and run beside onnxruntime; every optional input and attribute, symbolic
sizes where the ops meet them in real models, and the refusals (UnsupportedOpError /
ModelLoadError naming the node, the attribute or input). BiasAdd (no onnxruntime CPU
kernel) and FusedConv's Silu (refused by onnxruntime's CPU kernel) are checked against numpy.

Tolerance: rtol 1e-5, atol 1e-5 (float32, summed in another order), except where a key mask
of -10000 is added to a score (the sum keeps ~1e-3 of it: atol 2e-3 on the raw scores).
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import onnxc
from onnxc.errors import InvalidInputError, ModelLoadError, UnsupportedOpError
from tests.single_op import graph_model, reference_run, run_both, single_op_model

MS = {"": 17, "com.microsoft": 1}
RTOL = ATOL = 1e-5


def rand(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def ms_model(op, inputs, outputs=("y",), *, attrs=None, node_inputs=None, initializers=None,
             domain="com.microsoft", opset=None, node_outputs=None):
    """One `op` node of com.microsoft (or `domain`) on graph inputs `inputs` ({name: array
    or (dtype, shape)}), IR 8 for onnxruntime."""
    specs = {k: v if isinstance(v, tuple) else (v.dtype, list(v.shape))
             for k, v in inputs.items()}
    return single_op_model(op, specs, outputs, attrs=attrs, node_inputs=node_inputs,
                           node_outputs=node_outputs, initializers=initializers,
                           domain=domain, opset=opset or MS, ir_version=8, node_name="n")


def check(op, feeds, outputs=("y",), *, attrs=None, node_inputs=None, initializers=None,
          domain="com.microsoft", rtol=RTOL, atol=ATOL, node_outputs=None):
    model = ms_model(op, feeds, outputs, attrs=attrs, node_inputs=node_inputs,
                     initializers=initializers, domain=domain, node_outputs=node_outputs)
    return run_both(model, feeds, rtol=rtol, atol=atol)


def refused(op, feeds, error, match, outputs=("y",), **kwargs):
    model = ms_model(op, feeds, outputs, **kwargs)
    with pytest.raises(error, match=match):
        onnxc.compile(model)


# ---------------------------------------------------------------------------- domain handling


def test_a_model_that_does_not_import_com_microsoft_runs_it_as_version_1():
    """onnxruntime's optimizer at opt_level 0 writes com.microsoft nodes and imports only the
    default domain; onnxruntime runs such a model, and so does onnxc."""
    rng = np.random.default_rng(0)
    feeds = {"x": rand(rng, 2, 3, 8)}
    model = ms_model("FastGelu", feeds, opset={"": 17})
    assert [o.domain for o in model.opset_import] == [""]
    run_both(model, feeds, rtol=RTOL, atol=ATOL)


def test_an_unknown_com_microsoft_op_is_refused_naming_op_node_domain_and_opset():
    nodes = [helper.make_node("FastGelu", ["x"], ["a"], name="ok", domain="com.microsoft"),
             helper.make_node("NhwcConv", ["a"], ["b"], name="bad", domain="com.microsoft"),
             helper.make_node("DecoderMaskedMultiHeadAttention", ["b"], ["y"],
                              domain="com.microsoft")]
    model = graph_model(nodes, {"x": (np.float32, [2])}, ["y"], opset=MS)
    with pytest.raises(UnsupportedOpError) as info:
        onnxc.compile(model)
    err = info.value
    assert (err.op_type, err.node_name, err.opset) == ("com.microsoft.NhwcConv", "bad", 1)
    assert "domain 'com.microsoft' opset 1" in err.detail
    assert "com.microsoft.DecoderMaskedMultiHeadAttention" in err.detail


def test_other_domains_stay_refused():
    node = helper.make_node("Conv", ["x"], ["y"], name="nchwc", domain="com.microsoft.nchwc")
    model = graph_model([node], {"x": (np.float32, [2])}, ["y"], opset=MS)
    with pytest.raises(ModelLoadError, match="'nchwc'.*does not import"):
        onnxc.compile(model)


def test_a_converter_error_names_the_contrib_op():
    rng = np.random.default_rng(0)
    refused("BiasGelu", {"x": rand(rng, 2, 8), "b": rand(rng, 2, 8)}, ModelLoadError,
            r"node 'n' \(com\.microsoft\.BiasGelu, opset 1\): bias \[2, 8\] must be 1-D")


# ---------------------------------------------------------------------------- activations


def test_gelu_fast_gelu_bias_gelu_quick_gelu():
    rng = np.random.default_rng(1)
    x, bias = rand(rng, 2, 3, 16), rand(rng, 16)
    check("Gelu", {"x": x})
    check("FastGelu", {"x": x})
    check("FastGelu", {"x": x, "bias": bias})
    check("BiasGelu", {"x": x, "bias": bias})
    check("QuickGelu", {"x": x})  # alpha 1.702
    check("QuickGelu", {"x": x}, attrs={"alpha": 1.0})


def test_bias_add_against_numpy():
    """BiasAdd has no onnxruntime CPU kernel: X + bias + skip, checked against numpy."""
    rng = np.random.default_rng(2)
    feeds = {"x": rand(rng, 2, 5, 8), "bias": rand(rng, 8), "skip": rand(rng, 2, 5, 8)}
    (got,) = onnxc.compile(ms_model("BiasAdd", feeds)).run(None, feeds)
    np.testing.assert_allclose(got, feeds["x"] + feeds["bias"] + feeds["skip"], rtol=RTOL,
                               atol=ATOL)
    refused("BiasAdd", {"x": rand(rng, 2, 8), "bias": rand(rng, 8), "skip": rand(rng, 2, 8)},
            ModelLoadError, "must be 3-D")


def test_activation_refusals():
    rng = np.random.default_rng(3)
    refused("FastGelu", {"x": rand(rng, 2, 8), "b": rand(rng, 3)}, ModelLoadError,
            r"bias \[3\] must be 1-D of 8")
    refused("Gelu", {"x": np.arange(4, dtype=np.int32)}, UnsupportedOpError, "float types only")


# ---------------------------------------------------------------------------- normalizations


@pytest.mark.parametrize("skip_shape", [(2, 3, 16), (1, 3, 16), (3, 16)])
def test_skip_layer_normalization_all_outputs(skip_shape):
    """gamma, beta, bias, the statistics (float32 [B, S, 1]) and the input + skip + bias."""
    rng = np.random.default_rng(4)
    feeds = {"x": rand(rng, 2, 3, 16), "skip": rand(rng, *skip_shape), "gamma": rand(rng, 16),
             "beta": rand(rng, 16), "bias": rand(rng, 16)}
    check("SkipLayerNormalization", feeds, ("y", "mean", "inv_std", "sum"),
          attrs={"epsilon": 1e-5})


def test_skip_layer_normalization_optional_inputs_and_outputs():
    rng = np.random.default_rng(5)
    x, skip, gamma = rand(rng, 2, 3, 16), rand(rng, 2, 3, 16), rand(rng, 16)
    check("SkipLayerNormalization", {"x": x, "skip": skip, "gamma": gamma})  # epsilon 1e-12
    check("SkipLayerNormalization", {"x": x, "skip": skip, "gamma": gamma, "bias": rand(rng, 16)},
          ("y", "sum"), node_inputs=["x", "skip", "gamma", "", "bias"],
          node_outputs=["y", "", "", "sum"])


def test_skip_simplified_layer_normalization():
    """RMS normalization of input + skip (+ bias); onnxruntime's `mean` output is zeros."""
    rng = np.random.default_rng(6)
    feeds = {"x": rand(rng, 2, 3, 16), "skip": rand(rng, 2, 3, 16), "gamma": rand(rng, 16),
             "bias": rand(rng, 16)}
    check("SkipSimplifiedLayerNormalization", feeds, ("y", "mean", "inv_std", "sum"),
          attrs={"epsilon": 1e-6})
    feeds = {"x": rand(rng, 6, 16), "skip": rand(rng, 6, 16), "gamma": rand(rng, 16)}
    check("SkipSimplifiedLayerNormalization", feeds)


@pytest.mark.parametrize("axis", [-1, 1])
def test_simplified_layer_normalization_in_the_default_domain(axis):
    """onnxruntime registers (and its optimizer writes) it in the default domain."""
    rng = np.random.default_rng(7)
    x = rand(rng, 2, 3, 16)
    scale = rand(rng, *x.shape[axis % 3:])
    check("SimplifiedLayerNormalization", {"x": x, "scale": scale}, ("y", "inv_std_var"),
          attrs={"axis": axis, "epsilon": 1e-5}, domain="")


def test_embed_layer_normalization_with_segments_and_mask():
    rng = np.random.default_rng(8)
    feeds = {"ids": rng.integers(0, 30, (2, 5)).astype(np.int32),
             "segments": rng.integers(0, 2, (2, 5)).astype(np.int32),
             "words": rand(rng, 30, 16), "positions": rand(rng, 8, 16),
             "segment_table": rand(rng, 2, 16), "gamma": rand(rng, 16), "beta": rand(rng, 16),
             "mask": np.array([[1, 1, 1, 0, 0], [1, 0, 1, 1, 1]], np.int32)}
    outputs = {"y": None, "mask_index": (np.int32, None), "sum": None}
    check("EmbedLayerNormalization", feeds, outputs, attrs={"epsilon": 1e-5})


def test_embed_layer_normalization_with_position_ids_and_without_segments_or_mask():
    """As onnxruntime's optimizer writes it for Whisper's decoder: no segments, position ids
    [1, S], the mask_index zeros."""
    rng = np.random.default_rng(9)
    feeds = {"ids": rng.integers(0, 30, (2, 4)).astype(np.int32), "words": rand(rng, 30, 16),
             "positions": rand(rng, 8, 16), "gamma": rand(rng, 16), "beta": rand(rng, 16),
             "position_ids": np.array([[3, 1, 0, 2]], np.int32)}
    outputs = {"y": None, "mask_index": (np.int32, None), "sum": None}
    check("EmbedLayerNormalization", feeds, outputs,
          node_inputs=["ids", "", "words", "positions", "", "gamma", "beta", "",
                       "position_ids"])


def test_embed_layer_normalization_refuses_ids_outside_its_tables_in_the_run():
    """The lookups' run-time checks (ONNX Gather's: a negative id counts from the end, where
    onnxruntime's kernel refuses it)."""
    rng = np.random.default_rng(10)
    feeds = {"ids": np.array([[1, 2, 3]], np.int32), "words": rand(rng, 30, 16),
             "positions": rand(rng, 8, 16), "gamma": rand(rng, 16), "beta": rand(rng, 16)}
    model = ms_model("EmbedLayerNormalization", feeds,
                     node_inputs=["ids", "", "words", "positions", "", "gamma", "beta"])
    compiled = onnxc.compile(model)
    compiled.run(None, feeds)
    for bad in (-31, 30):
        with pytest.raises(InvalidInputError, match="node .n. .*out of range"):
            compiled.run(None, {**feeds, "ids": np.array([[1, bad, 3]], np.int32)})
    refused("EmbedLayerNormalization", {**feeds, "segments": feeds["ids"]}, ModelLoadError,
            "segment_ids and segment_embedding go together",
            node_inputs=["ids", "segments", "words", "positions", "", "gamma", "beta"])


def test_normalizations_with_symbolic_sizes():
    """One compile, several batch and sequence sizes."""
    rng = np.random.default_rng(11)
    specs = {"x": (np.float32, ["batch", "seq", 16]), "skip": (np.float32, ["batch", "seq", 16])}
    model = single_op_model("SkipLayerNormalization", specs, ["y", "sum"],
                            node_outputs=["y", "", "", "sum"],
                            initializers={"gamma": rand(rng, 16), "beta": rand(rng, 16)},
                            domain="com.microsoft", opset=MS, ir_version=8)
    compiled = onnxc.compile(model)
    for batch, seq in ((1, 1), (2, 7), (3, 4)):
        feeds = {"x": rand(rng, batch, seq, 16), "skip": rand(rng, batch, seq, 16)}
        got = compiled.run(None, feeds)
        for g, e in zip(got, reference_run(model, feeds), strict=True):
            np.testing.assert_allclose(g, e, rtol=RTOL, atol=ATOL)


# ---------------------------------------------------------------------------- fused ops


@pytest.mark.parametrize("flags", [
    {"transA": 1}, {"transB": 1, "alpha": 0.25}, {"transBatchA": 1},
    {"transBatchB": 1, "transB": 1}, {"transBatchA": 1, "transBatchB": 1, "transA": 1,
                                      "transB": 1, "alpha": -2.0}])
def test_fused_matmul_batched(flags):
    """op(X): transBatch moves the first axis after the other batch axes, trans swaps the
    last two; logical A [3, 2, 4, 5] and B [3, 2, 5, 6]."""
    rng = np.random.default_rng(12)

    def physical(logical, batch, trans):
        x = np.swapaxes(logical, -1, -2) if trans else logical
        return np.ascontiguousarray(x.transpose(2, 0, 1, 3) if batch else x)  # inverse

    a = physical(rand(rng, 3, 2, 4, 5), flags.get("transBatchA"), flags.get("transA"))
    b = physical(rand(rng, 3, 2, 5, 6), flags.get("transBatchB"), flags.get("transB"))
    check("FusedMatMul", {"a": a, "b": b}, attrs=flags)


def test_fused_matmul_2d_and_1d():
    rng = np.random.default_rng(13)
    check("FusedMatMul", {"a": rand(rng, 5, 4), "b": rand(rng, 6, 5)},
          attrs={"transA": 1, "transB": 1, "alpha": 0.5})
    check("FusedMatMul", {"a": rand(rng, 4), "b": rand(rng, 6, 4)}, attrs={"transB": 1})
    refused("FusedMatMul", {"a": rand(rng, 2, 3, 4), "b": rand(rng, 5, 4)}, ModelLoadError,
            "transBatchA / transBatchB need two operands of one rank >= 3",
            attrs={"transB": 1, "transBatchA": 1})


@pytest.mark.parametrize("activation", [
    None, {"activation": "Relu"}, {"activation": "Tanh"}, {"activation": "Sigmoid"},
    {"activation": "LeakyRelu", "activation_params": [0.2]},
    {"activation": "Clip", "activation_params": [-0.5, 0.7]},
    {"activation": "HardSigmoid", "activation_params": [0.3, 0.4]}])
def test_fused_conv(activation):
    rng = np.random.default_rng(14)
    feeds = {"x": rand(rng, 1, 4, 9, 9), "w": rand(rng, 6, 2, 3, 3), "b": rand(rng, 6)}
    attrs = {"group": 2, "strides": [2, 2], "pads": [1, 1, 1, 1], **(activation or {})}
    check("FusedConv", feeds, attrs=attrs)


def test_fused_conv_adds_z_before_the_activation():
    rng = np.random.default_rng(15)
    feeds = {"x": rand(rng, 1, 3, 8, 8), "w": rand(rng, 4, 3, 3, 3), "b": rand(rng, 4),
             "z": rand(rng, 1, 4, 8, 8)}
    check("FusedConv", feeds, attrs={"activation": "Relu", "auto_pad": "SAME_UPPER"})


def test_fused_conv_silu_against_numpy_and_refusals():
    """onnxruntime 1.32's CPU kernel refuses Silu; onnxc computes x * sigmoid(x)."""
    rng = np.random.default_rng(16)
    feeds = {"x": rand(rng, 1, 2, 6, 6), "w": rand(rng, 3, 2, 1, 1)}
    (got,) = onnxc.compile(ms_model("FusedConv", feeds, attrs={"activation": "Silu"})).run(
        None, feeds)
    conv = np.einsum("nchw,oc->nohw", feeds["x"], feeds["w"][:, :, 0, 0])
    np.testing.assert_allclose(got, conv / (1 + np.exp(-conv)), rtol=1e-5, atol=1e-5)
    refused("FusedConv", feeds, UnsupportedOpError, "activation 'Elu'",
            attrs={"activation": "Elu"})
    refused("FusedConv", feeds, ModelLoadError, r"takes activation_params \['alpha'\]",
            attrs={"activation": "LeakyRelu"})


@pytest.mark.parametrize("activation", [
    {"activation": "Relu"}, {"activation": "LeakyRelu", "activation_alpha": 0.1},
    {"activation": "Elu", "activation_alpha": 0.7}, {"activation": "Selu",
                                                     "activation_alpha": 1.5,
                                                     "activation_gamma": 2.0},
    {"activation": "HardSigmoid", "activation_alpha": 0.3, "activation_beta": 0.4},
    {"activation": "ParametricSoftplus", "activation_alpha": 1.5, "activation_beta": 0.5},
    {"activation": "ScaledTanh", "activation_alpha": 0.5, "activation_beta": 2.0},
    {"activation": "Softplus"}, {"activation": "ThresholdedRelu", "activation_alpha": 0.2}])
def test_fused_gemm(activation):
    rng = np.random.default_rng(17)
    feeds = {"a": rand(rng, 4, 3), "b": rand(rng, 5, 4), "c": rand(rng, 5)}
    check("FusedGemm", feeds, attrs={"transA": 1, "transB": 1, "alpha": 0.5, "beta": 2.0,
                                     **activation})


def test_fused_gemm_refusals():
    """As onnxruntime's kernel: the activation and the parameters it takes are required."""
    rng = np.random.default_rng(18)
    feeds = {"a": rand(rng, 3, 4), "b": rand(rng, 4, 5)}
    refused("FusedGemm", feeds, UnsupportedOpError, "activation None")
    refused("FusedGemm", feeds, ModelLoadError, "requires attribute activation_alpha",
            attrs={"activation": "LeakyRelu"})
    refused("FusedGemm", feeds, ModelLoadError, "requires attribute activation_gamma",
            attrs={"activation": "Selu", "activation_alpha": 1.0})


# ---------------------------------------------------------------------------- RotaryEmbedding


@pytest.mark.parametrize("interleaved", [0, 1])
def test_rotary_embedding_4d_and_offset_positions(interleaved):
    rng = np.random.default_rng(19)
    cos, sin = rand(rng, 32, 8), rand(rng, 32, 8)
    x = rand(rng, 2, 3, 5, 16)
    for positions in (rng.integers(0, 32, (2, 5)).astype(np.int64), np.array([7], np.int64)):
        check("RotaryEmbedding", {"x": x, "positions": positions, "cos": cos, "sin": sin},
              attrs={"interleaved": interleaved})


def test_rotary_embedding_3d_partial_and_derived_heads():
    rng = np.random.default_rng(20)
    x, positions = rand(rng, 2, 5, 48), rng.integers(0, 32, (2, 5)).astype(np.int64)
    check("RotaryEmbedding", {"x": x, "positions": positions, "cos": rand(rng, 32, 4),
                              "sin": rand(rng, 32, 4)},
          attrs={"num_heads": 3, "rotary_embedding_dim": 8})
    check("RotaryEmbedding", {"x": x, "positions": positions, "cos": rand(rng, 32, 8),
                              "sin": rand(rng, 32, 8)})  # heads of 16 from the cache


def test_rotary_embedding_refusals():
    rng = np.random.default_rng(21)
    feeds = {"x": rand(rng, 1, 2, 3, 8), "positions": np.zeros((1, 3), np.int64),
             "cos": rand(rng, 8, 4), "sin": rand(rng, 8, 4)}
    refused("RotaryEmbedding", feeds, UnsupportedOpError, "attribute scale",
            attrs={"scale": 0.5})
    refused("RotaryEmbedding", feeds, UnsupportedOpError, "is_packed_batching",
            attrs={"is_packed_batching": 1})
    x3 = {**feeds, "x": rand(rng, 1, 3, 16)}
    refused("RotaryEmbedding", x3, ModelLoadError, "rotary_embedding_dim needs num_heads",
            attrs={"rotary_embedding_dim": 8})


# ---------------------------------------------------------------------------- Attention


ATTENTION_INPUTS = ["x", "weights", "bias", "mask", "past", "attention_bias"]


def _attention(rng, batch=2, seq=4, hidden=16):
    return {"x": rand(rng, batch, seq, hidden), "weights": rand(rng, hidden, 3 * hidden),
            "bias": rand(rng, 3 * hidden)}


@pytest.mark.parametrize("mask", ["lengths", "ends_and_starts", "raw", "raw_3d", "3b+2"])
@pytest.mark.parametrize("unidirectional", [0, 1])
def test_attention_mask_index_forms(mask, unidirectional):
    rng = np.random.default_rng(22)
    feeds = _attention(rng)
    feeds["mask"] = {
        "lengths": np.array([3, 4], np.int32),
        "ends_and_starts": np.array([4, 3, 1, 0], np.int32),
        "raw": np.array([[1, 0, 1, 1], [1, 1, 1, 0]], np.int32),
        "raw_3d": (rng.random((2, 4, 4)) > 0.3).astype(np.int32) | np.eye(4, dtype=np.int32),
        "3b+2": np.array([3, 2, 0, 3, 6, 0, 3, 6], np.int32),
    }[mask]
    check("Attention", feeds, attrs={"num_heads": 2, "unidirectional": unidirectional},
          node_inputs=ATTENTION_INPUTS[:4])


def test_attention_past_present_bias_scale_and_hidden_sizes():
    rng = np.random.default_rng(23)
    feeds = _attention(rng)
    feeds["mask"] = np.ones((2, 7), np.int32)
    feeds["mask"][1, 2] = 0
    feeds["past"] = rand(rng, 2, 2, 2, 3, 8)
    check("Attention", feeds, ("y", "present"),
          attrs={"num_heads": 2, "unidirectional": 1, "mask_filter_value": -1e4},
          node_inputs=ATTENTION_INPUTS[:5])
    feeds = _attention(rng)
    feeds["attention_bias"] = rand(rng, 1, 2, 4, 4)
    check("Attention", feeds, attrs={"num_heads": 2, "scale": 0.3},
          node_inputs=["x", "weights", "bias", "", "", "attention_bias"])
    feeds = {"x": rand(rng, 2, 4, 16), "weights": rand(rng, 16, 40)}
    check("Attention", feeds, attrs={"num_heads": 4, "qkv_hidden_sizes": [16, 16, 8]})


def test_attention_filter_value_where_a_row_is_all_hidden():
    """A row whose every key is hidden averages all of them (finite mask_filter_value), as
    onnxruntime does; BERT's optimizer writes the lowest float."""
    rng = np.random.default_rng(24)
    feeds = _attention(rng)
    feeds["mask"] = np.array([[1, 1, 0, 1], [0, 0, 0, 0]], np.int32)
    check("Attention", feeds, attrs={"num_heads": 2, "mask_filter_value": -3.4028234e38},
          node_inputs=ATTENTION_INPUTS[:4])


def test_attention_refusals():
    rng = np.random.default_rng(25)
    feeds = _attention(rng)
    refused("Attention", feeds, UnsupportedOpError, "do_rotary",
            attrs={"num_heads": 2, "do_rotary": 1})
    refused("Attention", feeds, UnsupportedOpError, "past_present_share_buffer",
            attrs={"num_heads": 2, "past_present_share_buffer": 1})
    refused("Attention", {**feeds, "mask": np.ones((2, 1, 4, 4), np.int32)}, UnsupportedOpError,
            "4-D key mask", attrs={"num_heads": 2}, node_inputs=ATTENTION_INPUTS[:4])
    refused("Attention", feeds, ModelLoadError, "qkv_hidden_sizes",
            attrs={"num_heads": 3})


def test_attention_with_symbolic_batch_and_sequence():
    """BERT's form (mask_index from EmbedLayerNormalization's count), one compile."""
    rng = np.random.default_rng(26)
    specs = {"x": (np.float32, ["batch", "seq", 16]), "mask": (np.int32, ["batch"])}
    model = single_op_model("Attention", specs, ["y"], attrs={"num_heads": 4},
                            initializers={"weights": rand(rng, 16, 48), "bias": rand(rng, 48)},
                            node_inputs=["x", "weights", "bias", "mask"],
                            domain="com.microsoft", opset=MS, ir_version=8)
    compiled = onnxc.compile(model)
    for batch, seq in ((1, 1), (2, 5), (3, 8)):
        feeds = {"x": rand(rng, batch, seq, 16),
                 "mask": rng.integers(1, seq + 1, batch).astype(np.int32)}
        (got,) = compiled.run(None, feeds)
        np.testing.assert_allclose(got, reference_run(model, feeds)[0], rtol=RTOL, atol=ATOL)


# ---------------------------------------------------------------------------- MultiHeadAttention

MHA_INPUTS = ["q", "k", "v", "bias", "key_padding_mask", "attention_bias", "past_key",
              "past_value"]


def _mha(rng, batch=2, seq=4, kv=5, hidden=16):
    return {"q": rand(rng, batch, seq, hidden), "k": rand(rng, batch, kv, hidden),
            "v": rand(rng, batch, kv, hidden), "bias": rand(rng, 3 * hidden)}


@pytest.mark.parametrize("mask", [None, "lengths", "raw", "raw_3d", "3b+2"])
def test_multi_head_attention_cross_with_key_padding_masks(mask):
    rng = np.random.default_rng(27)
    feeds = _mha(rng)
    if mask is not None:
        feeds["key_padding_mask"] = {
            "lengths": np.array([3, 5], np.int32),
            "raw": np.array([[1, 0, 1, 1, 0], [1, 1, 1, 0, 1]], np.int32),
            "raw_3d": (rng.random((2, 4, 5)) > 0.3).astype(np.int32) | 1 - np.tri(
                4, 5, -1, dtype=np.int32),
            "3b+2": np.array([3, 5, 0, 4, 8, 0, 3, 8], np.int32),
        }[mask]
    feeds["attention_bias"] = rand(rng, 2, 1, 4, 5)
    used = [n for n in MHA_INPUTS[:6] if n in feeds]
    check("MultiHeadAttention", feeds, attrs={"num_heads": 2, "mask_filter_value": -100.0,
                                              "scale": 0.4},
          node_inputs=[n if n in used else "" for n in MHA_INPUTS[:6]])


def test_multi_head_attention_self_with_past_and_present():
    rng = np.random.default_rng(28)
    feeds = _mha(rng, kv=4)
    feeds.update(key_padding_mask=np.ones((2, 7), np.int32), past_key=rand(rng, 2, 2, 3, 8),
                 past_value=rand(rng, 2, 2, 3, 8))
    feeds["key_padding_mask"][0, 5] = 0
    check("MultiHeadAttention", feeds, ("y", "present_key", "present_value"),
          attrs={"num_heads": 2, "unidirectional": 1}, node_inputs=MHA_INPUTS[:5] + [
              "", "past_key", "past_value"])


def test_multi_head_attention_projected_keys_and_the_qk_output():
    """Cross attention on keys / values already in [B, N, L, H] (the bias then only for Q),
    and the qk output: the scaled scores with the masks, before the softmax."""
    rng = np.random.default_rng(29)
    feeds = {"q": rand(rng, 2, 4, 16), "k": rand(rng, 2, 2, 5, 8), "v": rand(rng, 2, 2, 5, 8),
             "bias": rand(rng, 48)}
    check("MultiHeadAttention", feeds, ("y", "present_key", "present_value"),
          attrs={"num_heads": 2})
    feeds = _mha(rng)
    feeds["key_padding_mask"] = np.array([[1, 0, 1, 1, 1], [1, 1, 1, 1, 0]], np.int32)
    outputs = {"y": None, "present_key": None, "present_value": None,
               "qk": (np.float32, None)}
    check("MultiHeadAttention", feeds, outputs, attrs={"num_heads": 2}, atol=2e-3,
          node_inputs=MHA_INPUTS[:5])


def test_multi_head_attention_with_symbolic_sizes_and_a_mask_of_its_own_symbol():
    """Self attention with a past, causal, its key padding mask [batch, "past + seq"] (a
    dim_param of its own, as exporters write it): one compile, the mask's length checked
    against past + seq in the run."""
    rng = np.random.default_rng(31)
    specs = {"q": (np.float32, ["batch", "seq", 16]), "k": (np.float32, ["batch", "seq", 16]),
             "v": (np.float32, ["batch", "seq", 16]),
             "key_padding_mask": (np.int32, ["batch", "past + seq"]),
             "past_key": (np.float32, ["batch", 2, "past", 8]),
             "past_value": (np.float32, ["batch", 2, "past", 8])}
    model = single_op_model("MultiHeadAttention", specs, ["y", "present_key", "present_value"],
                            attrs={"num_heads": 2, "unidirectional": 1},
                            initializers={"bias": rand(rng, 48)},
                            node_inputs=MHA_INPUTS[:5] + ["", "past_key", "past_value"],
                            domain="com.microsoft", opset=MS, ir_version=8)
    compiled = onnxc.compile(model)

    def feeds(batch, seq, past, keys=None):
        mask = np.ones((batch, keys or past + seq), np.int32)
        mask[0, 0] = 0
        return {"q": rand(rng, batch, seq, 16), "k": rand(rng, batch, seq, 16),
                "v": rand(rng, batch, seq, 16), "key_padding_mask": mask,
                "past_key": rand(rng, batch, 2, past, 8),
                "past_value": rand(rng, batch, 2, past, 8)}

    for batch, seq, past in ((1, 3, 0), (2, 4, 3), (2, 1, 5)):
        given = feeds(batch, seq, past)
        for g, e in zip(compiled.run(None, given), reference_run(model, given), strict=True):
            np.testing.assert_allclose(g, e, rtol=RTOL, atol=ATOL)
    with pytest.raises(InvalidInputError, match="past___seq"):
        compiled.run(None, feeds(2, 4, 3, keys=8))


def test_multi_head_attention_refusals():
    rng = np.random.default_rng(30)
    feeds = _mha(rng)
    refused("MultiHeadAttention", {"q": rand(rng, 2, 4, 2, 3, 8)}, UnsupportedOpError,
            "packed QKV", attrs={"num_heads": 2})
    refused("MultiHeadAttention", feeds, UnsupportedOpError, "unidirectional=1 with 5 keys",
            attrs={"num_heads": 2, "unidirectional": 1})
    refused("MultiHeadAttention", {**feeds, "cache": np.zeros((2, 1, 8), np.int32)},
            UnsupportedOpError, "cache_indirection", attrs={"num_heads": 2},
            node_inputs=["q", "k", "v", "bias", "", "", "", "", "", "cache"])


# ---------------------------------------------------------------------------- GroupQueryAttention

GQA_INPUTS = ["query", "key", "value", "past_key", "past_value", "seqlens_k",
              "total_sequence_length", "cos_cache", "sin_cache", "position_ids",
              "attention_bias", "head_sink"]
HQ, HKV, HEAD = 4, 2, 16


def _gqa(rng, batch, seq, past, seqlens=None):
    feeds = {"query": rand(rng, batch, seq, HQ * HEAD), "key": rand(rng, batch, seq, HKV * HEAD),
             "value": rand(rng, batch, seq, HKV * HEAD)}
    if past is not None:
        feeds.update(past_key=rand(rng, batch, HKV, past, HEAD),
                     past_value=rand(rng, batch, HKV, past, HEAD))
    total = (past or 0) + seq
    feeds["seqlens_k"] = np.full(batch, total - 1, np.int32) if seqlens is None else \
        np.array(seqlens, np.int32)
    feeds["total_sequence_length"] = np.array(total, np.int32)
    return feeds


def _check_gqa(feeds, attrs=None):
    attrs = {"num_heads": HQ, "kv_num_heads": HKV, **(attrs or {})}
    check("GroupQueryAttention", feeds, ("y", "present_key", "present_value"), attrs=attrs,
          node_inputs=[n if n in feeds else "" for n in GQA_INPUTS])


@pytest.mark.parametrize("attrs", [
    {}, {"local_window_size": 3}, {"causal": 0}, {"softcap": 2.0}, {"scale": 0.3}])
@pytest.mark.parametrize("batch, seq, past", [(1, 4, 5), (2, 1, 5), (2, 3, None)])
def test_group_query_attention(attrs, batch, seq, past):
    """A prefill after a cache (batch 1: onnxruntime's limit), a decode step of two, a first
    prompt without a past."""
    _check_gqa(_gqa(np.random.default_rng(31), batch, seq, past), attrs)


def test_group_query_attention_ragged_batch_packed_qkv_and_attention_bias():
    """Entries of different lengths (each new key written at its seqlens_k, the rows after
    it zero), packed QKV, an attention bias."""
    rng = np.random.default_rng(32)
    feeds = _gqa(rng, 2, 1, 5, seqlens=[5, 3])
    _check_gqa(feeds)
    packed = np.concatenate([feeds.pop("query"), feeds.pop("key"), feeds.pop("value")], -1)
    _check_gqa({"query": packed, **feeds})
    feeds = _gqa(rng, 2, 1, 5)
    feeds["attention_bias"] = rand(rng, 2, 1, 1, 6)
    _check_gqa(feeds)


@pytest.mark.parametrize("batch, seq, past", [(1, 4, 5), (2, 1, 5)])
def test_group_query_attention_sinks(batch, seq, past):
    """head_sink (a logit per head more in the softmax's denominator) and smooth_softmax
    (that logit 0), with softcap and a window."""
    rng = np.random.default_rng(36)
    feeds = _gqa(rng, batch, seq, past)
    _check_gqa(feeds, {"smooth_softmax": 1})
    _check_gqa({**feeds, "head_sink": rand(rng, HQ)}, {"softcap": 3.0, "local_window_size": 2})


@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("positions", [False, True])
@pytest.mark.parametrize("batch, seq, past", [(1, 3, 5), (2, 1, 5), (2, 2, 0)])
def test_group_query_attention_rotary(interleaved, positions, batch, seq, past):
    """do_rotary: positions p_b + s, or position_ids; at the first prompt (past 0)
    position_ids[0, 0] + s for every entry, as onnxruntime reads them."""
    rng = np.random.default_rng(33)
    feeds = _gqa(rng, batch, seq, past)
    feeds.update(cos_cache=rand(rng, 32, HEAD // 2), sin_cache=rand(rng, 32, HEAD // 2))
    if positions:
        feeds["position_ids"] = rng.integers(0, 24, (batch, seq)).astype(np.int64)
    _check_gqa(feeds, {"do_rotary": 1, "rotary_interleaved": interleaved})


def test_group_query_attention_decodes_with_symbolic_sizes_from_one_compile():
    """Symbolic batch, sequence and past; a prefill from an empty cache then decode steps
    feeding back the present cache, with rotary positions from the cache length."""
    rng = np.random.default_rng(34)
    specs = {"query": (np.float32, ["batch", "seq", HQ * HEAD]),
             "key": (np.float32, ["batch", "seq", HKV * HEAD]),
             "value": (np.float32, ["batch", "seq", HKV * HEAD]),
             "past_key": (np.float32, ["batch", HKV, "past", HEAD]),
             "past_value": (np.float32, ["batch", HKV, "past", HEAD]),
             "seqlens_k": (np.int32, ["batch"]), "total_sequence_length": (np.int32, [])}
    model = single_op_model("GroupQueryAttention", specs, ["y", "present_key", "present_value"],
                            attrs={"num_heads": HQ, "kv_num_heads": HKV, "do_rotary": 1},
                            initializers={"cos_cache": rand(rng, 32, HEAD // 2),
                                          "sin_cache": rand(rng, 32, HEAD // 2)},
                            domain="com.microsoft", opset=MS, ir_version=8)
    compiled = onnxc.compile(model)
    feeds = _gqa(rng, 1, 5, 0)
    for _ in range(3):
        ours = compiled.run(None, feeds)
        for g, e in zip(ours, reference_run(model, feeds), strict=True):
            np.testing.assert_allclose(g, e, rtol=RTOL, atol=ATOL)
        past = ours[1].shape[2]
        feeds = {**_gqa(rng, 1, 1, past), "past_key": ours[1], "past_value": ours[2]}
    with pytest.raises(InvalidInputError, match="total_sequence_length"):
        compiled.run(None, {**feeds, "total_sequence_length": np.array(3, np.int32)})


def test_group_query_attention_refusals():
    rng = np.random.default_rng(35)
    feeds = _gqa(rng, 1, 1, 4)
    base = {"num_heads": HQ, "kv_num_heads": HKV}
    names = [n if n in feeds else "" for n in GQA_INPUTS]
    for attrs, match in (({"k_quant_type": "PER_TENSOR"}, "k_quant_type"),
                         ({"sliding_window_cache": 1}, "sliding_window_cache"),
                         ({"kv_cache_bit_width": 4}, "kv_cache_bit_width"),
                         ({"qk_output": 1}, "qk_output"),
                         ({"local_window_size": 2, "causal": 0}, "local_window_size")):
        error = ModelLoadError if match == "local_window_size" else UnsupportedOpError
        refused("GroupQueryAttention", feeds, error, match, attrs={**base, **attrs},
                node_inputs=names)
    refused("GroupQueryAttention", {**feeds, "scale": np.ones(1, np.float32)},
            UnsupportedOpError, "k_scale", attrs=base, node_inputs=names + ["scale"])
    constant = ms_model("GroupQueryAttention", {k: v for k, v in feeds.items()
                                                if k != "total_sequence_length"},
                        attrs=base, node_inputs=names,
                        initializers={"total_sequence_length": np.array(3, np.int32)})
    with pytest.raises(UnsupportedOpError, match="static one"):
        onnxc.compile(constant)


def test_every_contrib_converter_has_an_example_for_the_op_support_matrix():
    """frontend/onnx_ops_microsoft_examples.py gives the op-support matrix a one-node model
    of every converter (as onnx's node tests do for the default domain), each importable."""
    from onnxc.frontend import import_onnx
    from onnxc.frontend.onnx_converters import DOMAIN_CONVERTERS
    from onnxc.frontend.onnx_ops_microsoft import ONNX_DOMAIN_CONVERTERS
    from onnxc.frontend.onnx_ops_microsoft_examples import examples

    cases = examples()
    assert set(cases) == ({("com.microsoft", op) for op in DOMAIN_CONVERTERS["com.microsoft"]}
                          | {("", op) for op in ONNX_DOMAIN_CONVERTERS})
    for (model, _), in cases.values():
        import_onnx(model)
