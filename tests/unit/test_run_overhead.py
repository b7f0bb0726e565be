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
