"""Resize over symbolic sizes: to another tensor's size (a segmentation head upsampling to
the input's H x W, `sizes` from Shape), by constant scales and to sizes the model is given,
every mode and coordinate transform (tf_crop_and_resize's region and extrapolation too) and
antialiased filters (whose tap count follows the run's scale), compiled once and run at
several sizes against onnxruntime (1e-5: the same f64 coordinates, f32 weights)."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxc
from onnxc.frontend.onnx_importer import import_onnx
from onnxc.passes.evaluator import evaluate

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


def _model(nodes, inputs, inits) -> onnx.ModelProto:
    """Opset 19, one float output 'y'."""
    graph = helper.make_graph(nodes, "g", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 8
    return model


def to_the_size_of(mode: str, ctm: str, nearest: str | None) -> onnx.ModelProto:
    """Resize x [1, 2, h, w] to the spatial size of `like` [1, 1, H, W]."""
    node = helper.make_node
    nodes = [node("Shape", ["like"], ["s"]), node("Slice", ["s", "two", "four"], ["hw"]),
             node("Concat", ["lead", "hw"], ["sizes"], axis=0),
             node("Resize", ["x", "", "", "sizes"], ["y"], **_attributes(mode, ctm, nearest))]
    inits = [numpy_helper.from_array(np.array(v, np.int64), n)
             for n, v in (("two", [2]), ("four", [4]), ("lead", [1, 2]))]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, "h", "w"]),
              helper.make_tensor_value_info("like", TensorProto.FLOAT, [1, 1, "H", "W"])]
    return _model(nodes, inputs, inits)


def by_scales(mode: str, scales: list[float]) -> onnx.ModelProto:
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], mode=mode)
    scales_init = numpy_helper.from_array(np.array(scales, np.float32), "scales")
    return _model([node], [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                         [1, 2, "h", "w"])], [scales_init])


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
    inits = [] if roi is None else [numpy_helper.from_array(np.array(roi, np.float32), "roi")]
    node = helper.make_node("Resize", ["x", "roi" if roi else "", "", "sizes"], ["y"], **attrs)
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, "h", "w"]),
              helper.make_tensor_value_info("sizes", TensorProto.INT64, [4])]
    return _model([node], inputs, inits)


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
    node = helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode=mode, axes=[2, 3],
                            keep_aspect_ratio_policy=policy)
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, "h", "w"])]
    inits = []
    if sizes is None:
        inputs.append(helper.make_tensor_value_info("sizes", TensorProto.INT64, [2]))
    else:
        inits.append(numpy_helper.from_array(np.array(sizes, np.int64), "sizes"))
    return _model([node], inputs, inits)


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
    inits = [numpy_helper.from_array(np.array(sizes, np.int64), "sizes"),
             numpy_helper.from_array(np.ones(2 * count, np.float32), "one")]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, *dims]),
              helper.make_tensor_value_info("box", TensorProto.FLOAT, [2 * count])]
    return _model(nodes, inputs, inits)


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
