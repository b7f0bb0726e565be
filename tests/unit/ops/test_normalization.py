"""Normalizations: the Softmax and LayerNormalization kernels (vectorized reductions:
reassociable sums, maximum reductions) against onnxruntime, on row lengths that leave vector
remainders and on non-last axes (rtol 1e-5 / atol 1e-6); Instance-, Group- and
MeanVarianceNormalization (and LpPool) one-node models against onnx.reference and the numpy
evaluator (rtol 1e-4 / atol 1e-5), MeanVarianceNormalization over a symbolic batch.

LayerNormalization's Mean/InvStdDev outputs are in test_layer_norm_statistics.py,
RMSNormalization in test_rms_normalization.py.
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator

import onnxc
from tests.single_op import check_single_op as check
from tests.single_op import graph_model, run_both, single_op_model

RTOL, ATOL = 1e-5, 1e-6


def _model(node, shape, inits=()):
    """`node` of a float input x of `shape`, opset 17, IR version 8 (onnxruntime's)."""
    return graph_model([node], {"x": (np.float32, shape)}, {"y": (np.float32, None)},
                       initializers=dict(inits), opset=17, ir_version=8)


def _check(model, shape, scale=3.0):
    x = (np.random.default_rng(0).standard_normal(shape) * scale).astype(np.float32)
    expected = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]
    for threads in (1, 2):  # the row loops are parallel_for
        got = onnxc.compile(model, cache_dir=False, num_threads=threads).run(None, {"x": x})[0]
        np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("shape, axis", [((3, 7, 37), -1), ((2, 130), -1), ((3, 7, 5), 1),
                                         ((4, 1), -1)])
def test_softmax(shape, axis):
    _check(_model(helper.make_node("Softmax", ["x"], ["y"], axis=axis), shape), shape, 10.0)


@pytest.mark.parametrize("shape, axis", [((2, 5, 33), -1), ((3, 4, 5, 6), 2), ((1, 768), -1)])
def test_layer_normalization(shape, axis):
    width = shape[axis:]
    rng = np.random.default_rng(1)
    inits = [("g", (1 + 0.1 * rng.standard_normal(width)).astype(np.float32)),
             ("b", (0.1 * rng.standard_normal(width)).astype(np.float32))]
    node = helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=axis,
                            epsilon=1e-5)
    _check(_model(node, shape, inits), shape)


@pytest.mark.parametrize("shape, axis", [((2, 6, 300), 1), ((2, 5, 7, 9), 1), ((3, 4, 600), 0)])
def test_softmax_non_last_axis_strips(shape, axis):
    """Column strips of 256 with a partial last strip, and strips per outer index."""
    _check(_model(helper.make_node("Softmax", ["x"], ["y"], axis=axis), shape), shape, 10.0)


# --------------------------------------------------------------------------- one-node models
# (from test_ops_tensor.py)

RNG = np.random.default_rng(11)


def _f(*shape) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)




def test_normalizations_and_lp_pool():
    check("InstanceNormalization", [_f(2, 3, 4, 5)], [_f(3), _f(3)], {"epsilon": 1e-3})
    check("GroupNormalization", [_f(2, 4, 3, 3)], [_f(4), _f(4)], {"num_groups": 2})
    check("GroupNormalization", [_f(2, 4, 3)], [_f(2), _f(2)], {"num_groups": 2}, opset=18)
    check("MeanVarianceNormalization", [_f(2, 3, 4, 5)], opset=13)
    check("LpPool", [_f(1, 2, 5, 5)], attrs={"kernel_shape": [3, 3], "p": 2,
                                             "pads": [1, 1, 1, 1], "strides": [2, 2]})
    check("LpPool", [_f(1, 2, 6)], attrs={"kernel_shape": [2], "p": 3})


