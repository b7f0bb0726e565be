"""A torch-exported UNet with dynamic batch, height and width, against onnxruntime: compiled
once (symbolically), run at several image sizes; cold, then warm from the cache.

The model (tests/models/torch_exports/unet.onnx, made by export_unet.py there with torch's
TorchScript exporter): conv + ReLU encoder blocks (BatchNorm folded by the export), 2x2 max
pools, a 2x2 stride-2 ConvTranspose and a 3x3 one with padding and output_padding 1, skip
connections concatenated, a 1x1 head. Sizes are multiples of 4, as the skip connections
need (another size fails the Concat's run-time check, naming the node).

Tolerance: rtol 1e-4 / atol 1e-5 (f32 sums of up to 288 taps in another order).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import onnxc

EXPORTS = Path(__file__).parent / "torch_exports"
TOL = {"rtol": 1e-4, "atol": 1e-5}
SHAPES = [(1, 3, 16, 16), (2, 3, 12, 20), (1, 3, 4, 4), (1, 3, 36, 8)]


@pytest.mark.models
def test_torch_unet_at_several_image_sizes(cache_pass) -> None:
    model = onnx.load(str(EXPORTS / "unet.onnx"))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    compiled = cache_pass.compile(model)
    assert compiled.symbolic is not None
    rng = np.random.default_rng(4)
    for shape in SHAPES:
        image = rng.standard_normal(shape).astype(np.float32)
        (want,) = session.run(None, {"image": image})
        (got,) = cache_pass.outputs(compiled(image))
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, **TOL, err_msg=str(shape))
    with pytest.raises(onnxc.errors.InvalidInputError, match="Concat"):
        compiled(np.zeros((1, 3, 10, 10), np.float32))
