"""The lowering rule of every graph op: op class -> builder of its kernel's body.

A builder is called as `build(op, kb, ins, outs)` with the kernel's memref arguments split
into operands and results; it may only read `op`'s types and properties (its operands are
in another function), so one kernel serves every op with the same key. A few kernels also
take constant tables computed from the op (`KERNEL_CONSTANTS`); they are passed after the
operands, as globals of the calling function (kernels themselves hold no data).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, MemRefType
from xdsl.ir import Operation, SSAValue

from onnxc.dialects import graph
from onnxc.errors import LoweringError
from onnxc.lowering.graph_to_loops import (
    attention,
    checks,
    composite,
    conv,
    conv_transpose,
    data_movement,
    deform,
    dynamic,
    dynamic_quantize,
    elementwise,
    elementwise_logic,
    elementwise_unary,
    fused,
    gemm_microkernel,
    grid_sample,
    index,
    layout,
    linalg,
    normalization,
    pool,
    qlinear_dispatch,
    quantize,
    reduce,
    resize,
    rnn,
    roi_align,
    scalar,
    symbolic_data,
    tensor_ops,
    unpool,
)
from onnxc.lowering.graph_to_loops.loops import KernelBuilder, RunTimeScratch

KernelFn = Callable[[Operation, KernelBuilder, Sequence[SSAValue], Sequence[SSAValue]], None]

KERNELS: dict[type[Operation], KernelFn] = {
    **elementwise.KERNELS,
    **elementwise_logic.KERNELS,
    **elementwise_unary.KERNELS,
    **linalg.KERNELS,
    **conv.KERNELS,
    **pool.KERNELS,
    **normalization.KERNELS,
    **data_movement.KERNELS,
    **reduce.KERNELS,
    **index.KERNELS,
    **fused.KERNELS,
    **attention.KERNELS,
    **composite.KERNELS,
    **layout.KERNELS,
    **quantize.KERNELS,
    **dynamic_quantize.KERNELS,
    **qlinear_dispatch.KERNELS,
    **scalar.KERNELS,
    **tensor_ops.KERNELS,
    **resize.KERNELS,
    **conv_transpose.KERNELS,
    **grid_sample.KERNELS,
    **roi_align.KERNELS,
    **unpool.KERNELS,
    **deform.KERNELS,
    **dynamic.KERNELS,
    **checks.KERNELS,
    **rnn.KERNELS,
    **symbolic_data.KERNELS,
}


KERNEL_CONSTANTS: dict[type[Operation], Callable[[Operation], list[DenseIntOrFPElementsAttr]]] = {
    graph.ConvOp: conv.conv_constants,
    graph.ConvAddOp: conv.conv_constants,
    graph.MatMulOp: gemm_microkernel.packed_b,
    graph.GemmOp: gemm_microkernel.packed_b,
    resize.ResizeOp: resize.resize_constants,
    **quantize.KERNEL_CONSTANTS,
    **qlinear_dispatch.KERNEL_CONSTANTS,
    **rnn.KERNEL_CONSTANTS,
}

KERNEL_SCRATCH: dict[type[Operation],
                     Callable[[Operation], list[MemRefType | RunTimeScratch]]] = {
    resize.ResizeOp: resize.resize_scratch,
    graph.NonMaxSuppressionOp: dynamic.nms_scratch,
    graph.ConvOp: conv.conv_scratch,
    graph.ConvAddOp: conv.conv_scratch,
    graph.MatMulOp: gemm_microkernel.scratch_b,
    graph.GemmOp: gemm_microkernel.scratch_b,
    **qlinear_dispatch.KERNEL_SCRATCH,
    **rnn.KERNEL_SCRATCH,
}
"""Scratch buffers a kernel takes after its constants: the caller allocates them (in the
arena, through plan-memory), since kernels cannot allocate."""

KERNEL_KEYS: dict[type[Operation], Callable[[Operation], tuple]] = {
    **composite.KERNEL_KEYS,
    **qlinear_dispatch.KERNEL_KEYS,
    **rnn.KERNEL_KEYS,
}
"""What a kernel's code depends on besides its argument types, where that is not all the
op's properties: less (values it reads from its constant tables: ops that differ only in
those share one kernel) or more (a fused op's body, a region)."""


_MODULES = (
    attention, checks, composite, conv, conv_transpose, data_movement, deform, dynamic,
    dynamic_quantize, elementwise, elementwise_logic, elementwise_unary, fused,
    gemm_microkernel, grid_sample, index, layout, linalg, normalization, pool,
    qlinear_dispatch, quantize, reduce, resize, rnn, roi_align, scalar, symbolic_data,
    tensor_ops, unpool,
)

SYMBOLIC_KERNELS: set[type[Operation]] = {
    cls for module in _MODULES for cls in getattr(module, "SYMBOLIC", ())
}
"""Ops whose kernels take symbolic dimensions: they read every size through
`KernelBuilder.shape` / `dim` (run-time values), never from the memref types. Any other op
with a symbolic dimension is a LoweringError naming it."""


def kernel_key(op: Operation) -> tuple | None:
    """`op`'s properties part of its kernel key, None for the default (all properties)."""
    rule = KERNEL_KEYS.get(type(op))
    return rule(op) if rule is not None else None


def kernel_scratch(op: Operation) -> list[MemRefType | RunTimeScratch]:
    """The types of the scratch buffers `op`'s kernel takes last among its inputs."""
    rule = KERNEL_SCRATCH.get(type(op))
    return rule(op) if rule is not None else []


def kernel_constants(op: Operation) -> list[DenseIntOrFPElementsAttr]:
    """The constant tables `op`'s kernel takes after its operands (usually none)."""
    rule = KERNEL_CONSTANTS.get(type(op))
    return rule(op) if rule is not None else []


def kernel_for(op: Operation) -> KernelFn:
    """The builder for `op`'s kernel; LoweringError names the op when there is none."""
    try:
        return KERNELS[type(op)]
    except KeyError:
        raise LoweringError(f"convert-graph-to-loops: no lowering for op '{op.name}'") from None
