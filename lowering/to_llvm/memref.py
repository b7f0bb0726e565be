"""convert-memref-to-llvm: static-shape memrefs as bare pointers.

A memref is carried as `!llvm.ptr` to its base element; its type fixes the strides and the
offset, so an access is one GEP on the linearised index (all strides static):

    %v = memref.load %m[%i, %j] : memref<4x8xf32>
 -> %t = llvm.mul %i, 8 overflow<nsw>; %k = llvm.add %t, %j overflow<nsw>
    %p = llvm.getelementptr inbounds %m[%k] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %v = llvm.load %p {alignment = 4 : i64} : !llvm.ptr -> f32

`view` is a byte GEP into its i8 buffer; `cast`, `reinterpret_cast`, `subview`,
`expand_shape` and `collapse_shape` keep the base pointer (the new offset and strides live in
the result type, as in MLIR, where they also keep the base pointer). `alloca` becomes an
`llvm.alloca`; heap allocation and globals have no lowering here: `plan-memory` and
`bind-constants` remove them from the loops-level module first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import llvm, memref
from xdsl.dialects.builtin import (
    FixedBitwidthType,
    IntegerType,
    MemRefType,
    NoneAttr,
    i8,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from onnxc.errors import LoweringError
from onnxc.lowering.to_llvm.type_conversion import (
    ConversionPass,
    constant,
    convert_type,
    converted,
    replace_converted,
)

_NSW = 1


def static_layout(t: Attribute, op: Operation) -> tuple[Sequence[int], int]:
    """Static strides and offset of a memref type, or a LoweringError naming `op`."""
    if not isinstance(t, MemRefType):
        raise LoweringError(f"'{op.name}': expected a ranked memref, got {t}")
    strides = t.get_strides()
    offset = t.get_offset()
    shape = t.get_shape()
    flat_dynamic = len(shape) == 1 and shape[0] < 0 and isinstance(t.layout, NoneAttr)
    if (
        strides is None
        or offset is None
        or any(s is None for s in strides)
        or (any(d < 0 for d in shape) and not flat_dynamic)
    ):
        raise LoweringError(f"'{op.name}': only static shapes and layouts, and flat "
                            f"memref<?x..> buffers, are supported ({t})")
    return [s for s in strides if s is not None], offset


def element_bytes(t: MemRefType) -> int:
    element = convert_type(t.get_element_type())
    if isinstance(element, FixedBitwidthType):
        return max(1, element.size)
    return 1


def element_pointer(
    op: Operation, base: SSAValue, indices: Sequence[SSAValue], memref_type: Attribute
) -> tuple[list[Operation], SSAValue]:
    """Ops computing the address of `memref_type` element `indices` from its base pointer."""
    strides, offset = static_layout(memref_type, op)
    assert isinstance(memref_type, MemRefType)
    ops: list[Operation] = []
    linear: SSAValue | None = None
    for index, stride in zip(indices, strides, strict=True):
        term = index
        if stride != 1:
            scale = constant(stride)
            mul = llvm.MulOp(index, scale.result, overflow=llvm.OverflowAttr.from_int(_NSW))
            ops += [scale, mul]
            term = mul.res
        if linear is None:
            linear = term
        else:
            add = llvm.AddOp(linear, term, overflow=llvm.OverflowAttr.from_int(_NSW))
            ops.append(add)
            linear = add.res
    if offset:
        shift = constant(offset)
        ops.append(shift)
        if linear is None:
            linear = shift.result
        else:
            add = llvm.AddOp(linear, shift.result, overflow=llvm.OverflowAttr.from_int(_NSW))
            ops.append(add)
            linear = add.res
    if linear is None:
        return ops, base
    element = convert_type(memref_type.get_element_type())
    gep = llvm.GEPOp.from_mixed_indices(base, [linear], element, inbounds=True)
    ops.append(gep)
    return ops, gep.result


def _sub_byte(t: Attribute) -> bool:
    """i1 (bool), i2, i4 elements take a byte each; they are loaded and stored as that byte
    (zero-extended), which keeps the high bits defined and lets loops of them vectorize
    (LLVM packs a <N x i1> store into bits, so it leaves an i1 store loop scalar)."""
    return isinstance(t, IntegerType) and t.width.data < 8


class LowerLoad(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.LoadOp, rewriter: PatternRewriter, /):
        base, *indices = converted(rewriter, op, [op.memref, *op.indices])
        ops, pointer = element_pointer(op, base, indices, op.memref.type)
        assert isinstance(op.memref.type, MemRefType)
        result_type = convert_type(op.res.type)
        if _sub_byte(result_type):
            byte = llvm.LoadOp(pointer, i8, alignment=1)
            trunc = llvm.TruncOp(byte.dereferenced_value, result_type)
            replace_converted(rewriter, op, [*ops, byte, trunc])
            return
        load = llvm.LoadOp(pointer, result_type, alignment=element_bytes(op.memref.type))
        replace_converted(rewriter, op, [*ops, load])


class LowerStore(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.StoreOp, rewriter: PatternRewriter, /):
        value, base, *indices = converted(rewriter, op, [op.value, op.memref, *op.indices])
        ops, pointer = element_pointer(op, base, indices, op.memref.type)
        assert isinstance(op.memref.type, MemRefType)
        if _sub_byte(value.type):
            byte = llvm.ZExtOp(value, i8)
            ops += [byte, llvm.StoreOp(byte.res, pointer, alignment=1)]
            replace_converted(rewriter, op, ops)
            return
        store = llvm.StoreOp(value, pointer, alignment=element_bytes(op.memref.type))
        replace_converted(rewriter, op, [*ops, store])


class LowerView(RewritePattern):
    """`memref.view %buf[%shift][%sizes]`: the pointer `%shift` bytes into the i8 buffer
    (the run-time size of a flat `memref<?x..>` view is not part of a bare pointer)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.ViewOp, rewriter: PatternRewriter, /):
        static_layout(op.result.type, op)
        base, shift = converted(rewriter, op, [op.source, op.byte_shift])
        gep = llvm.GEPOp.from_mixed_indices(base, [shift], i8, inbounds=True)
        replace_converted(rewriter, op, [gep])


