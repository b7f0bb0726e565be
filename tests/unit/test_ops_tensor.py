"""Resize/Upsample, ConvTranspose, Gather/Scatter Elements and ND, Tile, DepthToSpace,
SpaceToDepth, ReverseSequence, Compress, NonZero, CenterCropPad, Instance/Group/MeanVariance
normalization and LpPool: one-node models compiled natively by onnxc.compile against
onnx.reference.ReferenceEvaluator.

Each case also runs the numpy evaluator on the imported graph. Data movement must match
exactly; interpolation, convolutions and normalizations use
rtol 1e-4 / atol 1e-5 (float32 accumulation in another order than the reference's float64).
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator

import onnxc
from onnxc.frontend.onnx_importer import import_onnx
from onnxc.passes.evaluator import evaluate
from tests.single_op import graph_model, numbered, single_op_model

RNG = np.random.default_rng(11)


def _f(*shape) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _model(op: str, inputs, consts, attrs: dict, opset: int):
    """Runtime inputs x0.., then constant inputs c0.. (initializers; None = omitted input),
    output y; shapes inferred."""
    return single_op_model(op, numbered(inputs), attrs=attrs, initializers=numbered(consts, "c"),
                           opset=opset, infer_shapes=True)


def check(op: str, inputs, consts=(), attrs=None, opset: int = 21, tol: bool = True,
          reference: str = "onnx"):
    model = _model(op, inputs, consts, attrs or {}, opset)
    feeds = {f"x{i}": a for i, a in enumerate(inputs)}
    if reference == "onnxruntime":
        import onnxruntime

        model.ir_version = min(model.ir_version, 10)
        session = onnxruntime.InferenceSession(model.SerializeToString(),
                                               providers=["CPUExecutionProvider"])
        (expected,) = session.run(None, feeds)
    else:
        (expected,) = ReferenceEvaluator(model).run(None, feeds)
    (got,) = onnxc.compile(model).run(None, feeds)
    # the numpy evaluator (constant folding, --verify-numerics) on the imported graph too
    (evaluated,) = evaluate(import_onnx(model), feeds)
    for result in (got, evaluated):
        assert result.shape == expected.shape and result.dtype == expected.dtype
        if tol:
            np.testing.assert_allclose(result, expected, rtol=1e-4, atol=1e-5)
        else:
            np.testing.assert_array_equal(result, expected)


F32 = np.float32
EMPTY = np.array([], F32)

RESIZE = [
    ("nearest_up_scales", {"mode": "nearest"}, [EMPTY, np.array([1, 1, 2, 3], F32)]),
    ("nearest_down_ceil_align", {"mode": "nearest", "nearest_mode": "ceil",
                                 "coordinate_transformation_mode": "align_corners"},
     [EMPTY, np.array([1, 1, 0.6, 0.5], F32)]),
    ("nearest_sizes_floor_asym", {"mode": "nearest", "nearest_mode": "floor",
                                  "coordinate_transformation_mode": "asymmetric"},
     [None, None, np.array([2, 3, 7, 9], np.int64)]),
    ("nearest_prefer_ceil", {"mode": "nearest", "nearest_mode": "round_prefer_ceil"},
     [None, None, np.array([2, 3, 9, 10], np.int64)]),
    ("linear_up", {"mode": "linear"}, [EMPTY, np.array([1, 1, 2, 1.5], F32)]),
    ("linear_down_pytorch", {"mode": "linear",
                             "coordinate_transformation_mode": "pytorch_half_pixel"},
     [None, None, np.array([2, 3, 3, 1], np.int64)]),
    ("linear_align_corners", {"mode": "linear",
                              "coordinate_transformation_mode": "align_corners"},
     [EMPTY, np.array([1, 1, 1.7, 2.3], F32)]),
    ("linear_antialias_down", {"mode": "linear", "antialias": 1},
     [EMPTY, np.array([1, 1, 0.6, 0.4], F32)]),
    ("cubic_up", {"mode": "cubic"}, [EMPTY, np.array([1, 1, 1.5, 2], F32)]),
    ("cubic_exclude_outside", {"mode": "cubic", "exclude_outside": 1, "cubic_coeff_a": -0.5},
     [EMPTY, np.array([1, 1, 0.8, 0.6], F32)]),
    ("half_pixel_symmetric", {"mode": "linear",
                              "coordinate_transformation_mode": "half_pixel_symmetric"},
     [EMPTY, np.array([1, 1, 1.3, 0.7], F32)]),
    ("tf_crop_and_resize", {"mode": "linear", "extrapolation_value": 3.0,
                            "coordinate_transformation_mode": "tf_crop_and_resize"},
     [np.array([0, 0, -0.2, 0.4, 1, 1, 0.6, 1.3], F32), None, np.array([2, 3, 3, 3], np.int64)]),
    ("axes_not_larger", {"mode": "linear", "axes": [3, 2],
                         "keep_aspect_ratio_policy": "not_larger"},
     [None, None, np.array([8, 8], np.int64)]),
]


@pytest.mark.parametrize("name,attrs,consts", RESIZE, ids=[r[0] for r in RESIZE])
def test_resize(name, attrs, consts):
    check("Resize", [_f(2, 3, 5, 6)], consts, attrs, opset=19)


def test_upsample_opset9_nearest_and_resize_opset10_linear():
    check("Upsample", [_f(1, 2, 3, 4)], [np.array([1, 1, 2, 3], F32)], {"mode": "nearest"},
          opset=9, tol=False)
    model = _model("Resize", [_f(1, 2, 3, 4)], [np.array([1, 1, 2, 2], F32)],
                   {"mode": "linear"}, 10)
    x = _f(1, 2, 3, 4)
    (got,) = onnxc.compile(model).run(None, {"x0": x})
    # Resize-10 linear is asymmetric: output 2i reads input i exactly
    np.testing.assert_allclose(got[..., ::2, ::2], x, rtol=1e-6)


CONV_T = [
    ("basic", (1, 2, 3, 3), (2, 3, 3, 3), {}),
    ("strides_pads", (2, 2, 4, 3), (2, 2, 3, 2), {"strides": [2, 3], "pads": [1, 0, 1, 1]}),
    ("output_padding_dil", (1, 2, 3, 4), (2, 1, 2, 3),
     {"strides": [2, 2], "output_padding": [1, 1], "dilations": [2, 1]}),
    ("groups", (1, 4, 3, 3), (4, 3, 3, 3), {"group": 2, "strides": [2, 1]}),
    ("output_shape", (1, 1, 3, 3), (1, 2, 3, 3), {"strides": [3, 2], "output_shape": [10, 8]}),
    ("same_upper", (1, 1, 3, 3), (1, 2, 3, 3), {"strides": [2, 2], "auto_pad": "SAME_UPPER"}),
    ("conv1d", (1, 2, 5), (2, 3, 3), {"strides": [2]}),
    ("groups_3d", (1, 4, 2, 3, 3), (4, 1, 2, 2, 2), {"group": 2, "strides": [1, 2, 1]}),
]


@pytest.mark.parametrize("name,x,w,attrs", CONV_T, ids=[c[0] for c in CONV_T])
def test_conv_transpose(name, x, w, attrs):
    m = w[1] * attrs.get("group", 1)
    # onnx.reference's grouped ConvTranspose slices the weight by output channels (wrong);
    # grouped layers take the direct scatter kernel, the others GEMM + Col2Im
    check("ConvTranspose", [_f(*x)], [_f(*w), _f(m)], attrs, opset=17,
          reference="onnxruntime" if "group" in attrs else "onnx")


def test_conv_transpose_no_bias_3d_and_runtime_weight():
    check("ConvTranspose", [_f(1, 2, 2, 3, 3)], [_f(2, 2, 2, 2, 2)], {"strides": [1, 2, 1]})
    check("ConvTranspose", [_f(2, 3, 4, 4), _f(3, 2, 3, 3)], [_f(2)],
          {"strides": [2, 2], "pads": [1, 0, 0, 1]})


def test_gather_scatter_elements():
    idx = np.array([[1, -1, 0], [2, 0, 1]], np.int64)
    check("GatherElements", [_f(3, 3), idx], attrs={"axis": 0}, tol=False)
    check("GatherElements", [_f(2, 4), idx[:, :2].astype(np.int32)], attrs={"axis": 1}, tol=False)
    for reduction in ("none", "add", "mul", "max", "min"):
        upd = _f(2, 3)
        idx2 = np.array([[1, 0, 2], [0, 2, 1]], np.int64)
        check("ScatterElements", [_f(3, 3), idx2, upd], attrs={"axis": 1, "reduction": reduction},
              opset=18)
    # onnx.reference has no Scatter (opset 9-10): it is ScatterElements without reduction
    data, idx3, upd = _f(3, 3), np.array([[1, 0, 2]], np.int64), _f(1, 3)
    model = _model("Scatter", [data, idx3, upd], [], {"axis": 0}, 10)
    (got,) = onnxc.compile(model).run(None, {"x0": data, "x1": idx3, "x2": upd})
    expected = data.copy()
    expected[idx3[0], [0, 1, 2]] = upd[0]
    np.testing.assert_array_equal(got, expected)


def test_gather_scatter_nd():
    data = _f(2, 3, 4)
    check("GatherND", [data, np.array([[0, 1], [1, -1]], np.int64)], tol=False)
    check("GatherND", [data, np.array([[[2]], [[0]]], np.int64)], attrs={"batch_dims": 1},
          tol=False)
    for reduction in ("none", "add", "mul", "max", "min"):
        check("ScatterND", [data, np.array([[1, 2], [0, 0]], np.int64), _f(2, 4)],
              attrs={"reduction": reduction}, opset=18)


def test_static_movement():
    check("Tile", [_f(2, 3, 2)], [np.array([2, 1, 3], np.int64)], tol=False)
    for mode in ("DCR", "CRD"):
        check("DepthToSpace", [_f(1, 8, 2, 3)], attrs={"blocksize": 2, "mode": mode}, tol=False)
    check("SpaceToDepth", [_f(1, 2, 4, 6)], attrs={"blocksize": 2}, tol=False)
    check("ReverseSequence", [_f(4, 3, 2), np.array([4, 1, 3], np.int64)],
          attrs={"batch_axis": 1, "time_axis": 0}, tol=False)
    check("ReverseSequence", [_f(3, 4), np.array([1, 2, 3], np.int64)],
          attrs={"batch_axis": 0, "time_axis": 1}, tol=False)
    check("Compress", [_f(3, 4)], [np.array([0, 1, 1], bool)], {"axis": 0}, tol=False)
    check("Compress", [_f(3, 2)], [np.array([1, 0, 0, 1, 1], bool)], tol=False)
    check("CenterCropPad", [_f(5, 4, 3)], [np.array([3, 7], np.int64)], {"axes": [0, 1]},
          opset=18, tol=False)


def test_non_zero_of_run_time_data():
    """The count is a run symbol (graph_dynamic.py): none, some and all elements nonzero."""
    for x in (np.zeros((2, 3), np.float32), np.array([[1, 0, -2], [0, 0, 3]], np.float32),
              _f(2, 3)):
        check("NonZero", [x], opset=13, tol=False)


def test_normalizations_and_lp_pool():
    check("InstanceNormalization", [_f(2, 3, 4, 5)], [_f(3), _f(3)], {"epsilon": 1e-3})
    check("GroupNormalization", [_f(2, 4, 3, 3)], [_f(4), _f(4)], {"num_groups": 2})
    check("GroupNormalization", [_f(2, 4, 3)], [_f(2), _f(2)], {"num_groups": 2}, opset=18)
    check("MeanVarianceNormalization", [_f(2, 3, 4, 5)], opset=13)
    check("LpPool", [_f(1, 2, 5, 5)], attrs={"kernel_shape": [3, 3], "p": 2,
                                             "pads": [1, 1, 1, 1], "strides": [2, 2]})
    check("LpPool", [_f(1, 2, 6)], attrs={"kernel_shape": [2], "p": 3})


def test_pad_wrap_and_space_to_depth_crd():
    check("Pad", [_f(3, 4)], [np.array([1, 2, 2, 5], np.int64)], {"mode": "wrap"}, opset=19,
          tol=False)
    check("SpaceToDepth", [_f(1, 2, 4, 6)], attrs={"blocksize": 2, "mode": "CRD"}, opset=25,
          tol=False)


def test_non_zero_of_a_constant_folds():
    x = np.array([[1, 0, 3], [0, 5, 0]], np.float32)
    model = graph_model(
        [helper.make_node("NonZero", ["c"], ["y"]), helper.make_node("Identity", ["x0"], ["z"])],
        {"x0": (np.float32, [1])}, ["y", "z"], initializers={"c": x}, opset=13)
    compiled = onnxc.compile(model)
    got, _ = compiled.run(None, {"x0": _f(1)})
    np.testing.assert_array_equal(got, np.array(np.nonzero(x)))


def test_nearest_resize_of_integers_and_negative_zero():
    x = RNG.integers(0, 255, (1, 3, 4, 5)).astype(np.uint8)
    check("Resize", [x], [EMPTY, np.array([1, 1, 2, 2], F32)], {"mode": "nearest"}, opset=19,
          tol=False)
    z = np.array([[[[-0.0, 1.0], [2.0, -0.0]]]], F32)
    model = _model("Resize", [z], [EMPTY, np.array([1, 1, 2, 2], F32)], {"mode": "nearest"}, 19)
    (got,) = onnxc.compile(model).run(None, {"x0": z})
    assert np.signbit(got[0, 0, 0, 0]) and np.signbit(got[0, 0, 3, 3])  # copied, not added


@pytest.mark.parametrize("x,image,block,attrs", [
    ((1, 4, 9), [4, 4], [2, 2], {}),
    ((2, 6, 6), [5, 7], [1, 3], {"strides": [2, 2], "pads": [0, 1, 1, 0], "dilations": [1, 2]}),
    ((1, 8, 12), [3, 3, 4], [2, 2, 2], {}),
])
def test_col2im(x, image, block, attrs):
    check("Col2Im", [_f(*x)], [np.array(image, np.int64), np.array(block, np.int64)], attrs,
          opset=18)


GRID = [(m, p, a) for m in ("nearest", "linear", "cubic") for p in ("zeros", "border", "reflection")
        for a in (0, 1)]


@pytest.mark.parametrize("mode,padding,align", GRID)
def test_grid_sample_2d(mode, padding, align):
    grid = RNG.uniform(-1.6, 1.6, (2, 3, 4, 2)).astype(F32)
    grid[0, 0, 0] = [0.25, -1.0]  # exact half-pixel and border positions
    check("GridSample", [_f(2, 3, 4, 5), grid],
          attrs={"mode": mode, "padding_mode": padding, "align_corners": align}, opset=20)


def test_grid_sample_3d_and_opset16_names():
    grid = RNG.uniform(-1.2, 1.2, (1, 2, 3, 2, 3)).astype(F32)
    check("GridSample", [_f(1, 2, 3, 4, 5), grid], attrs={"mode": "linear"}, opset=20)
    check("GridSample", [_f(1, 2, 4, 4), RNG.uniform(-1, 1, (1, 3, 3, 2)).astype(F32)],
          attrs={"mode": "bicubic", "padding_mode": "border"}, opset=16,
          reference="onnxruntime")  # onnx.reference knows only the opset-20 mode names


@pytest.mark.parametrize("include_pad,ceil", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_average_pool_with_dilations(include_pad, ceil):
    check("AveragePool", [_f(1, 2, 7, 8)],
          attrs={"kernel_shape": [3, 2], "dilations": [2, 3], "pads": [1, 2, 1, 0],
                 "strides": [2, 1], "count_include_pad": include_pad, "ceil_mode": ceil})


def test_lp_pool_dilations_and_ceil_mode():
    check("LpPool", [_f(1, 2, 7, 7)], attrs={"kernel_shape": [2, 2], "dilations": [2, 2]})
    # onnx.reference scales a ceil-mode window's partial sum up to the whole kernel;
    # onnxruntime sums the taps that exist, as the operator's definition says
    check("LpPool", [_f(1, 2, 6, 6)], attrs={"kernel_shape": [3, 3], "strides": [2, 2],
                                             "ceil_mode": 1, "p": 1}, reference="onnxruntime")


@pytest.mark.parametrize("align", [0, 1])
def test_affine_grid(align):
    check("AffineGrid", [_f(2, 2, 3)], [np.array([2, 3, 4, 5], np.int64)],
          {"align_corners": align}, opset=20)
    check("AffineGrid", [_f(1, 3, 4)], [np.array([1, 1, 2, 3, 4], np.int64)],
          {"align_corners": align}, opset=20)


@pytest.mark.parametrize("mode,ratio,ctm", [("avg", 2, "half_pixel"), ("avg", 0, "output_half_pixel"),
                                            ("max", 0, "half_pixel")])
def test_roi_align(mode, ratio, ctm):
    rois = np.array([[0, 0, 9, 9], [0, 5, 4, 9], [5, 5, 9, 9], [-3, 2, 12, 14]], F32)
    batch = np.array([0, 1, 1, 0], np.int64)
    check("RoiAlign", [_f(2, 3, 10, 10), rois, batch],
          attrs={"mode": mode, "sampling_ratio": ratio, "output_height": 3, "output_width": 4,
                 "spatial_scale": 0.9, "coordinate_transformation_mode": ctm}, opset=16)


@pytest.mark.parametrize("attrs", [
    {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
    {"kernel_shape": [2, 2], "storage_order": 1, "dilations": [2, 1], "ceil_mode": 1,
     "strides": [2, 2]},
    {"kernel_shape": [3], "strides": [2], "pads": [1, 0]},
])
def test_max_pool_indices_and_unpool(attrs):
    x = _f(2, 3, 7, 7)[..., 0] if len(attrs["kernel_shape"]) == 1 else _f(2, 3, 7, 7)
    model = single_op_model("MaxPool", {"x": x}, ["y", "i"], attrs=attrs, opset=12,
                            infer_shapes=True)
    expected = ReferenceEvaluator(model).run(None, {"x": x})
    got = onnxc.compile(model).run(None, {"x": x})
    evaluated = evaluate(import_onnx(model), {"x": x})
    for result in (got, evaluated):
        np.testing.assert_array_equal(result[0], expected[0])
        np.testing.assert_array_equal(result[1], expected[1])
    if attrs.get("storage_order") or len(attrs["kernel_shape"]) == 1:
        return
    unpool = {k: v for k, v in attrs.items() if k in ("kernel_shape", "strides", "pads")}
    check("MaxUnpool", [expected[0], expected[1]], attrs=unpool, opset=11, tol=False)
    check("MaxUnpool", [expected[0], expected[1]], [np.array([2, 3, 8, 9], np.int64)],
          attrs=unpool, opset=11, tol=False)


@pytest.mark.parametrize("attrs,mask,bias", [
    ({}, False, False),
    ({"strides": [2, 1], "pads": [1, 1, 1, 0], "dilations": [1, 2]}, True, True),
    ({"group": 2, "offset_group": 2}, True, False),
])
def test_deform_conv(attrs, mask, bias):
    x, w = _f(2, 4, 6, 7), _f(6, 4 // attrs.get("group", 1), 3, 3)
    s, p, d = attrs.get("strides", [1, 1]), attrs.get("pads", [0] * 4), attrs.get("dilations",
                                                                                  [1, 1])
    oh = (6 + p[0] + p[2] - (2 * d[0] + 1)) // s[0] + 1
    ow = (7 + p[1] + p[3] - (2 * d[1] + 1)) // s[1] + 1
    g = attrs.get("offset_group", 1)
    offset = (RNG.standard_normal((2, g * 9 * 2, oh, ow)) * 1.5).astype(F32)
    consts = [w, offset, _f(6) if bias else None]
    if mask:
        consts.append(RNG.uniform(0, 1, (2, g * 9, oh, ow)).astype(F32))
    check("DeformConv", [x], consts, attrs, opset=19)


def test_max_pool_of_unsigned_integers():
    """The window maximum starts from the type's minimum: 0 for unsigned types."""
    for dtype in (np.uint8, np.uint16):
        x = RNG.integers(0, 200, (1, 2, 5, 5)).astype(dtype)
        x[0, 0, 0, 0] = np.iinfo(dtype).max
        check("MaxPool", [x], attrs={"kernel_shape": [2, 2], "strides": [1, 2]}, opset=12,
              tol=False)


