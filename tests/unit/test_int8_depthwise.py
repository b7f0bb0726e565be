"""The vectorized int8 depthwise kernel (lowering/graph_to_loops/int8_depthwise.py).

Two references:
(a) the numpy contract of dialects/graph_qlinear.py (the helpers of test_qlinear_kernels.py)
    on one-op graph modules whose conv runs in NHWC: i32, ui8 and i8 results exactly (the
    rounding is computed in f32 the same way), f32 within 2e-7 relative;
(b) onnxruntime on ONNX models (QLinearConv, ConvInteger, QDQ Conv) compiled through the
    whole onnxc pipeline: i32 results exactly; requantized ui8 / i8 results within 1 unit on
    at most 1% of the elements (MLAS may round a tie differently; in practice they are
    equal); f32 results (DQ -> Conv, which onnxruntime computes in float) within 1e-5
    relative + 1e-6 absolute.
Every case also asserts the kernel runs the conv (`family_of(op).name == "int8_depthwise"`):
C >= 16 (16 lanes a vector; C = 24 and 40 end in a shifted partial vector), 3x3 stride 1/2,
5x5, dilation 2, 7x7 and 1x27 (taps looped instead of unrolled), maps too small to have an
interior.
"""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, i64

import onnxc
from onnxc import pipeline
from onnxc.dialects.graph_qlinear import QLinearConvOp
from onnxc.lowering.graph_to_loops import int8_depthwise, int8_layout, qlinear_dispatch
from onnxc.target import host_target, target_of
from tests.single_op import graph_model
from tests.unit.test_qlinear_kernels import (
    ONNX_TYPE,
    _assert_matches,
    _close_bytes,
    _properties,
    build_module,
    conv_case,
    graph_compiler,
    random_bytes,
)

RNG = np.random.default_rng(17)

