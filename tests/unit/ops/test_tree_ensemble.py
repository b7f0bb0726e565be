"""ai.onnx.ml's tree ensembles, one node each, against onnxruntime: random forests written in
every encoding (TreeEnsembleRegressor / TreeEnsembleClassifier opsets 1 and 3 with the
`*_as_tensor` double thresholds, opset 5's TreeEnsemble with BRANCH_MEMBER sets), every
node mode, NaN inputs with and without missing-value tracking, every aggregate and post
transform, onnxruntime's binary classifier cases; each compiled once with a symbolic batch
and run at N = 1 and 9; and the refusals of malformed trees (typed errors naming the node).

Inputs are drawn from a small grid that holds the thresholds, so equalities and the LEQ /
LT difference are met. Tolerance: labels and regressions without a transform exactly (the
same comparisons, the same f32 sums in tree order); transformed scores rtol 1e-6, atol 1e-7
(exp and log are LLVM's against onnxruntime's own: a few ulp).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import onnxc
from onnxc.errors import ModelLoadError, UnsupportedOpError
from tests.models.cache_passes import compile_warm, output_digest
from tests.single_op import reference_run, single_op_model

F = 4
GRID = np.array([-1.0, -0.5, 0.0, 0.25, 0.5, 1.0, 2.0], np.float32)
MODES = ("BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ")


def _trees(seed: int, trees: int = 6, depth: int = 3, modes=MODES, missing: bool = False,
           early: float = 0.25):
    """Random trees as (tree, node, feature, mode, threshold, true, false, tracks) rows and
    the leaves as (tree, node) pairs."""
    rng = np.random.default_rng(seed)
    rows, leaves = [], []
    for t in range(trees):
        count = [0]

        def grow(level: int, t=t, count=count) -> int:
            nid = count[0]
            count[0] += 1
            if level == depth or (level > 0 and rng.random() < early):
                rows.append((t, nid, 0, "LEAF", 0.0, 0, 0, 0))
                leaves.append((t, nid))
                return nid
            at = len(rows)
            rows.append(None)
            true, false = grow(level + 1), grow(level + 1)
            rows[at] = (t, nid, int(rng.integers(F)), str(rng.choice(modes)),
                        float(rng.choice(GRID)), true, false,
                        int(rng.integers(2)) if missing else 0)
            return nid

        grow(0)
    return rows, leaves


def _inputs(n: int, seed: int, nans: bool = False, grid=GRID) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.choice(grid, size=(n, F)).astype(np.float32)
    if nans:
        x[rng.random(x.shape) < 0.2] = np.nan
    return x


def _node_attrs(rows, as_tensor: bool = False) -> dict:
    values = [r[4] for r in rows]
    a = {"nodes_treeids": [r[0] for r in rows], "nodes_nodeids": [r[1] for r in rows],
         "nodes_featureids": [r[2] for r in rows], "nodes_modes": [r[3] for r in rows],
         "nodes_truenodeids": [r[5] for r in rows], "nodes_falsenodeids": [r[6] for r in rows],
         "nodes_missing_value_tracks_true": [r[7] for r in rows]}
    if as_tensor:  # doubles between two floats: the comparisons must be the double ones
        a["nodes_values_as_tensor"] = numpy_helper.from_array(
            np.array(values, np.float64) + 1e-12)
    else:
        a["nodes_values"] = values
    return a


def _model(op: str, attrs: dict, outputs, opset: int = 3) -> onnx.ModelProto:
    opsets = {"": 17 if opset < 5 else 21, "ai.onnx.ml": opset}
    return single_op_model(op, {"x": (np.float32, ["N", F])}, outputs, attrs=attrs,
                           opset=opsets, domain="ai.onnx.ml", ir_version=10,
                           node_name="trees")


def _regressor(seed: int, targets: int = 1, as_tensor: bool = False, modes=MODES,
               missing: bool = False, early: float = 0.25, trees: int = 6, depth: int = 3,
               **extra) -> onnx.ModelProto:
    rows, leaves = _trees(seed, trees=trees, depth=depth, modes=modes, missing=missing,
                          early=early)
    rng = np.random.default_rng(seed + 1)
    # a leaf gives some targets one weight each (onnxruntime reads only the first of two
    # weights a leaf gives one target, when there is one target)
    weights = [(t, n, int(c), float(rng.uniform(0.05, 0.45))) for t, n in leaves
               for c in rng.permutation(targets)[:int(rng.integers(1, targets + 1))]]
    attrs = _node_attrs(rows, as_tensor)
    attrs.update(target_treeids=[w[0] for w in weights], target_nodeids=[w[1] for w in weights],
                 target_ids=[w[2] for w in weights], n_targets=targets)
    if as_tensor:
        attrs["target_weights_as_tensor"] = numpy_helper.from_array(
            np.array([w[3] for w in weights], np.float64))
    else:
        attrs["target_weights"] = [w[3] for w in weights]
    attrs.update(extra)
    return _model("TreeEnsembleRegressor", attrs, {"y": (np.float32, ["N", targets])})


def _classifier(seed: int, classes, columns=None, signed: bool = False,
                **extra) -> onnx.ModelProto:
    rows, leaves = _trees(seed, missing=True)
    rng = np.random.default_rng(seed + 2)
    columns = columns if columns is not None else len(classes)
    low = -1.0 if signed else 0.0
    weights = [(t, n, c, float(rng.uniform(low, 1.0))) for t, n in leaves
               for c in range(columns)]
    attrs = _node_attrs(rows)
    attrs.update(class_treeids=[w[0] for w in weights], class_nodeids=[w[1] for w in weights],
                 class_ids=[w[2] for w in weights], class_weights=[w[3] for w in weights],
                 classlabels_int64s=list(classes))
    attrs.update(extra)
    return _model("TreeEnsembleClassifier", attrs,
                  {"label": (np.int64, ["N"]), "scores": (np.float32, ["N", len(classes)])})


def _check(model: onnx.ModelProto, seed: int = 0, nans: bool = True, exact: bool = False,
           grid=GRID, reference: str = "onnxruntime", rtol: float = 1e-6):
    compiled = onnxc.compile(model)
    for n in (1, 9):
        feeds = {"x": _inputs(n, seed + n, nans, grid)}
        expected = reference_run(model, feeds, reference)
        got = compiled.run(None, feeds)
        for g, e in zip(got, expected, strict=True):
            assert g.shape == e.shape and g.dtype == e.dtype
            if exact or g.dtype == np.int64:
                np.testing.assert_array_equal(g, e)
            else:
                np.testing.assert_allclose(g, e, rtol=rtol, atol=1e-7)


@pytest.mark.parametrize("mode", MODES)
def test_each_mode_with_nan_inputs(mode):
    _check(_regressor(3, modes=(mode,)), exact=True)
    _check(_regressor(4, modes=(mode,), missing=True), exact=True)


@pytest.mark.parametrize("seed", range(3))
def test_mixed_modes_and_double_thresholds_as_tensors(seed):
    """Double thresholds (onnxruntime reads them only for a double input: its reference is
    the same model taking doubles, fed the same values), a hair above the grid's values:
    onnxc's f32 bounds must give the double comparisons. onnxruntime sums in double
    there: rtol 1e-6 (six f32 roundings; a branch taken otherwise moves a sum by >= 0.05)."""
    _check(_regressor(10 + seed, missing=True), exact=True)
    model = _regressor(20 + seed, as_tensor=True, missing=True,
                       base_values_as_tensor=numpy_helper.from_array(np.array([0.75])))
    twin = onnx.ModelProto()
    twin.CopyFrom(model)
    twin.graph.input[0].type.tensor_type.elem_type = onnx.TensorProto.DOUBLE
    compiled = onnxc.compile(model)
    x = _inputs(9, seed, nans=True)
    (expected,) = reference_run(twin, {"x": x.astype(np.float64)})
    np.testing.assert_allclose(compiled.run(None, {"x": x})[0], expected, rtol=1e-6, atol=0)


def test_deep_balanced_forest_walked_to_depth():
    """Depth 10, nearly balanced: the fixed-depth walk (no early exit), its steps a loop."""
    from onnxc.dialects.graph_trees import TreeEnsembleFields
    from onnxc.frontend.onnx_importer import import_onnx
    from onnxc.lowering.graph_to_loops.tree_ensemble import _early_exit

    model = _regressor(50, missing=True, early=0.01, trees=5, depth=10)
    (op,) = [o for o in import_onnx(model).walk() if isinstance(o, TreeEnsembleFields)]
    t = op.tables()
    assert _early_exit(t) is None
    _check(model, exact=True)


@pytest.mark.parametrize("aggregate", ["SUM", "AVERAGE", "MIN", "MAX"])
def test_aggregates_over_three_targets(aggregate):
    _check(_regressor(5, targets=3, aggregate_function=aggregate, base_values=[1.0, 0.0, -2.0]),
           exact=True)


@pytest.mark.parametrize("post", ["LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO", "PROBIT"])
def test_regressor_post_transforms(post):
    """PROBIT at rtol 1e-5: Winitzki's erfinv subtracts two close terms, which turns an ulp
    of its log into a few ulp of the result."""
    rtol = 1e-5 if post == "PROBIT" else 1e-6
    _check(_regressor(6, targets=3, aggregate_function="AVERAGE", post_transform=post),
           rtol=rtol)
    _check(_regressor(7, targets=1, aggregate_function="AVERAGE", post_transform=post),
           rtol=rtol)


@pytest.mark.parametrize("post", ["NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO"])
def test_multiclass_classifier(post):
    _check(_classifier(8, [10, 20, 30], post_transform=post, base_values=[0.1, 0.2, 0.3]))


@pytest.mark.parametrize("signed,post", [(False, "NONE"), (True, "NONE"), (True, "LOGISTIC")])
def test_binary_classifier_with_one_weight_column(signed, post):
    """onnxruntime's binary case: scores [1 - s, s] (weights >= 0) or [-s, s] / logistic."""
    _check(_classifier(9, [4, 7], columns=1, signed=signed, post_transform=post,
                       base_values=[0.25]))


