"""com.microsoft ops that are standard ONNX ops under onnxruntime's name
(frontend/onnx_ops_microsoft_standard.py), each as a one-node com.microsoft model beside
onnxruntime 1.32's CPU kernel, and their refusals.

Tolerance: exact for data movement and integer ops; rtol/atol 1e-5 for float math (CDist is
summed in another order than onnxruntime's |a|^2 + |b|^2 - 2 a.b, GridSample interpolates in
f32).
"""

from __future__ import annotations

import numpy as np
import pytest

import onnxc
from onnxc.errors import ModelLoadError, UnsupportedOpError
from tests.unit.ops.test_microsoft_transformer import check, ms_model, rand


def test_expand_dims_inserts_an_axis_negative_from_the_end():
    rng = np.random.default_rng(0)
    x = rand(rng, 2, 3)
    for axis in (0, 2, -1, -3):
        check("ExpandDims", {"x": x}, initializers={"axis": np.array(axis, np.int32)},
              node_inputs=["x", "axis"], atol=0, rtol=0)


def test_expand_dims_refuses_an_axis_out_of_range():
    model = ms_model("ExpandDims", {"x": np.zeros((2, 3), np.float32)},
                     initializers={"axis": np.array(4, np.int32)}, node_inputs=["x", "axis"])
    with pytest.raises(ModelLoadError, match="axis 4 is out of range"):
        onnxc.compile(model)


def test_gather_nd_grid_sample_and_trilu_are_the_onnx_ops():
    rng = np.random.default_rng(1)
    data = rand(rng, 3, 4, 5)
    check("GatherND", {"data": data},
          initializers={"indices": np.array([[0, 1], [2, 3], [1, 0]], np.int64)},
          node_inputs=["data", "indices"], atol=0, rtol=0)
    x, grid = rand(rng, 1, 2, 5, 6), rng.uniform(-1.1, 1.1, (1, 3, 4, 2)).astype(np.float32)
    for mode in ("bilinear", "nearest"):
        check("GridSample", {"x": x, "grid": grid},
              attrs={"mode": mode, "padding_mode": "border", "align_corners": 1})
    m = rand(rng, 2, 4, 5)
    check("Trilu", {"m": m}, initializers={"k": np.array(1, np.int64)},
          node_inputs=["m", "k"], attrs={"upper": 0}, atol=0, rtol=0)


def test_pad_takes_pads_as_1_by_2r_and_every_mode():
    rng = np.random.default_rng(2)
    x = rand(rng, 2, 3, 4)
    pads = np.array([[0, 1, 2, 0, 2, 1]], np.int64)
    for mode in ("constant", "reflect", "edge"):
        check("Pad", {"x": x}, initializers={"pads": pads, "value": np.float32(1.5)},
              node_inputs=["x", "pads", "value"], attrs={"mode": mode}, atol=0, rtol=0)
    check("Pad", {"x": x}, initializers={"pads": pads.reshape(-1)},
          node_inputs=["x", "pads"], atol=0, rtol=0)


def test_range_with_and_without_delta():
    """(As ONNX Range, onnxc takes constant bounds: the length sizes the result.)"""
    model = ms_model("Range", {}, initializers={"s": np.array(2.0, np.float32),
                                                "l": np.array(9.0, np.float32),
                                                "d": np.array(1.5, np.float32)},
                     node_inputs=["s", "l", "d"])
    assert onnxc.compile(model).run(None, {})[0].tolist() == [2.0, 3.5, 5.0, 6.5, 8.0]
    model = ms_model("Range", {}, initializers={"s": np.array(3, np.int64),
                                                "l": np.array(8, np.int64)},
                     node_inputs=["s", "l"])
    assert onnxc.compile(model).run(None, {})[0].tolist() == [3, 4, 5, 6, 7]


def test_unique_in_order_of_occurrence_with_indices_and_counts():
    x = np.array([2.0, 1.0, 1.0, 3.0, 4.0, 3.0], np.float32)
    check("Unique", {"x": x}, outputs=("y", "idx", "counts"), atol=0, rtol=0)


def test_unique_refuses_more_than_one_dimension():
    model = ms_model("Unique", {"x": np.zeros((2, 3), np.float32)},
                     outputs=("y", "idx", "counts"))
    with pytest.raises(ModelLoadError, match="x must be 1-D"):
        onnxc.compile(model)


def test_transpose_matmul_is_fused_matmul():
    rng = np.random.default_rng(3)
    a, b = rand(rng, 2, 5, 3), rand(rng, 2, 4, 5)
    check("TransposeMatMul", {"a": a, "b": b}, attrs={"transA": 1, "transB": 1, "alpha": 0.5})


def test_nhwc_max_pool_of_8_bit_data():
    rng = np.random.default_rng(4)
    for dtype in (np.uint8, np.int8):
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, (1, 7, 6, 3), dtype=dtype)
        check("NhwcMaxPool", {"x": x}, attrs={"kernel_shape": [3, 2], "strides": [2, 1],
                                             "pads": [1, 0, 1, 1]}, atol=0, rtol=0)


