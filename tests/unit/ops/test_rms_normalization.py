"""RMSNormalization (opset 23; graph.rms_normalization and its kernel, LayerNorm's without the
mean) against onnx.reference.ReferenceEvaluator: every axis, row lengths that leave vector
remainders, scales broadcast within the normalized dimensions, epsilon, double inputs (their
statistics in float, the stash type), one and two threads, -O0 and -O3.

Tolerances: rtol 1e-5 / atol 1e-6 for float32 results; 1e-6 / 1e-6 for double inputs,
whose statistics are float32 (stash_type) in onnxc but float64 in the reference.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx.reference import ReferenceEvaluator

import onnxc
from onnxc.dialects import graph
from onnxc.errors import UnsupportedOpError
from onnxc.frontend.onnx_importer import import_onnx
from onnxc.passes.evaluator import evaluate_op
from tests.single_op import single_op_model


def _model(shape, scale, dtype=np.float32, **attrs):
    """RMSNormalization of x (`shape`) by the constant `scale`, opset 23, IR version 10."""
    return single_op_model("RMSNormalization", {"x": (dtype, shape)}, {"y": (dtype, None)},
                           attrs=attrs, initializers={"s": scale.astype(dtype)}, opset=23,
                           ir_version=10)


def _check(model, shape, dtype=np.float32, tol=(1e-5, 1e-6), **compile_args):
    x = (np.random.default_rng(0).standard_normal(shape) * 3).astype(dtype)
    expected = ReferenceEvaluator(model).run(None, {"x": x})[0]
    got = onnxc.compile(model, cache_dir=False, **compile_args).run(None, {"x": x})[0]
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=tol[0], atol=tol[1])


@pytest.mark.parametrize("shape, axis", [((2, 5, 33), -1), ((3, 4, 5, 6), 2), ((1, 768), -1),
                                         ((3, 4, 5), 0), ((4, 7), 1), ((2, 3, 4), -3)])
@pytest.mark.parametrize("threads", [1, 2])
def test_axes_and_row_lengths(shape, axis, threads):
    scale = 1 + 0.1 * np.random.default_rng(1).standard_normal(shape[axis:])
    _check(_model(shape, scale, axis=axis), shape, num_threads=threads)


@pytest.mark.parametrize("scale_shape", [(5,), (1, 5), (3, 1), (1,)])
def test_scale_broadcasts_within_the_normalized_dimensions(scale_shape):
    scale = np.linspace(0.5, 1.5, int(np.prod(scale_shape))).reshape(scale_shape)
    _check(_model((2, 3, 5), scale, axis=1), (2, 3, 5))


@pytest.mark.parametrize("opt_level", [0, 3])
def test_epsilon_and_opt_levels(opt_level):
    shape = (4, 3, 17)
    scale = np.full(shape[-1], 0.7)
    _check(_model(shape, scale, epsilon=0.25), shape, opt_level=opt_level)


def test_double_input_computes_in_the_stash_type():
    shape = (3, 10)
    scale = np.linspace(-1, 1, 10)
    _check(_model(shape, scale, np.float64), shape, np.float64, tol=(1e-6, 1e-6))


def test_zero_rows_and_verify_numerics():
    """A row of zeros is 0 (eps keeps the root positive); the pipeline keeps the numerics of
    the graph evaluator's rms_normalization."""
    shape = (3, 8)
    model = _model(shape, np.ones(8))
    x = np.zeros(shape, np.float32)
    x[1] = np.arange(8)
    got = onnxc.compile(model, cache_dir=False, verify_numerics=True).run(None, {"x": x})[0]
    np.testing.assert_array_equal(got[0], 0.0)
    np.testing.assert_allclose(got, ReferenceEvaluator(model).run(None, {"x": x})[0],
                               rtol=1e-5, atol=1e-6)


def test_graph_evaluator_matches_reference():
    model = _model((2, 3, 4), np.linspace(0.5, 2, 12).reshape(3, 4), axis=1, epsilon=1e-3)
    (op,) = [o for o in import_onnx(model).walk() if isinstance(o, graph.RMSNormalizationOp)]
    x = np.random.default_rng(2).standard_normal((2, 3, 4)).astype(np.float32)
    s = np.linspace(0.5, 2, 12).reshape(3, 4).astype(np.float32)
    (got,) = evaluate_op(op, [x, s])
    np.testing.assert_allclose(got, ReferenceEvaluator(model).run(None, {"x": x})[0],
                               rtol=1e-6, atol=1e-6)


def test_unsupported_stash_type_is_a_typed_error():
    with pytest.raises(UnsupportedOpError, match="stash_type 16"):
        onnxc.compile(_model((2, 4), np.ones(4), stash_type=16), cache_dir=False)
