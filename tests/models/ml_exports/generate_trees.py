"""Regenerate the tree-ensemble exports (models/<name>.onnx and models/<name>.npz).

Runs in the ML venv, not in onnxc's environment. Pins (the versions these files were made
with): scikit-learn==1.9.1 skl2onnx==1.20.0 onnxmltools==1.16.0 lightgbm==4.7.0
xgboost==3.2.0 onnxruntime==1.32.0 onnx==1.23.2.

    /work/venvs/ml/bin/python tests/models/ml_exports/generate_trees.py            # all
    /work/venvs/ml/bin/python tests/models/ml_exports/generate_trees.py gbr_500_diabetes

Each model is fitted with a fixed seed on a scikit-learn bundled dataset or a seeded
make_classification / make_regression (no download); scikit-learn models are converted by
skl2onnx (`zipmap=False`), LightGBM and XGBoost ones by onnxmltools, all with ai.onnx.ml
opset 3 except `gbr_opset5_diabetes`, written by skl2onnx with ai.onnx.ml opset 5
(TreeEnsemble). The batch axis is named "N". Stored with the held-out batch: `X`, the source
library's `label` and `proba` (classifiers) or `prediction` (regressors). Models marked
`nan` were fitted and are evaluated with missing values (NaN) in X: LightGBM and XGBoost
route them with nodes_missing_value_tracks_true. The generator checks onnxruntime gives
the library's labels on the stored batch.
"""

from __future__ import annotations

import sys
from pathlib import Path

import lightgbm
import numpy as np
import onnx
import onnxmltools
import onnxruntime as ort
import skl2onnx
import sklearn
import xgboost
from bundled import bundled_data, with_nans  # this folder's data, shared with generate.py
from onnxmltools.convert.common.data_types import FloatTensorType
from skl2onnx import to_onnx
from sklearn import datasets
from sklearn.ensemble import (
    ExtraTreesRegressor,
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    RandomForestClassifier,
)
from sklearn.model_selection import train_test_split

HERE = Path(__file__).resolve().parent
OUT = HERE / "models"
SEED = 0
HELD_OUT = 40
OPSETS = {"": 17, "ai.onnx.ml": 3}


def _data(name: str):
    if name == "classification":
        x, y = datasets.make_classification(n_samples=2000, n_features=20, n_informative=10,
                                            n_classes=3, random_state=SEED)
    elif name == "regression":
        x, y = datasets.make_regression(n_samples=2000, n_features=10, noise=5.0,
                                        random_state=SEED)
    else:
        return bundled_data(name)
    return x.astype(np.float32), y


def _models():
    """name -> (estimator, dataset, converter, NaNs in X, what it has)."""
    return {
        "rf_classifier_classification": (
            RandomForestClassifier(n_estimators=100, max_leaf_nodes=160, random_state=SEED),
            "classification", "skl2onnx", False,
            "RandomForestClassifier, 100 trees of up to 319 nodes, 3 classes"),
        "gbr_500_diabetes": (
            GradientBoostingRegressor(n_estimators=500, max_depth=3, random_state=SEED),
            "diabetes", "skl2onnx", False, "GradientBoostingRegressor, 500 trees of depth 3"),
        "gbc_binary_breast_cancer": (
            GradientBoostingClassifier(n_estimators=100, random_state=SEED), "breast_cancer",
            "skl2onnx", False, "GradientBoostingClassifier, binary (one weight column)"),
        "gbc_multiclass_iris": (
            GradientBoostingClassifier(n_estimators=50, random_state=SEED), "iris", "skl2onnx",
            False, "GradientBoostingClassifier, 3 classes (a tree per class per round)"),
        "extratrees_regressor_diabetes": (
            ExtraTreesRegressor(n_estimators=50, max_depth=8, random_state=SEED), "diabetes",
            "skl2onnx", False, "ExtraTreesRegressor, 50 trees of depth <= 8"),
        "lgbm_classifier_breast_cancer": (
            lightgbm.LGBMClassifier(n_estimators=100, random_state=SEED, verbose=-1),
            "breast_cancer", "lightgbm", True, "LGBMClassifier, binary, NaN inputs"),
        "lgbm_regressor_regression": (
            lightgbm.LGBMRegressor(n_estimators=200, random_state=SEED, verbose=-1),
            "regression", "lightgbm", True, "LGBMRegressor, 200 trees of 31 leaves, NaN inputs"),
        "xgb_classifier_wine": (
            xgboost.XGBClassifier(n_estimators=50, max_depth=4, random_state=SEED), "wine",
            "xgboost", True, "XGBClassifier, 3 classes, NaN inputs"),
        "xgb_regressor_diabetes": (
            xgboost.XGBRegressor(n_estimators=100, max_depth=6, random_state=SEED), "diabetes",
            "xgboost", True, "XGBRegressor, 100 trees of depth <= 6, NaN inputs"),
        "gbr_opset5_diabetes": (
            GradientBoostingRegressor(n_estimators=100, max_depth=4, random_state=SEED),
            "diabetes", "skl2onnx-ml5", False,
            "GradientBoostingRegressor as ai.onnx.ml opset 5 TreeEnsemble"),
    }


