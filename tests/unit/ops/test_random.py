"""Random generators (RandomUniform/Normal and *Like, Bernoulli, Multinomial, Dropout in
training mode): their numbers cannot equal onnxruntime's (another generator), so these tests
check shapes and dtypes, seeds (the same numbers every run and from a warm compile cache,
other seeds other numbers, no seed new numbers per run), that no pass merges or folds a draw,
and the distributions' statistics.

Statistical bounds: every check is at 6 standard errors of its statistic for the sample
size used (a false failure has probability below 1e-8 per check for the seeded draws; the
seeded ones are fixed numbers anyway, the unseeded ones are drawn afresh); histograms are
checked by Pearson's chi-square against 60 for 19 degrees of freedom (p < 1e-6).
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import onnxc
from onnxc.errors import ModelLoadError, UnsupportedOpError
from onnxc.frontend.onnx_importer import import_onnx
from onnxc.passes.evaluator import evaluate
from tests.single_op import graph_model, single_op_model

F32 = np.float32
N = 200_000
DTYPES = {TensorProto.FLOAT16: np.float16, TensorProto.FLOAT: np.float32,
          TensorProto.DOUBLE: np.float64}


def _generator(op: str, **attrs):
    return single_op_model(op, {}, {"y": None}, attrs={"shape": [N // 100, 100], **attrs},
                           opset=17)


def _chi_square(counts: np.ndarray, expected: np.ndarray) -> float:
    return float(((counts - expected) ** 2 / expected).sum())


def _check_uniform(y: np.ndarray, low: float, high: float) -> None:
    # float16 draws are made in float32 (widen-half-graph) and cast: the cast may round up
    # to `high` itself (graph_random.below_high clamps the float32 draw only)
    top_ok = y.max() <= high if y.dtype == np.float16 else y.max() < high
    y = y.astype(np.float64).reshape(-1)
    n, sigma = y.size, (high - low) / np.sqrt(12)
    assert low <= y.min() and top_ok
    assert abs(y.mean() - (low + high) / 2) < 6 * sigma / np.sqrt(n)
    # the variance of a uniform sample's variance: (mu4 - sigma^4) / n, mu4 = 9/5 sigma^4
    assert abs(y.var() - sigma**2) < 6 * sigma**2 * np.sqrt(0.8 / n)
    counts, _ = np.histogram(y, bins=20, range=(low, high))
    assert _chi_square(counts, np.full(20, n / 20)) < 60


def _check_normal(y: np.ndarray, mean: float, scale: float) -> None:
    y = y.astype(np.float64).reshape(-1)
    n = y.size
    assert abs(y.mean() - mean) < 6 * scale / np.sqrt(n)
    assert abs(y.var() - scale**2) < 6 * scale**2 * np.sqrt(2 / n)  # mu4 = 3 sigma^4
    from math import erf

    edges = np.linspace(-3, 3, 19)  # 20 bins over the standard normal's quantiles
    cdf = np.array([0.5 * (1 + erf(e / np.sqrt(2))) for e in edges])
    expected = np.diff(np.concatenate([[0.0], cdf, [1.0]])) * n
    counts = np.bincount(np.searchsorted(edges, (y - mean) / scale), minlength=20)
    assert _chi_square(counts, expected) < 60


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_random_uniform(dtype):
    model = _generator("RandomUniform", low=-2.0, high=3.0, dtype=dtype, seed=1.0)
    (y,) = onnxc.compile(model).run(None, {})
    assert y.shape == (N // 100, 100) and y.dtype == DTYPES[dtype]
    _check_uniform(y, -2.0, 3.0)


def test_uniform_draws_stay_below_high():
    """[low, high): a draw that rounds up to `high` in float32 takes the largest float32
    below it. Over 8 steps of float32 above 1.0 a sixteenth of the draws round up (over [0,
    1) one in 2^25 did: a Bernoulli(1.0) drew a 0). The numpy reference clamps the same way.
    (The attributes are float32, so no such range exists for a float64 draw.)"""
    dtype, np_type = TensorProto.FLOAT, np.float32
    high = float(np_type(1.0) + 8 * np.finfo(np_type).eps)
    model = _generator("RandomUniform", low=1.0, high=high, dtype=dtype, seed=3.0)
    (y,) = onnxc.compile(model).run(None, {})
    top = np.nextafter(np_type(high), np_type(0.0))
    assert y.min() >= 1.0 and y.max() == top and (y == top).mean() > 0.05
    (evaluated,) = evaluate(import_onnx(model), {})
    np.testing.assert_array_equal(evaluated, y)


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_random_normal(dtype):
    model = _generator("RandomNormal", mean=1.5, scale=0.5, dtype=dtype, seed=2.0)
    (y,) = onnxc.compile(model).run(None, {})
    assert y.shape == (N // 100, 100) and y.dtype == DTYPES[dtype]
    _check_normal(y, 1.5, 0.5)


def test_like_forms_take_a_symbolic_shape_and_the_input_or_given_type():
    model = single_op_model("RandomUniformLike", {"x": (np.int64, ["n", 4])}, {"y": None},
                            attrs={"dtype": TensorProto.DOUBLE, "high": 4.0}, opset=17)
    compiled = onnxc.compile(model)
    for n in (1, 7, N // 4):
        (y,) = compiled.run(None, {"x": np.zeros((n, 4), np.int64)})
        assert y.shape == (n, 4) and y.dtype == np.float64
    _check_uniform(y, 0.0, 4.0)
    model = single_op_model("RandomNormalLike", {"x": (np.float16, ["n"])}, {"y": None},
                            opset=17)
    (y,) = onnxc.compile(model).run(None, {"x": np.zeros(N, np.float16)})
    assert y.dtype == np.float16
    _check_normal(y, 0.0, 1.0)


def test_a_seed_gives_the_same_numbers_every_run_and_from_the_warm_cache(tmp_path):
    model = _generator("RandomNormal", seed=7.0)
    cold = onnxc.compile(model, cache_dir=tmp_path)
    first = cold.run(None, {})[0]
    np.testing.assert_array_equal(cold.run(None, {})[0], first)
    warm = onnxc.compile(model, cache_dir=tmp_path)
    assert warm.from_cache
    np.testing.assert_array_equal(warm.run(None, {})[0], first)
    other = onnxc.compile(_generator("RandomNormal", seed=8.0)).run(None, {})[0]
    assert (other != first).mean() > 0.99
    # the numpy reference: the same generator; 1e-6: numpy's float32 log / sin / cos and
    # libm's may differ in the last bits (at most 5e-7 measured over 1e5 draws)
    (evaluated,) = evaluate(import_onnx(model), {})
    np.testing.assert_allclose(evaluated, first, rtol=1e-6, atol=1e-6)


def test_without_a_seed_every_run_draws_new_numbers():
    compiled = onnxc.compile(_generator("RandomUniform"))
    a, b = compiled.run(None, {})[0], compiled.run(None, {})[0]
    assert (a != b).mean() > 0.99
    _check_uniform(b, 0.0, 1.0)


def test_draws_are_neither_merged_nor_folded():
    """Two identical unseeded draws stay two (CSE), a draw shaped like a constant stays a
    draw (constant folding), at the default optimization level."""
    nodes = [helper.make_node("RandomUniformLike", ["c"], ["a"]),
             helper.make_node("RandomUniformLike", ["c"], ["b"]),
             helper.make_node("Sub", ["a", "b"], ["d"])]
    model = graph_model(nodes, {}, {"d": None, "a": None},
                        initializers={"c": np.zeros((1000,), F32)}, opset=17)
    compiled = onnxc.compile(model)
    d, a = compiled.run(None, {})
    assert (d != 0).mean() > 0.99
    assert (compiled.run(None, {})[1] != a).mean() > 0.99


@pytest.mark.parametrize("dtype", [None, TensorProto.INT32, TensorProto.BOOL])
def test_bernoulli_frequencies(dtype):
    p = np.repeat(np.array([0.0, 0.1, 0.5, 0.9, 1.0], F32), N // 5)
    model = single_op_model("Bernoulli", {"p": p}, {"y": None}, opset=22,
                            attrs={} if dtype is None else {"dtype": dtype})
    (y,) = onnxc.compile(model).run(None, {"p": p})
    assert y.dtype == (F32 if dtype is None else {TensorProto.INT32: np.int32,
                                                   TensorProto.BOOL: np.bool_}[dtype])
    for value in np.unique(p):
        hits = y[p == value].astype(np.float64)
        assert abs(hits.mean() - value) <= 6 * np.sqrt(value * (1 - value) / hits.size)


@pytest.mark.parametrize("dtype", [TensorProto.INT32, TensorProto.INT64])
def test_multinomial_frequencies(dtype):
    logits = np.log(np.array([[0.1, 0.2, 0.3, 0.4], [0.7, 0.0, 0.0, 0.3]], F32) + 1e-30)
    model = single_op_model("Multinomial", {"x": logits}, {"y": None}, opset=7,
                            attrs={"sample_size": N // 4, "dtype": dtype, "seed": 4.0})
    (y,) = onnxc.compile(model).run(None, {"x": logits})
    assert y.shape == (2, N // 4)
    assert y.dtype == (np.int32 if dtype == TensorProto.INT32 else np.int64)
    for row in range(2):
        probabilities = np.exp(logits[row].astype(np.float64))
        counts = np.bincount(y[row], minlength=4)
        assert counts[probabilities == 0].sum() == 0
        kept = probabilities > 0
        assert _chi_square(counts[kept], probabilities[kept] * y.shape[1]) < 60


@pytest.mark.parametrize("ratio", [0.0, 0.3, 0.75])
def test_training_mode_dropout(ratio):
    x = np.random.default_rng(1).standard_normal(N).astype(F32)
    model = single_op_model("Dropout", {"x": x}, {"y": None, "mask": None},
                            node_inputs=["x", "r", "t"],
                            initializers={"r": np.array(ratio, F32), "t": np.array(True)},
                            opset=13)
    y, mask = onnxc.compile(model).run(None, {"x": x})
    assert mask.dtype == np.bool_
    np.testing.assert_allclose(y, np.where(mask, x / (1 - ratio), 0), rtol=1e-6)
    kept = mask.mean()
    assert abs(kept - (1 - ratio)) <= 6 * np.sqrt(ratio * (1 - ratio) / N)


def test_refusals_are_typed():
    with pytest.raises(ModelLoadError, match="shape"):
        onnxc.compile(single_op_model("RandomUniform", {}, {"y": None}, opset=17))
    with pytest.raises(UnsupportedOpError, match="dtype"):
        onnxc.compile(_generator("RandomNormal", dtype=TensorProto.INT32))
    with pytest.raises(ModelLoadError, match="low 2.0 / high 1.0"):
        onnxc.compile(_generator("RandomUniform", low=2.0, high=1.0))
    with pytest.raises(ModelLoadError, match="is not float16"):
        onnxc.compile(single_op_model("RandomUniformLike", {"x": (np.int64, [3])},
                                      {"y": None}, opset=17))


def test_exported_as_the_onnx_generators():
    """`onnxc optimize` writes a draw back as RandomNormal / RandomUniformLike (seed, dtype
    and parameters kept): onnx.reference runs the export (onnxruntime 1.32 has no
    RandomNormal kernel of opset 22+), and a seeded export compiles to the
    same numbers as the original."""
    nodes = [helper.make_node("RandomNormal", [], ["a"], shape=[3, 400], mean=2.0, scale=3.0,
                              seed=5.0),
             helper.make_node("RandomUniformLike", ["x"], ["b"], low=-1.0, high=1.0)]
    model = graph_model(nodes, {"x": (np.float32, [50_000, 2])}, {"a": None, "b": None},
                        opset=17)
    exported = onnxc.optimize(model, as_onnx=True)
    assert {n.op_type for n in exported.graph.node} == {"RandomNormal", "RandomUniformLike"}
    x = np.zeros((50_000, 2), F32)
    from onnx.reference import ReferenceEvaluator

    a, b = ReferenceEvaluator(exported).run(None, {"x": x})
    _check_normal(a, 2.0, 3.0)
    _check_uniform(b, -1.0, 1.0)
    np.testing.assert_array_equal(onnxc.compile(exported).run(None, {"x": x})[0],
                                  onnxc.compile(model).run(None, {"x": x})[0])


def test_multinomial_and_bernoulli_over_symbolic_sizes():
    model = single_op_model("Multinomial", {"x": (np.float32, ["b", 3])}, {"y": None},
                            attrs={"sample_size": N // 10, "seed": 1.0}, opset=7)
    compiled = onnxc.compile(model)
    probabilities = np.array([0.2, 0.3, 0.5])
    for b in (1, 4):
        x = np.log(np.tile(probabilities.astype(np.float32), (b, 1)))
        (y,) = compiled.run(None, {"x": x})
        assert y.shape == (b, N // 10)
        for row in y:
            assert _chi_square(np.bincount(row, minlength=3), probabilities * row.size) < 60
    model = single_op_model("Bernoulli", {"p": (np.float16, ["n"])}, {"y": None}, opset=22)
    (y,) = onnxc.compile(model).run(None, {"p": np.full(N, 0.25, np.float16)})
    assert y.dtype == np.float16
    assert abs(y.astype(np.float64).mean() - 0.25) <= 6 * np.sqrt(0.25 * 0.75 / N)
