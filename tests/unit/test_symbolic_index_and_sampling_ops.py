"""Ops whose kernels compute positions (indices, sample points, scatter targets) over
symbolic sizes, compiled once: ArgMax/ArgMin, MaxPool with indices, MaxUnpool, GridSample,
ReverseSequence, TensorScatter, Col2Im and DeformConv (this was test_symbolic_kernels_more.py).

Each model declares `dim_param`s, compiles once and runs at three or more sizes, odd and
small ones (1) included, against onnxruntime: indices and moved data exactly, float
arithmetic at rtol 1e-4 / atol 1e-5 (float32 sums in another order). ConvTranspose and
QLinearConv are in test_symbolic_conv.py.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxc
from tests.single_op import graph_model

node = helper.make_node
RTOL, ATOL = 1e-4, 1e-5


def model(nodes, inputs, outputs, inits=(), opset: int = 21) -> onnx.ModelProto:
    """`inputs` / `outputs`: (name, element type, shape or None) triples; IR version 9."""
    return graph_model(nodes, {n: (t, s) for n, t, s in inputs},
                       {n: (t, s) for n, t, s in outputs},
                       initializers={t.name: numpy_helper.to_array(t) for t in inits},
                       opset=opset, ir_version=9)


def check_runs(m: onnx.ModelProto, feeds: list[dict[str, np.ndarray]], exact: bool = False,
               rtol: float = RTOL, atol: float = ATOL) -> None:
    """One compile of `m` runs every feed as onnxruntime does."""
    compiled = onnxc.compile(m, cache_dir=False, quiet=True)
    session = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    for feed in feeds:
        ours, theirs = compiled.run(None, feed), session.run(None, feed)
        shapes = {k: v.shape for k, v in feed.items()}
        for got, want in zip(ours, theirs, strict=True):
            assert got.shape == want.shape and got.dtype == want.dtype, shapes
            if exact:
                np.testing.assert_array_equal(got, want, err_msg=str(shapes))
            else:
                np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=str(shapes))


def _floats(rng, shape, ties: bool = False) -> np.ndarray:
    """Standard normal values, or small integers (many ties) with `ties`."""
    if ties:
        return rng.integers(-2, 3, shape).astype(np.float32)
    return rng.standard_normal(shape).astype(np.float32)


# --------------------------------------------------------------------------- ArgMax / ArgMin

ARG_CASES = [  # op, axis, keepdims, select_last_index, element
    ("ArgMax", -1, 1, 0, TensorProto.FLOAT),
    ("ArgMax", -1, 0, 1, TensorProto.FLOAT),
    ("ArgMin", 1, 1, 1, TensorProto.FLOAT),
    ("ArgMin", 0, 0, 0, TensorProto.FLOAT),
    ("ArgMax", 1, 0, 1, TensorProto.INT32),
    ("ArgMin", 2, 1, 0, TensorProto.INT32),
]


@pytest.mark.parametrize("op, axis, keepdims, last, element", ARG_CASES)
def test_arg_reductions_over_symbolic_sizes(op, axis, keepdims, last, element):
    """The axis itself, the rows before it and the columns after it are run-time sizes;
    many ties, so the first / last index rule is tested."""
    m = model([node(op, ["x"], ["y"], axis=axis, keepdims=keepdims, select_last_index=last)],
              [("x", element, ["N", "C", "L"])], [("y", TensorProto.INT64, None)])
    rng = np.random.default_rng(0)
    dtype = helper.tensor_dtype_to_np_dtype(element)
    feeds = [{"x": _floats(rng, s, ties=True).astype(dtype)}
             for s in [(2, 3, 5), (1, 1, 1), (3, 7, 33), (1, 5, 2)]]
    check_runs(m, feeds, exact=True)


def test_an_empty_symbolic_axis_is_refused_in_the_run():
    m = model([node("ArgMax", ["x"], ["y"], axis=1)], [("x", TensorProto.FLOAT, [2, "L"])],
              [("y", TensorProto.INT64, None)])
    compiled = onnxc.compile(m, cache_dir=False, quiet=True)
    np.testing.assert_array_equal(compiled(np.array([[0, 1], [3, 2]], np.float32))[0],
                                  [[1], [0]])
    with pytest.raises(onnxc.errors.InvalidInputError):
        compiled(np.zeros((2, 0), np.float32))


# --------------------------------------------------------------------------- MaxPool indices

POOLS = {  # MaxPool attributes
    "2x2": {"kernel_shape": [2, 2], "strides": [2, 2]},
    "3x3_pads_ceil": {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1],
                      "ceil_mode": 1},
    "dilated_column_major": {"kernel_shape": [2, 3], "dilations": [2, 1], "pads": [1, 0, 0, 1],
                             "storage_order": 1},
}


@pytest.mark.parametrize("name", sorted(POOLS))
def test_max_pool_indices_over_symbolic_sizes(name):
    m = model([node("MaxPool", ["x"], ["y", "i"], **POOLS[name])],
              [("x", TensorProto.FLOAT, ["N", 3, "H", "W"])],
              [("y", TensorProto.FLOAT, None), ("i", TensorProto.INT64, None)], opset=12)
    rng = np.random.default_rng(1)
    feeds = [{"x": _floats(rng, s)} for s in [(1, 3, 8, 8), (2, 3, 7, 5), (1, 3, 4, 13)]]
    check_runs(m, feeds, exact=True)


def test_segnet_unpooling_over_symbolic_sizes():
    """SegNet's decoder: MaxUnpool puts each pooled maximum back where MaxPool found it
    (even sizes: an odd one's indices address a larger plane than the unpooled one)."""
    m = model([node("MaxPool", ["x"], ["p", "i"], kernel_shape=[2, 2], strides=[2, 2]),
               node("Relu", ["p"], ["r"]),
               node("MaxUnpool", ["r", "i"], ["y"], kernel_shape=[2, 2], strides=[2, 2])],
              [("x", TensorProto.FLOAT, ["N", 4, "H", "W"])], [("y", TensorProto.FLOAT, None)],
              opset=12)
    rng = np.random.default_rng(2)
    feeds = [{"x": _floats(rng, s)} for s in [(1, 4, 8, 8), (2, 4, 10, 6), (1, 4, 2, 4)]]
    check_runs(m, feeds, exact=True)


# --------------------------------------------------------------------------- GridSample

GRID_MODES = [  # mode, padding_mode, align_corners
    ("linear", "zeros", 0), ("linear", "border", 1), ("nearest", "reflection", 0),
    ("cubic", "reflection", 1), ("cubic", "zeros", 0), ("nearest", "border", 1),
]


@pytest.mark.parametrize("mode, padding, align", GRID_MODES)
def test_grid_sample_over_symbolic_sizes(mode, padding, align):
    """Input and grid sizes are run-time values (a flow warp, a spatial transformer); the
    grid reaches past the border so that every padding mode folds or clamps, and one-pixel
    axes (the reflection's empty span with align_corners) are in the runs."""
    m = model([node("GridSample", ["x", "g"], ["y"], mode=mode, padding_mode=padding,
                    align_corners=align)],
              [("x", TensorProto.FLOAT, ["N", 3, "H", "W"]),
               ("g", TensorProto.FLOAT, ["N", "h", "w", 2])], [("y", TensorProto.FLOAT, None)])
    rng = np.random.default_rng(3)
    feeds = [{"x": _floats(rng, (n, 3, h, w)),
              "g": rng.uniform(-1.3, 1.3, (n, gh, gw, 2)).astype(np.float32)}
             for n, h, w, gh, gw in [(1, 5, 6, 4, 3), (2, 1, 1, 2, 5), (1, 9, 2, 7, 1),
                                     (1, 4, 1, 3, 3)]]
    check_runs(m, feeds)


def test_grid_sample_of_an_empty_symbolic_axis_is_refused_in_the_run():
    m = model([node("GridSample", ["x", "g"], ["y"])],
              [("x", TensorProto.FLOAT, [1, 1, "H", 4]), ("g", TensorProto.FLOAT, [1, 2, 2, 2])],
              [("y", TensorProto.FLOAT, None)])
    compiled = onnxc.compile(m, cache_dir=False, quiet=True)
    with pytest.raises(onnxc.errors.InvalidInputError, match="GridSample"):
        compiled(np.zeros((1, 1, 0, 4), np.float32), np.zeros((1, 2, 2, 2), np.float32))


# --------------------------------------------------------------------------- ReverseSequence


@pytest.mark.parametrize("batch_axis, time_axis", [(1, 0), (0, 1)])
def test_reverse_sequence_over_symbolic_sizes(batch_axis, time_axis):
    shape = ["T", "B", "F"] if time_axis == 0 else ["B", "T", "F"]
    m = model([node("ReverseSequence", ["x", "lengths"], ["y"], batch_axis=batch_axis,
                    time_axis=time_axis)],
              [("x", TensorProto.FLOAT, shape), ("lengths", TensorProto.INT64, ["B"])],
              [("y", TensorProto.FLOAT, None)])
    rng = np.random.default_rng(4)
    feeds = []
    for t, b, f in [(5, 3, 2), (1, 1, 1), (9, 4, 3), (2, 6, 5)]:
        dims = {"T": t, "B": b, "F": f}
        feeds.append({"x": _floats(rng, [dims[d] for d in shape]),
                      "lengths": rng.integers(1, t + 1, b).astype(np.int64)})
    check_runs(m, feeds, exact=True)


def test_reverse_sequence_lengths_past_the_run_steps_are_refused():
    m = model([node("ReverseSequence", ["x", "lengths"], ["y"])],
              [("x", TensorProto.FLOAT, ["T", 2]), ("lengths", TensorProto.INT64, [2])],
              [("y", TensorProto.FLOAT, None)])
    compiled = onnxc.compile(m, cache_dir=False, quiet=True)
    with pytest.raises(onnxc.errors.InvalidInputError, match="ReverseSequence"):
        compiled(np.zeros((3, 2), np.float32), np.array([2, 4], np.int64))


# --------------------------------------------------------------------------- TensorScatter


@pytest.mark.parametrize("mode", ["linear", "circular"])
def test_tensor_scatter_over_symbolic_sizes(mode):
    """A KV cache of run-time length and batch updated by a run-time number of steps."""
    m = model([node("TensorScatter", ["past", "update", "at"], ["y"], axis=2, mode=mode)],
              [("past", TensorProto.FLOAT, ["B", 2, "L", 4]),
               ("update", TensorProto.FLOAT, ["B", 2, "S", 4]),
               ("at", TensorProto.INT64, ["B"])], [("y", TensorProto.FLOAT, None)], opset=24)
    rng = np.random.default_rng(5)
    feeds = []
    for b, length, steps in [(2, 8, 3), (1, 1, 1), (3, 13, 5), (1, 5, 0)]:
        top = length if mode == "circular" else length - steps + 1
        feeds.append({"past": _floats(rng, (b, 2, length, 4)),
                      "update": _floats(rng, (b, 2, steps, 4)),
                      "at": rng.integers(0, top, b).astype(np.int64)})
    check_runs(m, feeds, exact=True)


def test_tensor_scatter_update_longer_than_the_cache_is_refused_in_the_run():
    m = model([node("TensorScatter", ["past", "update"], ["y"], axis=1)],
              [("past", TensorProto.FLOAT, [1, "L"]), ("update", TensorProto.FLOAT, [1, "S"])],
              [("y", TensorProto.FLOAT, None)], opset=24)
    compiled = onnxc.compile(m, cache_dir=False, quiet=True)
    np.testing.assert_array_equal(
        compiled(np.zeros((1, 3), np.float32), np.ones((1, 2), np.float32))[0], [[1, 1, 0]])
    with pytest.raises(onnxc.errors.InvalidInputError, match="TensorScatter"):
        compiled(np.zeros((1, 2), np.float32), np.ones((1, 3), np.float32))


# --------------------------------------------------------------------------- DeformConv

DEFORM = {  # attributes, mask, bias
    "same_mask_bias": ({"pads": [1, 1, 1, 1]}, True, True),
    "strided_grouped": ({"strides": [2, 1], "pads": [1, 1, 1, 0], "dilations": [1, 2],
                         "group": 2, "offset_group": 2}, False, False),
}


@pytest.mark.parametrize("name", sorted(DEFORM))
def test_deform_conv_over_symbolic_sizes(name):
    """The image and the offsets (the conv's output size) have run-time sizes; offsets of
    a few pixels sample outside the image too (zeros there)."""
    attrs, mask, bias = DEFORM[name]
    g = attrs.get("offset_group", 1)
    rng = np.random.default_rng(6)
    inits = [numpy_helper.from_array(_floats(rng, (6, 4 // attrs.get("group", 1), 3, 3)), "w")]
    names = ["x", "w", "offset"]
    inputs = [("x", TensorProto.FLOAT, ["N", 4, "H", "W"]),
              ("offset", TensorProto.FLOAT, ["N", g * 18, "h", "w"])]
    if bias:
        inits.append(numpy_helper.from_array(_floats(rng, (6,)), "b"))
    names.append("b" if bias else "")
    if mask:
        inputs.append(("mask", TensorProto.FLOAT, ["N", g * 9, "h", "w"]))
        names.append("mask")
    m = model([node("DeformConv", names, ["y"], **attrs)], inputs,
              [("y", TensorProto.FLOAT, None)], inits, opset=19)
    s, p, d = attrs.get("strides", [1, 1]), attrs.get("pads", [0] * 4), attrs.get("dilations",
                                                                                  [1, 1])
    feeds = []
    for n, h, w in [(1, 6, 7), (2, 3, 5), (1, 9, 4)]:
        oh = (h + p[0] + p[2] - (2 * d[0] + 1)) // s[0] + 1
        ow = (w + p[1] + p[3] - (2 * d[1] + 1)) // s[1] + 1
        feed = {"x": _floats(rng, (n, 4, h, w)),
                "offset": (_floats(rng, (n, g * 18, oh, ow)) * 1.5).astype(np.float32)}
        if mask:
            feed["mask"] = rng.uniform(0, 1, (n, g * 9, oh, ow)).astype(np.float32)
        feeds.append(feed)
    check_runs(m, feeds)


def test_max_unpool_into_a_fixed_output_shape():
    """output_shape given: the run's unpooled shape must fit in it (a run-time guard), and
    sits at its start as onnx.reference places it (onnxruntime reads the indices as flat
    positions in the larger shape: the static kernel's rule, so onnx.reference checks)."""
    from onnx.reference import ReferenceEvaluator

    m = model([node("MaxPool", ["x"], ["p", "i"], kernel_shape=[2, 2], strides=[2, 2]),
               node("MaxUnpool", ["p", "i", "shape"], ["y"], kernel_shape=[2, 2],
                    strides=[2, 2])],
              [("x", TensorProto.FLOAT, [1, 2, "H", "W"])], [("y", TensorProto.FLOAT, None)],
              [numpy_helper.from_array(np.array([1, 2, 8, 9], np.int64), "shape")], opset=12)
    rng = np.random.default_rng(7)
    compiled = onnxc.compile(m, cache_dir=False, quiet=True)
    reference = ReferenceEvaluator(m)
    for shape in [(1, 2, 8, 8), (1, 2, 4, 6), (1, 2, 2, 2)]:
        x = _floats(rng, shape)
        np.testing.assert_array_equal(compiled(x)[0], reference.run(None, {"x": x})[0])
    with pytest.raises(onnxc.errors.InvalidInputError, match="MaxUnpool"):
        compiled(np.zeros((1, 2, 10, 4), np.float32))


# --------------------------------------------------------------------------- Col2Im


def test_col2im_over_a_symbolic_batch():
    m = model([node("Col2Im", ["x", "image", "block"], ["y"], strides=[2, 1], pads=[1, 0, 1, 1],
                    dilations=[1, 2])],
              [("x", TensorProto.FLOAT, ["N", 12, 15])], [("y", TensorProto.FLOAT, None)],
              [numpy_helper.from_array(np.array([9, 6], np.int64), "image"),
               numpy_helper.from_array(np.array([2, 3], np.int64), "block")], opset=18)
    rng = np.random.default_rng(8)
    check_runs(m, [{"x": _floats(rng, (n, 12, 15))} for n in (1, 3, 2)])
