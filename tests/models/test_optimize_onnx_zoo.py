"""`onnxc.optimize(..., as_onnx=True)` on every zoo net available without download: the nine
model-zoo networks shipped in the onnx package (random weights, logits exposed) and
`onnxc.zoo.benchmark_models()`. Each export passes onnx's full check, runs in onnxruntime to
the original's outputs (rtol 1e-4, atol 1e-5) and has no more compute nodes than
onnxruntime's ORT_ENABLE_EXTENDED optimized model (tests/onnx_export_checks.py).

`python tests/models/test_optimize_onnx_zoo.py` prints the node-count table of docs/tools.md.
"""

import pytest

from onnxc import zoo
from tests.onnx_export_checks import check_export

pytestmark = [pytest.mark.models, pytest.mark.slow]


def _nets():
    nets = {name: (lambda name=name: zoo.expose_logits(zoo.randomize_weights(
        zoo.load_zoo(name)))) for name in zoo.ZOO_MODELS}
    nets.update(zoo.benchmark_models())
    return nets


NETS = _nets()


def _inputs(name, model):
    return zoo.bert_inputs(model) if name == "bert_encoder" else zoo.random_inputs(model)


@pytest.mark.parametrize("name", list(NETS))
def test_zoo_net_exports_to_onnx(name):
    model = NETS[name]()
    original, ours, _extended = check_export(model, _inputs(name, model))
    assert ours <= original


if __name__ == "__main__":
    print("| network | original | onnxc -O3 | onnxruntime extended |")
    print("|---|---:|---:|---:|")
    for name, build in NETS.items():
        model = build()
        counts = check_export(model, _inputs(name, model))
        print(f"| {name} | {counts[0]} | {counts[1]} | {counts[2]} |", flush=True)
