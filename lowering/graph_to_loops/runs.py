"""Contiguous runs of f32 copied or zeroed with explicit vectors: padded conv inputs, and
concat / split rows.

Explicit vectors keep these small loops away from LLVM's loop vectorizer, which otherwise
vectorizes each one with a scalar remainder and run-time checks (densenet121's 58 concats
copy 535 blocks).
"""

from __future__ import annotations

from xdsl.dialects.builtin import VectorType, f32
from xdsl.ir import SSAValue

from onnxc.dialects.symbolic_dims import Dim
from onnxc.lowering.graph_to_loops.gemm_tiles import tiling_for
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder


def copy_run(kb: KernelBuilder, src: SSAValue, s0: Index, dst: SSAValue, d0: Index,
             length: Dim) -> None:
    """dst[d0 : d0 + length] = src[s0 : ...] on flat memrefs, vectorized (a symbolic length
    runs to its run-time value)."""
    vw = tiling_for(kb.target).vw
    vt = VectorType(f32, [vw])
    nvec = length // vw

    def vec(i: Index) -> None:
        off = kb.imul(i, vw)
        v = kb.vload(src, [kb.idx(kb.iadd(s0, off))], vt)
        kb.vstore(v, dst, [kb.idx(kb.iadd(d0, off))])

    kb.for_(0, nvec, vec)
    kb.for_(nvec * vw, length, lambda i: kb.store(
        kb.load(src, [kb.iadd(s0, i)]), dst, [kb.iadd(d0, i)]))


def zero_run(kb: KernelBuilder, dst: SSAValue, d0: Index, length: Dim) -> None:
    """dst[d0 : d0 + length] = 0 on a flat memref, vectorized."""
    vw = tiling_for(kb.target).vw
    zero = kb.constant(0.0, f32)
    nvec = length // vw
    if not (isinstance(nvec, int) and nvec == 0):
        zv = kb.vsplat(zero, VectorType(f32, [vw]))
        kb.for_(0, nvec, lambda i: kb.vstore(
            zv, dst, [kb.idx(kb.iadd(d0, kb.imul(i, vw)))]))
    kb.for_(nvec * vw, length, lambda i: kb.store(zero, dst, [kb.iadd(d0, i)]))


__all__ = ["copy_run", "zero_run"]
