"""ConvTranspose, DeformConv, Col2Im, MaxPool (indices, unsigned integers), MaxUnpool,
AveragePool and LpPool (dilations, ceil mode), GridSample, AffineGrid, RoiAlign and MaxRoiPool
(bit-identical to onnxruntime, symbolic sizes, a bad batch index): one-node
models compiled natively by onnxc.compile against onnx.reference.ReferenceEvaluator
(onnxruntime where the reference is wrong), and by the numpy evaluator on the imported graph
(tests/single_op.py's `check_single_op`).

Convolutions, pooling and sampling use rtol 1e-4 / atol 1e-5 (float32 accumulation in another
order than the reference's float64); indices exactly.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx.reference import ReferenceEvaluator

import onnxc
from onnxc.errors import InvalidInputError, ModelLoadError
from onnxc.frontend.onnx_importer import import_onnx
from onnxc.passes.evaluator import evaluate
from tests.single_op import check_single_op as check
from tests.single_op import numbered, reference_run, run_both, single_op_model

RNG = np.random.default_rng(11)
F32 = np.float32


def _f(*shape) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


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
    check("MaxUnpool", [expected[0], expected[1]], attrs=unpool, opset=11, exact=True)
    check("MaxUnpool", [expected[0], expected[1]], [np.array([2, 3, 8, 9], np.int64)],
          attrs=unpool, opset=11, exact=True)


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
              exact=True)


def test_conv_transpose_output_padding_past_the_blocks():
    """output_padding >= stride (allowed below the dilation) leaves a row no Col2Im block
    covers: the direct scatter kernel runs. onnx.reference and onnxruntime both refuse this
    model, so the numpy evaluator is the reference, and the rows past the last tap hold
    only the bias."""
    x, w, b = _f(1, 2, 3, 4), _f(2, 3, 2, 2), _f(3)
    model = single_op_model("ConvTranspose", numbered([x]), initializers=numbered([w, b], "c"),
                            attrs={"dilations": [2, 2], "output_padding": [1, 1]}, opset=17,
                            infer_shapes=True)
    (ir_op,) = [op for op in import_onnx(model).walk() if op.name.startswith("graph.conv_t")]
    (got,) = onnxc.compile(model).run(None, {"x0": x})
    (expected,) = evaluate(import_onnx(model), {"x0": x})
    assert got.shape == (1, 3, 6, 7)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[:, :, -1, :], np.broadcast_to(b[None, :, None], (1, 3, 7)))
    assert ir_op is not None


# ---------------------------------------------------------------------------- GlobalLpPool


@pytest.mark.parametrize("p", [1, 2, 3])
@pytest.mark.parametrize("shape", [(2, 3, 5, 7), (1, 4, 6), (1, 2, 3, 4, 5)])
def test_global_lp_pool_against_onnxruntime(p, shape):
    """(sum |x|^p)^(1/p) over the spatial axes; onnxruntime as reference, rtol 1e-5 (float32
    sums of up to 60 terms in another order)."""
    from tests.single_op import run_both

    n_spatial = len(shape) - 2
    model = single_op_model("GlobalLpPool", {"x": (F32, list(shape))},
                            {"y": (F32, [*shape[:2], *[1] * n_spatial])}, attrs={"p": p})
    run_both(model, {"x": _f(*shape)}, rtol=1e-5, atol=1e-6, cache_dir=False)


def test_global_lp_pool_over_symbolic_sizes():
    """One compile, several image sizes (the ReduceSum kernel reads its sizes in the run)."""
    from tests.single_op import reference_run

    model = single_op_model("GlobalLpPool", {"x": (F32, ["n", 3, "h", "w"])},
                            {"y": (F32, ["n", 3, 1, 1])}, attrs={"p": 2})
    compiled = onnxc.compile(model, cache_dir=False)
    for shape in [(1, 3, 4, 4), (2, 3, 9, 5)]:
        x = _f(*shape)
        (got,) = compiled.run(None, {"x": x})
        np.testing.assert_allclose(got, reference_run(model, {"x": x})[0], rtol=1e-5, atol=1e-6)


def test_global_lp_pool_refuses_a_bad_p():
    model = single_op_model("GlobalLpPool", {"x": (F32, [1, 2, 3, 3])},
                            {"y": (F32, [1, 2, 1, 1])}, attrs={"p": 0})
    with pytest.raises(onnxc.OnnxcError, match="'p' must be a positive integer"):
        onnxc.compile(model, cache_dir=False)


# --------------------------------------------------------------------------- MaxRoiPool

MAX_ROIS = np.array([[0, 1, 1, 8, 6], [1, 0.4, 2.6, 11.5, 9.4], [1, -3, -2, 4, 3],
                     [0, 5, 5, 3, 2],  # malformed: 1 x 1 at its start
                     [1, 20, 20, 30, 30],  # outside the image: every bin empty, 0
                     [0, 2.5, 3.5, 2.5, 3.5], [1, 1.7, 0.2, 2.2, 9.9]], np.float32)


@pytest.mark.parametrize("pooled,scale", [([3, 2], 1.0), ([2, 2], 0.5), ([4, 5], 0.75),
                                          ([1, 1], 2.0)])
def test_max_roi_pool_is_onnxruntimes(pooled, scale):
    """Bit-identical to onnxruntime (the same float32 corner and bin arithmetic, a max),
    and so is the numpy evaluator."""
    x = _f(2, 3, 10, 12)
    model = single_op_model("MaxRoiPool", {"x": x, "rois": MAX_ROIS}, {"y": None}, opset=1,
                            attrs={"pooled_shape": pooled, "spatial_scale": scale},
                            ir_version=8)
    feeds = {"x": x, "rois": MAX_ROIS}
    _, expected = run_both(model, feeds, exact=True)
    (evaluated,) = evaluate(import_onnx(model), feeds)
    np.testing.assert_array_equal(evaluated, expected[0])


def test_max_roi_pool_over_symbolic_sizes_and_a_bad_batch_index():
    model = single_op_model("MaxRoiPool", {"x": (np.float32, ["n", 3, "h", "w"]),
                                           "rois": (np.float32, ["r", 5])}, {"y": None},
                            attrs={"pooled_shape": [2, 3], "spatial_scale": 0.5}, opset=1,
                            ir_version=8)
    compiled = onnxc.compile(model)
    for n, h, w, r in ((2, 10, 12, 7), (3, 5, 20, 3), (2, 1, 1, 1)):
        feeds = {"x": _f(n, 3, h, w), "rois": MAX_ROIS[:r]}
        np.testing.assert_array_equal(compiled.run(None, feeds)[0],
                                      reference_run(model, feeds)[0])
    bad = MAX_ROIS.copy()
    bad[3, 0] = 2  # batch index past N = 2: refused before the kernel reads
    with pytest.raises(InvalidInputError, match="MaxRoiPool.*batch index value 2"):
        compiled.run(None, {"x": _f(2, 3, 10, 12), "rois": bad})


def test_max_roi_pool_refusals():
    with pytest.raises(ModelLoadError, match="pooled_shape"):
        onnxc.compile(single_op_model("MaxRoiPool", {"x": _f(1, 1, 4, 4), "rois": MAX_ROIS},
                                      {"y": None}, opset=1))
    with pytest.raises(ModelLoadError, match=r"\[num_rois, 5\]"):
        onnxc.compile(single_op_model("MaxRoiPool", {"x": _f(1, 1, 4, 4),
                                                     "rois": MAX_ROIS[:, :4]},
                                      {"y": None}, attrs={"pooled_shape": [1, 1]}, opset=1))
