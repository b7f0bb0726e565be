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
from tests.single_op import graph_model

ort = pytest.importorskip("onnxruntime")


def _model(nodes, inputs, outputs, inits=(), opset=17) -> onnx.ModelProto:
    return graph_model(nodes, inputs, outputs, initializers=list(inits), opset=opset,
                       ir_version=8)


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
            wanted = session.run(None, feeds)
            for got, want in zip(compiled.run(None, feeds), wanted):
                np.testing.assert_array_equal(got, want)
        for got, want in zip(evaluate(import_onnx(model), feeds), wanted):  # and numpy's
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


def test_if_whose_branches_yield_different_sizes(tmp_path):
    """torchvision's `if boxes.numel() == 0: empty else: NMS`: the If's result size is a run
    symbol of its own, bounded by the larger branch, and later ops compute on it."""
    i64 = TensorProto.INT64
    empty = helper.make_graph(
        [helper.make_node("Constant", [], ["t"],
                          value=helper.make_tensor("e", i64, [0, 3], []))],
        "then", [], [helper.make_tensor_value_info("t", i64, [0, 3])])
    kept = helper.make_graph(
        [helper.make_node("NonMaxSuppression", ["boxes", "scores", "max_out", "iou"], ["e"])],
        "else", [], [helper.make_tensor_value_info("e", i64, ["k", 3])])
    nodes = [helper.make_node("Size", ["boxes"], ["n"]),
             helper.make_node("Equal", ["n", "zero"], ["none"]),
             helper.make_node("If", ["none"], ["sel"], then_branch=empty, else_branch=kept),
             helper.make_node("Gather", ["sel", "two"], ["idx"], axis=1),
             helper.make_node("Squeeze", ["boxes", "axis0"], ["flat"]),
             helper.make_node("Gather", ["flat", "idx"], ["picked"], axis=0)]
    inits = [numpy_helper.from_array(np.array(0, np.int64), "zero"),
             numpy_helper.from_array(np.array(2, np.int64), "two"),
             numpy_helper.from_array(np.array([0], np.int64), "axis0"),
             numpy_helper.from_array(np.array([3], np.int64), "max_out"),
             numpy_helper.from_array(np.array([0.3], np.float32), "iou")]
    f = TensorProto.FLOAT
    model = _model(nodes, [helper.make_tensor_value_info("boxes", f, [1, "n", 4]),
                           helper.make_tensor_value_info("scores", f, [1, 1, "n"])],
                   [helper.make_empty_tensor_value_info(o) for o in ("sel", "picked")], inits)
    module = str(import_onnx(model))
    assert 'defines = ["If_2_out0_dim0"]' in module
    session, rng = _session(model), np.random.default_rng(7)
    for compiled in _compiled_cold_and_warm(model, tmp_path):
        for n in (0, 5, 20, 1):
            xy = rng.random((1, n, 2)).astype(np.float32)
            feeds = {"boxes": np.concatenate([xy, xy + 0.3], -1),
                     "scores": rng.random((1, 1, n)).astype(np.float32)}
            for got, want in zip(compiled.run(None, feeds), session.run(None, feeds),
                                 strict=True):
                np.testing.assert_array_equal(got, want, err_msg=f"n={n}")


def test_roi_align_over_run_time_boxes_and_symbolic_images(tmp_path):
    """Faster R-CNN's box head: RoiAlign of a run-time number of boxes on a feature map of
    symbolic size (boxes partly outside the map). Tolerance 1e-5: the same bilinear taps in
    f32, summed in another order."""
    f, i64 = TensorProto.FLOAT, TensorProto.INT64
    node = helper.make_node("RoiAlign", ["x", "rois", "batch"], ["y"], output_height=3,
                            output_width=2, sampling_ratio=2, spatial_scale=0.5,
                            coordinate_transformation_mode="half_pixel")
    model = _model([node], [helper.make_tensor_value_info("x", f, ["n", 4, "h", "w"]),
                            helper.make_tensor_value_info("rois", f, ["r", 4]),
                            helper.make_tensor_value_info("batch", i64, ["r"])],
                   [helper.make_empty_tensor_value_info("y")])
    session, rng = _session(model), np.random.default_rng(8)
    for compiled in _compiled_cold_and_warm(model, tmp_path):
        for n, h, w, r in ((1, 8, 8, 5), (2, 5, 11, 7), (1, 3, 4, 0), (2, 1, 1, 3)):
            corners = rng.random((r, 2, 2)).astype(np.float32) * [2 * w + 4, 2 * h + 4] - 2
            feeds = {"x": rng.standard_normal((n, 4, h, w)).astype(np.float32),
                     "rois": np.sort(corners, axis=1).reshape(r, 4).astype(np.float32),
                     "batch": rng.integers(0, n, r).astype(np.int64)}
            np.testing.assert_allclose(compiled.run(None, feeds)[0],
                                       session.run(None, feeds)[0], rtol=1e-5, atol=1e-5)


