"""Resize over symbolic sizes: to another tensor's size (a segmentation head upsampling to
the input's H x W, `sizes` from Shape) and by constant scales, every mode and coordinate
transform that has a run-time table, compiled once and run at several sizes against
onnxruntime (1e-5: the same f64 coordinates, f32 weights)."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxc

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
    graph = helper.make_graph(nodes, "g", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 8
    return model


def by_scales(mode: str, scales: list[float]) -> onnx.ModelProto:
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], mode=mode)
    scales_init = numpy_helper.from_array(np.array(scales, np.float32), "scales")
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, "h", "w"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [scales_init])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 8
    return model


def _check(model: onnx.ModelProto, feeds_list) -> None:
    compiled = onnxc.compile(model, cache_dir=False, quiet=True)
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    for feeds in feeds_list:
        (ours,), (theirs,) = compiled.run(None, feeds), session.run(None, feeds)
        assert ours.shape == theirs.shape
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)


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
