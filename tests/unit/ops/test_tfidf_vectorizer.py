"""TfIdfVectorizer over integer tokens (frontend/onnx_ops_ngram.py) beside onnxruntime 1.32:
each mode with and without weights, unigrams with bigrams and trigrams at several skip
counts, [C] and [B, C] inputs of int32 and int64, and the refusals. Counts are small
integers in float32: exact."""

from __future__ import annotations

import numpy as np
import pytest

import onnxc
from onnxc.errors import ModelLoadError, UnsupportedOpError
from tests.single_op import run_both, single_op_model

POOL = dict(pool_int64s=[2, 3, 5, 4, 5, 6, 7, 8, 6, 7, 2, 3, 5], ngram_counts=[0, 4, 10],
            ngram_indexes=[0, 1, 2, 3, 4, 5, 6, 1])
"""Unigrams 2 3 5 4, bigrams (5 6) (7 8) (6 7), trigram (2 3 5); the trigram shares output
index 1 with a unigram."""


def model(x, **attrs):
    return single_op_model("TfIdfVectorizer", {"x": (x.dtype, list(x.shape))},
                           attrs={**POOL, **attrs}, opset=9, ir_version=8, node_name="n")


@pytest.mark.parametrize("mode", ["TF", "IDF", "TFIDF"])
@pytest.mark.parametrize("weights", [None, [0.5, 2.0, 1.0, 3.0, 0.25, 1.5, 2.5, 4.0]])
@pytest.mark.parametrize("min_n, max_n, skip", [(1, 1, 0), (1, 3, 0), (2, 3, 2), (1, 2, 5)])
def test_modes_lengths_and_skips(mode, weights, min_n, max_n, skip):
    rng = np.random.default_rng(min_n * 10 + max_n + skip)
    x = rng.integers(2, 9, (3, 12)).astype(np.int64)
    attrs = dict(mode=mode, min_gram_length=min_n, max_gram_length=max_n,
                 max_skip_count=skip)
    if weights is not None:
        attrs["weights"] = weights
    run_both(model(x, **attrs), {"x": x}, exact=True)


@pytest.mark.parametrize("shape, dtype", [((12,), np.int32), ((2, 9), np.int32),
                                          ((1, 4), np.int64)])
def test_shapes_and_token_types(shape, dtype):
    x = np.random.default_rng(1).integers(2, 9, shape).astype(dtype)
    run_both(model(x, mode="TF", min_gram_length=1, max_gram_length=3, max_skip_count=1),
             {"x": x}, exact=True)


def test_refusals():
    x = np.zeros((2, 5), np.int64)
    with pytest.raises(ModelLoadError, match="mode must be one of"):
        onnxc.compile(model(x, mode="BM25", min_gram_length=1, max_gram_length=1))
    with pytest.raises(ModelLoadError, match="not a multiple of 2"):
        onnxc.compile(single_op_model(
            "TfIdfVectorizer", {"x": (np.int64, [2, 5])}, opset=9,
            attrs=dict(mode="TF", min_gram_length=1, max_gram_length=2, pool_int64s=[1, 2, 3],
                       ngram_counts=[0, 0], ngram_indexes=[0])))
    with pytest.raises(UnsupportedOpError, match="a pool of strings"):
        onnxc.compile(single_op_model(
            "TfIdfVectorizer", {"x": (np.int64, [2, 5])}, opset=9,
            attrs=dict(mode="TF", min_gram_length=1, max_gram_length=1, pool_strings=["a"],
                       ngram_counts=[0], ngram_indexes=[0])))
