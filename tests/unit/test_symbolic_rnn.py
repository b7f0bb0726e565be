"""Recurrences with a symbolic sequence length, each model compiled once (rnn.py's kernels).

The sequence length is the recurrence's run-time trip count; batch and hidden size stay
static (they size the kernel's scratch and its vector chunks). LSTM, GRU (both reset forms)
and RNN, forward, reverse and bidirectional, and the 2-layer bidirectional LSTM tagger of
test_rnn.py with `seq` symbolic, against onnxruntime at several lengths, cold then warm from
the cache. Tolerance as in test_rnn.py: rtol 1e-4 / atol 1e-5 (f32 gate math with the
polynomial exp/tanh against onnxruntime's).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import onnxc
from onnxc.errors import LoweringError
from tests.unit.test_rnn import assert_close, rnn_model, run_ort, tagger_model

TOL = {"rtol": 1e-4, "atol": 1e-5}


def _symbolic(model: onnx.ModelProto, axis: int, name: str = "seq") -> onnx.ModelProto:
    """`model` with dimension `axis` of its first input and of the outputs that have it
    (same size) named `name`."""
    x = model.graph.input[0].type.tensor_type.shape.dim[axis]
    size = x.dim_value
    for vi in [model.graph.input[0], *model.graph.output]:
        dims = vi.type.tensor_type.shape.dim
        for d in dims:
            if d.HasField("dim_value") and d.dim_value == size and d is dims[axis]:
                d.Clear()
                d.dim_param = name
    return model


def _lengths_feeds(model, seed: int, axis: int = 0):
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    rng = np.random.default_rng(seed)
    for steps in (1, 4, 17):
        shape[axis] = steps
        yield steps, {"X": rng.standard_normal(shape).astype(np.float32)}


@pytest.mark.parametrize("kind, direction, extra", [
    ("LSTM", "bidirectional", {}),
    ("GRU", "forward", {"linear_before_reset": 1}),
    ("GRU", "reverse", {}),
    ("RNN", "bidirectional", {}),
])
def test_one_compile_serves_every_length(kind, direction, extra, tmp_path):
    model, _ = rnn_model(kind, 6, 2, 5, 12, direction=direction, **extra)
    fixed_shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    model = _symbolic(model, 0)
    cold = onnxc.compile(model, cache_dir=tmp_path)
    warm = onnxc.compile(model, cache_dir=tmp_path)
    assert warm.from_cache and cold.inputs[0].shape == ("seq", *fixed_shape[1:])
    for steps, feeds in _lengths_feeds(model, 1):
        ours = cold.run(None, feeds)
        assert ours[0].shape[0] == steps
        assert_close(ours, run_ort(model, feeds), TOL)
        for a, b in zip(warm.run(None, feeds), ours):
            np.testing.assert_array_equal(a, b)


def test_bidirectional_tagger_with_a_symbolic_sequence():
    model, _ = tagger_model(8, 1, 16, 40, 9)
    for i, init in enumerate(model.graph.initializer):  # [S, B, 2, H] -> [S, B, 2H]
        if init.name == "shape":
            model.graph.initializer[i].CopyFrom(
                numpy_helper.from_array(np.array([0, 0, -1], np.int64), "shape"))
    model = _symbolic(model, 0)
    compiled = onnxc.compile(model, cache_dir=False)
    for _, feeds in _lengths_feeds(model, 2):
        assert_close(compiled.run(None, feeds), run_ort(model, feeds), TOL)


def test_a_symbolic_batch_of_a_recurrence_is_refused_by_name():
    model, _ = rnn_model("GRU", 4, 2, 5, 12)
    model = _symbolic(_symbolic(model, 0), 1, "batch")
    with pytest.raises(LoweringError, match="batch of a recurrence must be static"):
        onnxc.compile(model, cache_dir=False)
