"""Graph ops that the Extended fusions produce: whole layers the CPU backend runs as one kernel.

LayerNormalization, RMSNormalization, Gelu and PRelu exist in ONNX too (and are imported
directly where the opset has them); WeightedSum and Attention have no ONNX counterpart and
only come from the fusions in passes/*_fusion.py.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    UnitAttr,
)
from xdsl.ir import SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    var_operand_def,
)
from xdsl.utils.exceptions import VerifyException

from onnxc.dialects import graph_shapes as shapes
from onnxc.dialects.graph_base import GraphOp, UnaryFields, int_of, ints_of, shape_of
from onnxc.dialects.symbolic_dims import is_static


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


class _RowNormalization:
    """What the row normalizations share: the axis from which a row runs, epsilon, and the
    check that scale (and bias) broadcast to a row, whose shape the result has."""

    axis = prop_def(IntegerAttr)
    epsilon = prop_def(FloatAttr)

    def infer_shapes(self):
        return [self.check_affine()]

    def normalized_axis(self) -> int:
        return shapes.normalize_axis(int_of(self.axis), len(shape_of(self.input)))

    def check_affine(self) -> tuple[int, ...]:
        """The input's shape, once scale and bias are known to fit its rows."""
        x = shape_of(self.input)
        trailing = x[self.normalized_axis():]
        _check_trailing("scale", shape_of(self.scale), trailing)
        if getattr(self, "bias", None) is not None:
            _check_trailing("bias", shape_of(self.bias), trailing)
        return x


@irdl_op_definition
class LayerNormalizationOp(_RowNormalization, GraphOp):
    """(x - mean) / sqrt(var + eps) * scale + bias over the dimensions [axis, rank)."""

    name = "graph.layer_normalization"
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    output = result_def(TensorType)


@irdl_op_definition
class LayerNormalizationStatsOp(_RowNormalization, GraphOp):
    """graph.layer_normalization that also returns its statistics (LayerNormalization's
    training outputs Mean and InvStdDev), each of shape x.shape[:axis] + 1s.

    A separate op, not optional results of graph.layer_normalization, so that the Extended
    LayerNorm rewrites, which rebuild that op from Y alone, never see statistics to drop."""

    name = "graph.layer_normalization_stats"
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    output = result_def(TensorType)
    mean = result_def(TensorType)
    inv_std_dev = result_def(TensorType)

    def infer_shapes(self):
        x = self.check_affine()
        axis = self.normalized_axis()
        statistics = (*x[:axis], *(1,) * (len(x) - axis))
        return [x, statistics, statistics]


@irdl_op_definition
class RMSNormalizationOp(_RowNormalization, GraphOp):
    """x / sqrt(mean(x^2) + eps) * scale over the dimensions [axis, rank) (ONNX opset 23)."""

    name = "graph.rms_normalization"
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    output = result_def(TensorType)


@irdl_op_definition
class GeluOp(GraphOp, UnaryFields):
    """x * Phi(x); `approximate` is "none" (erf form) or "tanh" (the tanh approximation)."""

    name = "graph.gelu"
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
    leading dimensions, except that K and V may have fewer heads (the dimension before Sq)
    than Q, a divisor of them: grouped-query attention, K/V head h // (Hq / Hkv) serving query
    head h. The optional additive mask broadcasts to [..., Sq, Sk]. With
    `causal_offset` (>= 0), query i attends key j only when j <= i + causal_offset (ONNX
    Attention's bottom-right causal mask): the kernel skips the keys past that frontier.
    `causal_from_end` is the same mask with the offset Sk - Sq taken at run time: queries
    that are the newest keys after a cache of symbolic length. With `zero_nan_rows`, a query
    whose probabilities are NaN (no key it may attend, or a NaN or +inf score) gets 0: the
    Where(IsNaN(P), 0, P) transformers' exports put after the Softmax. With `output_perm`, the
    result is that product transposed by it (attention-operand-views: the kernel writes the
    [B, S, H, Dv] rows the output projection reads, instead of a Transpose copying them).
    """

    name = "graph.attention"
    query = operand_def(TensorType)
    key = operand_def(TensorType)
    value = operand_def(TensorType)
    mask = opt_operand_def(TensorType)
    output = result_def(TensorType)
    scale = prop_def(FloatAttr)
    causal_offset = opt_prop_def(IntegerAttr)
    causal_from_end = opt_prop_def(UnitAttr)
    zero_nan_rows = opt_prop_def(UnitAttr)
    output_perm = opt_prop_def(DenseArrayBase)

    def infer_shapes(self):
        q, k, v = shape_of(self.query), shape_of(self.key), shape_of(self.value)
        if len(q) < 2 or len(k) != len(q) or len(v) != len(q):
            raise ValueError(f"query {q}, key {k} and value {v} need one rank >= 2")
        grouped = len(q) >= 3 and k[:-3] == q[:-3] and 0 < k[-3] and q[-3] % k[-3] == 0
        if v[:-2] != k[:-2] or (k[:-2] != q[:-2] and not grouped):
            raise ValueError(f"leading dimensions of query {q}, key {k}, value {v} differ")
        if k[-1] != q[-1] or v[-2] != k[-2]:
            raise ValueError(f"query {q}, key {k} and value {v} do not chain")
        if self.mask is not None:
            scores = (*q[:-1], k[-2])
            if shapes.broadcast_shapes(scores, shape_of(self.mask)) != scores:
                raise ValueError(f"mask {shape_of(self.mask)} does not broadcast to {scores}")
        product = (*q[:-1], v[-1])
        if self.output_perm is None:
            return [product]
        perm = ints_of(self.output_perm)
        if sorted(perm) != list(range(len(product))):
            raise ValueError(f"output_perm {list(perm)} is not a permutation of rank "
                             f"{len(product)}")
        return [tuple(product[p] for p in perm)]

    def kv_groups(self) -> int:
        """Query heads per key/value head (1 unless grouped-query)."""
        q, k = shape_of(self.query), shape_of(self.key)
        return q[-3] // k[-3] if len(q) >= 3 and k[-3] else 1

    def same_element_type_operands(self) -> Sequence[SSAValue]:
        return (self.query, self.key, self.value)

    def verify_(self) -> None:
        super().verify_()
        if self.mask is not None and (
            self.mask.type.get_element_type() != self.query.type.get_element_type()
        ):
            raise VerifyException(f"{self.name}: mask element type differs from query")
        if self.causal_offset is not None and int_of(self.causal_offset) < 0:
            raise VerifyException(f"{self.name}: causal_offset must be >= 0")
        if self.causal_offset is not None and self.causal_from_end is not None:
            raise VerifyException(f"{self.name}: causal_offset and causal_from_end exclude "
                                  f"each other")
        if self.output_perm is not None and not is_static(shape_of(self.output)):
            raise VerifyException(f"{self.name}: output_perm needs static sizes")
