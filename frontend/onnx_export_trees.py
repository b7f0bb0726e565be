"""ONNX exporters of the tree-ensemble ops (dialects/graph_trees.py): back to ai.onnx.ml
opset 3's TreeEnsembleRegressor / TreeEnsembleClassifier.

Each tree is written from its root, its nodes numbered depth-first. A canonical interval
becomes one node when it has one finite bound (BRANCH_LEQ upper, BRANCH_GTE lower), or is a
point (BRANCH_EQ) or empty (BRANCH_LT -inf: never true, as the interval); an interval with
two finite bounds becomes two nodes (GTE lower, then LEQ upper). A NaN's route is kept with
nodes_missing_value_tracks_true. Thresholds are the exact bounds: floats, or double
tensors for a double ensemble (whose result is then f32, as TreeEnsembleRegressor's)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper
from xdsl.dialects.builtin import f64
from xdsl.ir import Operation

from onnxc.dialects.graph_trees import (
    TreeEnsembleClassifierOp,
    TreeEnsembleFields,
    TreeEnsembleRegressorOp,
)
from onnxc.frontend.onnx_export import Emitter, OnnxWriter

ML_DOMAIN = "ai.onnx.ml"
ML_OPSET = 3
"""the ai.onnx.ml version the exporter writes when a tree ensemble is in the model"""


def _nodes(op: TreeEnsembleFields, prefix: str) -> dict:
    """The nodes_* and <prefix>_* attributes of `op`'s trees."""
    t = op.tables()
    a: dict[str, list] = {k: [] for k in (
        "nodes_treeids", "nodes_nodeids", "nodes_featureids", "nodes_modes", "nodes_values",
        "nodes_truenodeids", "nodes_falsenodeids", "nodes_missing_value_tracks_true",
        f"{prefix}_treeids", f"{prefix}_nodeids", f"{prefix}_ids", f"{prefix}_weights")}

    rows: dict[int, tuple] = {}

    def node(tree: int, nid: int, mode: str, feature: int, value: float, true: int,
             false: int, missing: int) -> None:
        rows[nid] = (tree, nid, feature, mode, value, true, false, missing)

    for tree, root in enumerate(t.roots.tolist()):
        ids: dict[int, int] = {}
        counter = [0]

        def fresh() -> int:
            counter[0] += 1
            return counter[0] - 1

        def write(k: int) -> int:
            if k in ids:  # a node two parents share is written once per tree
                return ids[k]
            ids[k] = nid = fresh()
            inside, outside = int(t.children[2 * k]), int(t.children[2 * k + 1])
            if inside == k and outside == k:
                node(tree, nid, "LEAF", 0, 0.0, 0, 0, 0)
                for col in np.flatnonzero(t.has_weight[k]).tolist():
                    for key, v in (("treeids", tree), ("nodeids", nid), ("ids", col),
                                   ("weights", float(t.leaf_weights[k, col]))):
                        a[f"{prefix}_{key}"].append(v)
                return nid
            lo, hi = float(t.lower[k]), float(t.upper[k])
            f, nan = int(t.features[k]), int(t.nan_inside[k])
            if lo > hi:
                mode, value = "BRANCH_LT", -np.inf
            elif lo == hi:
                mode, value = "BRANCH_EQ", lo
            elif lo == -np.inf:
                mode, value = "BRANCH_LEQ", hi
            elif hi == np.inf:
                mode, value = "BRANCH_GTE", lo
            else:  # two finite bounds: GTE lower, then LEQ upper
                mode, value = "BRANCH_GTE", lo
                a_in, a_out = write(inside), write(outside)
                upper = fresh()
                node(tree, upper, "BRANCH_LEQ", f, hi, a_in, a_out, nan)
                node(tree, nid, mode, f, value, upper, a_out, nan)
                return nid
            node(tree, nid, mode, f, value, write(inside), write(outside), nan)
            return nid

        write(root)
        for nid in sorted(rows):  # the root first: readers take a tree's first node
            for key, v in zip(("treeids", "nodeids", "featureids", "modes", "values",
                               "truenodeids", "falsenodeids", "missing_value_tracks_true"),
                              rows[nid]):
                a[f"nodes_{key}"].append(v)
        rows.clear()
    return a


def _common(op: TreeEnsembleFields, a: dict, prefix: str) -> dict:
    """The transform and base values; a double ensemble's thresholds, weights and base
    values as double tensors (`*_as_tensor`), exact."""
    t = op.tables()
    a["post_transform"] = op.post_transform.data
    if len(t.base_values):
        a["base_values"] = t.base_values.tolist()
    if t.dtype == np.float64:
        for name in ("nodes_values", f"{prefix}_weights", "base_values"):
            if name in a:
                a[f"{name}_as_tensor"] = numpy_helper.from_array(
                    np.asarray(a.pop(name), np.float64))
    return a


def _regressor(w: OnnxWriter, op: TreeEnsembleRegressorOp) -> None:
    a = _common(op, _nodes(op, "target"), "target")
    a["n_targets"] = op.tables().columns
    a["aggregate_function"] = op.aggregate.data
    if op.output.type.get_element_type() != f64:
        w.emit(op, "TreeEnsembleRegressor", [w.name(op.input)], domain=ML_DOMAIN, **a)
        return
    # an f64 result (opset 5's TreeEnsemble of a double input): TreeEnsembleRegressor
    # writes f32, so a Cast follows (its sums are double, its result rounded once)
    scores = w.fresh("tree_scores")
    w.emit(op, "TreeEnsembleRegressor", [w.name(op.input)], outputs=[scores],
           domain=ML_DOMAIN, **a)
    w.node("Cast", [scores], [w.name(op.output)], name=w.fresh("tree_scores_cast"),
           to=onnx.TensorProto.DOUBLE)


def _classifier(w: OnnxWriter, op: TreeEnsembleClassifierOp) -> None:
    a = _common(op, _nodes(op, "class"), "class")
    a["classlabels_int64s"] = [int(v) for v in op.class_labels.get_values()]
    w.emit(op, "TreeEnsembleClassifier", [w.name(op.input)], domain=ML_DOMAIN, **a)


TREE_EMITTERS: dict[type[Operation], Emitter] = {
    TreeEnsembleRegressorOp: _regressor,
    TreeEnsembleClassifierOp: _classifier,
}
