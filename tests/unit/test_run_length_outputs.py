"""Outputs whose length only the run decides: the scan outputs of a while loop with a
`trip_symbol` (a data-dependent stop), returned by the model.

The caller allocates such outputs with a capacity of rows, the entry writes the loop's count
back into its `dims` buffer, and a count past the capacity re-runs with enough rows
(runtime/symbolic_shapes.py). Checked here, cold and warm (loaded from a disk cache): the
rows and the final carried value at counts below, at and past the first capacity (a re-run
that must leave no trace in the outputs), against a Python loop of the same semantics
(exact: doubling f32 values); the capacity kept after a re-run; kernels computing on such a
value; `out=` refused; and what is not supported (such a loop inside another), named.
"""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.utils.exceptions import VerifyException

from onnxc.errors import InvalidArgumentError, InvalidInputError
from onnxc.runtime.symbolic_shapes import INITIAL_CAPACITY
from tests.ir_helpers import compile_graph, compile_graph_cold_and_warm, parse_graph

ROWS = 'tensor<?x4xf32, #graph.dims<["n"]>>'


def _doubling(returned: str = "%rows, %final", result_types: str = f"{ROWS}, tensor<4xf32>",
              after: str = "", loop_props: str = '{trip_symbol = "n"}') -> str:
    """Doubles a 4-vector until its sum reaches `limit` (at most 1000 times), collecting
    every vector it started an iteration with."""
    return f"""func.func @main(%x: tensor<4xf32>, %limit: tensor<f32>) -> ({result_types}) {{
  %max = graph.constant {{value = dense<1000> : tensor<i64>}} : tensor<i64>
  %go = graph.constant {{value = dense<true> : tensor<i1>}} : tensor<i1>
  %final, %rows = graph.loop(%max, %go, %x) {{
  ^bb0(%i: tensor<i64>, %c: tensor<i1>, %a: tensor<4xf32>):
    %b = graph.mul_scalar(%a) {{scalar = 2.0 : f64}} : (tensor<4xf32>) -> tensor<4xf32>
    %s = graph.reduce_sum(%b) {{axes = array<i64: 0>, keepdims = 0 : i64}} : (tensor<4xf32>) -> tensor<f32>
    %more = graph.less(%s, %limit) : (tensor<f32>, tensor<f32>) -> tensor<i1>
    graph.yield %more, %b, %a : tensor<i1>, tensor<4xf32>, tensor<4xf32>
  }} {loop_props} : (tensor<i64>, tensor<i1>, tensor<4xf32>) -> (tensor<4xf32>, {ROWS})
{after}  func.return {returned} : {result_types}
}}
"""


def _expected(x: np.ndarray, limit: float) -> tuple[np.ndarray, np.ndarray]:
    rows, a = [], x
    while True:
        b = a * np.float32(2)
        rows.append(a)
        a = b
        if not b.sum() < np.float32(limit):
            return np.array(rows), a


X = np.array([0.1, 0.2, 0.3, 0.4], np.float32)
LIMITS = (1.0, 10.0, 3e3, 1e6, 1e30, 100.0)
"""1, 4, 15, 20, 100 and 7 rows: below, at and past the first capacity (16), then less."""


def test_rows_of_run_time_length_cold_and_warm(tmp_path) -> None:
    for model in compile_graph_cold_and_warm(_doubling(), tmp_path):
        assert model.symbolic is not None and model.symbolic.run_symbols == ("n",)
        assert [tuple(o.shape) for o in model.outputs] == [("n", 4), (4,)]
        counts = set()
        for limit in LIMITS:
            rows, final = model(X, np.array(limit, np.float32))
            want_rows, want_final = _expected(X, limit)
            np.testing.assert_array_equal(rows, want_rows)
            np.testing.assert_array_equal(final, want_final)
            counts.add(len(rows))
        assert min(counts) == 1 and max(counts) > INITIAL_CAPACITY
        assert model._capacity == {"n": 100}  # the most any run needed, kept


def test_the_numpy_evaluator_runs_such_loops() -> None:
    """The evaluator (constant folding, verify-numerics, the import tests' reference) sizes
    every other symbol from the inputs; the run-length count only the run can give."""
    from onnxc.passes.evaluator import evaluate

    for limit in LIMITS:
        rows, final = evaluate(parse_graph(_doubling()), [X, np.array(limit, np.float32)])
        want_rows, want_final = _expected(X, limit)
        np.testing.assert_array_equal(rows, want_rows)
        np.testing.assert_array_equal(final, want_final)


def test_out_is_refused_for_outputs_of_run_time_length() -> None:
    model = compile_graph(_doubling())
    with pytest.raises(InvalidArgumentError, match="known only once it ran"):
        model.run(None, {"input_0": X, "input_1": np.array(1.0, np.float32)},
                  out=[np.empty((1, 4), np.float32), np.empty(4, np.float32)])


