"""torch-exported models with data-dependent control flow, against onnxruntime: compiled once,
run on several inputs that take different paths. Cold, then warm from the compile cache.

The models (tests/models/torch_exports/, made by export_control_flow.py there with torch's
TorchScript exporter) are what scripted torch code becomes:
- doubling: a while loop whose condition reads the data, then an If on the result's sign;
- countedrnn: a for loop reading `x[t:t+1]` (a Slice with run-time bounds);
- collect: the same loop appending every step to a list it then stacks (a sequence the Loop
  carries, then ConcatFromSequence);
- greedydecoder: greedy decoding with a GRU-style cell, an embedding lookup of the previous
  token, `tokens[i] = token` and a `break` at the end token;
- greedycollect: the same decoding returning the list of tokens it generated, whose length
  only the run decides (an output of run-time length: the Loop's `trip_symbol`).

The `_seq` / `_batch` exports are the first three with a dynamic axis: each is compiled once
(symbolically) and run at several sizes, 1 included; the loop's trip count and stacked outputs
then have the run's length.

Tolerance: rtol 1e-5 / atol 1e-5 on floats (the same f32 ops in another order); token ids,
and so every branch taken, must be equal.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from onnxc.dialects import graph
from onnxc.dialects.symbolic_dims import SymDim
from onnxc.frontend.onnx_importer import import_onnx

EXPORTS = Path(__file__).parent / "torch_exports"
RTOL = ATOL = 1e-5


def _feeds(name: str, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    if name == "doubling":
        limit = [0.0, 3.0, 50.0, 1e6][seed % 4]
        return {"x": rng.standard_normal((1, 8)).astype(np.float32),
                "limit": np.array(limit, np.float32)}
    if name in ("countedrnn", "collect"):
        return {"x": rng.standard_normal((5, 8)).astype(np.float32)}
    return {"h": (rng.standard_normal((1, 32)) * 3).astype(np.float32)}


@pytest.mark.models
@pytest.mark.parametrize("name", ["doubling", "countedrnn", "collect", "greedydecoder",
                                  "greedycollect"])
def test_torch_control_flow_matches_onnxruntime(name, cache_pass) -> None:
    model = onnx.load(str(EXPORTS / f"{name}.onnx"))
    module = import_onnx(model)
    assert any(isinstance(op, graph.LoopOp) for op in module.walk())
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    compiled = cache_pass.compile(model)
    lengths = set()
    for seed in range(8):
        feeds = _feeds(name, seed)
        expected = session.run(None, feeds)
        actual = cache_pass.outputs(compiled(*feeds.values()))
        for got, want in zip(actual, expected, strict=True):
            if np.issubdtype(want.dtype, np.integer):
                np.testing.assert_array_equal(got, want)
                lengths.add(int((want >= 0).sum()))
            else:
                np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    if name.startswith("greedy"):  # some inputs stop at the end token, others run 12 steps
        assert len(lengths) > 1 and 12 in lengths, lengths


DYNAMIC_SIZES = (1, 2, 5, 13)


def _dynamic_feeds(name: str, size: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((size, 8)).astype(np.float32)
    if name == "doubling_batch":
        return {"x": x, "limit": np.array([0.0, 3.0, 50.0, 1e6][seed % 4] * size, np.float32)}
    return {"x": x}


@pytest.mark.models
@pytest.mark.parametrize("name", ["doubling_batch", "countedrnn_seq", "collect_seq"])
def test_torch_control_flow_at_several_sizes(name, cache_pass) -> None:
    model = onnx.load(str(EXPORTS / f"{name}.onnx"))
    module = import_onnx(model)
    assert any(isinstance(op, graph.LoopOp) and (
        isinstance(op.iteration_count(), SymDim) or any(graph.is_symbolic(v) for v in op.results))
        for op in module.walk())
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    compiled = cache_pass.compile(model)
    assert compiled.symbolic is not None, "a dynamic axis must compile symbolically, once"
    for size in DYNAMIC_SIZES:
        for seed in range(3):
            feeds = _dynamic_feeds(name, size, seed)
            expected = session.run(None, feeds)
            actual = cache_pass.outputs(compiled(*feeds.values()))
            for got, want in zip(actual, expected, strict=True):
                assert got.shape == want.shape
                np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
