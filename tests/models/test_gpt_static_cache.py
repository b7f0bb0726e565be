"""A small GPT decoding 64 tokens with a static KV cache, compiled once, against onnxruntime.

The decode step (built here with onnx.helper, opset 24) takes one token, its position and a
fixed-size cache per layer ([1, heads, 64, head_dim]). It writes the new keys and values at
the position with TensorScatter, and attends over the cache with opset-23 Attention under a
mask of the positions written so far. That is a static cache (the form of HF transformers'
StaticCache): the shapes never change, so one compile serves every step. The test
decodes greedily for 64 steps, feeding onnxc's own token and caches back, and compares every
step's logits and caches with onnxruntime's on the same inputs. A position past the cache is
a run-time error (the checked position lookup, before TensorScatter's checked write),
not a write past the buffer.

Tolerance: rtol 1e-4 / atol 1e-5 on logits and caches (f32 attention, LayerNorm and GELU in
another order), and the same greedy token at every step. Cold, then warm from the cache.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as TP
from onnx import helper as h

from onnxc.errors import InvalidInputError

VOCAB, WIDTH, HEADS, LAYERS, MAX_LEN = 32, 32, 4, 2, 64
RTOL, ATOL = 1e-4, 1e-5


class _GraphBuilder:
    """Nodes and seeded initializers of one ONNX graph."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []

    def weight(self, name: str, shape: list[int], scale: float = 0.2) -> str:
        data = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        return self.constant(name, data)

    def constant(self, name: str, array: np.ndarray) -> str:
        self.initializers.append(onnx.numpy_helper.from_array(np.asarray(array), name))
        return name

    def node(self, op: str, inputs: list[str], output: str, **attrs) -> str:
        self.nodes.append(h.make_node(op, inputs, [output], **attrs))
        return output

    def layer_norm(self, x: str, name: str, width: int) -> str:
        scale = self.constant(f"{name}_scale", np.ones(width, np.float32))
        bias = self.constant(f"{name}_bias", np.zeros(width, np.float32))
        return self.node("LayerNormalization", [x, scale, bias], name, axis=-1, epsilon=1e-5)


def gpt_decode_step(vocab: int, width: int, heads: int, layers: int, max_len: int,
                    seed: int = 0) -> onnx.ModelProto:
    """One decode step of a pre-LayerNorm GPT with a static KV cache (random weights)."""
    g = _GraphBuilder(seed)
    head_dim = width // heads
    g.weight("emb", [vocab, width], 0.5)
    g.weight("pos_emb", [max_len, width], 0.1)
    g.constant("heads_shape", np.array([1, 1, heads, head_dim], np.int64))
    g.constant("width_shape", np.array([1, 1, width], np.int64))
    g.constant("positions", np.arange(max_len, dtype=np.int64))
    g.constant("mask_shape", np.array([1, 1, 1, max_len], np.int64))
    x = g.node("Add", [g.node("Gather", ["emb", "token"], "token_emb", axis=0),    # [1, 1, C]
                       g.node("Gather", ["pos_emb", "pos"], "pos_e", axis=0)], "x0")
    visible = g.node("LessOrEqual", ["positions", "pos"], "visible")            # [T]
    mask = g.node("Reshape", [visible, "mask_shape"], "mask")                   # [1, 1, 1, T]
    caches = []
    for layer in range(layers):
        normed = g.layer_norm(x, f"ln1_{layer}", width)
        per_head = {}
        for kind in "qkv":
            flat = g.node("MatMul", [normed, g.weight(f"w{kind}_{layer}", [width, width])],
                          f"{kind}_{layer}")
            split = g.node("Reshape", [flat, "heads_shape"], f"{kind}_heads_{layer}")
            per_head[kind] = g.node("Transpose", [split], f"{kind}_t_{layer}",
                                    perm=[0, 2, 1, 3])                           # [1, H, 1, D]
        for kind in "kv":  # the new key / value written at `pos`
            caches.append(g.node("TensorScatter", [f"past_{kind}_{layer}", per_head[kind], "pos"],
                                 f"present_{kind}_{layer}", axis=-2))
        attended = g.node("Attention", [per_head["q"], caches[-2], caches[-1], mask],
                          f"att_{layer}")
        merged = g.node("Reshape", [g.node("Transpose", [attended], f"att_t_{layer}",
                                           perm=[0, 2, 1, 3]), "width_shape"], f"att_r_{layer}")
        x = g.node("Add", [x, g.node("MatMul", [merged, g.weight(f"wo_{layer}", [width, width])],
                                     f"o_{layer}")], f"x1_{layer}")
        up = g.node("MatMul", [g.layer_norm(x, f"ln2_{layer}", width),
                               g.weight(f"w_up_{layer}", [width, 4 * width])], f"up_{layer}")
        down = g.node("MatMul", [g.node("Gelu", [up], f"gelu_{layer}"),
                                 g.weight(f"w_down_{layer}", [4 * width, width])],
                      f"down_{layer}")
        x = g.node("Add", [x, down], f"x2_{layer}")
    g.node("MatMul", [g.layer_norm(x, "ln_final", width),
                      g.node("Transpose", ["emb"], "emb_t", perm=[1, 0])], "logits")
    cache = [1, heads, max_len, head_dim]
    inputs = [h.make_tensor_value_info("token", TP.INT64, [1, 1]),
              h.make_tensor_value_info("pos", TP.INT64, [1])]
    inputs += [h.make_tensor_value_info(f"past_{kind}_{layer}", TP.FLOAT, cache)
               for layer in range(layers) for kind in "kv"]
    outputs = [h.make_tensor_value_info("logits", TP.FLOAT, [1, 1, vocab])]
    outputs += [h.make_tensor_value_info(name, TP.FLOAT, cache) for name in caches]
    graph = h.make_graph(g.nodes, "gpt_decode_step", inputs, outputs,
                         initializer=g.initializers)
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 24)])
    onnx.checker.check_model(model, full_check=True)
    return model


def _cache_names() -> list[str]:
    return [f"past_{kv}_{layer}" for layer in range(LAYERS) for kv in "kv"]


@pytest.mark.models
def test_gpt_decodes_64_tokens_with_one_compile(cache_pass) -> None:
    model = gpt_decode_step(VOCAB, WIDTH, HEADS, LAYERS, MAX_LEN)
    compiled = cache_pass.compile(model)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    cache_shape = (1, HEADS, MAX_LEN, WIDTH // HEADS)
    caches = [np.zeros(cache_shape, np.float32) for _ in _cache_names()]
    token = np.array([[1]], np.int64)
    seen = set()
    for step in range(MAX_LEN):
        pos = np.array([step], np.int64)
        expected = session.run(None, {"token": token, "pos": pos,
                                      **dict(zip(_cache_names(), caches))})
        actual = cache_pass.outputs(compiled(token, pos, *caches))
        for got, want in zip(actual, expected, strict=True):
            np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
        assert int(np.argmax(actual[0])) == int(np.argmax(expected[0]))
        token = np.array([[int(np.argmax(actual[0]))]], np.int64)
        seen.add(int(token[0, 0]))
        caches = list(actual[1:])
    assert len(seen) > 1  # the tokens change as the context grows
    assert all(np.abs(c).sum(axis=(0, 1, 3)).min() > 0 for c in caches)  # every slot written
    with pytest.raises(InvalidInputError, match="out of range"):  # the position table's gather
        compiled(token, np.array([MAX_LEN], np.int64), *caches)
