"""Reductions, index and sequence ops compiled end to end by onnxc.compile, against
onnx.reference.ReferenceEvaluator on one-node models (constant inputs as initializers); the
graph ops' numpy semantics (passes/evaluator_reduce.py) are checked on the same cases.

Tolerances: float32 rtol 1e-5 / atol 1e-5 (only the summation order differs) and rtol 1e-4
for exp/log/sqrt compositions (our exp/log vs numpy's); integer and index results exactly.
Random float inputs come from a seeded generator with distinct values, so ArgMax/TopK ties
only appear where a case builds them on purpose.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator

import onnxc
from onnxc.errors import UnsupportedOpError
from onnxc.frontend.onnx_importer import import_onnx
from onnxc.passes.evaluator import evaluate
from tests.single_op import graph_model, numbered, run_both, single_op_model


def _model(op: str, inputs, consts, attrs: dict, opset: int, outputs: int = 1):
    """Inputs x0.., constants c0.. (None: an omitted input), outputs y0..; IR version 8,
    readable by onnxruntime (the reference where onnx's is wrong)."""
    return single_op_model(op, numbered(inputs), [f"y{i}" for i in range(outputs)],
                           attrs=attrs, initializers=numbered(consts, "c"), opset=opset,
                           ir_version=8)


def run_case(op: str, inputs, consts=(), attrs=None, opset: int = 18, outputs: int = 1,
             rtol: float = 1e-5, atol: float = 1e-5, reference: str = "onnx",
             num_threads: int | None = None) -> None:
    model = _model(op, list(inputs), list(consts), attrs or {}, opset, outputs)
    feeds = {f"x{i}": a for i, a in enumerate(inputs)}
    if reference == "onnx":
        expected = ReferenceEvaluator(model).run(None, feeds)
    else:
        import onnxruntime

        session = onnxruntime.InferenceSession(model.SerializeToString(),
                                               providers=["CPUExecutionProvider"])
        expected = session.run(None, feeds)
    compiled = onnxc.compile(model, num_threads=num_threads).run(None, feeds)
    evaluated = evaluate(import_onnx(model), feeds)  # the numpy semantics of the graph ops
    for actual in (compiled, evaluated):
        _compare(actual, expected, rtol, atol)


def _compare(actual, expected, rtol: float, atol: float) -> None:
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected):
        want = np.asarray(want)
        assert got.shape == want.shape, (got.shape, want.shape)
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
        if got.dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(got, want)


RNG = np.random.default_rng(7)


def distinct(*shape, dtype=np.float32) -> np.ndarray:
    """Distinct values in random order (no ties for arg/top-k)."""
    n = int(np.prod(shape))
    return (RNG.permutation(n).astype(np.float64) / max(n, 1) * 4 - 2).astype(dtype).reshape(
        shape)


X = distinct(2, 3, 4)
AXES = np.array([0, 2], dtype=np.int64)

REDUCE_OPS = ["ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSumExp",
              "ReduceSumSquare"]


@pytest.mark.parametrize("op", REDUCE_OPS)
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_axes_input(op, keepdims):
    run_case(op, [X], [AXES], {"keepdims": keepdims}, rtol=1e-4)


@pytest.mark.parametrize("op", REDUCE_OPS + ["ReduceLogSum"])
def test_reduce_attribute_axes_opset13(op):
    x = np.abs(X) + 0.5 if op == "ReduceLogSum" else X
    run_case(op, [x], [], {"axes": [-1], "keepdims": 0}, opset=13, rtol=1e-4)


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceL2", "ReduceLogSumExp"])
def test_reduce_all_axes_and_noop(op):
    run_case(op, [X], [], {"keepdims": 1}, rtol=1e-4)
    run_case(op, [X], [np.array([], dtype=np.int64)], {"noop_with_empty_axes": 1}, rtol=1e-4)


def test_reduce_integer_and_bool():
    ints = RNG.integers(-50, 50, size=(3, 4, 5)).astype(np.int32)
    run_case("ReduceMax", [ints], [np.array([1], dtype=np.int64)], {"keepdims": 0})
    run_case("ReduceProd", [ints.astype(np.int64) % 4], [np.array([2], dtype=np.int64)])
    flags = RNG.integers(0, 2, size=(4, 3)).astype(bool)
    run_case("ReduceMin", [flags], [np.array([1], dtype=np.int64)], {"keepdims": 0}, opset=20)
    run_case("ReduceMax", [flags], [np.array([0], dtype=np.int64)], {"keepdims": 1}, opset=20)


