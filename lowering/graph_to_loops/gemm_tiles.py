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
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from onnxc.dialects.symbolic_dims import Dim
from onnxc.runtime.target import Target, current_target

KC = 256
"""Depth of a k-block: MR rows of A and a KC x NR panel of B stay in L1."""
NC = 512
"""Width of an N-stripe: a KC x NC block of packed B (512 KiB) stays in the L2."""


@dataclass(frozen=True)
class Tiling:
    vw: int
    """floats per vector register"""
    mr: int
    nr: int
    """multiple of vw"""


def target_tiling() -> Tiling:
    """MR x NR for the target being compiled for (`current_target`)."""
    return tiling_for(current_target())


@lru_cache
def tiling_for(target: Target) -> Tiling:
    """x86: NR = 2 vectors; MR rows as many as the register file holds with room for the two
    B vectors and A's broadcast, at most 8: 8x32 with AVX-512's 32 zmm (16 accumulate), 6x16
    with AVX2's 16 ymm. NEON: 4x16 (16 q accumulators, four B vectors per k). Its 32 q
    registers would hold 8x8, 8x12 or 6x12 tiles too, but LLVM then reloads more around the
    inner loops of ResNet-50's convs (reloads per multiply-add, benchmarks/spills.py before
    it told loop exits from loop bodies: 8x8 0.35, 8x12 0.58, 6x12 0.33, 4x16 0.08; with
    4x16 the inner loops have none), and qemu cannot time them."""
    vw = max(4, target.vector_bits // 32)
    if target.arch == "aarch64":
        return Tiling(vw=vw, mr=4, nr=4 * vw)
    return Tiling(vw=vw, mr=min(8, (target.vector_registers - 4) // 2), nr=2 * vw)


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


def pack(b: np.ndarray, g: GemmShape, t: Tiling, depths: Sequence[int] = ()) -> np.ndarray:
    """The K x N matrix `b` in panel order (see the module docstring), zero-padded; the
    k-blocks are KC deep unless `depths` lists them (the conv's tap-aligned blocks).

    Written panel by panel into one zeroed array: no padded or concatenated copies, which
    for a large weight would each cost its size again at compile time."""
    npad = g.npad(t)
    bounds = np.cumsum([0, *depths]) if depths else range(0, g.k + KC, KC)
    assert not depths or bounds[-1] == g.k
    packed = np.zeros(g.k * npad, b.dtype)  # f32, or the bf16 pairs of gemm_bf16 (u32)
    offset = 0
    for k0, k1 in itertools.pairwise(bounds):
        depth = max(0, min(k1, g.k) - k0)
        for j in range(0, npad, t.nr):
            width = min(t.nr, npad - j)
            panel = packed[offset : offset + depth * width].reshape(depth, width)
            if j < g.n:
                panel[:, : min(width, g.n - j)] = b[k0 : k0 + depth, j : j + width]
            offset += depth * width
    assert offset == packed.size
    return packed
