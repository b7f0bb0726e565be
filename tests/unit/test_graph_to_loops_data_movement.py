"""Numerics of the data-movement kernels and views of convert-graph-to-loops against ONNX.

Same method as test_graph_to_loops_elementwise.py (interpreted one-op functions, compared
with onnx.reference.ReferenceEvaluator at rtol=1e-5, atol=1e-6); constant inputs of the
ONNX node (slice bounds, pads, axes, shapes) are properties of the graph op.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator
from xdsl.dialects.builtin import DenseArrayBase, FloatAttr, IntegerAttr, StringAttr, f32, i64

from onnxc.dialects import graph
from onnxc.lowering.graph_to_loops.interpreter import run_single_op

RTOL, ATOL = 1e-5, 1e-6
rng = np.random.default_rng(2)


def rand(*shape):
    return rng.uniform(-1, 1, shape).astype(np.float32)


def ints(*values):
    return DenseArrayBase.from_list(i64, values)


def i(v):
    return IntegerAttr(v, 64)


def i64s(*values):
    return np.array(values, np.int64)


def check(node, feeds, op_type, props=None, operands=None):
    expected = ReferenceEvaluator(node).run(
        None, {name: a for name, a in zip(node.input, feeds) if name}
    )
    args = feeds if operands is None else [feeds[k] for k in operands]
    actual = run_single_op(op_type, args, [(e.shape, e.dtype) for e in expected], props)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert a.dtype == e.dtype and a.shape == e.shape
        np.testing.assert_allclose(a, e, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("shape, perm", [
    ((2, 3), (1, 0)),
    ((2, 3, 4), (0, 2, 1)),
    ((1, 2, 3, 4), (0, 2, 3, 1)),
    ((2, 3, 4, 2), (3, 1, 0, 2)),
    ((2, 1, 3), (2, 1, 0)),
])
def test_transpose(shape, perm):
    check(helper.make_node("Transpose", ["x"], ["y"], perm=perm), [rand(*shape)],
          graph.TransposeOp, {"perm": ints(*perm)})


def test_transpose_int64():
    x = rng.integers(0, 100, (3, 2)).astype(np.int64)
    check(helper.make_node("Transpose", ["x"], ["y"], perm=(1, 0)), [x], graph.TransposeOp,
          {"perm": ints(1, 0)})


@pytest.mark.parametrize("shapes, axis", [
    ([(2, 3), (2, 1), (2, 2)], 1),
    ([(1, 3), (2, 3)], 0),
    ([(2, 2, 3), (2, 1, 3)], -2),
    ([(4,)], 0),
    ([(2, 16), (2, 8), (2, 3)], 1),  # runs of whole vectors, copied as vectors
    ([(3, 2, 24), (3, 2, 9)], -1),
])
def test_concat(shapes, axis):
    feeds = [rand(*s) for s in shapes]
    names = [f"x{k}" for k in range(len(feeds))]
    check(helper.make_node("Concat", names, ["y"], axis=axis), feeds, graph.ConcatOp,
          {"axis": i(axis)})


def test_concat_int64_shapes():
    feeds = [i64s(1, 3), i64s(-1), i64s(7, 8)]
    check(helper.make_node("Concat", ["a", "b", "c"], ["y"], axis=0), feeds, graph.ConcatOp,
          {"axis": i(0)})


@pytest.mark.parametrize("shape, sizes, axis", [
    ((2, 6), (2, 4), 1),
    ((5, 2), (1, 3, 1), 0),
    ((2, 3, 4), (1, 3), -1),
    ((2, 27), (16, 8, 3), 1),
])
def test_split(shape, sizes, axis):
    outputs = [f"y{k}" for k in range(len(sizes))]
    node = helper.make_node("Split", ["x", "s"], outputs, axis=axis)
    check(node, [rand(*shape), i64s(*sizes)], graph.SplitOp, {"axis": i(axis)}, operands=[0])


SLICES = [
    # shape, starts, ends, axes, steps
    ((5, 4), (1, 0), (4, 3), (0, 1), (1, 1)),
    ((5, 4), (-1,), (-6,), (0,), (-1,)),
    ((5, 4), (4, 1), (0, 100), (0, 1), (-2, 2)),
    ((6,), (-100,), (100,), (0,), (3,)),
    ((3, 4, 5), (1, -1), (3, 0), (-1, 1), (1, -1)),
    ((4, 3), (10,), (-10,), (0,), (-1,)),
    ((4, 3), (2,), (2,), (0,), (1,)),
]


@pytest.mark.parametrize("shape, starts, ends, axes, steps", SLICES)
def test_slice(shape, starts, ends, axes, steps):
    feeds = [rand(*shape), i64s(*starts), i64s(*ends), i64s(*axes), i64s(*steps)]
    node = helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"])
    props = {"starts": ints(*starts), "ends": ints(*ends), "axes": ints(*axes),
             "steps": ints(*steps)}
    check(node, feeds, graph.SliceOp, props, operands=[0])


@pytest.mark.parametrize("data_shape, indices, axis", [
    ((5, 3), np.array([0, 4, -1, 2], np.int64), 0),
    ((2, 5, 3), np.array([[1, -2], [0, 4]], np.int64), 1),
    ((2, 4), np.array([3, -4, 0], np.int32), -1),
    ((3, 2), np.array(-1, np.int64), 0),
])
def test_gather(data_shape, indices, axis):
    check(helper.make_node("Gather", ["x", "i"], ["y"], axis=axis), [rand(*data_shape), indices],
          graph.GatherOp, {"axis": i(axis)})


def test_gather_int64_data():
    data = i64s(1, 3, 224, 224)
    check(helper.make_node("Gather", ["x", "i"], ["y"], axis=0), [data, np.array(0, np.int64)],
          graph.GatherOp, {"axis": i(0)})


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
@pytest.mark.parametrize("shape, pads", [
    ((3, 4), (1, 2, 2, 1)),
    ((1, 2, 4, 4), (0, 0, 2, 1, 0, 0, 1, 3)),
    ((5,), (3, 0)),
])
def test_pad(mode, shape, pads):
    value = 0.5
    node = helper.make_node("Pad", ["x", "p", "v"], ["y"], mode=mode)
    feeds = [rand(*shape), i64s(*pads), np.array(value, np.float32)]
    props = {"pads": ints(*pads), "mode": StringAttr(mode), "value": FloatAttr(value, f32)}
    check(node, feeds, graph.PadOp, props, operands=[0])


def test_pad_reflect_wider_than_the_input():
    # numpy reflects repeatedly; ONNX's reference is np.pad itself.
    x = rand(3, 2)
    props = {"pads": ints(5, 3, 4, 2), "mode": StringAttr("reflect"),
             "value": FloatAttr(0.0, f32)}
    (y,) = run_single_op(graph.PadOp, [x], [((12, 7), np.float32)], props)
    np.testing.assert_array_equal(y, np.pad(x, ((5, 4), (3, 2)), mode="reflect"))


def test_pad_negative_crops():
    # numpy (and so ONNX's reference) rejects negative pads: build the expectation by hand.
    x = rand(4, 5)
    props = {"pads": ints(-1, 1, 0, -2), "mode": StringAttr("constant"),
             "value": FloatAttr(0.0, f32)}
    (y,) = run_single_op(graph.PadOp, [x], [((3, 4), np.float32)], props)
    np.testing.assert_array_equal(y, np.pad(x, ((0, 0), (1, 0)))[1:, :-2])


def test_reshape_like_ops_copy_into_outputs():
    x = rand(2, 3, 1)
    check(helper.make_node("Reshape", ["x", "s"], ["y"]), [x, i64s(3, 2)], graph.ReshapeOp,
          operands=[0])
    check(helper.make_node("Flatten", ["x"], ["y"], axis=1), [x], graph.FlattenOp,
          {"axis": i(1)})
    check(helper.make_node("Squeeze", ["x", "a"], ["y"]), [x, i64s(-1)], graph.SqueezeOp,
          {"axes": ints(-1)}, operands=[0])
    check(helper.make_node("Unsqueeze", ["x", "a"], ["y"]), [x, i64s(0, 4)], graph.UnsqueezeOp,
          {"axes": ints(0, 4)}, operands=[0])
    check(helper.make_node("Identity", ["x"], ["y"]), [x], graph.IdentityOp)


def test_shape_is_a_constant():
    x = rand(2, 3, 4)
    for start, end in ((0, 3), (1, 3), (-2, 100), (0, -1)):
        node = helper.make_node("Shape", ["x"], ["y"], start=start, end=end)
        check(node, [x], graph.ShapeOp, {"start": i(start), "end": i(end)})


def test_a_compiled_channel_concat_and_split_match_onnx():
    """Concat / split of f32 channel blocks, as densenet and shufflenet make them: whole
    vectors and a scalar tail in one parallel loop over the rows, compiled natively."""
    import onnx

    import onnxc

    x = [helper.make_tensor_value_info(f"x{k}", onnx.TensorProto.FLOAT, [2, 3, 5, c])
         for k, c in enumerate((16, 8, 3))]
    y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)
    z = [helper.make_tensor_value_info(f"z{k}", onnx.TensorProto.FLOAT, None) for k in range(2)]
    split = helper.make_tensor("sizes", onnx.TensorProto.INT64, [2], [19, 8])
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Concat", ["x0", "x1", "x2"], ["y"], axis=3),
         helper.make_node("Split", ["y", "sizes"], ["z0", "z1"], axis=3)],
        "concat_split", x, [y, *z], [split]), opset_imports=[helper.make_opsetid("", 17)])
    feeds = {f"x{k}": rand(2, 3, 5, c) for k, c in enumerate((16, 8, 3))}
    expected = ReferenceEvaluator(model).run(None, feeds)
    for got, want in zip(onnxc.compile(model, cache_dir=False).run(None, feeds), expected,
                         strict=True):
        np.testing.assert_array_equal(got, want)