def test_reduce_max_empty_set_is_minus_infinity():
    run_case("ReduceMax", [np.zeros((2, 0, 4), np.float32)], [np.array([1], dtype=np.int64)])


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("axis,keepdims", [(0, 1), (1, 0), (-1, 1), (2, 0)])
def test_arg(op, axis, keepdims):
    run_case(op, [X], [], {"axis": axis, "keepdims": keepdims}, opset=13)


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
def test_arg_select_last_index_ties(op):
    x = RNG.integers(0, 3, size=(4, 6)).astype(np.float32)
    for last in (0, 1):
        run_case(op, [x], [], {"axis": 1, "select_last_index": last}, opset=13)
    run_case(op, [x.astype(np.int64)], [], {"axis": 0, "keepdims": 0}, opset=13)


@pytest.mark.parametrize("axis,largest", [(-1, 1), (1, 0), (0, 1)])
def test_top_k(axis, largest):
    x = distinct(4, 5, 6)
    run_case("TopK", [x], [np.array([3], dtype=np.int64)], {"axis": axis, "largest": largest},
             opset=11, outputs=2)


def test_top_k_ties_keep_index_order_and_opset1():
    x = RNG.integers(0, 4, size=(3, 9)).astype(np.float32)
    run_case("TopK", [x], [np.array([5], dtype=np.int64)], {}, opset=11, outputs=2)
    run_case("TopK", [x], [np.array([4], dtype=np.int64)], {"largest": 0}, opset=11, outputs=2)
    run_case("TopK", [x.astype(np.int32)], [], {"k": 9}, opset=1, outputs=2)


@pytest.mark.parametrize("op", ["CumSum", "CumProd"])
@pytest.mark.parametrize("exclusive,reverse", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_cumulative(op, exclusive, reverse):
    opset = 26 if op == "CumProd" else 14
    x = distinct(2, 3, 4)
    for axis in (1, -1):
        run_case(op, [x], [np.array(axis, dtype=np.int64)],
                 {"exclusive": exclusive, "reverse": reverse}, opset=opset)
    ints = RNG.integers(-3, 4, size=(5, 2)).astype(np.int32)
    run_case(op, [ints], [np.array(0, dtype=np.int32)], {"reverse": reverse}, opset=opset)


@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [None, -1, 2, 7, -9])
def test_trilu(upper, k):
    consts = [] if k is None else [np.array(k, dtype=np.int64)]
    run_case("Trilu", [distinct(2, 4, 5)], consts, {"upper": upper}, opset=14)


def test_one_hot():
    indices = np.array([[1, 9, -1], [0, 4, 2]], dtype=np.int64)
    values = np.array([-2.0, 3.0], dtype=np.float32)
    for axis in (-1, 0, 1):
        run_case("OneHot", [indices], [np.array(5, dtype=np.int64), values], {"axis": axis},
                 opset=11)
    run_case("OneHot", [indices.astype(np.float32)],
             [np.array(4.0, dtype=np.float32), np.array([0, 1], dtype=np.int64)], {}, opset=11)


@pytest.mark.parametrize("opset,axis", [(11, 1), (11, 0), (13, -1), (13, 1)])
def test_hardmax(opset, axis):
    # onnx.reference applies opset 13's per-axis rule to every opset; onnxruntime does the
    # 2-D coercion of opsets 1-11
    run_case("Hardmax", [distinct(2, 3, 4)], [], {"axis": axis}, opset=opset,
             reference="onnx" if opset >= 13 else "onnxruntime")


@pytest.mark.parametrize("p,axis", [(2, -1), (1, 0), (2, 1)])
def test_lp_normalization(p, axis):
    # onnx.reference omits the |x| of the 1-norm: positive inputs there, numpy below
    x = distinct(3, 4, 5) + (2.5 if p == 1 else 0)
    x[0] = 0  # an all-zero slice along every axis but the first stays zero
    run_case("LpNormalization", [x], [], {"p": p, "axis": axis}, rtol=1e-4)


def test_l1_normalization_of_negative_values():
    x = distinct(3, 4)
    model = _model("LpNormalization", [x], [], {"p": 1, "axis": 1}, 18, 1)
    (got,) = onnxc.compile(model).run(None, {"x0": x})
    np.testing.assert_allclose(got, x / np.abs(x).sum(axis=1, keepdims=True), rtol=1e-5)