def test_binary_classifier_with_two_columns():
    _check(_classifier(11, [0, 1], signed=True, post_transform="LOGISTIC"))


def _opset5(members: bool, dtype=np.float32) -> onnx.ModelProto:
    """Two trees: a BRANCH_MEMBER root (or LEQ) over interior nodes and leaves apart; the
    tensors of `dtype` (the input's: float64 for a double input)."""
    splits = [0.0, 0.5, 1.0, 0.25] if dtype == np.float32 else [1e-12, 0.5 + 1e-12, 1.0,
                                                                 0.25 - 1e-12]
    modes = [6 if members else 0, 1, 4, 3]
    attrs = {
        "n_targets": 2, "aggregate_function": 1, "post_transform": 0, "tree_roots": [0, 3],
        "nodes_featureids": [0, 1, 2, 3],
        "nodes_splits": numpy_helper.from_array(np.array(splits, dtype)),
        "nodes_modes": numpy_helper.from_array(np.array(modes, np.uint8)),
        "nodes_truenodeids": [1, 0, 2, 4], "nodes_trueleafs": [0, 1, 1, 1],
        "nodes_falsenodeids": [2, 1, 3, 5], "nodes_falseleafs": [0, 1, 1, 1],
        "nodes_missing_value_tracks_true": [1, 0, 1, 0],
        "leaf_targetids": [0, 1, 0, 1, 0, 1],
        "leaf_weights": numpy_helper.from_array(
            np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], dtype) / 3),
    }
    if members:
        attrs["membership_values"] = numpy_helper.from_array(
            np.array([-1.0, 0.0, 2.0, np.nan], dtype))
    return _model("TreeEnsemble", attrs, {"y": (dtype, ["N", 2])}, opset=5)


