"""A compile runs with Python's automatic garbage collection off (onnxc/collector.py), and
leaves the collector as the caller had it: on, off, or after a failed compile."""

from __future__ import annotations

import gc

import pytest
from onnx import TensorProto

import onnxc
from onnxc import pipeline
from onnxc.errors import OnnxcError
from tests.single_op import single_op_model


def _relu_model():
    spec = (TensorProto.FLOAT, [4])
    return single_op_model("Relu", {"x": spec}, {"y": spec}, opset=None)  # onnx's newest


def test_the_collector_is_off_while_compiling_and_on_again_after(monkeypatch):
    seen = []
    real = pipeline.lower_graph_to_loops
    monkeypatch.setattr(pipeline, "lower_graph_to_loops",
                        lambda *a, **k: seen.append(gc.isenabled()) or real(*a, **k))
    assert gc.isenabled()
    onnxc.compile(_relu_model(), cache_dir=False)
    assert seen == [False]
    assert gc.isenabled()


def test_a_caller_that_turned_it_off_keeps_it_off():
    gc.disable()
    try:
        onnxc.compile(_relu_model(), cache_dir=False)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_failed_compile_turns_it_on_again():
    bad = _relu_model()
    bad.graph.node[0].op_type = "NoSuchOp"
    with pytest.raises(OnnxcError):
        onnxc.compile(bad, cache_dir=False)
    assert gc.isenabled()


def test_a_compile_collects_only_its_own_young_objects(monkeypatch):
    """A full collection at every compile would walk a long-lived process's whole heap (a
    server, a test suite compiling a thousand models): only generation 0 is collected."""
    generations = []
    real = gc.collect
    monkeypatch.setattr(gc, "collect", lambda generation=2: generations.append(generation)
                        or real(generation))
    onnxc.compile(_relu_model(), cache_dir=False)
    assert generations and set(generations) == {0}
