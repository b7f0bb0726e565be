"""The int8 GEMM's pipelined epilogue (int8_epilogue.py): a tile's accumulators wait in a
stack buffer and are requantized a row at a time inside the next tile's K loop.

Which convs take it (`pipelines_epilogue`: on the CPUs where it was measured), and that
every output is still computed exactly once with the right rows, columns and tables: exact
int8 convs (the integer reference of test_qlinear_kernels) over K loops shorter than the
tile (rows left to drain after the loop), of one row per step and of several, both VNNI
tiles (6 x 64 and 7 x 48), a tail panel after the pipelined ones, a shifted last row block,
strides, two images, one and two threads (an iteration's last tile is drained at its end,
never by another thread), and residual sums against the numpy evaluator, cold and from the
cache. Each is also compared with the same kernel built without the pipeline: the same
bits. These run on any AVX512-VNNI host, the pipeline enabled for its CPU
(`host_pipelines`).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import onnxc
from onnxc.dialects.graph_qlinear import QLinearConvOp
from onnxc.lowering.graph_to_loops import int8_epilogue, int8_layout
from onnxc.lowering.graph_to_loops.int8_epilogue import drain_spread, pipelines_epilogue
from onnxc.passes.verify_numerics import MemoEvaluator
from onnxc.target import PRESETS, host_target
from tests.unit.test_qlinear_conv_add import _feeds, residual_model
from tests.unit.test_qlinear_kernels import (
    _assert_matches,
    conv_case,
    graph_compiler,
    random_bytes,
    random_weights,
)

AVX512 = PRESETS["x86-64-v4"]
ZEN4 = dataclasses.replace(AVX512, cpu="znver4", features=AVX512.features + ",+avx512vnni")
SAPPHIRE_RAPIDS = dataclasses.replace(ZEN4, cpu="sapphirerapids")
HOST_VNNI = int8_layout.target_int8_isa(host_target()) == "vnni"


@pytest.fixture
def host_pipelines(monkeypatch):
    """The pipeline on this host's CPU too (measured on Zen 4; any VNNI CPU runs it)."""
    monkeypatch.setattr(int8_epilogue, "PIPELINED_CPUS",
                        (*int8_epilogue.PIPELINED_CPUS, host_target().cpu))


def _conv(x_shape, w_shape, stride=1, pad=0, out_dtype=np.uint8):
    x = random_bytes(np.uint8, x_shape)
    w = random_weights(np.int8, w_shape, "vnni")
    module, x, expected, _ = conv_case(x, w, ((stride, stride), (pad,) * 4, (1, 1), 1),
                                       out_dtype, True, True, layout="NHWC")
    op = next(o for o in module.walk() if isinstance(o, QLinearConvOp))
    return module, x, expected, op


DECISIONS = {
    # name: x shape, w shape, stride, pad, output type, target, pipelined
    "1x1 6x64": ((1, 64, 16, 16), (128, 64, 1, 1), 1, 0, np.uint8, ZEN4, True),
    "1x1 7x48 small map": ((1, 64, 7, 7), (96, 64, 1, 1), 1, 0, np.uint8, ZEN4, True),
    "1x1 strided": ((1, 32, 24, 24), (64, 32, 1, 1), 2, 0, np.uint8, ZEN4, True),
    "3x3": ((1, 64, 16, 16), (64, 64, 3, 3), 1, 1, np.uint8, ZEN4, False),
    "1x1 padded": ((1, 64, 16, 16), (64, 64, 1, 1), 1, 1, np.uint8, ZEN4, False),
    "no full panel": ((1, 64, 16, 16), (48, 64, 1, 1), 1, 0, np.uint8, ZEN4, False),
    "fewer pixels than a block": ((1, 64, 2, 2), (64, 64, 1, 1), 1, 0, np.uint8, ZEN4, False),
    "i32 output": ((1, 64, 16, 16), (64, 64, 1, 1), 1, 0, np.int32, ZEN4, False),
    "AVX-512 without VNNI": ((1, 64, 16, 16), (64, 64, 1, 1), 1, 0, np.uint8,
                             dataclasses.replace(AVX512, cpu="znver4"), False),
    "not measured on Intel": ((1, 64, 16, 16), (64, 64, 1, 1), 1, 0, np.uint8,
                              SAPPHIRE_RAPIDS, False),
}