def test_mvn_with_a_symbolic_batch():
    """MeanVarianceNormalization's default axes include the batch: such a model cannot run
    per sample, so the batch stays a symbolic dimension of the compiled code; over the
    other axes it runs per sample. Both match the reference at two batch sizes."""

    def model(attrs):
        spec = (np.float32, ["N", 3, 4, 5])
        return single_op_model("MeanVarianceNormalization", {"x": spec}, {"y": spec},
                               attrs=attrs, opset=13)

    # (the default axes are [0, 2, 3]; spelled out since onnx's shape inference of the
    # function body fails without the attribute)
    for attrs in ({"axes": [0, 2, 3]}, {"axes": [2, 3]}):
        compiled = onnxc.compile(model(attrs))
        for n in (1, 3):
            x = _f(n, 3, 4, 5)
            (expected,) = ReferenceEvaluator(model(attrs)).run(None, {"x": x})
            (got,) = compiled.run(None, {"x": x})
            np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


# --------------------------------------------------------------------------- one-channel norms
# (from test_passes_extended.py)


def _norm_model(nodes, x_shape, initializers):
    """float x and y of `x_shape`, opset 17, IR version 8; `initializers` as given."""
    return graph_model(nodes, {"x": (np.float32, x_shape)}, {"y": (np.float32, x_shape)},
                       initializers=initializers, opset=17, ir_version=8)


def instance_norm_model(shape, rng):
    from onnx import helper

    channels = shape[1]
    node = helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"], name="norm")
    return _norm_model([node], shape, {"s": rng.uniform(0.5, 1.5, channels).astype(np.float32),
                                       "b": rng.standard_normal(channels).astype(np.float32)})


def group_norm_1_model(shape, rng):
    """torch.nn.GroupNorm(1, C) as torch.onnx exports it (poolformer's norm layer):
    Reshape to [N, 1, -1], InstanceNormalization(1, 0), Reshape back, * weight + bias."""
    from onnx import helper

    n, c = shape[:2]
    per_channel = (c, *(1,) * (len(shape) - 2))
    nodes = [helper.make_node("Reshape", ["x", "grouped"], ["g"]),
             helper.make_node("InstanceNormalization", ["g", "ones", "zeros"], ["gn"]),
             helper.make_node("Reshape", ["gn", "full"], ["r"]),
             helper.make_node("Mul", ["r", "w"], ["rw"]),
             helper.make_node("Add", ["rw", "bias"], ["y"])]
    params = {"grouped": np.array([n, 1, -1]), "ones": np.ones(1), "zeros": np.zeros(1),
              "full": np.array(shape), "w": rng.uniform(0.5, 1.5, per_channel),
              "bias": rng.standard_normal(per_channel)}
    return _norm_model(nodes, shape, {
        name: value.astype(np.int64 if name in ("grouped", "full") else np.float32)
        for name, value in params.items()})


@pytest.mark.parametrize("build, shape", [
    (instance_norm_model, [1, 1, 50]),
    (instance_norm_model, [1, 1, 5, 6]),
    (instance_norm_model, [2, 1, 50]),
    (instance_norm_model, [1, 2, 50]),
    (group_norm_1_model, [1, 4, 5, 6]),
    (group_norm_1_model, [2, 3, 7]),
], ids=lambda v: getattr(v, "__name__", str(v)))
def test_one_channel_norms_match_onnxruntime_at_every_level(build, shape):
    """InstanceNormalization over one channel (how GroupNorm(1) exports) used to fail at
    -O2/-O3 with xDSL's 'expected an index for each dimension': fuse-layernorm folds the
    per-channel parameters into a LayerNorm bias of one element, whose kernel load had no
    index."""
    import onnxruntime as ort

    import onnxc

    rng = np.random.default_rng(sum(shape))
    model = build(shape, rng)
    x = (rng.standard_normal(shape) * 3 + 1).astype(np.float32)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (expected,) = session.run(None, {"x": x})
    for level in range(4):
        (actual,) = onnxc.compile(model, opt_level=level, cache_dir=False).run(None, {"x": x})
        np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5, err_msg=f"-O{level}")