def test_range_constant_and_eye_like():
    run_case("Range", [], [np.array(1.5, np.float32), np.array(9.0, np.float32),
                           np.array(0.7, np.float32)], {}, opset=11)
    run_case("Range", [], [np.array(10, np.int32), np.array(-3, np.int32),
                           np.array(-4, np.int32)], {}, opset=11)
    run_case("EyeLike", [distinct(3, 5)], [], {"k": 1}, opset=9)
    run_case("EyeLike", [distinct(4, 4)], [], {"k": -2, "dtype": onnx.TensorProto.INT32},
             opset=9)


def test_range_runtime_inputs_are_refused_clearly():
    model = _model("Range", [np.array(0, np.int64), np.array(5, np.int64),
                             np.array(1, np.int64)], [], {}, 11, 1)
    with pytest.raises(UnsupportedOpError, match="must be a constant"):
        onnxc.compile(model)


@pytest.mark.parametrize("equation,shapes", [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("i,i", [(5,), (5,)]),
    ("ij->i", [(3, 4)]),
    ("ij->ji", [(3, 4)]),
    ("ij,kj->ik", [(3, 4), (5, 4)]),
    ("i,j->ij", [(3,), (4,)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("abc,cd,de->ae", [(2, 3, 4), (4, 5), (5, 6)]),
    ("ijk,ik", [(3, 4, 5), (3, 5)]),
    ("...ii->...i", [(2, 4, 4)]),
    ("ii", [(3, 3)]),
    ("iij,jk->ik", [(3, 3, 4), (4, 2)]),
])
def test_einsum(equation, shapes):
    run_case("Einsum", [distinct(*s) for s in shapes], [], {"equation": equation}, opset=12,
             rtol=1e-4)


def test_einsum_broadcasting_is_unsupported():
    model = _model("Einsum", [distinct(3, 1), distinct(4, 5)], [], {"equation": "ij,jk->ik"},
                   12, 1)
    with pytest.raises(UnsupportedOpError, match="broadcasting"):
        onnxc.compile(model)


def test_reduce_empty_set_of_integers_and_bools():
    for dtype in (np.int32, np.bool_):
        run_case("ReduceMax", [np.zeros((2, 0, 3), dtype)], [np.array([1], dtype=np.int64)],
                 opset=20)
    run_case("ReduceMin", [np.zeros((0, 3), np.int64)], [np.array([0], dtype=np.int64)])


def test_integer_reductions_on_constants_fold_at_import():
    ints = RNG.integers(-5, 6, size=(3, 4)).astype(np.int64)
    axis1 = np.array([1], dtype=np.int64)
    run_case("ReduceProd", [], [ints, axis1], {"keepdims": 0})
    run_case("ReduceMax", [], [ints], {"axes": [0]}, opset=13)
    run_case("ReduceSum", [], [ints, axis1], {}, opset=13)
    run_case("ArgMin", [], [ints], {"axis": 1, "select_last_index": 1}, opset=13)
    run_case("CumSum", [], [ints, np.array(1)], {"exclusive": 1, "reverse": 1}, opset=14)
    model = _model("ReduceProd", [], [ints, axis1], {"keepdims": 0}, 18, 1)
    assert "reduce_prod" not in str(import_onnx(model))


def test_shape_product_feeds_reshape():
    """Shape -> ReduceProd -> Reshape, as exported flattens do: the size folds to a constant."""
    x = distinct(2, 3, 4)
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("ReduceProd", ["s"], ["n"], keepdims=1),
             helper.make_node("Reshape", ["x", "n"], ["y"])]
    model = graph_model(nodes, {"x": (onnx.TensorProto.FLOAT, x.shape)}, ["y"], opset=17)
    (got,) = onnxc.compile(model).run(None, {"x": x})
    np.testing.assert_array_equal(got, x.reshape(-1))


@pytest.mark.parametrize("dtype,bounds", [(np.float32, (1.5, 9.0, 0.7)),
                                          (np.int32, (10, -3, -4))])
def test_range_runtime_inputs_with_declared_length(dtype, bounds):
    values = [np.array(b, dtype) for b in bounds]
    expected = np.arange(*bounds, dtype=dtype)
    feeds = numbered(values)
    model = single_op_model("Range", feeds, {"y": (dtype, expected.shape)}, opset=11)
    (got,) = onnxc.compile(model).run(None, feeds)
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    (evaluated,) = evaluate(import_onnx(model), feeds)
    np.testing.assert_allclose(evaluated, expected, rtol=1e-6)


def test_unsigned_integers_in_top_k_arg_max_and_trilu():
    x = RNG.permutation(40).astype(np.uint64).reshape(4, 10) * np.uint64(2)
    x[0, 0] = np.uint64(1 << 63) + np.uint64(5)  # above int64's range: compared unsigned
    run_case("TopK", [x], [np.array([3], dtype=np.int64)], {}, opset=11, outputs=2)
    run_case("ArgMax", [x.astype(np.uint8)], [], {"axis": 1}, opset=13)
    run_case("Trilu", [x.astype(np.uint16)], [], {"upper": 0}, opset=14)


@pytest.mark.parametrize("op", ["HannWindow", "HammingWindow", "BlackmanWindow"])
@pytest.mark.parametrize("periodic", [0, 1])
def test_windows(op, periodic):
    run_case(op, [], [np.array(10, np.int64)], {"periodic": periodic}, opset=17, atol=1e-6)
    run_case(op, [], [np.array(7, np.int32)],
             {"periodic": periodic, "output_datatype": onnx.TensorProto.DOUBLE}, opset=17,
             atol=1e-12)


def test_mel_weight_matrix():
    consts = [np.array(8, np.int32), np.array(64, np.int32), np.array(8000, np.int32),
              np.array(100.0, np.float32), np.array(3500.0, np.float32)]
    run_case("MelWeightMatrix", [], consts, {}, opset=17, atol=1e-6)
    run_case("MelWeightMatrix", [], consts, {"output_datatype": onnx.TensorProto.DOUBLE},
             opset=17, atol=1e-12)


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
def test_arg_nan_rows_give_their_first_or_last_nan(op):
    x = distinct(3, 6)
    x[0, [2, 4]] = np.nan
    x[2, 5] = np.nan
    for last in (0, 1):
        run_case(op, [x], [], {"axis": 1, "select_last_index": last}, opset=13)


def test_top_k_whole_axis_and_strided_slices():
    x = distinct(2, 300, 3)  # k = n: every value is inserted; inner 3: strided slices
    run_case("TopK", [x], [np.array([300], dtype=np.int64)], {"axis": 1}, opset=11, outputs=2)
    run_case("TopK", [x], [np.array([1], dtype=np.int64)], {"axis": 1, "largest": 0},
             opset=11, outputs=2)


def test_parallel_rows_on_two_threads():
    """Above MIN_PARALLEL_ELEMENTS the row loops run on threads (serially where the pool does not run)."""
    x = distinct(64, 40, 30)
    run_case("ReduceMax", [x], [np.array([1], dtype=np.int64)], num_threads=2)
    run_case("ReduceSum", [x], [np.array([0], dtype=np.int64)], num_threads=2)
    run_case("ArgMin", [x], [], {"axis": 2}, opset=13, num_threads=2)
    run_case("TopK", [x], [np.array([4], dtype=np.int64)], {"axis": 1}, opset=11, outputs=2,
             num_threads=2)
    run_case("CumSum", [x], [np.array(1)], {"exclusive": 1}, opset=14, num_threads=2)


# --------------------------------------------------------------------------- ReduceMean / ReduceSum
# (from test_extended_ops.py: imported, -O0, against onnxruntime at rtol 1e-3 / atol 1e-4)

_X4 = {"x": (np.float32, (2, 3, 4, 5))}


def _x4_feeds() -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(np.float32)}


