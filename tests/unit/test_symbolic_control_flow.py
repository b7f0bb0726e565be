"""graph.if / graph.loop whose values have symbolic dimensions (graph_to_loops/control_flow.py).

Each case is graph IR written once with symbolic types, compiled once, stored in a disk cache
and loaded back (cold, then warm), and run at several sizes (1 included) against numpy doing
the same computation; the If also as an ONNX model through `onnxc.compile`, against
onnx.reference. What is checked beyond the numbers: result buffers of run-time size, the
dynamic copies of yields and carried values (a swap through temporaries), a counted loop over
a size polynomial with scan outputs whose rows are symbolic too, a check inside a symbolic
body, and that plan-memory keeps every dynamic buffer a loop body uses live for the whole
loop (a slot reused while still needed on the next iteration would be a silent wrong answer).
Tolerance: rtol 1e-5 / atol 1e-6 for f32 sums (numpy adds in another order), exact otherwise.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import onnxc
from onnxc.errors import InvalidInputError
from tests.ir_helpers import compile_graph, compile_graph_cold_and_warm

rng = np.random.default_rng(11)
TOL = {"rtol": 1e-5, "atol": 1e-6}


def t(shape, element="f32") -> str:
    """A tensor type; a string dimension is a size polynomial (`?` with #graph.dims)."""
    symbols = [d for d in shape if isinstance(d, str)]
    dims = "".join(f"{'?' if isinstance(d, str) else d}x" for d in shape)
    encoding = ", #graph.dims<[" + ", ".join(f'"{s}"' for s in symbols) + "]>" if symbols else ""
    return f"tensor<{dims}{element}{encoding}>"


def cold_and_warm(ir: str, cache_dir, threads: int = 1):
    models = compile_graph_cold_and_warm(ir, cache_dir, threads)
    assert models[0].symbolic is not None
    return models


def check_runs(models, inputs, expected, exact=False) -> None:
    for model in models:
        got = model(*inputs)
        assert len(got) == len(expected)
        for g, w in zip(got, expected):
            assert g.shape == w.shape
            if exact:
                np.testing.assert_array_equal(g, w)
            else:
                np.testing.assert_allclose(g, w, **TOL)


def floats(*shape):
    return rng.standard_normal(shape).astype(np.float32)


# ------------------------------------------------------------------------------ graph.if

X, R = t(("n", 8)), t(("n",))
IF_IR = f"""func.func @main(%c: tensor<i1>, %x: {X}) -> ({X}, {R}) {{
  %r, %s = graph.if(%c) {{
    %a = graph.add(%x, %x) : ({X}, {X}) -> {X}
    %sa = graph.reduce_sum(%x) {{axes = array<i64: 1>, keepdims = 0 : i64}} : ({X}) -> {R}
    graph.yield %a, %sa : {X}, {R}
  }} else {{
    %b = graph.neg(%x) : ({X}) -> {X}
    %sb = graph.reduce_max(%b) {{axes = array<i64: 1>, keepdims = 0 : i64}} : ({X}) -> {R}
    graph.yield %x, %sb : {X}, {R}
  }} : (tensor<i1>) -> ({X}, {R})
  func.return %r, %s : {X}, {R}
}}
"""


def test_if_with_symbolic_results(tmp_path):
    """Results of run-time size; the else branch yields an outer value (a dynamic copy)."""
    models = cold_and_warm(IF_IR, tmp_path)
    for n in (1, 5, 33):
        x = floats(n, 8)
        check_runs(models, (np.array(True), x), (x + x, x.sum(axis=1)))
        check_runs(models, (np.array(False), x), (x, (-x).max(axis=1)), exact=True)


def _onnx_if_model():
    f = TensorProto.FLOAT
    then = helper.make_graph(
        [helper.make_node("Mul", ["x", "x"], ["a"])], "then", [],
        [helper.make_tensor_value_info("a", f, ["batch", "seq"])])
    other = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["b"])], "else", [],
        [helper.make_tensor_value_info("b", f, ["batch", "seq"])])
    graph = helper.make_graph(
        [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
         helper.make_node("Greater", ["s", "zero"], ["c"]),
         helper.make_node("If", ["c"], ["r"], then_branch=then, else_branch=other)],
        "g", [helper.make_tensor_value_info("x", f, ["batch", "seq"])],
        [helper.make_tensor_value_info("r", f, ["batch", "seq"])],
        [helper.make_tensor("zero", f, [], [0.0])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    return model


def test_onnx_if_with_symbolic_branches_cold_and_warm(tmp_path):
    model = _onnx_if_model()
    reference = ReferenceEvaluator(model)
    cold = onnxc.compile(model, cache_dir=tmp_path)
    warm = onnxc.compile(model, cache_dir=tmp_path)
    assert not cold.from_cache and warm.from_cache
    for shape in ((1, 1), (3, 7), (2, 40)):
        for sign in (1, -1):
            x = (sign * np.abs(floats(*shape))).astype(np.float32)
            (want,) = reference.run(None, {"x": x})
            for model_ in (cold, warm):
                np.testing.assert_array_equal(model_(x)[0], want)


# ------------------------------------------------------------------------------ while loop

S = "tensor<f32>"
WHILE_IR = f"""func.func @main(%trips: tensor<i64>, %go: tensor<i1>, %v0: {X}, %x: {X},
                               %limit: {S}) -> ({X}, {S}) {{
  %zero = graph.constant {{value = dense<0.0> : {S}}} : {S}
  %one = graph.constant {{value = dense<1.0> : {S}}} : {S}
  %v, %k = "graph.loop"(%trips, %go, %v0, %zero) ({{
  ^bb0(%i: tensor<i64>, %c: tensor<i1>, %vi: {X}, %ki: {S}):
    %v2 = graph.add(%vi, %x) : ({X}, {X}) -> {X}
    %sum = graph.reduce_sum(%v2) {{axes = array<i64: 0, 1>, keepdims = 0 : i64}} : ({X}) -> {S}
    %c2 = graph.less(%sum, %limit) : ({S}, {S}) -> tensor<i1>
    %k2 = graph.add(%ki, %one) : ({S}, {S}) -> {S}
    graph.yield %c2, %v2, %k2 : tensor<i1>, {X}, {S}
  }}) : (tensor<i64>, tensor<i1>, {X}, {S}) -> ({X}, {S})
  func.return %v, %k : {X}, {S}
}}
"""


def _while_reference(trips, go, v0, x, limit):
    v, k, i, cond = v0.copy(), 0, 0, go
    while i < trips and cond:
        v = v + x
        cond = v.sum() < limit
        k, i = k + 1, i + 1
    return v, np.float32(k)


def test_while_loop_carries_a_symbolic_value(tmp_path):
    """A data-dependent condition: the trip count depends on the size and the data."""
    models = cold_and_warm(WHILE_IR, tmp_path)
    for n in (1, 4, 23):
        v0, x = floats(n, 8), np.abs(floats(n, 8)) + np.float32(0.1)
        for trips, go, limit in ((100, True, 40.0), (3, True, 1e9), (5, False, 1e9),
                                 (100, True, -1e9)):
            args = (np.array(trips, np.int64), np.array(go), v0, x, np.array(limit, np.float32))
            want = _while_reference(trips, go, v0, x, np.float32(limit))
            check_runs(models, args, want)


# ------------------------------------------------------------------------------ counted loop

XS, YY = t(("seq", "n")), t(("seq", "seq"))
ROW, SLICE, SCAN = t(("n",)), t((1, "n")), t(("seq", 1, "n"))
SEQ_ROW, SCAN2 = t(("seq",)), t(("seq", "seq"))
COUNTED_IR = f"""func.func @main(%x: {XS}, %y: {YY}, %v0: {ROW}) -> ({ROW}, {SCAN}, {SCAN2},
                                                                {SEQ_ROW}) {{
  %m = graph.constant {{value = dense<1000> : tensor<i64>}} : tensor<i64>
  %true = graph.constant {{value = dense<true> : tensor<i1>}} : tensor<i1>
  %s, %ys, %zs, %ts = "graph.loop"(%m, %true, %v0) <{{iterations = #graph.dims<["seq"]>}}> ({{
  ^bb0(%i: tensor<i64>, %c: tensor<i1>, %acc: {ROW}):
    %xt = graph.gather(%x, %i) {{axis = 0 : i64}} : ({XS}, tensor<i64>) -> {ROW}
    %acc2 = graph.add(%acc, %xt) : ({ROW}, {ROW}) -> {ROW}
    %sl = graph.unsqueeze(%acc2) {{axes = array<i64: 0>}} : ({ROW}) -> {SLICE}
    %total = graph.reduce_sum(%acc2) {{axes = array<i64: 0>, keepdims = 0 : i64}} : ({ROW}) -> {S}
    %yt = graph.gather(%y, %i) {{axis = 0 : i64}} : ({YY}, tensor<i64>) -> {SEQ_ROW}
    %z = graph.mul(%yt, %total) : ({SEQ_ROW}, {S}) -> {SEQ_ROW}
    graph.yield %c, %acc2, %sl, %z, %total : tensor<i1>, {ROW}, {SLICE}, {SEQ_ROW}, {S}
  }}) : (tensor<i64>, tensor<i1>, {ROW}) -> ({ROW}, {SCAN}, {SCAN2}, {SEQ_ROW})
  func.return %s, %ys, %zs, %ts : {ROW}, {SCAN}, {SCAN2}, {SEQ_ROW}
}}
"""


@pytest.mark.parametrize("threads", [1, 2])
def test_counted_loop_over_a_symbol_with_symbolic_scans(threads, tmp_path):
    """`iterations = seq`: the scf.for runs `seq` times (not the trip count 1000); scan
    outputs [seq, 1, n] and [seq, seq] (rows of run-time size) and [seq] (scalar rows)."""
    models = cold_and_warm(COUNTED_IR, tmp_path, threads)
    for seq, n in ((1, 1), (1, 6), (4, 3), (9, 17)):
        x, y, v0 = floats(seq, n), floats(seq, seq), floats(n)
        sums = v0 + np.cumsum(x, axis=0, dtype=np.float64)
        scan2 = y * sums.sum(axis=1, keepdims=True)
        check_runs(models, (x, y, v0), (sums[-1], sums[:, None, :], scan2, sums.sum(axis=1)))


PA, PX = t(("past", "n")), t(("past+seq", "n"))
POLY_IR = f"""func.func @main(%a: {PA}, %b: {XS}, %v0: {ROW}) -> ({t(("past+seq", "n"))}) {{
  %x = graph.concat(%a, %b) {{axis = 0 : i64}} : ({PA}, {XS}) -> {PX}
  %m = graph.constant {{value = dense<1000> : tensor<i64>}} : tensor<i64>
  %true = graph.constant {{value = dense<true> : tensor<i1>}} : tensor<i1>
  %s, %ys = "graph.loop"(%m, %true, %v0) <{{iterations = #graph.dims<["past+seq"]>}}> ({{
  ^bb0(%i: tensor<i64>, %c: tensor<i1>, %acc: {ROW}):
    %xt = graph.gather(%x, %i) {{axis = 0 : i64}} : ({PX}, tensor<i64>) -> {ROW}
    %acc2 = graph.max(%acc, %xt) : ({ROW}, {ROW}) -> {ROW}
    graph.yield %c, %acc2, %acc2 : tensor<i1>, {ROW}, {ROW}
  }}) : (tensor<i64>, tensor<i1>, {ROW}) -> ({ROW}, {PX})
  func.return %ys : {PX}
}}
"""


def test_counted_loop_over_a_size_polynomial(tmp_path):
    """`iterations = past+seq`: the bound is arithmetic on two symbols (a running max)."""
    models = cold_and_warm(POLY_IR, tmp_path)
    for past, seq, n in ((1, 1, 1), (3, 1, 4), (2, 7, 9)):
        a, b, v0 = floats(past, n), floats(seq, n), floats(n)
        want = np.maximum.accumulate(np.concatenate([v0[None], a, b]), axis=0)[1:]
        check_runs(models, (a, b, v0), (want,), exact=True)


THREE_IR = f"""func.func @main(%v0: {ROW}) -> ({t((3, "n"))}) {{
  %m = graph.constant {{value = dense<3> : tensor<i64>}} : tensor<i64>
  %true = graph.constant {{value = dense<true> : tensor<i1>}} : tensor<i1>
  %s, %ys = "graph.loop"(%m, %true, %v0) <{{iterations = 3 : i64}}> ({{
  ^bb0(%i: tensor<i64>, %c: tensor<i1>, %acc: {ROW}):
    %acc2 = graph.add(%acc, %acc) : ({ROW}, {ROW}) -> {ROW}
    graph.yield %c, %acc2, %acc : tensor<i1>, {ROW}, {ROW}
  }}) : (tensor<i64>, tensor<i1>, {ROW}) -> ({ROW}, {t((3, "n"))})
  func.return %ys : {t((3, "n"))}
}}
"""


def test_counted_loop_of_a_static_count_with_symbolic_rows(tmp_path):
    """Three iterations, rows of `n` elements: the row count is a constant argument. The
    slice is the carried value as the iteration received it, stored before the update
    overwrites its buffer (static shapes too)."""
    models = cold_and_warm(THREE_IR, tmp_path)
    for n in (1, 10):
        v0 = floats(n)
        check_runs(models, (v0,), (np.stack([v0, 2 * v0, 4 * v0]),), exact=True)
    static = compile_graph(THREE_IR.replace(ROW, t((5,))).replace(t((3, "n")), t((3, 5))))
    v0 = floats(5)
    check_runs([static], (v0,), (np.stack([v0, 2 * v0, 4 * v0]),), exact=True)


GATHER_K_IR = f"""func.func @main(%x: {XS}, %k: tensor<i64>, %v0: {ROW}) -> ({ROW}, {SCAN}) {{
  %m = graph.constant {{value = dense<1000> : tensor<i64>}} : tensor<i64>
  %true = graph.constant {{value = dense<true> : tensor<i1>}} : tensor<i1>
  %s, %ys = "graph.loop"(%m, %true, %v0) <{{iterations = #graph.dims<["seq"]>}}> ({{
  ^bb0(%i: tensor<i64>, %c: tensor<i1>, %acc: {ROW}):
    %xk = graph.gather(%x, %k) {{axis = 0 : i64}} : ({XS}, tensor<i64>) -> {ROW}
    %acc2 = graph.add(%acc, %xk) : ({ROW}, {ROW}) -> {ROW}
    %sl = graph.unsqueeze(%acc2) {{axes = array<i64: 0>}} : ({ROW}) -> {SLICE}
    graph.yield %c, %acc2, %sl : tensor<i1>, {ROW}, {SLICE}
  }}) : (tensor<i64>, tensor<i1>, {ROW}) -> ({ROW}, {SCAN})
  func.return %s, %ys : {ROW}, {SCAN}
}}
"""


def test_a_check_inside_a_symbolic_body_refuses_and_recovers(tmp_path):
    """The index check of a gather inside the body compares with the run-time `seq` (a
    symbolic check kernel); a failure stops the loop and is reported, and the next run with
    a good index is right (the sticky cell is reset each run)."""
    models = cold_and_warm(GATHER_K_IR, tmp_path)
    for seq, n in ((1, 3), (5, 2)):
        x, v0 = floats(seq, n), floats(n)
        for model in models:
            with pytest.raises(InvalidInputError, match="xk"):
                model(x, np.array(seq, np.int64), v0)
        for k in (0, seq - 1, -seq):
            steps = v0 + x[k] * np.arange(1, seq + 1, dtype=np.float32)[:, None]
            check_runs(models, (x, np.array(k, np.int64), v0), (steps[-1], steps[:, None, :]))


# ------------------------------------------------------------------------------ carried values

SWAP_IR = f"""func.func @main(%trips: tensor<i64>, %a0: {X}, %b0: {X}, %c0: {X}) -> ({X}, {X}, {X}) {{
  %true = graph.constant {{value = dense<true> : tensor<i1>}} : tensor<i1>
  %a, %b, %c = "graph.loop"(%trips, %true, %a0, %b0, %c0) ({{
  ^bb0(%i: tensor<i64>, %go: tensor<i1>, %ai: {X}, %bi: {X}, %ci: {X}):
    %c2 = graph.add(%ci, %ai) : ({X}, {X}) -> {X}
    graph.yield %go, %bi, %ai, %c2 : tensor<i1>, {X}, {X}, {X}
  }}) : (tensor<i64>, tensor<i1>, {X}, {X}, {X}) -> ({X}, {X}, {X})
  func.return %a, %b, %c : {X}, {X}, {X}
}}
"""


def test_swap_of_carried_symbolic_values(tmp_path):
    """(a, b, c) <- (b, a, c + a): both swapped values go through dynamic temporaries."""
    models = cold_and_warm(SWAP_IR, tmp_path)
    for n in (1, 6):
        a0, b0, c0 = floats(n, 8), floats(n, 8), floats(n, 8)
        for trips in (0, 1, 2, 5):
            a, b, c = a0, b0, c0
            for _ in range(trips):
                a, b, c = b, a, c + a
            check_runs(models, (np.array(trips, np.int64), a0, b0, c0), (a, b, c))


# ------------------------------------------------------------------------------ memory planning

TEMPS_IR = f"""func.func @main(%trips: tensor<i64>, %x: {X}, %a0: {X}, %b0: {X}) -> ({X}, {X}, {X}) {{
  %true = graph.constant {{value = dense<true> : tensor<i1>}} : tensor<i1>
  %u = graph.mul(%x, %x) : ({X}, {X}) -> {X}
  %a, %b = "graph.loop"(%trips, %true, %a0, %b0) ({{
  ^bb0(%i: tensor<i64>, %go: tensor<i1>, %ai: {X}, %bi: {X}):
    %t1 = graph.add(%ai, %bi) : ({X}, {X}) -> {X}
    %t2 = graph.mul(%t1, %u) : ({X}, {X}) -> {X}
    %t3 = graph.sub(%t2, %bi) : ({X}, {X}) -> {X}
    %t4 = graph.tanh(%t3) : ({X}) -> {X}
    %a2 = graph.add(%t4, %t1) : ({X}, {X}) -> {X}
    %b2 = graph.sub(%ai, %t4) : ({X}, {X}) -> {X}
    graph.yield %go, %a2, %b2 : tensor<i1>, {X}, {X}
  }}) : (tensor<i64>, tensor<i1>, {X}, {X}) -> ({X}, {X})
  %after = graph.add(%a, %u) : ({X}, {X}) -> {X}
  func.return %a, %b, %after : {X}, {X}, {X}
}}
"""


def test_dynamic_buffers_of_a_loop_body_live_for_the_whole_loop(tmp_path):
    """Body temporaries of one size polynomial (8*n floats), the carried values read after
    they are made, an outer value (%u) read in every iteration: each must keep its own slot
    of the dynamic arena through the whole loop, or a later iteration reads a value another
    buffer overwrote."""
    models = cold_and_warm(TEMPS_IR, tmp_path)
    for n in (1, 3, 11):
        x, a0, b0 = floats(n, 8), floats(n, 8), floats(n, 8)
        u = x * x
        for trips in (1, 4):
            a, b = a0, b0
            for _ in range(trips):
                t1 = a + b
                t4 = np.tanh(t1 * u - b)
                a, b = t4 + t1, a - t4
            check_runs(models, (np.array(trips, np.int64), x, a0, b0), (a, b, a + u))
    # %u, t1, t2, t3, t4, a2, b2 are live together in the loop (the states are outputs)
    slots = models[0].symbolic.dynamic_slots
    assert len([s for s in slots if s == "32*n"]) >= 7


# ------------------------------------------------------------------------------ nesting

NESTED_IR = f"""func.func @main(%x: {XS}, %v0: {ROW}) -> ({ROW}, {SCAN}) {{
  %m = graph.constant {{value = dense<1000> : tensor<i64>}} : tensor<i64>
  %true = graph.constant {{value = dense<true> : tensor<i1>}} : tensor<i1>
  %zero = graph.constant {{value = dense<0.0> : {S}}} : {S}
  %s, %ys = "graph.loop"(%m, %true, %v0) <{{iterations = #graph.dims<["seq"]>}}> ({{
  ^bb0(%i: tensor<i64>, %c: tensor<i1>, %acc: {ROW}):
    %xt = graph.gather(%x, %i) {{axis = 0 : i64}} : ({XS}, tensor<i64>) -> {ROW}
    %total = graph.reduce_sum(%xt) {{axes = array<i64: 0>, keepdims = 0 : i64}} : ({ROW}) -> {S}
    %up = graph.greater(%total, %zero) : ({S}, {S}) -> tensor<i1>
    %next = graph.if(%up) {{
      %p = graph.add(%acc, %xt) : ({ROW}, {ROW}) -> {ROW}
      graph.yield %p : {ROW}
    }} else {{
      %q = graph.sub(%acc, %xt) : ({ROW}, {ROW}) -> {ROW}
      graph.yield %q : {ROW}
    }} : (tensor<i1>) -> {ROW}
    %sl = graph.unsqueeze(%next) {{axes = array<i64: 0>}} : ({ROW}) -> {SLICE}
    graph.yield %c, %next, %sl : tensor<i1>, {ROW}, {SLICE}
  }}) : (tensor<i64>, tensor<i1>, {ROW}) -> ({ROW}, {SCAN})
  func.return %s, %ys : {ROW}, {SCAN}
}}
"""


def test_if_with_symbolic_results_inside_a_symbolic_loop(tmp_path):
    models = cold_and_warm(NESTED_IR, tmp_path)
    for seq, n in ((1, 1), (6, 5), (12, 2)):
        x, v0 = floats(seq, n), floats(n)
        acc, rows = v0, []
        for row in x:
            acc = acc + row if row.sum() > 0 else acc - row
            rows.append(acc)
        check_runs(models, (x, v0), (acc, np.stack(rows)[:, None, :]))
