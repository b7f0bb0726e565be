"""A BERT-base-style encoder built node by node the way torch.onnx exports HF BertLayer.

No checkpoint ships with the packages we may use, so `bert_encoder` writes the graph that
`torch.onnx.export(BertEncoder, opset_version=17)` produces for static shapes: every Linear
is MatMul by a [in, out] initializer plus Add of the bias; heads are split by Reshape and
Transpose (K straight to [B, H, D, S], as torch's transpose peephole leaves it); the scores
are Div by sqrt(head_dim), plus the extended mask (1 - mask) * -10000, Softmax(-1); LayerNorm
is decomposed (ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div, Mul, Add) as torch
writes it below opset 17 and HF models often are; GELU is the exact erf form
((x * (erf(x / 1.4142135) + 1)) * 0.5). Weights are seeded random (BERT's N(0, 0.02) init,
LayerNorm gamma near 1), so the benchmark and the fusions see a faithful graph.
"""

from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

BERT_TINY = {"hidden": 32, "heads": 2, "seq": 8}
"""The test configuration: bert_encoder(layers=2, **BERT_TINY)."""

OPSET = 17


class _Graph:
    """Collects nodes and initializers with unique names."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.count = 0

    def name(self, hint: str) -> str:
        self.count += 1
        return f"{hint}_{self.count}"

    def const(self, array: np.ndarray, hint: str) -> str:
        name = self.name(hint)
        self.inits.append(numpy_helper.from_array(array, name))
        return name

    def node(self, op: str, inputs: list[str], hint: str | None = None, **attrs) -> str:
        out = self.name(hint or op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], name=f"/{out}", **attrs))
        return out

    def scalar(self, value: float) -> str:
        return self.const(np.array(value, np.float32), "const")

    def linear(self, x: str, n_in: int, n_out: int, hint: str) -> str:
        w = self.const((self.rng.standard_normal((n_in, n_out)) * 0.02).astype(np.float32),
                       f"{hint}.weight")
        b = self.const((self.rng.standard_normal(n_out) * 0.02).astype(np.float32),
                       f"{hint}.bias")
        return self.node("Add", [self.node("MatMul", [x, w]), b])

    def layer_norm(self, x: str, width: int, hint: str, eps: float = 1e-12) -> str:
        mean = self.node("ReduceMean", [x], axes=[-1], keepdims=1)
        centred = self.node("Sub", [x, mean])
        var = self.node("ReduceMean", [self.node("Pow", [centred, self.scalar(2.0)])],
                        axes=[-1], keepdims=1)
        std = self.node("Sqrt", [self.node("Add", [var, self.scalar(eps)])])
        normed = self.node("Div", [centred, std])
        gamma = self.const((1 + 0.1 * self.rng.standard_normal(width)).astype(np.float32),
                           f"{hint}.weight")
        beta = self.const((0.1 * self.rng.standard_normal(width)).astype(np.float32),
                          f"{hint}.bias")
        return self.node("Add", [self.node("Mul", [normed, gamma]), beta])

    def gelu(self, x: str) -> str:
        erf = self.node("Erf", [self.node("Div", [x, self.scalar(1.4142135381698608)])])
        return self.node("Mul", [self.node("Mul", [x, self.node("Add", [erf, self.scalar(1.0)])]),
                                 self.scalar(0.5)])


def _layer(g: _Graph, h: str, mask: str, hidden: int, heads: int, seq: int, i: int) -> str:
    d = hidden // heads
    split = g.const(np.array([1, seq, heads, d], np.int64), "shape")
    merge = g.const(np.array([1, seq, hidden], np.int64), "shape")
    p = f"encoder.layer.{i}"

    def heads_of(x: str, perm: list[int]) -> str:
        return g.node("Transpose", [g.node("Reshape", [x, split])], perm=perm)

    q = heads_of(g.linear(h, hidden, hidden, f"{p}.attention.self.query"), [0, 2, 1, 3])
    k = heads_of(g.linear(h, hidden, hidden, f"{p}.attention.self.key"), [0, 2, 3, 1])
    v = heads_of(g.linear(h, hidden, hidden, f"{p}.attention.self.value"), [0, 2, 1, 3])
    scores = g.node("Div", [g.node("MatMul", [q, k]), g.scalar(math.sqrt(d))])
    probs = g.node("Softmax", [g.node("Add", [scores, mask])], axis=-1)
    context = g.node("Transpose", [g.node("MatMul", [probs, v])], perm=[0, 2, 1, 3])
    context = g.node("Reshape", [context, merge])
    attn = g.linear(context, hidden, hidden, f"{p}.attention.output.dense")
    h1 = g.layer_norm(g.node("Add", [attn, h]), hidden, f"{p}.attention.output.LayerNorm")
    inter = g.gelu(g.linear(h1, hidden, 4 * hidden, f"{p}.intermediate.dense"))
    out = g.linear(inter, 4 * hidden, hidden, f"{p}.output.dense")
    return g.layer_norm(g.node("Add", [out, h1]), hidden, f"{p}.output.LayerNorm")


def bert_encoder(
    layers: int = 2, hidden: int = 768, heads: int = 12, seq: int = 128, seed: int = 0
) -> onnx.ModelProto:
    """`layers` BERT encoder layers on hidden_states [1, seq, hidden] with a 0/1
    attention_mask [1, seq]; output last_hidden_state [1, seq, hidden]."""
    from onnxc.zoo import REFERENCE_IR_VERSION

    if hidden % heads:
        raise ValueError(f"hidden size {hidden} is not a multiple of heads {heads}")
    g = _Graph(np.random.default_rng(seed))
    # HF's get_extended_attention_mask: (1 - mask[:, None, None, :]) * -10000.
    axes = g.const(np.array([1, 2], np.int64), "axes")
    expanded = g.node("Unsqueeze", ["attention_mask", axes])
    inverted = g.node("Sub", [g.scalar(1.0), expanded])
    mask = g.node("Mul", [inverted, g.scalar(-10000.0)], hint="extended_attention_mask")
    h = "hidden_states"
    for i in range(layers):
        h = _layer(g, h, mask, hidden, heads, seq, i)
    g.nodes.append(helper.make_node("Identity", [h], ["last_hidden_state"]))
    graph = helper.make_graph(
        g.nodes, "bert_encoder",
        [helper.make_tensor_value_info("hidden_states", TensorProto.FLOAT, [1, seq, hidden]),
         helper.make_tensor_value_info("attention_mask", TensorProto.FLOAT, [1, seq])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [1, seq, hidden])],
        initializer=g.inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="onnxc.zoo_bert")
    model.ir_version = REFERENCE_IR_VERSION
    onnx.checker.check_model(model)
    return model


def bert_inputs(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    """Hidden states ~ N(0, 1) and a mask whose last quarter is padding, in the model's
    input types (a float16 conversion of the model takes float16 inputs)."""
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    dtypes = {i.name: onnx.helper.tensor_dtype_to_np_dtype(i.type.tensor_type.elem_type)
              for i in model.graph.input}
    rng = np.random.default_rng(seed)
    mask = np.ones((1, shape[1]), np.float32)
    mask[:, shape[1] - shape[1] // 4:] = 0.0
    return {"hidden_states": rng.standard_normal(shape).astype(dtypes["hidden_states"]),
            "attention_mask": mask.astype(dtypes["attention_mask"])}
