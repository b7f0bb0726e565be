"""Graph ops for linear quantization: per tensor, per axis or in blocks along one axis.

`graph.quantize_linear`: y = saturate(round_half_to_even(x / scale) + zero_point) for an
integer y (ui8/i8, ui16/i16, ui4/i4, ui2/i2: the element type gives the saturation range);
for a float y (the four 8-bit floats, FLOAT4E2M1) y = cast(x / scale + zero_point) with
ONNX Cast's rounding, saturating unless `saturate` is 0. As ONNX QuantizeLinear.
`graph.dequantize_linear`: y = (x - zero_point) * scale, computed in f32, as ONNX
DequantizeLinear (x may also be i32, as opset 10 allows).

The parameters are compile-time properties (the importer accepts only constant ones):
- per tensor (no `axis`): `scale` a FloatAttr of the scale's float type, `zero_point` an
  IntegerAttr (a FloatAttr for float quantized types): `{scale = 5.0e-02 : f32,
  zero_point = 128 : i64}`;
- per axis (`axis` = a, no `block_size`): dense `scale` of shape [D], D = the input's dim a;
- blocked (`axis` = a, `block_size` = B > 0): dense `scale` of the input's rank whose dim a is
  ceil(D / B) and every other dim the input's: element i uses scale[.., i[a] // B, ..].
Dense zero points have the scale's shape and are i32 (f32 for float quantized types), so
4-bit values print as themselves. `axis` is stored non-negative. `precision` (opset 23) is
the float type QuantizeLinear divides in; without it, the wider of x's and the scale's.
A scale is finite and nonzero, of either sign: with a negative scale both ops are
decreasing (a larger x quantizes to a smaller q), which the passes that move max/min-like
ops or fold clamps across them check (`QParams.positive`).
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import (
    AnyFloat,
    DenseIntOrFPElementsAttr,
    Float4E2M1FNType,
    Float8E4M3FNType,
    Float8E4M3FNUZType,
    Float8E5M2FNUZType,
    Float8E5M2Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    Signedness,
    TensorType,
    f32,
)
from xdsl.ir import TypeAttribute
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.utils.exceptions import VerifyException

from onnxc.dialects.dense_data import element_dtype, to_numpy
from onnxc.dialects.graph_base import GraphOp, UnaryFields, int_of, shape_of
from onnxc.dialects.graph_traits import NHWCKernel, QuantizationKernel

FLOAT_QUANTIZED = (Float8E4M3FNType, Float8E4M3FNUZType, Float8E5M2Type, Float8E5M2FNUZType,
                   Float4E2M1FNType)
"""The float formats QuantizeLinear/DequantizeLinear take as the quantized side."""


def is_float_quantized(el) -> bool:
    return isinstance(el, FLOAT_QUANTIZED)


def quantized_range(el) -> tuple[int, int]:
    """[min, max] of an integer quantized element type (2 to 32 bits, signed or unsigned);
    ValueError for anything else."""
    if isinstance(el, IntegerType) and 2 <= el.width.data <= 32:
        width = el.width.data
        if el.signedness.data == Signedness.UNSIGNED:
            return 0, (1 << width) - 1
        return -(1 << (width - 1)), (1 << (width - 1)) - 1
    raise ValueError(f"quantized element type must be an integer of 2 to 32 bits or an "
                     f"8- or 4-bit float, got {el}")


class _LinearQuantOp(GraphOp, UnaryFields):
    scale = prop_def(FloatAttr | DenseIntOrFPElementsAttr)
    zero_point = prop_def(IntegerAttr | FloatAttr | DenseIntOrFPElementsAttr)
    axis = opt_prop_def(IntegerAttr)
    block_size = opt_prop_def(IntegerAttr)

    def quantized_type(self):
        raise NotImplementedError

    def real_type(self):
        raise NotImplementedError

    def scale_type(self):
        """The float type the scale is stored in (f32, f16 or bf16 as imported)."""
        if isinstance(self.scale, FloatAttr):
            return self.scale.type
        return self.scale.get_element_type()

    def scales(self) -> np.ndarray:
        """The scale(s) as an array of the scale's float dtype: shape [] per tensor, [D] per
        axis, blocked the input's rank with dim `axis` = ceil(D / block_size)."""
        if isinstance(self.scale, FloatAttr):
            return np.asarray(self.scale.value.data, dtype=element_dtype(self.scale.type))
        return to_numpy(self.scale)

    def zero_points(self) -> np.ndarray:
        """The zero point(s), shaped as `scales()`: int64 values for integer quantized types,
        float32 ones for the float types."""
        zp = self.zero_point
        dtype = np.float32 if is_float_quantized(self.quantized_type()) else np.int64
        if isinstance(zp, DenseIntOrFPElementsAttr):
            return to_numpy(zp).astype(dtype)
        return np.asarray(zp.value.data, dtype=dtype)

    def axis_of(self) -> int | None:
        """The quantization axis (non-negative), or None for per-tensor parameters."""
        return None if self.axis is None else int_of(self.axis)

    def block_size_of(self) -> int:
        """The block length along `axis_of()`; 0 when not blocked."""
        return int_of(self.block_size)

    def is_per_tensor(self) -> bool:
        """One scale and zero point for the whole tensor."""
        return self.axis is None

    def broadcast_params(self) -> tuple[np.ndarray, np.ndarray]:
        """(scales, zero points) shaped to broadcast against the input: per tensor as []
        arrays, per axis as [1, .., D, .., 1], blocked repeated block_size times along the
        axis (and cut to the input's length)."""
        scales, zeros = self.scales(), self.zero_points()
        axis = self.axis_of()
        if axis is None:
            return scales, zeros
        shape = shape_of(self.input)
        if self.block_size_of() == 0:
            view = [1] * len(shape)
            view[axis] = shape[axis]
            return scales.reshape(view), zeros.reshape(view)
        block = self.block_size_of()
        expand = [np.repeat(a, block, axis=axis).take(range(shape[axis]), axis=axis)
                  for a in (scales, zeros)]
        return expand[0], expand[1]

    def verify_element_types(self) -> None:
        real = self.real_type()
        if not isinstance(real, AnyFloat) or is_float_quantized(real):
            raise VerifyException(f"{self.name}: the real-valued side must be f16, bf16, f32 "
                                  f"or f64, got {real}")
        scale_type = self.scale_type()
        if not isinstance(scale_type, AnyFloat) or is_float_quantized(scale_type):
            raise VerifyException(f"{self.name}: scale must be f16, bf16, f32 or f64, got "
                                  f"{scale_type}")
        qtype = self.quantized_type()
        self._verify_layout()
        zeros = self.zero_points()
        if is_float_quantized(qtype):
            if isinstance(self.zero_point, IntegerAttr):
                raise VerifyException(f"{self.name}: a {qtype} zero_point must be a float")
        else:
            try:
                lo, hi = quantized_range(qtype)
            except ValueError as err:
                raise VerifyException(f"{self.name}: {err}") from err
            if isinstance(self.zero_point, FloatAttr):
                raise VerifyException(f"{self.name}: a {qtype} zero_point must be an integer")
            if zeros.size and not (lo <= zeros.min() and zeros.max() <= hi):
                value = zeros.min() if zeros.min() < lo else zeros.max()
                raise VerifyException(f"{self.name}: zero_point {value} is out of range "
                                      f"[{lo}, {hi}]")
        scales = self.scales().astype(np.float64)
        if not np.all(np.isfinite(scales)) or np.any(scales == 0):
            raise VerifyException(f"{self.name}: scale must be finite and nonzero")

    def _verify_layout(self) -> None:
        """Per-tensor parameters are scalars; per-axis and blocked ones dense arrays of the
        shape the module docstring gives."""
        shape = shape_of(self.input)
        axis, block = self.axis_of(), self.block_size_of()
        dense_scale = isinstance(self.scale, DenseIntOrFPElementsAttr)
        dense_zero = isinstance(self.zero_point, DenseIntOrFPElementsAttr)
        if axis is None:
            if dense_scale or dense_zero or block:
                raise VerifyException(f"{self.name}: per-tensor parameters (no axis) must be a "
                                      "scalar scale and zero_point without block_size")
            return
        if not 0 <= axis < len(shape):
            raise VerifyException(f"{self.name}: axis {axis} is out of range for rank "
                                  f"{len(shape)}")
        if not dense_scale or not dense_zero:
            raise VerifyException(f"{self.name}: per-axis or blocked parameters must be dense "
                                  "scale and zero_point arrays")
        if block < 0:
            raise VerifyException(f"{self.name}: block_size must be positive, got {block}")
        if block == 0:
            expected = (shape[axis],)
        else:
            expected = tuple(math.ceil(d / block) if i == axis else d
                             for i, d in enumerate(shape))
        for name, attr in (("scale", self.scale), ("zero_point", self.zero_point)):
            if tuple(attr.get_shape()) != expected:
                raise VerifyException(f"{self.name}: {name} has shape "
                                      f"{tuple(attr.get_shape())}, expected {expected}")

    def infer_shapes(self):
        return [shape_of(self.input)]


