"""Sizes only the run decides: NonMaxSuppression's kept boxes (a run symbol with the bound
batches x classes x boxes) and shape data computed in the run (graph.bind_sizes: Pad's
pads, Resize's sizes), compiled once and run at several shapes, cold and warm.

Reference: onnxruntime. NMS is compared exactly (the kept indices; IoU in f32 as both
compute it), the others exactly too (data movement, nearest resize).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxc
from onnxc.errors import InvalidInputError, ResourceLimitError
from onnxc.frontend.onnx_importer import import_onnx
from onnxc.passes.evaluator import evaluate

ort = pytest.importorskip("onnxruntime")


def _model(nodes, inputs, outputs, inits=(), opset=17) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _compiled_cold_and_warm(model, tmp_path):
    """The model compiled into an empty cache, then loaded from it (a second compile)."""
    cold = onnxc.compile(model, cache_dir=tmp_path, quiet=True)
    warm = onnxc.compile(model, cache_dir=tmp_path, quiet=True)
    return cold, warm


def _session(model):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def _nms_model(center: int, thresholds: bool) -> onnx.ModelProto:
    f = TensorProto.FLOAT
    inits = [numpy_helper.from_array(np.array([5], np.int64), "max_out")]
    names = ["boxes", "scores", "max_out"]
    if thresholds:
        inits += [numpy_helper.from_array(np.array([0.4], np.float32), "iou"),
                  numpy_helper.from_array(np.array([0.2], np.float32), "score")]
        names += ["iou", "score"]
    node = helper.make_node("NonMaxSuppression", names, ["selected"], center_point_box=center)
    return _model([node], [helper.make_tensor_value_info("boxes", f, ["b", "n", 4]),
                           helper.make_tensor_value_info("scores", f, ["b", "c", "n"])],
                  [helper.make_tensor_value_info("selected", TensorProto.INT64, None)], inits)


def _boxes(rng, batches: int, classes: int, count: int, center: int):
    xy = rng.random((batches, count, 2)).astype(np.float32)
    wh = (rng.random((batches, count, 2)) * 0.4).astype(np.float32)
    boxes = np.concatenate([xy, wh] if center else [xy + wh, xy], -1)  # corners in any order
    scores = rng.random((batches, classes, count)).astype(np.float32)
    if count > 5:
        scores[0, 0, 3] = scores[0, 0, 5]  # a tie: the lower index first
    return boxes, scores


@pytest.mark.parametrize("center", [0, 1])
@pytest.mark.parametrize("thresholds", [True, False])
def test_non_max_suppression_matches_onnxruntime(center, thresholds, tmp_path):
    model = _nms_model(center, thresholds)
    session, rng = _session(model), np.random.default_rng(center * 2 + thresholds)
    for compiled in _compiled_cold_and_warm(model, tmp_path):
        for shape in ((1, 1, 10), (2, 3, 50), (1, 2, 0), (3, 1, 300), (1, 1, 1)):
            boxes, scores = _boxes(rng, *shape, center)
            (got,) = compiled.run(None, {"boxes": boxes, "scores": scores})
            (want,) = session.run(None, {"boxes": boxes, "scores": scores})
            np.testing.assert_array_equal(got, want, err_msg=str(shape))
    (evaluated,) = evaluate(import_onnx(model), {"boxes": boxes, "scores": scores})
    np.testing.assert_array_equal(evaluated, want)  # the numpy evaluator's too


def test_run_time_pads_and_resize_sizes(tmp_path):
    """Pad's pads and Resize's sizes computed from an input's values: bound as sizes in the
    run; a negative one is an InvalidInputError naming the node."""
    i64 = TensorProto.INT64
    nodes = [helper.make_node("Pad", ["x", "pads"], ["padded"], mode="constant"),
             helper.make_node("Concat", ["batch_channels", "hw"], ["sizes"], axis=0),
             helper.make_node("Resize", ["padded", "", "", "sizes"], ["y"], mode="nearest")]
    model = _model(
        nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 2, "h", "w"]),
                helper.make_tensor_value_info("pads", i64, [8]),
                helper.make_tensor_value_info("hw", i64, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array([1, 2], np.int64), "batch_channels")])
    session, rng = _session(model), np.random.default_rng(3)
    cases = [((1, 2, 4, 5), [0, 0, 1, 2, 0, 0, 3, 0], [9, 7]),
             ((1, 2, 6, 3), [0, 0, 0, 0, 0, 0, 0, 0], [3, 3]),
             ((1, 2, 2, 2), [0, 0, 2, 2, 0, 0, 2, 2], [12, 1])]
    for compiled in _compiled_cold_and_warm(model, tmp_path):
        for shape, pads, hw in cases:
            feeds = {"x": rng.standard_normal(shape).astype(np.float32),
                     "pads": np.array(pads, np.int64), "hw": np.array(hw, np.int64)}
            (got,) = compiled.run(None, feeds)
            (want,) = session.run(None, feeds)
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(evaluate(import_onnx(model), feeds)[0], want)
        feeds["pads"] = np.array([0, 0, -1, 0, 0, 0, 0, 0], np.int64)
        with pytest.raises(InvalidInputError, match="Pad"):
            compiled.run(None, feeds)


def test_tile_by_shape_data_and_run_time_repeats(tmp_path):
    """Tile repeats that are sizes (a dimension of another input, on a dimension other than
    1) and repeats computed in the run."""
    i64 = TensorProto.INT64
    nodes = [helper.make_node("Shape", ["z"], ["zs"]),
             helper.make_node("Concat", ["zs", "reps"], ["r"], axis=0),
             helper.make_node("Tile", ["x", "r"], ["y"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["a", 3]),
                           helper.make_tensor_value_info("z", TensorProto.FLOAT, ["k"]),
                           helper.make_tensor_value_info("reps", i64, [1])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    session, rng = _session(model), np.random.default_rng(4)
    for compiled in _compiled_cold_and_warm(model, tmp_path):
        for a, k, reps in ((2, 3, 2), (1, 1, 1), (4, 0, 3), (3, 2, 0)):
            feeds = {"x": rng.standard_normal((a, 3)).astype(np.float32),
                     "z": np.zeros(k, np.float32), "reps": np.array([reps], np.int64)}
            (want,) = session.run(None, feeds)
            np.testing.assert_array_equal(compiled.run(None, feeds)[0], want)
            np.testing.assert_array_equal(evaluate(import_onnx(model), feeds)[0], want)


def test_a_huge_run_time_size_is_a_resource_error_and_leaves_the_model_usable():
    """Sizes from data are hostile input: a pad of 2**62 is refused before anything is
    allocated, and the capacity it asked for is not kept for later runs."""
    model = _model([helper.make_node("Pad", ["x", "p"], ["t"]),
                    helper.make_node("Exp", ["t"], ["u"]),
                    helper.make_node("ReduceSum", ["u"], ["y"], keepdims=0)],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
                    helper.make_tensor_value_info("p", TensorProto.INT64, [2])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    compiled = onnxc.compile(model, cache_dir=False, quiet=True)
    x = np.zeros(2, np.float32)
    for big in (2**62, 2**63 - 2):
        with pytest.raises(ResourceLimitError, match="dynamic arena"):
            compiled.run(None, {"x": x, "p": np.array([big, big], np.int64)})
    (y,) = compiled.run(None, {"x": x, "p": np.array([1, 2], np.int64)})
    assert float(y) == 5.0


def test_top_k_of_a_size_and_of_a_run_time_k(tmp_path):
    """torchvision's k = min(1000, boxes) (ReduceMin of shape data: a size expression) and a
    k fed as an input; a k past the axis is an InvalidInputError naming the node."""
    i64 = TensorProto.INT64
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "one"], ["n"], axis=0),
             helper.make_node("Unsqueeze", ["n", "zero"], ["n1"]),
             helper.make_node("Concat", ["five", "n1"], ["c"], axis=0),
             helper.make_node("ReduceMin", ["c"], ["kk"], keepdims=0),
             helper.make_node("Reshape", ["kk", "shape1"], ["k"]),
             helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1),
             helper.make_node("TopK", ["x", "k2"], ["v2", "i2"], axis=1, largest=0,
                              name="by_input")]
    inits = [numpy_helper.from_array(np.array(a, np.int64), name) for a, name in
             ((1, "one"), ([0], "zero"), ([5], "five"), ([1], "shape1"))]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, "n"]),
                           helper.make_tensor_value_info("k2", i64, [1])],
                   [helper.make_empty_tensor_value_info(o) for o in ("v", "i", "v2", "i2")],
                   inits)
    session, rng = _session(model), np.random.default_rng(5)
    for compiled in _compiled_cold_and_warm(model, tmp_path):
        for n, k2 in ((10, 3), (3, 3), (1, 0), (7, 7), (100, 40)):
            feeds = {"x": rng.standard_normal((2, n)).astype(np.float32),
                     "k2": np.array([k2], np.int64)}
            for got, want in zip(compiled.run(None, feeds), session.run(None, feeds)):
                np.testing.assert_array_equal(got, want)
        with pytest.raises(InvalidInputError, match="by_input"):
            compiled.run(None, {"x": feeds["x"], "k2": np.array([101], np.int64)})


@pytest.mark.parametrize("mode", ["edge", "reflect", "wrap"])
def test_edge_reflect_and_wrap_pads_of_symbolic_sizes(mode, tmp_path):
    model = _model([helper.make_node("Pad", ["x", "p"], ["y"], mode=mode)],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["a", "b"]),
                    helper.make_tensor_value_info("p", TensorProto.INT64, [4])],
                   [helper.make_empty_tensor_value_info("y")], opset=19)
    session, rng = _session(model), np.random.default_rng(6)
    cases = [((3, 4), [1, 2, 0, 3]), ((4, 1), [2, 0, 3, 0]), ((5, 5), [4, 4, 4, 4]),
             ((2, 3), [0, 0, 0, 0])] + ([] if mode == "reflect" else [((1, 5), [0, 1, 2, 0])])
    for compiled in _compiled_cold_and_warm(model, tmp_path):
        for shape, pads in cases:
            feeds = {"x": rng.standard_normal(shape).astype(np.float32),
                     "p": np.array(pads, np.int64)}
            np.testing.assert_array_equal(compiled.run(None, feeds)[0],
                                          session.run(None, feeds)[0])
