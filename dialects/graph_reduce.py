"""Graph ops for reductions over a set of axes: ReduceMean, ReduceSum, ReduceMax, ReduceMin
and ReduceProd (ReduceL1/L2/LogSum/LogSumExp/SumSquare are composed from them at import).

Axes are a property (normalized, sorted, non-empty: the importer spells out "all axes" and
turns ONNX's noop_with_empty_axes into an identity), so patterns can compare them directly.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence

from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr
from xdsl.irdl import irdl_op_definition, prop_def

from onnxc.dialects import graph_shapes as shapes
from onnxc.dialects.graph_base import GraphOp, UnaryFields, int_of, ints_of, shape_of


def reduce_shape(x: Sequence[int], axes: Sequence[int], keepdims: bool) -> tuple[int, ...]:
    """Shape after reducing `axes` of `x` (kept as 1s when `keepdims`)."""
    norm = {shapes.normalize_axis(a, len(x)) for a in axes}
    if len(norm) != len(axes):
        raise ValueError(f"repeated reduction axes {list(axes)}")
    if keepdims:
        return tuple(1 if i in norm else d for i, d in enumerate(x))
    return tuple(d for i, d in enumerate(x) if i not in norm)


class ReduceOp(GraphOp, UnaryFields, abc.ABC):
    """Reduce `input` over `axes`; `keepdims` (0/1) keeps the reduced axes as size 1."""

    axes = prop_def(DenseArrayBase)
    keepdims = prop_def(IntegerAttr)

    def reduced_axes(self) -> tuple[int, ...]:
        rank = len(shape_of(self.input))
        return tuple(sorted(shapes.normalize_axis(a, rank) for a in ints_of(self.axes)))

    def infer_shapes(self):
        return [reduce_shape(shape_of(self.input), ints_of(self.axes), int_of(self.keepdims) != 0)]


@irdl_op_definition
class ReduceMeanOp(ReduceOp):
    """ONNX ReduceMean: the mean over `axes`."""

    name = "graph.reduce_mean"


@irdl_op_definition
class ReduceSumOp(ReduceOp):
    """ONNX ReduceSum: the sum over `axes`."""

    name = "graph.reduce_sum"


@irdl_op_definition
class ReduceMaxOp(ReduceOp):
    """ONNX ReduceMax: the maximum over `axes`."""

    name = "graph.reduce_max"


@irdl_op_definition
class ReduceMinOp(ReduceOp):
    """ONNX ReduceMin: the minimum over `axes`."""

    name = "graph.reduce_min"


@irdl_op_definition
class ReduceProdOp(ReduceOp):
    """ONNX ReduceProd: the product over `axes`."""

    name = "graph.reduce_prod"
