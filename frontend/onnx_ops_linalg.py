"""Square-matrix ops: ONNX Det and com.microsoft Inverse, each one graph op (graph.det,
graph.inverse) over the last two dimensions."""

from __future__ import annotations

from onnxc.dialects import graph
from onnxc.frontend import onnx_types as types
from onnxc.frontend.onnx_context import NodeContext, Result
from onnxc.frontend.onnx_ops_math import Converter


def _square(ctx: NodeContext) -> None:
    el = ctx.element_type(0)
    if not types.is_float(el):
        raise ctx.unsupported(f"element type {el} (float types only)")
    dims = ctx.shape(0)
    if len(dims) < 2:
        raise ctx.invalid(f"the input must have rank 2 or more, got {len(dims)}")
    if not isinstance(dims[-1], int) or not isinstance(dims[-2], int):
        raise ctx.unsupported("a symbolic matrix size (the batch dimensions may be symbolic)")
    if dims[-1] != dims[-2]:
        raise ctx.invalid(f"the last two dimensions must be equal (square matrices), got "
                          f"{list(dims[-2:])}")


def convert_det(ctx: NodeContext) -> list[Result]:
    """Det: the determinant of each square matrix of the last two dimensions."""
    _square(ctx)
    return [ctx.emit1(graph.DetOp(operands=[ctx.operand(0)], result_types=[
        types.tensor_type(ctx.shape(0)[:-2], ctx.element_type(0))]))]


def convert_inverse(ctx: NodeContext) -> list[Result]:
    """Inverse (com.microsoft): the inverse of each square matrix of the last two
    dimensions."""
    _square(ctx)
    return [ctx.emit1(graph.InverseOp(operands=[ctx.operand(0)], result_types=[
        types.tensor_type(ctx.shape(0), ctx.element_type(0))]))]


CONVERTERS: dict[str, Converter] = {"Det": convert_det}
"""The default domain's square-matrix ops."""
MICROSOFT_CONVERTERS: dict[str, Converter] = {"Inverse": convert_inverse}
"""com.microsoft's."""
