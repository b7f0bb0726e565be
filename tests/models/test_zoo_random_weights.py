"""The nine model-zoo architectures with seeded random weights, against onnxruntime.

The shipped networks have constant weights, so their outputs are constant vectors that a
wrong kernel can still match. Here every weight is random (onnxc.zoo.randomize_weights) and
the logits before the final Softmax are compared too. Tolerance: rtol 1e-3, atol 1e-4, as the
issue states (float32 accumulation order differs between onnxc and onnxruntime). Each
network runs fully optimized (-O3, the default); the four smaller ones also unoptimized (-O0:
unfused kernels), the five largest at -O0 only with `-m slow` (about three minutes of CI).
Each case runs cold and then warm, from the cache the cold run filled (tests/models/conftest.py).
"""

import functools

import numpy as np
import onnxruntime as ort
import pytest

from onnxc.zoo import ZOO_MODELS, expose_logits, load_zoo, random_inputs, randomize_weights

RTOL, ATOL = 1e-3, 1e-4


SLOW_AT_O0 = {"densenet121", "inception_v1", "inception_v2", "vgg19", "zfnet512"}

CASES = [
    pytest.param(name, level, marks=[pytest.mark.slow] if level == 0 and name in SLOW_AT_O0
                 else [])
    for name in ZOO_MODELS for level in (0, 3)
]


@functools.lru_cache(maxsize=1)
def _case(name: str):
    """The randomized model, its inputs and onnxruntime's outputs: made once for a net's
    cold and warm passes at both levels (the cases of one net run one after another)."""
    model = expose_logits(randomize_weights(load_zoo(name), seed=1))
    feeds = random_inputs(model, seed=2)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    names = [o.name for o in session.get_outputs()]
    return model, feeds, names, session.run(None, feeds)


@pytest.mark.models
@pytest.mark.parametrize("name, opt_level", CASES)
def test_random_weights_match_onnxruntime(name: str, opt_level: int, cache_pass) -> None:
    model, feeds, names, expected = _case(name)
    compiled = cache_pass.compile(model, opt_level=opt_level)
    actual = cache_pass.outputs(compiled.run(None, feeds))
    assert names == compiled.output_names
    for name_, exp, got in zip(compiled.output_names, expected, actual):
        np.testing.assert_allclose(got, exp, rtol=RTOL, atol=ATOL, err_msg=name_)
