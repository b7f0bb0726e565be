"""The MobileNetV2-style network (onnxc.zoo.mobilenet_v2_like) fused at -O2, against
onnxruntime: every BatchNormalization folds into its conv and every Clip(0, 6) becomes a
conv epilogue and every residual Add starts its projection conv (graph.conv_add), so only
convs and the classifier head remain. Cold, then warm from the compile cache."""

from collections import Counter

import numpy as np
import onnxruntime as ort
import pytest

import onnxc
from onnxc.zoo import mobilenet_v2_like

RTOL, ATOL = 1e-3, 1e-4


@pytest.mark.models
def test_mobilenet_v2_like_fused_matches_onnxruntime(cache_pass) -> None:
    model = mobilenet_v2_like(seed=0)
    x = np.random.default_rng(1).uniform(0, 1, (1, 3, 224, 224)).astype(np.float32)
    optimized = onnxc.optimize(model, opt_level=2)
    kinds = Counter(op.name for op in optimized.walk() if op.name.startswith("graph."))
    assert kinds["graph.batch_normalization"] == 0 and kinds["graph.clip"] == 0, kinds
    assert kinds["graph.add"] == 0 and kinds["graph.conv_add"] == 4, kinds  # residuals
    convs = [op for op in optimized.walk() if op.name == "graph.conv"]
    # stem + head + expand and depthwise of 9 blocks + depthwise of the t = 1 block
    assert sum("activation" in op.properties for op in convs) == 21
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, {"input": x})[0]
    actual = cache_pass.outputs(cache_pass.compile(model, opt_level=2)(x))[0]
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=ATOL)
