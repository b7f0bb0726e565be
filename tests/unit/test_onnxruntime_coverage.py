"""docs/onnxruntime-coverage.md, the table of onnxruntime's CPU kernels against onnxc's
converters (onnxc.tools.onnxruntime_coverage), is current, every refused op in it has its
reason, and the importer quotes that reason."""

from __future__ import annotations

from pathlib import Path

import pytest
from onnx import TensorProto, helper

import onnxc
from onnxc.errors import UnsupportedOpError
from onnxc.frontend.onnx_converters import converter_for
from onnxc.frontend.onnx_refused import REFUSED
from onnxc.tools.onnxruntime_coverage import REGENERATE, coverage_rows, load_snapshot, render

PAGE = Path(__file__).parents[2] / "docs" / "onnxruntime-coverage.md"


def test_page_is_current() -> None:
    assert PAGE.read_text(encoding="utf-8") == render(), (
        f"docs/onnxruntime-coverage.md is stale; regenerate it with `{REGENERATE}`")


def test_declared_refusals_are_of_ops_onnxc_does_not_convert() -> None:
    converted = sorted(f"{d}.{op}" for d, op in REFUSED if converter_for(d, op) is not None)
    assert not converted, f"converted now, drop from frontend/onnx_refused.py: {converted}"
    known = {(d, op) for d, op, _ in load_snapshot()["kernels"]}
    assert set(REFUSED) <= known, set(REFUSED) - known


def test_every_row_is_converted_or_has_a_reason() -> None:
    undeclared = [f"{r.domain}.{r.op}" for r in coverage_rows()
                  if not r.converted and r.reason is None]
    assert not undeclared, ("give each a converter or a reason in frontend/onnx_refused.py",
                            undeclared)


def test_every_default_domain_op_of_onnxruntime_converts() -> None:
    refused = [r.op for r in coverage_rows() if r.domain == "" and not r.converted]
    assert not refused, refused


@pytest.mark.parametrize("domain, op", [("com.microsoft", "BeamSearch"),
                                        ("com.microsoft.nchwc", "Conv")])
def test_refusal_quotes_the_reason(domain: str, op: str) -> None:
    node = helper.make_node(op, ["x"], ["y"], name="the_node", domain=domain)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid(domain, 1)])
    with pytest.raises(UnsupportedOpError) as info:
        onnxc.compile(model)
    message = str(info.value)
    assert "the_node" in message and REFUSED[(domain, op)] in message, message