CASES = {
    # name: x shape (NCHW), kernel, strides, pads (top, left, bottom, right), dilations
    "c16_3x3_s1": ((1, 16, 9, 11), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
    "c24_3x3_s2": ((2, 24, 10, 9), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1)),
    "c40_5x5": ((1, 40, 12, 13), (5, 5), (1, 1), (2, 2, 2, 2), (1, 1)),
    "c24_dilated": ((1, 24, 11, 12), (3, 3), (1, 1), (2, 2, 2, 2), (2, 2)),
    "c40_asym": ((1, 40, 13, 10), (3, 2), (1, 2), (0, 1, 2, 0), (1, 3)),
    "c16_7x7": ((1, 16, 10, 9), (7, 7), (1, 1), (3, 3, 3, 3), (1, 1)),
    "c16_1x27": ((1, 16, 3, 30), (1, 27), (1, 1), (0, 13, 0, 13), (1, 1)),
    "c24_no_interior": ((1, 24, 2, 3), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
    "c32_large": ((1, 32, 40, 36), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
}


def _depthwise_op(module) -> QLinearConvOp:
    return next(o for o in module.walk() if isinstance(o, QLinearConvOp))


def _case(name, x_dtype, w_dtype, out_dtype, per_channel, with_bias, out_range=None,
          bias_argument=False):
    x_shape, kernel, strides, pads, dilations = CASES[name]
    c = x_shape[1]
    x, w = random_bytes(x_dtype, x_shape), random_bytes(w_dtype, (c, 1, *kernel))
    module, x, expected, bias = conv_case(x, w, (strides, pads, dilations, c), out_dtype,
                                          per_channel, with_bias, out_range, "NHWC",
                                          bias_argument)
    family = qlinear_dispatch.family_of(_depthwise_op(module), target_of(module))
    assert family is not None and family.name == "int8_depthwise"
    return module, x, expected, bias


# --------------------------------------------------------------------------- contract


@pytest.mark.parametrize("name", sorted(CASES))
def test_shapes_u8_requantized(name):
    module, x, expected, _ = _case(name, np.uint8, np.int8, np.uint8, True, True)
    with graph_compiler() as compile_module:
        _assert_matches(compile_module(module, threads=2)(x)[0], expected)


@pytest.mark.parametrize("x_dtype,w_dtype,out_dtype,per_channel,bias,out_range", [
    (np.uint8, np.uint8, np.int32, False, False, None),
    (np.int8, np.int8, np.int32, True, True, None),
    (np.int8, np.int8, np.int8, False, True, (-128, 100)),
    (np.uint8, np.int8, np.int8, True, False, None),
    (np.int8, np.uint8, np.uint8, True, True, (128, 255)),
    (np.uint8, np.int8, np.float32, True, True, None),
    (np.int8, np.int8, np.float32, False, False, None),
    (np.uint8, np.int8, np.float16, True, False, None),
])
def test_types(x_dtype, w_dtype, out_dtype, per_channel, bias, out_range):
    for name in ("c24_3x3_s2", "c40_5x5", "c24_dilated"):
        module, x, expected, _ = _case(name, x_dtype, w_dtype, out_dtype, per_channel, bias,
                                       out_range)
        with graph_compiler() as compile_module:
            _assert_matches(compile_module(module)(x)[0], expected)


def test_bias_argument():
    """A bias that is not a constant is added to the tabled start at run time."""
    module, x, expected, bias = _case("c40_asym", np.uint8, np.int8, np.uint8, True, True,
                                      bias_argument=True)
    with graph_compiler() as compile_module:
        _assert_matches(compile_module(module)(x, bias)[0], expected)


def test_portable_rounding(monkeypatch):
    """A target without x86's lrint rounds with roundeven + fptosi: the same values."""
    monkeypatch.setattr(int8_layout, "target_int8_isa", lambda target: "portable")
    module, x, expected, _ = _case("c40_asym", np.int8, np.int8, np.int8, True, True,
                                   (-100, 120))
    with graph_compiler() as compile_module:
        _assert_matches(compile_module(module)(x)[0], expected)


def test_shared_kernel_key():
    """Depthwise convs of one shape share a kernel whatever their weights, zero points,
    scales and bounds (all tabled); another window gets another kernel, and so do bounds
    that are the byte type's own (left to the narrowing's saturation: int8_requantize.Clamp)."""
    a = _depthwise_op(_case("c24_3x3_s2", np.uint8, np.int8, np.uint8, True, True,
                            (5, 250))[0])
    b = _depthwise_op(_case("c24_3x3_s2", np.uint8, np.int8, np.uint8, False, True,
                            (20, 200))[0])
    c = _depthwise_op(_case("c24_dilated", np.uint8, np.int8, np.uint8, True, True,
                            (5, 250))[0])
    full = _depthwise_op(_case("c24_3x3_s2", np.uint8, np.int8, np.uint8, True, True)[0])

    def key(op):
        return qlinear_dispatch.qlinear_kernel_key(op, host_target())

    assert key(a) == key(b) != key(c)
    assert key(full) != key(a)


def test_not_applicable():
    """Fewer than 16 channels and channel multipliers > 1 stay on the generic kernel."""
    for c, cout in ((8, 8), (16, 32)):
        x = random_bytes(np.uint8, (1, c, 6, 6))
        w = random_bytes(np.int8, (cout, 1, 3, 3))
        props = _properties(3, [0], np.uint8, [0.01], 128, None)
        window = {"strides": DenseArrayBase.from_list(i64, [1, 1]),
                  "pads": DenseArrayBase.from_list(i64, [1, 1, 1, 1]),
                  "dilations": DenseArrayBase.from_list(i64, [1, 1]),
                  "group": IntegerAttr(c, i64)}
        module = build_module(QLinearConvOp, x, w, None, (1, cout, 6, 6), np.uint8, props,
                              window, layout="NHWC")
        assert not int8_depthwise.applies(_depthwise_op(module), target_of(module))


# --------------------------------------------------------------------------- onnxruntime


def _families(model) -> list[str]:
    """The kernel family of each qlinear_conv of `model` as onnxc lowers it (after the
    graph passes and assign-layout)."""
    module = onnxc.optimize(model)
    pipeline.run_passes(pipeline.make_context(), module, ("assign-layout",
                                                          "fold-layout-converts"))
    return [getattr(qlinear_dispatch.family_of(op, target_of(module)), "name", "generic")
            for op in module.walk() if isinstance(op, QLinearConvOp)]


def _model(nodes, x, inits, out_type):
    return graph_model(nodes, {"x": (ONNX_TYPE[x.dtype.type], x.shape)}, {"y": (out_type, None)},
                       initializers=inits, opset=13, ir_version=8)


def _both(model, x):
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    session = onnxruntime.InferenceSession(model.SerializeToString(), options,
                                           providers=["CPUExecutionProvider"])
    want = session.run(None, {"x": x})[0]
    assert _families(model) == ["int8_depthwise"]
    got = onnxc.compile(model, cache_dir=False, num_threads=2)(x)[0]
    return got, want


ORT_CASES = [
    # name, x dtype, per-channel weight scales and zero points, bias
    ("c16_3x3_s1", np.uint8, True, True),
    ("c24_3x3_s2", np.uint8, False, True),
    ("c40_5x5", np.uint8, True, False),
    ("c24_dilated", np.uint8, False, False),
    ("c40_asym", np.int8, True, True),
    ("c16_3x3_s1", np.int8, False, False),
    ("c24_3x3_s2", np.int8, True, True),
]


def _attributes(name):
    _, kernel, strides, pads, dilations = CASES[name]
    top, left, bottom, right = pads
    return {"kernel_shape": list(kernel), "strides": list(strides),
            "pads": [top, left, bottom, right], "dilations": list(dilations)}


@pytest.mark.parametrize("name,x_dtype,per_channel,with_bias", ORT_CASES)
def test_qlinearconv_matches_onnxruntime(name, x_dtype, per_channel, with_bias):
    """QLinearConv: u8 x with s8 weights -> u8, or s8 x, s8 weights -> s8 (onnxruntime's
    type pairs)."""
    x_shape, kernel = CASES[name][:2]
    c = x_shape[1]
    x = random_bytes(x_dtype, x_shape)
    w = RNG.integers(-127, 128, (c, 1, *kernel)).astype(np.int8)
    count = c if per_channel else 1
    w_scale = RNG.uniform(0.002, 0.01, count).astype(np.float32)
    x_zp = np.array(120 if x_dtype is np.uint8 else -7, x_dtype)
    y_zp = np.array(100 if x_dtype is np.uint8 else 5, x_dtype)
    inits = {"xs": np.array(0.02, np.float32), "xz": x_zp, "w": w,
             "ws": w_scale if per_channel else w_scale[0],
             "wz": np.zeros(count, np.int8) if per_channel else np.array(0, np.int8),
             "ys": np.array(0.05, np.float32), "yz": y_zp}
    inputs = ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"]
    if with_bias:
        inits["b"] = RNG.integers(-3000, 3000, c).astype(np.int32)
        inputs.append("b")
    node = helper.make_node("QLinearConv", inputs, ["y"], group=c, **_attributes(name))
    got, want = _both(_model([node], x, inits, ONNX_TYPE[x_dtype]), x)
    _close_bytes(got, want)


@pytest.mark.parametrize("name", ["c24_3x3_s2", "c40_5x5", "c24_dilated"])
def test_convinteger_matches_onnxruntime(name):
    """ConvInteger (u8 x u8 -> i32): exact."""
    x_shape, kernel = CASES[name][:2]
    c = x_shape[1]
    x = random_bytes(np.uint8, x_shape)
    inits = {"w": random_bytes(np.uint8, (c, 1, *kernel)), "xz": np.array(7, np.uint8),
             "wz": np.array(130, np.uint8)}
    node = helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], group=c,
                            **_attributes(name))
    got, want = _both(_model([node], x, inits, TensorProto.INT32), x)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["c16_3x3_s1", "c40_5x5"])
def test_qdq_conv_f32_matches_onnxruntime(name):
    """DequantizeLinear (x, per-channel w) -> Conv with an f32 result: onnxc computes it as a
    qlinear_conv with an f32 output; onnxruntime in float."""
    x_shape, kernel = CASES[name][:2]
    c = x_shape[1]
    x = random_bytes(np.uint8, x_shape)
    inits = {"xs": np.array(0.02, np.float32), "xz": np.array(110, np.uint8),
             "w": RNG.integers(-127, 128, (c, 1, *kernel)).astype(np.int8),
             "ws": RNG.uniform(0.002, 0.01, c).astype(np.float32),
             "wz": np.zeros(c, np.int8)}
    nodes = [helper.make_node("DequantizeLinear", ["x", "xs", "xz"], ["xf"]),
             helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wf"], axis=0),
             helper.make_node("Conv", ["xf", "wf"], ["y"], group=c, **_attributes(name))]
    got, want = _both(_model(nodes, x, inits, TensorProto.FLOAT), x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
