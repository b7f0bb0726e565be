"""Sequences and optionals as compile-time values (frontend/onnx_ops_sequence.py), against
onnx.reference.ReferenceEvaluator: the sequence ops on known lists, and a counted Loop that
appends one tensor per iteration to the sequence it carries (torch's `outs.append(h)` then
`torch.stack(outs)`), stacked as a scan output. What needs a sequence at run time (a graph
output, a loop of unknown length, any other op on a sequence) is an UnsupportedOpError.

Tolerance: rtol 1e-6 / atol 1e-6 (the same f32 ops).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import onnxc
from onnxc.dialects import graph
from onnxc.errors import UnsupportedOpError
from onnxc.frontend.onnx_importer import import_onnx
from tests.single_op import graph_model

F32, I64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
RTOL = ATOL = 1e-6


def _vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def _model(nodes, inputs, outputs, initializers=(), check=True):
    m = graph_model(nodes, inputs, outputs, initializers=list(initializers), opset=17)
    if check:
        onnx.checker.check_model(m, full_check=True)
    return m


def _check(model, feeds):
    expected = ReferenceEvaluator(model).run(None, feeds)
    for compiled in (onnxc.compile(model), onnxc.compile(model)):  # cold, then a cache hit
        for got, want in zip(compiled(*feeds.values()), expected, strict=True):
            np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def test_list_operations_on_a_known_sequence():
    ints = [helper.make_tensor(n, I64, [], [v]) for n, v in (("zero", 0), ("minus1", -1),
                                                           ("one", 1))]
    m = _model([
        helper.make_node("SequenceConstruct", ["a", "b"], ["s0"]),
        helper.make_node("SequenceInsert", ["s0", "c", "zero"], ["s1"]),   # [c, a, b]
        helper.make_node("SequenceInsert", ["s1", "a"], ["s2"]),           # [c, a, b, a]
        helper.make_node("SequenceErase", ["s2", "one"], ["s3"]),          # [c, b, a]
        helper.make_node("SequenceAt", ["s3", "minus1"], ["last"]),
        helper.make_node("SequenceLength", ["s3"], ["n"]),
        helper.make_node("ConcatFromSequence", ["s3"], ["joined"], axis=1),
        helper.make_node("ConcatFromSequence", ["s3"], ["stacked"], axis=-1, new_axis=1),
    ], [_vi(n, F32, [2, 3]) for n in "abc"],
        [_vi("last", F32, [2, 3]), _vi("n", I64, []), _vi("joined", F32, [2, 9]),
         _vi("stacked", F32, [2, 3, 3])], ints)
    assert not [o for o in import_onnx(m).walk() if o.name.startswith("graph.sequence")]
    rng = np.random.default_rng(0)
    _check(m, {n: rng.standard_normal((2, 3)).astype(np.float32) for n in "abc"})


@pytest.mark.parametrize("keepdims", [0, 1])
def test_split_to_sequence_then_concat(keepdims):
    m = _model([
        helper.make_node("SplitToSequence", ["x"], ["parts"], axis=1, keepdims=keepdims),
        helper.make_node("ConcatFromSequence", ["parts"], ["y"], axis=0, new_axis=1 - keepdims),
    ], [_vi("x", F32, [2, 4])], [_vi("y", F32, [4, 2] if not keepdims else [8, 1])])
    _check(m, {"x": np.arange(8, dtype=np.float32).reshape(2, 4)})


def _appending_loop(start_items: int, axis: int, new_axis: int, out_shape):
    """h = tanh(h * w + x[i]) for 4 steps, each h appended to a carried sequence that starts
    with `start_items` copies of h0; the sequence concatenated (or stacked) at the end."""
    body = helper.make_graph([
        helper.make_node("Identity", ["cond"], ["cond_next"]),
        helper.make_node("Gather", ["x", "i"], ["row"], axis=0),
        helper.make_node("Mul", ["h", "w"], ["hw"]),
        helper.make_node("Add", ["hw", "row"], ["pre"]),
        helper.make_node("Tanh", ["pre"], ["h_next"]),
        helper.make_node("SequenceInsert", ["seq", "h_next"], ["seq_next"]),
    ], "body", [_vi("i", I64, []), _vi("cond", BOOL, []), _vi("h", F32, [1, 3]),
                onnx.helper.make_tensor_sequence_value_info("seq", F32, [1, 3])],
        [_vi("cond_next", BOOL, []), _vi("h_next", F32, [1, 3]),
         onnx.helper.make_tensor_sequence_value_info("seq_next", F32, [1, 3])])
    start = (helper.make_node("SequenceConstruct", ["h0"] * start_items, ["seq0"])
             if start_items else helper.make_node("SequenceEmpty", [], ["seq0"], dtype=F32))
    return _model([
        start,
        helper.make_node("Loop", ["four", "yes", "h0", "seq0"], ["h", "seq"], body=body),
        helper.make_node("ConcatFromSequence", ["seq"], ["all"], axis=axis, new_axis=new_axis),
    ], [_vi("x", F32, [4, 3]), _vi("h0", F32, [1, 3]), _vi("w", F32, [3])],
        [_vi("h", F32, [1, 3]), _vi("all", F32, out_shape)],
        [helper.make_tensor("four", I64, [], [4]), helper.make_tensor("yes", BOOL, [], [True])],
        check=False)


@pytest.mark.parametrize("start_items, axis, new_axis, out_shape", [
    (0, 0, 1, [4, 1, 3]),   # torch.stack(outs, 0)
    (0, 1, 1, [1, 4, 3]),   # torch.stack(outs, 1)
    (0, 1, 0, [1, 12]),     # torch.cat(outs, 1)
    (0, 0, 0, [4, 3]),      # torch.cat(outs, 0)
    (1, 0, 0, [5, 3]),      # a sequence that starts with one item
])
def test_loop_appending_to_a_carried_sequence(start_items, axis, new_axis, out_shape):
    m = _appending_loop(start_items, axis, new_axis, out_shape)
    loops = [o for o in import_onnx(m).walk() if isinstance(o, graph.LoopOp)]
    assert len(loops) == 1 and len(loops[0].scan_outputs) == 1  # the appended tensor, stacked
    rng = np.random.default_rng(1)
    _check(m, {"x": rng.standard_normal((4, 3)).astype(np.float32),
               "h0": rng.standard_normal((1, 3)).astype(np.float32),
               "w": rng.standard_normal(3).astype(np.float32)})


def test_what_needs_a_run_time_sequence_is_refused():
    out = _model([helper.make_node("SequenceConstruct", ["a", "a"], ["s"])],
                 [_vi("a", F32, [2])], [onnx.helper.make_tensor_sequence_value_info("s", F32, [2])])
    with pytest.raises(UnsupportedOpError, match="graph output.*sequence"):
        import_onnx(out)  # onnxc.compile runs it per signature (onnxc.container_io)
    a = np.array([1.0, -2.0], np.float32)
    (pair,) = onnxc.compile(out).run(None, {"a": a})
    assert len(pair) == 2 and all(np.array_equal(t, a) for t in pair)
    other_op = _model([helper.make_node("SequenceConstruct", ["a", "a"], ["s"]),
                       helper.make_node("Identity", ["s"], ["t"]),
                       helper.make_node("Relu", ["t"], ["y"], name="relu_of_list")],
                      [_vi("a", F32, [2])], [_vi("y", F32, [2])], check=False)
    with pytest.raises(UnsupportedOpError, match="relu_of_list.*is a sequence"):
        onnxc.compile(other_op)


def test_a_sequence_appended_to_by_a_loop_of_run_time_count():
    """The loop runs while the `go` input says so: the stacked sequence has as many rows as
    it ran (an output of run-time length). With no iteration the result is empty, where
    onnxruntime and the reference refuse to concatenate an empty sequence."""
    m = _appending_loop(0, 0, 1, [4, 1, 3])
    m.graph.node[1].input[1] = "go"
    m.graph.input.append(_vi("go", BOOL, []))
    rng = np.random.default_rng(1)
    feeds = {"x": rng.standard_normal((4, 3)).astype(np.float32),
             "h0": rng.standard_normal((1, 3)).astype(np.float32),
             "w": rng.standard_normal(3).astype(np.float32), "go": np.array(True)}
    _check(m, feeds)
    for compiled in (onnxc.compile(m), onnxc.compile(m)):
        assert compiled.outputs[1].shape == ("Loop_1_trips", 1, 3)  # node 1, unnamed
        h, stacked = compiled(*{**feeds, "go": np.array(False)}.values())
        np.testing.assert_array_equal(h, feeds["h0"])
        assert stacked.shape == (0, 1, 3)


def test_optionals_are_known_at_compile_time():
    empty_type = helper.make_tensor_type_proto(F32, [2])
    m = _model([
        helper.make_node("Optional", ["a"], ["full"]),
        helper.make_node("Optional", [], ["empty"], type=empty_type),
        helper.make_node("OptionalHasElement", ["full"], ["has_full"]),
        helper.make_node("OptionalHasElement", ["empty"], ["has_empty"]),
        helper.make_node("OptionalGetElement", ["full"], ["inner"]),
        helper.make_node("Relu", ["inner"], ["y"]),
    ], [_vi("a", F32, [2])], [_vi("has_full", BOOL, []), _vi("has_empty", BOOL, []),
                              _vi("y", F32, [2])])
    a = np.array([-1.0, 2.0], np.float32)
    for compiled in (onnxc.compile(m), onnxc.compile(m)):  # (onnx 1.23's reference evaluator
        has_full, has_empty, y = compiled(a)              # unwraps optionals into lists)
        assert bool(has_full) and not bool(has_empty)
        np.testing.assert_array_equal(y, np.maximum(a, 0))
    empty = _model([helper.make_node("Optional", [], ["e"], type=empty_type),
                    helper.make_node("OptionalGetElement", ["e"], ["y"], name="unwrap")],
                   [], [_vi("y", F32, [2])], check=False)
    with pytest.raises(onnxc.errors.ModelLoadError, match="unwrap.*empty"):
        onnxc.compile(empty)


def test_backend_binds_a_scalar_input_as_a_scalar():
    """onnxc.backend compiles with shape-deciding inputs bound as constants; a scalar split
    (a chunk size) must stay a scalar, not become the 1-D list of one part size."""
    import onnxc.backend

    m = _model([
        helper.make_node("SplitToSequence", ["x", "split"], ["parts"], axis=1),
        helper.make_node("ConcatFromSequence", ["parts"], ["y"], axis=0),
    ], [_vi("x", F32, [2, 6]), _vi("split", I64, [])], [_vi("y", F32, [6, 2])])
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    (y,) = onnxc.backend.prepare(m).run([x, np.array(2, np.int64)])
    np.testing.assert_array_equal(y, np.concatenate(np.split(x, 3, axis=1), axis=0))


def test_a_loop_carried_optional_is_refused():
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond"], ["cond_next"]),
         helper.make_node("Identity", ["opt"], ["opt_next"])],
        "body", [_vi("i", I64, []), _vi("cond", BOOL, []),
                 onnx.helper.make_tensor_value_info("opt", F32, [2])],
        [_vi("cond_next", BOOL, []), onnx.helper.make_tensor_value_info("opt_next", F32, [2])])
    m = _model([helper.make_node("Optional", ["a"], ["o0"]),
                helper.make_node("Loop", ["two", "yes", "o0"], ["o"], body=body, name="carry"),
                helper.make_node("OptionalGetElement", ["o"], ["y"])],
               [_vi("a", F32, [2])], [_vi("y", F32, [2])],
               [helper.make_tensor("two", I64, [], [2]), helper.make_tensor("yes", BOOL, [], [True])],
               check=False)
    with pytest.raises(UnsupportedOpError, match="carry.*loop-carried optional"):
        onnxc.compile(m)
