"""Graph ops on square matrices in the last two dimensions: the determinant (ONNX Det) and
the inverse (com.microsoft Inverse). Both are LU factorizations with partial pivoting in
their kernels (lowering/graph_to_loops/linalg.py), computed in float64 and rounded once."""

from __future__ import annotations

from xdsl.irdl import irdl_op_definition

from onnxc.dialects.graph_base import GraphOp, UnaryFields, shape_of


def square_matrices(op: GraphOp) -> tuple:
    """The operand's shape, which must end in a static n x n."""
    dims = shape_of(op.input)
    if len(dims) < 2 or not isinstance(dims[-1], int) or dims[-1] != dims[-2]:
        raise ValueError(f"{op.name} needs square matrices of a static size in the last two "
                         f"dimensions, got {list(dims)}")
    return dims


@irdl_op_definition
class DetOp(GraphOp, UnaryFields):
    """ONNX Det: the determinant of each n x n matrix of the last two dimensions; the
    result has the leading dimensions."""

    name = "graph.det"

    def infer_shapes(self):
        return [square_matrices(self)[:-2]]


@irdl_op_definition
class InverseOp(GraphOp, UnaryFields):
    """com.microsoft Inverse: the inverse of each n x n matrix of the last two dimensions
    (inf or NaN entries for a singular one, as onnxruntime's)."""

    name = "graph.inverse"

    def infer_shapes(self):
        return [square_matrices(self)]


LINALG_OPS = (DetOp, InverseOp)