@irdl_op_definition
class QuantizeLinearOp(_LinearQuantOp):
    """Float -> integer (round half to even, saturate) or float8/float4 (ONNX Cast rounding;
    `saturate` = 0 lets too-large values become inf/NaN as the format has them)."""

    name = "graph.quantize_linear"
    traits = traits_def(QuantizationKernel(), NHWCKernel(symbolic=True))
    saturate = opt_prop_def(IntegerAttr)
    precision = opt_prop_def(TypeAttribute)

    def quantized_type(self):
        return self.output.type.get_element_type()

    def real_type(self):
        return self.input.type.get_element_type()

    def saturates(self) -> bool:
        return int_of(self.saturate, 1) != 0

    def division_type(self):
        """The float type x / scale is computed in: `precision`, else the wider (in bits) of
        the input's and the scale's types, as numpy promotes them (f16 with bf16: f32)."""
        if self.precision is not None:
            return self.precision
        x, s = self.real_type(), self.scale_type()
        if x == s:
            return x
        wx, ws = x.bitwidth, s.bitwidth
        if wx == ws:  # f16 and bf16
            return f32
        return x if wx > ws else s


@irdl_op_definition
class DequantizeLinearOp(_LinearQuantOp):
    """Integer or float8/float4 -> float: (x - zero_point) * scale, in f32, then rounded to
    the result type."""

    name = "graph.dequantize_linear"
    traits = traits_def(QuantizationKernel(), NHWCKernel(symbolic=True))

    def quantized_type(self):
        return self.input.type.get_element_type()

    def real_type(self):
        return self.output.type.get_element_type()


