"""Quantization import and kernels: Quantize/DequantizeLinear in every form,
DynamicQuantizeLinear, and QLinearConv / QLinearMatMul / ConvInteger / MatMulInteger.

onnx's node tests of those ops run through onnxc.backend and must pass (not skip); larger
random cases compare the native kernels with onnx.reference (bit-exact: both divide once in
f32 and round half to even) and with onnxruntime (QLinear ops: exact integers; run on the
model's u8-weight twin, which onnxruntime computes exactly on hosts without VNNI too:
tests/exact_int8_reference.py).
"""

from __future__ import annotations

import functools
import os
import tempfile
import unittest

import ml_dtypes
import numpy as np
import onnx
import onnx.backend.test
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import onnxc
import onnxc.backend
from onnxc.errors import UnsupportedOpError
from onnxc.frontend import import_onnx
from onnxc.passes.evaluator import evaluate
from tests.exact_int8_reference import ort_exact
from tests.single_op import graph_model

os.environ.setdefault("ONNX_HOME", tempfile.mkdtemp(prefix="onnxc-onnx-home-"))

NODE_TESTS = [
    "test_convinteger_with_padding", "test_convinteger_without_padding",
    "test_dequantizelinear", "test_dequantizelinear_axis", "test_dequantizelinear_blocked",
    "test_dequantizelinear_e4m3fn", "test_dequantizelinear_e4m3fn_float16",
    "test_dequantizelinear_e4m3fn_zero_point", "test_dequantizelinear_e5m2",
    "test_dequantizelinear_float4e2m1", "test_dequantizelinear_int16",
    "test_dequantizelinear_int2", "test_dequantizelinear_int4", "test_dequantizelinear_uint16",
    "test_dequantizelinear_uint2", "test_dequantizelinear_uint4",
    "test_dynamicquantizelinear", "test_dynamicquantizelinear_expanded",
    "test_dynamicquantizelinear_max_adjusted", "test_dynamicquantizelinear_max_adjusted_expanded",
    "test_dynamicquantizelinear_min_adjusted", "test_dynamicquantizelinear_min_adjusted_expanded",
    "test_matmulinteger", "test_qlinearconv",
    "test_qlinearmatmul_2D_int8_float16", "test_qlinearmatmul_2D_int8_float32",
    "test_qlinearmatmul_2D_uint8_float16", "test_qlinearmatmul_2D_uint8_float32",
    "test_qlinearmatmul_3D_int8_float16", "test_qlinearmatmul_3D_int8_float32",
    "test_qlinearmatmul_3D_uint8_float16", "test_qlinearmatmul_3D_uint8_float32",
    "test_quantizelinear", "test_quantizelinear_axis", "test_quantizelinear_blocked_asymmetric",
    "test_quantizelinear_blocked_symmetric", "test_quantizelinear_e4m3fn",
    "test_quantizelinear_e5m2", "test_quantizelinear_float4e2m1", "test_quantizelinear_int16",
    "test_quantizelinear_int2", "test_quantizelinear_int4", "test_quantizelinear_uint16",
    "test_quantizelinear_uint2", "test_quantizelinear_uint4",
]
"""Every node test of the seven ops in onnx 1.23 (the _expanded bodies included)."""


@functools.cache
def _node_case() -> type:
    suite = onnx.backend.test.BackendTest(onnxc.backend, __name__)
    return suite.test_cases["OnnxBackendNodeModelTest"]


@pytest.mark.parametrize("name", NODE_TESTS)
def test_node_test_passes(name):
    case = _node_case()
    assert hasattr(case, f"{name}_cpu"), f"{name} is not in this onnx's node suite"
    result = unittest.TestResult()
    case(f"{name}_cpu").run(result)
    problems = [text for _, text in result.failures + result.errors]
    problems += [f"skipped: {reason}" for _, reason in result.skipped]
    assert not problems, problems[0]


def test_node_test_list_is_complete():
    import re

    names = {n.removesuffix("_cpu") for n in dir(_node_case()) if n.endswith("_cpu")}
    ours = re.compile(r"test_(quantizelinear|dequantizelinear|dynamicquantizelinear|qlinearconv"
                      r"|qlinearmatmul|convinteger|matmulinteger)")
    assert {n for n in names if ours.match(n)} == set(NODE_TESTS)


