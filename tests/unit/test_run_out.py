"""`run(..., out=[...])`: results written into caller-owned arrays, which are checked first."""

import numpy as np
import pytest
from onnx import TensorProto, helper

import onnxc
from onnxc.errors import InvalidInputError
from tests.single_op import graph_model, single_op_model


@pytest.fixture(scope="module")
def compiled():
    spec = (TensorProto.FLOAT, [4, 8])
    model = graph_model(
        [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Neg", ["x"], ["z"])],
        {"x": spec}, {"y": spec, "z": spec}, opset=17)
    return onnxc.compile(model, cache_dir=False)


def test_results_land_in_the_given_arrays(compiled):
    x = np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8)
    y, z = np.full((4, 8), 7, np.float32), np.full((4, 8), 7, np.float32)
    results = compiled.run(None, {"x": x}, out=[y, z])
    assert results[0] is y and results[1] is z
    np.testing.assert_array_equal(y, np.maximum(x, 0))
    np.testing.assert_array_equal(z, -x)


@pytest.mark.parametrize("make_out, message", [
    (lambda x: [np.empty((4, 8), np.float32)], "sequence of 2"),
    (lambda x: [np.empty((4, 8), np.float64), np.empty((4, 8), np.float32)], "out\\[0\\]"),
    (lambda x: [np.empty((8, 4), np.float32), np.empty((4, 8), np.float32)], "out\\[0\\]"),
    (lambda x: [np.empty((4, 16), np.float32)[:, ::2], np.empty((4, 8), np.float32)],
     "C-contiguous"),
    (lambda x: [x, np.empty((4, 8), np.float32)], "overlaps"),
    (lambda x: [(o := np.empty((4, 8), np.float32)), o], "overlaps"),
])
def test_unusable_output_arrays_are_refused(compiled, make_out, message):
    x = np.ones((4, 8), np.float32)
    with pytest.raises(InvalidInputError, match=message):
        compiled.run(None, {"x": x}, out=make_out(x))


@pytest.fixture(scope="module")
def add():
    model = single_op_model("Add", {"a": (np.float32, [4, 4]), "b": (np.float32, [4])},
                            {"y": (np.float32, [4, 4])}, opset=17)
    return onnxc.compile(model, cache_dir=False)


def test_overlap_is_found_past_inputs_that_share_memory(add):
    """Inputs may alias each other; an output that overlaps one is refused wherever the
    others lie. Here 'b' lies inside 'a' and the output starts past 'b' but inside 'a'
    (comparing only neighbours in address order would miss it)."""
    long = np.zeros(40, np.float32)
    a, b = long[0:16].reshape(4, 4), long[2:6]
    with pytest.raises(InvalidInputError, match=r"out\[0\] overlaps"):
        add.run(None, {"a": a, "b": b}, out=[long[8:24].reshape(4, 4)])
    with pytest.raises(InvalidInputError, match=r"out\[0\] overlaps"):
        add.run(None, {"a": a, "b": long[20:24]}, out=[long[16:32].reshape(4, 4)])


def test_adjacent_and_aliased_arrays_are_accepted(add):
    long = np.arange(40, dtype=np.float32)
    a, b = long[0:16].reshape(4, 4), long[2:6]  # inputs may share memory
    (y,) = add.run(None, {"a": a, "b": b}, out=[long[16:32].reshape(4, 4)])  # just after
    np.testing.assert_array_equal(y, np.arange(16, dtype=np.float32).reshape(4, 4)
                                  + np.arange(2, 6, dtype=np.float32))
    assert y.base is long
