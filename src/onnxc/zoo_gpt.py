"""A small GPT decoder with a symbolic sequence axis and a growing KV cache (opset 23).

The form of a Hugging Face GPT exported for generation, written node by node: token ids and
their positions `[1, seq]`; per layer a pre-LayerNorm block whose Q, K and V projections feed
opset-23 Attention with `is_causal=1` and, in the decode model, the layer's cache
`past_key` / `past_value` `[1, heads, past, head_dim]`, returning the grown cache
`present_*` `[1, heads, past + seq, head_dim]`; a GELU MLP; a final LayerNorm and the
logits `[1, seq, vocab]` from the tied embedding. Generation runs the prefill model (no
cache) once on the prompt, then the decode model once per token, each compiled once.
Weights are seeded random (N(0, 0.02)-like, LayerNorm gamma 1), so every kernel sees
realistic magnitudes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 23


@dataclass(frozen=True)
class GptConfig:
    vocab: int = 96
    width: int = 64
    heads: int = 4
    layers: int = 2
    max_positions: int = 512

    @property
    def head_dim(self) -> int:
        return self.width // self.heads


GPT_TINY = GptConfig()


def gpt(config: GptConfig = GPT_TINY, with_past: bool = False, seed: int = 0) -> onnx.ModelProto:
    """The prefill model (`with_past=False`) or the decode model with a KV cache."""
    rng = np.random.default_rng(seed)
    c, h, d = config.width, config.heads, config.head_dim
    inits: list[onnx.TensorProto] = []
    nodes: list[onnx.NodeProto] = []

    def weight(name: str, shape: list[int], scale: float = 0.08) -> str:
        inits.append(numpy_helper.from_array(
            (rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    def constant(name: str, array: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(array, name))
        return name

    def node(op: str, inputs: list[str], outputs: list[str] | str, **attrs) -> str:
        outs = [outputs] if isinstance(outputs, str) else outputs
        nodes.append(helper.make_node(op, inputs, outs, name=outs[0], **attrs))
        return outs[0]

    def layer_norm(x: str, name: str) -> str:
        scale = constant(f"{name}.gamma", np.ones(c, np.float32))
        bias = constant(f"{name}.beta", np.zeros(c, np.float32))
        return node("LayerNormalization", [x, scale, bias], name, axis=-1, epsilon=1e-5)

    def linear(x: str, name: str, n_in: int, n_out: int) -> str:
        y = node("MatMul", [x, weight(f"{name}.w", [n_in, n_out])], f"{name}.mm")
        return node("Add", [y, weight(f"{name}.b", [n_out], 0.02)], name)

    emb = weight("wte", [config.vocab, c], 0.3)
    pos = weight("wpe", [config.max_positions, c], 0.1)
    x = node("Add", [node("Gather", [emb, "input_ids"], "tok_emb"),
                     node("Gather", [pos, "position_ids"], "pos_emb")], "h0")
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, "seq"]),
              helper.make_tensor_value_info("position_ids", TensorProto.INT64, [1, "seq"])]
    outputs = []
    for layer in range(config.layers):
        p = f"l{layer}"
        a = layer_norm(x, f"{p}.ln1")
        q, k, v = (linear(a, f"{p}.{kind}", c, c) for kind in "qkv")
        attention_inputs = [q, k, v]
        attention_outputs = [f"{p}.attn"]
        if with_past:
            past = [f"past_key_{layer}", f"past_value_{layer}"]
            attention_inputs += ["", *past]
            attention_outputs += [f"present_key_{layer}", f"present_value_{layer}"]
            inputs += [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, h, "past", d])
                       for n in past]
            outputs += [helper.make_tensor_value_info(n, TensorProto.FLOAT,
                                                      [1, h, "total", d])
                        for n in attention_outputs[1:]]
        else:  # the prompt's keys and values start the cache: [1, seq, C] -> [1, H, seq, D]
            heads_shape = constant(f"{p}.heads_shape", np.array([1, -1, h, d], np.int64))
            for kind, value in (("key", k), ("value", v)):
                split = node("Reshape", [value, heads_shape], f"{p}.{kind}_heads")
                name = f"present_{kind}_{layer}"
                node("Transpose", [split], name, perm=[0, 2, 1, 3])
                outputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT,
                                                             [1, h, "seq", d]))
        attended = node("Attention", attention_inputs, attention_outputs, is_causal=1,
                        q_num_heads=h, kv_num_heads=h)
        x = node("Add", [x, linear(attended, f"{p}.proj", c, c)], f"{p}.res1")
        m = layer_norm(x, f"{p}.ln2")
        up = node("Gelu", [linear(m, f"{p}.fc", c, 4 * c)], f"{p}.gelu")
        x = node("Add", [x, linear(up, f"{p}.fc2", 4 * c, c)], f"{p}.res2")
    final = layer_norm(x, "ln_f")
    tied = constant("wte_t", numpy_helper.to_array(inits[0]).T.copy())
    node("MatMul", [final, tied], "logits")
    outputs.insert(0, helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                                    [1, "seq", config.vocab]))
    graph = helper.make_graph(nodes, "gpt_with_past" if with_past else "gpt", inputs,
                              outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="onnxc.zoo_gpt")
    model.ir_version = 10
    return model


def cache_from(outputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The decode model's cache inputs from a run's `present_*` outputs."""
    return {name.replace("present_", "past_"): value for name, value in outputs.items()
            if name.startswith("present_")}
