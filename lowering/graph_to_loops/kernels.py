"""The lowering rule of every graph op (each kernel module's RULES, rules.py), and the
tables derived from them: op class -> builder of its kernel's body, constants, scratch, key.

A builder is called as `build(op, kb, ins, outs)` with the kernel's memref arguments split
into operands and results; it may only read `op`'s types and properties (its operands are
in another function), so one kernel serves every op with the same key. A few kernels also
take constant tables computed from the op (`KERNEL_CONSTANTS`); they are passed after the
operands, as globals of the calling function (kernels themselves hold no data). The tables,
scratch and key are computed for the target the kernel is built for (rules.py).
"""

from __future__ import annotations

from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, MemRefType
from xdsl.ir import Operation

from onnxc.errors import LoweringError
from onnxc.lowering.graph_to_loops import (
    attention,
    checks,
    composite,
    conv,
    conv_transpose,
    data_movement,
    deform,
    depthwise_fused,
    dynamic,
    dynamic_quantize,
    elementwise,
    elementwise_logic,
    elementwise_unary,
    fused,
    gemm,
    grid_sample,
    index,
    layout,
    linalg,
    normalization,
    pool,
    qlinear_dispatch,
    quantize,
    random,
    reduce,
    resize,
    rnn,
    roi_align,
    scalar,
    strings,
    symbolic_data,
    tensor_ops,
    tree_ensemble,
    unpool,
    weight_quant_gemm,
)
from onnxc.lowering.graph_to_loops.buffer_types import RunTimeScratch
from onnxc.lowering.graph_to_loops.rules import ConstantsFn, KernelFn, KernelRule, KeyFn, ScratchFn
from onnxc.target import Target

_MODULES = (
    attention, checks, composite, conv, conv_transpose, data_movement, deform, depthwise_fused,
    dynamic,
    dynamic_quantize, elementwise, elementwise_logic, elementwise_unary, fused, grid_sample,
    index, layout, gemm, linalg, normalization, pool, qlinear_dispatch, quantize, random,
    reduce, resize, rnn, roi_align, scalar, strings, symbolic_data, tensor_ops, tree_ensemble, unpool,
    weight_quant_gemm,
)


def _collect(modules) -> dict[type[Operation], KernelRule]:
    """Every module's RULES by op class; two rules for one op fail the import."""
    found: dict[type[Operation], KernelRule] = {}
    for module in modules:
        for rule in module.RULES:
            if rule.op in found:
                raise ImportError(f"two kernel rules for '{rule.op.name}' ({module.__name__} "
                                  f"and {found[rule.op].build.__module__})")
            found[rule.op] = rule
    return found


RULES: dict[type[Operation], KernelRule] = _collect(_MODULES)
"""Graph op class -> its lowering rule (rules.py): the one record the tables below are
derived from."""

KERNELS: dict[type[Operation], KernelFn] = {op: r.build for op, r in RULES.items()}

KERNEL_CONSTANTS: dict[type[Operation], ConstantsFn] = {
    op: r.constants for op, r in RULES.items() if r.constants is not None}

KERNEL_SCRATCH: dict[type[Operation], ScratchFn] = {
    op: r.scratch for op, r in RULES.items() if r.scratch is not None}
"""Scratch buffers a kernel takes after its constants: the caller allocates them (in the
arena, through plan-memory), since kernels cannot allocate."""

KERNEL_KEYS: dict[type[Operation], KeyFn] = {
    op: r.key for op, r in RULES.items() if r.key is not None}
"""What a kernel's code depends on besides its argument types, where that is not all the
op's properties: less (values it reads from its constant tables: ops that differ only in
those share one kernel) or more (a fused op's body, a region)."""

SYMBOLIC_KERNELS: set[type[Operation]] = {op for op, r in RULES.items() if r.symbolic}
"""Ops whose kernels take symbolic dimensions: they read every size through
`KernelBuilder.shape` / `dim` (run-time values), never from the memref types. Any other op
with a symbolic dimension is a LoweringError naming it."""

EARLY_KERNELS: frozenset[str] = frozenset(op.name for op, r in RULES.items() if r.early)
"""Kernel kinds (`onnxc.kernel`, the op name) the early-kernel lanes compile
(early_kernels.py)."""

UNREDUCED_KERNELS: frozenset[str] = frozenset(
    op.name for op, r in RULES.items() if not r.strength_reduction)
"""Kernel kinds whose LLVM chunks skip loop strength reduction (direct.py)."""

BF16_KERNELS: tuple[type[Operation], ...] = tuple(op for op, r in RULES.items() if r.bf16)
"""Ops whose kernels have a bf16 form (lowering/compute_precision.py marks them)."""

STRIDED_OPERANDS: dict[type[Operation], frozenset[int]] = {
    op: frozenset(r.strided_operands) for op, r in RULES.items() if r.strided_operands}
"""Operands (by position) a kernel reads through any static strided layout."""

_WEIGHTS: dict[str, int] = {op.name: r.weight for op, r in RULES.items()}


def forecast_weight(op_name: str) -> int:
    """Loops ops of the kernel of op `op_name` against an ordinary kernel's (1 for an op
    without a rule), for the compile's forecast (onnxc.pipeline KernelForecast)."""
    return _WEIGHTS.get(op_name, 1)


def kernel_key(op: Operation, target: Target) -> tuple | None:
    """`op`'s properties part of its kernel key for `target`, None for the default (all
    properties)."""
    rule = KERNEL_KEYS.get(type(op))
    return rule(op, target) if rule is not None else None


def kernel_scratch(op: Operation, target: Target) -> list[MemRefType | RunTimeScratch]:
    """The types of the scratch buffers `op`'s kernel for `target` takes last among its
    inputs."""
    rule = KERNEL_SCRATCH.get(type(op))
    return rule(op, target) if rule is not None else []


def kernel_constants(op: Operation, target: Target) -> list[DenseIntOrFPElementsAttr]:
    """The constant tables `op`'s kernel for `target` takes after its operands (usually
    none)."""
    rule = KERNEL_CONSTANTS.get(type(op))
    return rule(op, target) if rule is not None else []


def reads_strided(op: Operation, index: int) -> bool:
    """Whether `op`'s kernel takes operand `index` as a strided view (KernelRule)."""
    return index in STRIDED_OPERANDS.get(type(op), ())


def kernel_for(op: Operation) -> KernelFn:
    """The builder for `op`'s kernel; LoweringError names the op when there is none."""
    try:
        return KERNELS[type(op)]
    except KeyError:
        raise LoweringError(f"convert-graph-to-loops: no lowering for op '{op.name}'") from None
