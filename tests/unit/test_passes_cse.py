"""`cse` on large constants (passes/cse.py): keyed by a sample of their bytes
(dense_data.lookup_key), merged only when all their bytes are equal."""

from __future__ import annotations

import numpy as np
import pytest

from onnxc.dialects import graph
from onnxc.pipeline import make_context, run_passes
from tests.ir_helpers import const, module, tensor

N = 4096  # 16 KB of f32: sampled, not hashed in full


def _two_constants(a: np.ndarray, b: np.ndarray):
    t = tensor((N,))
    body = [const("a", a), const("b", b),
            f"  %0 = graph.add(%x, %a) : ({t}, {t}) -> {t}",
            f"  %1 = graph.add(%0, %b) : ({t}, {t}) -> {t}"]
    return module({"x": (N,)}, body, [("1", (N,))])


def _constants_after_cse(m) -> int:
    run_passes(make_context(), m, "cse")
    return sum(isinstance(op, graph.ConstantOp) for op in m.walk())


def test_equal_large_constants_merge():
    a = np.random.default_rng(0).uniform(-1, 1, N).astype(np.float32)
    assert _constants_after_cse(_two_constants(a, a.copy())) == 1


@pytest.mark.parametrize("element", [17, N // 2 + 1, N - 17])
def test_large_constants_differing_between_samples_stay_apart(element):
    """One element changed where the key samples no byte: past the first and before the
    last 64 bytes, off the sample stride of N*4/64 = 256 bytes."""
    a = np.random.default_rng(1).uniform(-1, 1, N).astype(np.float32)
    b = a.copy()
    b[element] += 1.0
    assert _constants_after_cse(_two_constants(a, b)) == 2
