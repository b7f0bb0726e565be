"""The vector form of tree ensembles (lowering/graph_to_loops/tree_ensemble_simd.py): forests
of shallow trees, sixteen trees an AVX-512 vector or eight an AVX2 one, every node's test at
once.

Each forest here is one the vector form takes (asserted, so that a change of its limits
cannot silently leave it untested); it runs against onnxruntime, and compiled for the host
(AVX-512: 16 lanes), for x86-64-v3 (AVX2: 8 lanes, where its features fit two registers)
and for x86-64-v2 (no AVX: the walk), all alike. Tolerance: exact, labels and scores, as
the walk's: the same f32 comparisons and each column's leaf weights added one after another
in tree order (no transform here: exp and log would be a few ulp from onnxruntime's own).
Skipped where the host has no AVX-512.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest

import onnxc
from onnxc.dialects.graph_trees import TreeEnsembleFields
from onnxc.frontend.onnx_importer import import_onnx
from onnxc.lowering.graph_to_loops.tree_ensemble import _simd
from onnxc.target import host_target, parse_target
from tests.models.cache_passes import compile_warm, output_digest
from tests.single_op import reference_run, single_op_model
from tests.unit.ops.test_tree_ensemble import GRID, MODES, _node_attrs, _trees

pytestmark = pytest.mark.skipif(not host_target().has_feature("avx512f"),
                                reason="the vector form needs AVX-512")


def _forest(seed: int, features: int, targets: int = 1, per_class: bool = False,
            trees: int = 40, depth: int = 3, modes=MODES, missing: bool = True,
            early: float = 0.1, **extra) -> onnx.ModelProto:
    """A regressor over `features` inputs (the 4-feature trees' ids spread over them);
    `per_class`: each tree weighs one target (boosting's layout), else every leaf weighs
    each target."""
    rows, leaves = _trees(seed, trees=trees, depth=depth, modes=modes, missing=missing,
                          early=early)
    spread = max(1, features // 4)
    rows = [r if r[3] == "LEAF" else (*r[:2], r[2] * spread + seed % spread, *r[3:])
            for r in rows]
    rng = np.random.default_rng(seed + 1)
    weights = [(t, n, t % targets if per_class else c, float(rng.uniform(-1, 1)))
               for t, n in leaves for c in ([0] if per_class else range(targets))]
    attrs = _node_attrs(rows)
    attrs.update(target_treeids=[w[0] for w in weights], target_nodeids=[w[1] for w in weights],
                 target_ids=[w[2] for w in weights], target_weights=[w[3] for w in weights],
                 n_targets=targets, **extra)
    return single_op_model("TreeEnsembleRegressor", {"x": (np.float32, ["N", features])},
                           {"y": (np.float32, ["N", targets])}, attrs=attrs,
                           opset={"": 17, "ai.onnx.ml": 3}, domain="ai.onnx.ml",
                           ir_version=10, node_name="trees")


def _lanes(model: onnx.ModelProto, target: str | None = None) -> int | None:
    """The vector form's lanes for `target` (None: the host), None when it walks."""
    (op,) = [o for o in import_onnx(model).walk() if isinstance(o, TreeEnsembleFields)]
    forest = _simd(op, op.tables(), host_target() if target is None else parse_target(target))
    return None if forest is None else forest.lanes


def _check(model: onnx.ModelProto, features: int, seed: int = 0) -> None:
    assert _lanes(model) == 16
    assert _lanes(model, "x86-64-v3") == (8 if features < 16 else None)
    assert _lanes(model, "x86-64-v2") is None
    compiled = [onnxc.compile(model, target=t) for t in (None, "x86-64-v3", "x86-64-v2")]
    rng = np.random.default_rng(seed)
    for n in (1, 17):
        x = rng.choice(GRID, size=(n, features)).astype(np.float32)
        x[rng.random(x.shape) < 0.15] = np.nan
        feeds = {"x": x}
        expected = reference_run(model, feeds)
        for c in compiled:
            for g, e in zip(c.run(None, feeds), expected, strict=True):
                np.testing.assert_array_equal(g, e)


@pytest.mark.parametrize("features", [4, 7, 12, 15, 20, 31], ids=lambda f: f"{f}_features")
def test_every_mode_with_missing_values(features):
    """Lower and upper bounds (BRANCH_GT / GTE give lower ones), NaNs routed by
    missing_value_tracks_true; with the padding lane, 4 and 7 features fill one AVX2
    register, 12 and 15 one AVX-512 register or two AVX2 ones, 20 and 31 two AVX-512 ones."""
    _check(_forest(1 + features, features), features)


@pytest.mark.parametrize("depth", [1, 2, 4, 5])
def test_depths_and_padded_leaves(depth):
    """Leaves above the forest's depth padded by always-true tests; 37 trees leave 11
    lanes of the last group to empty trees."""
    _check(_forest(40 + depth, 8, trees=37, depth=depth, early=0.05), 8)


@pytest.mark.parametrize("aggregate", ["SUM", "AVERAGE"])
def test_leaves_weighing_every_target(aggregate):
    _check(_forest(50, 6, targets=3, aggregate_function=aggregate,
                   base_values=[0.5, -1.0, 2.0]), 6)


def test_a_tree_per_target():
    """Boosting's layout: a segment of groups per target, each summed in tree order."""
    _check(_forest(60, 10, targets=3, per_class=True, trees=51), 10)


def test_classifier_labels():
    """A classifier's labels and scores over the vector form's sums."""
    rows, leaves = _trees(70, trees=48, missing=True, early=0.1)
    rng = np.random.default_rng(71)
    attrs = _node_attrs(rows)
    attrs.update(class_treeids=[t for t, _ in leaves], class_nodeids=[n for _, n in leaves],
                 class_ids=[t % 3 for t, _ in leaves],
                 class_weights=rng.uniform(-1, 1, len(leaves)).tolist(),
                 classlabels_int64s=[3, 5, 7])
    model = single_op_model("TreeEnsembleClassifier", {"x": (np.float32, ["N", 4])},
                            {"label": (np.int64, ["N"]), "scores": (np.float32, ["N", 3])},
                            attrs=attrs, opset={"": 17, "ai.onnx.ml": 3},
                            domain="ai.onnx.ml", ir_version=10, node_name="trees")
    _check(model, 4)


def test_warm_compile_is_bit_identical():
    model = _forest(80, 12, targets=2, trees=33)
    x = np.random.default_rng(3).choice(GRID, size=(21, 12)).astype(np.float32)
    cold = onnxc.compile(model).run(None, {"x": x})
    warm = compile_warm(model, filled=True).run(None, {"x": x})
    assert output_digest(cold) == output_digest(warm)
