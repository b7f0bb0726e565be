"""If, Loop and Scan compiled to native code, against onnx.reference.ReferenceEvaluator.

Covers both If branches on a run-time condition (and an If with a constant condition,
which imports only the branch taken), a counted Loop with carried values, scan outputs and
outer-scope values, a Loop that a run-time condition ends (scf.while), a swap of carried
values (the state update must go through a temporary), a Loop nested in a Loop, Scan
forwards and backwards on other axes, opset 8's batched Scan, and a Gather inside a loop
body fed a bad index: the run stops with InvalidInputError naming the node, and the next
good run is correct. Every model is compiled twice: the second compile is a cache hit and
must behave the same. The numpy evaluator (behind verify-numerics and constant folding) is
checked on the same models.

Scan with other directions and axes, and Scan-8, are checked against onnxruntime: onnx's
reference evaluator implements only Scan-9+ on axis 0, forwards. The loops pass their
condition explicitly: onnx 1.23's reference evaluator runs no iteration of a Loop whose
condition input is omitted. Tolerance: rtol 1e-6, atol 1e-6 (f32 adds and multiplies in the
same order as numpy).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import onnxc
from onnxc.dialects import graph
from onnxc.errors import InvalidInputError, UnsupportedOpError
from onnxc.frontend.onnx_importer import import_onnx
from onnxc.passes.evaluator import evaluate
from tests.single_op import graph_model

F32, I64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
RTOL = ATOL = 1e-6
OPSET = 17


def _vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def _model(nodes, inputs, outputs, initializers=(), check=True):
    m = graph_model(nodes, inputs, outputs, initializers=list(initializers), opset=OPSET)
    if check:
        onnx.checker.check_model(m, full_check=True)
    return m


def _check(model, feeds: dict, compiled=None, reference: str = "onnx"):
    """Compile (cold, then warm from the cache) and compare every output with onnx's
    reference evaluator (or onnxruntime, for what the evaluator does not implement)."""
    if reference == "onnx":
        expected = ReferenceEvaluator(model).run(None, feeds)
    else:
        import onnxruntime as ort

        session = ort.InferenceSession(model.SerializeToString(),
                                       providers=["CPUExecutionProvider"])
        expected = session.run(None, feeds)
    if compiled is None:  # the numpy evaluator runs the regions too (verify-numerics uses it)
        for g, e in zip(evaluate(import_onnx(model), feeds), expected):
            np.testing.assert_allclose(g, e, rtol=RTOL, atol=ATOL)
    runs = [compiled] if compiled is not None else [onnxc.compile(model), onnxc.compile(model)]
    for c in runs:
        got = c(*feeds.values())
        got = got if isinstance(got, list | tuple) else [got]
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=RTOL, atol=ATOL)
    return runs


def _branch(name, value):
    const = helper.make_node("Constant", [], [f"{name}_c"],
                             value=helper.make_tensor(f"{name}_t", F32, [3], value))
    mul = helper.make_node("Mul", ["x", f"{name}_c"], [f"{name}_out"])
    return helper.make_graph([const, mul], name, [], [_vi(f"{name}_out", F32, [3])])


def test_if_runs_the_branch_the_condition_picks():
    node = helper.make_node("If", ["cond"], ["y"], then_branch=_branch("then", [1, 2, 3]),
                            else_branch=_branch("else", [-1, -2, -3]))
    m = _model([node], [_vi("cond", BOOL, []), _vi("x", F32, [3])], [_vi("y", F32, [3])])
    x = np.array([0.5, 1.5, -2.0], np.float32)
    cold, warm = _check(m, {"cond": np.array(True), "x": x})
    assert warm.from_cache
    for c in (cold, warm):
        _check(m, {"cond": np.array(False), "x": x}, compiled=c)


def test_if_with_a_constant_condition_imports_only_the_branch_taken():
    cond = helper.make_tensor("cond", BOOL, [], [False])
    node = helper.make_node("If", ["cond"], ["y"], then_branch=_branch("then", [1, 2, 3]),
                            else_branch=_branch("else", [-1, -2, -3]))
    m = _model([node], [_vi("x", F32, [3])], [_vi("y", F32, [3])], [cond])
    module = import_onnx(m)
    assert not [o for o in module.walk() if isinstance(o, graph.IfOp)]
    _check(m, {"x": np.array([0.5, 1.5, -2.0], np.float32)})


def test_if_branches_read_a_conv_result_laid_out_nhwc():
    """The conv's result is NHWC (assign-layout); the branches read it plain."""
    from onnx import numpy_helper

    then = helper.make_graph([helper.make_node("Relu", ["c"], ["t"])], "then", [],
                             [_vi("t", F32, [1, 8, 6, 6])])
    other = helper.make_graph([helper.make_node("Sigmoid", ["c"], ["e"])], "else", [],
                              [_vi("e", F32, [1, 8, 6, 6])])
    w = (np.random.default_rng(0).standard_normal((8, 3, 3, 3)) * 0.1).astype(np.float32)
    m = _model([helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                helper.make_node("If", ["cond"], ["y"], then_branch=then, else_branch=other)],
               [_vi("cond", BOOL, []), _vi("x", F32, [1, 3, 6, 6])], [_vi("y", F32, [1, 8, 6, 6])],
               [numpy_helper.from_array(w, "w")])
    x = np.random.default_rng(1).standard_normal((1, 3, 6, 6)).astype(np.float32)
    cold, warm = _check(m, {"cond": np.array(True), "x": x})
    for c in (cold, warm):
        _check(m, {"cond": np.array(False), "x": x}, compiled=c)