@pytest.mark.parametrize("name", sorted(DECISIONS))
def test_which_convs_pipeline(name):
    x_shape, w_shape, stride, pad, out_dtype, target, want = DECISIONS[name]
    *_, op = _conv(x_shape, w_shape, stride, pad, out_dtype)
    assert pipelines_epilogue(op, target) == want


def test_rows_spread_over_the_k_loop():
    """K = 64 channels (16 words) on 6-row tiles: a row per two steps, all six in the loop;
    K = 8 (2 words): a row per step, four rows left for after the loop; 7-row tiles over
    K = 2048 (512 words): a row per 73 steps."""
    assert drain_spread(16, 6) == (2, 6)
    assert drain_spread(2, 6) == (1, 2)
    assert drain_spread(512, 7) == (73, 7)


CASES = {
    # name: x shape (NCHW), w shape, stride: the tiles, K words, and what they exercise
    "k2_rows_after_loop": ((1, 8, 16, 16), (64, 8, 1, 1), 1),  # 6x64, 2 words
    "k16_two_steps_a_row": ((1, 64, 16, 16), (128, 64, 1, 1), 1),  # 6x64, 16 words
    "k25_tail_panel": ((1, 100, 12, 11), (208, 100, 1, 1), 1),  # 6x64, 3 panels + 16
    "shifted_last_block": ((2, 64, 10, 11), (64, 64, 1, 1), 1),  # 220 px: last block shifted
    "strided": ((1, 32, 30, 30), (128, 32, 1, 1), 2),  # 225 px
    "small_map_7x48": ((1, 256, 7, 7), (192, 256, 1, 1), 1),  # 7x48, 64 words, 4 panels
    "small_map_tail": ((1, 64, 14, 14), (112, 64, 1, 1), 1),  # 7x48, 2 panels + 16
}


@pytest.mark.skipif(not HOST_VNNI, reason="the pipelined epilogue needs AVX512-VNNI")
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", sorted(CASES))
def test_pipelined_convs_exact(name, threads, monkeypatch, host_pipelines):
    x_shape, w_shape, stride = CASES[name]
    module, x, expected, op = _conv(x_shape, w_shape, stride)
    assert pipelines_epilogue(op, host_target())
    plain_module = module.clone()
    with graph_compiler() as compile_module:
        _assert_matches(compile_module(module, threads=threads)(x)[0], expected)
        monkeypatch.setattr(int8_epilogue, "pipelines_epilogue", lambda op, target: False)
        _assert_matches(compile_module(plain_module, threads=threads)(x)[0], expected)


RESIDUAL_CASES = [
    # cout, size, batch: 6x64 tiles with a short K loop (8 channels), 7x48 tiles
    (128, 12, 2),
    (96, 7, 1),
]


@pytest.mark.skipif(not HOST_VNNI, reason="the pipelined epilogue needs AVX512-VNNI")
@pytest.mark.parametrize("cout,size,batch", RESIDUAL_CASES)
def test_pipelined_residual_sums(cout, size, batch, tmp_path, monkeypatch, host_pipelines):
    """qlinear_conv_add through the pipelined epilogue: the evaluator's bits, cold and
    warm, and the unpipelined kernel's."""
    model = residual_model(cout, 1, "Relu", "Add", True, False, batch=batch, size=size)
    feeds = _feeds(model, seed=cout)
    (expected,) = MemoEvaluator([feeds["x"], feeds["skip"]]).run(
        onnxc.optimize(model, opt_level=3))
    cold = onnxc.compile(model, cache_dir=tmp_path, num_threads=2)
    warm = onnxc.compile(model, cache_dir=tmp_path, num_threads=2)
    assert not cold.from_cache and warm.from_cache
    for compiled in (cold, warm):
        np.testing.assert_array_equal(compiled.run(None, feeds)[0], expected)
    monkeypatch.setattr(int8_epilogue, "pipelines_epilogue", lambda op, target: False)
    plain = onnxc.compile(model, cache_dir=False, num_threads=2)
    np.testing.assert_array_equal(plain.run(None, feeds)[0], expected)