REDUCE_MEAN_SUM = [  # name, op, attributes, initializers, opset
    ("reduce_mean_attr_axes", "ReduceMean", {"axes": [2, -1]}, {}, 13),
    ("reduce_mean_input_axes", "ReduceMean", {"keepdims": 0}, {"a": np.array([1], np.int64)}, 18),
    ("reduce_mean_all", "ReduceMean", {"keepdims": 0}, {}, 18),
    ("reduce_sum_input_axes", "ReduceSum", {}, {"a": np.array([0, 2], np.int64)}, 13),
    ("reduce_sum_attr_axes", "ReduceSum", {"axes": [1], "keepdims": 0}, {}, 11),
    ("reduce_sum_noop", "ReduceSum", {"noop_with_empty_axes": 1}, {}, 13),
]


@pytest.mark.parametrize("name, op, attrs, inits, opset", REDUCE_MEAN_SUM,
                         ids=[c[0] for c in REDUCE_MEAN_SUM])
def test_reduce_mean_and_sum_match_onnxruntime(name, op, attrs, inits, opset):
    model = single_op_model(op, _X4, {"y": (np.float32, None)}, attrs=attrs,
                            initializers=inits, opset=opset, ir_version=8)
    run_both(model, _x4_feeds(), rtol=1e-3, atol=1e-4, opt_level=0)