@pytest.mark.parametrize("members", [False, True])
def test_opset5_tree_ensemble(members):
    """Integer-valued inputs: onnxruntime tests membership of the input cast to an integer
    (0.5 is in {0}), ONNX of the float itself, as onnxc does."""
    _check(_opset5(members), exact=True, grid=GRID[GRID == np.round(GRID)])


def test_exported_trees_give_the_same_outputs():
    model = _classifier(12, [10, 20, 30], post_transform="SOFTMAX")
    x = _inputs(9, 1, nans=True)
    exported = onnxc.optimize(model, as_onnx=True, input_shapes={"x": x.shape})
    for a, b in zip(reference_run(model, {"x": x}), reference_run(exported, {"x": x})):
        np.testing.assert_array_equal(a, b)


def _broken(change) -> onnx.ModelProto:
    rows, leaves = _trees(1, trees=2)
    attrs = _node_attrs(rows)
    attrs.update(target_treeids=[t for t, _ in leaves], target_nodeids=[n for _, n in leaves],
                 target_ids=[0] * len(leaves), target_weights=[1.0] * len(leaves))
    change(attrs)
    return _model("TreeEnsembleRegressor", attrs, {"y": (np.float32, ["N", 1])})


def _set(name, index, value):
    def change(attrs):
        attrs[name] = list(attrs[name])
        attrs[name][index] = value
    return change


