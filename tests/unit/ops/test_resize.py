"""Resize (and Upsample), every test of it: static shapes first, then symbolic sizes.

Static: one-node models of every mode, coordinate transform, nearest rounding, antialias,
axes and keep_aspect_ratio_policy, compiled natively against onnx.reference and by the numpy
evaluator on the imported graph (rtol 1e-4 / atol 1e-5; nearest exactly, integers and -0.0
copied); Upsample-9 and Resize-10's asymmetric linear; a batch-separable model keeping
Resize's static kernels and running per sample.

Symbolic: to another tensor's size (a segmentation head upsampling to the input's H x W,
`sizes` from Shape), by constant scales and to sizes the model is given, every mode and
coordinate transform (tf_crop_and_resize's region and extrapolation too) and antialiased
filters (whose tap count follows the run's scale), compiled once and run at several sizes
against onnxruntime (1e-5: the same f64 coordinates, f32 weights).

Upsampling along the last axis and another runs in two passes (rows first); its tests
check which shapes take it, against onnxruntime at one and two threads, warm and cold.

Run-time Pad/Resize sizes are in test_data_dependent_sizes.py, a Resize per loop iteration
in test_loop_sizes.py, the importer's refusals in test_symbolic_import.py.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import onnxc
from onnxc.frontend.onnx_importer import import_onnx
from onnxc.passes.evaluator import evaluate
from tests.single_op import check_single_op as check
from tests.single_op import graph_model, numbered, run_both, single_op_model

RNG = np.random.default_rng(11)
F32 = np.float32


def _f(*shape) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


# --------------------------------------------------------------------------- static shapes

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
          opset=9, exact=True)
    model = single_op_model("Resize", numbered([_f(1, 2, 3, 4)]), attrs={"mode": "linear"},
                            initializers=numbered([np.array([1, 1, 2, 2], F32)], "c"), opset=10,
                            infer_shapes=True)
    x = _f(1, 2, 3, 4)
    (got,) = onnxc.compile(model).run(None, {"x0": x})
    # Resize-10 linear is asymmetric: output 2i reads input i exactly
    np.testing.assert_allclose(got[..., ::2, ::2], x, rtol=1e-6)


def test_nearest_resize_of_integers_and_negative_zero():
    x = RNG.integers(0, 255, (1, 3, 4, 5)).astype(np.uint8)
    check("Resize", [x], [EMPTY, np.array([1, 1, 2, 2], F32)], {"mode": "nearest"}, opset=19,
          exact=True)
    z = np.array([[[[-0.0, 1.0], [2.0, -0.0]]]], F32)
    model = single_op_model("Resize", numbered([z]), attrs={"mode": "nearest"}, opset=19,
                            initializers=numbered([EMPTY, np.array([1, 1, 2, 2], F32)], "c"),
                            infer_shapes=True)
    (got,) = onnxc.compile(model).run(None, {"x0": z})
    assert np.signbit(got[0, 0, 0, 0]) and np.signbit(got[0, 0, 3, 3])  # copied, not added


def test_a_separable_model_with_an_op_of_static_kernels_runs_per_sample():
    """Resize keeps its static kernels for a batch (compilation.STATIC_KERNEL_OPS): the separable
    model compiles for one sample and runs per sample. (From test_dynamic_batch.py.)"""
    model = single_op_model("Resize", {"x": (np.float32, ["N", 2, 8, 8])},
                            {"y": (np.float32, ["N", 2, 4, 4])}, node_inputs=["x", "", "scales"],
                            attrs={"mode": "linear", "antialias": 1},
                            initializers={"scales": np.array([1, 1, 0.5, 0.5], np.float32)},
                            opset=18, ir_version=9)
    compiled = onnxc.compile(model, cache_dir=False)
    assert compiled.inputs[0].shape == (None, 2, 8, 8) and compiled.symbolic is None
    x = np.random.default_rng(0).standard_normal((3, 2, 8, 8)).astype(np.float32)
    for got, want in zip(compiled(x), ReferenceEvaluator(model).run(None, {"x": x})):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


TWO_PASS = [  # (input shape, output sizes, mode, rows of the first pass or None)
    ((1, 5, 9, 11), (1, 5, 40, 52), "linear", (1, 5, 9, 52)),  # a segmentation head
    ((2, 3, 7, 6), (2, 3, 15, 13), "cubic", (2, 3, 7, 13)),
    ((1, 2, 4, 5, 6), (1, 2, 9, 11, 14), "linear", (1, 2, 4, 5, 14)),  # trilinear
    ((1, 3, 9, 9), (1, 3, 9, 20), "linear", None),  # the last axis alone: one pass
    ((1, 3, 20, 4), (1, 3, 5, 9), "linear", None),  # rows (20 x 9) larger than the output
    ((1, 3, 8, 9), (1, 3, 16, 9), "linear", None),  # the last axis kept: contiguous already
]


@pytest.mark.parametrize("shape,sizes,mode,rows", TWO_PASS,
                         ids=[f"{r[0]}-{r[1]}-{r[2]}" for r in TWO_PASS])
def test_upsampling_resizes_the_rows_first(shape, sizes, mode, rows, tmp_path):
    """A resized last axis and another: the kernel resizes the input's rows into scratch,
    then the other axes read whole rows of it (resize._rows_shape), where those rows are
    no larger than the output. Against onnxruntime at 1e-5 (f32 weights summed in
    another order), one and two threads, cold and from the cache."""
    from onnxc.dialects.graph_resize import ResizeOp
    from onnxc.lowering.graph_to_loops.resize import _rows_shape

    model = single_op_model("Resize", {"x": (np.float32, list(shape))}, Y,
                            node_inputs=["x", "", "", "sizes"], attrs={"mode": mode},
                            initializers={"sizes": np.array(sizes, np.int64)}, opset=19,
                            ir_version=8)
    (op,) = [o for o in import_onnx(model).walk() if isinstance(o, ResizeOp)]
    assert _rows_shape(op) == (None if rows is None else list(rows))
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    (want,) = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"]).run(None, {"x": x})
    for threads in (1, 2):
        cold = onnxc.compile(model, cache_dir=tmp_path, num_threads=threads)
        warm = onnxc.compile(model, cache_dir=tmp_path, num_threads=threads)
        assert warm.from_cache and not cold.from_cache
        (got,), (again,) = cold.run(None, {"x": x}), warm.run(None, {"x": x})
        assert got.shape == tuple(sizes)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(again, got)


# --------------------------------------------------------------------------- symbolic sizes

MODES = [("nearest", "half_pixel", "round_prefer_floor"),
         ("nearest", "asymmetric", "floor"),
         ("nearest", "align_corners", "round_prefer_ceil"),
         ("nearest", "half_pixel", "ceil"),
         ("linear", "half_pixel", None),
         ("linear", "pytorch_half_pixel", None),
         ("linear", "align_corners", None),
         ("linear", "asymmetric", None),
         ("linear", "half_pixel_symmetric", None),
         ("cubic", "half_pixel", None),
         ("cubic", "align_corners", None)]


def _attributes(mode: str, ctm: str, nearest: str | None) -> dict:
    attrs = {"mode": mode, "coordinate_transformation_mode": ctm}
    if nearest:
        attrs["nearest_mode"] = nearest
    return attrs


X = {"x": (np.float32, [1, 2, "h", "w"])}
"""x [1, 2, h, w]"""
Y = {"y": (np.float32, None)}
"""one float output 'y' (the models below: opset 19, IR version 8)"""


def to_the_size_of(mode: str, ctm: str, nearest: str | None) -> onnx.ModelProto:
    """Resize x [1, 2, h, w] to the spatial size of `like` [1, 1, H, W]."""
    node = helper.make_node
    nodes = [node("Shape", ["like"], ["s"]), node("Slice", ["s", "two", "four"], ["hw"]),
             node("Concat", ["lead", "hw"], ["sizes"], axis=0),
             node("Resize", ["x", "", "", "sizes"], ["y"], **_attributes(mode, ctm, nearest))]
    inits = {n: np.array(v, np.int64) for n, v in (("two", [2]), ("four", [4]), ("lead", [1, 2]))}
    inputs = {**X, "like": (np.float32, [1, 1, "H", "W"])}
    return graph_model(nodes, inputs, Y, initializers=inits, opset=19, ir_version=8)


def by_scales(mode: str, scales: list[float]) -> onnx.ModelProto:
    return single_op_model("Resize", X, Y, attrs={"mode": mode}, node_inputs=["x", "", "scales"],
                           initializers={"scales": np.array(scales, np.float32)}, opset=19,
                           ir_version=8)


def _check(model: onnx.ModelProto, feeds_list, evaluated: bool = False):
    """One compile against onnxruntime at each feed (and the numpy evaluator); the
    compiled model."""
    compiled = onnxc.compile(model, cache_dir=False, quiet=True)
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    for feeds in feeds_list:
        (ours,), (theirs,) = compiled.run(None, feeds), session.run(None, feeds)
        results = [ours, *(evaluate(import_onnx(model), feeds) if evaluated else [])]
        for result in results:
            assert result.shape == theirs.shape
            np.testing.assert_allclose(result, theirs, rtol=1e-5, atol=1e-5)
    return compiled


def to_given_sizes(attrs: dict, roi: list[float] | None = None) -> onnx.ModelProto:
    """Resize x [1, 2, h, w] to `sizes`, an input of the model (run symbols)."""
    inits = {} if roi is None else {"roi": np.array(roi, np.float32)}
    return single_op_model("Resize", {**X, "sizes": (np.int64, [4])}, Y, attrs=attrs,
                           node_inputs=["x", "roi" if roi else "", "", "sizes"],
                           initializers=inits, opset=19, ir_version=8)


@pytest.mark.parametrize(("mode", "ctm", "nearest"), MODES)
def test_resize_to_a_run_time_size(mode, ctm, nearest):
    rng = np.random.default_rng(0)
    feeds = [{"x": rng.standard_normal((1, 2) + hw).astype(np.float32),
              "like": np.zeros((1, 1) + big, np.float32)}
             for hw, big in (((5, 7), (20, 28)), ((4, 4), (9, 13)), ((1, 1), (6, 5)),
                             ((8, 6), (4, 3)))]
    _check(to_the_size_of(mode, ctm, nearest), feeds)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize("scales", [[1.0, 1.0, 2.0, 2.0], [1.0, 1.0, 0.5, 1.5]])
def test_resize_a_symbolic_size_by_constant_scales(mode, scales):
    rng = np.random.default_rng(1)
    feeds = [{"x": rng.standard_normal((1, 2) + hw).astype(np.float32)}
             for hw in ((5, 7), (8, 8), (3, 11))]
    _check(by_scales(mode, scales), feeds)


def _sized(rng, hw, out) -> dict:
    return {"x": rng.standard_normal((1, 2, *hw)).astype(np.float32),
            "sizes": np.array([1, 2, *out], np.int64)}


@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize("exclude_outside", [0, 1])
def test_antialiased_resize_by_constant_scales(mode, exclude_outside):
    """A constant downscale: the widened filter's tap count is a number, the taps are
    computed in the run for the run's size."""
    model = by_scales(mode, [1.0, 1.0, 0.6, 0.3])
    node = model.graph.node[0]
    node.attribute.extend([helper.make_attribute("antialias", 1),
                           helper.make_attribute("exclude_outside", exclude_outside)])
    rng = np.random.default_rng(2)
    _check(model, [{"x": rng.standard_normal((1, 2) + hw).astype(np.float32)}
                   for hw in ((9, 13), (6, 7), (16, 5))], evaluated=True)