def test_kernels_compute_on_a_value_of_run_time_length(tmp_path) -> None:
    """A kernel after the loop reads the count the loop wrote (a run symbol) as any size."""
    after = (f"  %neg = graph.neg(%rows) : ({ROWS}) -> {ROWS}\n")
    for model in compile_graph_cold_and_warm(_doubling(returned="%neg, %final", after=after),
                                             tmp_path):
        for limit in LIMITS:
            neg, final = model(X, np.array(limit, np.float32))
            want_rows, want_final = _expected(X, limit)
            np.testing.assert_array_equal(neg, -want_rows)
            np.testing.assert_array_equal(final, want_final)


def test_a_trip_symbol_needs_a_loop_of_unknown_count() -> None:
    text = _doubling(loop_props='{trip_symbol = "n", iterations = 3 : i64}')
    with pytest.raises(VerifyException, match="no trip_symbol"):
        parse_graph(text).verify()


def _onnx_collecting_loop(consumer: str | None):
    """Doubles `x` while its sum is below `limit`, collecting each value (a scan output);
    optionally passed through `consumer` (an op type) before it is returned."""
    from onnx import TensorProto, helper

    f = TensorProto.FLOAT
    body = helper.make_graph([
        helper.make_node("Add", ["a", "a"], ["b"]),
        helper.make_node("ReduceSum", ["b"], ["s"], keepdims=0),
        helper.make_node("Less", ["s", "limit"], ["more"]),
        helper.make_node("Identity", ["a"], ["row"]),
    ], "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                helper.make_tensor_value_info("a", f, [4])],
        [helper.make_tensor_value_info("more", TensorProto.BOOL, []),
         helper.make_tensor_value_info("b", f, [4]),
         helper.make_tensor_value_info("row", f, [4])])
    nodes = [helper.make_node("Loop", ["", "", "x"], ["final", "rows"], body=body,
                              name="collect")]
    if consumer:
        nodes.append(helper.make_node(consumer, ["rows"], ["y"], name="after"))
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", f, [4]),
                     helper.make_tensor_value_info("limit", f, [])],
        [helper.make_tensor_value_info("y" if consumer else "rows", f, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_an_onnx_loop_returning_what_it_collected(tmp_path) -> None:
    """Through onnxc.compile, cold and warm, against onnxruntime."""
    import onnxruntime as ort

    import onnxc

    model = _onnx_collecting_loop(None)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    cold = onnxc.compile(model, cache_dir=tmp_path)
    warm = onnxc.compile(model, cache_dir=tmp_path)
    assert warm.from_cache and cold.outputs[0].shape == ("collect_trips", 4)
    for limit in (1.0, 50.0, 1e9):
        feeds = {"x": X, "limit": np.array(limit, np.float32)}
        (want,) = session.run(None, feeds)
        for model_ in (cold, warm):
            np.testing.assert_array_equal(model_(*feeds.values())[0], want)


def test_an_onnx_model_computing_on_what_a_loop_collected(tmp_path) -> None:
    """A Relu and a reduction over the collected rows, against onnxruntime."""
    import onnxruntime as ort

    import onnxc

    for consumer in ("Relu", "ReduceSum"):
        model = _onnx_collecting_loop(consumer)
        session = ort.InferenceSession(model.SerializeToString(),
                                       providers=["CPUExecutionProvider"])
        compiled = onnxc.compile(model, cache_dir=tmp_path, quiet=True)
        for limit in (1.0, 50.0, 1e9):
            feeds = {"x": X, "limit": np.array(limit, np.float32)}
            np.testing.assert_allclose(compiled.run(None, feeds)[0],
                                       session.run(None, feeds)[0], rtol=1e-6)


def test_a_failed_check_inside_the_loop_leaves_the_next_run_right() -> None:
    """The entry writes the count over the capacity in its `dims` buffer even when a check in
    the loop stopped it; the next run must bind the capacity again (it would read the stale
    count as its rows: stores clamped into too few rows, or past the buffer's end)."""
    text = _doubling(after="").replace(
        "%x: tensor<4xf32>, %limit: tensor<f32>",
        "%x: tensor<4xf32>, %limit: tensor<f32>, %table: tensor<4xf32>, %k: tensor<i64>",
    ).replace(
        "    %b = graph.mul_scalar(%a)",
        "    %at = graph.add(%i, %k) : (tensor<i64>, tensor<i64>) -> tensor<i64>\n"
        "    %g = graph.gather(%table, %at) {axis = 0 : i64} : (tensor<4xf32>, tensor<i64>)"
        " -> tensor<f32>\n"
        "    %z = graph.mul_scalar(%g) {scalar = 0.0 : f64} : (tensor<f32>) -> tensor<f32>\n"
        "    %a0 = graph.add(%a, %z) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>\n"
        "    %b = graph.mul_scalar(%a0)")
    model = compile_graph(text)
    table, limit = np.zeros(4, np.float32), np.array(10.0, np.float32)
    want_rows, want_final = _expected(X, 10.0)  # 4 rows: indices 0..3 are valid with k = 0
    rows, final = model(X, limit, table, np.array(0, np.int64))
    np.testing.assert_array_equal(rows, want_rows)
    with pytest.raises(InvalidInputError, match="out of range"):
        model(X, limit, table, np.array(3, np.int64))  # index 4 at the second iteration
    rows, final = model(X, limit, table, np.array(0, np.int64))
    np.testing.assert_array_equal(rows, want_rows)
    np.testing.assert_array_equal(final, want_final)