def _cycle(attrs):
    """node 0's false branch back to itself through its true child's"""
    attrs["nodes_falsenodeids"] = list(attrs["nodes_falsenodeids"])
    attrs["nodes_truenodeids"] = list(attrs["nodes_truenodeids"])
    child = attrs["nodes_truenodeids"][0]
    at = attrs["nodes_nodeids"].index(child)
    attrs["nodes_modes"] = list(attrs["nodes_modes"])
    attrs["nodes_modes"][at] = "BRANCH_LEQ"
    attrs["nodes_truenodeids"][at] = 0
    attrs["nodes_falsenodeids"][at] = 0


@pytest.mark.parametrize("change,message", [
    (_set("nodes_truenodeids", 0, 99), "tree 0 node 0: its child 99 is no node of tree 0"),
    (_set("nodes_modes", 0, "BRANCH_SOMETIMES"), "tree 0 node 0: unknown mode"),
    (_set("nodes_featureids", 0, F), "tree 0 node 0: feature 4 is outside"),
    (_set("target_nodeids", 0, 0), "a weight for tree 0 node 0, which is no leaf"),
    (_cycle, "tree 0 node 0 is on a cycle"),
])
def test_malformed_trees_are_refused_naming_the_node(change, message):
    where = r"node 'trees' \(ai\.onnx\.ml\.TreeEnsembleRegressor, opset 3\)"
    with pytest.raises(ModelLoadError, match=where) as err:
        onnxc.compile(_broken(change))
    assert message in str(err.value)


def test_string_labels_double_classifiers_and_double_post_transforms_are_refused():
    model = _classifier(1, [0, 1])
    attrs = {a.name: helper.get_attribute_value(a) for a in model.graph.node[0].attribute}
    del attrs["classlabels_int64s"]
    attrs["classlabels_strings"] = ["a", "b"]
    strings = _model("TreeEnsembleClassifier", attrs, {"label": (np.int64, ["N"]),
                                                       "scores": (np.float32, ["N", 2])})
    with pytest.raises(UnsupportedOpError, match="ai.onnx.ml.TreeEnsembleClassifier"):
        onnxc.compile(strings)
    double = _classifier(1, [0, 1])
    double.graph.input[0].type.tensor_type.elem_type = onnx.TensorProto.DOUBLE
    with pytest.raises(UnsupportedOpError, match="double input of a classifier"):
        onnxc.compile(double)
    logistic = _regressor(1, targets=2, post_transform="LOGISTIC")
    logistic.graph.input[0].type.tensor_type.elem_type = onnx.TensorProto.DOUBLE
    with pytest.raises(UnsupportedOpError, match="post_transform LOGISTIC on a double input"):
        onnxc.compile(logistic)


