"""run()'s per-call cost: the checks stay, the Python work moves to construction (< 30 us)."""

import timeit
from types import MappingProxyType

import numpy as np
import pytest
from onnx import TensorProto

import onnxc
from onnxc.errors import InvalidInputError
from tests.single_op import single_op_model


@pytest.fixture(scope="module")
def relu():
    spec = (TensorProto.FLOAT, [1, 4])
    model = single_op_model("Relu", {"x": spec}, {"y": spec}, opset=17, ir_version=8)
    return onnxc.compile(model, cache_dir=False)


class _Sub(np.ndarray):
    """An ndarray subclass: takes the checked (slow) path, must still be accepted."""


X = np.array([[1.0, -2.0, 3.0, -4.0]], np.float32)
Y = np.maximum(X, 0)


def test_tiny_model_run_costs_under_30_us(relu):
    feeds = {"x": X}
    best = min(timeit.repeat(lambda: relu.run(None, feeds), number=2000, repeat=5)) / 2000
    assert best < 30e-6, f"run() took {best * 1e6:.1f} us per call"


def test_read_only_and_subclass_inputs(relu):
    frozen = X.copy()
    frozen.flags.writeable = False
    np.testing.assert_array_equal(relu(frozen)[0], Y)
    np.testing.assert_array_equal(relu(X.view(_Sub))[0], Y)
    assert frozen.flags.writeable is False  # the input is not touched


def test_any_mapping_of_feeds(relu):
    np.testing.assert_array_equal(relu.run(None, MappingProxyType({"x": X}))[0], Y)
    with pytest.raises(InvalidInputError, match="missing input 'x'"):
        relu.run(None, MappingProxyType({}))


def test_outputs_are_fresh_for_every_run(relu):
    first = relu(X)[0]
    second = relu(-X)[0]
    assert first is not second
    np.testing.assert_array_equal(first, Y)
    np.testing.assert_array_equal(second, np.maximum(-X, 0))


def test_the_common_case_and_what_leaves_it_agree(relu):
    """run(None, feeds) and model(x) take one frame for aligned, contiguous arrays of the
    input's dtype and a shape run before; anything else goes the checked way, with the
    same results or the same errors."""
    wide = np.zeros((1, 8), np.float32)
    wide[:, ::2] = X
    strided = wide[:, ::2]
    misaligned = np.frombuffer(b"\0" + X.tobytes(), np.uint8)[1:].view(np.float32)
    for x in (X, strided, misaligned.reshape(1, 4), np.asfortranarray(X)):
        np.testing.assert_array_equal(relu(x)[0], Y)
        np.testing.assert_array_equal(relu.run(None, {"x": x})[0], Y)
    with pytest.raises(InvalidInputError, match="float64"):
        relu.run(None, {"x": X.astype(np.float64)})
    with pytest.raises(InvalidInputError, match=r"unknown input name\(s\) \['z'\]"):
        relu.run(None, {"z": X})  # as many names as inputs, not the same ones
    with pytest.raises(InvalidInputError, match="shape"):
        relu(np.zeros((2, 4), np.float32))


def test_symbolic_batch_sizes_new_and_seen():
    spec = (TensorProto.FLOAT, ["N", 3])
    model = single_op_model("Relu", {"x": spec}, {"y": spec}, opset=17, ir_version=8)
    compiled = onnxc.compile(model, cache_dir=False)
    rng = np.random.default_rng(0)
    for n in (1, 5, 1, 5, 0, 2):  # a size's first run plans it, later ones reuse the plan
        x = rng.standard_normal((n, 3)).astype(np.float32)
        (y,) = compiled(x)
        assert y.shape == (n, 3)
        np.testing.assert_array_equal(y, np.maximum(x, 0))
        np.testing.assert_array_equal(compiled.run(None, {"x": x})[0], np.maximum(x, 0))
