"""TfIdfVectorizer over integer tokens: n-gram counts of a compile-time pool, as
comparisons, ands and sums of graph ops.

For each n-gram length n and skip distance d, every start position p of a row holds the
n-gram (x[p], x[p + d], ..., x[p + (n-1) d]); a pool n-gram g is counted there when every
x[p + j d] == g[j]. That is one Equal of the row's shifted slice against the pool's j-th
tokens per j, an And over j and a sum over p: [rows, positions, pool n-grams] booleans,
which suits the short rows and pools that text models use. Unigrams are counted at d = 1
only, longer n-grams at d = 1 .. max_skip_count + 1, as onnxruntime (and onnx's reference)
do. A matmul by a compile-time 0/1 matrix puts each pool n-gram's count at its output index;
TF, IDF and TFIDF weigh the counts by output index.
"""

from __future__ import annotations

import numpy as np
import onnx

from onnxc.frontend.onnx_context import NodeContext, Result
from onnxc.frontend.onnx_ops_math import Converter
from onnxc.frontend.onnx_ops_microsoft import onnx_node

_MODES = ("TF", "IDF", "TFIDF")


def _pool(ctx: NodeContext, pool: np.ndarray, counts: list[int],
          max_n: int) -> dict[int, np.ndarray]:
    """The pool's n-grams by length: {n: [k, n] tokens}, in pool order (their ids)."""
    if counts != sorted(counts) or (counts and counts[0] != 0) or len(counts) < max_n:
        raise ctx.invalid(f"ngram_counts {counts} must start at 0, not decrease and cover "
                          f"lengths up to max_gram_length {max_n}")
    grams = {}
    for k, start in enumerate(counts):
        end = counts[k + 1] if k + 1 < len(counts) else pool.size
        if (end - start) % (k + 1):
            raise ctx.invalid(f"the pool's {k + 1}-grams span {end - start} tokens, not a "
                              f"multiple of {k + 1}")
        grams[k + 1] = pool[start:end].reshape(-1, k + 1)
    return grams


def _count(ctx: NodeContext, x, grams: np.ndarray, n: int, d: int, length: int) -> Result:
    """[rows, k]: how often each of the k n-grams `grams` occurs in x's rows with skip
    distance d (None when no n-gram of that spread fits in a row)."""
    positions = length - (n - 1) * d
    if positions <= 0:
        return None
    matched = None
    for j in range(n):
        part = onnx_node(ctx, "Slice", [x, np.array([j * d], np.int64),
                                        np.array([j * d + positions], np.int64),
                                        np.array([1], np.int64)], opset=13)[0]
        part = onnx_node(ctx, "Unsqueeze", [part, np.array([2], np.int64)], opset=13)[0]
        equal = onnx_node(ctx, "Equal", [part, grams[:, j]], opset=13)[0]
        matched = equal if matched is None else onnx_node(ctx, "And", [matched, equal],
                                                          opset=7)[0]
    hits = onnx_node(ctx, "Cast", [matched], {"to": onnx.TensorProto.FLOAT}, opset=13)[0]
    return onnx_node(ctx, "ReduceSum", [hits, np.array([1], np.int64)], {"keepdims": 0},
                     opset=13)[0]


def convert_tfidf_vectorizer(ctx: NodeContext) -> list[Result]:
    """TfIdfVectorizer (integer tokens): counts of the pool's n-grams in each row of X ([C]
    or [B, C]), placed at ngram_indexes, weighed by mode."""
    if ctx.attr("pool_strings", None) is not None:
        raise ctx.unsupported("a pool of strings (pool_int64s only)")
    rank = ctx.rank(0)
    if rank not in (1, 2):
        raise ctx.invalid(f"X must be [C] or [B, C], got rank {rank}")
    length = ctx.shape(0)[-1]
    if not isinstance(length, int):
        raise ctx.unsupported("a symbolic row length")
    min_n, max_n = int(ctx.attr("min_gram_length", 0)), int(ctx.attr("max_gram_length", 0))
    max_skip = int(ctx.attr("max_skip_count", 0))
    mode = ctx.attr("mode", "")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if mode not in _MODES:
        raise ctx.invalid(f"mode must be one of {', '.join(_MODES)}, got '{mode}'")
    if not 1 <= min_n <= max_n or max_skip < 0:
        raise ctx.invalid(f"min_gram_length {min_n}, max_gram_length {max_n} and "
                          f"max_skip_count {max_skip} must satisfy 1 <= min <= max, skip >= 0")
    pool = np.asarray(ctx.attr("pool_int64s", []), np.int64)
    grams = _pool(ctx, pool, [int(c) for c in ctx.attr("ngram_counts", [])], max_n)
    indexes = np.asarray(ctx.attr("ngram_indexes", []), np.int64)
    total = sum(len(g) for g in grams.values())
    if indexes.size != total or (indexes.size and indexes.min() < 0):
        raise ctx.invalid(f"ngram_indexes must give each of the pool's {total} n-grams a "
                          f"non-negative output index")
    width = int(indexes.max()) + 1 if indexes.size else 0
    weights = np.asarray(ctx.attr("weights", []), np.float32)
    if weights.size and weights.size < width:
        raise ctx.invalid(f"weights has {weights.size} values for {width} outputs")
    x = ctx.tensor(0)
    if rank == 1:
        x = onnx_node(ctx, "Unsqueeze", [x, np.array([0], np.int64)], opset=13)[0]
    x = onnx_node(ctx, "Cast", [x], {"to": onnx.TensorProto.INT64}, opset=13)[0]
    result = None
    first = 0
    for n in range(1, max_n + 1):
        count = len(grams.get(n, ()))
        ids = indexes[first:first + count]
        first += count
        if n < min_n or not count:
            continue
        distances = [1] if n == 1 else range(1, max_skip + 2)
        counts = [c for d in distances
                  if (c := _count(ctx, x, grams[n], n, d, length)) is not None]
        for c in counts:
            placed = np.zeros((count, width), np.float32)
            placed[np.arange(count), ids] = 1.0
            term = onnx_node(ctx, "MatMul", [c, placed], opset=13)[0]
            result = term if result is None else onnx_node(ctx, "Add", [result, term],
                                                           opset=14)[0]
    rows = ctx.shape(0)[0] if rank == 2 else 1
    if result is None:
        result = onnx_node(ctx, "ConstantOfShape", [np.array([rows, width], np.int64)],
                           {"value": onnx.numpy_helper.from_array(
                               np.zeros(1, np.float32))}, opset=9)[0]
    w = weights[:width] if weights.size else np.ones(width, np.float32)
    if mode == "IDF":
        seen = onnx_node(ctx, "Greater", [result, np.zeros((), np.float32)], opset=13)[0]
        result = onnx_node(ctx, "Where", [seen, w, np.zeros((), np.float32)], opset=16)[0]
    elif mode == "TFIDF" and weights.size:
        result = onnx_node(ctx, "Mul", [result, w], opset=14)[0]
    if rank == 1:
        result = onnx_node(ctx, "Squeeze", [result, np.array([0], np.int64)], opset=13)[0]
    return [result]


CONVERTERS: dict[str, Converter] = {"TfIdfVectorizer": convert_tfidf_vectorizer}
"""The n-gram ops, by op type (default domain)."""
