"""ai.onnx.ml's preprocessing, linear and SVM ops, one node each, against onnxruntime: every
model compiled once with a symbolic batch N and run at N = 1 and 7 (the ops keep rows
apart), and the refusals (typed errors naming the op's domain, the node and the opset).

Tolerance: rtol 1e-5, atol 1e-5 on float outputs (the same f32 formulas as onnxruntime's
kernels, summed in another order: matmuls against the coefficients and support vectors,
RBF distances as |x|^2 - 2 x.v + |v|^2); labels, encoded values and integer outputs exactly.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

import onnxc
from onnxc.errors import InvalidInputError, ModelLoadError, UnsupportedOpError
from tests.models.cache_passes import compile_warm, output_digest
from tests.single_op import assert_same_outputs, reference_run, single_op_model

ML = {"": 17, "ai.onnx.ml": 3}
TOL = {"rtol": 1e-5, "atol": 1e-5}
ROWS = (1, 7)


def ml_model(op: str, inputs: dict, outputs=("y",), opset=None, **attrs) -> onnx.ModelProto:
    return single_op_model(op, inputs, list(outputs), attrs=attrs, opset=opset or ML,
                           domain="ai.onnx.ml", ir_version=9, node_name=f"{op.lower()}_node")


def check(model: onnx.ModelProto, make_feeds, rows=ROWS, reference="onnxruntime",
          tol=TOL) -> list[np.ndarray]:
    """One compile (symbolic N), run at each batch size against onnxruntime (or
    onnx.reference where onnxruntime has no kernel for the type); integer outputs exactly.
    `make_feeds(n)` gives the feeds for n rows."""
    compiled = onnxc.compile(model)
    got = []
    for n in rows:
        feeds = make_feeds(n)
        got = compiled.run(None, feeds)
        expected = reference_run(model, feeds, reference)
        for g, e in zip(got, expected, strict=True):
            exact = np.asarray(e).dtype.kind in "iubO"  # labels, codes, strings
            assert_same_outputs([g], [e], exact=exact, **({} if exact else tol))
    return got


def floats(cols: int, seed: int = 0, low=-2.0, high=2.0):
    def make(n: int) -> dict:
        rng = np.random.default_rng(seed + n)
        return {"x": rng.uniform(low, high, (n, cols)).astype(np.float32)}
    return make


def x_spec(cols: int, dtype=np.float32):
    return {"x": (dtype, ["N", cols])}


def refused(model: onnx.ModelProto, error, match: str) -> str:
    with pytest.raises(error, match=match) as err:
        onnxc.compile(model)
    text = str(err.value)
    node = model.graph.node[0]
    assert f"ai.onnx.ml.{node.op_type}" in text and node.name in text and "opset" in text
    return text


# ---------------------------------------------------------------------------- preprocessing


@pytest.mark.parametrize("offset, scale", [([0.5], [2.0]), ([0.1, -0.2, 0.3], [1.0, 2.0, -3.0]),
                                           ([0.0, 1.0, -1.0], [0.5, 0.25, 4.0])])
def test_scaler(offset, scale):
    attrs = {k: v for k, v in (("offset", offset), ("scale", scale)) if v is not None}
    check(ml_model("Scaler", x_spec(3), **attrs), floats(3))


@pytest.mark.parametrize("dtype", [np.int64, np.float64, np.int32])
def test_scaler_casts_to_float(dtype):
    def feeds(n):
        return {"x": np.arange(n * 3).reshape(n, 3).astype(dtype) - 4}
    check(ml_model("Scaler", x_spec(3, dtype), offset=[1.0, 2.0, 3.0], scale=[0.5, 1.0, 2.0]),
          feeds)


@pytest.mark.parametrize("norm", ["MAX", "L1", "L2"])
def test_normalizer(norm):
    def feeds(n):
        x = np.random.default_rng(n).uniform(-3, 3, (n, 4)).astype(np.float32)
        x[0] = 0  # a zero row is copied
        if n > 2:
            x[1] = [-1, -2, -3, -4]  # MAX of an all-negative row is its largest value
        return {"x": x}
    check(ml_model("Normalizer", x_spec(4), norm=norm), feeds)


def test_normalizer_int_and_one_dimensional():
    check(ml_model("Normalizer", x_spec(3, np.int32), norm="L2"),
          lambda n: {"x": (np.arange(n * 3).reshape(n, 3) - 2).astype(np.int32)})
    model = ml_model("Normalizer", {"x": (np.float32, [5])}, norm="L1")
    check(model, lambda n: {"x": np.array([1, -2, 3, 0, 4], np.float32)}, rows=(1,))


@pytest.mark.parametrize("dtype, threshold", [(np.float32, 0.25), (np.int64, 1.0),
                                              (np.float64, -0.5)])
def test_binarizer(dtype, threshold):
    """onnxruntime has a float kernel only: other types against onnx.reference."""
    def feeds(n):
        return {"x": np.random.default_rng(n).uniform(-3, 3, (n, 5)).round(1).astype(dtype)}
    check(ml_model("Binarizer", x_spec(5, dtype), threshold=threshold), feeds,
          reference="onnxruntime" if dtype == np.float32 else "onnx")


def test_imputer_float_nan_per_column():
    def feeds(n):
        x = np.random.default_rng(n).standard_normal((n, 3)).astype(np.float32)
        x[::2, 1] = np.nan
        x[0, 0] = np.nan
        return {"x": x}
    check(ml_model("Imputer", x_spec(3), imputed_value_floats=[1.5, -2.0, 7.0],
                   replaced_value_float=float("nan")), feeds)


def test_imputer_float_value_one_imputed():
    def feeds(n):
        return {"x": np.array([[0, 1, 0], [2, 0, 3]] * n, np.float32)[:n]}
    check(ml_model("Imputer", x_spec(3), imputed_value_floats=[9.0],
                   replaced_value_float=0.0), feeds)


def test_imputer_int64():
    def feeds(n):
        return {"x": np.array([[-1, 4, 5], [3, -1, -1]] * n, np.int64)[:n]}
    check(ml_model("Imputer", x_spec(3, np.int64), imputed_value_int64s=[10, 20, 30],
                   replaced_value_int64=-1), feeds)


def test_array_feature_extractor_constant_and_run_time_indices():
    indices = np.array([2, 0, 2], np.int64)
    model = single_op_model("ArrayFeatureExtractor", x_spec(4), ["z"],
                            initializers={"i": indices}, opset=ML, domain="ai.onnx.ml",
                            ir_version=9)
    check(model, floats(4))
    model = ml_model("ArrayFeatureExtractor", {**x_spec(4), "i": (np.int64, [3])}, ["z"])
    check(model, lambda n: {**floats(4)(n), "i": indices})
    with pytest.raises(InvalidInputError, match="ArrayFeatureExtractor"):
        onnxc.compile(model).run(None, {**floats(4)(2), "i": np.array([0, 4, 1], np.int64)})


def test_array_feature_extractor_one_dimensional():
    model = single_op_model("ArrayFeatureExtractor", {"x": (np.float32, [5])}, ["z"],
                            initializers={"i": np.array([[4, 1]], np.int64)}, opset=ML,
                            domain="ai.onnx.ml", ir_version=9)
    got = check(model, lambda n: {"x": np.arange(5, dtype=np.float32)}, rows=(1,))
    assert got[0].shape == (1, 2)


@pytest.mark.parametrize("dtype", [np.int64, np.float32])
def test_one_hot_encoder(dtype):
    def feeds(n):
        return {"x": np.array([[1, 7, 3], [3, 3, 9]] * n, dtype)[:n]}  # 7 and 9: none
    got = check(ml_model("OneHotEncoder", x_spec(3, dtype), cats_int64s=[3, 1, 9, 4],
                         zeros=1), feeds)
    assert got[0].shape == (7, 3, 4)


def test_one_hot_encoder_zeros_0_unknown_is_a_run_time_error():
    model = ml_model("OneHotEncoder", x_spec(2, np.int64), cats_int64s=[1, 2], zeros=0)
    compiled = onnxc.compile(model)
    np.testing.assert_array_equal(compiled.run(None, {"x": np.array([[1, 2]], np.int64)})[0],
                                  [[[1, 0], [0, 1]]])
    with pytest.raises(InvalidInputError, match="OneHotEncoder"):
        compiled.run(None, {"x": np.array([[1, 5]], np.int64)})


@pytest.mark.parametrize("opset, attrs, dtype", [
    (2, {"keys_int64s": [5, 1, 9], "values_int64s": [50, 10, 90], "default_int64": -7}, np.int64),
    (2, {"keys_int64s": [5, 1, 9], "values_floats": [0.5, 0.1, 0.9], "default_float": 2.5},
     np.int64),
    # a NaN key matches nothing before opset 4, a NaN from opset 4
    (2, {"keys_floats": [0.5, 1.0, float("nan")], "values_int64s": [1, 2, 3]}, np.float32),
    (4, {"keys_floats": [0.5, 1.0, float("nan")], "values_int64s": [1, 2, 3]}, np.float32),
    (4, {"keys_tensor": helper.make_tensor("k", onnx.TensorProto.INT64, [3], [5, 1, 9]),
             "values_tensor": helper.make_tensor("v", onnx.TensorProto.FLOAT, [3], [.5, .1, .9]),
             "default_tensor": helper.make_tensor("d", onnx.TensorProto.FLOAT, [1], [-1.5])},
     np.int64),
    (4, {"keys_tensor": helper.make_tensor("k", onnx.TensorProto.INT64, [2], [1, 2]),
             "values_tensor": helper.make_tensor("v", onnx.TensorProto.INT64, [2], [20, 10])},
     np.int64),
])
def test_label_encoder(opset, attrs, dtype):
    def feeds(n):
        values = [5, 9, 3] if dtype == np.int64 else [1.0, float("nan"), 0.25]
        return {"x": np.array([values] * n, dtype)}
    check(ml_model("LabelEncoder", x_spec(3, dtype), opset={"": 17, "ai.onnx.ml": opset},
                   **attrs), feeds)


def test_feature_vectorizer_pads_and_cuts():
    model = ml_model("FeatureVectorizer", {"a": (np.float32, ["N", 3]),
                                           "b": (np.float32, ["N", 2]),
                                           "c": (np.float32, ["N", 4])},
                     inputdimensions=[3, 4, 2])
    rng = np.random.default_rng(0)

    def feeds(n):
        return {k: rng.standard_normal((n, d)).astype(np.float32)
                for k, d in (("a", 3), ("b", 2), ("c", 4))}
    got = check(model, feeds)
    assert got[0].shape == (7, 9)


def test_feature_vectorizer_int64():
    model = ml_model("FeatureVectorizer", {"a": (np.int64, ["N", 2]), "b": (np.int64, ["N", 3])},
                     inputdimensions=[2, 3])
    check(model, lambda n: {"a": np.arange(2 * n).reshape(n, 2) - 3,
                            "b": np.arange(3 * n).reshape(n, 3) * 7})


# ---------------------------------------------------------------------------- linear models


def linear_classifier(rows: int, labels, post="NONE", cols=4, seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    attrs = {"coefficients": rng.uniform(-1, 1, rows * cols).tolist(),
                 "intercepts": rng.uniform(-0.5, 0.5, rows).tolist(), "post_transform": post}
    if labels is not None:
        attrs["classlabels_ints"] = labels
    return ml_model("LinearClassifier", x_spec(cols, dtype), ["label", "scores"], **attrs)


@pytest.mark.parametrize("post", ["NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO"])
def test_linear_classifier_multiclass(post):
    check(linear_classifier(3, [4, 8, 2], post), floats(4))


def test_linear_classifier_probit():
    """PROBIT's inverse erf needs scores in (0, 1): inputs and weights keep them there.
    atol 5e-5: onnxruntime's erfinv approximation ends in -v + sqrt(v^2 - v2), v ~ 4.3,
    which turns a last-bit difference of log (onnxc's vs libm's) into ~1e-5."""
    model = ml_model("LinearClassifier", x_spec(2), ["label", "scores"],
                     coefficients=[0.2, 0.1, 0.3, -0.1, 0.05, 0.2], intercepts=[0.3, 0.5, 0.4],
                     classlabels_ints=[0, 1, 2], post_transform="PROBIT")
    check(model, floats(2, low=0, high=1), tol={"rtol": 0, "atol": 5e-5})


def test_linear_classifier_softmax_zero_skips_zero_scores():
    model = ml_model("LinearClassifier", x_spec(2), ["label", "scores"],
                     coefficients=[1.0, 0.0, 0.0, 0.0, 0.0, 1.0], intercepts=[0.0, 0.0, 0.0],
                     classlabels_ints=[0, 1, 2], post_transform="SOFTMAX_ZERO")
    check(model, lambda n: {"x": np.array([[1.0, -2.0], [0.0, 3.0]] * n, np.float32)[:n]})


@pytest.mark.parametrize("post", ["NONE", "LOGISTIC", "SOFTMAX"])
def test_linear_classifier_binary_one_row(post):
    """onnxruntime's special case: scores [1 - s, s] whatever the transform but PROBIT,
    label classlabels[1] where s > 0."""
    check(linear_classifier(1, [3, 9], post), floats(4))


def test_linear_classifier_one_row_no_labels_and_int_input():
    check(linear_classifier(1, None, "NONE", dtype=np.int64),
          lambda n: {"x": np.arange(n * 4).reshape(n, 4).astype(np.int64) - 5})


def test_classifiers_of_one_dimensional_and_double_input():
    """A 1-D X is one row ([1] labels, [1, K] scores); double X is read as float."""
    model = linear_classifier(3, [1, 2, 3], "SOFTMAX")
    model.graph.input[0].type.tensor_type.shape.ClearField("dim")
    model.graph.input[0].type.tensor_type.shape.dim.add().dim_value = 4
    got = check(model, lambda n: {"x": np.array([0.5, -1, 2, 0.25], np.float32)}, rows=(1,))
    assert got[0].shape == (1,) and got[1].shape == (1, 3)
    model = svm_classifier("SIGMOID", [1, 2, 2], True)
    model.graph.input[0].type.tensor_type.elem_type = onnx.TensorProto.DOUBLE
    check(model, lambda n: {"x": floats(3)(n)["x"].astype(np.float64)})


@pytest.mark.parametrize("targets, post", [(1, "NONE"), (3, "NONE"), (3, "SOFTMAX"),
                                           (2, "LOGISTIC")])
def test_linear_regressor(targets, post):
    rng = np.random.default_rng(targets)
    model = ml_model("LinearRegressor", x_spec(5), targets=targets, post_transform=post,
                     coefficients=rng.standard_normal(targets * 5).tolist(),
                     intercepts=rng.standard_normal(targets).tolist())
    check(model, floats(5))


# ---------------------------------------------------------------------------- SVMs

KERNEL_PARAMS = {"LINEAR": [0.0, 0.0, 0.0], "POLY": [0.3, 0.5, 3.0], "RBF": [0.4, 0.0, 0.0],
                 "SIGMOID": [0.2, -0.1, 0.0]}


def svm_classifier(kernel: str, per_class, proba: bool, post="NONE", cols=3, seed=0):
    rng = np.random.default_rng(seed)
    classes, count = len(per_class), sum(per_class)
    pairs = classes * (classes - 1) // 2
    attrs = {"kernel_type": kernel, "kernel_params": KERNEL_PARAMS[kernel],
                 "vectors_per_class": per_class, "classlabels_ints": list(range(10, 10 + classes)),
                 "support_vectors": rng.uniform(-1, 1, count * cols).tolist(),
                 "coefficients": rng.uniform(-1, 1, (classes - 1) * count).tolist(),
                 "rho": rng.uniform(-0.3, 0.3, pairs).tolist(), "post_transform": post}
    if proba:
        attrs.update(prob_a=rng.uniform(-3, -1, pairs).tolist(),
                     prob_b=rng.uniform(-0.2, 0.2, pairs).tolist())
    return ml_model("SVMClassifier", x_spec(cols), ["label", "scores"], **attrs)


@pytest.mark.parametrize("kernel", list(KERNEL_PARAMS))
@pytest.mark.parametrize("proba", [False, True])
def test_svm_classifier_multiclass(kernel, proba):
    check(svm_classifier(kernel, [2, 3, 1, 2], proba), floats(3))


@pytest.mark.parametrize("proba, post", [(False, "NONE"), (False, "LOGISTIC"), (True, "NONE"),
                                         (True, "SOFTMAX")])
def test_svm_classifier_binary(proba, post):
    check(svm_classifier("RBF", [3, 2], proba, post), floats(3))


def test_svm_classifier_scores_post_transform():
    check(svm_classifier("POLY", [2, 2, 2], False, "LOGISTIC"), floats(3))


@pytest.mark.parametrize("classes, coefficients", [
    (3, [0.5, -1.0, 0.2, 0.1, 0.4, -0.3]), (2, [0.5, -1.0, 0.2, 0.1]),
    (2, [0.5, 1.0, 0.2, 0.1])])
def test_svm_classifier_linear_mode(classes, coefficients):
    """No support vectors: liblinear's scores, and its binary label rule (> 0, or >= 0.5
    when every coefficient is >= 0)."""
    model = ml_model("SVMClassifier", x_spec(2), ["label", "scores"], kernel_type="LINEAR",
                     kernel_params=[0.0, 0.0, 0.0], coefficients=coefficients, rho=[0.1],
                     classlabels_ints=list(range(classes)))
    check(model, floats(2))


@pytest.mark.parametrize("kernel", list(KERNEL_PARAMS))
@pytest.mark.parametrize("one_class", [0, 1])
def test_svm_regressor(kernel, one_class):
    rng = np.random.default_rng(1)
    model = ml_model("SVMRegressor", x_spec(3), kernel_type=kernel,
                     kernel_params=KERNEL_PARAMS[kernel], n_supports=4,
                     support_vectors=rng.uniform(-1, 1, 12).tolist(),
                     coefficients=rng.uniform(-1, 1, 4).tolist(), rho=[0.2], one_class=one_class)
    check(model, floats(3))


def test_svm_regressor_linear_mode():
    model = ml_model("SVMRegressor", x_spec(3), coefficients=[0.5, -1.0, 2.0], rho=[0.3],
                     n_supports=0, kernel_type="LINEAR", kernel_params=[0.0, 0.0, 0.0])
    check(model, floats(3))


# ---------------------------------------------------------------------------- string tensors


def test_one_hot_encoder_string_categories():
    def feeds(n):
        return {"x": np.array([["cat", "dog"], ["eel", "cat"]] * n, dtype=object)[:n]}
    model = ml_model("OneHotEncoder", {"x": (onnx.TensorProto.STRING, ["N", 2])},
                     cats_strings=["dog", "cat", "ant"], zeros=1)
    check(model, feeds)


@pytest.mark.parametrize("rows, labels", [(3, ["b", "a", "c"]), (1, ["neg", "pos"])])
def test_linear_classifier_string_labels(rows, labels):
    rng = np.random.default_rng(rows)
    model = ml_model("LinearClassifier", x_spec(4), ["label", "scores"],
                     coefficients=rng.uniform(-1, 1, rows * 4).tolist(),
                     intercepts=rng.uniform(-0.5, 0.5, rows).tolist(),
                     classlabels_strings=labels, post_transform="LOGISTIC")
    check(model, floats(4))


def test_svm_classifier_string_labels():
    model = svm_classifier("RBF", [2, 1, 2], True)
    node = model.graph.node[0]
    for attr in list(node.attribute):
        if attr.name == "classlabels_ints":
            node.attribute.remove(attr)
    node.attribute.append(helper.make_attribute("classlabels_strings", ["x", "y", "z"]))
    model.graph.output[0].type.tensor_type.elem_type = onnx.TensorProto.STRING
    check(model, floats(3))


def test_warm_compile_is_bit_identical():
    model = svm_classifier("RBF", [2, 2, 2], True)
    feeds = floats(3)(5)
    cold = onnxc.compile(model).run(None, feeds)
    warm = compile_warm(model, filled=True).run(None, feeds)
    assert output_digest(cold) == output_digest(warm)


# ---------------------------------------------------------------------------- refusals


def test_zip_map_is_refused_with_the_export_option():
    nodes = [helper.make_node("ZipMap", ["p"], ["z"], domain="ai.onnx.ml", name="zm",
                              classlabels_int64s=[0, 1])]
    seq = helper.make_value_info("z", helper.make_sequence_type_proto(helper.make_map_type_proto(
        onnx.TensorProto.INT64, helper.make_tensor_type_proto(onnx.TensorProto.FLOAT, []))))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(
        "p", onnx.TensorProto.FLOAT, ["N", 2])], [seq])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("ai.onnx.ml", 3)])
    refused(model, UnsupportedOpError, "zipmap.*False")


@pytest.mark.parametrize("op, attrs, match", [
    ("LinearClassifier", {"coefficients": [1.0, 2.0], "intercepts": [0.0],
                              "classlabels_ints": [0, 1], "post_transform": "PROBIT"},
     "PROBIT on a binary"),
    ("SVMRegressor", {"coefficients": [1.0, 2.0], "rho": [0.0], "post_transform": "LOGISTIC"},
     "post_transform on SVMRegressor"),
])
def test_unsupported_forms_are_typed_errors(op, attrs, match):
    outputs = ["label", "scores"] if op.endswith("Classifier") else ["y"]
    refused(ml_model(op, x_spec(2), outputs, **attrs), UnsupportedOpError, match)


@pytest.mark.parametrize("op, attrs, match", [
    ("Scaler", {"scale": [1.0, 2.0, 3.0]}, "scale has 3 values"),
    ("Normalizer", {"norm": "L3"}, "norm must be"),
    ("LinearClassifier", {"coefficients": [1.0, 2.0, 3.0], "intercepts": [0.0, 1.0],
                              "classlabels_ints": [0, 1]}, "coefficients"),
    ("SVMClassifier", {"coefficients": [1.0], "rho": [0.0], "classlabels_ints": [0, 1],
                           "vectors_per_class": [1, 1], "support_vectors": [1.0, 2.0, 3.0, 4.0]},
     "coefficients"),
    ("SVMClassifier", {"coefficients": [1.0, 2.0, 1.0, 2.0], "rho": [0.0], "kernel_type": "CUBIC",
                           "classlabels_ints": [0, 1]}, "kernel_type"),
    ("LinearRegressor", {"coefficients": [1.0, 2.0], "post_transform": "SQUASH"},
     "post_transform must be"),
    ("Imputer", {"replaced_value_float": 0.0}, "imputed_value_floats is required"),
])
def test_malformed_attributes_are_named(op, attrs, match):
    outputs = ["label", "scores"] if op.endswith("Classifier") else ["y"]
    refused(ml_model(op, x_spec(2), outputs, **attrs), ModelLoadError, match)


@pytest.mark.parametrize("strings_in", [True, False])
def test_category_mapper_both_ways(strings_in):
    """CategoryMapper (a LabelEncoder with its cats as keys and values) beside onnxruntime,
    misses to the default, at two batch sizes of one symbolic compile."""
    in_type, out_type = ((onnx.TensorProto.STRING, onnx.TensorProto.INT64) if strings_in
                         else (onnx.TensorProto.INT64, onnx.TensorProto.STRING))
    node = helper.make_node("CategoryMapper", ["x"], ["y"], domain="ai.onnx.ml", name="cm",
                            cats_strings=["cat", "dog", "bird"], cats_int64s=[1, 2, 7],
                            default_int64=-5, default_string="?")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", in_type, ["N"])],
                              [helper.make_tensor_value_info("y", out_type, ["N"])])
    model = helper.make_model(graph, ir_version=8, opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 1)])
    compiled = onnxc.compile(model)
    for x in ((np.array(["dog", "cow", "bird", "cat", ""], dtype=object),
               np.array(["bird"], dtype=object)) if strings_in
              else (np.array([7, 1, 3, 2], np.int64), np.array([0], np.int64))):
        expected = reference_run(model, {"x": x})[0]
        got = compiled.run(None, {"x": x})[0]
        assert got.tolist() == expected.tolist()
