"""The one type conversion every loops->LLVM pass shares, the casts that bridge it, and the
pass they all are (`ConversionPass`).

`index` becomes `i64` and every `memref` becomes a bare `!llvm.ptr` to its base element (the
element at linear offset 0 of its layout, so a static layout offset is added at each access).
A pass that converts an op asks for its operands in the converted types and hands its results
back in the original types; where the two differ a `builtin.unrealized_conversion_cast` bridges
them, so each pass runs alone and the casts cancel out in `reconcile-unrealized-casts`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    Signedness,
    UnrealizedConversionCastOp,
    VectorType,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern
from xdsl.rewriter import InsertPoint

from onnxc.dialects.dense_data import STORAGE_FLOAT_TYPES
from onnxc.dialects.graph_strings import StringType
from onnxc.errors import LoweringError
from onnxc.pass_manager.pattern_dispatch import OpTypeDispatchApplier


def convert_type(t: Attribute) -> Attribute:
    """The LLVM-dialect type a loops-level value of type `t` is carried in."""
    if isinstance(t, IndexType):
        return i64
    if isinstance(t, MemRefType):
        return llvm.LLVMPointerType()
    if isinstance(t, VectorType) and isinstance(t.element_type, IndexType):
        return VectorType(i64, t.get_shape())
    if isinstance(t, VectorType) and isinstance(t.element_type, IntegerType) and (
            t.element_type.signedness.data != Signedness.SIGNLESS):
        return VectorType(IntegerType(t.element_type.width.data), t.get_shape())  # ui8 lanes
    if isinstance(t, IntegerType) and t.signedness.data != Signedness.SIGNLESS:
        return IntegerType(t.width.data)  # LLVM integers carry no sign: ui8 is i8
    if isinstance(t, STORAGE_FLOAT_TYPES):
        return IntegerType(t.bitwidth)  # kernels only move these and convert their bits
    if isinstance(t, StringType):
        return IntegerType(t.bitwidth)  # a {ptr, len} pair moves as one i128
    return t


def converted(
    rewriter: PatternRewriter, op: Operation, values: Sequence[SSAValue]
) -> list[SSAValue]:
    """`values` in their converted types, casting before `op` where needed.

    A value that is itself a cast from the converted type is looked through instead of being
    cast back, which keeps the IR between passes free of cast chains.
    """
    result: list[SSAValue] = []
    done: dict[SSAValue, SSAValue] = {}
    for value in values:
        target = convert_type(value.type)
        if target == value.type:
            result.append(value)
            continue
        if value in done:
            result.append(done[value])
            continue
        owner = value.owner
        if (
            isinstance(owner, UnrealizedConversionCastOp)
            and len(owner.inputs) == 1
            and owner.inputs[0].type == target
        ):
            result.append(owner.inputs[0])
            continue
        cast, cast_result = UnrealizedConversionCastOp.cast_one(value, target)
        rewriter.insert(cast, InsertPoint.before(op))
        done[value] = cast_result
        result.append(cast_result)
    return result


def replace_converted(
    rewriter: PatternRewriter,
    op: Operation,
    new_ops: Sequence[Operation],
    new_results: Sequence[SSAValue] | None = None,
) -> None:
    """Replace `op` by `new_ops`, casting results back to the types `op`'s users expect."""
    if new_results is None:
        new_results = list(new_ops[-1].results) if new_ops else []
    ops = list(new_ops)
    results: list[SSAValue] = []
    for old, new in zip(op.results, new_results, strict=True):
        if old.type == new.type:
            results.append(new)
            continue
        cast, cast_result = UnrealizedConversionCastOp.cast_one(new, old.type)
        ops.append(cast)
        results.append(cast_result)
    rewriter.replace(op, ops, results)


def convert_block_arguments(rewriter: PatternRewriter, block: Block) -> None:
    """Give `block`'s arguments their converted types; old-typed uses see a cast back."""
    casts: list[Operation] = []
    for arg in block.args:
        target = convert_type(arg.type)
        if target == arg.type:
            continue
        old_type = arg.type
        new_arg = rewriter.replace_value_with_new_type(arg, target)
        if not new_arg.uses:
            continue
        cast, cast_result = UnrealizedConversionCastOp.cast_one(new_arg, old_type)
        rewriter.replace_uses_with_if(new_arg, cast_result, lambda use: use.operation is not cast)
        casts.append(cast)
    if casts:
        rewriter.insert(casts, InsertPoint.at_start(block))


def constant(value: int, type: IntegerType = i64) -> llvm.ConstantOp:
    """An `llvm.mlir.constant` integer of `type`."""
    return llvm.ConstantOp(IntegerAttr(value, type), type)


def mangle(t: Attribute) -> str:
    """The overload suffix LLVM expects on an intrinsic name (`f32`, `i64`, `v16f32`)."""
    if isinstance(t, VectorType):
        shape = t.get_shape()
        if len(shape) != 1:
            raise LoweringError(f"only 1-D vectors have an LLVM type, got {t}")
        return f"v{shape[0]}{mangle(t.element_type)}"
    if isinstance(t, IntegerType):
        return f"i{t.width.data}"
    if isinstance(t, Float16Type):
        return "f16"
    if isinstance(t, Float32Type):
        return "f32"
    if isinstance(t, Float64Type):
        return "f64"
    raise LoweringError(f"no LLVM intrinsic overload for type {t}")


def call_intrinsic(
    name: str, args: Sequence[SSAValue], result_type: Attribute
) -> llvm.CallIntrinsicOp:
    """`llvm.call_intrinsic` of `name` overloaded on `result_type` (e.g. `llvm.tanh.f32`)."""
    return llvm.CallIntrinsicOp(f"{name}.{mangle(result_type)}", args, [result_type])


def element_type(t: Attribute) -> Attribute:
    """The scalar type of a scalar or vector type."""
    return t.element_type if isinstance(t, VectorType) else t


def apply_conversion(module: ModuleOp, patterns: Sequence[RewritePattern]) -> None:
    """Apply one dialect's conversion patterns to the whole module, without DCE."""
    PatternRewriteWalker(
        OpTypeDispatchApplier(list(patterns), dce_enabled=False)
    ).rewrite_module(module)


@dataclass(frozen=True)
class ConversionPass(ModulePass):
    """A convert-*-to-llvm pass: its `patterns` applied to the whole module
    (`apply_conversion`)."""

    patterns: ClassVar[tuple[RewritePattern, ...]] = ()

    def rewrite_patterns(self) -> Sequence[RewritePattern]:
        """The patterns to apply; override when they depend on the pass's options."""
        return self.patterns

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        apply_conversion(op, self.rewrite_patterns())
