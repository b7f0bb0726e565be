"""The k-blocks of a packed GEMM kernel (gemm_microkernel.py) and of the implicit-GEMM conv
(conv_nhwc.py): which blocks of K there are, and which is first (its tile starts from zero)
and last (it applies the epilogue).

The blocks run as one loop over the whole row / panel / micro-kernel nest, the first and
last tested at run time outside the k loop (`block_sequence`): with a static first and last
block around a loop of the middle ones, every kernel over more than one k-block held two or
three copies of that nest (ResNet-50's loops: 9,911 ops, now 7,001; BERT's 2,904, now 1,500).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects import arith

from onnxc.lowering.graph_to_loops.branches import Condition
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder

Flag = Condition
"""Whether a k-block is the first (its tile starts from zero) or the last (it applies the
epilogue): static, or an `i1` when the blocks run in one loop (`block_sequence`)."""


@dataclass(frozen=True)
class KBlock:
    """One k-block of the product: depth `kc` from row `k0` of (packed) B; `extra` is what
    an A strategy needs to address it (the implicit-GEMM conv's tap and channel range)."""

    k0: Index
    kc: int
    first: Flag
    last: Flag
    extra: object = None


def block_sequence(kb: KernelBuilder, count: int, uniform: bool,
                   visit: Callable[[Index, Flag, Flag], None]) -> None:
    """`visit(b, first, last)` for the k-blocks b in [0, count), as one loop with run-time
    first and last flags; a last block of another depth (`uniform` false) keeps its own
    copy after the loop."""
    if count == 1:
        visit(0, True, True)
        return

    def flag(b: Index, at: int) -> Flag:
        if isinstance(b, int):
            return b == at
        return kb.insert(arith.CmpiOp(kb.idx(b), kb.idx(at), "eq"))

    looped = count if uniform else count - 1
    kb.for_(0, looped, lambda b: visit(b, flag(b, 0), flag(b, count - 1) if uniform else False))
    if not uniform:
        visit(count - 1, False, True)
