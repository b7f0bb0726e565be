"""numpy semantics of the reduction and fused graph ops (entries of the evaluator's table).

Written from the ONNX operator docs (ReduceMean/ReduceSum, LayerNormalization, RMSNormalization,
Gelu, PRelu) and, for the ops ONNX lacks, from the unfused compositions they replace.
Computation is in float64 so that the reference is not the thing being tested.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.ir import Operation

from onnxc.dialects import graph
from onnxc.dialects.activations import activation_of
from onnxc.dialects.graph import float_of, int_of, ints_of


def _reduce(fn):
    def evaluate(op: graph.ReduceOp, args: list[np.ndarray]) -> list[np.ndarray]:
        x = args[0].astype(np.float64) if args[0].dtype.kind == "f" else args[0]
        return [fn(x, axis=op.reduced_axes(), keepdims=int_of(op.keepdims) != 0)]

    return evaluate


def layer_normalization(op: graph.LayerNormalizationOp, args: list[np.ndarray]):
    x = args[0].astype(np.float64)
    axes = tuple(range(op.normalized_axis(), x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + float_of(op.epsilon)) * args[1]
    return [y + args[2] if len(args) > 2 else y]


def layer_normalization_stats(op: graph.LayerNormalizationStatsOp, args: list[np.ndarray]):
    x = args[0].astype(np.float64)
    axes = tuple(range(op.normalized_axis(), x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    inv_std = 1 / np.sqrt(((x - mean) ** 2).mean(axis=axes, keepdims=True) + float_of(op.epsilon))
    y = (x - mean) * inv_std * args[1]
    return [y + args[2] if len(args) > 2 else y, mean, inv_std]


def rms_normalization(op: graph.RMSNormalizationOp, args: list[np.ndarray]):
    x = args[0].astype(np.float64)
    axes = tuple(range(op.normalized_axis(), x.ndim))
    return [x / np.sqrt((x * x).mean(axis=axes, keepdims=True) + float_of(op.epsilon)) * args[1]]


def gelu(op: graph.GeluOp, args: list[np.ndarray]):
    """Its activation's numpy (dialects/activations.py), in float64."""
    found = activation_of(op)
    assert found is not None
    return [found[0].evaluate(args[0].astype(np.float64))]


def attention(op: graph.AttentionOp, args: list[np.ndarray]):
    q, k, v = (a.astype(np.float64) for a in args[:3])
    if op.kv_groups() > 1:  # grouped-query: K/V head h serves query heads h*g .. h*g+g-1
        k, v = (np.repeat(x, op.kv_groups(), axis=-3) for x in (k, v))
    scores = np.matmul(q, np.swapaxes(k, -1, -2)) * float_of(op.scale)
    if len(args) > 3:
        scores = scores + args[3]
    offset = None if op.causal_offset is None else int_of(op.causal_offset)
    if op.causal_from_end is not None:
        offset = scores.shape[-1] - scores.shape[-2]
    if offset is not None:  # key j is visible to query i when j <= i + offset
        i, j = np.indices(scores.shape[-2:])
        scores = np.where(j <= i + offset, scores, -np.inf)
    scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
    probabilities = scores / scores.sum(axis=-1, keepdims=True)
    if op.zero_nan_rows is not None:
        probabilities = np.where(np.isnan(probabilities), 0.0, probabilities)
    out = np.matmul(probabilities, v)
    return [out if op.output_perm is None else np.transpose(out, ints_of(op.output_perm))]


def weighted_sum(op: graph.WeightedSumOp, args: list[np.ndarray]):
    return [sum(c * a.astype(np.float64) for c, a in zip(op.coefficient_values(), args))]


EVALUATORS: dict[type[Operation], Callable[[Operation, list[np.ndarray]], list[np.ndarray]]] = {
    graph.ReduceMeanOp: _reduce(np.mean),
    graph.ReduceSumOp: _reduce(np.sum),
    graph.LayerNormalizationOp: layer_normalization,
    graph.LayerNormalizationStatsOp: layer_normalization_stats,
    graph.RMSNormalizationOp: rms_normalization,
    graph.GeluOp: gelu,
    graph.PReluOp: lambda op, a: [np.where(a[0] < 0, a[0] * a[1], a[0])],
    graph.WeightedSumOp: weighted_sum,
    graph.AttentionOp: attention,
}
