"""One ModelABI record: the JIT's model, the cache entry and the artifact manifest hold the same.

A model compiled by `onnxc.compile` carries the `ModelABI` the lowering returned; its cache
entry stores `abi.to_json()` and a hit rebuilds an equal record; `compile_artifact`'s
manifest holds the same JSON. Checked for a static model, a batch-separable one (a size
symbol for the JIT, rows per sample in an artifact) and a symbolic one.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxc
from onnxc.runtime.model_abi import BadEntry, ModelABI

_ABI_KEYS = {"inputs", "outputs", "batch_rows", "symbolic", "arena_bytes", "intermediate_bytes",
             "num_threads", "precision", "target", "status_offset", "check_sites", "profile"}


def _model(batch, seq) -> onnx.ModelProto:
    w = numpy_helper.from_array(
        np.random.default_rng(0).standard_normal((8, 8)).astype(np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]),
             helper.make_node("Gather", ["m", "i"], ["y"], axis=1)]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, seq, 8]),
                     helper.make_tensor_value_info("i", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 2, 8])], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize(("batch", "seq"), [(2, 4), ("N", 4), (1, "S")])
def test_the_cache_entry_and_the_manifest_hold_the_compiled_models_abi(tmp_path, batch, seq):
    model = _model(batch, seq)
    cold = onnxc.compile(model, cache_dir=tmp_path / "cache")
    warm = onnxc.compile(model, cache_dir=tmp_path / "cache")
    assert warm.from_cache and warm.abi == cold.abi
    assert ModelABI.from_json(json.loads(json.dumps(cold.abi.to_json()))) == cold.abi
    # the JIT compiles a separable batch as a symbol, an artifact runs it per sample (rows)
    assert cold.abi.batch_rows is None
    assert (cold.abi.symbolic is not None) == (batch == "N" or seq == "S")
    if sys.platform == "linux":
        onnxc.compile_artifact(model, tmp_path / "art", quiet=True)
        manifest = json.loads((tmp_path / "art" / "manifest.json").read_text())
        abi = ModelABI.from_json(manifest)
        assert abi.to_json() == {k: manifest[k] for k in _ABI_KEYS}
        assert (abi.batch_rows is not None) == (batch == "N")
        if batch != "N":
            assert abi.inputs == cold.abi.inputs and abi.outputs == cold.abi.outputs
        assert onnxc.load(tmp_path / "art").abi == abi


@pytest.mark.parametrize(("field", "value", "reason"), [
    ("precision", "fp8", "precision"),
    ("num_threads", 0, "threads"),
    ("target", {"name": "x"}, "target"),
    ("inputs", [["x", [2, 4], "object"]], "tensor"),
    ("status_offset", 1 << 40, "status"),
])
def test_from_json_names_what_is_wrong(field, value, reason):
    row = onnxc.compile(_model(2, 4), cache_dir=False).abi.to_json()
    row[field] = value
    with pytest.raises(BadEntry, match=reason):
        ModelABI.from_json(row)
