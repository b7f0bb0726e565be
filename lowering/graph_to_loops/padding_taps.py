"""Taps that read only padding, skipped per row block of an implicit-GEMM conv.

A conv over a bordered copy of its input multiplies every tap for every output pixel, and
at the top and bottom output rows a whole kernel row reads the border. For a 3x3 conv with
pads 1 on a 7x7 map that is 2 of 21 kernel rows' work (9.5%), on 14x14 4.8%. A block of MR
consecutive output pixels (one row, or part of one, on the small maps) that lies in such an
output row can leave those kernel rows out: the taps it runs are `live_kernel_rows`, a
range [lo, hi) computed from its first and last pixel's output row.

A skipped tap read the padding value, so the block's sums miss what it would have added:
in the int8 kernel (A holding raw bytes, `corr` folding the zero point) that is
(pad - offset) * the weights' column sums over the skipped kernel rows, added back from a
prefix-sum table (`skipped_row_sums`).

Kernel columns differ per pixel of a block: only the first pixel of an output row reads the
left border through kernel column 0 (pads 1), only the last the right one. Where a block is
a whole output row (7x7 maps in 7-pixel blocks), each run of kernel columns multiplies only
the rows that read real input through it (`dead_columns`): 2 of 21 tap-pixels of a 7x7
3x3 conv more. Nothing is put back for those, so they are skipped only where the padding's
products are zero (a Relu's zero point 0). Blocks that are parts of rows (14x14 maps) would
need a branch per column run on where the block lies: QDQ ResNet-50's 14x14 3x3 convs ran 2%
faster so, but its compile took 0.7 s longer.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import arith

from onnxc.lowering.graph_to_loops.conv_nhwc import ConvGeometry
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder


def _live_range(g: ConvGeometry, oh: int) -> tuple[int, int]:
    """Kernel rows [lo, hi) that output row `oh` reads real input through."""
    taps = [kh for kh in range(g.kh) if 0 <= oh * g.sh - g.pt + kh * g.dh < g.h]
    return (taps[0], taps[-1] + 1) if taps else (g.kh, g.kh)


def skips_rows(g: ConvGeometry) -> bool:
    """Whether some output row of a static conv has a kernel row on the padding only."""
    if not all(isinstance(v, int) for v in (g.n, g.h, g.w, g.oh, g.ow)) or g.kh == 1:
        return False
    return any(_live_range(g, oh) != (0, g.kh) for oh in range(int(g.oh)))


def live_kernel_rows(kb: KernelBuilder, g: ConvGeometry, first: Index,
                     pixels: int) -> tuple[Index, Index]:
    """Kernel rows [lo, hi) that some pixel of first .. first + pixels - 1 (flattened
    (n, oh, ow)) reads real input through; every row for a block across two images."""
    rows = [kb.idiv(kb.iadd(first, p), g.ow) for p in (0, pixels - 1)]
    images = [kb.idiv(r, g.oh) if g.n != 1 else 0 for r in rows]
    oh_a, oh_b = (kb.isub(r, kb.imul(n, g.oh)) for r, n in zip(rows, images))
    # lo = ceil((pt - oh_b sh) / dh) and hi = floor((h - 1 + pt - oh_a sh) / dh) + 1, in
    # [0, kh], on non-negative numerators (idiv's)
    top = kb.imax(kb.isub(g.pt + g.dh - 1, kb.imul(oh_b, g.sh)), g.dh - 1)
    lo = kb.imin(kb.idiv(top, g.dh), g.kh)
    bottom = kb.imax(kb.isub(g.h - 1 + g.pt + g.dh, kb.imul(oh_a, g.sh)), 0)
    hi = kb.imax(kb.imin(kb.idiv(bottom, g.dh), g.kh), lo)
    if g.n == 1:
        return lo, hi
    wraps = kb.insert(arith.CmpiOp(kb.idx(images[0]), kb.idx(images[1]), "ne"))
    return (kb.select(wraps, kb.idx(0), kb.idx(lo)),
            kb.select(wraps, kb.idx(g.kh), kb.idx(hi)))


def skipped_row_sums(weights: np.ndarray, kh: int, pad: int) -> np.ndarray:
    """[kh + 1, columns] int64: row i is `pad` times the column sums of `weights` ([K,
    columns], K ordered (kh, kw, c)) over kernel rows 0 .. i - 1. A block running rows [lo,
    hi) misses P[lo] + P[kh] - P[hi]."""
    per_row = weights.reshape(kh, -1, weights.shape[-1]).sum(axis=1, dtype=np.int64)
    prefix = np.zeros((kh + 1, weights.shape[-1]), np.int64)
    prefix[1:] = np.cumsum(per_row, axis=0)
    return pad * prefix


def dead_columns(g: ConvGeometry, mr: int) -> list[tuple[int, int, int, int]] | None:
    """Runs of kernel columns [k0, k1) with the rows [a, b) of an `mr`-pixel block that
    read real input through them, for blocks that are whole output rows (OW == MR); None
    for other blocks or when every column reads real input for every row."""
    if g.ow != mr:
        return None
    spans: list[tuple[int, int, int, int]] = []
    for kw in range(g.kw):
        live = [r for r in range(mr) if 0 <= r * g.sw - g.pl + kw * g.dw < g.w]
        a, b = (live[0], live[-1] + 1) if live else (0, 0)
        if spans and spans[-1][2:] == (a, b):
            spans[-1] = (spans[-1][0], kw + 1, a, b)
        else:
            spans.append((kw, kw + 1, a, b))
    return spans if any(span[2:] != (0, mr) for span in spans) else None
