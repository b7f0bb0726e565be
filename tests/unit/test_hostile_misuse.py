"""Misuse, each case in a process of its own (tests/unit/isolation.py): huge shapes, bad API
arguments and deep nesting must end in a typed, located error, never in MemoryError,
OverflowError, ValueError, TypeError, RecursionError or a crash.

Huge shapes: a few bytes of model ask for 2**40 elements or more. Every tensor that would
become memory is checked against the allocation bound (src/onnxc/resource_limits.py: the
memory available unless $ONNXC_MAX_ALLOC_MB says otherwise) when the node is imported, so
these fail at compile time with ResourceLimitError naming the node and the size, on any
machine with less than a few TiB free. Deep nesting goes through `onnxc-opt` in a subprocess.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

import onnxc
from onnxc.errors import InvalidArgumentError, ResourceLimitError
from tests.single_op import graph_model
from tests.unit.isolation import TIMEOUT, isolated

HUGE = 2**40


def vi(name: str, shape, elem: int = T.FLOAT) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def const(name: str, value) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(value), name)


def model(node, inputs=(), initializers=(), opset: int = 17, out_elem: int = T.FLOAT):
    """`node` writing y (of element type `out_elem`), IR version 10."""
    return graph_model([node], {i.name: i for i in inputs}, {"y": (out_elem, None)},
                       initializers=list(initializers),
                       opset=opset, ir_version=10)


def compile_(m: onnx.ModelProto, **options):
    return onnxc.compile(m, cache_dir=False, **options)


def n(op: str, inputs, **attrs) -> onnx.NodeProto:
    return helper.make_node(op, inputs, ["y"], name="big", **attrs)


i64 = np.int64
HUGE_SHAPES = {
    "ConstantOfShape": lambda: model(n("ConstantOfShape", ["s"]),
                                     initializers=[const("s", np.array([2**20, 2**20], i64))]),
    "ConstantOfShape int64": lambda: model(
        n("ConstantOfShape", ["s"], value=const("v", np.array([7], i64))), out_elem=T.INT64,
        initializers=[const("s", np.array([HUGE], i64))]),
    "Tile": lambda: model(n("Tile", ["x", "r"]), [vi("x", [2])],
                          [const("r", np.array([HUGE], i64))]),
    "Tile of a constant": lambda: model(n("Tile", ["x", "r"]), initializers=[
        const("x", np.ones(2, np.float32)), const("r", np.array([HUGE], i64))]),
    "Pad": lambda: model(n("Pad", ["x", "p"]), [vi("x", [2])],
                         [const("p", np.array([0, HUGE], i64))]),
    "OneHot": lambda: model(n("OneHot", ["i", "d", "v"]), [vi("i", [2**20], T.INT64)],
                            [const("d", np.array([2**20], i64)),
                             const("v", np.array([0, 1], np.float32))]),
    "Resize by 1e6": lambda: model(n("Resize", ["x", "", "s"]), [vi("x", [1, 1, 4, 4])],
                                   [const("s", np.array([1, 1, 1e6, 1e6], np.float32))]),
    "Expand past 2**64 bytes": lambda: model(n("Expand", ["x", "s"]), [vi("x", [1])],
                                             [const("s", np.array([2**32, 2**32], i64))]),
    "Expand of a constant": lambda: model(n("Expand", ["x", "s"]), out_elem=T.INT64,
                                          initializers=[const("x", np.array([1], i64)),
                                                        const("s", np.array([2**20] * 2, i64))]),
    "Range": lambda: model(n("Range", ["a", "b", "c"]), out_elem=T.INT64, initializers=[
        const("a", np.array(0, i64)), const("b", np.array(HUGE, i64)),
        const("c", np.array(1, i64))]),
    "HannWindow": lambda: model(n("HannWindow", ["s"]), initializers=[
        const("s", np.array(HUGE, i64))]),
    "MelWeightMatrix": lambda: model(n("MelWeightMatrix", ["b", "d", "r", "l", "h"]),
                                     initializers=[const("b", np.array(2**20, i64)),
                                                   const("d", np.array(2**21, i64)),
                                                   const("r", np.array(16000, i64)),
                                                   const("l", np.array(0, np.float32)),
                                                   const("h", np.array(8000, np.float32))]),
    "AffineGrid": lambda: model(n("AffineGrid", ["t", "s"]), [vi("t", [1, 2, 3])],
                                [const("s", np.array([1, 1, 2**20, 2**20], i64))], opset=20),
}


@pytest.mark.parametrize("case", sorted(HUGE_SHAPES))
def test_huge_shape_is_refused_at_compile_time_naming_the_node(case):
    build = HUGE_SHAPES[case]
    isolated(lambda: compile_(build())).raised(
        ResourceLimitError, "node 'big' (", "needs ", " bytes), more than", "onnxc may allocate")


@pytest.mark.parametrize("opt_level", [0, 3])
def test_huge_input_dims_declared_in_the_model(opt_level):
    m = model(n("Relu", ["x"]), [vi("x", [2**32, 2**32])])
    isolated(lambda: compile_(m, opt_level=opt_level)).raised(
        ResourceLimitError, "graph input 'x'", "[4294967296, 4294967296]", "64.0 EiB")


def test_huge_input_dims_through_input_shapes():
    m = model(n("Relu", ["x"]), [vi("x", ["a", "b"])])
    isolated(lambda: compile_(m, input_shapes={"x": [2**32, 2**32]})).raised(
        ResourceLimitError, "graph input 'x'", "64.0 EiB")


def test_huge_initializer_without_its_data():
    init = onnx.TensorProto(name="w", data_type=T.FLOAT, dims=[2**32, 2**32])
    m = model(n("Add", ["x", "w"]), [vi("x", [1])], [init])
    isolated(lambda: compile_(m)).raised(ResourceLimitError, "initializer 'w'", "64.0 EiB")


def test_the_bound_can_be_set_and_a_model_under_it_still_runs():
    def under_and_over():
        os.environ["ONNXC_MAX_ALLOC_MB"] = "64"  # in the forked child only
        ok = compile_(model(n("Tile", ["x", "r"]), [vi("x", [2])],
                            [const("r", np.array([2**20], i64))]))  # 8 MiB
        (y,) = ok.run(None, {"x": np.array([1, 2], np.float32)})
        try:
            compile_(model(n("Tile", ["x", "r"]), [vi("x", [2])],
                           [const("r", np.array([2**25], i64))]))  # 256 MiB
        except ResourceLimitError as error:
            return y.shape, str(error)
        return y.shape, "compiled"

    shape, message = isolated(under_and_over).returned()
    assert shape == (2**21,)
    assert "node 'big' (Tile)" in message and "$ONNXC_MAX_ALLOC_MB" in message, message


# --------------------------------------------------------------------------- API arguments

RELU = model(n("Relu", ["x"]), [vi("x", ["a", 4])])
STATIC_RELU = model(n("Relu", ["x"]), [vi("x", [2, 4])])
BAD_ARGUMENTS = {
    "model 42": (lambda: onnxc.compile(42), "model must be"),
    "model None": (lambda: onnxc.optimize(None), "model must be"),
    "num_threads 0": (lambda: compile_(STATIC_RELU, num_threads=0), "num_threads"),
    "num_threads huge": (lambda: compile_(STATIC_RELU, num_threads=2**40), "num_threads"),
    "opt_level 9": (lambda: compile_(STATIC_RELU, opt_level=9), "opt_level"),
    "input_shapes str dim": (lambda: compile_(RELU, input_shapes={"x": ["a"]}),
                             "input_shapes['x'][0]"),
    "input_shapes negative": (lambda: compile_(RELU, input_shapes={"x": [-1, 4]}),
                              "input_shapes['x'][0]"),
    "input_shapes 2**64": (lambda: compile_(RELU, input_shapes={"x": [2**64, 4]}),
                           "input_shapes['x'][0]"),
    "input_shapes wrong rank": (lambda: compile_(RELU, input_shapes={"x": [2]}), "rank 1"),
    "input_shapes contradicts": (lambda: compile_(RELU, input_shapes={"x": [2, 5]}),
                                 "of size 4"),
    "pass_pipeline object": (lambda: compile_(STATIC_RELU, pass_pipeline=object()),
                             "pass_pipeline"),
}


def _with_env(name: str, value: str):
    def case():
        os.environ[name] = value  # in the forked child only
        return compile_(STATIC_RELU)
    return case


BAD_ARGUMENTS["ONNXC_NUM_THREADS garbage"] = (_with_env("ONNXC_NUM_THREADS", "2 threads"),
                                              "ONNXC_NUM_THREADS")
BAD_ARGUMENTS["ONNXC_MAX_ALLOC_MB garbage"] = (_with_env("ONNXC_MAX_ALLOC_MB", "1e999"),
                                               "ONNXC_MAX_ALLOC_MB")


@pytest.mark.parametrize("case", sorted(BAD_ARGUMENTS))
def test_bad_argument_is_an_invalid_argument_error(case):
    call, fragment = BAD_ARGUMENTS[case]
    isolated(call).raised(InvalidArgumentError, fragment)


# --------------------------------------------------------------------------- deep nesting

DEPTH = 3000


def _ops(depth: int, op: str) -> str:
    return ('"builtin.module"() ({\n' + f'"{op}"() ({{\n' * depth
            + '}) : () -> ()\n' * depth + "}) : () -> ()\n")


def _attribute(depth: int, opening: str, closing: str, middle: str = "") -> str:
    return ('"builtin.module"() ({\n"test.op"() {a = ' + opening * depth + middle
            + closing * depth + '} : () -> ()\n}) : () -> ()\n')


NESTING = {
    "regions of scf.execute_region": lambda: _ops(DEPTH, "scf.execute_region"),
    "regions of generic ops": lambda: _ops(DEPTH, "test.op"),
    "arrays": lambda: _attribute(DEPTH, "[", "]"),
    "dictionaries": lambda: _attribute(DEPTH, "{b = ", "}", "1"),
    "types": lambda: ('"builtin.module"() ({\n"test.op"() : () -> ('
                      + "tuple<" * DEPTH + "i32" + ">" * DEPTH + ")\n}) : () -> ()\n"),
    "dense literal": lambda: _attribute(DEPTH, "dense<" + "[" * DEPTH, "",
                                        "1" + "]" * DEPTH + "> : tensor<" + "1x" * DEPTH
                                        + "i32>"),
}


@pytest.mark.parametrize("case", sorted(NESTING))
def test_deep_nesting_is_one_located_error(tmp_path, case):
    path = tmp_path / "deep.mlir"
    path.write_text(NESTING[case]())
    done = subprocess.run([sys.executable, "-m", "onnxc.tools.opt", str(path)],
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 1, done
    err = done.stderr
    assert re.fullmatch(re.escape(str(path)) + r":\d+:\d+: error: nested [^\n]*\n", err), err
    assert "internal error" not in err and "Recursion" not in err


def test_nesting_within_the_limit_still_works(tmp_path):
    depth = 40
    text = ('"builtin.module"() ({\n' + '"test.op"() ({\n' * depth
            + '"test.termop"() : () -> ()\n}) : () -> ()\n' * depth + "}) : () -> ()\n")
    path = tmp_path / "nested.mlir"
    path.write_text(text)
    done = subprocess.run([sys.executable, "-m", "onnxc.tools.opt", str(path), "-p", "cse"],
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count('"test.op"') == depth
