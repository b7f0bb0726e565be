"""QAttention and QEmbedLayerNormalization (frontend/onnx_ops_microsoft_dynamic_quant.py)
as one-node com.microsoft models beside onnxruntime 1.32: 8-bit weights per tensor and per
column, int8 and uint8, with and without zero points, a key mask, a unidirectional past
state; and the refusals. Float results: rtol 1e-5, atol 1e-5 of the largest magnitude
(onnxruntime sums the input projection in int32, onnxc dequantized products in f32). The
models onnxruntime's quantize_dynamic writes are in tests/models/test_ort_optimized.py (a
BERT) and tests/models/test_torch_rnn.py (DynamicQuantizeLSTM, an LSTM tagger)."""

from __future__ import annotations

import numpy as np
import pytest

import onnxc
from onnxc.errors import ModelLoadError, UnsupportedOpError
from tests.unit.ops.test_microsoft_quant import compare, ms_model, q

B, S, H, HEADS = 2, 5, 16, 4


@pytest.mark.parametrize("w_dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("per_column", [False, True])
@pytest.mark.parametrize("with_mask", [False, True])
def test_qattention(w_dtype, per_column, with_mask):
    rng = np.random.default_rng(int(per_column) * 2 + int(with_mask))
    x = q(rng, np.uint8, B, S, H)
    columns = 3 * H if per_column else 1
    inits = {
        "w": q(rng, w_dtype, H, 3 * H) // 2,
        "bias": rng.standard_normal(3 * H).astype(np.float32),
        "x_scale": np.array(0.02, np.float32),
        "w_scale": rng.uniform(0.01, 0.03, columns).astype(np.float32).reshape(
            (columns,) if per_column else ()),
    }
    feeds = {"x": x}
    names = ["x", "w", "bias", "x_scale", "w_scale", "", "x_zero", "w_zero"]
    inits["x_zero"] = np.array(118, np.uint8)
    inits["w_zero"] = np.full((columns,) if per_column else (), 3, w_dtype)
    if with_mask:
        feeds["mask"] = np.array([S, 3], np.int32)
        names[5] = "mask"
    specs = {k: v for k, v in feeds.items()}
    model = ms_model("QAttention", specs, inits, attrs={"num_heads": HEADS},
                     node_inputs=names)
    compare(model, feeds, rtol=1e-5, atol=1e-5)


def test_qattention_unidirectional_with_past_and_present():
    rng = np.random.default_rng(7)
    feeds = {"x": q(rng, np.uint8, 1, 2, H),
             "past": rng.standard_normal((2, 1, HEADS, 3, H // HEADS)).astype(np.float32)}
    inits = {"w": q(rng, np.int8, H, 3 * H) // 2,
             "bias": rng.standard_normal(3 * H).astype(np.float32),
             "x_scale": np.array(0.03, np.float32), "w_scale": np.array(0.02, np.float32)}
    model = ms_model("QAttention", feeds, inits, attrs={"num_heads": HEADS,
                                                         "unidirectional": 1},
                     node_inputs=["x", "w", "bias", "x_scale", "w_scale", "", "", "", "past"],
                     outputs=("y", "present"))
    compare(model, feeds, rtol=1e-5, atol=1e-5)


def test_qattention_refuses_a_run_time_weight():
    rng = np.random.default_rng(8)
    feeds = {"x": q(rng, np.uint8, 1, 2, H), "w": q(rng, np.int8, H, 3 * H)}
    model = ms_model("QAttention", feeds,
                     {"bias": np.zeros(3 * H, np.float32),
                      "x_scale": np.array(0.1, np.float32),
                      "w_scale": np.array(0.1, np.float32)}, attrs={"num_heads": HEADS},
                     node_inputs=["x", "w", "bias", "x_scale", "w_scale"])
    with pytest.raises(UnsupportedOpError, match="weight.* must be a constant"):
        onnxc.compile(model)


def test_qembed_layer_normalization():
    rng = np.random.default_rng(9)
    vocab, positions, hidden = 30, 16, 8
    feeds = {"ids": rng.integers(0, vocab, (B, S)).astype(np.int32),
             "segments": rng.integers(0, 2, (B, S)).astype(np.int32),
             "mask": np.array([[1] * S, [1, 1, 1, 0, 0]], np.int32)}
    inits = {}
    names = ["ids", "segments"]
    for table, rows in (("word", vocab), ("position", positions), ("segment", 2)):
        inits[table] = q(rng, np.uint8, rows, hidden)
        names.append(table)
    inits["gamma"], inits["beta"] = q(rng, np.uint8, hidden), q(rng, np.uint8, hidden)
    names += ["gamma", "beta", "mask"]
    for table in ("word", "position", "segment", "gamma", "beta"):
        inits[f"{table}_scale"] = np.array(rng.uniform(0.005, 0.02), np.float32)
        names.append(f"{table}_scale")
    for table in ("word", "position", "segment", "gamma", "beta"):
        inits[f"{table}_zero"] = np.array(rng.integers(100, 150), np.uint8)
        names.append(f"{table}_zero")
    model = ms_model("QEmbedLayerNormalization", feeds, inits, attrs={"epsilon": 1e-5},
                     node_inputs=names, outputs=("y", "mask_index"))
    compare(model, feeds, rtol=1e-5, atol=1e-5)


def test_qembed_layer_normalization_refuses_a_per_row_scale():
    rng = np.random.default_rng(10)
    feeds = {"ids": rng.integers(0, 4, (1, 3)).astype(np.int32)}
    inits = {"word": q(rng, np.uint8, 4, 8), "position": q(rng, np.uint8, 4, 8),
             "gamma": q(rng, np.uint8, 8), "beta": q(rng, np.uint8, 8),
             "ws": np.full(4, 0.1, np.float32), "ps": np.array(0.1, np.float32),
             "gs": np.array(0.1, np.float32), "bs": np.array(0.1, np.float32),
             "wz": np.array(0, np.uint8), "pz": np.array(0, np.uint8),
             "gz": np.array(0, np.uint8), "bz": np.array(0, np.uint8)}
    model = ms_model("QEmbedLayerNormalization", feeds, inits,
                     node_inputs=["ids", "", "word", "position", "", "gamma", "beta", "",
                                  "ws", "ps", "", "gs", "bs", "wz", "pz", "", "gz", "bz"],
                     outputs=("y", "mask_index"))
    with pytest.raises(ModelLoadError, match="word_embedding scale has 4 elements"):
        onnxc.compile(model)