def _named_batch(model: onnx.ModelProto) -> None:
    """The leading dimension of every graph input and output named "N"."""
    for value in [*model.graph.input, *model.graph.output]:
        dims = value.type.tensor_type.shape.dim
        if dims:
            dims[0].ClearField("dim_value")
            dims[0].dim_param = "N"


def _convert(estimator, converter: str, x_train: np.ndarray) -> onnx.ModelProto:
    if converter == "skl2onnx":
        options = {"zipmap": False} if hasattr(estimator, "classes_") else None
        return to_onnx(estimator, x_train[:1], options=options, target_opset=OPSETS)
    if converter == "skl2onnx-ml5":  # skl2onnx 1.20 still writes TreeEnsembleRegressor
        return _as_opset5(to_onnx(estimator, x_train[:1], target_opset=OPSETS))
    initial = [("X", FloatTensorType([None, x_train.shape[1]]))]
    convert = (onnxmltools.convert_lightgbm if converter == "lightgbm"
               else onnxmltools.convert_xgboost)
    options = {"zipmap": False} if hasattr(estimator, "classes_") else None
    kwargs = {"zipmap": False} if options and converter == "lightgbm" else {}
    onx = convert(estimator, initial_types=initial, target_opset=15, **kwargs)
    if not any(o.domain in ("", "ai.onnx") for o in onx.opset_import):
        # onnxmltools imports only ai.onnx.ml when the graph has no default-domain node;
        # onnxc (as the ONNX checker's full check) wants the default opset declared
        onx.opset_import.append(onnx.helper.make_opsetid("", 15))
    return onx


_MODE_CODES = {"BRANCH_LEQ": 0, "BRANCH_LT": 1, "BRANCH_GTE": 2, "BRANCH_GT": 3,
               "BRANCH_EQ": 4, "BRANCH_NEQ": 5}


