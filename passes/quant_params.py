"""The quantization parameters of a graph.quantize_linear / dequantize_linear, as arrays.

The QDQ passes compare and combine scales and zero points (x_scale * w_scale[m] / y_scale,
"same parameters" for moving a Q/DQ pair): `QParams` is that view, one float32 scale and
one zero point per element of the quantized axis (a single element when per-tensor). A
blocked quantization has no per-channel view and gives None: no pass rewrites it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import IntegerAttr, IntegerType, Signedness, TensorType, i64
from xdsl.ir import Operation, SSAValue

from onnxc.dialects import graph

QuantOp = graph.QuantizeLinearOp | graph.DequantizeLinearOp


@dataclass(frozen=True)
class QParams:
    """Scales (float32) and zero points along `axis` (None: one value for the tensor)."""

    scales: np.ndarray
    zero_points: np.ndarray
    axis: int | None

    @property
    def per_tensor(self) -> bool:
        return self.axis is None

    def same(self, other: QParams) -> bool:
        """Bit-identical parameters (same axis, scales and zero points)."""
        return (self.axis == other.axis and self.scales.shape == other.scales.shape
                and self.scales.tobytes() == other.scales.tobytes()
                and np.array_equal(self.zero_points, other.zero_points))

    @property
    def positive(self) -> bool:
        """Every scale is positive: Q and DQ are then increasing, so max / min / clamps
        commute with them. A negative scale (legal ONNX) makes them decreasing."""
        return bool(np.all(self.scales > 0))

    def scale(self) -> np.float32:
        """The one scale of a per-tensor quantization."""
        assert self.per_tensor
        return self.scales.reshape(-1)[0]

    def zero_point(self) -> int:
        assert self.per_tensor
        return int(self.zero_points.reshape(-1)[0])


def qparams(op: Operation) -> QParams | None:
    """The parameters of a Q/DQ op with an integer quantized side; None for anything else,
    for blocked quantization and for the float8/float4 formats."""
    if not isinstance(op, QuantOp) or integer_type(quantized_value(op)) is None:
        return None
    if op.block_size_of():
        return None
    scales = np.asarray(op.scales(), np.float32).reshape(-1)
    zeros = np.asarray(op.zero_points(), np.int64).reshape(-1)
    axis = op.axis_of()
    return QParams(scales, zeros, None if axis is None else axis)


def quantized_value(op: Operation) -> SSAValue:
    """The integer side of a Q/DQ op."""
    return op.output if isinstance(op, graph.QuantizeLinearOp) else op.input


def integer_type(value: SSAValue) -> IntegerType | None:
    t = value.type
    el = t.get_element_type() if isinstance(t, TensorType) else None
    return el if isinstance(el, IntegerType) else None


def is_byte(value: SSAValue) -> bool:
    """ui8 or i8 elements."""
    el = integer_type(value)
    return el is not None and el.width.data == 8


def is_i32(value: SSAValue) -> bool:
    el = integer_type(value)
    return (el is not None and el.width.data == 32
            and el.signedness.data != Signedness.UNSIGNED)


def byte_range(value: SSAValue) -> tuple[int, int]:
    el = integer_type(value)
    assert el is not None and el.width.data == 8
    return (0, 255) if el.signedness.data == Signedness.UNSIGNED else (-128, 127)


def quantize_scalar(x: float, p: QParams, lo: int, hi: int) -> int:
    """ONNX QuantizeLinear of one float with per-tensor `p` (float32 division, ties to even,
    saturation), as the evaluator and the kernel compute it."""
    q = float(np.rint(np.float32(x) / p.scale())) + p.zero_point()
    return int(min(max(q, lo), hi))


def i64_attr(v: int) -> IntegerAttr:
    return IntegerAttr(int(v), i64)
