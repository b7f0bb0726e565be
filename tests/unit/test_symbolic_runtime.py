"""Symbolic dimensions at run time: one compiled model, any size (runtime/symbolic_shapes.py).

A model whose inputs have symbolic dimensions is compiled once; each run binds the symbols
from the input shapes, checks the inputs agree, sizes the dynamic arena and the outputs, and
hands the symbol values to the native entry. Checked here through graph IR and through
`onnxc.compile` of ONNX models (cold, then warm from the cache), against numpy and
onnx.reference. Tolerance: exact for data movement and max/relu, rtol 1e-6 for one f32 add.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import onnxc
from onnxc.errors import InvalidInputError
from onnxc.lowering.plan_memory import dynamic_slots
from onnxc.runtime.symbolic_shapes import SymbolicSignature
from tests.ir_helpers import compile_graph

SEQ = 'tensor<1x?x8xf32, #graph.dims<["seq"]>>'

ADD_RELU = f"""
func.func @main(%x: {SEQ}, %b: tensor<8xf32>) -> {SEQ} {{
  %y = graph.add(%x, %b) : ({SEQ}, tensor<8xf32>) -> {SEQ}
  %z = graph.relu(%y) : ({SEQ}) -> {SEQ}
  %w = graph.mul(%z, %x) : ({SEQ}, {SEQ}) -> {SEQ}
  func.return %w : {SEQ}
}}
"""


def _add_relu_mul(x: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.maximum(x + b, 0) * x


@pytest.mark.parametrize("threads", [1, 2])
def test_one_compile_runs_every_size(threads):
    model = compile_graph(ADD_RELU, num_threads=threads)
    assert model.inputs[0].shape == (1, "seq", 8)
    assert model.outputs[0].shape == (1, "seq", 8)
    rng = np.random.default_rng(0)
    b = rng.standard_normal(8).astype(np.float32)
    for seq in (1, 5, 64, 1000, 3):  # grows the dynamic arena, then runs smaller in it
        x = rng.standard_normal((1, seq, 8)).astype(np.float32)
        (y,) = model(x, b)
        assert y.shape == (1, seq, 8)
        np.testing.assert_allclose(y, _add_relu_mul(x, b), rtol=1e-6)


def test_symbolic_and_static_compiles_agree():
    static = ADD_RELU.replace(SEQ, "tensor<1x37x8xf32>")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 37, 8)).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    np.testing.assert_array_equal(compile_graph(ADD_RELU)(x, b)[0],
                                  compile_graph(static)(x, b)[0])


TWO_INPUTS = """
func.func @main(%a: tensor<?x4xf32, #graph.dims<["n"]>>, %b: tensor<?x4xf32, #graph.dims<["n"]>>)
    -> tensor<?x4xf32, #graph.dims<["n"]>> {
  %y = graph.max(%a, %b) : (tensor<?x4xf32, #graph.dims<["n"]>>, tensor<?x4xf32, #graph.dims<["n"]>>) -> tensor<?x4xf32, #graph.dims<["n"]>>
  func.return %y : tensor<?x4xf32, #graph.dims<["n"]>>
}
"""


def test_inputs_must_agree_on_a_symbol():
    model = compile_graph(TWO_INPUTS)
    a, b = np.ones((3, 4), np.float32), np.zeros((3, 4), np.float32)
    np.testing.assert_array_equal(model(a, b)[0], a)
    with pytest.raises(InvalidInputError, match="'n' = 3"):
        model(a, np.zeros((5, 4), np.float32))


@pytest.mark.parametrize("shape, match", [
    ((1, 4, 7), "dimension 2 is fixed at 8"),
    ((1, 4), "expected rank 3"),
    ((2, 4, 8), "dimension 0 is fixed at 1"),
])
def test_bad_input_shapes_are_refused_before_native_code(shape, match):
    model = compile_graph(ADD_RELU)
    with pytest.raises(InvalidInputError, match=match):
        model(np.zeros(shape, np.float32), np.zeros(8, np.float32))


def test_a_symbolic_dimension_may_be_zero():
    """A decoder's first step has an empty KV cache: a size of 0 runs, with empty outputs."""
    model = compile_graph(ADD_RELU)
    (y,) = model(np.zeros((1, 0, 8), np.float32), np.ones(8, np.float32))
    assert y.shape == (1, 0, 8)


def test_outputs_written_into_caller_arrays():
    model = compile_graph(ADD_RELU)
    x = np.linspace(-1, 1, 40, dtype=np.float32).reshape(1, 5, 8)
    b = np.zeros(8, np.float32)
    out = np.empty((1, 5, 8), np.float32)
    model.run(None, {"input_0": x, "input_1": b}, out=[out])
    np.testing.assert_array_equal(out, _add_relu_mul(x, b))
    with pytest.raises(InvalidInputError, match="out\\[0\\]"):
        model.run(None, {"input_0": x, "input_1": b}, out=[np.empty((1, 6, 8), np.float32)])


def test_dynamic_slots_are_reused_only_for_equal_sizes():
    # a [0, 2], b [1, 3] same size, c [3, 4] same size as a (a is dead by then), d other size
    slots, assigned = dynamic_slots(["32*seq", "32*seq", "32*seq", "4*seq*seq"],
                                    [0, 1, 3, 3], [2, 3, 4, 4])
    assert slots == ["32*seq", "32*seq", "4*seq*seq"]
    assert assigned == [0, 1, 0, 2]
    offsets, total = SymbolicSignature(("seq",), tuple(slots)).slot_offsets({"seq": 3})
    assert offsets == [0, 128, 256] and total == 320  # 96 -> 128, 96 -> 128, 36 -> 64


def _onnx_model(dims=("batch", "seq", 8)):
    nodes = [helper.make_node("Add", ["x", "b"], ["s"]),
             helper.make_node("Relu", ["s"], ["r"]),
             helper.make_node("Mul", ["r", "x"], ["y"])]
    b = helper.make_tensor("b", TensorProto.FLOAT, [8], np.linspace(-1, 1, 8).tolist())
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(dims))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(dims))], [b])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    return model


def test_compile_onnx_model_cold_and_warm(tmp_path):
    model = _onnx_model()
    reference = ReferenceEvaluator(model)
    cold = onnxc.compile(model, cache_dir=tmp_path)
    warm = onnxc.compile(model, cache_dir=tmp_path)
    assert not cold.from_cache and warm.from_cache
    assert warm.inputs[0].shape == cold.inputs[0].shape
    assert warm.symbolic == cold.symbolic
    rng = np.random.default_rng(2)
    for shape in [(1, 1, 8), (2, 9, 8), (3, 4, 8)]:
        x = rng.standard_normal(shape).astype(np.float32)
        (expected,) = reference.run(None, {"x": x})
        (y_cold,) = cold(x)
        (y_warm,) = warm(x)
        np.testing.assert_allclose(y_cold, expected, rtol=1e-6, atol=1e-7)
        np.testing.assert_array_equal(y_cold, y_warm)


def test_an_artifact_keeps_its_symbolic_dimensions(tmp_path):
    """One artifact for every n (tests/unit/test_symbolic_artifacts.py has the C side)."""
    model = _onnx_model((2, "n", 8))
    onnxc.compile_artifact(model, tmp_path / "a", quiet=True)
    loaded, jit = onnxc.load(tmp_path / "a"), onnxc.compile(model, cache_dir=False, quiet=True)
    for n in (1, 5):
        x = np.random.default_rng(n).standard_normal((2, n, 8)).astype(np.float32)
        np.testing.assert_array_equal(loaded(x)[0], jit(x)[0])
