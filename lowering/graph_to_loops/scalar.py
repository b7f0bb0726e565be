"""Kernels of the scalar-operand binary ops (graph.add_scalar, ...: row fold-scalar-binary).

One loop over the flat buffer; the scalar is an immediate of the tensor's element type, so
the kernel loads one operand instead of two.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import SSAValue

from onnxc.dialects import graph
from onnxc.dialects.graph import float_of
from onnxc.lowering.graph_to_loops.elementwise import BINARY, map_elementwise
from onnxc.lowering.graph_to_loops.loops import KernelBuilder
from onnxc.lowering.graph_to_loops.rules import rules

_TENSOR_OP = {
    graph.AddScalarOp: graph.AddOp,
    graph.SubScalarOp: graph.SubOp,
    graph.MulScalarOp: graph.MulOp,
    graph.DivScalarOp: graph.DivOp,
    graph.PowScalarOp: graph.PowOp,
}


def scalar_binary_kernel(op: graph.ScalarBinaryOp, kb: KernelBuilder, ins, outs):
    fn = BINARY[_TENSOR_OP[type(op)]]
    element = outs[0].type.get_element_type()
    immediate = kb.constant(float_of(op.scalar), element)

    def body(kb: KernelBuilder, args: Sequence[SSAValue]) -> SSAValue:
        return fn(kb, args[0], immediate)

    map_elementwise(kb, ins, outs[0], body)


RULES = rules(_TENSOR_OP, scalar_binary_kernel, symbolic=True)
"""symbolic: the kernels read their sizes from the KernelBuilder (symbolic dims welcome)."""