# --------------------------------------------------------------------------- model builders


def _model(nodes, inputs, outputs, initializers=(), opset: int = 21) -> onnx.ModelProto:
    """`inputs` (name, type, shape) triples, `outputs` (name, type) pairs, `initializers`
    (name, array) pairs; IR version 10 (onnxruntime 1.31 refuses onnx 1.23's default)."""
    return graph_model(nodes, {n: (t, s) for n, t, s in inputs},
                       {n: (t, None) for n, t in outputs}, initializers=dict(initializers),
                       opset=opset, ir_version=10)


def _compiled_equals_reference(model, feeds, opt_level: int = 0):
    """onnxc's outputs bit-equal onnx.reference's, and the graph evaluator's too (constant
    folding and verify-numerics use it)."""
    expected = ReferenceEvaluator(model).run(None, feeds)
    compiled = onnxc.compile(model, opt_level=opt_level, cache_dir=False)
    actual = compiled.run(None, feeds)
    evaluated = evaluate(import_onnx(model), feeds)
    for a, v, e in zip(actual, evaluated, expected, strict=True):
        assert a.dtype == e.dtype and a.shape == e.shape
        np.testing.assert_array_equal(a.view(np.uint8) if a.dtype.itemsize == 1 else a,
                                      e.view(np.uint8) if e.dtype.itemsize == 1 else e)
        np.testing.assert_array_equal(np.asarray(v).astype(e.dtype).view(np.uint8)
                                      if e.dtype.itemsize == 1 else v, 
                                      e.view(np.uint8) if e.dtype.itemsize == 1 else e)


def _data(shape, seed=0, spread=40.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * spread).astype(np.float32)
    flat = x.reshape(-1)
    flat[:8] = [0.5, 1.5, 2.5, -0.5, -2.5, 1e6, -1e6, 0.0][:flat.size]  # ties, saturation
    return x


_INT_TYPES = [TensorProto.UINT8, TensorProto.INT8, TensorProto.UINT16, TensorProto.INT16,
              TensorProto.UINT4, TensorProto.INT4, TensorProto.UINT2, TensorProto.INT2]


def _zeros_of(onnx_type, shape, seed=1) -> np.ndarray:
    dtype = helper.tensor_dtype_to_np_dtype(onnx_type)
    info = ml_dtypes.iinfo(dtype)
    rng = np.random.default_rng(seed)
    return rng.integers(int(info.min), int(info.max) + 1, size=shape).astype(dtype)


# --------------------------------------------------------------------------- Q/DQ numerics


_FORMS = {"tensor": (1, 0), "axis0": (0, 0), "axis1": (1, 0), "axis-1": (-1, 0),
          "block1": (1, 8), "block-1": (-1, 6)}
"""(axis, block_size): per tensor, per axis (first, middle, last), blocked with a ragged
last block along a middle and the last axis."""