@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_antialiased_resize_to_run_time_sizes(mode):
    """The scale is the run's out / in, so the filter's tap count is computed in the run
    (2 * max(support, ceildiv(support * in, out))): downscales by up to 30, an upscale and
    an unchanged axis from one compile; negative sizes, or an empty axis to sample, are an
    InvalidInputError naming the node."""
    rng = np.random.default_rng(3)
    compiled = _check(to_given_sizes({"mode": mode, "antialias": 1}), [
        _sized(rng, hw, out) for hw, out in (((9, 13), (4, 5)), ((6, 7), (6, 9)),
                                             ((16, 5), (3, 1)), ((20, 30), (7, 30)))],
        evaluated=True)
    for hw, out in (((4, 4), (-1, 3)), ((0, 4), (3, 3))):
        with pytest.raises(onnxc.errors.InvalidInputError, match="Resize"):
            compiled.run(None, _sized(rng, hw, out))


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_tf_crop_and_resize_over_symbolic_sizes(mode):
    """tf_crop_and_resize samples the region of interest over the output's length and
    flags what falls outside the input (the extrapolation value), as onnxruntime does; an
    axis whose size stays is not resampled. To run-time sizes and by constant scales."""
    attrs = {"mode": mode, "coordinate_transformation_mode": "tf_crop_and_resize",
             "extrapolation_value": 3.0}
    roi = [0, 0, -0.2, 0.4, 1, 1, 0.6, 1.3]
    rng = np.random.default_rng(4)
    _check(to_given_sizes(attrs, roi), [
        _sized(rng, hw, out) for hw, out in (((9, 13), (4, 5)), ((6, 7), (6, 9)),
                                             ((16, 5), (3, 1)), ((5, 5), (5, 5)))],
        evaluated=True)
    model = by_scales(mode, [1.0, 1.0, 0.8, 1.5])
    model.graph.node[0].input[1] = "roi"
    del model.graph.node[0].attribute[:]
    model.graph.node[0].attribute.extend(helper.make_attribute(k, v) for k, v in attrs.items())
    model.graph.initializer.append(numpy_helper.from_array(np.array(roi, np.float32), "roi"))
    _check(model, [{"x": rng.standard_normal((1, 2) + hw).astype(np.float32)}
                   for hw in ((9, 13), (6, 7), (16, 5))], evaluated=True)