class LowerSameBaseView(RewritePattern):
    """Views whose result shares the source's base pointer (layout only in the type)."""

    def op_types(self) -> tuple[type[Operation], ...]:
        return (memref.CastOp, memref.ReinterpretCastOp, memref.SubviewOp,
                memref.ExpandShapeOp, memref.CollapseShapeOp)

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(
            op,
            memref.CastOp
            | memref.ReinterpretCastOp
            | memref.SubviewOp
            | memref.ExpandShapeOp
            | memref.CollapseShapeOp,
        ):
            return
        if isinstance(op, memref.ReinterpretCastOp):
            # run-time sizes are fine (a bare pointer has none); offset and strides are not
            if op.offsets or op.strides:
                raise LoweringError(f"'{op.name}' with dynamic offsets or strides")
        elif len(op.operands) != 1:
            raise LoweringError(f"'{op.name}' with dynamic offsets, sizes or strides")
        static_layout(op.results[0].type, op)
        (base,) = converted(rewriter, op, op.operands[:1])
        replace_converted(rewriter, op, [], [base])


class LowerAlloca(RewritePattern):
    """Static `memref.alloca` as an `llvm.alloca` of its element count, 64-byte aligned."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.AllocaOp, rewriter: PatternRewriter, /):
        t = op.memref.type
        static_layout(t, op)
        assert isinstance(t, MemRefType)
        if t.get_offset() != 0 or op.dynamic_sizes or op.symbol_operands:
            raise LoweringError(f"memref.alloca of {t} is not supported")
        count = constant(t.element_count())
        alloca = llvm.AllocaOp(count.result, convert_type(t.get_element_type()), alignment=64)
        replace_converted(rewriter, op, [count, alloca])


class RejectUnsupported(RewritePattern):
    """Heap memory and globals must be gone before this pass: say so instead of leaving them."""

    def op_types(self) -> tuple[type[Operation], ...]:
        return (memref.AllocOp, memref.DeallocOp, memref.GetGlobalOp, memref.GlobalOp)

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if isinstance(op, memref.AllocOp | memref.DeallocOp):
            raise LoweringError(
                f"'{op.name}' has no LLVM lowering: run plan-memory first, which turns "
                "every memref.alloc into a memref.view of the arena"
            )
        if isinstance(op, memref.GetGlobalOp | memref.GlobalOp):
            raise LoweringError(
                f"'{op.name}' has no LLVM lowering: run bind-constants first, which turns "
                "constants into arguments of @main"
            )


MEMREF_TO_LLVM_PATTERNS: tuple[RewritePattern, ...] = (
    LowerLoad(),
    LowerStore(),
    LowerView(),
    LowerSameBaseView(),
    LowerAlloca(),
    RejectUnsupported(),
)


@dataclass(frozen=True)
class ConvertMemRefToLLVMPass(ConversionPass):
    """Lower memref accesses and views on static memrefs to pointer arithmetic."""

    name = "convert-memref-to-llvm"
    patterns = MEMREF_TO_LLVM_PATTERNS
