"""convert-vector-to-llvm: the 1-D `vector` ops the GEMM micro-kernel uses, to `llvm`.

    %v = vector.load %m[%i, %j] : memref<4x32xf32>, vector<16xf32>
 -> %p = llvm.getelementptr inbounds %m[%k] ... f32
    %q = llvm.getelementptr inbounds %p[0] ... vector<16xf32>   (typed-pointer translation)
    %v = llvm.load %q {alignment = 4} : !llvm.ptr -> vector<16xf32>
    %b = vector.broadcast %s : f32 to vector<16xf32>
 -> llvm.insertelement into undef at 0, then llvm.shufflevector with an all-zero mask
    %r = vector.fma %a, %b, %c : vector<16xf32>  ->  llvm.intr.fma (llvm.fma.v16f32)

Loads and stores declare element alignment only: buffers from numpy or the arena are not
promised to be vector-aligned, and unaligned vector moves cost nothing on current cores.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import llvm, vector
from xdsl.dialects.builtin import DenseArrayBase, MemRefType, VectorType, i32
from xdsl.ir import SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from onnxc.errors import LoweringError
from onnxc.lowering.to_llvm.memref import element_bytes, element_pointer
from onnxc.lowering.to_llvm.type_conversion import (
    ConversionPass,
    constant,
    convert_type,
    converted,
    replace_converted,
)


def _check_1d(t, op) -> VectorType:
    if not isinstance(t, VectorType) or len(t.get_shape()) != 1:
        raise LoweringError(f"'{op.name}': only 1-D vectors are supported, got {t}")
    return t


def _vector_pointer(op, base, indices, memref_type, vtype) -> tuple[list, SSAValue]:
    """The element address as a pointer to the vector type: a zero GEP over the vector type,
    which the translation's typed pointers need (a no-op for LLVM's opaque pointers)."""
    ops, pointer = element_pointer(op, base, indices, memref_type)
    cast = llvm.GEPOp.from_mixed_indices(pointer, [0], vtype, inbounds=True)
    return [*ops, cast], cast.result


class LowerVectorLoad(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: vector.LoadOp, rewriter: PatternRewriter, /):
        _check_1d(op.result.type, op)
        base, *indices = converted(rewriter, op, [op.base, *op.indices])
        ops, pointer = _vector_pointer(op, base, indices, op.base.type, op.result.type)
        assert isinstance(op.base.type, MemRefType)
        load = llvm.LoadOp(
            pointer, convert_type(op.result.type), alignment=element_bytes(op.base.type)
        )
        replace_converted(rewriter, op, [*ops, load])


class LowerVectorStore(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: vector.StoreOp, rewriter: PatternRewriter, /):
        _check_1d(op.vector.type, op)
        value, base, *indices = converted(rewriter, op, [op.vector, op.base, *op.indices])
        ops, pointer = _vector_pointer(op, base, indices, op.base.type, op.vector.type)
        assert isinstance(op.base.type, MemRefType)
        store = llvm.StoreOp(value, pointer, alignment=element_bytes(op.base.type))
        replace_converted(rewriter, op, [*ops, store])


class LowerBroadcast(RewritePattern):
    """A scalar splat: insert into lane 0 of undef, then shuffle lane 0 everywhere."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: vector.BroadcastOp, rewriter: PatternRewriter, /):
        t = _check_1d(op.vector.type, op)
        if isinstance(op.source.type, VectorType):
            raise LoweringError(f"'{op.name}': only scalar sources are supported")
        (source,) = converted(rewriter, op, [op.source])
        vtype = convert_type(t)
        undef = llvm.UndefOp(vtype)
        zero = constant(0, i32)
        insert = llvm.InsertElementOp(undef.res, source, zero.result)
        mask = DenseArrayBase.from_list(i32, [0] * t.get_shape()[0])
        splat = llvm.ShuffleVectorOp(insert.res, undef.res, mask, vtype)
        replace_converted(rewriter, op, [undef, zero, insert, splat])


class LowerFma(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: vector.FMAOp, rewriter: PatternRewriter, /):
        _check_1d(op.res.type, op)
        a, b, c = converted(rewriter, op, [op.lhs, op.rhs, op.acc])
        replace_converted(rewriter, op, [llvm.FMAOp(a, b, c)])


VECTOR_TO_LLVM_PATTERNS: tuple[RewritePattern, ...] = (
    LowerVectorLoad(),
    LowerVectorStore(),
    LowerBroadcast(),
    LowerFma(),
)


@dataclass(frozen=True)
class ConvertVectorToLLVMPass(ConversionPass):
    """Lower 1-D vector loads, stores, broadcasts and FMAs to the `llvm` dialect."""

    name = "convert-vector-to-llvm"
    patterns = VECTOR_TO_LLVM_PATTERNS
