"""Differential fuzzing: random small valid graphs, compiled by onnxc, against onnx.reference.

Hypothesis draws a graph of 1-4 supported ops (elementwise unary and binary with
broadcasting, MatMul, Gemm, Conv, pools, Softmax, Reshape, Transpose, Concat, Slice,
reductions, and Gather / GatherElements / ScatterElements with run-time int64 indices) over
1-2 float32 inputs of rank 1-4 with dims 1-5, plus constant weights; the op's operands are
any earlier values, so the graphs are DAGs, sometimes with two outputs. onnxc's outputs must
match `onnx.reference.ReferenceEvaluator` to rtol 1e-4 and
atol 1e-5 * max(1, largest |reference value|) (f32 sums cancel: the absolute error of a
near-zero sum scales with its terms). NaN and Inf must sit at the same places.

About one index input in four holds an index outside its axis (past either end, by up to
2**40): then the run must raise `InvalidInputError` naming one of those nodes, as
onnxruntime refuses the run, instead of returning anything.

Examples: 25 in the default suite (derandomized, so the suite is repeatable; ~10-20 s),
`ONNXC_FUZZ_EXAMPLES=N` for N random ones (e.g. 2000, see docs/robustness.md).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import onnxc
from onnxc.errors import InvalidInputError

OPSET = 17
_ENV_EXAMPLES = os.environ.get("ONNXC_FUZZ_EXAMPLES")
EXAMPLES = int(_ENV_EXAMPLES) if _ENV_EXAMPLES else 25
UNARY = ["Relu", "Sigmoid", "Tanh", "Abs", "Neg", "Exp", "LeakyRelu", "Softsign", "Erf",
         "Elu", "Clip"]
BINARY = ["Add", "Sub", "Mul", "Div", "Max", "Min"]
KINDS = ["unary", "binary", "matmul", "gemm", "conv", "pool", "global_pool", "softmax",
         "reshape", "transpose", "concat", "slice", "reduce", "index",
         "unary", "binary", "conv", "conv", "pool", "index"]  # repeats: drawn more often
_RANKS = {"unary": range(5), "binary": range(5), "matmul": range(2, 5), "gemm": (2,),
          "conv": (4,), "pool": (4,), "global_pool": (4,)}  # default: ranks 1-4


@dataclass
class GraphBuilder:
    """Values (name -> shape) and the nodes, inputs and weights that made them."""

    rng: np.random.Generator
    shapes: dict[str, list[int]] = field(default_factory=dict)
    nodes: list[onnx.NodeProto] = field(default_factory=list)
    inputs: list[onnx.ValueInfoProto] = field(default_factory=list)
    feeds: dict[str, np.ndarray] = field(default_factory=dict)
    weights: list[onnx.TensorProto] = field(default_factory=list)
    invalid: set[str] = field(default_factory=set)
    """nodes whose run-time indices are out of range: the run must refuse them"""

    def add_input(self, shape: list[int]) -> str:
        name = f"in{len(self.inputs)}"
        self.inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, shape))
        self.feeds[name] = self.rng.uniform(-2, 2, shape).astype(np.float32)
        self.shapes[name] = list(shape)
        return name

    def add_indices(self, values: np.ndarray) -> str:
        """A run-time int64 index input (not a float value other ops may read)."""
        name = f"in{len(self.inputs)}"
        self.inputs.append(helper.make_tensor_value_info(name, TensorProto.INT64,
                                                         list(values.shape)))
        self.feeds[name] = values.astype(np.int64)
        return name

    def const(self, array: np.ndarray) -> str:
        name = f"c{len(self.weights)}"
        self.weights.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def weight(self, shape: list[int], low: float = -1.0, high: float = 1.0) -> str:
        return self.const(self.rng.uniform(low, high, shape).astype(np.float32))

    def node(self, op: str, inputs: list[str], shape: list[int], **attrs) -> str:
        out = f"v{len(self.nodes)}"
        self.nodes.append(helper.make_node(op, inputs, [out], name=f"n{len(self.nodes)}",
                                           **attrs))
        self.shapes[out] = list(shape)
        return out

    def model(self, outputs: list[str]) -> onnx.ModelProto:
        outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, self.shapes[o])
                for o in outputs]
        graph = helper.make_graph(self.nodes, "fuzz", self.inputs, outs, self.weights)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
        model.ir_version = 8
        return model


def _broadcast_shape(draw, shape: list[int]) -> list[int]:
    """A shape that broadcasts against `shape`: some leading dims dropped, some set to 1."""
    if not shape:
        return []
    drop = draw(st.integers(0, len(shape) - 1))
    return [1 if draw(st.booleans()) else d for d in shape[drop:]]


def _conv_out(size: int, k: int, pad: int, stride: int, dilation: int = 1) -> int:
    return (size + 2 * pad - ((k - 1) * dilation + 1)) // stride + 1


def _add_op(draw, g: GraphBuilder, x: str) -> str | None:
    """Append one random op reading `x` (and maybe other values); None if it cannot apply."""
    s = g.shapes[x]
    rank = len(s)
    kind = draw(st.sampled_from([k for k in KINDS if rank in _RANKS.get(k, range(1, 5))]
                                or ["unary", "binary"]))
    if kind == "unary":
        # onnx.reference's Softsign fails on 0-d arrays (np.divide's out= wants an array)
        op = draw(st.sampled_from(UNARY if rank else [u for u in UNARY if u != "Softsign"]))
        if op == "Clip":
            lo = draw(st.floats(-1.5, 0.0, width=32))
            return g.node(op, [x, g.const(np.float32(lo)), g.const(np.float32(lo + 1.0))], s)
        alpha = draw(st.sampled_from([0.01, 0.1, 0.5, 1.0]))
        attrs = {"alpha": alpha} if op in ("LeakyRelu", "Elu") else {}
        return g.node(op, [x], s, **attrs)
    if kind == "binary":
        op = draw(st.sampled_from(BINARY))
        others = [v for v, vs in g.shapes.items() if v != x and vs == s]
        source = draw(st.sampled_from(["const", "input"] + (["value"] if others else [])))
        if op == "Div":  # keep denominators away from zero
            other = g.weight(_broadcast_shape(draw, s), 0.5, 2.0)
            return g.node(op, [x, other], s)
        if source == "value":
            other = draw(st.sampled_from(others))
        elif source == "input":
            other = g.add_input(_broadcast_shape(draw, s))
        else:
            other = g.weight(_broadcast_shape(draw, s))
        operands = [x, other] if draw(st.booleans()) else [other, x]
        return g.node(op, operands, s)
    if kind == "index":
        return _add_index_op(draw, g, x)
    if kind == "matmul":
        n = draw(st.integers(1, 6))
        batched = rank > 2 and draw(st.booleans())
        w_shape = (s[:-2] if batched else []) + [s[-1], n]
        return g.node("MatMul", [x, g.weight(w_shape)], s[:-1] + [n])
    if kind == "gemm":
        trans_a, trans_b = draw(st.booleans()), draw(st.booleans())
        m, k = (s[1], s[0]) if trans_a else (s[0], s[1])
        n = draw(st.integers(1, 6))
        inputs = [x, g.weight([n, k] if trans_b else [k, n])]
        bias = draw(st.sampled_from(["none", "n", "mn", "1"]))
        if bias != "none":
            inputs.append(g.weight({"n": [n], "mn": [m, n], "1": [1]}[bias]))
        return g.node("Gemm", inputs, [m, n], transA=int(trans_a), transB=int(trans_b),
                      alpha=draw(st.floats(0.25, 2.0, width=32)),
                      beta=draw(st.floats(0.25, 2.0, width=32)))
    if kind == "conv":
        c = s[1]
        group = draw(st.sampled_from([d for d in (1, 2, c) if c % d == 0]))
        co = group * draw(st.integers(1, 3))
        pad, stride = draw(st.integers(0, 1)), draw(st.integers(1, 2))
        kh = draw(st.integers(1, min(3, s[2] + 2 * pad)))
        kw = draw(st.integers(1, min(3, s[3] + 2 * pad)))
        dilation = draw(st.integers(1, 2))
        oh, ow = (_conv_out(s[2], kh, pad, stride, dilation),
                  _conv_out(s[3], kw, pad, stride, dilation))
        if oh < 1 or ow < 1:
            dilation = 1
            oh, ow = _conv_out(s[2], kh, pad, stride), _conv_out(s[3], kw, pad, stride)
        inputs = [x, g.weight([co, c // group, kh, kw])]
        if draw(st.booleans()):
            inputs.append(g.weight([co]))
        return g.node("Conv", inputs, [s[0], co, oh, ow], kernel_shape=[kh, kw],
                      pads=[pad] * 4, strides=[stride] * 2, dilations=[dilation] * 2,
                      group=group)
    if kind == "pool":
        op = draw(st.sampled_from(["MaxPool", "AveragePool"]))
        kh, kw = draw(st.integers(1, min(3, s[2]))), draw(st.integers(1, min(3, s[3])))
        pad = draw(st.integers(0, min(kh, kw) // 2))
        stride = draw(st.integers(1, 2))
        oh, ow = _conv_out(s[2], kh, pad, stride), _conv_out(s[3], kw, pad, stride)
        attrs = {"kernel_shape": [kh, kw], "pads": [pad] * 4, "strides": [stride] * 2}
        if op == "AveragePool":
            attrs["count_include_pad"] = int(draw(st.booleans()))
        return g.node(op, [x], [s[0], s[1], oh, ow], **attrs)
    if kind == "global_pool":
        op = draw(st.sampled_from(["GlobalAveragePool", "GlobalMaxPool"]))
        return g.node(op, [x], [s[0], s[1], 1, 1])
    if kind == "softmax":
        axis = draw(st.integers(-rank, rank - 1))
        return g.node(draw(st.sampled_from(["Softmax", "LogSoftmax"])), [x], s, axis=axis)
    if kind == "reshape":
        split = draw(st.integers(0, rank))
        lead, rest = int(np.prod(s[:split])), int(np.prod(s[split:]))
        target, shape = draw(st.sampled_from([
            ([lead, rest], [lead, rest]), ([lead, -1], [lead, rest]),
            ([-1], [lead * rest]), ([1, lead * rest], [1, lead * rest])]))
        return g.node("Reshape", [x, g.const(np.array(target, np.int64))], shape)
    if kind == "transpose":
        perm = draw(st.permutations(list(range(rank))))
        return g.node("Transpose", [x], [s[p] for p in perm], perm=list(perm))
    if kind == "concat":
        axis = draw(st.integers(-rank, rank - 1))
        extra = draw(st.integers(1, 3))
        other_shape = list(s)
        other_shape[axis] = extra
        other = x if draw(st.booleans()) else g.weight(other_shape)
        out = list(s)
        out[axis] = s[axis] + (s[axis] if other == x else extra)
        return g.node("Concat", [x, other], out, axis=axis)
    if kind == "slice":
        axes = sorted(draw(st.sets(st.integers(0, rank - 1), min_size=1, max_size=rank)))
        starts, ends, steps, out = [], [], [], list(s)
        for a in axes:
            step = draw(st.sampled_from([1, 1, 2, -1]))
            start = draw(st.integers(-s[a], s[a] - 1))
            end = draw(st.integers(-s[a] - 2, s[a] + 2))  # out of range is clamped
            out[a] = len(range(*slice(start, end, step).indices(s[a])))  # ONNX's rule too
            starts.append(start)
            ends.append(end)
            steps.append(step)
        if any(n < 1 for n in out):
            return None
        consts = [g.const(np.array(v, np.int64)) for v in (starts, ends, axes, steps)]
        return g.node("Slice", [x, *consts], out)
    # reduce
    op = draw(st.sampled_from(["ReduceSum", "ReduceMean"]))
    axes = sorted(draw(st.sets(st.integers(0, rank - 1), min_size=1, max_size=rank)))
    keepdims = int(draw(st.booleans()))
    out = [1 if i in axes else d for i, d in enumerate(s)] if keepdims else \
        [d for i, d in enumerate(s) if i not in axes]
    if op == "ReduceSum":
        return g.node(op, [x, g.const(np.array(axes, np.int64))], out, keepdims=keepdims)
    return g.node(op, [x], out, axes=axes, keepdims=keepdims)


def _add_index_op(draw, g: GraphBuilder, x: str) -> str:
    """Gather, GatherElements or ScatterElements (reduction add: duplicates commute) of `x`
    with run-time indices, valid in [-extent, extent) or, sometimes, not."""
    s = g.shapes[x]
    rank = len(s)
    op = draw(st.sampled_from(["Gather", "GatherElements", "ScatterElements"]))
    axis = draw(st.integers(-rank, rank - 1))
    extent = s[axis]
    if op == "GatherElements":  # onnx.reference mishandles a negative axis here
        axis %= rank
    if op == "Gather":
        index_shape = [draw(st.integers(1, 3)) for _ in range(draw(st.integers(1, 2)))]
        out = s[:axis % rank] + index_shape + s[axis % rank + 1:]
    else:  # per-element indices: at most the data's extent along the other axes
        index_shape = [draw(st.integers(1, d)) if op == "ScatterElements" else d for d in s]
        index_shape[axis] = draw(st.integers(1, 3 if op == "GatherElements" else extent))
        out = index_shape if op == "GatherElements" else s
    values = g.rng.integers(-extent, extent, index_shape)
    if draw(st.integers(0, 3)) == 0:
        wrong = draw(st.sampled_from([extent, extent + 1, -extent - 1, 2**40, -2**40]))
        values.reshape(-1)[draw(st.integers(0, values.size - 1))] = wrong
        g.invalid.add(f"n{len(g.nodes)}")
    indices = g.add_indices(values)
    if op == "ScatterElements":
        updates = g.weight(index_shape)
        return g.node(op, [x, indices, updates], out, axis=axis, reduction="add")
    return g.node(op, [x, indices], out, axis=axis)


@st.composite
def graphs(draw) -> tuple[onnx.ModelProto, dict[str, np.ndarray], set[str]]:
    """A random valid model and its feeds."""
    g = GraphBuilder(np.random.default_rng(draw(st.integers(0, 2**32 - 1))))
    rank = draw(st.sampled_from([4, 1, 2, 2, 3, 4, 4, 4]))
    g.add_input([draw(st.integers(1, 5)) for _ in range(rank)])
    made: list[str] = []
    for _ in range(draw(st.integers(1, 4))):
        values = list(g.shapes)
        x = values[-1] if draw(st.booleans()) else draw(st.sampled_from(values))
        out = _add_op(draw, g, x)
        if out is not None:
            made.append(out)
    if not made:
        made.append(g.node("Relu", [next(iter(g.shapes))], g.shapes[next(iter(g.shapes))]))
    outputs = [made[-1]]
    if len(made) > 1 and draw(st.booleans()):
        outputs.insert(0, draw(st.sampled_from(made[:-1])))
    model = g.model(outputs)
    onnx.checker.check_model(model)
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    declared = {o.name: [d.dim_value for d in o.type.tensor_type.shape.dim]
                for o in model.graph.output}
    for o in inferred.graph.output:  # the generator's shape rules agree with ONNX's
        assert [d.dim_value for d in o.type.tensor_type.shape.dim] == declared[o.name], o.name
    return model, g.feeds, g.invalid & _live_nodes(model)


def _live_nodes(model: onnx.ModelProto) -> set[str]:
    """Names of the nodes the graph outputs depend on (the others are dead code)."""
    producer = {out: node for node in model.graph.node for out in node.output}
    live, pending = set(), [o.name for o in model.graph.output]
    while pending:
        node = producer.get(pending.pop())
        if node is not None and node.name not in live:
            live.add(node.name)
            pending.extend(node.input)
    return live


def _reference(model: onnx.ModelProto) -> ReferenceEvaluator:
    """onnx.reference on the live part of `model` (it runs dead nodes too, and a dead node
    may hold the out-of-range indices that onnxc, which drops it, never reads)."""
    live = _live_nodes(model)
    if len(live) == len(model.graph.node):
        return ReferenceEvaluator(model)
    pruned = onnx.ModelProto()
    pruned.CopyFrom(model)
    del pruned.graph.node[:]
    pruned.graph.node.extend(n for n in model.graph.node if n.name in live)
    return ReferenceEvaluator(pruned)


def check_against_reference(model: onnx.ModelProto, feeds: dict[str, np.ndarray],
                            invalid: set[str] = frozenset()) -> None:
    """onnxc's outputs match onnx.reference's, or, when some nodes (`invalid`) get indices
    out of range, the run raises InvalidInputError naming one of them."""
    compiled = onnxc.compile(model, cache_dir=False)
    if invalid:
        with pytest.raises(InvalidInputError) as refused:
            compiled.run(None, feeds)
        named = re.search(r"node '([^']*)'", str(refused.value))
        assert named is not None and named.group(1) in invalid, (str(refused.value), invalid)
        return
    with np.errstate(all="ignore"):
        expected = _reference(model).run(None, feeds)
    got = compiled.run(None, feeds)
    for name, want, have in zip(compiled.output_names, expected, got):
        want = np.asarray(want, np.float32)
        assert have.shape == want.shape, (name, have.shape, want.shape)
        finite = np.abs(want[np.isfinite(want)])
        atol = 1e-5 * max(1.0, float(finite.max()) if finite.size else 1.0)
        np.testing.assert_allclose(have, want, rtol=1e-4, atol=atol, err_msg=name)


@settings(max_examples=EXAMPLES, deadline=None, derandomize=_ENV_EXAMPLES is None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
          print_blob=True)
@given(graphs())
def test_random_graphs_match_onnx_reference(case):
    model, feeds, invalid = case
    note(onnx.printer.to_text(model))  # printed with the falsifying example
    note(repr(feeds))
    check_against_reference(model, feeds, invalid)
