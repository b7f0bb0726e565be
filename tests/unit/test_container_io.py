"""Sequence and optional graph inputs and outputs as onnxc.backend and onnxc.compile run them
(src/onnxc/container_io.py's ContainerModel, whose errors are not turned into skips here):
any sequence length, one compile per signature, optional inputs None or a value, results as
onnxruntime gives them."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper

import onnxc
from onnxc.container_io import ContainerModel
from onnxc.errors import InvalidInputError

F = onnx.TensorProto.FLOAT
S = onnx.TensorProto.STRING


def _sequence_model(elem_type: int = F) -> onnx.ModelProto:
    """s (a sequence) -> s with t appended, and its length; t doubled into a sequence."""
    seq = helper.make_tensor_sequence_value_info
    nodes = [helper.make_node("SequenceInsert", ["s", "t"], ["out"]),
             helper.make_node("SequenceLength", ["out"], ["n"]),
             helper.make_node("SequenceConstruct", ["t", "t"], ["pair"])]
    graph = helper.make_graph(
        nodes, "seq", [seq("s", elem_type, None),
                       helper.make_tensor_value_info("t", elem_type, None)],
        [seq("out", elem_type, None), helper.make_tensor_value_info("n", onnx.TensorProto.INT64, []),
         seq("pair", elem_type, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


def _same(got, expected) -> None:
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        if isinstance(e, list):
            assert isinstance(g, list) and len(g) == len(e)
            for a, b in zip(g, e):
                np.testing.assert_array_equal(a, b)
        else:
            np.testing.assert_array_equal(g, e)


def test_sequences_of_any_length():
    """Lengths 0, 1, 3 (and 3 again: the cached compile), float and string elements,
    against onnxruntime."""
    for elem_type, make in ((F, lambda n: np.full((2,), n, np.float32)),
                            (S, lambda n: np.array([f"é{n}", ""], dtype=object))):
        model = _sequence_model(elem_type)
        rep = ContainerModel(model, onnxc.compile, lambda error: None)
        session = ort.InferenceSession(model.SerializeToString(),
                                       providers=["CPUExecutionProvider"])
        for n in (0, 1, 3, 3):
            feeds = {"s": [make(i) for i in range(n)], "t": make(9)}
            _same(rep.run(feeds), session.run(None, feeds))
        assert len(rep._variants) == 3


def test_optional_inputs_and_outputs():
    """An optional input None or a value; the optional output None or a value."""
    opt = helper.make_tensor_type_proto(F, [2])
    nodes = [helper.make_node("OptionalHasElement", ["o"], ["has"]),
             helper.make_node("Identity", ["o"], ["same"])]
    graph = helper.make_graph(
        nodes, "opt", [helper.make_value_info("o", helper.make_optional_type_proto(opt))],
        [helper.make_tensor_value_info("has", onnx.TensorProto.BOOL, []),
         helper.make_value_info("same", helper.make_optional_type_proto(opt))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)],
                              ir_version=9)
    rep = ContainerModel(model, onnxc.compile, lambda error: None)
    has, same = rep.run({"o": None})
    assert not has and same is None
    has, same = rep.run({"o": np.array([1.5, 2.0], np.float32)})
    assert has
    np.testing.assert_array_equal(same, [1.5, 2.0])


def test_onnxc_compile_gives_a_model_taking_and_giving_containers(tmp_path):
    """`onnxc.compile` of a model with container inputs or outputs (a ModelProto and a file)
    runs as CompiledModel does, with lists and None for them, against onnxruntime; a second
    call of a signature is the same compile; bad feeds and output names are typed errors."""
    model = _sequence_model()
    path = tmp_path / "seq.onnx"
    onnx.save(model, path)
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    for source in (model, str(path)):
        compiled = onnxc.compile(source, cache_dir=tmp_path / "cache")
        assert isinstance(compiled, onnxc.container_io.CompiledContainerModel)
        assert compiled.input_names == ["s", "t"]
        assert compiled.output_names == ["out", "n", "pair"]
        for n in (2, 0, 2):
            feeds = {"s": [np.full((3,), i, np.float32) for i in range(n)],
                     "t": np.ones(3, np.float32)}
            _same(compiled.run(None, feeds), session.run(None, feeds))
        n_only = compiled.run(["n"], feeds)
        assert n_only[0] == 3
        _same(compiled(*feeds.values()), session.run(None, feeds))
        with pytest.raises(InvalidInputError, match="missing \\['t'\\]"):
            compiled.run(None, {"s": []})
        with pytest.raises(InvalidInputError, match="unknown output name 'nope'"):
            compiled.run(["nope"], feeds)


def test_a_tensor_model_still_gives_a_compiled_model():
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", F, [2])],
                              [helper.make_tensor_value_info("y", F, [2])])
    compiled = onnxc.compile(helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", 17)]))
    assert isinstance(compiled, onnxc.CompiledModel)
