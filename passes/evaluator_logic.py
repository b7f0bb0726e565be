"""numpy semantics of the graph_logic and graph_unary ops, for passes/evaluator.py.

Written from the ONNX operator docs and onnx.reference: Round halves to even (np.round), Mod
with fmod=0 takes the divisor's sign (np.mod) and with fmod=1 the dividend's (np.fmod),
BitShift by a count outside [0, width) shifts every bit out. Softplus, Mish and
ThresholdedRelu are their formulas in dialects/activations.py.
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import Operation

from onnxc.dialects import graph
from onnxc.dialects.activations import MISH, SOFTPLUS, THRESHOLDED_RELU
from onnxc.dialects.dense_data import cast_array, element_dtype
from onnxc.dialects.graph import float_of, int_of


def _unary(fn):
    return lambda op, a: [fn(a[0])]


def _binary(fn):
    return lambda op, a: [fn(a[0], a[1])]


def _mod(op: graph.ModOp, a: list[np.ndarray]) -> list[np.ndarray]:
    x, y = a
    return [np.fmod(x, y) if int_of(op.fmod) else np.mod(x, y)]


def _bit_shift(op: graph.BitShiftOp, a: list[np.ndarray]) -> list[np.ndarray]:
    """Left shifts wrap; signed right shifts are arithmetic; counts outside [0, width)
    shift every bit out."""
    x, n = np.broadcast_arrays(*a)
    width = x.dtype.itemsize * 8
    in_range = (n >= 0) & (n < width)
    count = np.where(in_range, n, 0)
    unsigned = x.view(np.dtype(f"u{x.dtype.itemsize}"))
    if op.direction.data == "LEFT":
        shifted = np.left_shift(unsigned, count.astype(unsigned.dtype)).view(x.dtype)
        return [np.where(in_range, shifted, 0).astype(x.dtype)]
    shifted = np.right_shift(x, count.astype(x.dtype))
    return [np.where(in_range, shifted, np.where(x < 0, -1, 0)).astype(x.dtype)]


def _is_inf(op: graph.IsInfOp, a: list[np.ndarray]) -> list[np.ndarray]:
    x = a[0]
    positive = np.isposinf(x) if int_of(op.detect_positive) else np.zeros(x.shape, bool)
    negative = np.isneginf(x) if int_of(op.detect_negative) else np.zeros(x.shape, bool)
    return [positive | negative]


def _thresholded_relu(op: graph.ThresholdedReluOp, a: list[np.ndarray]) -> list[np.ndarray]:
    return [THRESHOLDED_RELU.evaluate(a[0], float_of(op.alpha))]


def _shrink(op: graph.ShrinkOp, a: list[np.ndarray]) -> list[np.ndarray]:
    x = a[0]
    lambd, bias = float_of(op.lambd), float_of(op.bias)
    if x.dtype.kind in "iu":
        lambd, bias = int(lambd), int(bias)
    y = np.where(x < -lambd, x + bias, np.where(x > lambd, x - bias, 0))
    return [y.astype(x.dtype)]


def _cast(op: graph.CastOp, a: list[np.ndarray]) -> list[np.ndarray]:
    saturate = op.saturate is None or int_of(op.saturate) != 0
    dtype = element_dtype(op.output.type.get_element_type())
    round_mode = "up" if op.round_mode is None else op.round_mode.data
    return [cast_array(a[0], dtype, saturate, round_mode)]


def _not(x: np.ndarray) -> np.ndarray:
    return np.logical_not(x) if x.dtype == np.bool_ else np.invert(x)


EVALUATORS: dict[type[Operation], object] = {
    graph.CastOp: _cast,  # saturating 8-bit float targets (evaluator.py's entry is astype)
    graph.EqualOp: _binary(np.equal),
    graph.LessOp: _binary(np.less),
    graph.LessOrEqualOp: _binary(np.less_equal),
    graph.GreaterOp: _binary(np.greater),
    graph.GreaterOrEqualOp: _binary(np.greater_equal),
    graph.AndOp: _binary(np.logical_and),
    graph.OrOp: _binary(np.logical_or),
    graph.XorOp: _binary(np.logical_xor),
    graph.NotOp: _unary(_not),
    graph.BitwiseAndOp: _binary(np.bitwise_and),
    graph.BitwiseOrOp: _binary(np.bitwise_or),
    graph.BitwiseXorOp: _binary(np.bitwise_xor),
    graph.BitwiseNotOp: _unary(_not),
    graph.BitShiftOp: _bit_shift,
    graph.ModOp: _mod,
    graph.WhereOp: lambda op, a: [np.where(a[0], a[1], a[2])],
    graph.IsNaNOp: _unary(np.isnan),
    graph.IsInfOp: _is_inf,
    graph.CeilOp: _unary(np.ceil),
    graph.FloorOp: _unary(np.floor),
    graph.RoundOp: _unary(np.round),
    graph.SignOp: _unary(np.sign),
    graph.SinOp: _unary(np.sin),
    graph.CosOp: _unary(np.cos),
    graph.TanOp: _unary(np.tan),
    graph.AsinOp: _unary(np.arcsin),
    graph.AcosOp: _unary(np.arccos),
    graph.AtanOp: _unary(np.arctan),
    graph.SinhOp: _unary(np.sinh),
    graph.CoshOp: _unary(np.cosh),
    graph.AsinhOp: _unary(np.arcsinh),
    graph.AcoshOp: _unary(np.arccosh),
    graph.AtanhOp: _unary(np.arctanh),
    graph.SoftplusOp: _unary(SOFTPLUS.evaluate),
    graph.MishOp: _unary(MISH.evaluate),
    graph.ThresholdedReluOp: _thresholded_relu,
    graph.ShrinkOp: _shrink,
    graph.BitCastOp: lambda op, a: [
        a[0].view(element_dtype(op.output.type.get_element_type()))],
}
