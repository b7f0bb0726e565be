"""Comparisons, logic, bitwise, Where, Mod, IsNaN/IsInf, unary float math and widened Cast
element types: one-node models compiled natively by onnxc.compile against
onnx.reference.ReferenceEvaluator.

Exact ops (comparisons, logic, integer math, rounding, casts) must match exactly;
transcendental ones use rtol 1e-5 / atol 1e-6 (LLVM intrinsics / libm vs numpy's float32,
both within an ulp or two).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator

import onnxc
from onnxc.errors import UnsupportedOpError
from tests.single_op import graph_model, numbered, run_both, single_op_model

RNG = np.random.default_rng(7)


def check(op: str, inputs: list[np.ndarray], attrs: dict | None = None, opset: int = 21,
          rtol: float = 0.0, atol: float = 0.0, consts=()):
    model = single_op_model(op, numbered(inputs), attrs=attrs,
                            initializers=numbered(consts, "c"), opset=opset, infer_shapes="strict")
    feeds = {f"x{i}": a for i, a in enumerate(inputs)}
    (expected,) = ReferenceEvaluator(model).run(None, feeds)
    (got,) = onnxc.compile(model).run(None, feeds)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    if rtol or atol:
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(got, expected)


def f32(*shape, scale=3.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def ints(dtype, *shape, low=-20, high=20):
    return RNG.integers(low, high, shape).astype(dtype)


def bools(*shape):
    return RNG.random(shape) < 0.5


# --------------------------------------------------------------------------- comparisons


@pytest.mark.parametrize("op", ["Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"])
def test_compare_float_broadcast(op):
    a = f32(2, 3, 4)
    b = a[:, :1, :].copy()  # some equal elements
    b[0, 0, :2] = 0.5
    check(op, [a, b])


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.int8])
def test_compare_integers(dtype):
    low = 0 if np.dtype(dtype).kind == "u" else -5
    a, b = ints(dtype, 3, 5, low=low, high=250 if low == 0 else 5), ints(dtype, 5, low=low)
    check("Less", [a, b])
    check("GreaterOrEqual", [a, b])


def test_compare_nan_is_false_and_bool_equal():
    a = np.array([np.nan, 1.0, 2.0, -np.inf], np.float32)
    b = np.array([np.nan, np.nan, 2.0, -np.inf], np.float32)
    check("Equal", [a, b])
    check("Less", [a, b])
    check("Equal", [bools(4, 3), bools(3)])


def test_legacy_broadcast_opset1():
    """Opset 1 aligns B at `axis` (onnx.reference does not implement it: numpy is the
    reference)."""
    a, b = f32(2, 3, 4), f32(3)
    model = single_op_model("Greater", numbered([a, b]), attrs={"broadcast": 1, "axis": 1},
                            opset=1, infer_shapes="strict")
    (got,) = onnxc.compile(model).run(None, {"x0": a, "x1": b})
    np.testing.assert_array_equal(got, a > b[None, :, None])


# --------------------------------------------------------------------------- logic, bitwise


@pytest.mark.parametrize("op", ["And", "Or", "Xor"])
def test_logic(op):
    check(op, [bools(3, 4, 5), bools(4, 1)])


def test_not():
    check("Not", [bools(3, 7)])


@pytest.mark.parametrize("op", ["BitwiseAnd", "BitwiseOr", "BitwiseXor"])
@pytest.mark.parametrize("dtype", [np.int32, np.uint8])
def test_bitwise(op, dtype):
    check(op, [ints(dtype, 3, 4, low=0, high=200), ints(dtype, 4, low=0, high=200)])


@pytest.mark.parametrize("dtype", [np.int16, np.uint64, np.int8])
def test_bitwise_not(dtype):
    low = 0 if np.dtype(dtype).kind == "u" else -100
    check("BitwiseNot", [ints(dtype, 3, 4, low=low, high=100)])


@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.uint64, np.int8, np.int32])
def test_bit_shift(direction, dtype):
    """Counts include 0, the width and more (everything shifted out), and negative ones."""
    signed = np.dtype(dtype).kind == "i"
    x = ints(dtype, 4, 6, low=-128 if signed else 0, high=128 if signed else 255)
    width = np.dtype(dtype).itemsize * 8
    n = np.array([0, 1, 3, width - 1, width, width + 5], dtype)
    if signed:
        n[-1] = -2
    check("BitShift", [x, n], {"direction": direction})


# --------------------------------------------------------------------------- Mod, Where


@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.int8])
def test_mod_integers(fmod, dtype):
    a = ints(dtype, 3, 5, low=-50, high=50)
    b = ints(dtype, 5, low=1, high=9) * np.where(RNG.random(5) < 0.5, -1, 1).astype(dtype)
    check("Mod", [a, b], {"fmod": fmod})


def test_mod_unsigned():
    check("Mod", [ints(np.uint32, 6, low=0, high=100), ints(np.uint32, 6, low=1, high=9)])


@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mod_float(fmod, dtype):
    """Mixed signs, zero remainders (signed zero), infinite divisors and NaN."""
    a = np.concatenate([f32(12), [6.0, -6.0, 5.0, -5.0, np.inf, np.nan, 3.0, -3.0]]).astype(dtype)
    b = np.concatenate([f32(12) + 0.5, [3.0, 3.0, -2.5, -2.5, 2.0, 2.0, np.inf, np.inf]]
                       ).astype(dtype)
    check("Mod", [a, b], {"fmod": fmod}, rtol=1e-6, atol=1e-6)
    model = single_op_model("Mod", numbered([a, b]), attrs={"fmod": fmod}, opset=13,
                            infer_shapes="strict")
    got = onnxc.compile(model).run(
        None, {"x0": a, "x1": b})[0]
    expected = np.fmod(a, b) if fmod else np.mod(a, b)
    np.testing.assert_array_equal(np.signbit(got[12:15]), np.signbit(expected[12:15]))


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
def test_where_broadcasts_three_operands(dtype):
    x = f32(3, 1, 4).astype(dtype)
    y = f32(2, 1).astype(dtype)
    check("Where", [bools(2, 4), x, y])


# --------------------------------------------------------------------------- float tests


def _specials():
    x = f32(4, 5)
    x.reshape(-1)[[0, 3, 7, 11]] = [np.nan, np.inf, -np.inf, -0.0]
    return x


def test_is_nan():
    check("IsNaN", [_specials()])


@pytest.mark.parametrize("pos,neg", [(1, 1), (1, 0), (0, 1), (0, 0)])
def test_is_inf(pos, neg):
    check("IsInf", [_specials()], {"detect_positive": pos, "detect_negative": neg})


# --------------------------------------------------------------------------- unary math

ROUNDING = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49, -0.51, 3.7, -3.2, 0.0],
                    np.float32)


@pytest.mark.parametrize("op", ["Ceil", "Floor", "Round"])
def test_rounding_half_to_even(op):
    check(op, [ROUNDING])
    check(op, [f32(3, 4)])


def test_sign():
    check("Sign", [np.array([-2.0, 0.0, 3.5, np.nan, -0.0], np.float32)])
    check("Sign", [ints(np.int32, 9, low=-3, high=3)])


UNIT = (RNG.random((3, 8)) * 1.8 - 0.9).astype(np.float32)  # inside (-1, 1)


@pytest.mark.parametrize("op,x", [
    ("Sin", f32(3, 8)), ("Cos", f32(3, 8)), ("Tan", f32(3, 8, scale=0.6)),
    ("Asin", UNIT), ("Acos", UNIT), ("Atan", f32(3, 8)),
    ("Sinh", f32(3, 8)), ("Cosh", f32(3, 8)), ("Asinh", f32(3, 8)),
    ("Acosh", np.abs(f32(3, 8)) + 1.0), ("Atanh", UNIT),
    ("Softplus", f32(3, 8, scale=20.0)), ("Mish", f32(3, 8, scale=5.0)),
])
def test_transcendental(op, x):
    check(op, [x], rtol=1e-5, atol=1e-6)


def test_transcendental_f64():
    check("Sin", [f32(2, 5).astype(np.float64)], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("alpha", [None, 0.5, -1.0])
def test_thresholded_relu(alpha):
    attrs = {} if alpha is None else {"alpha": alpha}
    check("ThresholdedRelu", [f32(4, 5)], attrs)


@pytest.mark.parametrize("attrs", [{}, {"bias": 1.5, "lambd": 1.0}])
def test_shrink(attrs):
    check("Shrink", [f32(4, 5)], attrs)


def test_shrink_integers():
    check("Shrink", [ints(np.int8, 10, low=-6, high=6)], {"bias": 2.0, "lambd": 3.0})
    check("Shrink", [ints(np.uint8, 10, low=0, high=250)], {"bias": 2.0, "lambd": 100.0})


def test_trig_of_integers_is_unsupported():
    with pytest.raises(UnsupportedOpError, match="Sin"):
        onnxc.compile(single_op_model("Sin", numbered([ints(np.int32, 3)]), opset=13,
                                      infer_shapes="strict"))


# --------------------------------------------------------------------------- Cast widening

CAST_TYPES = [np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8,
              np.uint16, np.uint32, np.uint64, np.bool_]


@pytest.mark.parametrize("src", CAST_TYPES, ids=lambda t: np.dtype(t).name)
def test_cast_from(src):
    """One model per source type casting to every type (each output checked)."""
    x = (RNG.random((3, 5)) * 100).astype(src)
    names = [f"y{i}" for i in range(len(CAST_TYPES))]
    nodes = [helper.make_node("Cast", ["x"], [n], to=helper.np_dtype_to_tensor_dtype(
        np.dtype(t))) for n, t in zip(names, CAST_TYPES)]
    model = graph_model(nodes, {"x": x}, names, opset=21, infer_shapes="strict")
    expected = ReferenceEvaluator(model).run(None, {"x": x})
    got = onnxc.compile(model).run(None, {"x": x})
    for e, g, t in zip(expected, got, CAST_TYPES):
        assert g.dtype == e.dtype, t
        np.testing.assert_array_equal(g, e, err_msg=f"{x.dtype} -> {np.dtype(t)}")


def test_cast_f64_to_f16_rounds_once():
    """Halfway cases and values just off them: a double rounding through f32 would get
    some of these wrong; numpy rounds f64 -> f16 directly."""
    a = np.sort(RNG.standard_normal(200).astype(np.float16) * 50)
    b = np.nextafter(a, np.float16(np.inf))
    mid = (a.astype(np.float64) + b.astype(np.float64)) / 2
    d = np.concatenate([mid, mid * (1 + 2.0**-40), mid * (1 - 2.0**-40), [1e6, -1e6, 1e-9, np.nan]])
    check("Cast", [d], {"to": onnx.TensorProto.FLOAT16})


def test_float16_storage_ops():
    x = f32(4, 6).astype(np.float16)
    x.reshape(-1)[:3] = [np.nan, np.inf, -np.inf]
    y = (f32(6) + 5).astype(np.float16)
    check("IsNaN", [x])
    check("IsInf", [x])
    check("Less", [x, y])
    check("Mod", [x, y], {"fmod": 1})
    check("Where", [bools(4, 6), x, y])


@pytest.mark.parametrize("op,n", [("Add", 2), ("Div", 2), ("Max", 3), ("Relu", 1),
                                  ("Sigmoid", 1), ("Celu", 1), ("Sin", 1), ("Round", 1)])
def test_float16_elementwise(op, n):
    """Half arithmetic: LLVM computes each op in f32 and rounds once to half, as numpy's
    float16 ufuncs do (exp-based ones may differ in the last half ulp)."""
    xs = [(f32(3, 40, scale=1.0) + (0.5 if i else 0.0)).astype(np.float16) for i in range(n)]
    check(op, xs, opset=13, rtol=2e-3, atol=1e-3)


def test_float16_matmul_computes_in_f32():
    """Ops without a half kernel run in f32 between casts (tests/unit/test_half_precision.py)."""
    x = f32(3, 3, scale=1.0).astype(np.float16)
    check("MatMul", [x, x], opset=14, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("op", ["Div", "Max", "Min", "Sub"])
@pytest.mark.parametrize("dtype", [np.uint16, np.uint32, np.uint64])
def test_unsigned_arithmetic_uses_unsigned_forms(op, dtype):
    """Values above the signed maximum: a signed divide / max / min would get them wrong."""
    top = np.iinfo(dtype).max
    a = RNG.integers(top // 2, top, 12, dtype=dtype, endpoint=True)
    b = RNG.integers(1, top, 12, dtype=dtype, endpoint=True)
    check(op, [a, b], opset=13)


# --------------------------------------------------------------------------- Erf / Gelu
# (from test_extended_ops.py: imported, -O0, against onnxruntime at rtol 1e-3 / atol 1e-4)

_X4 = {"x": (np.float32, (2, 3, 4, 5))}


def _x4_feeds() -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(np.float32)}


ERF_GELU = [  # name, op, attributes, opset
    ("erf", "Erf", {}, 13),
    ("gelu_exact", "Gelu", {}, 20),
    ("gelu_tanh", "Gelu", {"approximate": "tanh"}, 20),
]


@pytest.mark.parametrize("name, op, attrs, opset", ERF_GELU, ids=[c[0] for c in ERF_GELU])
def test_erf_and_gelu_match_onnxruntime(name, op, attrs, opset):
    model = single_op_model(op, _X4, {"y": (np.float32, None)}, attrs=attrs, opset=opset,
                            ir_version=8)
    run_both(model, _x4_feeds(), rtol=1e-3, atol=1e-4, opt_level=0)