@irdl_op_definition
class DynamicQuantizeLinearOp(GraphOp):
    """ONNX DynamicQuantizeLinear: f32 -> ui8 with the scale and zero point computed from
    the data. range = [min(0, min(x)), max(0, max(x))]; scale = (max - min) / 255 (1 / 255
    for an all-zero x, as onnx.reference; onnxruntime gives 1, y is 0 either way); zero_point =
    round_half_even(clamp(0 - min / scale, 0, 255)); y = quantize_linear(x, scale, zero_point).
    Results: y, scale (f32, shape []), zero_point (ui8, shape [])."""

    name = "graph.dynamic_quantize_linear"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    output_scale = result_def(TensorType)
    output_zero_point = result_def(TensorType)

    def verify_element_types(self) -> None:
        el = self.input.type.get_element_type()
        if el != f32:
            raise VerifyException(f"{self.name}: input must be f32, got {el}")
        ui8 = IntegerType(8, Signedness.UNSIGNED)
        expected = (ui8, f32, ui8)
        for r, t in zip(self.results, expected, strict=True):
            if r.type.get_element_type() != t:
                raise VerifyException(f"{self.name}: results must be ui8, f32 and ui8, got "
                                      f"{[r.type.get_element_type() for r in self.results]}")

    def infer_shapes(self):
        return [shape_of(self.input), (), ()]


QUANT_OPS = (QuantizeLinearOp, DequantizeLinearOp, DynamicQuantizeLinearOp)
