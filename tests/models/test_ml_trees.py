"""Tree ensembles as scikit-learn, LightGBM and XGBoost export them (tests/models/ml_exports,
generate_trees.py), each compiled once with its batch symbolic and run at two batch sizes,
cold and warm (bit-identical from the compile cache).

References and tolerances:
- onnxruntime (one thread): labels exactly; scores rtol 1e-6, atol 1e-7: onnxc compares
  exactly as onnxruntime does and sums the same f32 weights in the same tree order (the
  stored models agree bit for bit), but its exp / logistic / softmax are LLVM's and
  onnxruntime's own, a few ulp apart;
- the library's own predictions (stored): labels exactly; scores within
  trees * eps(f32) * (1 + max |prediction|): the libraries sum f64 leaf values, onnxc f32
  ones rounded once each, so each added tree may move the sum by an ulp of its magnitude;
- the LightGBM and XGBoost models' inputs have NaNs (about one value in seven), routed by
  nodes_missing_value_tracks_true.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import onnxc

pytestmark = pytest.mark.models

MODELS = Path(__file__).parent / "ml_exports" / "models"
NAMES = ("rf_classifier_classification", "gbr_500_diabetes", "gbc_binary_breast_cancer",
         "gbc_multiclass_iris", "extratrees_regressor_diabetes",
         "lgbm_classifier_breast_cancer", "lgbm_regressor_regression", "xgb_classifier_wine",
         "xgb_regressor_diabetes", "gbr_opset5_diabetes")
WITH_NANS = ("lgbm_classifier_breast_cancer", "lgbm_regressor_regression",
             "xgb_classifier_wine", "xgb_regressor_diabetes")
ML_OP_TYPES = ("TreeEnsembleRegressor", "TreeEnsembleClassifier", "TreeEnsemble")


def _load(name: str):
    model = onnx.load(MODELS / f"{name}.onnx")
    stored = dict(np.load(MODELS / f"{name}.npz"))
    return model, stored


def _trees(model: onnx.ModelProto) -> int:
    node = next(n for n in model.graph.node if n.op_type in ML_OP_TYPES)
    for a in node.attribute:
        if a.name == "tree_roots":
            return len(a.ints)
        if a.name == "nodes_treeids":
            return len(set(a.ints))
    raise AssertionError("no trees")


def _onnxruntime(model: onnx.ModelProto, x: np.ndarray) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})


@pytest.mark.parametrize("name", NAMES)
def test_tree_model_matches_its_library_and_onnxruntime(name, cache_pass):
    model, stored = _load(name)
    x = stored["X"]
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "N"
    if name in WITH_NANS:
        assert np.isnan(x).any() and not np.isnan(x).all(axis=1).any()
    compiled = cache_pass.compile(model, num_threads=1)
    trees = _trees(model)
    for rows in (x, x[:7]):  # one compile, two batch sizes
        ours = cache_pass.outputs(compiled(rows))
        theirs = _onnxruntime(model, rows)
        for a, b in zip(ours, theirs, strict=True):
            b = b.reshape(a.shape)
            if a.dtype == np.int64:
                np.testing.assert_array_equal(a, b, err_msg=name)
            else:
                np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7, err_msg=name)
        n = len(rows)
        eps = float(np.finfo(np.float32).eps)
        if "label" in stored:
            np.testing.assert_array_equal(ours[0], stored["label"][:n], err_msg=name)
            want = stored["proba"][:n]
            got = ours[1]
        else:
            want = stored["prediction"][:n]
            got = ours[0].reshape(-1)
        bound = trees * eps * (1 + float(np.abs(want).max()))
        np.testing.assert_allclose(got, want, rtol=0, atol=bound, err_msg=name)


@pytest.mark.parametrize("name", ["gbr_500_diabetes", "lgbm_regressor_regression",
                                  "rf_classifier_classification"])
def test_threads_split_the_batch_without_changing_a_bit(name, cache_pass):
    """Two threads over 4,000 rows (blocks of samples on the pool, and the rows past the
    last full block): each sample's sums are its own, so the outputs are the one-thread
    ones exactly."""
    model, stored = _load(name)
    x = np.ascontiguousarray(np.tile(stored["X"], (100, 1))[:4001])
    one = onnxc.compile(model, num_threads=1)(x)
    two = cache_pass.outputs(cache_pass.compile(model, num_threads=2)(x))
    for a, b in zip(one, two, strict=True):
        np.testing.assert_array_equal(a, b, err_msg=name)
