"""GPTs with a symbolic sequence axis and a growing KV cache, each model compiled once.

`onnxc.zoo_gpt.gpt` gives the prefill model (ids and positions `[1, seq]`) and the decode
model (plus each layer's cache `[1, heads, past, head_dim]`, returning it grown to
`past + seq`). One compile of each serves every prompt length and every decode step: the
test runs prompts of several lengths, then decodes 64 tokens greedily, feeding onnxc's own
token and caches back, and compares every step's logits and caches with onnxruntime's on
the same inputs. Cold, then warm from the cache (the hit gives identical outputs).

A torch export (tests/models/torch_exports/gpt.onnx, by export_gpt.py there, with `seq` a
dynamic axis: its reshapes, position ids and causal mask come from Shape of the input) runs
at several lengths from one compile, cold and warm.

Tolerance: rtol 1e-4 / atol 1e-5 (f32 attention, LayerNorm and GELU summed in another order
than onnxruntime's), and the same greedy token at every step.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import onnxc
from onnxc.errors import InvalidInputError
from onnxc.zoo_gpt import cache_from, gpt

RTOL, ATOL = 1e-4, 1e-5
STEPS = 64


def _session(model) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])


def _run(compiled, feeds) -> dict[str, np.ndarray]:
    return dict(zip(compiled.output_names, compiled.run(None, feeds)))


def _assert_close(ours: dict, theirs: list, names: list[str], what: str) -> None:
    for name, expected in zip(names, theirs):
        assert ours[name].shape == expected.shape, f"{what}: {name}"
        np.testing.assert_allclose(ours[name], expected, rtol=RTOL, atol=ATOL,
                                   err_msg=f"{what}: {name}")


@pytest.fixture(scope="module")
def models():
    return gpt(), gpt(with_past=True)


def test_prompts_of_any_length_from_one_compile(models, tmp_path):
    prefill, _ = models
    reference = _session(prefill)
    names = [o.name for o in reference.get_outputs()]
    compiled = onnxc.compile(prefill, cache_dir=tmp_path)
    assert compiled.inputs[0].shape == (1, "seq")
    rng = np.random.default_rng(0)
    for seq in (1, 7, 64, 100):
        feeds = {"input_ids": rng.integers(0, 96, (1, seq)),
                 "position_ids": np.arange(seq, dtype=np.int64)[None]}
        _assert_close(_run(compiled, feeds), reference.run(None, feeds), names, f"seq {seq}")


@pytest.mark.parametrize("cache", ["cold", "warm"])
def test_decode_64_tokens_without_recompiling(models, tmp_path_factory, cache):
    prefill, decode = models
    cache_dir = tmp_path_factory.getbasetemp() / "gpt_symbolic_cache"
    ours_prefill = onnxc.compile(prefill, cache_dir=cache_dir)
    ours_decode = onnxc.compile(decode, cache_dir=cache_dir)
    assert ours_decode.from_cache == (cache == "warm")
    theirs_prefill, theirs_decode = _session(prefill), _session(decode)
    prefill_names = [o.name for o in theirs_prefill.get_outputs()]
    decode_names = [o.name for o in theirs_decode.get_outputs()]

    prompt = np.array([[3, 41, 7, 88, 15]], np.int64)
    feeds = {"input_ids": prompt, "position_ids": np.arange(prompt.shape[1])[None]}
    out = _run(ours_prefill, feeds)
    _assert_close(out, theirs_prefill.run(None, feeds), prefill_names, "prefill")
    position = prompt.shape[1]
    for step in range(STEPS):
        token = int(np.argmax(out["logits"][0, -1]))
        feeds = {"input_ids": np.array([[token]], np.int64),
                 "position_ids": np.array([[position]], np.int64), **cache_from(out)}
        out = _run(ours_decode, feeds)
        theirs = theirs_decode.run(None, feeds)
        _assert_close(out, theirs, decode_names, f"step {step}")
        assert int(np.argmax(theirs[0][0, -1])) == int(np.argmax(out["logits"][0, -1]))
        position += 1
    assert out["present_key_0"].shape[2] == prompt.shape[1] + STEPS


def test_several_tokens_after_the_cache(models, tmp_path):
    """A chunk of queries after a cache of symbolic length: the causal frontier is
    Sk - Sq at run time (graph.attention's causal_from_end), so the kernel still skips
    the keys each query must not see."""
    prefill, decode = models
    ours_prefill = onnxc.compile(prefill, cache_dir=tmp_path)
    ours_decode = onnxc.compile(decode, cache_dir=tmp_path)
    theirs = _session(decode)
    names = [o.name for o in theirs.get_outputs()]
    out = _run(ours_prefill, {"input_ids": np.array([[4, 8, 15, 16, 23]], np.int64),
                              "position_ids": np.arange(5, dtype=np.int64)[None]})
    for chunk in (3, 11):
        feeds = {"input_ids": np.arange(chunk, dtype=np.int64)[None] % 96,
                 "position_ids": np.arange(5, 5 + chunk, dtype=np.int64)[None],
                 **cache_from(out)}
        _assert_close(_run(ours_decode, feeds), theirs.run(None, feeds), names,
                      f"chunk of {chunk}")


def test_torch_export_with_a_dynamic_axis(tmp_path):
    model = onnx.load(str(Path(__file__).parent / "torch_exports" / "gpt.onnx"))
    reference = _session(model)
    cold = onnxc.compile(model, cache_dir=tmp_path)
    warm = onnxc.compile(model, cache_dir=tmp_path)
    assert warm.from_cache and cold.inputs[0].shape == (1, "seq")
    rng = np.random.default_rng(3)
    for seq in (1, 8, 45, 128):
        ids = rng.integers(0, 64, (1, seq))
        (expected,) = reference.run(None, {"ids": ids})
        (ours,) = cold.run(None, {"ids": ids})
        np.testing.assert_allclose(ours, expected, rtol=RTOL, atol=ATOL, err_msg=f"seq {seq}")
        np.testing.assert_array_equal(warm.run(None, {"ids": ids})[0], ours)
    with pytest.raises(InvalidInputError, match="Gather"):  # positions past the table
        cold.run(None, {"ids": np.zeros((1, 129), np.int64)})
