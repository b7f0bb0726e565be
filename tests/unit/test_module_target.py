"""The target is an attribute of the module (`onnxc.target`), and its passes build for it.

The passes read the module's target from the module itself (`onnxc.target.target_of`), so
the same graph-dialect module lowers to 512-bit vectors when it records an AVX-512 target and
to 128-bit ones when it records SSE4 (x86-64-v2), whatever machine compiles it: here the
process's host is made the other one. A module without the attribute builds for the host.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects.builtin import DictionaryAttr, StringAttr

from onnxc import pipeline, target
from onnxc.errors import InvalidArgumentError
from onnxc.frontend import import_onnx
from onnxc.target import (
    TARGET_ATTR,
    host_target,
    module_target,
    parse_target,
    set_module_target,
)
from onnxc.tools.ir_printer import module_text


def _conv_module():
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((16, 16, 3, 3)).astype(np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 8, 8])], [w])
    return import_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))


def _loops_text(target_name: str | None, host: str, monkeypatch) -> str:
    """The conv lowered to loops in a process whose host is `host`, the module recording
    `target_name` (None: no attribute)."""
    module = _conv_module()
    if target_name is not None:
        set_module_target(module, parse_target(target_name))
    with monkeypatch.context() as patched:
        patched.setattr(target, "host_target", lambda: parse_target(host))
        assert target.target_of(module).name == (target_name or host)
        pipeline.lower_graph_to_loops(pipeline.make_context(), module)
    return module_text(module)


def test_the_module_target_decides_the_vector_width_over_the_host(monkeypatch):
    wide = _loops_text("x86-64-v4", host="x86-64-v2", monkeypatch=monkeypatch)
    narrow = _loops_text("x86-64-v2", host="x86-64-v4", monkeypatch=monkeypatch)
    assert "vector<16xf32>" in wide
    assert "vector<16xf32>" not in narrow and "vector<8xf32>" not in narrow
    assert "vector<4xf32>" in narrow


def test_without_the_attribute_the_host_decides(monkeypatch):
    assert "vector<16xf32>" in _loops_text(None, host="x86-64-v4", monkeypatch=monkeypatch)
    assert "vector<16xf32>" not in _loops_text(None, host="x86-64-v2",
                                               monkeypatch=monkeypatch)


def test_the_attribute_round_trips_and_host_stays_host():
    module = _conv_module()
    assert module_target(module) is None
    set_module_target(module, parse_target("neoverse-n1"))
    assert module_target(module) == parse_target("neoverse-n1")
    set_module_target(module, host_target())
    assert module_target(module) is host_target()


@pytest.mark.parametrize("attr", [
    StringAttr("x86-64-v3"),
    DictionaryAttr({"name": StringAttr("t"), "triple": StringAttr("x86_64-unknown-linux-gnu")}),
    DictionaryAttr({"name": StringAttr("t"), "triple": StringAttr("nonsense-unknown-none"),
                    "cpu": StringAttr("generic"), "features": StringAttr("")}),
])
def test_a_malformed_target_attribute_is_a_clear_error(attr):
    module = _conv_module()
    module.attributes[TARGET_ATTR] = attr
    with pytest.raises(InvalidArgumentError, match=TARGET_ATTR):
        pipeline.lower_graph_to_loops(pipeline.make_context(), module)