@pytest.mark.parametrize("qtype", _INT_TYPES)
def test_quantize_then_dequantize_match_reference(qtype):
    """Every form of parameters on one model per integer type."""
    shape = (6, 37, 20)
    rng = np.random.default_rng(2)
    nodes, outputs, inits = [], [], []
    for form, (axis, block) in _FORMS.items():
        if form == "tensor":
            pshape = ()
        elif block == 0:
            pshape = (shape[axis],)
        else:
            pshape = tuple(-(-d // block) if i == axis % 3 else d for i, d in enumerate(shape))
        attrs = {"axis": axis, **({"block_size": block} if block else {})}
        s, z, q, y = (f"{name}_{form}" for name in ("s", "z", "q", "y"))
        nodes += [helper.make_node("QuantizeLinear", ["x", s, z], [q], **attrs),
                  helper.make_node("DequantizeLinear", [q, s, z], [y], **attrs)]
        outputs += [(q, qtype), (y, TensorProto.FLOAT)]
        inits += [(s, rng.uniform(0.05, 2.0, pshape).astype(np.float32)),
                  (z, _zeros_of(qtype, pshape))]
    model = _model(nodes, [("x", TensorProto.FLOAT, shape)], outputs, inits)
    _compiled_equals_reference(model, {"x": _data(shape)})


@pytest.mark.parametrize("qtype", [TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E4M3FNUZ,
                                   TensorProto.FLOAT8E5M2, TensorProto.FLOAT8E5M2FNUZ])
@pytest.mark.parametrize("saturate", [1, 0])
def test_float8_quantize_matches_reference(qtype, saturate):
    shape = (4, 300)
    scale = np.array([0.5, 1.0, 0.25, 3.0], np.float32)
    model = _model(
        [helper.make_node("QuantizeLinear", ["x", "s"], ["q"], axis=0, saturate=saturate,
                          output_dtype=qtype),
         helper.make_node("DequantizeLinear", ["q", "s"], ["y"], axis=0)],
        [("x", TensorProto.FLOAT, shape)], [("q", qtype), ("y", TensorProto.FLOAT)],
        [("s", scale)])
    x = _data(shape, spread=100.0)
    x[0, 8:11] = [np.nan, np.inf, -np.inf]
    if saturate:  # ml_dtypes' unsaturated cast of inf to the FNUZ types differs from onnx's
        _compiled_equals_reference(model, {"x": x})
    else:
        _compiled_equals_reference(model, {"x": np.clip(x, -400, 400)})


def test_float4_quantize_matches_reference():
    model = _model(
        [helper.make_node("QuantizeLinear", ["x", "s"], ["q"], output_dtype=TensorProto.FLOAT4E2M1),
         helper.make_node("DequantizeLinear", ["q", "s"], ["y"])],
        [("x", TensorProto.FLOAT, (3, 50))],
        [("q", TensorProto.FLOAT4E2M1), ("y", TensorProto.FLOAT)],
        [("s", np.array(0.75, np.float32))], opset=23)
    _compiled_equals_reference(model, {"x": _data((3, 50), spread=4.0)})


@pytest.mark.parametrize("scale_type", [TensorProto.FLOAT16, TensorProto.BFLOAT16])
def test_half_scales_and_output_dtype(scale_type):
    """f16/bf16 scales: DQ returns the scale's type unless output_dtype (opset 23) says."""
    dtype = helper.tensor_dtype_to_np_dtype(scale_type)
    scale = np.array([0.1, 0.3, 0.7], np.float32).astype(dtype)
    zero = np.array([3, 100, 250], np.uint8)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=0),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=0),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["f"], axis=0,
                              output_dtype=TensorProto.FLOAT)]
    model = _model(nodes, [("x", TensorProto.FLOAT, (3, 40))],
                   [("q", TensorProto.UINT8), ("y", scale_type), ("f", TensorProto.FLOAT)],
                   [("s", scale), ("z", zero)], opset=23)
    _compiled_equals_reference(model, {"x": _data((3, 40), spread=20.0)})


def test_half_input_and_precision():
    """x / scale in f16 when both are f16 (numpy's promotion), in `precision` when given."""
    scale = np.array(0.37, np.float16)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s"], ["q"]),
             helper.make_node("QuantizeLinear", ["x", "s"], ["p"], precision=TensorProto.FLOAT)]
    model = _model(nodes, [("x", TensorProto.FLOAT16, (2, 64))],
                   [("q", TensorProto.UINT8), ("p", TensorProto.UINT8)], [("s", scale)],
                   opset=23)
    x = np.random.default_rng(3).uniform(0, 90, (2, 64)).astype(np.float16)
    _compiled_equals_reference(model, {"x": x})