@pytest.mark.parametrize("aggregate", ["SUM", "MAX"])
def test_double_input_compares_and_sums_in_double(aggregate):
    """A double input: double thresholds a hair above the grid's values (f32 would round
    them onto it), double weights, sums in double, as onnxruntime's, the result f32
    (TreeEnsembleRegressor) or f64 (opset 5's TreeEnsemble)."""
    model = _regressor(60, targets=2, as_tensor=True, missing=True,
                       aggregate_function=aggregate,
                       base_values_as_tensor=numpy_helper.from_array(np.array([0.5, -1.0])))
    model.graph.input[0].type.tensor_type.elem_type = onnx.TensorProto.DOUBLE
    compiled = onnxc.compile(model)
    for n in (1, 9):
        x = _inputs(n, n, nans=True).astype(np.float64)
        (expected,) = reference_run(model, {"x": x})
        (got,) = compiled.run(None, {"x": x})
        assert got.dtype == expected.dtype == np.float32
        np.testing.assert_array_equal(got, expected)
    opset5 = _opset5(members=False, dtype=np.float64)
    opset5.graph.input[0].type.tensor_type.elem_type = onnx.TensorProto.DOUBLE
    x = _inputs(9, 3, nans=True).astype(np.float64)
    (expected,) = reference_run(opset5, {"x": x})
    (got,) = onnxc.compile(opset5).run(None, {"x": x})
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, expected)


def test_integer_inputs_compare_as_floats():
    """int64 and int32 inputs converted to f32, as onnxruntime's classifier compares them
    (its regressor takes floats only)."""
    for elem, dtype in ((onnx.TensorProto.INT64, np.int64), (onnx.TensorProto.INT32, np.int32)):
        model = _classifier(70, [1, 2, 3], post_transform="NONE")
        model.graph.input[0].type.tensor_type.elem_type = elem
        compiled = onnxc.compile(model)
        x = np.random.default_rng(1).integers(-2, 3, size=(9, F)).astype(dtype)
        for got, expected in zip(compiled.run(None, {"x": x}), reference_run(model, {"x": x})):
            np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("aggregate", ["SUM", "MAX"])
def test_a_tree_per_class_walks_a_segment_per_class(aggregate):
    """Boosting's layout, each tree giving weights to one column (round robin over three):
    the kernel walks the trees of one column together and adds to that column alone; each
    column's sum keeps tree order, so the outputs are onnxruntime's exactly."""
    from onnxc.dialects.graph_trees import TreeEnsembleFields
    from onnxc.frontend.onnx_importer import import_onnx
    from onnxc.lowering.graph_to_loops.tree_ensemble import segments

    rows, leaves = _trees(80, trees=11, missing=True, early=0.1)
    rng = np.random.default_rng(81)
    attrs = _node_attrs(rows)
    attrs.update(target_treeids=[t for t, _ in leaves], target_nodeids=[n for _, n in leaves],
                 target_ids=[t % 3 for t, _ in leaves],
                 target_weights=rng.uniform(-1, 1, len(leaves)).tolist(), n_targets=3,
                 aggregate_function=aggregate, base_values=[0.5, 0.0, -0.5])
    model = _model("TreeEnsembleRegressor", attrs, {"y": (np.float32, ["N", 3])})
    (op,) = [o for o in import_onnx(model).walk() if isinstance(o, TreeEnsembleFields)]
    order, parts = segments(op.tables())
    assert [c for c, _, _ in parts] == [0, 1, 2] and order.tolist()[:4] == [0, 3, 6, 9]
    _check(model, exact=True)


@pytest.mark.parametrize("model", [
    lambda: _classifier(90, [10, 20, 30], post_transform="SOFTMAX"),
    lambda: _regressor(91, targets=2, missing=True, trees=9, depth=9)],
    ids=["multiclass", "deep"])
def test_warm_compile_is_bit_identical(model):
    model = model()
    feeds = {"x": _inputs(33, 5, nans=True)}
    cold = onnxc.compile(model).run(None, feeds)
    warm = compile_warm(model, filled=True).run(None, feeds)
    assert output_digest(cold) == output_digest(warm)