def test_conv_transpose_output_padding_past_the_blocks():
    """output_padding >= stride (allowed below the dilation) leaves a row no Col2Im block
    covers: the direct scatter kernel runs. onnx.reference and onnxruntime both refuse this
    model, so the numpy evaluator is the reference, and the rows past the last tap hold
    only the bias."""
    x, w, b = _f(1, 2, 3, 4), _f(2, 3, 2, 2), _f(3)
    model = _model("ConvTranspose", [x], [w, b],
                   {"dilations": [2, 2], "output_padding": [1, 1]}, 17)
    (ir_op,) = [op for op in import_onnx(model).walk() if op.name.startswith("graph.conv_t")]
    (got,) = onnxc.compile(model).run(None, {"x0": x})
    (expected,) = evaluate(import_onnx(model), {"x0": x})
    assert got.shape == (1, 3, 6, 7)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[:, :, -1, :], np.broadcast_to(b[None, :, None], (1, 3, 7)))
    assert ir_op is not None


@pytest.mark.parametrize("mode", ["linear", "circular"])
def test_tensor_scatter(mode):
    past, update = _f(2, 3, 6, 4), _f(2, 3, 3, 4)
    starts = np.array([1, 3] if mode == "linear" else [4, 5], np.int64)
    check("TensorScatter", [past, update, starts], attrs={"mode": mode}, opset=24, tol=False)
    check("TensorScatter", [_f(2, 5, 3), _f(2, 2, 3)], attrs={"axis": 1}, opset=24, tol=False)


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
