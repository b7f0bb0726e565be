"""Numpy reference of the tree-ensemble ops (dialects/graph_trees.py): the same canonical
walk as the kernel, all samples at once, sums in f32 in tree order; the post transforms
as onnxruntime writes them (ml_common.h: its logistic, softmax, softmax_zero and its
probit through Winitzki's inverse error function)."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import f64

from onnxc.dialects.graph_base import int_of
from onnxc.dialects.graph_trees import (
    TreeEnsembleClassifierOp,
    TreeEnsembleRegressorOp,
    TreeTables,
)


def leaves(t: TreeTables, x: np.ndarray) -> np.ndarray:
    """[N, trees] the leaf each sample reaches in each tree."""
    rows = np.arange(x.shape[0])
    out = np.empty((x.shape[0], len(t.roots)), dtype=np.int64)
    for k, (root, depth) in enumerate(zip(t.roots, t.depths)):
        node = np.full(x.shape[0], root, dtype=np.int64)
        for _ in range(depth):
            v = x[rows, t.features[node]]
            inside = (t.lower[node] <= v) & (v <= t.upper[node])
            inside |= np.isnan(v) & (t.nan_inside[node] != 0)
            node = t.children[2 * node + np.where(inside, 0, 1)]
        out[:, k] = node
    return out


def aggregate(t: TreeTables, x: np.ndarray) -> np.ndarray:
    """[N, columns]: the aggregated leaf weights, base values added."""
    x = np.asarray(x, dtype=t.dtype)
    reached = leaves(t, x)
    n, cols = x.shape[0], t.columns
    if t.aggregate in ("SUM", "AVERAGE"):
        acc = np.zeros((n, cols), dtype=t.dtype)
        for k in range(reached.shape[1]):
            acc = acc + t.leaf_weights[reached[:, k]]
        if t.aggregate == "AVERAGE":
            acc = acc / t.dtype.type(len(t.roots))
    else:
        smaller = t.aggregate == "MIN"
        acc = np.full((n, cols), np.inf if smaller else -np.inf, dtype=t.dtype)
        seen = np.zeros((n, cols), dtype=bool)
        for k in range(reached.shape[1]):
            w, has = t.leaf_weights[reached[:, k]], t.has_weight[reached[:, k]]
            better = (w < acc) if smaller else (w > acc)
            acc = np.where(has & (better | ~seen), w, acc)
            seen |= has
        acc = np.where(seen, acc, t.dtype.type(0))
    if len(t.base_values) == cols:
        acc = acc + t.base_values
    return acc.astype(t.dtype)


def logistic(v: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(v)).astype(np.float32)
    p = (np.float32(1) / (np.float32(1) + e)).astype(np.float32)
    return np.where(v < 0, np.float32(1) - p, p).astype(np.float32)


def probit(v: np.ndarray) -> np.ndarray:
    """sqrt(2) * erfinv(2v - 1), erfinv as onnxruntime approximates it."""
    x = (v * np.float32(2) - np.float32(1)).astype(np.float32)
    sign = np.where(x < 0, np.float32(-1), np.float32(1))
    with np.errstate(divide="ignore", invalid="ignore"):
        lg = np.log(((np.float32(1) - x) * (np.float32(1) + x)).astype(np.float32))
        a = np.float32(2 / (3.14159 * 0.147)) + np.float32(0.5) * lg
        b = np.float32(1 / 0.147) * lg
        r = sign * np.sqrt(-a + np.sqrt(a * a - b))
    return (np.float32(1.41421356) * r).astype(np.float32)


def post_transform(kind: str, s: np.ndarray) -> np.ndarray:
    """onnxruntime's write_scores for two or more columns."""
    if kind == "LOGISTIC":
        return logistic(s)
    if kind == "PROBIT":
        return probit(s)
    if kind in ("SOFTMAX", "SOFTMAX_ZERO"):
        top = np.maximum(s.max(axis=1, keepdims=True), np.float32(-np.finfo(np.float32).max))
        e = np.exp(s - top).astype(np.float32)
        if kind == "SOFTMAX_ZERO":
            zero = np.abs(s) <= np.float32(1e-7)
            e = np.where(zero, s * np.exp(-top), e).astype(np.float32)
            total = np.where(zero, np.float32(0), e).sum(axis=1, keepdims=True)
        else:
            total = e.sum(axis=1, keepdims=True)
        return (e / total).astype(np.float32)
    return s


def regressor(op: TreeEnsembleRegressorOp, inputs: list[np.ndarray]) -> list[np.ndarray]:
    t = op.tables()
    s = aggregate(t, inputs[0])
    out = np.float64 if op.output.type.get_element_type() == f64 else np.float32
    if t.columns == 1:  # onnxruntime's FinalizeScores1: only PROBIT applies
        return [(probit(s) if t.post_transform == "PROBIT" else s).astype(out)]
    return [post_transform(t.post_transform, s).astype(out)]


def classifier(op: TreeEnsembleClassifierOp, inputs: list[np.ndarray]) -> list[np.ndarray]:
    t = op.tables()
    labels = np.asarray(op.class_labels.get_values(), dtype=np.int64)
    binary = int_of(op.binary)
    s = aggregate(t, inputs[0])
    if binary:
        s = s[:, 0]
        if binary == 1:
            label = np.where(s > np.float32(0.5), labels[1], labels[0])
            scores = np.stack([np.float32(1) - s, s], axis=1)
        else:
            label = np.where(s > 0, labels[1], labels[0])
            if t.post_transform == "LOGISTIC":
                scores = np.stack([logistic(-s), logistic(s)], axis=1)
            else:
                scores = np.stack([-s, s], axis=1)
        return [label.astype(np.int64), scores.astype(np.float32)]
    if len(t.base_values) == 1:
        s[:, 0] += t.base_values[0]
    if len(labels) == 2:
        label = np.where(s[:, 1] > 0, labels[1], labels[0])
    else:
        label = labels[np.argmax(s, axis=1)]
    return [label.astype(np.int64), post_transform(t.post_transform, s)]


EVALUATORS = {TreeEnsembleRegressorOp: regressor, TreeEnsembleClassifierOp: classifier}