def _accumulate_body(extra_nodes=(), extra_outputs=()):
    """body(i, cond, acc): acc + x[i] * w (x, w and axis0 from the outer scope); scans acc
    and [i] (a rank-0 scan output the reference evaluator stacks as [N, 1])."""
    nodes = [
        helper.make_node("Gather", ["x", "i"], ["row"], axis=0),
        helper.make_node("Mul", ["row", "w"], ["scaled"]),
        helper.make_node("Add", ["acc", "scaled"], ["acc_next"]),
        helper.make_node("Identity", ["cond"], ["cond_next"]),
        helper.make_node("Identity", ["acc_next"], ["acc_scan"]),
        helper.make_node("Unsqueeze", ["i", "axis0"], ["i_scan"]),
        *extra_nodes,
    ]
    return helper.make_graph(
        nodes, "body", [_vi("i", I64, []), _vi("cond", BOOL, []), _vi("acc", F32, [4])],
        [_vi("cond_next", BOOL, []), _vi("acc_next", F32, [4]), _vi("acc_scan", F32, [4]),
         _vi("i_scan", I64, [1]), *extra_outputs])


def test_counted_loop_with_scan_outputs_and_outer_values():
    trips = helper.make_tensor("trips", I64, [], [5])
    w = helper.make_tensor("w", F32, [4], [0.5, -1.0, 2.0, 0.25])
    node = helper.make_node("Loop", ["trips", "yes", "acc0"], ["acc", "accs", "iters"],
                            body=_accumulate_body())
    m = _model([node], [_vi("acc0", F32, [4]), _vi("x", F32, [5, 4])],
               [_vi("acc", F32, [4]), _vi("accs", F32, [5, 4]), _vi("iters", I64, [5, 1])],
               [trips, w, helper.make_tensor("yes", BOOL, [], [True]),
                helper.make_tensor("axis0", I64, [1], [0])])
    loops = [o for o in import_onnx(m).walk() if isinstance(o, graph.LoopOp)]
    assert [o.iteration_count() for o in loops] == [5]
    rng = np.random.default_rng(0)
    _check(m, {"acc0": rng.standard_normal(4).astype(np.float32),
               "x": rng.standard_normal((5, 4)).astype(np.float32)})


def _while_model():
    """Doubles v until its sum exceeds `limit` or 20 trips: ends on a run-time condition."""
    body = helper.make_graph([
        helper.make_node("Add", ["v", "v"], ["v_next"]),
        helper.make_node("ReduceSum", ["v_next"], ["total"], keepdims=0),
        helper.make_node("Less", ["total", "limit"], ["cond_next"]),
        helper.make_node("Add", ["n", "one"], ["n_next"]),
    ], "body", [_vi("i", I64, []), _vi("cond", BOOL, []), _vi("v", F32, [3]),
                _vi("n", I64, [])],
        [_vi("cond_next", BOOL, []), _vi("v_next", F32, [3]), _vi("n_next", I64, [])])
    node = helper.make_node("Loop", ["trips", "go", "v0", "zero"], ["v", "n"], body=body)
    return _model(
        [node], [_vi("v0", F32, [3]), _vi("limit", F32, []), _vi("go", BOOL, [])],
        [_vi("v", F32, [3]), _vi("n", I64, [])],
        [helper.make_tensor("trips", I64, [], [20]), helper.make_tensor("zero", I64, [], [0]),
         helper.make_tensor("one", I64, [], [1])])