def keep_aspect(policy: str, mode: str, sizes: list[int] | None) -> onnx.ModelProto:
    """Resize x [1, 2, h, w] along axes 2 and 3 to `sizes` (constant), or to the model's
    input `sizes` (run symbols), keeping the aspect ratio."""
    inputs, inits = dict(X), {}
    if sizes is None:
        inputs["sizes"] = (np.int64, [2])
    else:
        inits["sizes"] = np.array(sizes, np.int64)
    return single_op_model("Resize", inputs, Y, node_inputs=["x", "", "", "sizes"],
                           attrs={"mode": mode, "axes": [2, 3],
                                  "keep_aspect_ratio_policy": policy},
                           initializers=inits, opset=19, ir_version=8)


@pytest.mark.parametrize("policy", ["not_larger", "not_smaller"])
@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_keep_aspect_ratio_over_symbolic_sizes(policy, mode):
    """keep_aspect_ratio_policy with symbolic H and W: one scale for both axes, the least
    (or largest) requested / input size, taken in the run, each axis round(scale * size);
    to constant sizes and to sizes given in the run, against onnxruntime."""
    rng = np.random.default_rng(5)
    shapes = ((9, 13), (6, 7), (16, 5), (7, 7))
    _check(keep_aspect(policy, mode, [12, 10]),
           [{"x": rng.standard_normal((1, 2) + hw).astype(np.float32)} for hw in shapes],
           evaluated=True)
    _check(keep_aspect(policy, mode, None),
           [{"x": rng.standard_normal((1, 2) + hw).astype(np.float32),
             "sizes": np.array(out, np.int64)}
            for hw, out in zip(shapes, ((4, 20), (12, 12), (8, 3), (5, 9)))])