def test_int32_dequantize():
    """DequantizeLinear takes int32 too (quantize_static's biases; onnx.reference starts at
    opset 19, onnxruntime checks opset 10)."""
    nodes = [helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"])]
    model = _model(nodes, [("x", TensorProto.INT32, (3, 5))], [("y", TensorProto.FLOAT)],
                   [("s", np.array(0.125, np.float32)), ("z", np.array(0, np.int32))], opset=10)
    x = np.random.default_rng(11).integers(-(1 << 20), 1 << 20, (3, 5)).astype(np.int32)
    _ort_equal(model, {"x": x}, opt_level=0)
    per_axis = _model([helper.make_node("DequantizeLinear", ["x", "s"], ["y"], axis=0)],
                      [("x", TensorProto.INT32, (3, 5))], [("y", TensorProto.FLOAT)],
                      [("s", np.array([0.5, 0.25, 2.0], np.float32))], opset=19)
    _compiled_equals_reference(per_axis, {"x": x})


def test_bfloat16_input_and_output():
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])]
    model = _model(nodes, [("x", TensorProto.BFLOAT16, (4, 33))],
                   [("q", TensorProto.INT8), ("y", TensorProto.BFLOAT16)],
                   [("s", np.array(0.3, ml_dtypes.bfloat16)), ("z", np.array(-7, np.int8))])
    x = _data((4, 33), spread=20.0).astype(ml_dtypes.bfloat16)
    _compiled_equals_reference(model, {"x": x})


def test_large_tensors_run_on_threads_like_onnxruntime():
    """Past the elementwise threading threshold (per tensor and per axis), against
    onnxruntime at opset 13."""
    shape = (8, 64, 96)
    scale = np.random.default_rng(4).uniform(0.01, 0.2, 64).astype(np.float32)
    zero = _zeros_of(TensorProto.INT8, (64,))
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"]),
             helper.make_node("QuantizeLinear", ["x", "t", "u"], ["r"])]
    model = _model(nodes, [("x", TensorProto.FLOAT, shape)],
                   [("q", TensorProto.INT8), ("y", TensorProto.FLOAT), ("r", TensorProto.UINT8)],
                   [("s", scale), ("z", zero), ("t", np.array(0.05, np.float32)),
                    ("u", np.array(120, np.uint8))], opset=13)
    x = _data(shape, spread=3.0)
    expected = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    actual = onnxc.compile(model, cache_dir=False, num_threads=2).run(None, {"x": x})
    for a, e in zip(actual, expected, strict=True):
        np.testing.assert_array_equal(a, e)


def test_blocked_last_axis_on_threads():
    """One row of blocks: the kernel splits the blocks between threads."""
    shape, block = (1, 40000), 128
    scale = np.random.default_rng(12).uniform(0.01, 0.1, (1, -(-shape[1] // block)))
    zero = _zeros_of(TensorProto.INT4, scale.shape)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], block_size=block),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], block_size=block)]
    model = _model(nodes, [("x", TensorProto.FLOAT, shape)],
                   [("q", TensorProto.INT4), ("y", TensorProto.FLOAT)],
                   [("s", scale.astype(np.float32)), ("z", zero)])
    _compiled_equals_reference(model, {"x": _data(shape, spread=0.3)})


# --------------------------------------------------------------------------- DynamicQuantizeLinear


@pytest.mark.parametrize("case", ["mixed", "positive", "negative", "zeros", "tail", "large"])
def test_dynamic_quantize_matches_reference_and_onnxruntime(case):
    shape = {"mixed": (16, 33), "positive": (5, 7), "negative": (64,), "zeros": (3, 16),
             "tail": (1, 17), "large": (64, 1024)}[case]
    x = np.random.default_rng(5).standard_normal(shape).astype(np.float32) * 3
    x = {"positive": np.abs(x) + 0.5, "negative": -np.abs(x) - 1, "zeros": x * 0}.get(case, x)
    model = _model([helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])],
                   [("x", TensorProto.FLOAT, shape)],
                   [("y", TensorProto.UINT8), ("s", TensorProto.FLOAT), ("z", TensorProto.UINT8)],
                   opset=11)
    _compiled_equals_reference(model, {"x": x})
    expected = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    actual = onnxc.compile(model, cache_dir=False).run(None, {"x": x})
    if case == "zeros":  # an empty range: onnx.reference's scale 1/255, onnxruntime's 1
        actual, expected = [actual[0], actual[2]], [expected[0], expected[2]]
    for a, e in zip(actual, expected, strict=True):
        np.testing.assert_array_equal(a, e)


# --------------------------------------------------------------------------- quantized compute ops


def _ort_equal(model, feeds, opt_level=3):
    expected = ort_exact(model, feeds)
    actual = onnxc.compile(model, opt_level=opt_level, cache_dir=False).run(None, feeds)
    for a, e in zip(actual, expected, strict=True):
        assert a.dtype == e.dtype
        np.testing.assert_array_equal(a, e)