@pytest.mark.parametrize("limit, go", [(100.0, True), (1e30, True), (-1.0, True), (5.0, False)])
def test_loop_ended_by_a_run_time_condition(limit, go):
    m = _while_model()
    loops = [o for o in import_onnx(m).walk() if isinstance(o, graph.LoopOp)]
    assert [o.iteration_count() for o in loops] == [None]
    _check(m, {"v0": np.array([1.0, 2.0, 0.5], np.float32), "limit": np.array(limit, np.float32),
               "go": np.array(go)})


def test_loop_swapping_carried_values():
    body = helper.make_graph([
        helper.make_node("Identity", ["cond"], ["cond_next"]),
        helper.make_node("Identity", ["b"], ["a_next"]),
        helper.make_node("Add", ["a", "b"], ["b_next"]),
    ], "body", [_vi("i", I64, []), _vi("cond", BOOL, []), _vi("a", F32, [2]), _vi("b", F32, [2])],
        [_vi("cond_next", BOOL, []), _vi("a_next", F32, [2]), _vi("b_next", F32, [2])])
    node = helper.make_node("Loop", ["trips", "yes", "a0", "b0"], ["a", "b"], body=body)
    m = _model([node], [_vi("a0", F32, [2]), _vi("b0", F32, [2])],
               [_vi("a", F32, [2]), _vi("b", F32, [2])],
               [helper.make_tensor("trips", I64, [], [7]), helper.make_tensor("yes", BOOL, [], [True])])
    _check(m, {"a0": np.array([0.0, 1.0], np.float32), "b0": np.array([1.0, 1.0], np.float32)})


def test_loop_nested_in_a_loop():
    inner = helper.make_graph([
        helper.make_node("Identity", ["c2"], ["c2_next"]),
        helper.make_node("Cast", ["j"], ["jf"], to=F32),
        helper.make_node("Add", ["s", "jf"], ["s_mid"]),
        helper.make_node("Mul", ["s_mid", "scale"], ["s_next"]),
    ], "inner", [_vi("j", I64, []), _vi("c2", BOOL, []), _vi("s", F32, [2])],
        [_vi("c2_next", BOOL, []), _vi("s_next", F32, [2])])
    outer = helper.make_graph([
        helper.make_node("Identity", ["c"], ["c_next"]),
        helper.make_node("Loop", ["three", "yes", "t"], ["t_inner"], body=inner),
        helper.make_node("Cast", ["i"], ["if"], to=F32),
        helper.make_node("Sub", ["t_inner", "if"], ["t_next"]),
        helper.make_node("Identity", ["t_next"], ["t_scan"]),
    ], "outer", [_vi("i", I64, []), _vi("c", BOOL, []), _vi("t", F32, [2])],
        [_vi("c_next", BOOL, []), _vi("t_next", F32, [2]), _vi("t_scan", F32, [2])])
    node = helper.make_node("Loop", ["four", "yes", "t0"], ["t", "ts"], body=outer)
    m = _model([node], [_vi("t0", F32, [2]), _vi("scale", F32, [2])],
               [_vi("t", F32, [2]), _vi("ts", F32, [4, 2])],
               [helper.make_tensor("four", I64, [], [4]), helper.make_tensor("three", I64, [], [3]),
                helper.make_tensor("yes", BOOL, [], [True])])
    _check(m, {"t0": np.array([1.0, -1.0], np.float32), "scale": np.array([0.5, 1.5], np.float32)})


@pytest.mark.parametrize("in_dir, out_dir, in_axis, out_axis", [
    (0, 0, 0, 0), (1, 0, 1, 0), (0, 1, 1, 1), (1, 1, -1, -2)])
def test_scan_directions_and_axes(in_dir, out_dir, in_axis, out_axis):
    body = helper.make_graph([
        helper.make_node("Add", ["s", "x_t"], ["s_next"]),
        helper.make_node("Mul", ["s_next", "x_t"], ["y_t"]),
    ], "body", [_vi("s", F32, [3]), _vi("x_t", F32, [3])],
        [_vi("s_next", F32, [3]), _vi("y_t", F32, [3])])
    node = helper.make_node("Scan", ["s0", "x"], ["s", "y"], body=body, num_scan_inputs=1,
                            scan_input_directions=[in_dir], scan_output_directions=[out_dir],
                            scan_input_axes=[in_axis], scan_output_axes=[out_axis])
    x_shape = [4, 3] if in_axis % 2 == 0 else [3, 4]
    y_shape = [4, 3] if out_axis % 2 == 0 else [3, 4]
    m = _model([node], [_vi("s0", F32, [3]), _vi("x", F32, x_shape)],
               [_vi("s", F32, [3]), _vi("y", F32, y_shape)])
    rng = np.random.default_rng(1)
    _check(m, {"s0": rng.standard_normal(3).astype(np.float32),
               "x": rng.standard_normal(x_shape).astype(np.float32)}, reference="onnxruntime")


