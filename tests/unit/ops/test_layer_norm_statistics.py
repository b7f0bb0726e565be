"""LayerNormalization-17 with its Mean and InvStdDev outputs (graph.layer_normalization_stats,
LayerNorm's kernel storing each row's statistics) against onnx.reference.ReferenceEvaluator:
every axis, with and without bias, one statistic or both, at -O0 and -O3 (where the Extended
LayerNorm rewrites must leave it alone), and double inputs, whose statistics are float (the
stash type, as ONNX's type inference and onnxruntime have them).

Tolerances: rtol 1e-5 / atol 1e-6 (float32); 1e-6 / 1e-6 for double inputs, whose
statistics are float32 in onnxc but float64 in the reference.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto
from onnx.reference import ReferenceEvaluator

import onnxc
from tests.single_op import single_op_model

_TYPES = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE}


def _model(shape, axis, outputs=("y", "mean", "inv"), bias=True, dtype=np.float32,
           epsilon=1e-5):
    """LayerNormalization of x (`shape`) returning `outputs` (the node skips the others),
    random scale g (and bias b) constants, opset 17, IR version 8."""
    width = shape[axis:]
    rng = np.random.default_rng(1)
    inits = {"g": (1 + 0.1 * rng.standard_normal(width)).astype(dtype)}
    if bias:
        inits["b"] = (0.1 * rng.standard_normal(width)).astype(dtype)
    names = ["y", "mean", "inv"]
    node_outputs = [o if o in outputs else "" for o in names]
    while not node_outputs[-1]:
        node_outputs.pop()
    out_types = {"y": _TYPES[dtype], "mean": TensorProto.FLOAT, "inv": TensorProto.FLOAT}
    return single_op_model("LayerNormalization", {"x": (_TYPES[dtype], shape)},
                           {o: (out_types[o], None) for o in outputs}, node_outputs=node_outputs,
                           attrs={"axis": axis, "epsilon": epsilon}, initializers=inits,
                           opset=17, ir_version=8)


def _check(model, shape, dtype=np.float32, tol=(1e-5, 1e-6), **compile_args):
    x = (np.random.default_rng(0).standard_normal(shape) * 3 + 1).astype(dtype)
    names = [o.name for o in model.graph.output]
    reference = dict(zip(names, ReferenceEvaluator(model).run(None, {"x": x}), strict=True))
    got = onnxc.compile(model, cache_dir=False, **compile_args).run(None, {"x": x})
    for name, value in zip(names, got, strict=True):
        expected = reference[name]
        assert value.shape == expected.shape, name
        if name == "y":
            assert value.dtype == x.dtype
        else:
            assert value.dtype == np.float32, name
        np.testing.assert_allclose(value, expected, rtol=tol[0], atol=tol[1], err_msg=name)


@pytest.mark.parametrize("shape, axis", [((2, 5, 33), -1), ((3, 4, 5, 6), 2), ((3, 4, 5), 0),
                                         ((4, 7), 1), ((2, 3, 4), -3)])
@pytest.mark.parametrize("bias", [True, False])
def test_statistics_every_axis(shape, axis, bias):
    _check(_model(shape, axis, bias=bias), shape)


@pytest.mark.parametrize("outputs", [("y", "mean"), ("y", "inv"), ("inv",), ("mean", "y")])
@pytest.mark.parametrize("opt_level", [0, 3])
def test_some_outputs_and_opt_levels(outputs, opt_level):
    shape = (3, 4, 9)
    _check(_model(shape, -1, outputs=outputs, epsilon=0.01), shape, opt_level=opt_level)


def test_double_input_has_float_statistics():
    shape = (3, 10)
    _check(_model(shape, 1, dtype=np.float64), shape, np.float64, tol=(1e-6, 1e-6))
