"""The graph passes on symbolic dimensions (`tensor<1x?x64xf32, #graph.dims<["seq"]>>`).

A transformer layer whose sequence length is the symbol `seq` goes through -O3 and gets the
fusions the same layer gets with seq = 16 (the same op kinds, the same pattern fires), keeps
its symbolic types, and computes what it computed before, for more than one value of `seq`.
Patterns not written for symbolic shapes are no-matches (passes/base.py's safety net), unless
they had already changed the IR: that is an internal error naming the pattern.
"""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import TensorType, f32
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from onnxc.dialects import graph
from onnxc.dialects.graph import is_symbolic, shape_of
from onnxc.dialects.graph_epilogue import epilogue_of
from onnxc.dialects.symbolic_dims import SymDim
from onnxc.errors import InternalCompilerError, InvalidInputError
from onnxc import pipeline
from onnxc.passes.base import STATISTICS, apply_graph_patterns
from onnxc.passes.evaluator import evaluate
from onnxc.passes.levels import level_passes
from onnxc.passes.verify_numerics import check_pass_equivalence
from tests.ir_helpers import parse_graph

HIDDEN, HEADS, FFN = 64, 2, 256
HEAD = HIDDEN // HEADS


def _type(shape, seq) -> str:
    """The tensor type of `shape`, whose "S" entries are the sequence length: an int, or a
    symbol name for a symbolic dimension."""
    dims = [seq if d == "S" else d for d in shape]
    symbols = [d for d in dims if isinstance(d, str)]
    text = "".join(f"{'?' if isinstance(d, str) else d}x" for d in dims) + "f32"
    if not symbols:
        return f"tensor<{text}>"
    names = ", ".join(f'"{s}"' for s in symbols)
    return f"tensor<{text}, #graph.dims<[{names}]>>"


