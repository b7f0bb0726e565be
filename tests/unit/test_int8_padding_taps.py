"""The packed int8 conv's row blocks skip the kernel rows that read only the border.

padding_taps.py: a block of output pixels runs kernel rows [lo, hi) and the products it
leaves out (the border's value times the weights) are put back from a prefix-sum table. The
results must stay exactly the conv's: blocks that are whole output rows (7x7 maps, 7-pixel
blocks), parts of rows (14x14), blocks across two or more images of a batch, output rows
that read nothing but padding (pads past the kernel's reach), strides and dilations, for a
zero point of 0 (nothing to put back), another one, and s8 inputs (flipped to u8: the
border is the zero point + 128), in the VNNI and the portable multiply forms, at one and
two threads. Kernel columns are skipped per row of a block where blocks are whole output
rows and the padding's products are zero (zero point 0).
"""

from __future__ import annotations

import numpy as np
import pytest

from onnxc.dialects.graph_qlinear import QLinearConvOp
from onnxc.lowering.graph_to_loops import int8_gemm, int8_layout
from onnxc.lowering.graph_to_loops.padding_taps import _live_range, dead_columns, skips_rows
from onnxc.target import host_target
from tests.unit.test_qlinear_kernels import (
    _assert_matches,
    conv_case,
    graph_compiler,
    random_bytes,
    random_weights,
)

CASES = {
    # name: x shape (NCHW), w shape, strides, pads (top, left, bottom, right), dilations
    "rows_7x7": ((1, 32, 7, 7), (48, 32, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
    "half_rows_14x14": ((1, 16, 14, 14), (32, 16, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
    "across_images": ((3, 8, 2, 3), (16, 8, 3, 3), (1, 1), (2, 1, 2, 1), (1, 1)),
    "padding_only_rows": ((2, 8, 3, 5), (16, 8, 3, 3), (1, 1), (5, 1, 5, 1), (1, 1)),
    "strided_dilated": ((2, 12, 11, 10), (32, 12, 3, 3), (2, 1), (3, 0, 1, 2), (2, 1)),
    "six_row_blocks": ((1, 8, 30, 30), (16, 8, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
    "stem_7x7_stride2": ((1, 3, 23, 23), (64, 3, 7, 7), (2, 2), (3, 3, 3, 3), (1, 1)),
    # blocks that are whole output rows in a batch, a stride, pads of 2 on both sides
    "columns_batch": ((2, 8, 5, 7), (16, 8, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
    "columns_stride2": ((1, 16, 14, 14), (32, 16, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1)),
    "columns_wide_pads": ((1, 8, 7, 5), (16, 8, 3, 3), (1, 1), (1, 2, 1, 2), (1, 1)),
}

INPUTS = {  # x dtype, its zero point
    "u8_zp0": (np.uint8, 0),
    "u8_zp77": (np.uint8, 77),
    "s8_zp-9": (np.int8, -9),
}


def _case(name: str, inputs: str):
    x_shape, w_shape, strides, pads, dilations = CASES[name]
    dtype, zp = INPUTS[inputs]
    x = random_bytes(dtype, x_shape)
    w = random_weights(np.int8, w_shape, "vnni")
    return conv_case(x, w, (strides, pads, dilations, 1), np.uint8, True, True,
                     layout="NHWC", x_zp=zp)


def test_live_ranges():
    """Which output rows run fewer kernel rows: the first and last of a pad-1 3x3 conv, none
    without pads, rows reading only padding an empty range."""
    module, *_ = _case("padding_only_rows", "u8_zp0")
    g = int8_gemm.gemm_of(next(o for o in module.walk() if isinstance(o, QLinearConvOp)), 4)
    assert skips_rows(g)
    assert [_live_range(g, oh) for oh in range(g.oh)] == [
        (3, 3), (3, 3), (3, 3), (2, 3), (1, 3), (0, 3), (0, 2), (0, 1), (3, 3), (3, 3),
        (3, 3)]
    module, *_ = _case("rows_7x7", "u8_zp0")
    g = int8_gemm.gemm_of(next(o for o in module.walk() if isinstance(o, QLinearConvOp)), 4)
    assert [_live_range(g, oh) for oh in (0, 3, 6)] == [(1, 3), (0, 3), (0, 2)]


def test_dead_columns():
    """Column runs with the rows that read real input, for blocks that are whole output
    rows: a pad-1 3x3 conv's block skips its first row in column 0 and its last in column
    2; pads of 2 leave three different spans; blocks that are parts of rows none."""
    def of(name):
        module, *_ = _case(name, "u8_zp0")
        return int8_gemm.gemm_of(next(o for o in module.walk()
                                      if isinstance(o, QLinearConvOp)), 4)
    assert dead_columns(of("rows_7x7"), 7) == [(0, 1, 1, 7), (1, 2, 0, 7), (2, 3, 0, 6)]
    assert dead_columns(of("columns_wide_pads"), 7) == [(0, 1, 2, 7), (1, 2, 1, 6),
                                                         (2, 3, 0, 5)]
    assert dead_columns(of("columns_stride2"), 7) == [(0, 1, 1, 7), (1, 3, 0, 7)]
    assert dead_columns(of("half_rows_14x14"), 7) is None


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("form", ["host", "portable"])
@pytest.mark.parametrize("inputs", sorted(INPUTS))
@pytest.mark.parametrize("name", sorted(CASES))
def test_skipped_rows_exact(name, inputs, form, threads, monkeypatch):
    if form == "portable":
        monkeypatch.setattr(int8_layout, "target_int8_isa", lambda target: "portable")
    module, x, expected, _ = _case(name, inputs)
    op = next(o for o in module.walk() if isinstance(o, QLinearConvOp))
    target = host_target()
    assert int8_gemm.applies(op, target)
    dtype, zp = INPUTS[inputs]
    border = zp + 128 if dtype is np.int8 else zp
    offset = int8_gemm.tiling(op, target).a_offset
    assert int8_gemm.skipped_tap_value(op, target) == border - offset
    with graph_compiler() as compile_module:
        _assert_matches(compile_module(module, threads=threads)(x)[0], expected)
