"""Hostile inputs, each tried in a process of its own: a crash (SIGSEGV, SIGFPE, abort) fails
that one case instead of taking the suite down, and is reported as the signal it was.

Every case says what must happen: a typed error naming the place (node, op, value, valid
range), or a defined result, and never a crash, a hang, or a read or write outside the
caller's buffers. The cases cover run-time indices (Gather, GatherElements, GatherND,
ScatterElements, ScatterND, RoiAlign, MaxUnpool, ReverseSequence, TensorScatter), integer
division, NaN positions and a tampered cache.

Cases run in a child forked from the test process (tests/unit/isolation.py: onnxc already
imported, so a case costs a compile, not a Python start-up); what the child returns or raises
comes back pickled. Misuse (bad API arguments, huge shapes, deep nesting): test_hostile_misuse.py.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper

import onnxc
from onnxc.errors import InvalidInputError, ModelLoadError
from tests.single_op import graph_model
from tests.unit.isolation import TIMEOUT, isolated


def vi(name: str, elem: int, shape: list[int]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def model(nodes, inputs, outputs, opset: int = 17, initializers=()) -> onnx.ModelProto:
    return graph_model(nodes, inputs, outputs, initializers=list(initializers), opset=opset,
                       ir_version=10)


def run(m: onnx.ModelProto, feeds: dict[str, np.ndarray], opt_level: int = 3, **options):
    compiled = onnxc.compile(m, opt_level=opt_level, cache_dir=False, **options)
    return compiled.run(None, feeds)


def gather(extent: int = 4, count: int = 1) -> onnx.ModelProto:
    return model([helper.make_node("Gather", ["x", "i"], ["y"], name="pick")],
                 [vi("x", T.FLOAT, [extent]), vi("i", T.INT64, [count])],
                 [vi("y", T.FLOAT, [count])])


# --------------------------------------------------------------------------- indices


@pytest.mark.parametrize("opt_level", [0, 3])
@pytest.mark.parametrize("index", [4, 40, -5, 10**9, -(10**9), 2**62, -(2**63)])
def test_gather_index_out_of_range(index, opt_level):
    """onnxruntime: INVALID_ARGUMENT "idx=40 must be within the inclusive range [-4,3]"."""
    feeds = {"x": np.arange(4, dtype=np.float32), "i": np.array([index], np.int64)}
    isolated(lambda: run(gather(), feeds, opt_level)).raised(
        InvalidInputError, "node 'pick' (Gather)", f"indices value {index}", "[-4, 3]")


def test_gather_in_range_and_negative_indices_still_work():
    feeds = {"x": np.arange(4, dtype=np.float32), "i": np.array([-4, -1, 0, 3], np.int64)}
    (y,) = isolated(lambda: run(gather(count=4), feeds)).returned()
    np.testing.assert_array_equal(y, [0, 3, 0, 3])


def test_failed_check_names_the_first_bad_element_and_the_model_still_works():
    compiled = onnxc.compile(gather(count=3), cache_dir=False)
    x = np.arange(4, dtype=np.float32)

    def bad_then_good():
        try:
            compiled.run(None, {"x": x, "i": np.array([1, 7, 9], np.int64)})
        except InvalidInputError as error:
            first = str(error)
        return first, compiled.run(None, {"x": x, "i": np.array([3, 2, 1], np.int64)})

    first, (y,) = isolated(bad_then_good).returned()
    assert "value 7 at position 1" in first
    np.testing.assert_array_equal(y, [3, 2, 1])


@pytest.mark.parametrize("count, bad_at", [(10_000, 9_999), (10_000, 0), (5, 4)])
def test_gather_checking_its_own_indices_finds_the_first_bad_one(count, bad_at):
    """A Gather checks the indices it reads (long index lists in parallel blocks); the
    error still names the first bad element, found by the check kernel."""
    indices = np.arange(count, dtype=np.int64) % 7 - 3
    indices[bad_at] = -8
    if bad_at + 2 < count:
        indices[bad_at + 2] = 99
    feeds = {"x": np.arange(7, dtype=np.float32), "i": indices}
    isolated(lambda: run(gather(extent=7, count=count), feeds)).raised(
        InvalidInputError, "node 'pick'", f"value -8 at position {bad_at}", "[-7, 6]")


def test_gather_elements_rows_check_their_indices():
    m = model([helper.make_node("GatherElements", ["x", "i"], ["y"], name="ge", axis=1)],
              [vi("x", T.FLOAT, [3, 50]), vi("i", T.INT64, [3, 6000])],
              [vi("y", T.FLOAT, [3, 6000])])
    indices = np.zeros((3, 6000), np.int64)
    indices[2, 5999] = 50
    feeds = {"x": np.ones((3, 50), np.float32), "i": indices}
    isolated(lambda: run(m, feeds)).raised(
        InvalidInputError, "node 'ge' (GatherElements)", "value 50 at position 17999",
        "[-50, 49]")


def _indexed(op: str, data_shape, index_shape, out_shape, *, updates=False, **attrs):
    inputs = [vi("x", T.FLOAT, data_shape), vi("i", T.INT64, index_shape)]
    names = ["x", "i"]
    if updates:
        inputs.append(vi("u", T.FLOAT, index_shape if op != "ScatterND" else out_shape[1]))
        names.append("u")
    return model([helper.make_node(op, names, ["y"], name="n", **attrs)], inputs,
                 [vi("y", T.FLOAT, out_shape if not updates else data_shape)])


INDEX_CASES = {
    "GatherElements": (lambda: _indexed("GatherElements", [2, 4], [2, 2], [2, 2], axis=1),
                       {"i": [[0, 1], [2, 37]]}, "[-4, 3]"),
    "GatherND": (lambda: _indexed("GatherND", [2, 4], [2, 2], [2]),
                 {"i": [[0, 1], [1, -5]]}, "[-4, 3]"),
    "GatherND first column": (lambda: _indexed("GatherND", [2, 4], [2, 2], [2]),
                              {"i": [[2, 1], [1, 1]]}, "[-2, 1]"),
}


@pytest.mark.parametrize("name", sorted(INDEX_CASES))
def test_gathers_refuse_indices_out_of_range(name):
    build, values, allowed = INDEX_CASES[name]
    feeds = {"x": np.arange(8, dtype=np.float32).reshape(2, 4),
             "i": np.array(values["i"], np.int64)}
    isolated(lambda: run(build(), feeds)).raised(InvalidInputError, "node 'n'", allowed)


@pytest.mark.parametrize("op", ["ScatterElements", "ScatterND"])
def test_scatter_into_caller_buffer_never_writes_past_it(op):
    """With out=[big[:4]] and index 37 the run must fail and leave big[4:] untouched."""
    if op == "ScatterElements":
        m = _indexed(op, [4], [1], [4], updates=True)
        feeds = {"x": np.zeros(4, np.float32), "i": np.array([37], np.int64),
                 "u": np.ones(1, np.float32)}
    else:
        m = model([helper.make_node(op, ["x", "i", "u"], ["y"], name="n")],
                  [vi("x", T.FLOAT, [4]), vi("i", T.INT64, [1, 1]), vi("u", T.FLOAT, [1])],
                  [vi("y", T.FLOAT, [4])])
        feeds = {"x": np.zeros(4, np.float32), "i": np.array([[37]], np.int64),
                 "u": np.ones(1, np.float32)}

    def scatter():
        big = np.full(64, -7.0, np.float32)
        compiled = onnxc.compile(m, cache_dir=False)
        try:
            compiled.run(None, feeds, out=[big[:4]])
        except InvalidInputError as error:
            return str(error), big
        return "no error", big

    message, big = isolated(scatter).returned()
    assert f"node 'n' ({op})" in message and "value 37" in message, message
    assert (big[4:] == -7.0).all()


def test_roi_align_batch_index_out_of_range():
    m = model([helper.make_node("RoiAlign", ["x", "r", "b"], ["y"], name="roi",
                                output_height=1, output_width=1)],
              [vi("x", T.FLOAT, [2, 1, 4, 4]), vi("r", T.FLOAT, [1, 4]), vi("b", T.INT64, [1])],
              [vi("y", T.FLOAT, [1, 1, 1, 1])])
    for batch in (2, -1, 10**12):
        feeds = {"x": np.ones((2, 1, 4, 4), np.float32),
                 "r": np.array([[0, 0, 2, 2]], np.float32), "b": np.array([batch], np.int64)}
        isolated(lambda: run(m, feeds)).raised(
            InvalidInputError, "node 'roi' (RoiAlign)", f"batch_indices value {batch}", "[0, 1]")


def test_roi_align_nan_and_huge_regions_do_not_crash():
    """NaN or enormous ROI coordinates become positions through NaN-safe conversions."""
    m = model([helper.make_node("RoiAlign", ["x", "r", "b"], ["y"], name="roi",
                                output_height=2, output_width=2, sampling_ratio=2)],
              [vi("x", T.FLOAT, [1, 1, 4, 4]), vi("r", T.FLOAT, [2, 4]), vi("b", T.INT64, [2])],
              [vi("y", T.FLOAT, [2, 1, 2, 2])])
    feeds = {"x": np.ones((1, 1, 4, 4), np.float32), "b": np.zeros(2, np.int64),
             "r": np.array([[np.nan, 0, 2, np.nan], [-3e38, -3e38, 3e38, 3e38]], np.float32)}
    (y,) = isolated(lambda: run(m, feeds)).returned()
    assert y.shape == (2, 1, 2, 2)


def test_grid_sample_nan_and_inf_grid_do_not_crash():
    m = model([helper.make_node("GridSample", ["x", "g"], ["y"], name="gs")],
              [vi("x", T.FLOAT, [1, 1, 3, 3]), vi("g", T.FLOAT, [1, 2, 2, 2])],
              [vi("y", T.FLOAT, [1, 1, 2, 2])], opset=16)
    grid = np.array([[[[np.nan, 0], [np.inf, -np.inf]], [[3e38, 1], [0, np.nan]]]], np.float32)
    feeds = {"x": np.ones((1, 1, 3, 3), np.float32), "g": grid}
    (y,) = isolated(lambda: run(m, feeds)).returned()
    assert y.shape == (1, 1, 2, 2)


def test_max_unpool_index_out_of_range():
    m = model([helper.make_node("MaxUnpool", ["x", "i"], ["y"], name="up", kernel_shape=[2],
                                strides=[2])],
              [vi("x", T.FLOAT, [1, 1, 2]), vi("i", T.INT64, [1, 1, 2])],
              [vi("y", T.FLOAT, [1, 1, 4])])
    for index in (4, -1):
        feeds = {"x": np.ones((1, 1, 2), np.float32), "i": np.array([[[0, index]]], np.int64)}
        isolated(lambda: run(m, feeds)).raised(
            InvalidInputError, "node 'up' (MaxUnpool)", f"value {index}", "[0, 3]")


def test_reverse_sequence_length_out_of_range():
    """onnxruntime: "Invalid sequence length: 4. Value must be in range [0,3]"."""
    m = model([helper.make_node("ReverseSequence", ["x", "l"], ["y"], name="rev",
                                batch_axis=1, time_axis=0)],
              [vi("x", T.FLOAT, [3, 2]), vi("l", T.INT64, [2])], [vi("y", T.FLOAT, [3, 2])])
    for length in (4, -1):
        feeds = {"x": np.arange(6, dtype=np.float32).reshape(3, 2),
                 "l": np.array([length, 1], np.int64)}
        isolated(lambda: run(m, feeds)).raised(
            InvalidInputError, "node 'rev' (ReverseSequence)", f"value {length}", "[0, 3]")


@pytest.mark.parametrize("mode, position, allowed", [
    ("linear", 2, "[0, 1]"), ("linear", -1, "[0, 1]"), ("circular", -1, "[0, "),
])
def test_tensor_scatter_write_position_out_of_range(mode, position, allowed):
    m = model([helper.make_node("TensorScatter", ["p", "u", "w"], ["y"], name="kv", axis=1,
                                mode=mode)],
              [vi("p", T.FLOAT, [1, 3]), vi("u", T.FLOAT, [1, 2]), vi("w", T.INT64, [1])],
              [vi("y", T.FLOAT, [1, 3])], opset=24)
    feeds = {"p": np.zeros((1, 3), np.float32), "u": np.ones((1, 2), np.float32),
             "w": np.array([position], np.int64)}
    isolated(lambda: run(m, feeds)).raised(
        InvalidInputError, "node 'kv' (TensorScatter)", f"value {position}", allowed)


def test_batched_run_names_the_sample():
    """A model compiled once for a symbolic batch checks each sample's indices."""
    m = model([helper.make_node("Gather", ["x", "i"], ["y"], name="pick", axis=1)],
              [vi("x", T.FLOAT, ["N", 4]), vi("i", T.INT64, [2])], [vi("y", T.FLOAT, ["N", 2])])
    feeds = {"x": np.ones((3, 4), np.float32), "i": np.array([0, 5], np.int64)}
    isolated(lambda: run(m, feeds)).raised(InvalidInputError, "node 'pick'", "value 5")


