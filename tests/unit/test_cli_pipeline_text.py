"""Pipeline text: MLIR's nested form and xDSL's flat form give the same pass list."""

import re

import pytest
from xdsl.transforms.dead_code_elimination import DeadCodeElimination

from onnxc.errors import OnnxcError
from onnxc.passes.cse import CsePass
from onnxc.pass_manager.pipeline_text import (
    PassOptionError,
    PipelineSyntaxError,
    UnknownPassError,
    build_pipeline,
    default_pass_registry,
    flatten_pipeline,
    split_pipeline,
)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("", []),
        ("cse", ["cse"]),
        ("cse,dce", ["cse", "dce"]),
        (" cse , dce ", ["cse", "dce"]),
        ("builtin.module(cse)", ["cse"]),
        ("builtin.module(func.func(cse,canonicalize),dce)", ["cse", "canonicalize", "dce"]),
        ("builtin.module(func.func(cse), any(dce), canonicalize)", ["cse", "dce", "canonicalize"]),
        ("builtin.module()", []),
        ("a{x=1 y=2},b", ["a{x=1 y=2}", "b"]),
        ("a {x=1}", ["a{x=1}"]),
        ("builtin.module(p{sizes=4,4 name=\"a(b)\"})", ['p{sizes=4,4 name="a(b)"}']),
        ("builtin.module(p{inner={k=v}})", ["p{inner={k=v}}"]),
        ("gpu.module(func.func(cse))", ["cse"]),
    ],
)
def test_split_pipeline(text, expected):
    assert split_pipeline(text) == expected
    assert flatten_pipeline(text) == ",".join(expected)


@pytest.mark.parametrize(
    "text, reason",
    [
        ("builtin.module(cse", "unbalanced '('"),
        ("cse)", "unbalanced ')'"),
        ("cse,", "trailing ','"),
        (",cse", "empty pass name"),
        ("builtin.module(cse,)", "empty pass name"),
        ("cse dce", "expected ','"),
        ("cse{x=1", "unterminated '{'"),
        ("cse;", "unexpected ';'"),
    ],
)
def test_split_pipeline_rejects(text, reason):
    with pytest.raises(PipelineSyntaxError, match=re.escape(reason)):
        split_pipeline(text)


def test_build_pipeline_nested_and_flat_agree():
    nested = build_pipeline("builtin.module(func.func(cse),dce)")
    flat = build_pipeline("cse,dce")
    assert [type(p) for p in nested.passes] == [CsePass,
                                               DeadCodeElimination]
    assert nested.passes == flat.passes


def test_build_pipeline_passes_options():
    (p,) = build_pipeline("builtin.module(arith-add-fastmath{flags=nnan,ninf})").passes
    assert p.flags == ("nnan", "ninf")


def test_build_pipeline_errors_are_onnxc_errors():
    with pytest.raises(UnknownPassError, match="did you mean 'cse'"):
        build_pipeline("csee")
    with pytest.raises(PassOptionError, match="arith-add-fastmath"):
        build_pipeline("arith-add-fastmath{bogus=1}")
    with pytest.raises(PipelineSyntaxError, match="invalid pass pipeline"):
        build_pipeline("cse{a=1,b=2}")  # options are space-separated
    for cls in (UnknownPassError, PassOptionError, PipelineSyntaxError):
        assert issubclass(cls, OnnxcError)


def test_registry_has_xdsl_and_onnxc_passes():
    registry = default_pass_registry()
    for name in ("cse", "dce", "canonicalize", "convert-scf-to-cf",
                 "reconcile-unrealized-casts", "convert-graph-to-loops", "plan-memory"):
        assert name in registry



def test_configured_passes_are_shared_per_spec():
    """Passes (frozen dataclasses) are built once per distinct spec: xDSL's option parsing
    costs ~13 ms per pipeline, on every compile."""
    first = build_pipeline("outline-parallel-loops{num-threads=2}").passes[0]
    assert build_pipeline("outline-parallel-loops{num-threads=2}").passes[0] is first
    other = build_pipeline("outline-parallel-loops{num-threads=3}").passes[0]
    assert other is not first and other.num_threads == 3