def test_qlinear_conv_channels_first_and_last():
    rng = np.random.default_rng(5)
    w = rng.integers(-20, 20, (4, 3, 3, 3), dtype=np.int8)
    params = {"xs": np.float32(0.05), "xz": np.uint8(120), "w": w, "ws": np.float32(0.02),
              "wz": np.int8(0), "ys": np.float32(0.1), "yz": np.uint8(128),
              "bias": rng.integers(-50, 50, 4).astype(np.int32)}
    order = ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "bias"]
    for channels_last, shape in ((0, (1, 3, 6, 7)), (1, (1, 6, 7, 3))):
        x = rng.integers(0, 255, shape, dtype=np.uint8)
        check("QLinearConv", {"x": x}, initializers=params, node_inputs=order,
              attrs={"channels_last": channels_last, "pads": [1, 1, 1, 1]}, atol=0, rtol=0)


def test_quantize_and_dequantize_linear_per_axis():
    rng = np.random.default_rng(6)
    x = rand(rng, 2, 3, 4)
    scale = np.array([0.1, 0.02, 0.05], np.float32)
    zero = np.array([3, -2, 0], np.int8)
    check("QuantizeLinear", {"x": x}, initializers={"s": scale, "z": zero},
          node_inputs=["x", "s", "z"], attrs={"axis": 1}, atol=0, rtol=0)
    q = rng.integers(-128, 127, (2, 3, 4), dtype=np.int8)
    check("DequantizeLinear", {"q": q}, initializers={"s": scale, "z": zero},
          node_inputs=["q", "s", "z"], attrs={"axis": 1}, atol=0, rtol=0)


def test_conv_transpose_with_constant_dynamic_pads():
    rng = np.random.default_rng(7)
    x, w, b = rand(rng, 1, 2, 5, 5), rand(rng, 2, 3, 3, 3), rand(rng, 3)
    check("ConvTransposeWithDynamicPads", {"x": x},
          initializers={"w": w, "pads": np.array([1, 0, 1, 2], np.int64), "b": b},
          node_inputs=["x", "w", "pads", "b"], attrs={"strides": [2, 2]})


def test_matmul_integer16_is_exact_in_int32():
    rng = np.random.default_rng(8)
    a = rng.integers(-3000, 3000, (3, 5), dtype=np.int16)
    b = rng.integers(-3000, 3000, (5, 4), dtype=np.int16)
    check("MatMulInteger16", {"a": a, "b": b}, atol=0, rtol=0)


def test_matmul_integer16_refuses_other_types():
    model = ms_model("MatMulInteger16", {"a": np.zeros((2, 2), np.int8),
                                         "b": np.zeros((2, 2), np.int8)})
    with pytest.raises(UnsupportedOpError, match="int16 or uint16 only"):
        onnxc.compile(model)


@pytest.mark.parametrize("metric", ["sqeuclidean", "euclidean"])
def test_cdist(metric):
    rng = np.random.default_rng(9)
    check("CDist", {"a": rand(rng, 5, 8), "b": rand(rng, 7, 8)}, attrs={"metric": metric})


def test_cdist_refuses_other_metrics():
    model = ms_model("CDist", {"a": np.zeros((2, 2), np.float32),
                               "b": np.zeros((2, 2), np.float32)}, attrs={"metric": "cosine"})
    with pytest.raises(UnsupportedOpError, match="metric 'cosine'"):
        onnxc.compile(model)


@pytest.mark.parametrize("dim, size, step", [(1, 3, 2), (-1, 2, 1), (0, 4, 3)])
def test_unfold_tensor(dim, size, step):
    rng = np.random.default_rng(10)
    check("UnfoldTensor", {"x": rand(rng, 6, 7, 4)},
          attrs={"dim": dim, "size": size, "step": step}, atol=0, rtol=0)


def test_scaled_silu_with_the_alpha_attribute_and_the_scale_input():
    rng = np.random.default_rng(11)
    x = rand(rng, 3, 8)
    check("ScaledSiLU", {"x": x}, attrs={"alpha": 1.7})
    check("ScaledSiLU", {"x": x}, initializers={"s": np.array(0.6, np.float32)},
          node_inputs=["x", "s"], attrs={"alpha": 1.7})


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("crop", [(3, 4), (1, 5)])
def test_crop_and_resize(mode, crop):
    """Boxes inside, partly outside (extrapolation_value) and flipped (y2 < y1), from two
    images. Nearest samples avoid exact .5 positions (TensorFlow rounds them away from
    zero, GridSample to even)."""
    rng = np.random.default_rng(12)
    x = rand(rng, 2, 3, 7, 9)
    rois = np.array([[0.1, 0.2, 0.83, 0.91], [-0.2, 0.05, 0.6, 1.3], [0.9, 0.7, 0.15, 0.1]],
                    np.float32)
    check("CropAndResize", {"x": x},
          initializers={"rois": rois, "idx": np.array([1, 0, 1], np.int32),
                        "crop": np.array(crop, np.int32)},
          node_inputs=["x", "rois", "idx", "crop"],
          attrs={"mode": mode, "extrapolation_value": -2.5})
