"""Cast between f32/f16/f64 and the storage-only formats (bfloat16, the four 8-bit floats,
FLOAT4E2M1, INT4/UINT4/INT2/UINT2), compiled natively, against onnx.reference (ml_dtypes
conversions; ONNX's saturate=1 default clamps 8-bit float overflow to the largest finite
value). Results must match bit for bit (NaN codes included).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper
from onnx.reference import ReferenceEvaluator

import onnxc
from onnxc.errors import UnsupportedOpError
from tests.single_op import single_op_model

RNG = np.random.default_rng(3)

F8 = [TP.FLOAT8E4M3FN, TP.FLOAT8E4M3FNUZ, TP.FLOAT8E5M2, TP.FLOAT8E5M2FNUZ]
FLOAT_FORMATS = [TP.BFLOAT16, *F8, TP.FLOAT4E2M1]
NARROW_INTS = [TP.INT4, TP.UINT4, TP.INT2, TP.UINT2]


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def check_cast(x: np.ndarray, to: int, **attrs):
    model = single_op_model("Cast", {"x": x}, {"y": (to, x.shape)}, attrs={"to": to, **attrs},
                            opset=21)
    (expected,) = ReferenceEvaluator(model).run(None, {"x": x})
    (got,) = onnxc.compile(model).run(None, {"x": x})
    assert got.dtype == expected.dtype
    if got.dtype.kind == "f" and got.dtype.isbuiltin == 1:  # f16/f32/f64: NaN payloads vary
        np.testing.assert_array_equal(got, expected)
    else:
        np.testing.assert_array_equal(_bits(got), _bits(expected))


def _awkward_floats() -> np.ndarray:
    """Magnitudes from 1e-9 to 1e6, halfway cases of 8-bit formats, specials."""
    x = RNG.standard_normal(600) * 10.0 ** RNG.integers(-9, 7, 600)
    specials = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-7, -1e-7, 448, 464, 460, 240, 248,
                57344, 61440, 6.0, 7.0, 0.25, 0.75, 1.25, -3.5]
    return np.concatenate([x, specials]).astype(np.float32)


@pytest.mark.parametrize("to", FLOAT_FORMATS, ids=TP.DataType.Name)
@pytest.mark.parametrize("src", [np.float32, np.float16, np.float64])
def test_float_to_format(to, src):
    check_cast(_awkward_floats().astype(src), to)


@pytest.mark.parametrize("to", F8, ids=TP.DataType.Name)
def test_float8_without_saturation(to):
    check_cast(_awkward_floats(), to, saturate=0)


@pytest.mark.parametrize("onnx_type", FLOAT_FORMATS, ids=TP.DataType.Name)
def test_format_to_float(onnx_type):
    """Every code of the 8- and 4-bit formats (bfloat16: random codes)."""
    dtype = helper.tensor_dtype_to_np_dtype(onnx_type)
    if onnx_type == TP.BFLOAT16:
        x = RNG.integers(0, 1 << 16, 3000).astype(np.uint16).view(dtype)
    else:
        x = np.arange(16 if onnx_type == TP.FLOAT4E2M1 else 256, dtype=np.uint8).view(dtype)
    for to in (TP.FLOAT, TP.FLOAT16, TP.DOUBLE):
        check_cast(x, to)


@pytest.mark.parametrize("to", NARROW_INTS, ids=TP.DataType.Name)
def test_narrow_integers(to):
    """Floats in the type's range truncate toward zero; out of its range ONNX leaves a float's
    cast undefined (ml_dtypes 0.7 gives 0 where earlier releases wrapped), so the wrap is
    checked from int32, where ONNX defines it: the higher bits are discarded."""
    info = ml_dtypes.iinfo(helper.tensor_dtype_to_np_dtype(to))
    x = np.arange(info.min, info.max + 0.5, 0.25).astype(np.float32)
    check_cast(x, to)
    check_cast(np.arange(-20, 21, dtype=np.int32), to)
    narrow = x.astype(helper.tensor_dtype_to_np_dtype(to))
    check_cast(narrow, TP.FLOAT)
    check_cast(narrow, TP.INT8 if to in (TP.INT4, TP.INT2) else TP.UINT8)


@pytest.mark.parametrize("to", NARROW_INTS, ids=TP.DataType.Name)
def test_folded_narrow_cast_matches_the_kernel(to):
    """Out of its range a float's cast to a narrow integer is undefined in ONNX, but a model
    must not change its answer with whether Cast was folded: both wrap, whatever ml_dtypes
    does (0.7 gives 0)."""
    x = np.arange(-9, 16).astype(np.float32)
    model = single_op_model("Cast", {"x": x}, {"y": (to, x.shape)}, attrs={"to": to}, opset=21)
    native = onnxc.compile(model).run(None, {"x": x})[0]
    model = single_op_model("Cast", {}, {"y": (to, x.shape)}, attrs={"to": to},
                            initializers={"c": x}, opset=21)
    (folded,) = onnxc.compile(model).run(None, {})
    np.testing.assert_array_equal(_bits(folded), _bits(native))


def test_castlike_to_float8():
    x = _awkward_floats()
    like = np.zeros(2, ml_dtypes.float8_e5m2)
    feeds = {"x": x, "like": like}
    model = single_op_model("CastLike", feeds, {"y": (TP.FLOAT8E5M2, x.shape)}, opset=21)
    (expected,) = ReferenceEvaluator(model).run(None, feeds)
    (got,) = onnxc.compile(model).run(None, feeds)
    np.testing.assert_array_equal(_bits(got), _bits(expected))


def test_storage_formats_only_go_through_casts():
    """(bf16 is not one any more: it computes in f32, tests/unit/test_half_precision.py.)"""
    spec = (TP.FLOAT8E5M2, [3])
    model = single_op_model("Relu", {"x": spec}, {"y": spec}, opset=21)
    with pytest.raises(UnsupportedOpError, match="Relu of FLOAT8E5M2"):
        onnxc.compile(model)


@pytest.mark.parametrize("saturate", [0, 1])
@pytest.mark.parametrize("round_mode", ["up", "down", "nearest"])
def test_float8e8m0(round_mode, saturate):
    """Exponent-only E8M0: the f32 exponent rounded by the mantissa (f32 subnormals, inf,
    NaN and the largest exponent included), and back."""
    x = np.concatenate([_awkward_floats(), [3.0, 1.5, 1.25, 1.75, 1e-40, 3.4e38, -6.0]]
                       ).astype(np.float32)
    model = single_op_model("Cast", {"x": x}, {"y": (TP.FLOAT8E8M0, x.shape)}, opset=24,
                            attrs={"to": TP.FLOAT8E8M0, "saturate": saturate,
                                   "round_mode": round_mode})
    (expected,) = ReferenceEvaluator(model).run(None, {"x": x})
    (got,) = onnxc.compile(model).run(None, {"x": x})
    np.testing.assert_array_equal(_bits(got), _bits(expected))


def test_float8e8m0_to_float():
    x = np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e8m0fnu)
    for to in (TP.FLOAT, TP.FLOAT16):
        check_cast(x, to)


def test_cast_of_a_constant_folds_with_saturation():
    """A Cast of an initializer is folded at import: it must saturate like the kernel."""
    w = np.array([1e6, -1e6, np.nan, 0.3, 460], np.float32)
    model = single_op_model("Cast", {}, {"y": (TP.FLOAT8E4M3FN, [5])},
                            attrs={"to": TP.FLOAT8E4M3FN}, initializers={"w": w}, opset=21)
    (expected,) = ReferenceEvaluator(model).run(None, {})
    (got,) = onnxc.compile(model).run(None, {})
    np.testing.assert_array_equal(_bits(got), _bits(expected))


@pytest.mark.parametrize("x,to", [
    (np.array([1.0, -2.5, 3.75, np.nan], np.float32), TP.INT32),
    (np.array([1, -1, 2**31 - 1], np.int32), TP.FLOAT),
    (np.array([1.0, -2.5], np.float64), TP.UINT64),
    (np.array([1, 32768, 65535], np.uint16), TP.FLOAT16),
    (np.array([-1, -128, 127, 0], np.int8), TP.FLOAT8E5M2),
    (np.array([True, False, True], np.bool_), TP.UINT8),
    (np.array([0, 1, 1], np.uint8), TP.BOOL),
], ids=lambda v: TP.DataType.Name(v) if isinstance(v, int) else str(v.dtype))
def test_bit_cast(x, to):
    model = single_op_model("BitCast", {"x": x}, {"y": (to, x.shape)}, attrs={"to": to},
                            opset=26)
    (got,) = onnxc.compile(model).run(None, {"x": x})
    expected = x.view(helper.tensor_dtype_to_np_dtype(to))
    np.testing.assert_array_equal(_bits(got), _bits(expected))


def test_bit_cast_needs_equal_widths():
    model = single_op_model("BitCast", {"x": (TP.FLOAT, [2])}, {"y": (TP.INT64, [2])},
                            attrs={"to": TP.INT64}, opset=26)
    with pytest.raises(Exception, match="bit width"):
        onnxc.compile(model)