def test_bad_index_inside_a_loop_stops_the_run_and_names_the_node():
    body = helper.make_graph([
        helper.make_node("Identity", ["cond"], ["cond_next"]),
        helper.make_node("Gather", ["table", "picks"], ["row"], axis=0, name="pick_rows"),
        helper.make_node("ReduceSum", ["row"], ["part"], keepdims=0),
        helper.make_node("Add", ["acc", "part"], ["acc_next"]),
    ], "body", [_vi("i", I64, []), _vi("cond", BOOL, []), _vi("acc", F32, [])],
        [_vi("cond_next", BOOL, []), _vi("acc_next", F32, [])])
    node = helper.make_node("Loop", ["trips", "yes", "zero"], ["acc"], body=body)
    m = _model([node], [_vi("table", F32, [4, 2]), _vi("picks", I64, [3])], [_vi("acc", F32, [])],
               [helper.make_tensor("trips", I64, [], [3]), helper.make_tensor("zero", F32, [], [0]),
                helper.make_tensor("yes", BOOL, [], [True])])
    table = np.arange(8, dtype=np.float32).reshape(4, 2)
    for compiled in (onnxc.compile(m), onnxc.compile(m)):
        with pytest.raises(InvalidInputError, match="pick_rows"):
            compiled(table, np.array([0, 9, 1], np.int64))
        _check(m, {"table": table, "picks": np.array([3, -1, 0], np.int64)}, compiled=compiled)


def test_loop_carried_value_changing_shape_is_refused():
    body = helper.make_graph([
        helper.make_node("Identity", ["cond"], ["cond_next"]),
        helper.make_node("Concat", ["v", "v"], ["v_next"], axis=0),
    ], "body", [_vi("i", I64, []), _vi("cond", BOOL, []), _vi("v", F32, None)],
        [_vi("cond_next", BOOL, []), _vi("v_next", F32, None)])
    node = helper.make_node("Loop", ["trips", "", "v0"], ["v"], body=body, name="grow")
    m = _model([node], [_vi("v0", F32, [2])], [_vi("v", F32, None)],
               [helper.make_tensor("trips", I64, [], [3])], check=False)
    with pytest.raises(UnsupportedOpError, match="grow.*changes from"):
        onnxc.compile(m)


def _batched_scan(lens):
    """Scan-8 (opset 8): a leading batch axis on every input, scanned along axis 1."""
    body = helper.make_graph([
        helper.make_node("Add", ["s", "x_t"], ["s_next"]),
        helper.make_node("Mul", ["s_next", "x_t"], ["y_t"]),
    ], "body", [_vi("s", F32, [3]), _vi("x_t", F32, [3])],
        [_vi("s_next", F32, [3]), _vi("y_t", F32, [3])])
    node = helper.make_node("Scan", ["lens" if lens is not None else "", "s0", "x"], ["s", "y"],
                            body=body, num_scan_inputs=1, directions=[1])
    inits = [helper.make_tensor("lens", I64, [2], lens)] if lens is not None else []
    g = helper.make_graph([node], "scan8", [_vi("s0", F32, [2, 3]), _vi("x", F32, [2, 4, 3])],
                          [_vi("s", F32, [2, 3]), _vi("y", F32, [2, 4, 3])], initializer=inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 8)], ir_version=4)


@pytest.mark.parametrize("lens", [None, [4, 4]])
def test_batched_scan_of_opset_8(lens):
    rng = np.random.default_rng(2)
    _check(_batched_scan(lens), {"s0": rng.standard_normal((2, 3)).astype(np.float32),
                                 "x": rng.standard_normal((2, 4, 3)).astype(np.float32)},
           reference="onnxruntime")


def test_batched_scan_with_shorter_sequences_is_refused():
    with pytest.raises(UnsupportedOpError, match="sequence_lens shorter"):
        onnxc.compile(_batched_scan([4, 2]))