class _Layer:
    """A BERT layer as torch.onnx exports it (Linear = MatMul + bias Add, heads by Reshape
    and Transpose, decomposed LayerNorm, erf GELU), written as graph-dialect text."""

    def __init__(self, seq, seed: int = 0):
        self.seq = seq
        self.rng = np.random.default_rng(seed)
        self.lines: list[str] = []
        self.count = 0

    def t(self, *shape) -> str:
        return _type(shape, self.seq)

    def name(self, hint: str) -> str:
        self.count += 1
        return f"%{hint}{self.count}"

    def const(self, array: np.ndarray) -> str:
        array = np.asarray(array, np.float32)
        t = _type(array.shape, self.seq)
        value = (f'"0x{array.astype("<f4").tobytes().hex().upper()}"' if array.ndim
                 else f"{float(array):.8e}")
        out = self.name("c")
        self.lines.append(f"  {out} = graph.constant {{value = dense<{value}> : {t}}} : {t}")
        return out

    def op(self, text: str, operands: list[str], operand_types: list[str], result: str,
           attrs: str = "") -> str:
        out = self.name("v")
        attrs = f" {{{attrs}}}" if attrs else ""
        self.lines.append(f"  {out} = graph.{text}({', '.join(operands)}){attrs} : "
                          f"({', '.join(operand_types)}) -> {result}")
        return out

    def linear(self, x: str, shape_in: tuple, n_in: int, n_out: int) -> str:
        w = self.const(self.rng.standard_normal((n_in, n_out)) * 0.1)
        b = self.const(self.rng.standard_normal(n_out) * 0.1)
        out = (*shape_in[:-1], n_out)
        m = self.op("matmul", [x, w], [self.t(*shape_in), self.t(n_in, n_out)], self.t(*out))
        return self.op("add", [m, b], [self.t(*out), self.t(n_out)], self.t(*out))

    def layer_norm(self, x: str) -> str:
        row, stat = self.t(1, "S", HIDDEN), self.t(1, "S", 1)
        two, eps = self.const(np.float32(2.0)), self.const(np.float32(1e-5))
        gamma = self.const(1 + 0.1 * self.rng.standard_normal(HIDDEN))
        beta = self.const(0.1 * self.rng.standard_normal(HIDDEN))
        axes = "axes = array<i64: 2>, keepdims = 1 : i64"
        mean = self.op("reduce_mean", [x], [row], stat, axes)
        d = self.op("sub", [x, mean], [row, stat], row)
        sq = self.op("pow", [d, two], [row, "tensor<f32>"], row)
        var = self.op("reduce_mean", [sq], [row], stat, axes)
        std = self.op("sqrt", [self.op("add", [var, eps], [stat, "tensor<f32>"], stat)], [stat],
                      stat)
        n = self.op("div", [d, std], [row, stat], row)
        g = self.op("mul", [n, gamma], [row, self.t(HIDDEN)], row)
        return self.op("add", [g, beta], [row, self.t(HIDDEN)], row)

    def gelu(self, x: str, shape: tuple) -> str:
        t = self.t(*shape)
        root2, one = self.const(np.float32(np.sqrt(2.0))), self.const(np.float32(1.0))
        half = self.const(np.float32(0.5))
        erf = self.op("erf", [self.op("div", [x, root2], [t, "tensor<f32>"], t)], [t], t)
        plus = self.op("add", [erf, one], [t, "tensor<f32>"], t)
        return self.op("mul", [self.op("mul", [x, plus], [t, t], t), half], [t, "tensor<f32>"], t)

    def text(self) -> str:
        row, heads = self.t(1, "S", HIDDEN), self.t(1, "S", HEADS, HEAD)
        one, big = self.const(np.float32(1.0)), self.const(np.float32(-10000.0))
        wide_mask = self.t(1, 1, 1, "S")
        mask = self.op("unsqueeze", ["%mask"], [self.t(1, "S")], wide_mask,
                       "axes = array<i64: 1, 2>")
        mask = self.op("sub", [one, mask], ["tensor<f32>", wide_mask], wide_mask)
        mask = self.op("mul", [mask, big], [wide_mask, "tensor<f32>"], wide_mask)

        def split_heads(perm: str, out: str) -> str:
            v = self.linear("%x", (1, "S", HIDDEN), HIDDEN, HIDDEN)
            v = self.op("reshape", [v], [row], heads)
            return self.op("transpose", [v], [heads], out, f"perm = array<i64: {perm}>")

        by_head = self.t(1, HEADS, "S", HEAD)
        q = split_heads("0, 2, 1, 3", by_head)
        k = split_heads("0, 2, 3, 1", self.t(1, HEADS, HEAD, "S"))
        v = split_heads("0, 2, 1, 3", by_head)
        scores_t = self.t(1, HEADS, "S", "S")
        scores = self.op("matmul", [q, k], [by_head, self.t(1, HEADS, HEAD, "S")], scores_t)
        root = self.const(np.float32(np.sqrt(HEAD)))
        scores = self.op("div", [scores, root], [scores_t, "tensor<f32>"], scores_t)
        scores = self.op("add", [scores, mask], [scores_t, wide_mask], scores_t)
        probs = self.op("softmax", [scores], [scores_t], scores_t, "axis = -1 : i64")
        context = self.op("matmul", [probs, v], [scores_t, by_head], by_head)
        context = self.op("transpose", [context], [by_head], heads,
                          "perm = array<i64: 0, 2, 1, 3>")
        context = self.op("reshape", [context], [heads], row)
        attended = self.linear(context, (1, "S", HIDDEN), HIDDEN, HIDDEN)
        h1 = self.layer_norm(self.op("add", [attended, "%x"], [row, row], row))
        inner = self.gelu(self.linear(h1, (1, "S", HIDDEN), HIDDEN, FFN), (1, "S", FFN))
        out = self.linear(inner, (1, "S", FFN), FFN, HIDDEN)
        y = self.layer_norm(self.op("add", [out, h1], [row, row], row))
        body = "\n".join(self.lines)
        return (f"func.func @main(%x: {row}, %mask: {self.t(1, 'S')}) -> {row} {{\n{body}\n"
                f"  func.return {y} : {row}\n}}\n")


def layer_text(seq) -> str:
    """The layer with sequence length `seq`: an int, or a symbol name."""
    return _Layer(seq).text()


