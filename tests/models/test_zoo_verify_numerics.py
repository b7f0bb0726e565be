"""-O3 keeps every model-zoo network's results: bisect_pipeline evaluates each network with
the numpy evaluator before the graph pipeline and after every pass, on random inputs and
seeded random weights (the logits before the final Softmax are outputs too, so a drift cannot
hide in a saturated probability). A drift names the first pass that caused it.
"""

import pytest

from onnxc.frontend import import_onnx
from onnxc.passes.levels import level_passes
from onnxc.passes.verify_numerics import bisect_pipeline
from onnxc.zoo import ZOO_MODELS, expose_logits, load_zoo, randomize_weights

SLOW_NETS = ("densenet121", "vgg19")
"""The two that take 20-30 s of numpy convolutions each: with `-m slow` (the other seven
cover every pass that fires on them)."""


@pytest.mark.models
@pytest.mark.parametrize("name", [
    pytest.param(name, marks=[pytest.mark.slow] if name in SLOW_NETS else [])
    for name in ZOO_MODELS])
def test_o3_pipeline_keeps_the_numerics(name: str) -> None:
    module = import_onnx(expose_logits(randomize_weights(load_zoo(name), seed=1)))
    report = bisect_pipeline(module, list(level_passes(3)), seed=2)
    assert report.ok, str(report)
    assert any(step.removed for step in report.steps), "the pipeline rewrote nothing"
