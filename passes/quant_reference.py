"""numpy semantics of graph.qlinear_conv / qlinear_matmul, entries of the evaluator's table
(fold-constant-ops, --verify-numerics and the pass tests evaluate graphs fuse-qdq-linear made).

As graph_qlinear's contract: the exact integer accumulator (in float64, exact far beyond
any 8-bit product sum), then the result type's rule: i32 as is, a float times output_scale,
an 8-bit type round-half-even(f32(acc) * output_scale) + output_zero_point clamped to
[output_min, output_max]. qlinear_conv_add then adds its residual by the rule of
graph_qlinear.QLinearConvAddOp (the DQ, Add and Q steps in f32).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.dialects.builtin import IntegerType
from xdsl.ir import Operation

from onnxc.dialects import graph
from onnxc.dialects.graph import int_of, ints_of
from onnxc.dialects.graph_qlinear import (
    QLINEAR_CONV_OPS,
    QLinearConvAddOp,
    QLinearConvOp,
    QLinearMatMulOp,
    QuantizedProductOp,
)
from onnxc.passes.constants import numpy_dtype


def _channels(op: QuantizedProductOp, values: np.ndarray, rank: int) -> np.ndarray:
    """Per-output-channel `values` shaped to broadcast against a rank-`rank` result (conv:
    axis 1; matmul: the last axis)."""
    if isinstance(op, QLINEAR_CONV_OPS):
        return values.reshape((1, -1) + (1,) * (rank - 2))
    return values


def qlinear(op: QuantizedProductOp, args: list[np.ndarray]) -> list[np.ndarray]:
    from onnxc.passes.evaluator import EVALUATORS  # it imports this module

    conv = isinstance(op, QLINEAR_CONV_OPS)
    wz = np.asarray(ints_of(op.weight_zero_point), np.float64)
    x = args[0].astype(np.float64) - int_of(op.input_zero_point)
    w = args[1].astype(np.float64)
    w = w - (wz.reshape((-1,) + (1,) * (w.ndim - 1)) if conv else wz)
    acc = EVALUATORS[graph.ConvOp](op, [x, w])[0] if conv else np.matmul(x, w)
    if op.bias is not None:
        acc = acc + _channels(op, args[2].astype(np.float64), acc.ndim)
    el = op.results[0].type.get_element_type()
    if isinstance(el, IntegerType) and el.width.data == 32:
        return [acc.astype(np.int32)]
    scale = _channels(op, np.asarray(op.output_scale.get_values(), np.float32), acc.ndim)
    scaled = acc.astype(np.float32) * scale
    if not isinstance(el, IntegerType):
        return [scaled.astype(numpy_dtype(el))]
    lo, hi = op.output_range()
    q = np.clip(np.rint(scaled) + int_of(op.output_zero_point), lo, hi)
    if isinstance(op, QLinearConvAddOp):
        q = residual_sum(op, q, args[-1])
    return [q.astype(numpy_dtype(el))]


def residual_sum(op: QLinearConvAddOp, q: np.ndarray, addend: np.ndarray) -> np.ndarray:
    """The quantized sum of the conv's result `q` and the addend (integers in float64)."""
    s_q, s_a, s_y = (np.float32(s) for s in op.sum_scales.get_values())
    terms = ((q - int_of(op.output_zero_point)).astype(np.float32) * s_q,
             (addend.astype(np.float64) - int_of(op.addend_zero_point)).astype(np.float32) * s_a)
    lo, hi = op.sum_range()
    return np.clip(np.rint((terms[0] + terms[1]) / s_y) + int_of(op.sum_zero_point), lo, hi)


EVALUATORS: dict[type[Operation], Callable[[Operation, list[np.ndarray]], list[np.ndarray]]] = {
    QLinearConvOp: qlinear,
    QLinearConvAddOp: qlinear,
    QLinearMatMulOp: qlinear,
}