def optimized(text: str):
    """(module after -O3's graph passes, their statistics); the module is verified."""
    module = parse_graph(text)
    module.verify()
    stats = pipeline.optimize_graph(pipeline.make_context(), module, level_passes(3),
                                    stats=True)
    module.verify()
    return module, stats


@pytest.fixture(scope="module")
def symbolic():
    return optimized(layer_text("seq"))


@pytest.fixture(scope="module")
def static():
    return optimized(layer_text(16))


def feeds(seq: int, seed: int = 1) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    mask = np.ones((1, seq), np.float32)
    mask[:, seq - seq // 4:] = 0.0  # the last quarter is padding
    return [rng.standard_normal((1, seq, HIDDEN)).astype(np.float32), mask]


# ----------------------------------------------------------------------------- -O3


def test_layer_text_is_symbolic():
    module = parse_graph(layer_text("seq"))
    module.verify()
    func = next(iter(module.ops))
    assert all(is_symbolic(a) for a in func.args)
    assert 'tensor<1x2x?x?xf32, #graph.dims<["seq", "seq"]>>' in layer_text("seq")


def test_o3_fuses_the_symbolic_layer(symbolic):
    module, stats = symbolic
    after = stats.after
    assert after["graph.attention"] == 1
    assert after["graph.layer_normalization"] == 2
    # the FFN's Linear, bias and GELU: one Gemm over the sequence's rows, GELU its epilogue
    assert after["graph.gelu"] == 0
    assert [epilogue_of(op) for op in module.walk() if isinstance(op, graph.GemmOp)
            and epilogue_of(op) is not None] == [("gelu", None, None)]
    assert after["graph.split"] == 1  # Q, K and V: one MatMul (horizontal fusion)
    assert after["graph.fused_elementwise"] >= 1
    for gone in ("graph.softmax", "graph.reduce_mean", "graph.erf", "graph.pow", "graph.div",
                 "graph.sqrt"):
        assert after[gone] == 0, gone
    fired = {p for p, _ in stats.fired}
    assert {"fuse-attention", "fuse-layernorm", "fuse-gelu", "horizontal-fusion",
            "fuse-elementwise", "cse"} <= fired


def test_o3_gives_the_symbolic_layer_the_static_layers_fusions(symbolic, static):
    """The same fusions fire; the static layer's attention also reads Q, K and V as
    strided views (attention-operand-views takes static shapes only): its split, transposes
    and Q/K scaling become three graph.as_strided, which the symbolic layer keeps as ops."""
    _, sym_stats = symbolic
    _, static_stats = static
    assert sym_stats.before == static_stats.before
    viewed = {"graph.as_strided", "graph.split", "graph.transpose", "graph.mul_scalar",
              "graph.reshape"}
    assert {k: v for k, v in sym_stats.after.items() if k not in viewed} == {
        k: v for k, v in static_stats.after.items() if k not in viewed}
    assert static_stats.after["graph.as_strided"] == 3
    assert sym_stats.after["graph.as_strided"] == 0
    assert set(sym_stats.fired) == {f for f in static_stats.fired
                                    if f[0] != "attention-operand-views"}


def test_o3_keeps_the_symbolic_types(symbolic):
    module, _ = symbolic
    func = next(iter(module.ops))
    seq = SymDim.symbol("seq")
    assert [shape_of(t) for t in func.function_type.inputs] == [(1, seq, HIDDEN), (1, seq)]
    assert shape_of(func.function_type.outputs.data[0]) == (1, seq, HIDDEN)
    attention = next(op for op in module.walk() if isinstance(op, graph.AttentionOp))
    assert shape_of(attention.output) == (1, HEADS, seq, HEAD)
    split = next(op for op in module.walk() if isinstance(op, graph.SplitOp))
    assert shape_of(split.input) == (seq, 3 * HIDDEN)  # Q, K, V: one Gemm of the rows
    # every activation keeps its symbolic size; only constants (weights) are static
    for op in module.walk():
        if isinstance(op, graph.GraphOp) and not isinstance(op, graph.ConstantOp):
            assert all(is_symbolic(r) for r in op.results), op.name


@pytest.mark.parametrize("seq", [5, 16])
def test_o3_symbolic_layer_computes_what_the_layer_computes(symbolic, static, seq):
    module, _ = symbolic
    original = parse_graph(layer_text("seq"))
    expected = evaluate(original, feeds(seq))[0]
    got = evaluate(module, feeds(seq))[0]
    assert got.shape == (1, seq, HIDDEN)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    if seq == 16:  # the same numbers as the static layer
        static_module, _ = static
        np.testing.assert_allclose(got, evaluate(static_module, feeds(16))[0], rtol=1e-5,
                                   atol=1e-6)


def test_check_pass_equivalence_runs_symbolic_modules():
    module = parse_graph(layer_text("seq"))
    after = check_pass_equivalence(module, ",".join(level_passes(3)))
    assert any(isinstance(op, graph.AttentionOp) for op in after.walk())


def test_evaluate_binds_symbols_from_the_feeds():
    module = parse_graph(layer_text("seq"))
    x, mask = feeds(7)
    with pytest.raises(InvalidInputError, match="seq"):
        evaluate(module, [x, np.ones((1, 6), np.float32)])
    assert evaluate(module, [x, mask])[0].shape == (1, 7, HIDDEN)


# ----------------------------------------------------------------------------- safety net

RELU = """func.func @main(%x: tensor<1x?x64xf32, #graph.dims<["seq"]>>) -> tensor<1x?x64xf32, #graph.dims<["seq"]>> {
  %y = graph.relu(%x) : (tensor<1x?x64xf32, #graph.dims<["seq"]>>) -> tensor<1x?x64xf32, #graph.dims<["seq"]>>
  func.return %y : tensor<1x?x64xf32, #graph.dims<["seq"]>>
}
"""


class _NeedsARowCount(RewritePattern):
    """Written for static shapes: int() of every dimension."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ReluOp, rewriter: PatternRewriter) -> None:
        rows = int(shape_of(op.input)[1])
        rewriter.replace(op, graph.SigmoidOp(operands=[op.input], result_types=[op.output.type]))
        assert rows


class _StaticType(RewritePattern):
    """Written for static shapes: a TensorType of the shape (xDSL refuses the SymDim)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ReluOp, rewriter: PatternRewriter) -> None:
        t = TensorType(f32, shape_of(op.output))
        rewriter.replace(op, graph.SigmoidOp(operands=[op.input], result_types=[t]))


