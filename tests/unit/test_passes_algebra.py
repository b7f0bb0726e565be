"""Numeric equivalence of the algebra rows (passes/algebra.py) on random inputs, and their
IEEE exactness on -0.0, +-inf and NaN.

Each case runs one catalog row on a small graph, checks that it fired (the rewritten op is
gone) and that the numpy evaluation is unchanged; every lit case of the rows is evaluated
bit for bit before and after its row on special values, and a compiled graph of the
identities is compared with onnxruntime at -O0 and -O3.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from xdsl.parser import Parser

from onnxc.dialects.graph import shape_of
from onnxc.pipeline import make_context, run_passes
from onnxc.passes.evaluator import dtype_of, entry_function, evaluate
from onnxc.passes.verify_numerics import check_pass_equivalence
from tests.ir_helpers import const, module, rand, split_lit_cases, tensor

T = tensor((3, 4))


def case_identities(rng):
    body = [const("z", np.full(4, -0.0, np.float32)), const("o", np.float32(1.0)),
            f"  %0 = graph.add(%z, %x) : ({tensor((4,))}, {T}) -> {T}",
            f"  %1 = graph.div(%0, %o) : ({T}, tensor<f32>) -> {T}",
            f"  %2 = graph.neg(%1) : ({T}) -> {T}",
            f"  %3 = graph.neg(%2) : ({T}) -> {T}",
            f"  %4 = graph.relu(%3) : ({T}) -> {T}",
            f"  %5 = graph.relu(%4) : ({T}) -> {T}",
            f"  %6 = graph.min(%5, %5) : ({T}, {T}) -> {T}",
            f"  %7 = graph.pow(%6, %o) : ({T}, tensor<f32>) -> {T}"]
    return module({"x": (3, 4)}, body, [("7", (3, 4))]), "graph.neg"


def case_reassociate(rng):
    body = [const("c1", rand(rng, 4)), const("c2", rand(rng, 3, 1)), const("c3", rand(rng, 1)),
            f"  %0 = graph.add(%c1, %x) : ({tensor((4,))}, {T}) -> {T}",
            f"  %1 = graph.add(%0, %c2) : ({T}, {tensor((3, 1))}) -> {T}",
            f"  %2 = graph.mul(%1, %c3) : ({T}, {tensor((1,))}) -> {T}",
            f"  %3 = graph.mul(%2, %c1) : ({T}, {tensor((4,))}) -> {T}"]
    return module({"x": (3, 4)}, body, [("3", (3, 4))]), "graph.add(%0"


def case_distribute(rng):
    body = [const("a", rand(rng, 4, low=0.5, high=2.0)),
            f"  %0 = graph.mul(%a, %x) : ({tensor((4,))}, {T}) -> {T}",
            f"  %1 = graph.mul(%y, %a) : ({T}, {tensor((4,))}) -> {T}",
            f"  %2 = graph.sub(%0, %1) : ({T}, {T}) -> {T}"]
    return module({"x": (3, 4), "y": (3, 4)}, body, [("2", (3, 4))]), "graph.mul(%y"


def case_strength(rng):
    body = [const("c", rand(rng, 4, low=0.5, high=2.0)), const("two", np.float32(2.0)),
            const("half", np.float32(0.5)),
            f"  %0 = graph.div(%x, %c) : ({T}, {tensor((4,))}) -> {T}",
            f"  %1 = graph.pow(%0, %two) : ({T}, tensor<f32>) -> {T}",
            f"  %2 = graph.pow(%1, %half) : ({T}, tensor<f32>) -> {T}",
            f"  %3 = graph.exp(%x) : ({T}) -> {T}",
            f"  %4 = graph.log(%3) : ({T}) -> {T}",
            f"  %5 = graph.exp(%4) : ({T}) -> {T}",
            f"  %6 = graph.add(%2, %5) : ({T}, {T}) -> {T}"]
    return module({"x": (3, 4)}, body, [("6", (3, 4))]), "graph.pow"


def case_broadcast(rng):
    body = [("  %ones = graph.constant_of_shape {value = dense<1.0> : tensor<1xf32>} : "
            f"{tensor((2, 3, 4))}"),
            (f"  %e = graph.mul(%x, %ones) : ({tensor((3, 1))}, {tensor((2, 3, 4))}) -> "
            f"{tensor((2, 3, 4))}"),
            (f"  %0 = graph.sub(%y, %e) : ({tensor((2, 3, 4))}, {tensor((2, 3, 4))}) -> "
            f"{tensor((2, 3, 4))}")]
    return module({"x": (3, 1), "y": (2, 3, 4)}, body, [("0", (2, 3, 4))]), "graph.mul"


CASES = {
    "algebraic-identities": case_identities,
    "reassociate-constants": case_reassociate,
    "distribute": case_distribute,
    "strength-reduce": case_strength,
    "broadcast-simplify": case_broadcast,
}


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("row", sorted(CASES))
def test_algebra_preserves_numerics(row: str, seed: int):
    module_, gone = CASES[row](np.random.default_rng(seed))
    after = check_pass_equivalence(module_, row, seed=seed)
    assert gone not in str(after), f"{row} did not fire:\n{after}"


def test_identities_leave_only_relu():
    module_, _ = case_identities(np.random.default_rng(0))
    after = check_pass_equivalence(module_, "algebraic-identities")
    ops = [op.name for op in after.walk() if op.name.startswith("graph.")]
    assert ops == ["graph.relu"]


# --------------------------------------------------------------------------- IEEE special values

LIT = Path(__file__).resolve().parents[1] / "lit" / "passes"
ALGEBRA_ROWS = ("algebraic-identities", "reassociate-constants", "distribute", "strength-reduce",
                "broadcast-simplify")
SPECIAL = np.array([-0.0, 0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.0, -3.0, 0.5], np.float32)
"""Inputs on which every algebra rewrite must give the IEEE result bit for bit (the finite
ones are small enough that no rounding differs between the forms)."""


def special_feeds(func, shift: int) -> list[np.ndarray]:
    """Arguments filled from SPECIAL; over shifts 0..99 the elements of the first two
    arguments meet in every pair of special values; every symbolic size is 3."""
    feeds = []
    for i, arg in enumerate(func.body.block.args):
        shape = [d if isinstance(d, int) else 3 for d in shape_of(arg)]
        offset = (shift // 10**i) % 10 if i < 2 else 0
        index = (np.arange(math.prod(shape)) + offset) % SPECIAL.size
        dtype = dtype_of(arg)
        values = SPECIAL[index] if dtype.kind == "f" else (index - 5)
        feeds.append(values.astype(dtype).reshape(shape))
    return feeds


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal values, NaN in the same places and the same sign on zeros."""
    if a.dtype.kind != "f":
        return np.array_equal(a, b)
    nan = np.isnan(a)
    return (np.array_equal(nan, np.isnan(b)) and np.array_equal(a[~nan], b[~nan])
            and np.array_equal(np.signbit(a[~nan]), np.signbit(b[~nan])))


