"""The packed int8 conv over few channels: each kernel row's taps packed as one run of bytes.

int8_layout.py `packs_runs`: with C not a multiple of 4 (a stem over 1 or 3 channels) a
kernel row's kw * C channels take ceil(kw * C / 4) words instead of kw words with padded
channel tails; the scratch holds bytes and A words are read at byte offsets, the last word
of a row reading up to 3 bytes past it (the next pixel's, or the scratch's slack) against
zero weights. Results must stay exactly the conv's: against numpy's contract for static
shapes (every channel count up to 6, kernel widths 2 to 7, strides, batches, s8 inputs,
the VNNI and the portable forms), and against onnxruntime over symbolic image sizes (the
byte scratch in the run-time arena), cold and from the compile cache.
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxc
from onnxc.dialects.graph_qlinear import QLinearConvOp
from onnxc.lowering.graph_to_loops import int8_layout
from onnxc.target import host_target
from tests.unit.test_qlinear_kernels import (
    _assert_matches,
    conv_case,
    graph_compiler,
    random_bytes,
    random_weights,
)

CASES = {
    # name: x shape (NCHW), w shape, strides, pads, dilations, packed as runs
    "stem_c3_7x7": ((1, 3, 21, 19), (64, 3, 7, 7), (2, 2), (3, 3, 3, 3), (1, 1), True),
    "gray_c1_3x3": ((2, 1, 9, 10), (16, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), True),
    "c2_kw2": ((1, 2, 6, 7), (32, 2, 2, 2), (1, 1), (0, 1, 1, 0), (1, 1), True),
    "c5_5x5": ((1, 5, 11, 12), (48, 5, 5, 5), (1, 2), (2, 2, 2, 2), (1, 1), True),
    "c6_3x3_dilated_h": ((2, 6, 9, 9), (16, 6, 3, 3), (1, 1), (2, 1, 2, 1), (2, 1), True),
    "c3_1x7": ((1, 3, 5, 30), (16, 3, 1, 7), (1, 1), (0, 3, 0, 3), (1, 1), True),
    # not packed: whole words per tap already, or taps apart along W
    "c4_3x3": ((1, 4, 8, 8), (16, 4, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), False),
    "c3_dilated_w": ((1, 3, 9, 11), (16, 3, 3, 3), (1, 1), (1, 2, 1, 2), (1, 2), False),
}


@pytest.mark.parametrize("form", ["host", "portable"])
@pytest.mark.parametrize("dtype", [np.uint8, np.int8], ids=["u8", "s8"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_packed_runs_exact(name, dtype, form, monkeypatch):
    if form == "portable":
        monkeypatch.setattr(int8_layout, "target_int8_isa", lambda target: "portable")
    x_shape, w_shape, strides, pads, dilations, runs = CASES[name]
    x = random_bytes(dtype, x_shape)
    w = random_weights(np.int8, w_shape, "vnni")
    module, x, expected, _ = conv_case(x, w, (strides, pads, dilations, 1), np.uint8, True,
                                       True, layout="NHWC")
    op = next(o for o in module.walk() if isinstance(o, QLinearConvOp))
    t = int8_layout.tiling(op, host_target())
    g = int8_layout.tiled_gemm(op, t)
    assert g.runs == (runs and t.form in int8_layout.RUN_FORMS)
    if g.runs:
        assert g.k_words == w_shape[2] * -(-w_shape[3] * w_shape[1] // 4)
    with graph_compiler() as compile_module:
        _assert_matches(compile_module(module, threads=2)(x)[0], expected)


def _symbolic_stem() -> object:
    """QLinearConv 7x7 / 2 over [N, 3, H, W] ui8 (a QOperator stem), weights within +-60
    (onnxruntime's AVX2 u8s8 products saturate past that)."""
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(np.asarray(v), n) for n, v in {
        "xs": np.float32(0.02), "xz": np.uint8(121), "ws": np.float32(0.003),
        "wz": np.int8(0), "ys": np.float32(0.04), "yz": np.uint8(7),
        "w": rng.integers(-60, 61, (32, 3, 7, 7)).astype(np.int8),
        "b": rng.integers(-900, 900, 32).astype(np.int32)}.items()]
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"],
                            ["y"], strides=[2, 2], pads=[3, 3, 3, 3])
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, ["N", 3, "H", "W"])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_packed_runs_over_symbolic_sizes_cold_and_cached(tmp_path):
    model = _symbolic_stem()
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(4)
    cold = onnxc.compile(model, cache_dir=tmp_path, quiet=True, num_threads=2)
    warm = onnxc.compile(model, cache_dir=tmp_path, quiet=True, num_threads=2)
    assert not cold.from_cache and warm.from_cache
    for shape in [(1, 3, 33, 29), (2, 3, 16, 16), (1, 3, 1, 1), (1, 3, 4, 57)]:
        x = rng.integers(0, 256, shape).astype(np.uint8)
        (theirs,) = session.run(None, {"x": x})
        for compiled in (cold, warm):
            (ours,) = compiled.run(None, {"x": x})
            np.testing.assert_array_equal(ours, theirs, err_msg=str(shape))