def _as_opset5(onx: onnx.ModelProto) -> onnx.ModelProto:
    """The model's TreeEnsembleRegressor rewritten as ai.onnx.ml opset 5's TreeEnsemble:
    interior nodes and leaves numbered apart, each tree's root by position."""
    (node,) = [n for n in onx.graph.node if n.op_type == "TreeEnsembleRegressor"]
    a = {x.name: onnx.helper.get_attribute_value(x) for x in node.attribute}
    modes = [m.decode() for m in a["nodes_modes"]]
    keys = list(zip(a["nodes_treeids"], a["nodes_nodeids"]))
    inner = {k: i for i, k in enumerate(k for k, m in zip(keys, modes) if m != "LEAF")}
    leaves = {k: i for i, k in enumerate(k for k, m in zip(keys, modes) if m == "LEAF")}
    weights = np.zeros(len(leaves), np.float32)
    targets = [0] * len(leaves)
    for t, n, i, w in zip(a["target_treeids"], a["target_nodeids"], a["target_ids"],
                          a["target_weights"]):
        weights[leaves[t, n]] += w
        targets[leaves[t, n]] = i
    rows = [(k, m, f, v, tr, fa) for k, m, f, v, tr, fa in zip(
        keys, modes, a["nodes_featureids"], a["nodes_values"], a["nodes_truenodeids"],
        a["nodes_falsenodeids"]) if m != "LEAF"]

    def child(tree: int, nid: int) -> tuple[int, int]:
        return (1, leaves[tree, nid]) if (tree, nid) in leaves else (0, inner[tree, nid])

    trues = [child(k[0], tr) for k, _, _, _, tr, _ in rows]
    falses = [child(k[0], fa) for k, _, _, _, _, fa in rows]
    roots = sorted({inner[k] for k in inner if k[1] == 0})
    # opset 5 has no base_values: the base is one more tree, a node whose branches both
    # reach one leaf of that weight
    base = float(a.get("base_values", [0.0])[0])
    roots.append(len(rows))
    rows.append(((-1, 0), "BRANCH_LEQ", 0, 0.0, 0, 0))
    trues.append((1, len(leaves)))
    falses.append((1, len(leaves)))
    weights = np.append(weights, np.float32(base))
    targets.append(0)
    new = onnx.helper.make_node(
        "TreeEnsemble", list(node.input), list(node.output), domain="ai.onnx.ml",
        n_targets=a["n_targets"], aggregate_function=1, post_transform=0, tree_roots=roots,
        nodes_featureids=[r[2] for r in rows],
        nodes_splits=onnx.numpy_helper.from_array(np.array([r[3] for r in rows], np.float32)),
        nodes_modes=onnx.numpy_helper.from_array(
            np.array([_MODE_CODES[r[1]] for r in rows], np.uint8)),
        nodes_truenodeids=[c for _, c in trues], nodes_trueleafs=[leaf for leaf, _ in trues],
        nodes_falsenodeids=[c for _, c in falses],
        nodes_falseleafs=[leaf for leaf, _ in falses],
        leaf_targetids=targets, leaf_weights=onnx.numpy_helper.from_array(weights))
    nodes = [new if n is node else n for n in onx.graph.node]
    graph = onnx.helper.make_graph(nodes, onx.graph.name, onx.graph.input, onx.graph.output,
                                   onx.graph.initializer)
    return onnx.helper.make_model(graph, opset_imports=[
        onnx.helper.make_opsetid("", 21), onnx.helper.make_opsetid("ai.onnx.ml", 5)])


def build(name: str, spec) -> str:
    estimator, dataset, converter, nans, what = spec
    x, y = _data(dataset)
    if nans:
        x = with_nans(x)
    stratify = y if y.dtype.kind == "i" else None
    x_train, x_test, y_train, _ = train_test_split(x, y, test_size=HELD_OUT,
                                                   random_state=SEED, stratify=stratify)
    estimator.fit(x_train, y_train)
    onx = _convert(estimator, converter, x_train)
    _named_batch(onx)
    onnx.checker.check_model(onx)
    stored = {"X": x_test}
    if hasattr(estimator, "classes_"):
        stored["label"] = estimator.predict(x_test).astype(np.int64)
        stored["proba"] = estimator.predict_proba(x_test).astype(np.float32)
    else:
        stored["prediction"] = estimator.predict(x_test).astype(np.float32)
    session = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    got = session.run(None, {session.get_inputs()[0].name: x_test})
    if "label" in stored:
        assert np.array_equal(got[0].reshape(-1), stored["label"]), f"{name}: onnxruntime's labels"
    else:
        want = stored["prediction"]
        assert np.allclose(got[0].reshape(-1), want, atol=1e-4 * np.abs(want).max()), name
    onnx.save(onx, OUT / f"{name}.onnx")
    np.savez(OUT / f"{name}.npz", **stored)
    ops = sorted({f"{n.domain or 'ai.onnx'}.{n.op_type}" for n in onx.graph.node})
    ml = next(o.version for o in onx.opset_import if o.domain == "ai.onnx.ml")
    library = {"skl2onnx": f"scikit-learn {sklearn.__version__}, skl2onnx {skl2onnx.__version__}",
               "skl2onnx-ml5": f"scikit-learn {sklearn.__version__}, skl2onnx "
                               f"{skl2onnx.__version__}",
               "lightgbm": f"lightgbm {lightgbm.__version__}, onnxmltools "
                           f"{onnxmltools.__version__}",
               "xgboost": f"xgboost {xgboost.__version__}, onnxmltools "
                          f"{onnxmltools.__version__}"}[converter]
    size = (OUT / f"{name}.onnx").stat().st_size // 1024
    return (f"| {name} | {library} | {dataset}: {what} | {', '.join(ops)} (ai.onnx.ml {ml}) "
            f"| {size} KB |")


def main(names: list[str]) -> None:
    OUT.mkdir(exist_ok=True)
    specs = _models()
    for name in names or specs:
        print(build(name, specs[name]), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
