"""Graph ops that move data by run-time indices: GatherElements, GatherND, ScatterElements,
ScatterND, Tile, ReverseSequence and the KV-cache update TensorScatter (the CNN and
detection layers that index or sample, ConvTranspose to MaxUnpool, are in graph_vision).

Index operands are integer tensors (negative indices count from the end, as in ONNX).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    DenseArrayBase,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
)
from xdsl.ir import SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, opt_operand_def, prop_def, result_def
from xdsl.utils.exceptions import VerifyException

from onnxc.dialects import graph_shapes as shapes
from onnxc.dialects.graph_base import (
    GraphOp,
    SizesAttr,
    UnaryFields,
    dims_of_attr,
    int_of,
    shape_of,
)
from onnxc.dialects.size_facts import require_at_least
from onnxc.dialects.symbolic_dims import Dim

REDUCTIONS = ("none", "add", "mul", "max", "min")


class IndexedOp(GraphOp):
    """An op with `data` and integer `indices` operands."""

    def same_element_type_operands(self) -> Sequence[SSAValue]:
        return [v for v in self.operands if v is not self.indices]

    def verify_element_types(self) -> None:
        super().verify_element_types()
        if not isinstance(self.indices.type.get_element_type(), IntegerType):
            raise VerifyException(f"{self.name}: indices must have an integer element type")


@irdl_op_definition
class GatherElementsOp(IndexedOp):
    """out[i] = data[i with i[axis] replaced by indices[i]]."""

    name = "graph.gather_elements"
    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(IntegerAttr)

    def infer_shapes(self):
        x, i = shape_of(self.data), shape_of(self.indices)
        if len(x) != len(i):
            raise ValueError("data and indices differ in rank")
        shapes.normalize_axis(int_of(self.axis), len(x))
        return [i]


@irdl_op_definition
class GatherNDOp(IndexedOp):
    """Slices of `data` addressed by the last dimension of `indices` (after `batch_dims`)."""

    name = "graph.gather_nd"
    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    output = result_def(TensorType)
    batch_dims = prop_def(IntegerAttr)

    def infer_shapes(self):
        x, i = shape_of(self.data), shape_of(self.indices)
        b = int_of(self.batch_dims)
        if not i or x[:b] != i[:b] or b + i[-1] > len(x):
            raise ValueError(f"indices {i} do not address data {x} with batch_dims {b}")
        return [i[:-1] + x[b + i[-1]:]]


@irdl_op_definition
class ScatterElementsOp(IndexedOp):
    """A copy of `data` with updates[i] combined into position i with i[axis] = indices[i]."""

    name = "graph.scatter_elements"
    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    updates = operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    reduction = prop_def(StringAttr)

    def infer_shapes(self):
        x, i, u = shape_of(self.data), shape_of(self.indices), shape_of(self.updates)
        if i != u or len(i) != len(x):
            raise ValueError("indices and updates must share a shape of the data's rank")
        if self.reduction.data not in REDUCTIONS:
            raise ValueError(f"unknown reduction '{self.reduction.data}'")
        shapes.normalize_axis(int_of(self.axis), len(x))
        return [x]


@irdl_op_definition
class ScatterNDOp(IndexedOp):
    """A copy of `data` with slices replaced (or combined) at the index tuples of `indices`."""

    name = "graph.scatter_nd"
    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    updates = operand_def(TensorType)
    output = result_def(TensorType)
    reduction = prop_def(StringAttr)

    def infer_shapes(self):
        x, i, u = shape_of(self.data), shape_of(self.indices), shape_of(self.updates)
        if not i or i[-1] > len(x) or u != i[:-1] + x[i[-1]:]:
            raise ValueError(f"updates {u} do not match indices {i} and data {x}")
        if self.reduction.data not in REDUCTIONS:
            raise ValueError(f"unknown reduction '{self.reduction.data}'")
        return [x]


@irdl_op_definition
class TileOp(GraphOp, UnaryFields):
    """`input` repeated `repeats[d]` times along each dimension d (sizes too, `#graph.sizes`:
    counts from shape data or computed in the run)."""

    name = "graph.tile"
    repeats = prop_def(DenseArrayBase | SizesAttr)

    def repeat_counts(self) -> tuple[Dim, ...]:
        return dims_of_attr(self.repeats)

    def infer_shapes(self):
        x, r = shape_of(self.input), self.repeat_counts()
        if len(r) != len(x) or min((k for k in r if isinstance(k, int)), default=0) < 0:
            raise ValueError(f"repeats {list(r)} do not fit rank {len(x)}")
        return [tuple(d * k for d, k in zip(x, r))]


@irdl_op_definition
class ReverseSequenceOp(GraphOp):
    """Each batch entry's first seq_lens[b] steps along `time_axis` reversed."""

    name = "graph.reverse_sequence"
    input = operand_def(TensorType)
    seq_lens = operand_def(TensorType)
    output = result_def(TensorType)
    batch_axis = prop_def(IntegerAttr)
    time_axis = prop_def(IntegerAttr)

    def same_element_type_operands(self) -> Sequence[SSAValue]:
        return (self.input,)

    def infer_shapes(self):
        x = shape_of(self.input)
        b, t = int_of(self.batch_axis), int_of(self.time_axis)
        if len(x) < 2 or {b, t} not in ({0, 1},) or shape_of(self.seq_lens) != (x[b],):
            raise ValueError("needs batch/time axes 0 and 1 and one length per batch entry")
        return [x]


@irdl_op_definition
class TensorScatterOp(GraphOp):
    """A copy of `past` (a cache [B, ..., L, ...]) with `update` [B, ..., S, ...] written
    along `axis` from position write_indices[b] of each batch entry (modulo L when
    `circular`); without write_indices, from 0."""

    name = "graph.tensor_scatter"
    past = operand_def(TensorType)
    update = operand_def(TensorType)
    write_indices = opt_operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    circular = prop_def(IntegerAttr)

    def same_element_type_operands(self) -> Sequence[SSAValue]:
        return (self.past, self.update)

    def infer_shapes(self):
        x, u = shape_of(self.past), shape_of(self.update)
        axis = int_of(self.axis)
        if len(u) != len(x) or not 0 < axis < len(x) or any(
                a != b for i, (a, b) in enumerate(zip(x, u)) if i != axis):
            raise ValueError(f"update {u} does not fit cache {x} along axis {axis}")
        require_at_least(x[axis], u[axis], f"update {u} longer than cache {x} along axis {axis}")
        if self.write_indices is not None and shape_of(self.write_indices) != (x[0],):
            raise ValueError(f"write_indices must have shape ({x[0]},)")
        return [x]


GATHER_SCATTER_OPS = [
    GatherElementsOp, GatherNDOp, ScatterElementsOp, ScatterNDOp, TileOp, ReverseSequenceOp,
    TensorScatterOp,
]
