"""graph.fused_elementwise's scalar body: every allowed body op has a meaning in each of its
consumers (evaluator, ONNX exporter), and kernels are shared by body structure, not by
SSA names."""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects import arith, func

from onnxc.dialects.graph_fused_elementwise import BODY_OPS
from onnxc.frontend import onnx_export_fused
from onnxc.lowering.graph_to_loops.convert_graph_to_loops import ConvertGraphToLoopsPass
from onnxc.passes import composite_reference
from tests.ir_helpers import parse_graph


def test_every_body_op_is_evaluated_and_exported():
    special = (arith.ConstantOp, arith.CmpfOp)
    evaluated = set(composite_reference._OPS) | set(composite_reference._CONVERSIONS)
    exported = set(onnx_export_fused._ONNX_OPS) | set(onnx_export_fused._CONVERSIONS)
    for op in BODY_OPS:
        assert op in special or op in evaluated, f"the evaluator cannot run {op.name}"
        assert op in special or op in exported, f"the exporter cannot write {op.name}"


def _fused(name: str, body: list[str]) -> str:
    lines = "\n".join(f"    {line}" for line in body)
    return (f"  %{name} = graph.fused_elementwise(%x, %y) : (tensor<8xf32>, tensor<8xf32>) -> "
            f"tensor<8xf32> {{\n  ^bb0(%a{name}: f32, %b{name}: f32):\n{lines}\n  }}")


def _callees(text: str) -> list[str]:
    """The kernel each op of @main calls once lowered, in order."""
    module = parse_graph(text)
    module.verify()
    ConvertGraphToLoopsPass().apply(Context(), module)
    return [c.callee.root_reference.data for c in module.walk() if isinstance(c, func.CallOp)]


def test_identical_bodies_share_one_kernel_other_bodies_do_not():
    def body(n: str, op: str) -> list[str]:
        return [f"%s{n} = arith.{op} %a{n}, %b{n} : f32",
                f"%c{n} = arith.constant 0.000000e+00 : f32",
                f"%r{n} = arith.maximumf %s{n}, %c{n} : f32", f"graph.yield %r{n} : f32"]

    text = "\n".join([
        ("func.func @main(%x: tensor<8xf32>, %y: tensor<8xf32>) -> "
         "(tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {"),
        _fused("p", body("p", "addf")),  # relu(x + y)
        _fused("q", body("q", "addf")),  # the same, other SSA names
        _fused("r", body("r", "subf")),  # relu(x - y)
        "  func.return %p, %q, %r : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>",
        "}"])
    p, q, r = _callees(text)
    assert p == q and r != p
