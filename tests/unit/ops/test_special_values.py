"""Numerics at the edges, against onnxruntime (and numpy where it agrees): log-sum-exp and the
softmaxes on rows of -inf, +inf, NaN and widely spread values; Range whose bounds span the
integer type (its length overflows int64 arithmetic) and its typed errors.

Compared bit for bit where both sides compute the same formula (NaN in the same places,
infinities equal), else at rtol 1e-5.
"""

from __future__ import annotations

import numpy as np
import pytest

import onnxc
from onnxc.errors import ModelLoadError
from tests.single_op import reference_run, single_op_model

INF = np.inf
ROWS = np.array([
    [-INF, -INF, -INF, -INF],     # log-sum-exp -inf (was NaN: -inf - -inf)
    [1.0, INF, 2.0, 3.0],         # log-sum-exp +inf (was NaN: inf - inf)
    [INF, -INF, 0.0, 1.0],
    [INF, INF, 1.0, 2.0],
    [0.0, -200.0, -100.0, 5.0],   # log-softmax -205 / -105 (was -inf: exp underflows)
    [np.nan, 1.0, 2.0, 3.0],
    [-INF, 0.0, 1.0, 2.0],
    [3e38, 3e38, -3e38, 0.0],
], np.float32)


def one_node_model(op: str, x: np.ndarray, **attrs):
    """`op` of a float input x of x's shape, opset 13, IR version 8 (onnxruntime's)."""
    return single_op_model(op, {"x": (np.float32, x.shape)}, {"y": (np.float32, None)},
                           attrs=attrs, opset=13, ir_version=8)


def onnxruntime_run(model, feeds: dict):
    return reference_run(model, feeds, "onnxruntime")


def assert_same(actual: np.ndarray, expected: np.ndarray, rtol: float = 1e-5) -> None:
    """NaN in the same places, infinities of the same sign, finite values close."""
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    np.testing.assert_array_equal(np.isnan(actual), np.isnan(expected))
    finite = np.isfinite(expected)
    np.testing.assert_array_equal(actual[~finite & ~np.isnan(expected)],
                                  expected[~finite & ~np.isnan(expected)])
    np.testing.assert_allclose(actual[finite], expected[finite], rtol=rtol, atol=1e-6)


def numpy_log_sum_exp(x: np.ndarray, axis: int) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.log(np.sum(np.exp(x.astype(np.float64)), axis=axis, keepdims=True))


@pytest.mark.parametrize("level", [0, 3])
@pytest.mark.parametrize("op, attrs", [
    ("ReduceLogSumExp", {"axes": [1], "keepdims": 1}),
    ("ReduceLogSumExp", {"axes": [0], "keepdims": 0}),
    ("ReduceLogSum", {"axes": [1], "keepdims": 1}),
    ("LogSoftmax", {"axis": 1}),
    ("LogSoftmax", {"axis": 0}),
    ("Softmax", {"axis": 1}),
], ids=lambda v: str(v).replace(" ", ""))
def test_infinite_and_nan_rows_match_onnxruntime(op: str, attrs: dict, level: int):
    model = one_node_model(op, ROWS, **attrs)
    (expected,) = onnxruntime_run(model, {"x": ROWS})
    (actual,) = onnxc.compile(model, opt_level=level, cache_dir=False).run(None, {"x": ROWS})
    assert_same(actual, expected)


def test_log_sum_exp_matches_numpy_on_infinite_rows():
    """numpy's plain log(sum(exp(x))) agrees wherever it does not overflow: -inf for a row of
    -inf, +inf for a row holding +inf, NaN with a NaN."""
    x = ROWS[:7]  # the last row overflows exp() in numpy's plain formula
    model = one_node_model("ReduceLogSumExp", x, axes=[1], keepdims=1)
    (actual,) = onnxc.compile(model, cache_dir=False).run(None, {"x": x})
    assert_same(actual, numpy_log_sum_exp(x, 1).astype(np.float32))
    assert actual[0, 0] == -INF and actual[1, 0] == INF


# --------------------------------------------------------------------------- Range


def range_model(start, limit, delta, dtype):
    bounds = {n: np.array(v, dtype=dtype) for n, v in
              zip(("start", "limit", "delta"), (start, limit, delta))}
    return single_op_model("Range", {}, {"y": (dtype, None)}, initializers=bounds, opset=13,
                           ir_version=8, node_name="range_node")


I64, I32 = np.iinfo(np.int64), np.iinfo(np.int32)


@pytest.mark.parametrize("start, limit, delta, dtype", [
    (I64.min, I64.max, 2**62, np.int64),        # 4 elements: limit - start overflows int64
    (I64.max, I64.min, -2**62, np.int64),
    (I64.min, I64.max, 2**53, np.int64),        # 2048 elements: the graph.range kernel
    (I64.max - 5, I64.max, 2, np.int64),
    (I32.min, I32.max, 2**30, np.int32),
    (I32.max, I32.min, -2**20, np.int32),       # 4096 elements, kernel, int32
    (-2**15, 2**15 - 1, 7, np.int16),
    (3, -2, 1, np.int64),                       # empty
    (0.0, 1.0, 0.1, np.float32),
    (5.0, -3000.0, -0.7, np.float64),           # kernel, float64
    (0.0, 3000.0, 1.5, np.float32),             # kernel, float32
], ids=str)
def test_range_matches_onnxruntime(start, limit, delta, dtype):
    model = range_model(start, limit, delta, dtype)
    (expected,) = onnxruntime_run(model, {})
    for level in (0, 3):
        (actual,) = onnxc.compile(model, opt_level=level, cache_dir=False).run(None, {})
        assert actual.shape == expected.shape and actual.dtype == expected.dtype
        if actual.dtype.kind == "f":
            # onnxruntime accumulates start += delta; start + i * delta (ONNX's formula,
            # which onnx.reference follows) differs from it by the accumulated rounding
            np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-4)
        else:
            np.testing.assert_array_equal(actual, expected)


@pytest.mark.parametrize("start, limit, delta, dtype, message", [
    (0, 10, 0, np.int64, "delta is zero"),
    (0.0, 1.0, -0.0, np.float32, "delta is zero"),
    (0.0, INF, 1.0, np.float32, "not finite"),
    (0.0, np.nan, 1.0, np.float32, "not finite"),
    (0.0, 1e30, 1.0, np.float32, "do not fit an int64 dimension"),
    (I64.min, I64.max, 1, np.int64, "do not fit an int64 dimension"),
], ids=str)
def test_range_refusals_are_typed(start, limit, delta, dtype, message):
    """onnxruntime refuses these too (INVALID_ARGUMENT); here at import, naming the node."""
    with pytest.raises(ModelLoadError, match=message) as caught:
        onnxc.compile(range_model(start, limit, delta, dtype), cache_dir=False)
    assert "range_node" in str(caught.value)
