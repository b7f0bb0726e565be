"""ONNX's early experimental ops (Affine, Crop, DynamicSlice, ImageScaler,
ParametricSoftplus, Scale, ScaledTanh), removed from ONNX at opset 10 but still written in
old models and still run by onnxruntime (which keeps their schemas in the default domain),
and onnxruntime's MemcpyFromHost / MemcpyToHost, the device copies its partitioner inserts
(an identity on the CPU). Each is a standard op or two (`onnx_node`).

Semantics are onnxruntime 1.32's CPU kernels' (tests/unit/ops/test_experimental_ops.py).
"""

from __future__ import annotations

import numpy as np

from onnxc.frontend import onnx_types as types
from onnxc.frontend.onnx_context import NodeContext, Result
from onnxc.frontend.onnx_ops_math import Converter
from onnxc.frontend.onnx_ops_microsoft import float_builder, onnx_node


def _scalar(ctx: NodeContext, value: float) -> np.ndarray:
    return np.array(value, types.numpy_dtype(types.onnx_type_of_element(ctx.element_type(0))))


def _required_float(ctx: NodeContext, name: str) -> float:
    value = ctx.attr(name, None)
    if value is None:
        raise ctx.invalid(f"attribute '{name}' is required")
    return float(value)


def _scaled(ctx: NodeContext, x, scale: float) -> Result:
    return onnx_node(ctx, "Mul", [x, _scalar(ctx, scale)], opset=14)[0]


def convert_affine(ctx: NodeContext) -> list[Result]:
    """Affine: alpha * x + beta."""
    float_builder(ctx)
    scaled = _scaled(ctx, ctx.tensor(0), float(ctx.attr("alpha", 1.0)))
    return onnx_node(ctx, "Add", [scaled, _scalar(ctx, float(ctx.attr("beta", 0.0)))],
                     opset=14)


def convert_scale(ctx: NodeContext) -> list[Result]:
    """Scale: scale * x."""
    float_builder(ctx)
    return [_scaled(ctx, ctx.tensor(0), float(ctx.attr("scale", 1.0)))]


def convert_scaled_tanh(ctx: NodeContext) -> list[Result]:
    """ScaledTanh: alpha * tanh(beta * x) (both attributes required, as onnxruntime
    reads them)."""
    float_builder(ctx)
    alpha, beta = _required_float(ctx, "alpha"), _required_float(ctx, "beta")
    inner = onnx_node(ctx, "Tanh", [_scaled(ctx, ctx.tensor(0), beta)], opset=13)[0]
    return [_scaled(ctx, inner, alpha)]


def convert_parametric_softplus(ctx: NodeContext) -> list[Result]:
    """ParametricSoftplus: alpha * ln(1 + exp(beta * x)) (both attributes required)."""
    float_builder(ctx)
    alpha, beta = _required_float(ctx, "alpha"), _required_float(ctx, "beta")
    inner = onnx_node(ctx, "Softplus", [_scaled(ctx, ctx.tensor(0), beta)], opset=1)[0]
    return [_scaled(ctx, inner, alpha)]


def convert_image_scaler(ctx: NodeContext) -> list[Result]:
    """ImageScaler: scale * x + bias[c] of an NCHW image, one bias per channel."""
    float_builder(ctx)
    if ctx.rank(0) != 4:
        raise ctx.invalid(f"input must be 4-D (NCHW), got rank {ctx.rank(0)}")
    bias = np.asarray(ctx.attr("bias", []), np.float32)
    channels = ctx.shape(0)[1]
    if bias.size != channels:
        raise ctx.invalid(f"bias has {bias.size} values for {channels} channels")
    scaled = _scaled(ctx, ctx.tensor(0), float(ctx.attr("scale", 1.0)))
    per_channel = bias.astype(_scalar(ctx, 0).dtype).reshape(1, -1, 1, 1)
    return onnx_node(ctx, "Add", [scaled, per_channel], opset=14)


def convert_crop(ctx: NodeContext) -> list[Result]:
    """Crop: input[:, :, top:bottom, left:right] of an NCHW image, border = (left, top,
    right, bottom); with scale = (height, width), the crop is that size from (top, left)."""
    if ctx.rank(0) != 4:
        raise ctx.invalid(f"input must be 4-D (NCHW), got rank {ctx.rank(0)}")
    border = [int(b) for b in ctx.attr("border", [])]
    scale = [int(s) for s in ctx.attr("scale", [])]
    if len(border) != 4 or min(border, default=0) < 0:
        raise ctx.invalid(f"border must be 4 non-negative values, got {border}")
    if scale and (len(scale) != 2 or min(scale) < 0):
        raise ctx.invalid(f"scale must be 2 non-negative values, got {scale}")
    left, top, right, bottom = border
    height, width = ctx.shape(0)[2:]
    if not isinstance(height, int) or not isinstance(width, int):
        raise ctx.unsupported("a symbolic image size")
    end_h, end_w = (top + scale[0], left + scale[1]) if scale else (height - bottom,
                                                                      width - right)
    if not (top <= end_h <= height and left <= end_w <= width):
        raise ctx.invalid(f"the crop [{top}:{end_h}, {left}:{end_w}] is outside the "
                          f"{height}x{width} image")
    return onnx_node(ctx, "Slice", [ctx.tensor(0), np.array([top, left], np.int64),
                                    np.array([end_h, end_w], np.int64),
                                    np.array([2, 3], np.int64)], opset=13)


def convert_dynamic_slice(ctx: NodeContext) -> list[Result]:
    """DynamicSlice: ONNX Slice (opset 10) with starts, ends and axes as inputs."""
    axes = ctx.tensor(3) if ctx.has_input(3) else None
    return onnx_node(ctx, "Slice", [ctx.tensor(0), ctx.tensor(1), ctx.tensor(2), axes],
                     opset=10)


def convert_memcpy(ctx: NodeContext) -> list[Result]:
    """MemcpyFromHost / MemcpyToHost: onnxruntime's copy between devices, an identity."""
    return onnx_node(ctx, "Identity", [ctx.tensor(0)], opset=13)


CONVERTERS: dict[str, Converter] = {
    "Affine": convert_affine,
    "Crop": convert_crop,
    "DynamicSlice": convert_dynamic_slice,
    "ImageScaler": convert_image_scaler,
    "ParametricSoftplus": convert_parametric_softplus,
    "Scale": convert_scale,
    "ScaledTanh": convert_scaled_tanh,
    "MemcpyFromHost": convert_memcpy,
    "MemcpyToHost": convert_memcpy,
}
"""The experimental ops and onnxruntime's device copies, by op type (default domain)."""
