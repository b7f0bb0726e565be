"""The BERT-base-style encoder (onnxc.zoo.bert_encoder, the performance benchmark) at -O2
against onnxruntime: the Extended fusions must fire and keep rtol 1e-3 / atol 1e-4; then
again from the compile cache (tests/models/conftest.py)."""

import numpy as np
import onnxruntime as ort
import pytest

from onnxc.passes.base import STATISTICS
from onnxc.zoo import bert_encoder, bert_inputs

RTOL, ATOL = 1e-3, 1e-4


@pytest.mark.models
def test_bert_base_two_layers_at_o2_matches_onnxruntime(cache_pass) -> None:
    model = bert_encoder(layers=2)
    feeds = bert_inputs(model)
    expected = ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    ).run(None, feeds)[0]
    STATISTICS.reset()
    compiled = cache_pass.compile(model, opt_level=2)
    if cache_pass.name == "cold":  # a hit runs no passes
        fired = {name for name, _ in STATISTICS.snapshot()}
        assert {"fuse-layernorm", "fuse-gelu", "fuse-attention", "horizontal-fusion"} <= fired
    actual = cache_pass.outputs(compiled.run(None, feeds))[0]
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=ATOL)
