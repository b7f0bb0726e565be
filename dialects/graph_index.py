"""Graph ops that select, scan or index along one axis: ArgMax/ArgMin, TopK, CumSum/CumProd,
Trilu, OneHot, the lexicographic order of slices (Unique along an axis), and Range with
run-time bounds.

Axes are normalized (non-negative) properties; counts such as TopK's k or OneHot's depth are
properties too, since they decide result shapes: a number, or a size (`#graph.sizes`) over
symbols when shape data or the run gives it.
"""

from __future__ import annotations

import abc

from xdsl.dialects.builtin import IntegerAttr, IntegerType, TensorType
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def
from xdsl.utils.exceptions import VerifyException

from onnxc.dialects.graph_base import GraphOp, SizesAttr, UnaryFields, int_of, shape_of
from onnxc.dialects.graph_reduce import reduce_shape
from onnxc.dialects.size_facts import require_at_least
from onnxc.dialects.symbolic_dims import Dim


def _require_i64(op: GraphOp, value) -> None:
    el = value.type.get_element_type()
    if not (isinstance(el, IntegerType) and el.width.data == 64):
        raise VerifyException(f"{op.name}: index result must be i64, got {el}")


class ArgReduceOp(GraphOp, UnaryFields, abc.ABC):
    """Index (i64) of the largest/smallest element along `axis`; the first one on ties unless
    `select_last_index`."""

    axis = prop_def(IntegerAttr)
    keepdims = prop_def(IntegerAttr)
    select_last_index = prop_def(IntegerAttr)

    def same_element_type_operands(self):
        return []

    def verify_element_types(self) -> None:
        _require_i64(self, self.output)

    def infer_shapes(self):
        return [reduce_shape(shape_of(self.input), [int_of(self.axis)],
                             int_of(self.keepdims) != 0)]


@irdl_op_definition
class ArgMaxOp(ArgReduceOp):
    """ONNX ArgMax (opset 12+ semantics; select_last_index is 0 for older opsets)."""

    name = "graph.arg_max"


@irdl_op_definition
class ArgMinOp(ArgReduceOp):
    """ONNX ArgMin (opset 12+ semantics; select_last_index is 0 for older opsets)."""

    name = "graph.arg_min"


@irdl_op_definition
class TopKOp(GraphOp):
    """The `k` largest (or smallest) elements along `axis`, sorted, and their i64 indices;
    equal values keep their input order."""

    name = "graph.top_k"
    input = operand_def(TensorType)
    values = result_def(TensorType)
    indices = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    k = prop_def(IntegerAttr | SizesAttr)
    """a number, or a size (`#graph.sizes<["min(1000, n)"]>`: from shape data or the run)"""
    largest = prop_def(IntegerAttr)

    def count(self) -> Dim:
        """k as a size."""
        return int_of(self.k) if isinstance(self.k, IntegerAttr) else self.k.values()[0]

    def verify_element_types(self) -> None:
        if self.values.type.get_element_type() != self.input.type.get_element_type():
            raise VerifyException(f"{self.name}: values element type differs from input")
        _require_i64(self, self.indices)

    def infer_shapes(self):
        x = list(shape_of(self.input))
        axis, k = int_of(self.axis), self.count()
        if isinstance(k, int) and k < 0:
            raise ValueError(f"k={k} is negative")
        require_at_least(x[axis], k, f"k={k} outside [0, {x[axis]}]")
        x[axis] = k
        return [tuple(x), tuple(x)]


class CumulativeOp(GraphOp, UnaryFields, abc.ABC):
    """Running sum/product along `axis`; `exclusive` leaves out the current element and
    `reverse` runs from the end."""

    axis = prop_def(IntegerAttr)
    exclusive = prop_def(IntegerAttr)
    reverse = prop_def(IntegerAttr)

    def infer_shapes(self):
        return [shape_of(self.input)]


@irdl_op_definition
class CumSumOp(CumulativeOp):
    """ONNX CumSum: the running sum; ONNX's `axis` input is a constant property here."""

    name = "graph.cum_sum"


@irdl_op_definition
class CumProdOp(CumulativeOp):
    """ONNX CumProd: the running product; ONNX's `axis` input is a constant property here."""

    name = "graph.cum_prod"


@irdl_op_definition
class TriluOp(GraphOp, UnaryFields):
    """The upper (or lower) triangle of the last two dimensions from diagonal `k` on; the
    rest is zero."""

    name = "graph.trilu"
    upper = prop_def(IntegerAttr)
    k = prop_def(IntegerAttr)

    def infer_shapes(self):
        if len(shape_of(self.input)) < 2:
            raise ValueError("trilu needs a rank >= 2 input")
        return [shape_of(self.input)]


@irdl_op_definition
class OneHotOp(GraphOp):
    """values[1] where the new `axis` position equals the index (negative indices count from
    `depth`), values[0] elsewhere; `values` is a 2-element tensor [off, on]."""

    name = "graph.one_hot"
    indices = operand_def(TensorType)
    values = operand_def(TensorType)
    output = result_def(TensorType)
    depth = prop_def(IntegerAttr | SizesAttr)
    """a number, or a size (`#graph.sizes<["OneHot_3_depth0"]>`: a depth the run computes)"""
    axis = prop_def(IntegerAttr)

    def size(self) -> Dim:
        """depth as a size."""
        return int_of(self.depth) if isinstance(self.depth, IntegerAttr) \
            else self.depth.values()[0]

    def same_element_type_operands(self):
        return [self.values]

    def infer_shapes(self):
        if shape_of(self.values) != (2,):
            raise ValueError(f"values must have shape (2,), got {shape_of(self.values)}")
        depth = self.size()
        if isinstance(depth, int) and depth < 0:
            raise ValueError(f"depth={depth} is negative")
        out = list(shape_of(self.indices))
        out.insert(int_of(self.axis), depth)
        return [tuple(out)]


@irdl_op_definition
class LexOrderOp(GraphOp, UnaryFields):
    """The permutation (i64) that sorts the slices of `input` along `axis` ascending,
    lexicographically: elements compared in memory order, the first that differs decides
    (NaN after every number, as numpy sorts); equal slices keep their input order. Unique
    along an axis groups the sorted slices."""

    name = "graph.lex_order"
    axis = prop_def(IntegerAttr)

    def same_element_type_operands(self):
        return []

    def verify_element_types(self) -> None:
        _require_i64(self, self.output)

    def infer_shapes(self):
        x, axis = shape_of(self.input), int_of(self.axis)
        if not 0 <= axis < len(x):
            raise ValueError(f"axis {axis} is outside rank {len(x)}")
        return [(x[axis],)]


@irdl_op_definition
class RangeOp(GraphOp):
    """start + i * delta for i in [0, n): Range whose start/delta are only known at run time
    but whose length n (the result's static shape) the model declares."""

    name = "graph.range"
    start = operand_def(TensorType)
    delta = operand_def(TensorType)
    output = result_def(TensorType)

    def infer_shapes(self):
        if shape_of(self.start) != () or shape_of(self.delta) != ():
            raise ValueError("start and delta must be scalars")
        if len(shape_of(self.output)) != 1:
            raise ValueError("the result must be 1-D")