def crop_by_run_time_roi(mode: str, dims: list, axes: list[int] | None) -> onnx.ModelProto:
    """tf_crop_and_resize of x [1, 2, h, w] to constant sizes over a region the model is
    given (as a detector's boxes are), over every axis or over `axes`."""
    count = 4 if axes is None else len(axes)
    attrs = {"mode": mode, "coordinate_transformation_mode": "tf_crop_and_resize",
             "extrapolation_value": -2.0, **({} if axes is None else {"axes": axes})}
    sizes = [1, 2, 5, 6] if axes is None else [5, 6]
    nodes = [helper.make_node("Mul", ["box", "one"], ["roi"]),  # computed, not an input
             helper.make_node("Resize", ["x", "roi", "", "sizes"], ["y"], **attrs)]
    inits = {"sizes": np.array(sizes, np.int64), "one": np.ones(2 * count, np.float32)}
    inputs = {"x": (np.float32, [1, 2, *dims]), "box": (np.float32, [2 * count])}
    return graph_model(nodes, inputs, Y, initializers=inits, opset=19, ir_version=8)


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("axes", [None, [2, 3]])
@pytest.mark.parametrize("symbolic", [False, True])
def test_tf_crop_and_resize_over_a_run_time_region(mode, axes, symbolic):
    """The region comes from the run: the taps are computed in the run from it, boxes
    inside and partly outside the input (the extrapolation value) and a flipped one."""
    rng = np.random.default_rng(6)
    boxes = [[0.1, 0.2, 0.8, 0.9], [-0.3, 0.0, 0.5, 1.4], [0.9, 0.7, 0.2, 0.1]]
    hws = [(9, 13), (6, 7), (16, 5)] if symbolic else [(9, 13)] * 3
    feeds = []
    for (h, w), (y0, x0, y1, x1) in zip(hws, boxes):
        box = [y0, x0, y1, x1] if axes else [0, 0, y0, x0, 1, 1, y1, x1]
        feeds.append({"x": rng.standard_normal((1, 2, h, w)).astype(np.float32),
                      "box": np.array(box, np.float32)})
    _check(crop_by_run_time_roi(mode, ["h", "w"] if symbolic else [9, 13], axes), feeds,
           evaluated=True)


