"""Numeric equivalence of the vertical-fusion rows on random graphs (passes/conv_fusion.py,
gemm_fusion.py, normalization_fusion.py, activation_fusion.py, elementwise_fusion.py).

Each case builds a small graph with random constants, runs one catalog row, checks that the
row fired (the fused-away op is gone) and that the numpy evaluation is unchanged.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onnxc.passes.verify_numerics import check_pass_equivalence
from tests.ir_helpers import const, conv_props, module, rand, tensor


def bn_params(rng, c: int) -> list[str]:
    return [const("gamma", rand(rng, c)), const("beta", rand(rng, c)),
            const("mean", rand(rng, c)), const("var", rand(rng, c, low=0.5, high=2.0))]


BN = ("  %{out} = graph.batch_normalization(%{x}, %gamma, %beta, %mean, %var) "
      "{{epsilon = 1.0e-05 : f32}} : ({t}, {p}, {p}, {p}, {p}) -> {t}")


def conv_line(out, x, w, b, xs, ws, ys, props) -> str:
    operands = f"%{x}, %{w}" + (f", %{b}" if b else "")
    types = f"{tensor(xs)}, {tensor(ws)}" + (f", {tensor((ws[0],))}" if b else "")
    return f"  %{out} = graph.conv({operands}) {props} : ({types}) -> {tensor(ys)}"


def case_conv_bn(rng):
    xs, ws, ys = (1, 3, 7, 7), (4, 3, 3, 3), (1, 4, 4, 4)
    body = [const("w", rand(rng, *ws)), const("b", rand(rng, 4)), *bn_params(rng, 4),
            conv_line("c", "x", "w", "b", xs, ws, ys, conv_props((2, 2), (1, 1, 1, 1))),
            BN.format(out="y", x="c", t=tensor(ys), p=tensor((4,)))]
    return module({"x": xs}, body, [("y", ys)]), "graph.batch_normalization"


def case_conv_add(rng):
    xs, ws, ys = (2, 3, 5, 5), (4, 3, 3, 3), (2, 4, 5, 5)
    body = [const("w", rand(rng, *ws)), const("k", rand(rng, 4, 1, 1)),
            conv_line("c", "x", "w", None, xs, ws, ys, conv_props(pads=(1, 1, 1, 1))),
            f"  %y = graph.add(%k, %c) : ({tensor((4, 1, 1))}, {tensor(ys)}) -> {tensor(ys)}"]
    return module({"x": xs}, body, [("y", ys)]), "graph.add"


def case_conv_mul(rng):
    xs, ws, ys = (1, 4, 5, 5), (4, 2, 3, 3), (1, 4, 3, 3)
    body = [const("w", rand(rng, *ws)), const("b", rand(rng, 4)), const("k", rand(rng, 1, 4, 1, 1)),
            conv_line("c", "x", "w", "b", xs, ws, ys, conv_props(group=2)),
            f"  %y = graph.mul(%c, %k) : ({tensor(ys)}, {tensor((1, 4, 1, 1))}) -> {tensor(ys)}"]
    return module({"x": xs}, body, [("y", ys)]), "graph.mul"


def case_conv_matmul(rng):
    xs, ws, ms, cs, ys = (1, 3, 6, 6), (8, 3, 3, 3), (4, 8, 1, 1), (1, 8, 6, 6), (1, 4, 6, 6)
    body = [const("w", rand(rng, *ws)), const("b", rand(rng, 8)), const("m", rand(rng, *ms)),
            const("b2", rand(rng, 4)),
            conv_line("c", "x", "w", "b", xs, ws, cs, conv_props(pads=(1, 1, 1, 1))),
            conv_line("y", "c", "m", "b2", cs, ms, ys, conv_props())]
    m = module({"x": xs}, body, [("y", ys)])
    return m, "graph.conv(%c"


def case_matmul_add(rng):
    body = [const("c", rand(rng, 5)),
            f"  %m = graph.matmul(%a, %b) : ({tensor((3, 4))}, {tensor((4, 5))}) -> {tensor((3, 5))}",
            f"  %y = graph.add(%m, %c) : ({tensor((3, 5))}, {tensor((5,))}) -> {tensor((3, 5))}"]
    return module({"a": (3, 4), "b": (4, 5)}, body, [("y", (3, 5))]), "graph.matmul"


def case_matmul_scale(rng):
    body = [const("s", rand(rng, 1, low=0.5, high=2.0)), const("t", np.float32(3.0)),
            f"  %q = graph.div(%a, %t) : ({tensor((3, 4))}, tensor<f32>) -> {tensor((3, 4))}",
            f"  %m = graph.matmul(%q, %b) : ({tensor((3, 4))}, {tensor((4, 5))}) -> {tensor((3, 5))}",
            f"  %y = graph.mul(%s, %m) : ({tensor((1,))}, {tensor((3, 5))}) -> {tensor((3, 5))}"]
    return module({"a": (3, 4), "b": (4, 5)}, body, [("y", (3, 5))]), "graph.matmul"


def case_bn_scale(rng):
    xs = (2, 3, 4, 4)
    body = [*bn_params(rng, 3), const("k", rand(rng, 3, 1, 1)), const("d", rand(rng, 1, 3, 1, 1)),
            BN.format(out="n", x="x", t=tensor(xs), p=tensor((3,))),
            f"  %m = graph.mul(%n, %k) : ({tensor(xs)}, {tensor((3, 1, 1))}) -> {tensor(xs)}",
            f"  %y = graph.add(%d, %m) : ({tensor((1, 3, 1, 1))}, {tensor(xs)}) -> {tensor(xs)}"]
    return module({"x": xs}, body, [("y", xs)]), "graph.mul"


def case_matmul_bn(rng):
    body = [const("w", rand(rng, 5, 4)), const("c", rand(rng, 1, 5)), *bn_params(rng, 5),
            (f"  %g = graph.gemm(%a, %w, %c) {{alpha = 1.5 : f32, beta = 0.5 : f32, transA = 0 : i64,"
            f" transB = 1 : i64}} : ({tensor((3, 4))}, {tensor((5, 4))}, {tensor((1, 5))}) -> "
            f"{tensor((3, 5))}"),
            BN.format(out="y", x="g", t=tensor((3, 5)), p=tensor((5,)))]
    return module({"a": (3, 4)}, body, [("y", (3, 5))]), "graph.batch_normalization"


def case_activation(rng):
    xs, ws, ys = (1, 3, 6, 6), (4, 3, 3, 3), (1, 4, 6, 6)
    t = tensor(ys)
    body = [const("w", rand(rng, *ws)), const("b", rand(rng, 4)),
            const("sixth", np.float32(1 / 6)), const("half", np.float32(0.5)),
            conv_line("c", "x", "w", "b", xs, ws, ys, conv_props(pads=(1, 1, 1, 1))),
            f"  %r6 = graph.clip(%c) {{min = 0.0 : f32, max = 0.5 : f32}} : ({t}) -> {t}",
            conv_line("d", "x", "w", None, xs, ws, ys, conv_props(pads=(1, 1, 1, 1))),
            f"  %u = graph.mul(%d, %sixth) : ({t}, tensor<f32>) -> {t}",
            f"  %v = graph.add(%u, %half) : ({t}, tensor<f32>) -> {t}",
            f"  %h = graph.clip(%v) {{min = 0.0 : f32, max = 1.0 : f32}} : ({t}) -> {t}",
            f"  %hs = graph.mul(%d, %h) : ({t}, {t}) -> {t}",
            f"  %m = graph.matmul(%a, %bb) : ({tensor((3, 4))}, {tensor((4, 5))}) -> {tensor((3, 5))}",
            f"  %l = graph.leaky_relu(%m) {{alpha = 0.1 : f32}} : ({tensor((3, 5))}) -> {tensor((3, 5))}",
            (f"  %g = graph.gemm(%a, %bb) {{alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64,"
            f" transB = 0 : i64}} : ({tensor((3, 4))}, {tensor((4, 5))}) -> {tensor((3, 5))}"),
            f"  %e = graph.gelu(%g) {{approximate = \"none\"}} : ({tensor((3, 5))}) -> {tensor((3, 5))}"]
    m = module({"x": xs, "a": (3, 4), "bb": (4, 5)}, body,
               [("r6", ys), ("hs", ys), ("l", (3, 5)), ("e", (3, 5))])
    return m, "graph.clip"


def case_elementwise(rng):
    t = tensor((2, 3, 4))
    body = [const("k", rand(rng, 3, 1)),
            f"  %0 = graph.mul(%x, %k) : ({t}, {tensor((3, 1))}) -> {t}",
            f"  %1 = graph.tanh(%y) : ({t}) -> {t}",
            f"  %2 = graph.sum(%0, %1, %x) : ({t}, {t}, {t}) -> {t}",
            f"  %3 = graph.leaky_relu(%2) {{alpha = 0.2 : f32}} : ({t}) -> {t}",
            f"  %4 = graph.sigmoid(%3) : ({t}) -> {t}",
            f"  %5 = graph.sub(%4, %x) : ({t}, {t}) -> {t}",
            f"  %6 = graph.div_scalar(%5) {{scalar = 3.0 : f64}} : ({t}) -> {t}"]
    return module({"x": (2, 3, 4), "y": (2, 3, 4)}, body, [("6", (2, 3, 4))]), "graph.sigmoid"


def case_conv_residual(rng):
    xs, ws, ys = (1, 3, 6, 5), (4, 3, 3, 3), (1, 4, 6, 5)
    body = [const("w", rand(rng, *ws)), const("b", rand(rng, 4)),
            conv_line("c", "x", "w", "b", xs, ws, ys, conv_props(pads=(1, 1, 1, 1))),
            f"  %y = graph.sum(%r, %c) : ({tensor(ys)}, {tensor(ys)}) -> {tensor(ys)}"]
    return module({"x": xs, "r": ys}, body, [("y", ys)]), "graph.sum"


CASES = {
    "fuse-conv-bn": case_conv_bn,
    "fuse-conv-add": case_conv_add,
    "fuse-conv-add-residual": case_conv_residual,
    "fuse-conv-mul": case_conv_mul,
    "fuse-conv-matmul": case_conv_matmul,
    "fuse-matmul-add": case_matmul_add,
    "fuse-matmul-scale": case_matmul_scale,
    "fuse-bn-scale": case_bn_scale,
    "fuse-matmul-bn": case_matmul_bn,
    "fuse-activation": case_activation,
    "fuse-elementwise": case_elementwise,
}


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("row", sorted(CASES))
def test_fusion_preserves_numerics(row: str, seed: int):
    module_, gone = CASES[row](np.random.default_rng(seed))
    after = check_pass_equivalence(module_, row.removesuffix("-residual"), seed=seed)
    assert gone not in str(after), f"{row} did not fire:\n{after}"


def test_fused_elementwise_is_one_op():
    module_, _ = case_elementwise(np.random.default_rng(0))
    after = check_pass_equivalence(module_, "fuse-elementwise")
    ops = [op.name for op in after.walk() if op.name.startswith("graph.")]
    assert ops == ["graph.constant", "graph.fused_elementwise", "graph.yield"]  # ends its body


UNARY = ["relu", "sigmoid", "tanh", "neg", "abs"]
BINARY = ["add", "sub", "mul", "max", "min"]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(UNARY + BINARY), st.integers(0, 99), st.integers(0, 99)),
                min_size=1, max_size=8))
def test_random_elementwise_trees_fuse_exactly(program):
    """Random DAGs of elementwise ops over two inputs and a broadcast constant: fusion keeps
    every returned value and the numerics."""
    t = tensor((2, 3))
    values = [("x", t), ("y", t)]
    body = [const("k", np.linspace(-1, 1, 3, dtype=np.float32))]
    values.append(("k", tensor((3,))))
    for i, (name, a, b) in enumerate(program):
        lhs, rhs = values[a % len(values)], values[b % len(values)]
        if name in UNARY or lhs[1] != t and rhs[1] != t:
            src = lhs if lhs[1] == t else values[0]
            body.append(f"  %v{i} = graph.{name if name in UNARY else 'relu'}(%{src[0]}) : ({t}) -> {t}")
        else:
            body.append(f"  %v{i} = graph.{name}(%{lhs[0]}, %{rhs[0]}) : ({lhs[1]}, {rhs[1]}) -> {t}")
        values.append((f"v{i}", t))
    results = [(f"v{len(program) - 1}", (2, 3)), (f"v{len(program) // 2}", (2, 3))]
    module_ = module({"x": (2, 3), "y": (2, 3)}, body, results)
    check_pass_equivalence(module_, "fuse-elementwise")