def test_pads_computed_from_sizes_the_torch_f_pad_way(tmp_path):
    """torch.onnx's F.pad: the pads list (a size expression from Shape data) is reshaped to
    pairs, reversed with a step -1 Slice, transposed and flattened; every step stays a size
    expression, so the padded size is symbolic (pad W up to a multiple of 8)."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "three"], ["w"], axis=0),
             helper.make_node("Mod", ["w", "eight"], ["r"]),
             helper.make_node("Sub", ["eight", "r"], ["p"]),
             helper.make_node("Mod", ["p", "eight"], ["right"]),
             helper.make_node("Unsqueeze", ["right", "axis0"], ["right1"]),
             helper.make_node("Concat", ["zero1", "right1", "zeros6"], ["pairs_flat"], axis=0),
             helper.make_node("Reshape", ["pairs_flat", "pair_shape"], ["pairs"]),
             helper.make_node("Slice", ["pairs", "minus1", "big_neg", "axis0", "minus1"],
                              ["reversed"]),
             helper.make_node("Transpose", ["reversed"], ["t"], perm=[1, 0]),
             helper.make_node("Reshape", ["t", "minus1"], ["pads"]),
             helper.make_node("Pad", ["x", "pads"], ["y"])]
    inits = [numpy_helper.from_array(np.array(a, np.int64), name) for a, name in
             ((3, "three"), (8, "eight"), ([0], "axis0"), ([0], "zero1"), ([0] * 6, "zeros6"),
              ([-1, 2], "pair_shape"), ([-1], "minus1"), ([-2**62], "big_neg"))]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                         [1, 2, "h", "w"])],
                   [helper.make_empty_tensor_value_info("y")], inits)
    y_type = next(line for line in str(import_onnx(model)).splitlines() if "graph.pad" in line)
    assert "#graph.dims" in y_type  # a size expression, not shape data read in the run
    session, rng = _session(model), np.random.default_rng(9)
    for compiled in _compiled_cold_and_warm(model, tmp_path):
        for h, w in ((3, 5), (2, 8), (4, 17)):
            feeds = {"x": rng.standard_normal((1, 2, h, w)).astype(np.float32)}
            (got,) = compiled.run(None, feeds)
            assert got.shape[-1] % 8 == 0
            np.testing.assert_array_equal(got, session.run(None, feeds)[0])


def test_slice_bounds_computed_in_the_run(tmp_path):
    """torchvision's mask paste, `mask[y0 - by0 : y1 - by0]` from box data: starts and ends
    the run computes, negative ones counting from the end and past-the-end ones clamped
    as ONNX says, each normalized and bound as a run size (bounded by the dimension); int32
    bounds as torch writes them."""
    i32 = TensorProto.INT32
    model = _model([helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["y"]),
                    helper.make_node("Relu", ["y"], ["z"])],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["a", 6]),
                    helper.make_tensor_value_info("starts", i32, [2]),
                    helper.make_tensor_value_info("ends", i32, [2])],
                   [helper.make_empty_tensor_value_info("z")],
                   [numpy_helper.from_array(np.array([0, -1], np.int32), "axes")])
    assert "bounds = #graph.sizes" in str(import_onnx(model))
    session, rng = _session(model), np.random.default_rng(10)
    cases = [(5, [1, 2], [4, 5]), (5, [-2, -100], [100, -1]), (3, [2, 4], [1, 2]),
             (40, [0, 0], [2**31 - 1, 3]), (0, [0, 0], [1, 1]), (30, [3, 0], [29, 6])]
    for compiled in _compiled_cold_and_warm(model, tmp_path):
        for rows, starts, ends in cases:
            feeds = {"x": rng.standard_normal((rows, 6)).astype(np.float32),
                     "starts": np.array(starts, np.int32), "ends": np.array(ends, np.int32)}
            (want,) = session.run(None, feeds)
            np.testing.assert_array_equal(compiled.run(None, feeds)[0], want)
            np.testing.assert_array_equal(evaluate(import_onnx(model), feeds)[0], want)


def test_constant_of_shape_and_expand_of_shapes_computed_in_the_run(tmp_path):
    """Shapes from data: ConstantOfShape's, and Expand's (a 1 keeps x's dimension, as torch's
    `expand(-1, n)` writes it; anything but 1 or that dimension is an InvalidInputError)."""
    i64, f = TensorProto.INT64, TensorProto.FLOAT
    model = _model([helper.make_node("ConstantOfShape", ["s"], ["z"],
                                     value=helper.make_tensor("v", f, [1], [2.5])),
                    helper.make_node("Expand", ["x", "s2"], ["e"], name="expand"),
                    helper.make_node("Add", ["e", "e"], ["y"])],
                   [helper.make_tensor_value_info("x", f, [3, 1]),
                    helper.make_tensor_value_info("s", i64, [2]),
                    helper.make_tensor_value_info("s2", i64, [2])],
                   [helper.make_empty_tensor_value_info(o) for o in ("z", "y")])
    session = _session(model)
    x = np.arange(3, dtype=np.float32).reshape(3, 1)
    for compiled in _compiled_cold_and_warm(model, tmp_path):
        for s, s2 in (([2, 3], [3, 4]), ([0, 5], [1, 7]), ([4, 1], [3, 1]), ([1, 1], [1, 0])):
            feeds = {"x": x, "s": np.array(s, np.int64), "s2": np.array(s2, np.int64)}
            for got, want in zip(compiled.run(None, feeds), session.run(None, feeds),
                                 strict=True):
                np.testing.assert_array_equal(got, want)
        with pytest.raises(InvalidInputError, match="expand"):
            compiled.run(None, {"x": x, "s": np.array([1, 1], np.int64),
                                "s2": np.array([2, 4], np.int64)})


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_compress_by_a_run_time_condition(axis, tmp_path):
    """Compress by a condition the model is given: a Gather of NonZero's positions, whose
    count the run defines; a condition longer than the axis selects nothing past it (as
    onnxruntime), an all-false one nothing at all."""
    attrs = {} if axis is None else {"axis": axis}
    model = _model([helper.make_node("Compress", ["x", "c"], ["y"], **attrs)],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["a", "b"]),
                    helper.make_tensor_value_info("c", TensorProto.BOOL, ["n"])],
                   [helper.make_empty_tensor_value_info("y")])
    session, rng = _session(model), np.random.default_rng(11)
    cases = [((3, 5), 3), ((4, 4), 2), ((2, 40), 30), ((3, 5), 0), ((6, 2), 12)]
    for compiled in _compiled_cold_and_warm(model, tmp_path):
        for shape, n in cases:
            feeds = {"x": rng.standard_normal(shape).astype(np.float32),
                     "c": rng.random(n) < 0.5}
            (want,) = session.run(None, feeds)
            np.testing.assert_array_equal(compiled.run(None, feeds)[0], want)
            np.testing.assert_array_equal(evaluate(import_onnx(model), feeds)[0], want)


@pytest.mark.parametrize(("axis", "depth_type", "depth_shape"), [
    (-1, TensorProto.INT64, [1]), (0, TensorProto.INT64, []), (1, TensorProto.INT32, [1])])
def test_one_hot_of_a_run_time_depth(axis, depth_type, depth_shape, tmp_path):
    """OneHot whose depth is an input: a run symbol the graph.one_hot kernel takes as its
    depth (checked >= 0, then >= 1 as onnxruntime requires), negative indices counting from
    the depth and out-of-range ones all off, exact against onnxruntime and the evaluator; a
    depth of 0 or below is an InvalidInputError naming the node."""
    model = _model([helper.make_node("OneHot", ["i", "d", "v"], ["y"], axis=axis)],
                   [helper.make_tensor_value_info("i", TensorProto.INT64, ["a", 3]),
                    helper.make_tensor_value_info("d", depth_type, depth_shape),
                    helper.make_tensor_value_info("v", TensorProto.FLOAT, [2])],
                   [helper.make_empty_tensor_value_info("y")])
    session, rng = _session(model), np.random.default_rng(12)
    dtype = np.int64 if depth_type == TensorProto.INT64 else np.int32

    def feeds(rows: int, depth: int):
        return {"i": rng.integers(-depth - 1, depth + 1, (rows, 3)).astype(np.int64),
                "d": np.array(depth if depth_shape == [] else [depth], dtype),
                "v": np.array([-1.5, 2.0], np.float32)}

    for compiled in _compiled_cold_and_warm(model, tmp_path):
        for rows, depth in ((2, 5), (4, 3), (1, 1), (3, 7)):
            f = feeds(rows, depth)
            (want,) = session.run(None, f)
            np.testing.assert_array_equal(compiled.run(None, f)[0], want)
            np.testing.assert_array_equal(evaluate(import_onnx(model), f)[0], want)
        for bad in (-2, 0):
            with pytest.raises(InvalidInputError, match="OneHot"):
                compiled.run(None, feeds(2, 3) | {"d": np.array(
                    bad if depth_shape == [] else [bad], dtype)})


def test_one_hot_of_symbolic_indices_and_a_depth_from_shape_data():
    """A constant depth over indices of symbolic size, and a depth that is a size of
    another input (Shape data: an input symbol, guarded >= 1 at the start of the run)."""
    depth = numpy_helper.from_array(np.array([4], np.int64), "depth")
    values = numpy_helper.from_array(np.array([0.0, 1.0], np.float32), "v")
    nodes = [helper.make_node("OneHot", ["i", "depth", "v"], ["y"], axis=1),
             helper.make_node("Shape", ["like"], ["s"]),
             helper.make_node("OneHot", ["i", "s", "v"], ["z"], axis=-1)]
    model = _model(nodes, [helper.make_tensor_value_info("i", TensorProto.INT64, ["a", 3]),
                           helper.make_tensor_value_info("like", TensorProto.FLOAT, ["k"])],
                   [helper.make_empty_tensor_value_info(n) for n in ("y", "z")],
                   [depth, values])
    session, rng = _session(model), np.random.default_rng(14)
    compiled = onnxc.compile(model, cache_dir=False, quiet=True)
    for rows, k in ((2, 5), (5, 2), (1, 1)):
        feeds = {"i": rng.integers(-5, 5, (rows, 3)).astype(np.int64),
                 "like": np.zeros(k, np.float32)}
        for ours, theirs in zip(compiled.run(None, feeds), session.run(None, feeds),
                                strict=True):
            np.testing.assert_array_equal(ours, theirs)
    with pytest.raises(InvalidInputError, match="OneHot"):
        compiled.run(None, {"i": np.zeros((2, 3), np.int64), "like": np.zeros(0, np.float32)})


@pytest.mark.parametrize("keep_sorted", [1, 0])
@pytest.mark.parametrize("dtype", [TensorProto.FLOAT, TensorProto.INT64])
def test_unique_of_run_time_data(keep_sorted, dtype, tmp_path):
    """Unique's four outputs (values, first indices, inverse indices, counts), sorted or in
    order of first occurrence, whose length the run defines: exact against onnxruntime at
    several sizes, an empty input too (frontend/onnx_ops_unique.py)."""
    model = _model([helper.make_node("Unique", ["x"], ["y", "i", "inv", "c"],
                                     sorted=keep_sorted)],
                   [helper.make_tensor_value_info("x", dtype, ["a", "b"])],
                   [helper.make_empty_tensor_value_info(n) for n in ("y", "i", "inv", "c")])
    session, rng = _session(model), np.random.default_rng(13)
    np_type = np.float32 if dtype == TensorProto.FLOAT else np.int64
    for compiled in _compiled_cold_and_warm(model, tmp_path):
        for shape, distinct in [((3, 5), 6), ((4, 4), 2), ((1, 1), 1), ((20, 30), 50),
                                ((0, 3), 1)]:
            feeds = {"x": rng.integers(-distinct, distinct, shape).astype(np_type)}
            want = session.run(None, feeds)
            for got in (compiled.run(None, feeds), evaluate(import_onnx(model), feeds)):
                for ours, theirs in zip(got, want, strict=True):
                    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("keep_sorted", [1, 0])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_unique_along_an_axis(axis, keep_sorted, tmp_path):
    """Unique sub-tensors along an axis: graph.lex_order sorts the slices (the first
    differing element decides, equal ones keep their order), a slice differing from the one
    before starts a group whose count the run defines; all four outputs exact against
    onnxruntime and the evaluator, an empty axis too."""
    model = _model([helper.make_node("Unique", ["x"], ["y", "i", "inv", "c"], axis=axis,
                                     sorted=keep_sorted)],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["a", "b", 2])],
                   [helper.make_empty_tensor_value_info(n) for n in ("y", "i", "inv", "c")])
    session, rng = _session(model), np.random.default_rng(15)
    for compiled in _compiled_cold_and_warm(model, tmp_path):
        for shape in [(5, 3, 2), (4, 4, 2), (1, 1, 2), (7, 2, 2), (0, 3, 2)]:
            feeds = {"x": rng.integers(0, 2, shape).astype(np.float32)}
            want = session.run(None, feeds)
            for got in (compiled.run(None, feeds), evaluate(import_onnx(model), feeds)):
                for ours, theirs in zip(got, want, strict=True):
                    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
                    np.testing.assert_array_equal(ours, theirs)


def test_unique_of_a_constant_folds():
    x = numpy_helper.from_array(np.array([[3, 1], [3, 1], [2, 5]], np.int64), "x")
    for attrs in ({"sorted": 0}, {"sorted": 0, "axis": 0}, {"axis": 1}):
        folded = _model([helper.make_node("Unique", ["x"], ["y", "i", "inv", "c"], **attrs)],
                        [], [helper.make_empty_tensor_value_info(n)
                             for n in ("y", "i", "inv", "c")], [x])
        want = _session(folded).run(None, {})
        for ours, theirs in zip(onnxc.compile(folded, cache_dir=False, quiet=True).run(None, {}),
                                want, strict=True):
            np.testing.assert_array_equal(ours, theirs)
