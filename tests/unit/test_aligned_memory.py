"""Constants and arenas reach native code at 64-byte bounds (runtime/aligned_memory.py).

The kernels load packed weights by whole vectors: a weight at another offset splits every
load across two cache lines. A cold compile's constants start as views of the IR's bytes
at any offset, a cache hit's as views of the mapped entry; both must be aligned, and equal
in value to what the compile produced.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import onnxc
from onnxc.runtime.aligned_memory import aligned_constant


def test_aligned_constant_copies_only_what_is_not_aligned():
    raw = np.arange(200, dtype=np.uint8)
    start = (-raw.ctypes.data) % 64
    aligned = raw[start:start + 64].view(np.float32)
    assert aligned_constant(aligned) is aligned
    shifted = raw[start + 4:start + 68].view(np.float32).reshape(4, 4)
    copy = aligned_constant(shifted)
    assert copy.ctypes.data % 64 == 0 and copy.shape == (4, 4)
    np.testing.assert_array_equal(copy, shifted)
    empty = aligned_constant(raw[start + 1:start + 1])
    assert empty.size == 0


def _model() -> object:
    rng = np.random.default_rng(2)
    inits = [numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)
             for name, shape in (("w", (16, 8, 3, 3)), ("b", (16,)), ("m", (16, 5)))]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("ReduceMean", ["c"], ["r"], axes=[2, 3], keepdims=0),
             helper.make_node("MatMul", ["r", "m"], ["y"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 8, 9, 9))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_cold_and_cached_constants_are_aligned(tmp_path):
    model = _model()
    x = np.random.default_rng(3).standard_normal((1, 8, 9, 9)).astype(np.float32)
    cold = onnxc.compile(model, cache_dir=tmp_path)
    warm = onnxc.compile(model, cache_dir=tmp_path)
    assert not cold.from_cache and warm.from_cache
    for compiled in (cold, warm):
        assert compiled._constants
        assert all(c.ctypes.data % 64 == 0 for c in compiled._constants)
    for a, b in zip(cold._constants, warm._constants):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(cold.run(None, {"x": x})[0], warm.run(None, {"x": x})[0])
