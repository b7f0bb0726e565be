"""docs/ops.md is generated from the dialects (onnxc.tools.op_reference): it must match a fresh
rendering, and every op must carry a docstring for it to show."""

from pathlib import Path

from xdsl.dialects.builtin import IntegerAttr, TensorType
from xdsl.ir import Dialect
from xdsl.irdl import irdl_op_definition, operand_def, opt_prop_def, result_def

from onnxc.dialects.graph_base import GraphOp
from onnxc.registry import ONNXC_DIALECTS
from onnxc.tools.op_reference import REGENERATE, main, missing_docstrings, render

DOCS = Path(__file__).resolve().parents[2] / "docs" / "ops.md"


def test_committed_reference_is_up_to_date():
    committed = DOCS.read_text(encoding="utf-8") if DOCS.exists() else ""
    assert render() == committed, f"docs/ops.md is stale; regenerate it with `{REGENERATE}`"


def test_every_op_has_a_docstring():
    dialects = [factory() for factory in ONNXC_DIALECTS.values()]
    missing = missing_docstrings(dialects)
    assert not missing, f"ops without a docstring: {', '.join(missing)}"


@irdl_op_definition
class _DocumentedOp(GraphOp):
    """Doubles its input."""

    name = "test.documented"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    factor = opt_prop_def(IntegerAttr)
    """how much to double by"""


@irdl_op_definition
class _BareOp(GraphOp):
    name = "test.bare"
    input = operand_def(TensorType)
    output = result_def(TensorType)


def test_render_shows_docstrings_fields_and_gaps():
    text = render({"test": Dialect("test", [_DocumentedOp, _BareOp], [])})
    assert "#### `test.documented`\n\nDoubles its input.\n" in text
    assert "| `input` | TensorType |  |  |" in text
    assert "| `factor` | IntegerAttr | optional | how much to double by |" in text
    assert "#### `test.bare`\n\n*(no docstring)*" in text
    assert missing_docstrings([Dialect("test", [_DocumentedOp, _BareOp], [])]) == ["test.bare"]


def test_main_writes_the_file(tmp_path):
    out = tmp_path / "ops.md"
    assert main(["-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == render()


SUPPORT = DOCS.with_name("op-support.md")


def test_committed_support_matrix_is_up_to_date():
    from onnxc.tools.op_reference import REGENERATE_SUPPORT, render_support

    committed = SUPPORT.read_text(encoding="utf-8") if SUPPORT.exists() else ""
    assert render_support() == committed, (
        f"docs/op-support.md is stale; regenerate it with `{REGENERATE_SUPPORT}`")


def test_support_matrix_reads_the_registries():
    from onnxc.dialects import graph
    from onnxc.frontend.onnx_converters import CONVERTERS
    from onnxc.tools.op_reference import closure_op, opset_thresholds

    assert closure_op(CONVERTERS["Relu"]) is graph.ReluOp
    assert 11 in opset_thresholds(CONVERTERS["Clip"])
    text = SUPPORT.read_text(encoding="utf-8")
    assert "| `Relu` |  | `graph.relu` | yes | yes | yes | yes |" in text
    assert "| `graph.quantize_linear` | yes | yes | own kernel | own kernel | quantization op |" in text