def algebra_lit_cases():
    for row in ALGEBRA_ROWS:
        for chunk in split_lit_cases(LIT / f"{row}.mlir"):
            name = chunk.split("func.func @", 1)[1].split("(", 1)[0]
            yield pytest.param(row, chunk, id=f"{row}:{name}")


@pytest.mark.parametrize("row, text", list(algebra_lit_cases()))
def test_rewrites_are_exact_on_special_values(row: str, text: str):
    """Every lit case, positive or negative, computes the same bits before and after its
    row on -0.0, +-inf, NaN and small exact values (x + 0 dropped would turn -0.0 into +0.0
    here, pow(x, 0.5) -> sqrt(x) would give -0.0 and NaN for -0.0 and -inf)."""
    ctx = make_context()
    before = Parser(ctx, text).parse_module()
    after = before.clone()
    run_passes(ctx, after, row)
    for shift in range(100):
        feeds = special_feeds(entry_function(before), shift)
        with np.errstate(all="ignore"):
            expected, actual = evaluate(before, feeds), evaluate(after, feeds)
        for i, (want, got) in enumerate(zip(expected, actual)):
            assert same_bits(got, want), (
                f"{row}: output {i} differs for inputs {[f.ravel().tolist() for f in feeds]}:"
                f" {got.ravel().tolist()} instead of {want.ravel().tolist()}")


def test_signed_zero_identities_compiled_match_onnxruntime():
    """End to end at -O0 and -O3 against onnxruntime, bit for bit on special values: x + 0,
    0 + x, x - (-0), x + (-0), x - 0, x / 4, pow(x, 0.5), exp(log x) and a*x + a*y."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    import onnxc

    x = SPECIAL.reshape(2, 5)
    y = np.roll(SPECIAL, 3).reshape(2, 5)
    constants = {"zero": 0.0, "nzero": -0.0, "half": 0.5, "a": -2.0, "four": 4.0}
    nodes = [("Add", "x", "zero"), ("Add", "zero", "x"), ("Sub", "x", "nzero"),
             ("Add", "x", "nzero"), ("Sub", "x", "zero"), ("Div", "x", "four"),
             ("Pow", "x", "half"), ("Mul", "x", "a"), ("Mul", "y", "a"), ("Log", "x", None)]
    onnx_nodes = [helper.make_node(op, [a] + ([b] if b else []), [f"n{i}"])
                  for i, (op, a, b) in enumerate(nodes)]
    onnx_nodes += [helper.make_node("Add", ["n7", "n8"], ["ax_ay"]),
                   helper.make_node("Exp", ["n9"], ["exp_log"])]
    outputs = [f"n{i}" for i in range(7)] + ["ax_ay", "exp_log"]
    graph = helper.make_graph(
        onnx_nodes, "specials",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 5]) for n in "xy"],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 5]) for n in outputs],
        [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in constants.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    feeds = {"x": x, "y": y}
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, feeds)
    for level in (0, 3):
        actual = onnxc.compile(model, opt_level=level, cache_dir=False).run(None, feeds)
        for name, got, want in zip(outputs, actual, expected):
            assert same_bits(got, want), (level, name, got.tolist(), want.tolist())
