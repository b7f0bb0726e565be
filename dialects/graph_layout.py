"""Graph op for tensor layouts: `graph.layout_convert`, a data permutation between two layouts.

A layout names each dimension with one letter (`"NCHW"`, `"NHWC"`); both layouts use the
same letters. Result dimension i is input dimension `from_layout.index(to_layout[i])`, and the
data moves with it: `graph.layout_convert {from_layout = "NCHW", to_layout = "NHWC"}` is
`graph.transpose {perm = [0, 2, 3, 1]}`. It is a separate op so that layout passes can tell a
conversion they inserted (and may cancel or sink into a producer) from a model's transpose.
"""

from __future__ import annotations

from xdsl.dialects.builtin import StringAttr, TensorType
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def

from onnxc.dialects.graph_base import GraphOp, shape_of


def layout_permutation(from_layout: str, to_layout: str) -> tuple[int, ...]:
    """The transpose permutation of a conversion; ValueError when the layouts do not match."""
    if len(set(from_layout)) != len(from_layout):
        raise ValueError(f"layout '{from_layout}' repeats a dimension")
    if sorted(from_layout) != sorted(to_layout):
        raise ValueError(f"layouts '{from_layout}' and '{to_layout}' name different dimensions")
    return tuple(from_layout.index(d) for d in to_layout)


@irdl_op_definition
class LayoutConvertOp(GraphOp):
    """The input's data re-laid from `from_layout` to `to_layout` (a permutation)."""

    name = "graph.layout_convert"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    from_layout = prop_def(StringAttr)
    to_layout = prop_def(StringAttr)

    def permutation(self) -> tuple[int, ...]:
        return layout_permutation(self.from_layout.data, self.to_layout.data)

    def infer_shapes(self):
        x = shape_of(self.input)
        if len(self.from_layout.data) != len(x):
            raise ValueError(f"layout '{self.from_layout.data}' does not have rank {len(x)}")
        return [tuple(x[p] for p in self.permutation())]