@pytest.mark.parametrize("per_column", [False, True])
def test_dynamic_matmul_integer_matches_onnxruntime(per_column):
    """quantize_dynamic's pattern: DynamicQuantizeLinear -> MatMulInteger with a run-time A
    zero point, then the float rescale."""
    rng = np.random.default_rng(6)
    b = rng.integers(-128, 128, (48, 40)).astype(np.int8)
    bz = (rng.integers(-5, 6, 40) if per_column else np.array(3)).astype(np.int8)
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
             helper.make_node("MatMulInteger", ["xq", "b", "xz", "bz"], ["acc"]),
             helper.make_node("Cast", ["acc"], ["accf"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["accf", "xs"], ["y"])]
    model = _model(nodes, [("x", TensorProto.FLOAT, (2, 5, 48))],
                   [("y", TensorProto.FLOAT), ("acc", TensorProto.INT32)],
                   [("b", b), ("bz", bz)], opset=13)
    x = rng.standard_normal((2, 5, 48)).astype(np.float32)
    expected = ort_exact(model, {"x": x})
    actual = onnxc.compile(model, cache_dir=False).run(None, {"x": x})
    np.testing.assert_array_equal(actual[1], expected[1])
    np.testing.assert_allclose(actual[0], expected[0], rtol=1e-6, atol=0)


@pytest.mark.parametrize("pads", [[0, 0, 0, 0], [1, 2, 1, 0]])
def test_dynamic_conv_integer_matches_reference(pads):
    """quantize_dynamic's conv: DynamicQuantizeLinear -> ConvInteger with a run-time x zero
    point (padding holds the zero point: partial windows get their own correction)."""
    rng = np.random.default_rng(13)
    w = rng.integers(-128, 128, (6, 2, 3, 3)).astype(np.int8)
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
             helper.make_node("ConvInteger", ["xq", "w", "xz", "wz"], ["y"], pads=pads,
                              strides=[2, 1], group=2)]
    model = _model(nodes, [("x", TensorProto.FLOAT, (2, 4, 7, 6))], [("y", TensorProto.INT32)],
                   [("w", w), ("wz", rng.integers(-3, 4, 6).astype(np.int8))], opset=13)
    _compiled_equals_reference(model, {"x": rng.standard_normal((2, 4, 7, 6)).astype(np.float32)})


def test_matmul_integer_per_row_a_zero_point():
    rng = np.random.default_rng(7)
    a_zero = np.array([1, 200, 17], np.uint8)
    model = _model([helper.make_node("MatMulInteger", ["a", "b", "az"], ["y"])],
                   [("a", TensorProto.UINT8, (3, 9))], [("y", TensorProto.INT32)],
                   [("b", rng.integers(0, 256, (9, 4)).astype(np.uint8)), ("az", a_zero)],
                   opset=13)
    a = rng.integers(0, 256, (3, 9)).astype(np.uint8)
    b = numpy_helper.to_array(model.graph.initializer[0]).astype(np.int64)
    expected = (a.astype(np.int64) - a_zero[:, None]) @ b  # onnx.reference cannot broadcast it
    (actual,) = onnxc.compile(model, cache_dir=False).run(None, {"a": a})
    np.testing.assert_array_equal(actual, expected.astype(np.int32))


@pytest.mark.parametrize("auto_pad", ["NOTSET", "SAME_UPPER", "VALID"])
def test_qlinear_conv_per_channel_matches_onnxruntime(auto_pad):
    rng = np.random.default_rng(8)
    w = rng.integers(-127, 128, (6, 3, 3, 3)).astype(np.int8)
    inits = [("xs", np.array(0.02, np.float32)), ("xz", np.array(120, np.uint8)), ("w", w),
             ("ws", rng.uniform(0.001, 0.01, 6).astype(np.float32)),
             ("wz", np.zeros(6, np.int8)), ("ys", np.array(0.05, np.float32)),
             ("yz", np.array(100, np.uint8)),
             ("bias", rng.integers(-2000, 2000, 6).astype(np.int32))]
    attrs = {"auto_pad": auto_pad, "strides": [2, 1]}
    if auto_pad == "NOTSET":
        attrs["pads"] = [1, 0, 1, 2]
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "bias"],
                            ["y"], **attrs)
    model = _model([node], [("x", TensorProto.UINT8, (2, 3, 9, 8))], [("y", TensorProto.UINT8)],
                   inits, opset=13)
    _ort_equal(model, {"x": rng.integers(0, 256, (2, 3, 9, 8)).astype(np.uint8)})