@pytest.mark.parametrize("roi", ["full", "short", "empty", "input"])
@pytest.mark.parametrize("ctm", ["half_pixel", "asymmetric", "pytorch_half_pixel"])
def test_roi_is_ignored_outside_tf_crop_and_resize(roi, ctm):
    """ONNX reads roi only with tf_crop_and_resize: in other modes any roi -- of the
    rank's length, of another length, empty, or a run-time input -- is accepted and
    ignored, as onnxruntime does (rtol 1e-5 / atol 1e-6: the same f64 coordinates and
    f32 weights)."""
    x = _f(1, 2, 4, 5)
    rois = {"full": np.array([0, 0, 0.1, 0.2, 1, 1, 0.9, 0.8], F32),
            "short": np.array([0.3, 0.5], F32), "empty": EMPTY}
    inputs = {"x": x, **({"roi": (F32, [3])} if roi == "input" else {})}
    inits = {"scales": np.array([1, 1, 2, 1.5], F32),
             **({} if roi == "input" else {"roi": rois[roi]})}
    model = single_op_model("Resize", inputs, {"y": None}, node_inputs=["x", "roi", "scales"],
                            initializers=inits, opset=19, ir_version=8,
                            attrs={"mode": "linear", "coordinate_transformation_mode": ctm})
    feeds = {"x": x, **({"roi": np.array([0.2, 7.0, -1.0], F32)} if roi == "input" else {})}
    run_both(model, feeds, rtol=1e-5, atol=1e-6)
