"""NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (frontend/onnx_ops_loss.py) against
onnx.reference.ReferenceEvaluator: every reduction, with and without weights, ignore_index
inside, below and above the class range, N x C and N x C x d1 x ... inputs, int32 and int64
targets, float and double scores, SCE's log_prob; and bad targets refused at run time.

(One case, NLL mean with ignore_index=-1 and no weights, is checked against onnxruntime:
the reference evaluator divides by the ignored targets too there, unlike the spec.)
Tolerances: rtol 1e-5 / atol 1e-6 for float32 (sums of up to a few hundred terms in another
order than numpy's), rtol 1e-12 / atol 1e-12 for float64.
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import numpy_helper
from onnx.reference import ReferenceEvaluator

import onnxc
from onnxc.errors import InvalidInputError, ModelLoadError
from tests.single_op import single_op_model

TOLERANCES = {np.float32: (1e-5, 1e-6), np.float64: (1e-12, 1e-12)}


def _model(op_type, shape, dtype=np.float32, index_dtype=np.int64, weight=None,
           log_prob=False, **attrs):
    """One loss node; scores `x` and target `t` are graph inputs, the weight an initializer
    (or a graph input `w` when `weight` is "input"); IR version 8."""
    inputs = {"x": (dtype, shape), "t": (index_dtype, [shape[0], *shape[2:]])}
    inits = {}
    if isinstance(weight, str):
        inputs["w"] = (dtype, [shape[1]])
    elif weight is not None:
        inits["w"] = weight.astype(dtype)
    outputs = ["loss", "log_prob"] if log_prob else ["loss"]
    opset = 22 if op_type == "NegativeLogLikelihoodLoss" else 13
    return single_op_model(op_type, inputs, {o: (dtype, None) for o in outputs}, attrs=attrs,
                           initializers=inits, opset=opset, ir_version=8)


def _data(shape, dtype, index_dtype, ignore_index=None, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 2).astype(dtype)
    t = rng.integers(0, shape[1], size=(shape[0], *shape[2:])).astype(index_dtype)
    if ignore_index is not None:
        t.reshape(-1)[::3] = ignore_index  # a third of the targets ignored
    return x, t


def _check(model, feeds, dtype=np.float32, reference="onnx"):
    if reference == "onnxruntime":
        expected = ort.InferenceSession(model.SerializeToString()).run(None, feeds)
    else:
        expected = ReferenceEvaluator(model).run(None, feeds)
    got = onnxc.compile(model, cache_dir=False).run(None, feeds)
    rtol, atol = TOLERANCES[dtype]
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)


@pytest.mark.parametrize("op_type", ["NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"])
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore_index", [None, 1, 7, -1, -4])
def test_loss_attributes(op_type, reduction, weighted, ignore_index):
    """All reductions, weights and ignore_index placements on N x C x d1 x d2."""
    # the reference's NLL mean divides by every target, ignored ones included, for
    # ignore_index=-1 without weights; the ONNX spec, onnxruntime and onnxc by the kept ones
    quirk = (op_type == "NegativeLogLikelihoodLoss" and ignore_index == -1 and not weighted
             and reduction == "mean")
    shape = (3, 5, 2, 4)
    weight = np.linspace(0.2, 1.8, shape[1]) if weighted else None
    attrs = {"reduction": reduction}
    if ignore_index is not None:
        attrs["ignore_index"] = ignore_index
    model = _model(op_type, shape, weight=weight, **attrs)
    x, t = _data(shape, np.float32, np.int64, ignore_index)
    _check(model, {"x": x, "t": t}, reference="onnxruntime" if quirk else "onnx")


@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5), (2, 3, 2, 2, 3)])
@pytest.mark.parametrize("dtype, index_dtype", [(np.float32, np.int32), (np.float64, np.int64)])
def test_sce_shapes_types_and_log_prob(shape, dtype, index_dtype):
    model = _model("SoftmaxCrossEntropyLoss", shape, dtype, index_dtype, weight="input",
                   log_prob=True, reduction="mean", ignore_index=0)
    x, t = _data(shape, dtype, index_dtype, ignore_index=0, seed=3)
    w = np.linspace(0.5, 1.5, shape[1]).astype(dtype)
    _check(model, {"x": x, "t": t, "w": w}, dtype)


@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 2, 2, 3)])
@pytest.mark.parametrize("dtype, index_dtype", [(np.float32, np.int64), (np.float64, np.int32)])
def test_nll_shapes_and_types(shape, dtype, index_dtype):
    model = _model("NegativeLogLikelihoodLoss", shape, dtype, index_dtype, reduction="sum")
    x, t = _data(shape, dtype, index_dtype, seed=4)
    _check(model, {"x": x, "t": t}, dtype)


def test_ignored_minus_infinity_gives_zero():
    """An ignored position whose log-probability is -inf is 0 (a select, not 0 * inf)."""
    model = _model("NegativeLogLikelihoodLoss", (2, 3), reduction="none", ignore_index=2)
    x = np.array([[-np.inf, -1.0, -2.0], [-0.5, -1.5, -np.inf]], np.float32)
    t = np.array([1, 2], np.int64)
    got = onnxc.compile(model, cache_dir=False).run(None, {"x": x, "t": t})[0]
    np.testing.assert_array_equal(got, [1.0, 0.0])


def test_nll_mean_of_all_ignored_is_nan():
    """mean divides by the summed weights of the kept targets, here 0: NaN, as ONNX gives."""
    model = _model("NegativeLogLikelihoodLoss", (2, 3), reduction="mean", ignore_index=1)
    x, t = _data((2, 3), np.float32, np.int64)
    t[:] = 1
    got = onnxc.compile(model, cache_dir=False).run(None, {"x": x, "t": t})[0]
    assert np.isnan(got)


@pytest.mark.parametrize("op_type", ["NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"])
@pytest.mark.parametrize("bad", [3, -1, 100])
def test_target_out_of_range_is_refused(op_type, bad):
    """A target outside [0, C) that is not ignore_index is an InvalidInputError naming the
    node, never a read outside the scores (no ONNX wrap-around for negative classes)."""
    model = _model(op_type, (2, 3, 4), weight=np.ones(3), reduction="mean", ignore_index=-7)
    compiled = onnxc.compile(model, cache_dir=False)
    x, t = _data((2, 3, 4), np.float32, np.int64)
    t[1, 2] = bad
    with pytest.raises(InvalidInputError, match=rf"{op_type}.*target.*{bad}"):
        compiled.run(None, {"x": x, "t": t})
    t[1, 2] = -7  # ignored: fine
    _check(model, {"x": x, "t": t})


def test_bad_attributes_and_shapes_are_typed_errors():
    with pytest.raises(ModelLoadError, match="reduction 'avg'"):
        onnxc.compile(_model("NegativeLogLikelihoodLoss", (2, 3), reduction="avg"),
                      cache_dir=False)
    model = _model("SoftmaxCrossEntropyLoss", (2, 3), weight=np.ones(3))
    model.graph.initializer[0].CopyFrom(numpy_helper.from_array(np.ones(4, np.float32), "w"))
    with pytest.raises(ModelLoadError, match=r"weight shape \[4\]"):
        onnxc.compile(model, cache_dir=False)
