"""torch-exported recurrent models with a dynamic `seq` axis, against onnxruntime: compiled
once (symbolically), run at several lengths, 1 included; cold, then warm from the cache.

The models (tests/models/torch_exports/, made by export_rnn.py there with torch's
TorchScript exporter): `tagger`, token ids -> embedding -> 2-layer bidirectional nn.LSTM ->
per-token scores, and `gru`, an nn.GRU encoder returning every step and its last state.

Tolerance: rtol 1e-4 / atol 1e-5, as for the other recurrences (f32 gate math with onnxc's
polynomial exp/tanh against onnxruntime's).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

EXPORTS = Path(__file__).parent / "torch_exports"
TOL = {"rtol": 1e-4, "atol": 1e-5}
LENGTHS = (1, 6, 41)


def _feeds(name: str, steps: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    if name == "tagger":
        return {"tokens": rng.integers(0, 200, (steps, 1))}
    return {"x": rng.standard_normal((steps, 1, 16)).astype(np.float32)}


@pytest.mark.models
@pytest.mark.parametrize("name", ["tagger", "gru"])
def test_torch_recurrence_at_several_lengths(name, cache_pass) -> None:
    model = onnx.load(str(EXPORTS / f"{name}.onnx"))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    compiled = cache_pass.compile(model)
    assert compiled.symbolic is not None and compiled.inputs[0].shape[0] == "seq"
    rng = np.random.default_rng(3)
    for steps in LENGTHS:
        feeds = _feeds(name, steps, rng)
        expected = session.run(None, feeds)
        actual = cache_pass.outputs(compiled(*feeds.values()))
        for got, want in zip(actual, expected, strict=True):
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want, **TOL)
