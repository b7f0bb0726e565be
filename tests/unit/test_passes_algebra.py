"""Numeric equivalence of the algebra rows (passes/algebra.py) on random inputs.

Each case runs one catalog row on a small graph, checks that it fired (the rewritten op is
gone) and that the numpy evaluation is unchanged.
"""

from __future__ import annotations

import numpy as np
import pytest

from onnxc.passes.verify_numerics import check_pass_equivalence
from onnxc.testing import const, module, rand, tensor

T = tensor((3, 4))


def case_identities(rng):
    body = [const("z", np.zeros(4, np.float32)), const("o", np.float32(1.0)),
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
    body = [const("a", rand(rng, 4)),
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
