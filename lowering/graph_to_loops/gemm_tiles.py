"""The packed GEMM's register tile and B panels, for the target being compiled for.

An MR x NR tile of Y lives in MR * NR/VW vector accumulators (`Tiling`, from the target's
vector width and registers). B is packed into `[k-block][N-panel][kc][w]` panels (`pack`):
the packed offset of B[k0 + kk, j + c] in a k-block of depth kc is
`k0 * npad + kc * j + kk * w + c` (w = min(NR, npad - j), npad = N rounded up to VW); the
run-time scratch of gemm_microkernel.py holds one stripe, `kc * (j - j0) + kk * w + c`.
The packed GEMM (gemm_microkernel.py), the implicit-GEMM conv (conv_nhwc.py) and the bf16
pairs (gemm_bf16.py) share them.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from onnxc.dialects.dense_data import zeros
from onnxc.dialects.symbolic_dims import Dim
from onnxc.lowering.graph_to_loops.loops import Index
from onnxc.target import Target

KC = 1024
"""Default depth of a k-block: most products are one k-block deep (K <= 1024), so each tile
of Y is loaded and stored once per N-stripe instead of once per k-block, and the epilogue
follows the last multiply-add in registers. The MR x KC sliver of A (32 KiB) stays in L1,
the KC x NR panel of B streams from L2. Against 256 on Zen 4, one thread, bit-identical
outputs (the k order is the same): BERT's 128x768x3072 89.8 -> 94.5% of the FMA peak,
197x768x3072 85.8 -> 94.2%, 512^3 93.2 -> 94.9%; in-process, BERT-base -3.7% (with
SPLIT_A_BYTES' column split), ResNet-50 -2.4%, ConvNeXt-T, Swin-T, GoogLeNet, DenseNet-121
-2 to -3%, MobileNetV2 and EfficientNet-B0 level."""
NC = 512
"""Default width of an N-stripe of packed B."""
MIN_CHUNKS = 32
"""Parallel iterations a packed GEMM wants at least (when there are that many row blocks
or panels): the threads claim them one by one, so the one that finishes last is behind by
at most a small one, also when a VM's second core runs slower than the first. With 8, a
14 x 14 map's 33 row blocks were 9 chunks of 4 and ResNet-50's last stage 7 runs of 7
panels: at T=2 regnet_y_800mf 16.9 -> 15.9 ms and BERT-base 174 -> 165 ms (Zen 3, the two
builds alternating in one process); at T=1 the nets were level (a chunk's rows still read
each KC x NC block of B from the L2)."""

PanelVisit = Callable[[Index, int, bool], None]
"""Called with a panel's first column, its width and whether all its columns are in N (a
kernel's loop over panels calls it once per panel)."""

@dataclass(frozen=True)
class Tiling:
    vw: int
    """floats per vector register"""
    mr: int
    nr: int
    """multiple of vw"""
    kc: int = KC
    """depth of a k-block"""
    nc: int = NC
    """width of an N-stripe (a multiple of nr)"""


def parse_blocking(text: str) -> tuple[int, int] | None:
    """`KCxNC` (a target's `blocking`, `onnxc.compile(gemm_blocking=...)`) as (kc, nc);
    None for text of another form: kc 16 to 2048, nc a multiple of 64 (every target's NR
    divides it) up to 8192."""
    match = re.fullmatch(r"(\d{1,4})x(\d{1,4})", text.strip())
    if match is None:
        return None
    kc, nc = int(match[1]), int(match[2])
    return (kc, nc) if 16 <= kc <= 2048 and 64 <= nc <= 8192 and nc % 64 == 0 else None


@lru_cache
def tiling_for(target: Target) -> Tiling:
    """MR x NR for `target` (a kernel's: `KernelBuilder.target`). x86: NR = 2 vectors; MR
    rows as many as the register file holds with room for the two B vectors and A's
    broadcast, at most 8: 8x32 with AVX-512's 32 zmm (16 accumulate), 6x16 with AVX2's 16
    ymm. NEON: 4x16 (16 q accumulators, four B vectors per k). Its 32 q registers would hold
    8x8, 8x12 or 6x12 tiles too, but LLVM then reloads more around the inner loops of
    ResNet-50's convs (reloads per multiply-add, benchmarks/spills.py before it told loop
    exits from loop bodies: 8x8 0.35, 8x12 0.58, 6x12 0.33, 4x16 0.08; with 4x16 the inner
    loops have none), and qemu cannot time them."""
    vw = max(4, target.vector_bits // 32)
    kc, nc = (parse_blocking(target.blocking) if target.blocking else None) or (KC, NC)
    if target.arch == "aarch64":
        return Tiling(vw=vw, mr=4, nr=4 * vw, kc=kc, nc=nc)
    return Tiling(vw=vw, mr=min(8, (target.vector_registers - 4) // 2), nr=2 * vw, kc=kc,
                  nc=nc)


@dataclass(frozen=True)
class GemmShape:
    """Y[m, n] = act(alpha * op(A) @ op(B) + beta * C); n and k static, m static or
    symbolic (a `SymDim`: the packed kernel's row loops then run to run-time bounds)."""

    m: Dim
    n: int
    k: int
    trans_a: bool
    trans_b: bool
    alpha: float
    beta: float
    c_shape: tuple[Dim, ...] | None
    """None when there is no C term (absent or beta == 0)"""

    def npad(self, t: Tiling) -> int:
        return -(-self.n // t.vw) * t.vw


def pack(b: np.ndarray, g: GemmShape, t: Tiling, depths: Sequence[int] = (),
         out: np.ndarray | None = None) -> np.ndarray:
    """The K x N matrix `b` in panel order (see the module docstring), zero-padded; the
    k-blocks are t.kc deep unless `depths` lists them (the conv's tap-aligned blocks). `b` is
    (K, N), or (taps, C, N) with K = taps * C: a conv's weights seen through a transpose,
    never copied. Written into `out` (zeroed, K * npad long) when given.

    Each k-block's panels are one strided copy from `b` (its partial panels one more each):
    ResNet-50's weights were a transposed copy, a Python loop of 8,000 panel copies and
    then the attribute's bytes, 0.2-0.3 s of graph-to-loops."""
    npad = g.npad(t)
    rows = b if b.ndim == 3 else b[None]
    assert rows.shape[0] * rows.shape[1] == g.k and rows.shape[2] == g.n
    bounds = np.cumsum([0, *depths]) if depths else range(0, g.k + t.kc, t.kc)
    assert not depths or bounds[-1] == g.k
    # f32, or bf16 pairs (u32); in bytes that become the constant's (dense_data.zeros)
    packed = zeros(g.k * npad, b.dtype) if out is None else out
    assert packed.size == g.k * npad
    whole = min(npad, g.n) // t.nr  # panels whose columns all hold B's
    offset = 0
    for k0, k1 in itertools.pairwise(bounds):
        depth = max(0, min(k1, g.k) - k0)
        if depth == 0:
            continue
        src = _block_rows(rows, int(k0), depth)
        block = packed[offset : offset + depth * npad]
        lead = src.shape[:2]
        if whole:
            panels = src[:, :, : whole * t.nr].reshape(*lead, whole, t.nr)
            block[: whole * depth * t.nr].reshape(whole, *lead, t.nr)[...] = (
                panels.transpose(2, 0, 1, 3))
        for j in range(whole * t.nr, npad, t.nr):  # the zero-padded ones
            width = min(t.nr, npad - j)
            panel = block[depth * j : depth * (j + width)].reshape(*lead, width)
            if j < g.n:
                panel[:, :, : min(width, g.n - j)] = src[:, :, j : j + width]
        offset += depth * npad
    assert offset == packed.size
    return packed


def _block_rows(rows: np.ndarray, k0: int, depth: int) -> np.ndarray:
    """Rows k0 .. k0 + depth of the (taps, C, N) `rows` as a (taps', C', N) view: whole
    taps, or channels of one tap (the conv's blocks are either); else a copy."""
    per_tap = rows.shape[1]
    tap, channel = divmod(k0, per_tap)
    if channel == 0 and depth % per_tap == 0:
        return rows[tap : tap + depth // per_tap]
    if channel + depth <= per_tap:
        return rows[tap : tap + 1, channel : channel + depth]
    return rows.reshape(-1, rows.shape[2])[k0 : k0 + depth][None]