class _HalfRewrites(RewritePattern):
    """Inserts an op, then needs a number."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ReluOp, rewriter: PatternRewriter) -> None:
        rewriter.insert(graph.NegOp(operands=[op.input], result_types=[op.input.type]),
                        InsertPoint.before(op))
        range(shape_of(op.input)[1])


class _Buggy(RewritePattern):
    """A plain bug: not a symbolic dimension's doing, so not hidden."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ReluOp, rewriter: PatternRewriter) -> None:
        raise ValueError("a bug")


@pytest.mark.parametrize("pattern", [_NeedsARowCount, _StaticType])
def test_a_pattern_not_written_for_symbolic_shapes_does_not_match(pattern):
    module = parse_graph(RELU)
    before = str(module)
    STATISTICS.reset()
    apply_graph_patterns(module, [pattern()], "test-pass")
    assert str(module) == before
    assert STATISTICS.snapshot() == {}
    # the same pattern fires on a static shape
    static = parse_graph(RELU.replace('?x64xf32, #graph.dims<["seq"]>>', "16x64xf32>"))
    apply_graph_patterns(static, [pattern()], "test-pass")
    assert "graph.sigmoid" in str(static)


def test_a_pattern_that_fails_after_rewriting_is_an_internal_error():
    module = parse_graph(RELU)
    with pytest.raises(InternalCompilerError, match="_HalfRewrites") as info:
        apply_graph_patterns(module, [_HalfRewrites()], "test-pass")
    assert info.value.pass_name == "test-pass"
    assert info.value.op_name == "graph.relu"


def test_other_errors_still_surface():
    with pytest.raises(ValueError, match="a bug"):
        apply_graph_patterns(parse_graph(RELU), [_Buggy()], "test-pass")
