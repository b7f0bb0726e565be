"""The lowering rule of every graph op: op class -> builder of its kernel's body.

A builder is called as `build(op, kb, ins, outs)` with the kernel's memref arguments split
into operands and results; it may only read `op`'s types and properties (its operands are
in another function), so one kernel serves every op with the same key.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.ir import Operation, SSAValue

from onnxc.errors import LoweringError
from onnxc.lowering.graph_to_loops import (
    conv,
    data_movement,
    elementwise,
    linalg,
    normalization,
    pool,
)
from onnxc.lowering.graph_to_loops.loops import KernelBuilder

KernelFn = Callable[[Operation, KernelBuilder, Sequence[SSAValue], Sequence[SSAValue]], None]

KERNELS: dict[type[Operation], KernelFn] = {
    **elementwise.KERNELS,
    **linalg.KERNELS,
    **conv.KERNELS,
    **pool.KERNELS,
    **normalization.KERNELS,
    **data_movement.KERNELS,
}


def kernel_for(op: Operation) -> KernelFn:
    """The builder for `op`'s kernel; LoweringError names the op when there is none."""
    try:
        return KERNELS[type(op)]
    except KeyError:
        raise LoweringError(f"convert-graph-to-loops: no lowering for op '{op.name}'") from None
