"""The int8 GEMM's parallel iterations: `grid_split`'s choice and the kernels that run it.

parallel_split.py simulates the pool's chunk claiming (the caller from the front, helpers
from the back) to size row chunks and panel groups; int8_gemm.py runs iteration it as row
chunk it // groups over panel group it % groups, the last group running the tail panels.
Every tile must be computed exactly once whatever the split: checked by exact int8 convs
whose splits have several groups with a tail, one group with a tail, only a tail, and one
row, at one and two threads.
"""

from __future__ import annotations

import numpy as np
import pytest

from onnxc.dialects.graph_qlinear import QLinearConvOp
from onnxc.lowering.graph_to_loops import int8_gemm, int8_layout
from onnxc.lowering.graph_to_loops.parallel_split import MIN_ITERATIONS, GridSplit, grid_split
from onnxc.target import host_target
from tests.unit.test_qlinear_kernels import (
    _assert_matches,
    conv_case,
    graph_compiler,
    random_bytes,
    random_weights,
)


def test_busy_of_hand_counted_regions():
    """Two equal iterations keep two threads busy throughout; three leave one idle for a
    third of the region (3 / (2 * 2)); a last row chunk of one block among chunks of two
    (5 row blocks, 3 chunks: work 2, 2, 1) finishes at 3 against 2.5 on average."""
    assert GridSplit(2, 1, 0.0, 1, 1).busy(2) == 1.0
    assert GridSplit(3, 1, 0.0, 1, 1).busy(2) == 0.75
    assert GridSplit(5, 1, 0.0, 2, 1).busy(2) == 5 / 6
    # the tail (half a panel) goes with the last group: iterations of work 2 and 1.5
    assert GridSplit(1, 3, 0.5, 1, 2).busy(2) == 3.5 / 4


RESNET50_GRIDS = {
    # name: row blocks, full panels, tail (a panel's fraction), the old split's busy fraction
    "28x28 c512 (6 x 64)": (131, 8, 0.0, 0.944),
    "14x14 c1024 (7 x 48)": (28, 21, 1 / 3, 0.930),
    "14x14 c256 (7 x 48)": (28, 5, 1 / 3, 0.922),
    "7x7 c2048 (7 x 48)": (7, 42, 2 / 3, 0.916),
    "56x56 c256 (6 x 64)": (523, 4, 0.0, 0.960),
}


@pytest.mark.parametrize("name", sorted(RESNET50_GRIDS))
def test_resnet50_grids_balance(name):
    """QDQ ResNet-50's grids: at least MIN_ITERATIONS trips, busier than the fixed rule
    they replaced (16-block chunks, ceil(16 / chunks) groups), and split by rows only
    where a row split balances (every map but 7x7)."""
    rows, panels, tail, old = RESNET50_GRIDS[name]
    split = grid_split(rows, panels, tail, int8_gemm.CHUNK_ROW_BLOCKS)
    assert split.trips >= MIN_ITERATIONS
    assert split.balance() >= 0.97 and split.balance() > old + 0.02
    assert (split.groups == 1) == (rows > 7)


@pytest.mark.parametrize("rows,panels,tail", [
    (1, 0, 0.5), (1, 20, 0.83), (3, 0, 0.33), (7, 10, 0.67), (14, 4, 0.0), (131, 2, 0.0),
    (2091, 1, 0.0), (17, 13, 0.25)])
def test_splits_cover_the_grid(rows, panels, tail):
    """Chunks and groups cover every row block and panel, none empty, chunks at most the
    cap."""
    s = grid_split(rows, panels, tail, 16)
    assert 1 <= s.per_chunk <= 16
    assert (s.chunks - 1) * s.per_chunk < rows <= s.chunks * s.per_chunk
    if panels:
        assert (s.groups - 1) * s.per_group < panels <= s.groups * s.per_group
    else:
        assert s.groups == 1
    assert 0 < s.balance() <= 1


# name: x shape (NCHW), w shape; each split noted for the VNNI tiles (7 x 48 on maps of at
# most 196 pixels, else 6 x 64) and the portable ones (4 x 16)
CASES = {
    "groups_and_tail": ((1, 16, 7, 7), (1040, 16, 1, 1)),  # vnni: 4 groups, 32-wide tail
    "rows_and_tail": ((1, 8, 14, 14), (80, 8, 3, 3)),  # vnni: 28 chunks, 1 group + tail
    "tail_only": ((2, 8, 5, 3), (24, 8, 1, 1)),  # vnni: no full panel
    "one_row": ((1, 64, 1, 1), (1000, 64, 1, 1)),  # a matmul row: groups only
    "six_row_blocks": ((1, 8, 30, 30), (272, 8, 1, 1)),  # vnni 6 x 64: 2 groups + 16
}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("form", ["host", "portable"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_split_kernels_exact(name, form, threads, monkeypatch):
    if form == "portable":
        monkeypatch.setattr(int8_layout, "target_int8_isa", lambda target: "portable")
    x_shape, w_shape = CASES[name]
    pad = w_shape[2] // 2
    x = random_bytes(np.uint8, x_shape)
    w = random_weights(np.int8, w_shape, "vnni")
    module, x, expected, _ = conv_case(x, w, ((1, 1), (pad,) * 4, (1, 1), 1), np.uint8, True,
                                       True, layout="NHWC")
    op = next(o for o in module.walk() if isinstance(o, QLinearConvOp))
    assert int8_gemm.applies(op, host_target())
    with graph_compiler() as compile_module:
        _assert_matches(compile_module(module, threads=threads)(x)[0], expected)
