"""Every argument of `onnxc.compile` and `onnxc.optimize` is checked before any work
(src/onnxc/arguments.py, frontend/batch_axes.py `check_fixed_shapes`): a bad one is an
InvalidArgumentError naming the argument and the value, never a TypeError or ValueError from
deep inside, and never silently accepted (negative or contradicting input_shapes)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto

import onnxc
from onnxc.errors import InvalidArgumentError, OnnxcError
from onnxc.runtime import threads
from tests.single_op import single_op_model

F = TensorProto.FLOAT


def _relu(shape) -> onnx.ModelProto:
    return single_op_model("Relu", {"x": (F, shape)}, {"y": (F, shape)}, node_name="r",
                           opset=17, ir_version=8)


STATIC = _relu([2, 4])
DYNAMIC = _relu(["a", "b"])


def _add_same_symbol() -> onnx.ModelProto:
    spec = (F, ["N", 3])
    return single_op_model("Add", {"x": spec, "z": spec}, {"y": spec}, node_name="add",
                           opset=17, ir_version=8)


@pytest.mark.parametrize("options, fragments", [
    ({"opt_level": 9}, ["opt_level", "9"]),
    ({"opt_level": -1}, ["opt_level"]),
    ({"opt_level": "3"}, ["opt_level", "str"]),
    ({"opt_level": True}, ["opt_level"]),
    ({"opt_level": 2.0}, ["opt_level", "float"]),
    ({"pass_pipeline": 42}, ["pass_pipeline", "42"]),
    ({"pass_pipeline": ["cse", 7]}, ["pass_pipeline[1]", "7"]),
    ({"pass_pipeline": b"cse"}, ["pass_pipeline"]),
    ({"verbose": "yes"}, ["verbose", "'yes'"]),
    ({"verify_numerics": 1}, ["verify_numerics"]),
    ({"cache_dir": 5}, ["cache_dir", "5"]),
    ({"cache_dir": ""}, ["cache_dir"]),
    ({"num_threads": 0}, ["num_threads", "0"]),
    ({"num_threads": -2}, ["num_threads"]),
    ({"num_threads": 1.5}, ["num_threads", "1.5"]),
    ({"num_threads": True}, ["num_threads"]),
    ({"num_threads": 10**6}, ["num_threads", "1000000"]),
    ({"input_shapes": [("x", [2, 4])]}, ["input_shapes", "mapping"]),
    ({"input_shapes": {"x": 4}}, ["input_shapes['x']", "sequence"]),
    ({"input_shapes": {"x": "24"}}, ["input_shapes['x']", "sequence"]),
    ({"input_shapes": {3: [2, 4]}}, ["input_shapes key", "3"]),
    ({"input_shapes": {"x": ["a"]}}, ["input_shapes['x'][0]", "'a'"]),
    ({"input_shapes": {"x": [2.0, 4]}}, ["input_shapes['x'][0]", "2.0"]),
    ({"input_shapes": {"x": [2, -1]}}, ["input_shapes['x'][1]", "-1"]),
    ({"input_shapes": {"x": [2**63, 1]}}, ["input_shapes['x'][0]", str(2**63)]),
    ({"target": 42}, ["target", "42"]),
    ({"target": "nonsense"}, ["target", "'nonsense'"]),
    ({"target": "x86-64-v9"}, ["target", "'x86-64-v9'"]),
])
def test_bad_compile_argument_is_named(options, fragments):
    with pytest.raises(InvalidArgumentError) as caught:
        onnxc.compile(DYNAMIC if "input_shapes" in options else STATIC, **options)
    for fragment in fragments:
        assert fragment in str(caught.value)


@pytest.mark.parametrize("model", [42, 3.5, None, ["model.onnx"], {"graph": 1}])
def test_a_model_that_is_not_a_path_bytes_or_proto(model):
    for entry in (onnxc.compile, onnxc.optimize, onnxc.import_onnx):
        with pytest.raises(InvalidArgumentError, match="model must be a path, bytes"):
            entry(model)


@pytest.mark.parametrize("options, name", [
    ({"opt_level": 4}, "opt_level"), ({"pass_pipeline": 1}, "pass_pipeline"),
    ({"stats": "no"}, "stats"), ({"verify_numerics": None}, "verify_numerics"),
])
def test_bad_optimize_argument_is_named(options, name):
    with pytest.raises(InvalidArgumentError, match=name):
        onnxc.optimize(STATIC, **options)


def test_good_arguments_of_every_accepted_kind(tmp_path):
    path = tmp_path / "relu.onnx"
    onnx.save(DYNAMIC, path)
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    for model in (path, str(path), path.read_bytes(), DYNAMIC):
        compiled = onnxc.compile(model, opt_level=1, pass_pipeline=None, verbose=False,
                                 cache_dir=tmp_path / "cache", num_threads=np.int64(1),
                                 input_shapes={"x": (np.int64(2), 3)})
        np.testing.assert_array_equal(compiled(x)[0], np.maximum(x, 0))
    assert onnxc.compile(STATIC, pass_pipeline=["cse"], cache_dir=False).num_threads >= 1
    assert onnxc.optimize(onnxc.import_onnx(STATIC), opt_level=0) is not None


@pytest.mark.parametrize("shapes, fragments", [
    ({"z": [2, 4]}, ["'z'", "not a graph input", "'x'"]),
    ({"x": [2, 4, 1]}, ["rank 3", "rank 2"]),
    ({"x": [3, 4]}, ["input_shapes['x'][0] is 3", "static, of size 2"]),
])
def test_input_shapes_the_model_contradicts(shapes, fragments):
    with pytest.raises(InvalidArgumentError) as caught:
        onnxc.compile(STATIC, cache_dir=False, input_shapes=shapes)
    for fragment in fragments:
        assert fragment in str(caught.value)


def test_one_symbolic_dimension_given_two_sizes():
    with pytest.raises(InvalidArgumentError, match="names both 'N'"):
        onnxc.compile(_add_same_symbol(), cache_dir=False,
                      input_shapes={"x": [2, 3], "z": [5, 3]})
    compiled = onnxc.compile(_add_same_symbol(), cache_dir=False,
                             input_shapes={"x": [2, 3], "z": [2, 3]})
    assert [s.shape for s in compiled.inputs] == [(2, 3), (2, 3)]


def test_input_shapes_matching_the_declared_static_dims_are_fine():
    compiled = onnxc.compile(STATIC, cache_dir=False, input_shapes={"x": [2, 4]})
    assert compiled.inputs[0].shape == (2, 4)


@pytest.mark.parametrize("value", ["zero", "0", "-3", "1.5", "100000"])
def test_garbage_in_onnxc_num_threads(monkeypatch, value):
    monkeypatch.setenv("ONNXC_NUM_THREADS", value)
    with pytest.raises(InvalidArgumentError, match="ONNXC_NUM_THREADS"):
        onnxc.compile(STATIC, cache_dir=False)
    with pytest.raises(InvalidArgumentError, match="ONNXC_NUM_THREADS"):
        threads.default_num_threads()


def test_explicit_num_threads_wins_over_a_bad_environment(monkeypatch):
    monkeypatch.setenv("ONNXC_NUM_THREADS", "many")
    assert onnxc.compile(STATIC, cache_dir=False, num_threads=1).num_threads == 1


@pytest.mark.parametrize("value", ["lots", "0", "-1", "2.5"])
def test_garbage_in_onnxc_max_alloc_mb(monkeypatch, value):
    monkeypatch.setenv("ONNXC_MAX_ALLOC_MB", value)
    with pytest.raises(InvalidArgumentError, match="ONNXC_MAX_ALLOC_MB"):
        onnxc.compile(STATIC, cache_dir=False)


def test_errors_are_onnxc_errors_and_not_builtin_ones():
    assert issubclass(InvalidArgumentError, OnnxcError)
    assert not issubclass(InvalidArgumentError, (TypeError, ValueError))


# ------------------------------------------------ a compile option is one field


def test_every_spelling_of_the_options_comes_from_compile_options():
    """A CompileOptions field is an `onnxc.compile` / `compile_artifact` keyword, an
    `onnxc run` / `onnxc compile` flag, a row of docs/python-api.md and (when it changes
    code) part of the cache key, with nothing else to edit."""
    import argparse
    import dataclasses
    import inspect
    from pathlib import Path

    from onnxc.compile_options import CompileOptions, option_specs, options_table
    from onnxc.tools.run import build_parser

    names = [f.name for f in dataclasses.fields(CompileOptions)]
    assert list(option_specs()) == names
    for function in (onnxc.compile, onnxc.compile_artifact):
        params = inspect.signature(function).parameters
        assert set(names) <= set(params), function.__name__
        assert all(f"`{name}`" in function.__doc__ for name in names)
    parser = build_parser()
    subcommands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for command in ("run", "compile"):
        flags = {a.dest for a in subcommands.choices[command]._actions}
        assert set(names) <= flags, command
    page = (Path(__file__).parents[2] / "docs" / "python-api.md").read_text()
    assert options_table() in page, "docs/python-api.md's options table is stale: paste " \
        "onnxc.compile_options.options_table()"


def test_an_unknown_option_is_named():
    with pytest.raises(InvalidArgumentError, match="unknown compile option 'opt_lvl'"):
        onnxc.compile(STATIC, opt_lvl=2)
    with pytest.raises(InvalidArgumentError, match="unknown compile option 'thread'"):
        onnxc.compile_artifact(STATIC, "/nonexistent", thread=2)


def test_flags_give_the_same_options_as_keywords():
    """`onnxc compile --input-shapes x=2x4 --opt-level 1 --target x86-64-v3` resolves to the
    CompileOptions of the same keywords; absent flags leave the defaults."""
    from onnxc.compile_options import CompileOptions, given_options
    from onnxc.tools.run import build_parser

    args = build_parser().parse_args(["compile", "m.onnx", "-o", "out", "--input-shapes",
                                      "x=2x4", "--opt-level", "1", "--target", "x86-64-v3"])
    given = given_options(args)
    assert given == {"input_shapes": {"x": (2, 4)}, "opt_level": 1, "target": "x86-64-v3"}
    assert CompileOptions.of(runs_here=False, **given) == CompileOptions.of(
        runs_here=False, input_shapes={"x": [2, 4]}, opt_level=1, target="x86-64-v3")
    assert given_options(build_parser().parse_args(["run"])) == {}