def test_conv_integer_and_qlinear_matmul_match_onnxruntime():
    rng = np.random.default_rng(9)
    nodes = [helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"],
                              ["m"])]
    inits = [("w", rng.integers(0, 256, (4, 2, 3, 3)).astype(np.uint8)),
             ("xz", np.array(7, np.uint8)), ("wz", np.array(130, np.uint8)),
             ("as", np.array(0.03, np.float32)), ("az", np.array(-3, np.int8)),
             ("b", rng.integers(-128, 128, (16, 24)).astype(np.int8)),
             ("bs", rng.uniform(0.01, 0.02, 24).astype(np.float32)),
             ("bz", np.zeros(24, np.int8)), ("ys", np.array(0.4, np.float32)),
             ("yz", np.array(-10, np.int8))]
    model = _model(nodes, [("x", TensorProto.UINT8, (1, 2, 6, 6)),
                           ("a", TensorProto.INT8, (3, 5, 16))],
                   [("c", TensorProto.INT32), ("m", TensorProto.INT8)], inits, opset=13)
    _ort_equal(model, {"x": rng.integers(0, 256, (1, 2, 6, 6)).astype(np.uint8),
                       "a": rng.integers(-128, 128, (3, 5, 16)).astype(np.int8)})


# --------------------------------------------------------------------------- typed errors


def test_run_time_per_axis_scale_is_a_typed_error():
    model = _model([helper.make_node("DequantizeLinear", ["q", "s"], ["y"], axis=1)],
                   [("q", TensorProto.INT8, (2, 3)), ("s", TensorProto.FLOAT, (3,))],
                   [("y", TensorProto.FLOAT)])
    with pytest.raises(UnsupportedOpError) as info:
        import_onnx(model)
    assert (info.value.op_type, info.value.opset) == ("DequantizeLinear", 21)
    assert "DequantizeLinear_0" in str(info.value) and "must be a constant" in str(info.value)


def test_conv_integer_with_run_time_zero_point_and_weight_is_a_typed_error():
    model = _model([helper.make_node("ConvInteger", ["x", "w", "xz"], ["y"])],
                   [("x", TensorProto.UINT8, (1, 1, 4, 4)), ("w", TensorProto.UINT8, (1, 1, 2, 2)),
                    ("xz", TensorProto.UINT8, ())],
                   [("y", TensorProto.INT32)], opset=13)
    with pytest.raises(UnsupportedOpError, match=r"ConvInteger.*opset 13.*x_zero_point.*'w'"):
        import_onnx(model)


def test_qlinear_conv_runs_at_any_batch():
    """QLinearConv and Q/DQ keep samples apart: a symbolic batch compiles once (batch_axes)."""
    rng = np.random.default_rng(10)
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("QLinearConv", ["xq", "xs", "xz", "w", "ws", "wz", "ys", "yz"],
                              ["yq"], pads=[1, 1, 1, 1]),
             helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])]
    inits = [("xs", np.array(0.02, np.float32)), ("xz", np.array(128, np.uint8)),
             ("w", rng.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8)),
             ("ws", rng.uniform(0.001, 0.01, 4).astype(np.float32)),
             ("wz", np.zeros(4, np.int8)), ("ys", np.array(0.05, np.float32)),
             ("yz", np.array(100, np.uint8))]
    model = _model(nodes, [("x", TensorProto.FLOAT, ("N", 3, 8, 8))], [("y", TensorProto.FLOAT)],
                   inits, opset=13)
    compiled = onnxc.compile(model, cache_dir=False)
    for batch in (1, 3):
        x = rng.standard_normal((batch, 3, 8, 8)).astype(np.float32)
        np.testing.assert_array_equal(compiled.run(None, {"x": x})[0],
                                      ort_exact(model, {"x": x})[0])
