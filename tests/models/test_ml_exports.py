"""scikit-learn models as skl2onnx writes them (tests/models/ml_exports, generate.py), each
compiled once with its batch symbolic and run on one sample and on the whole held-out
batch, cold and warm (the `cache_pass` fixture): against scikit-learn's own predictions
stored with the model, and against onnxruntime.

Tolerances:
- labels: exactly, against both;
- against onnxruntime: rtol 1e-5, atol 2e-5. The same f32 formulas, summed in another order
  (onnxc's matmuls against the coefficients and support vectors, onnxruntime's GEMM and
  per-pair loops); the largest measured: 2.3e-5 on svc_poly_breast_cancer's decision values
  of magnitude ~1e2 (a cube amplifies the kernel's rounding 3x), 3.1e-5 on
  svr_rbf_diabetes's predictions of ~1.5e2 (relative 2e-7);
- against scikit-learn: rtol 1e-4, atol 1e-5. scikit-learn computes in float64, the ONNX
  model in float32 with its coefficients rounded to float32 (relative ~6e-8 each, summed
  over up to 64 features and hundreds of support vectors); measured at most 2.4e-7 on
  probabilities and 4e-7 relative on regressions.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from onnxc.errors import UnsupportedOpError

pytestmark = pytest.mark.models

MODELS = Path(__file__).parent / "ml_exports" / "models"
NAMES = ("logreg_multinomial_iris", "logreg_binary_breast_cancer", "svc_rbf_proba_wine",
         "svc_rbf_iris", "svc_poly_breast_cancer", "svr_rbf_diabetes", "linear_svc_digits",
         "normalizer_logreg_wine", "binarizer_logreg_digits", "imputer_ridge_diabetes",
         "onehot_logreg_iris", "linear_regression_diabetes", "linear_svc_binary_breast_cancer",
         "one_class_svm_iris", "ridge_two_targets_diabetes")
ORT_TOL = {"rtol": 1e-5, "atol": 2e-5}
SKLEARN_TOL = {"rtol": 1e-4, "atol": 1e-5}


def _stored(name: str) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    with np.load(MODELS / f"{name}.npz") as data:
        return onnx.load(str(MODELS / f"{name}.onnx")), {k: data[k] for k in data.files}


def _compare_with_sklearn(outputs: list[np.ndarray], stored: dict[str, np.ndarray],
                          rows: slice) -> None:
    if "label" in stored:
        np.testing.assert_array_equal(outputs[0].reshape(-1), stored["label"][rows])
    for key in ("proba", "decision", "prediction"):
        if key not in stored:
            continue
        want = stored[key][rows]
        got = outputs[-1] if key != "prediction" else outputs[0]
        if key == "decision" and want.ndim == 1:
            # binary: the scores are [-s, s] for libsvm's decision value s of the pair
            # (class 0 vs 1), scikit-learn's decision_function is -s
            got = got[:, 0]
        np.testing.assert_allclose(got.reshape(want.shape), want, **SKLEARN_TOL)


@pytest.mark.parametrize("name", NAMES)
def test_ml_export_matches_sklearn_and_onnxruntime(name, cache_pass) -> None:
    model, stored = _stored(name)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    compiled = cache_pass.compile(model)
    assert compiled.inputs[0].shape[0] == "N"  # one compile for every batch size
    x = stored["X"]
    feed = session.get_inputs()[0].name
    for rows in (slice(0, 1), slice(None)):
        outputs = cache_pass.outputs(compiled.run(None, {feed: x[rows]}))
        expected = session.run(None, {feed: x[rows]})
        for got, want in zip(outputs, expected, strict=True):
            assert got.shape == want.shape and got.dtype == want.dtype
            if want.dtype == np.int64:
                np.testing.assert_array_equal(got, want)
            else:
                np.testing.assert_allclose(got, want, **ORT_TOL)
        _compare_with_sklearn(outputs, stored, rows)


def test_zipmap_export_is_refused_naming_the_node() -> None:
    import onnxc

    model, _ = _stored("logreg_zipmap_iris")
    with pytest.raises(UnsupportedOpError, match="zipmap.*False") as err:
        onnxc.compile(model)
    assert "ai.onnx.ml.ZipMap" in str(err.value) and "'ZipMap'" in str(err.value)


@pytest.mark.parametrize("name", ["binarizer_logreg_digits", "onehot_logreg_iris"])
def test_row_wise_ops_keep_the_batch_separable(name) -> None:
    """LinearClassifier ([N, C] -> [N] labels, [N, K] scores), OneHotEncoder ([N, C] ->
    [N, C, K]) and Normalizer are registered sample_wise(rows=True): the batch analysis
    proves these models separable although their ranks change (models whose Scaler or
    Imputer onnx's shape inference leaves unshaped are compiled symbolically instead)."""
    from onnxc.frontend.batch_axes import batch_axis

    model, _ = _stored(name)
    axis = batch_axis(model)
    assert axis is not None and axis.symbol == "N"
    assert dict(axis.outputs) == {"label": 1, "probabilities": 1}