def test_constant_index_out_of_range_is_a_compile_error():
    m = model([helper.make_node("Gather", ["x", "i"], ["y"], name="pick")],
              [vi("x", T.FLOAT, [4])], [vi("y", T.FLOAT, [1])],
              initializers=[onnx.numpy_helper.from_array(np.array([9], np.int64), "i")])
    isolated(lambda: onnxc.compile(m, cache_dir=False, opt_level=0)).raised(
        ModelLoadError, "node 'pick' (Gather", "out of range")


def test_onnxc_run_reports_a_bad_index_without_a_traceback(tmp_path):
    path = tmp_path / "gather.onnx"
    onnx.save(gather(), path)
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=np.zeros(4, np.float32), i=np.array([40], np.int64))
    done = subprocess.run([sys.executable, "-m", "onnxc.tools.run", "run", str(path),
                           "--inputs", str(inputs), "--repeat", "1"],
                          capture_output=True, text=True, timeout=TIMEOUT,
                          env={**os.environ, "ONNXC_CACHE": "0"})
    assert done.returncode == 1, done
    assert "node 'pick' (Gather)" in done.stderr and "Traceback" not in done.stderr


# --------------------------------------------------------------------------- division


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.uint64])
@pytest.mark.parametrize("op", ["Div", "Mod"])
def test_integer_division_by_zero(op, dtype):
    """onnxruntime: "Integer division by zero" / "Integer modulo by zero"."""
    elem = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    m = model([helper.make_node(op, ["a", "b"], ["y"], name="q")],
              [vi("a", elem, [3]), vi("b", elem, [3])], [vi("y", elem, [3])])
    feeds = {"a": np.array([7, 8, 9], dtype), "b": np.array([2, 0, 3], dtype)}
    what = "modulo" if op == "Mod" else "division"
    isolated(lambda: run(m, feeds)).raised(
        InvalidInputError, f"node 'q' ({op})", f"integer {what} by zero", "element 1")


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64])
def test_minimum_divided_by_minus_one_is_defined(dtype):
    """The hardware traps on MIN / -1 (onnxruntime 1.31 dies with SIGFPE); onnxc gives the
    wrapped quotient MIN, and MIN % -1 = 0."""
    elem = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    low = np.iinfo(dtype).min
    nodes = [helper.make_node("Div", ["a", "b"], ["q"], name="q"),
             helper.make_node("Mod", ["a", "b"], ["r"], name="r", fmod=1),
             helper.make_node("Mod", ["a", "b"], ["s"], name="s")]
    m = model(nodes, [vi("a", elem, [2]), vi("b", elem, [2])],
              [vi(n, elem, [2]) for n in "qrs"])
    feeds = {"a": np.array([low, 7], dtype), "b": np.array([-1, -2], dtype)}
    q, r, s = isolated(lambda: run(m, feeds)).returned()
    np.testing.assert_array_equal(q, np.array([low, -3], dtype))
    np.testing.assert_array_equal(r, np.array([0, 1], dtype))
    np.testing.assert_array_equal(s, np.array([0, -1], dtype))


@pytest.mark.parametrize("op", ["Div", "Mod"])
@pytest.mark.parametrize("constant_dividend", [False, True])
def test_integer_division_by_a_constant_zero_is_a_compile_error(op, constant_dividend):
    """Never folded to numpy's 0 (with a warning): the model can never run."""
    inits = [onnx.numpy_helper.from_array(np.array([1, 0], np.int32), "b")]
    inputs = [vi("a", T.INT32, [2])]
    if constant_dividend:
        inits.append(onnx.numpy_helper.from_array(np.array([4, 5], np.int32), "a"))
        inputs = []
    m = model([helper.make_node(op, ["a", "b"], ["y"], name="q")], inputs,
              [vi("y", T.INT32, [2])], initializers=inits)
    what = "modulo" if op == "Mod" else "division"
    for level in (0, 3):
        isolated(lambda: onnxc.compile(m, cache_dir=False, opt_level=level)).raised(
            ModelLoadError, f"node 'q' ({op})", f"integer {what} by a constant zero")
