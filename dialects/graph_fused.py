"""Graph ops that the Extended fusions produce: whole layers the CPU backend runs as one kernel.

LayerNormalization, Gelu and PRelu exist in ONNX too (and are imported directly where the
opset has them); WeightedSum and Attention have no ONNX counterpart and only come from the
fusions in passes/extended.py.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
)
from xdsl.ir import SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    prop_def,
    result_def,
    var_operand_def,
)
from xdsl.utils.exceptions import VerifyException

from onnxc.dialects import graph_shapes as shapes
from onnxc.dialects.graph_base import GraphOp, int_of, shape_of


def strip_leading_ones(shape: Sequence[int]) -> tuple[int, ...]:
    """`shape` without its leading size-1 dimensions (they broadcast to nothing)."""
    start = next((i for i, d in enumerate(shape) if d != 1), len(shape))
    return tuple(shape[start:])


def _check_trailing(name: str, operand: Sequence[int], trailing: Sequence[int]) -> None:
    operand = strip_leading_ones(operand)
    if len(operand) > len(trailing) or shapes.broadcast_shapes(trailing, operand) != tuple(
        trailing
    ):
        raise ValueError(f"{name} {tuple(operand)} does not broadcast to {tuple(trailing)}")


@irdl_op_definition
class LayerNormalizationOp(GraphOp):
    """(x - mean) / sqrt(var + eps) * scale + bias over the dimensions [axis, rank)."""

    name = "graph.layer_normalization"
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    epsilon = prop_def(FloatAttr)

    def normalized_axis(self) -> int:
        return shapes.normalize_axis(int_of(self.axis), len(shape_of(self.input)))

    def infer_shapes(self):
        x = shape_of(self.input)
        trailing = x[self.normalized_axis():]
        _check_trailing("scale", shape_of(self.scale), trailing)
        if self.bias is not None:
            _check_trailing("bias", shape_of(self.bias), trailing)
        return [x]


@irdl_op_definition
class GeluOp(GraphOp):
    """x * Phi(x); `approximate` is "none" (erf form) or "tanh" (the tanh approximation)."""

    name = "graph.gelu"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    approximate = prop_def(StringAttr)

    def infer_shapes(self):
        if self.approximate.data not in ("none", "tanh"):
            raise ValueError(f"approximate must be 'none' or 'tanh', not '{self.approximate.data}'")
        return [shape_of(self.input)]


@irdl_op_definition
class PReluOp(GraphOp):
    """x if x >= 0 else slope * x, the slope unidirectionally broadcast to x."""

    name = "graph.prelu"
    input = operand_def(TensorType)
    slope = operand_def(TensorType)
    output = result_def(TensorType)

    def infer_shapes(self):
        x = shape_of(self.input)
        if shapes.broadcast_shapes(x, shape_of(self.slope)) != x:
            raise ValueError(f"slope {shape_of(self.slope)} does not broadcast to {x}")
        return [x]


@irdl_op_definition
class WeightedSumOp(GraphOp):
    """sum_i coefficients[i] * inputs[i], inputs broadcast; coefficients are f64 constants."""

    name = "graph.weighted_sum"
    inputs = var_operand_def(TensorType)
    output = result_def(TensorType)
    coefficients = prop_def(DenseArrayBase)

    def coefficient_values(self) -> tuple[float, ...]:
        return tuple(float(c) for c in self.coefficients.get_values())

    def infer_shapes(self):
        if len(self.inputs) < 1:
            raise ValueError("needs at least one input")
        if len(self.coefficient_values()) != len(self.inputs):
            raise ValueError(
                f"{len(self.inputs)} inputs but {len(self.coefficient_values())} coefficients"
            )
        return [shapes.broadcast_shapes(*(shape_of(v) for v in self.inputs))]


@irdl_op_definition
class AttentionOp(GraphOp):
    """softmax(scale * Q K^T + mask) V over the last axis, per batch prefix (e.g. [batch, heads]).

    Q is [..., Sq, D], K is [..., Sk, D] (not transposed), V is [..., Sk, Dv] with the same
    leading dimensions; the optional additive mask broadcasts to [..., Sq, Sk].
    """

    name = "graph.attention"
    query = operand_def(TensorType)
    key = operand_def(TensorType)
    value = operand_def(TensorType)
    mask = opt_operand_def(TensorType)
    output = result_def(TensorType)
    scale = prop_def(FloatAttr)

    def infer_shapes(self):
        q, k, v = shape_of(self.query), shape_of(self.key), shape_of(self.value)
        if len(q) < 2 or len(k) != len(q) or len(v) != len(q):
            raise ValueError(f"query {q}, key {k} and value {v} need one rank >= 2")
        if k[:-2] != q[:-2] or v[:-2] != q[:-2]:
            raise ValueError(f"leading dimensions of query {q}, key {k}, value {v} differ")
        if k[-1] != q[-1] or v[-2] != k[-2]:
            raise ValueError(f"query {q}, key {k} and value {v} do not chain")
        if self.mask is not None:
            scores = (*q[:-1], k[-2])
            if shapes.broadcast_shapes(scores, shape_of(self.mask)) != scores:
                raise ValueError(f"mask {shape_of(self.mask)} does not broadcast to {scores}")
        return [(*q[:-1], v[-1])]

    def same_element_type_operands(self) -> Sequence[SSAValue]:
        return (self.query, self.key, self.value)

    def verify_(self) -> None:
        super().verify_()
        if self.mask is not None and (
            self.mask.type.get_element_type() != self.query.type.get_element_type()
        ):
            raise VerifyException(f"{self.name}: mask element type differs from query")