def test_layer_normalization_with_one_element_parameters():
    """The same kernel fault without any pass: ONNX LayerNormalization whose scale and bias
    broadcast from one element (onnx.reference is the reference: it broadcasts them)."""
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    import onnxc

    node = helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"], axis=-1)
    model = _norm_model([node], [2, 3, 50], {"s": np.array([0.7], np.float32),
                                             "b": np.array([0.2], np.float32)})
    x = np.random.default_rng(5).standard_normal((2, 3, 50)).astype(np.float32)
    (expected,) = ReferenceEvaluator(model).run(None, {"x": x})
    for level in (0, 3):
        (actual,) = onnxc.compile(model, opt_level=level, cache_dir=False).run(None, {"x": x})
        np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5)


# ----------------------------------------------------------------- LayerNormalization imported
# (from test_extended_ops.py: imported, -O0, against onnxruntime at rtol 1e-3 / atol 1e-4)

_X4 = {"x": (np.float32, (2, 3, 4, 5))}


def _x4_feeds() -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(np.float32)}


LAYER_NORMS = [  # name, attributes, initializers
    ("layernorm_last", {},
     {"s": np.linspace(0.5, 2, 5, dtype=np.float32), "b": np.full(5, 0.1, np.float32)}),
    ("layernorm_two_axes_no_bias", {"axis": -2, "epsilon": 1e-3},
     {"s": np.linspace(-1, 1, 20, dtype=np.float32).reshape(4, 5)}),
    ("layernorm_leading_one_scale", {"axis": 2},
     {"s": np.linspace(-1, 1, 5, dtype=np.float32).reshape(1, 1, 5),
      "b": np.linspace(0, 1, 20, dtype=np.float32).reshape(1, 4, 5)}),
]


@pytest.mark.parametrize("name, attrs, inits", LAYER_NORMS, ids=[c[0] for c in LAYER_NORMS])
def test_layer_normalization_matches_onnxruntime(name, attrs, inits):
    model = single_op_model("LayerNormalization", _X4, {"y": (np.float32, None)}, attrs=attrs,
                            initializers=inits, opset=17, ir_version=8)
    run_both(model, _x4_feeds(), rtol=1e-3, atol=1e-4, opt_level=0)


def test_layernorm_training_outputs_match_onnxruntime():
    """Mean (and InvStdDev) make it graph.layer_normalization_stats (more in
    test_layer_norm_statistics.py)."""
    model = single_op_model("LayerNormalization", _X4,
                            {"y": (np.float32, None), "mean": (np.float32, None)},
                            initializers={"s": np.ones(5, np.float32)}, opset=17, ir_version=8)
    run_both(model, _x4_feeds(), rtol=1e-3, atol=1e-4, opt_level=0, cache_dir=False)


@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5), (3, 3, 4, 5)])
@pytest.mark.parametrize("outputs", [1, 3])
def test_batch_norm_in_training_mode(shape, outputs):
    """training_mode=1 (opset 15): the batch's own statistics and the running mean and
    variance, against onnx.reference (onnxruntime's CPU build has no training kernel);
    symbolic batch and spatial sizes, one compile. rtol 1e-5 / atol 1e-5: float32 means
    over at most 60 elements in another order."""
    rng = np.random.default_rng(3)
    c = shape[1]
    dims = ["n", c, *(f"s{i}" for i in range(len(shape) - 2))]
    inputs = {"x": (np.float32, dims), **{k: (np.float32, [c]) for k in "sbmv"}}
    names = ["y", "running_mean", "running_var"][:outputs]
    model = single_op_model("BatchNormalization", inputs, {k: None for k in names},
                            node_inputs=list("xsbmv"), opset=15, ir_version=8,
                            attrs={"training_mode": 1, "momentum": 0.8, "epsilon": 1e-3})
    compiled = onnxc.compile(model)
    for batch in (shape[0], 1, shape[0] + 2):
        feeds = {"x": rng.standard_normal((batch, *shape[1:])).astype(np.float32),
                 "s": rng.standard_normal(c).astype(np.float32),
                 "b": rng.standard_normal(c).astype(np.float32),
                 "m": rng.standard_normal(c).astype(np.float32),
                 "v": rng.random(c).astype(np.float32)}
        expected = ReferenceEvaluator(model).run(None, feeds)
        got = compiled.run(None, feeds)
        for g, e in zip(got, expected, strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)
