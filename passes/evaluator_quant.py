"""numpy semantics of the quantization ops (graph_quant), for passes/evaluator.py.

Written from the ONNX operator docs and onnx.reference: QuantizeLinear divides in the
op's division type, rounds half to even (np.rint), adds the zero point and saturates to the
integer type; to a float8/float4 type it casts as ONNX Cast does (saturating unless
`saturate` = 0). DequantizeLinear subtracts the zero point and scales in f32.
"""

from __future__ import annotations

import numpy as np

from onnxc.dialects import graph
from onnxc.dialects.dense_data import cast_array, element_dtype
from onnxc.dialects.graph_quant import is_float_quantized, quantized_range


def _dtype(value) -> np.dtype:
    return element_dtype(value.type.get_element_type())


def quantize(op: graph.QuantizeLinearOp, args: list[np.ndarray]) -> list[np.ndarray]:
    scale, zero = op.broadcast_params()
    div = element_dtype(op.division_type())
    y = args[0].astype(div) / scale.astype(div)
    out = _dtype(op.output)
    if is_float_quantized(op.quantized_type()):
        return [cast_array(y.astype(np.float32) + zero.astype(np.float32), out, op.saturates())]
    lo, hi = quantized_range(op.quantized_type())
    q = np.rint(y.astype(np.float64)) + zero
    return [np.clip(np.nan_to_num(q), lo, hi).astype(out)]


def dequantize(op: graph.DequantizeLinearOp, args: list[np.ndarray]) -> list[np.ndarray]:
    scale, zero = op.broadcast_params()
    x = args[0]
    if is_float_quantized(op.quantized_type()):
        centred = x.astype(np.float32) - zero.astype(np.float32)
    else:
        centred = (x.astype(np.int64) - zero).astype(np.float32)
    return [(centred * scale.astype(np.float32)).astype(_dtype(op.output))]


def dynamic_quantize(op: graph.DynamicQuantizeLinearOp,
                     args: list[np.ndarray]) -> list[np.ndarray]:
    """As onnx.reference: the range includes 0, scale 1 / 255 for an empty range; NaN
    does not widen the range (as the kernel and onnxruntime's x86 kernel)."""
    x = args[0].astype(np.float32)
    hi = np.float32(np.fmax.reduce(x.ravel(), initial=np.float32(0)))
    lo = np.float32(np.fmin.reduce(x.ravel(), initial=np.float32(0)))
    scale = np.float32(1.0 if hi == lo else hi - lo) / np.float32(255)
    zero = np.rint(np.clip(np.float32(0) - lo / scale, 0, 255))
    y = np.clip(np.rint(x / scale) + zero, 0, 255)
    return [y.astype(np.uint8), np.asarray(scale, np.float32), np.asarray(zero, np.uint8)]


EVALUATORS = {
    graph.QuantizeLinearOp: quantize,
    graph.DequantizeLinearOp: dequantize,
    graph.DynamicQuantizeLinearOp: dynamic_quantize,
}
