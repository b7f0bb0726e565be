"""The `onnxc` attribute dialect: every `onnxc.*` attribute is registered and verified.

A lowered model's IR holds only registered attributes of the right kind; a misspelt name, a
value of the wrong kind or an attribute on the wrong op is a verifier error naming the op and
the attribute (through the pass manager's verify_module, as every pipeline verifies).
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects.builtin import IntegerAttr, StringAttr, i64
from xdsl.dialects.func import FuncOp
from xdsl.utils.exceptions import VerifyException

from onnxc import pipeline
from onnxc.dialects.onnxc_attributes import ONNXC_ATTRIBUTES, verify_onnxc_attributes
from onnxc.frontend import import_onnx
from onnxc.pass_manager.verifier import verify_module


def _lowered():
    """A Gather (a checked index) after graph-to-loops and the entry ABI."""
    rng = np.random.default_rng(0)
    table = numpy_helper.from_array(rng.standard_normal((5, 4)).astype(np.float32), "t")
    graph = helper.make_graph(
        [helper.make_node("Gather", ["t", "i"], ["g"]), helper.make_node("Relu", ["g"], ["y"])],
        "g", [helper.make_tensor_value_info("i", TensorProto.INT64, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])], [table])
    module = import_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    ctx = pipeline.make_context()
    pipeline.lower_graph_to_loops(ctx, module)
    pipeline.apply_loops_abi(ctx, module)
    return module


def _entry(module) -> FuncOp:
    return next(op for op in module.ops if isinstance(op, FuncOp) and "onnxc.entry" in op.attributes)


def test_a_lowered_model_holds_registered_attributes_only():
    module = _lowered()
    verify_module(module)
    used = {name for op in module.walk() for name in op.attributes if name.startswith("onnxc.")}
    assert {"onnxc.entry", "onnxc.arena_bytes", "onnxc.check_sites", "onnxc.kernel"} <= used
    assert used <= set(ONNXC_ATTRIBUTES)


@pytest.mark.parametrize(("name", "value", "message"), [
    ("onnxc.arena_byts", IntegerAttr(0, i64), "unknown onnxc attribute 'onnxc.arena_byts'"),
    ("onnxc.arena_bytes", StringAttr("64"), "'onnxc.arena_bytes' must be an integer"),
    ("onnxc.input_names", StringAttr("x"), "must be an array of strings"),
])
def test_a_wrong_attribute_on_the_entry_is_a_verifier_error(name, value, message):
    module = _lowered()
    _entry(module).attributes[name] = value
    with pytest.raises(VerifyException, match=message):
        verify_onnxc_attributes(module)


def test_an_attribute_on_the_wrong_op_is_a_verifier_error():
    module = _lowered()
    module.attributes["onnxc.kernel"] = StringAttr("k")
    with pytest.raises(VerifyException, match="'onnxc.kernel' belongs on func.func"):
        verify_module(module)
