"""numpy semantics of graph.matmul_weight_quantized (dialects/graph_weight_quant.py), for
passes/evaluator.py: the weight dequantized in f32 as onnxruntime's MatMulNBits does when it
unpacks B ((q - zero point) * scale), then an f32 matmul, + bias."""

from __future__ import annotations

import numpy as np

from onnxc.dialects import graph
from onnxc.dialects.dense_data import element_dtype
from onnxc.dialects.graph_base import int_of
from onnxc.dialects.graph_weight_quant import unpack_bits


def dequantized_weight(op: graph.MatMulWeightQuantizedOp, packed: np.ndarray,
                       scales: np.ndarray, zero_points: np.ndarray) -> np.ndarray:
    """The op's [K, N] f32 weight."""
    k = int(op.k())
    q = unpack_bits(packed, int_of(op.bits), k).astype(np.float32)
    groups = op.groups()
    g = (np.asarray(groups, np.int64) if groups is not None
         else np.arange(k) // int_of(op.block_size))
    s = scales.astype(np.float32)[:, g]
    z = zero_points.astype(np.float32)[:, g]
    return ((q - z) * s).T


def matmul_weight_quantized(op: graph.MatMulWeightQuantizedOp,
                            args: list[np.ndarray]) -> list[np.ndarray]:
    a, packed, scales, zero_points = args[:4]
    y = np.matmul(a.astype(np.float32), dequantized_weight(op, packed, scales, zero_points))
    if len(args) > 4:
        y = y + args[4].astype(np.float32)
    return [y.astype(element_dtype(op.output.type.get_element_type()))]


EVALUATORS = {graph.MatMulWeightQuantizedOp: matmul_weight_quantized}
