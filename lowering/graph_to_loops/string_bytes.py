"""What string kernels do with a `!graph.string` element (dialects/graph_strings.py): split it
into its byte pointer and length, read its bytes, compare two of them.

A string element is an i128 in LLVM (`{ptr, len}`: the pointer in the low 64 bits). Its bytes
are read through a `memref<?xi8>` made from the pointer (`llvm.inttoptr` bridged to the
memref by a conversion cast, which the LLVM lowering cancels: a memref is a bare pointer
there). Kernels never read past `len`, and every length a kernel reads came from the runtime,
which built it from the caller's data (runtime/strings.py), or from a constant.
"""

from __future__ import annotations

from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    IndexType,
    IntegerType,
    MemRefType,
    UnrealizedConversionCastOp,
    i1,
    i8,
    i64,
)
from xdsl.ir import SSAValue

from onnxc.dialects.graph_strings import StringType
from onnxc.lowering.graph_to_loops.loops import KernelBuilder

I128 = IntegerType(128)
BYTES = MemRefType(i8, [DYNAMIC_INDEX])
"""a string's bytes, as kernels index them"""


def _cast(kb: KernelBuilder, value: SSAValue, to) -> SSAValue:
    return kb.insert(UnrealizedConversionCastOp.get([value], [to]))


def parts(kb: KernelBuilder, s: SSAValue) -> tuple[SSAValue, SSAValue]:
    """(pointer as i64, length as index) of string element `s`."""
    bits = _cast(kb, s, I128)
    ptr = kb.insert(arith.TruncIOp(bits, i64))
    high = kb.insert(arith.ShRUIOp(bits, kb.constant(64, I128)))
    length = kb.insert(arith.TruncIOp(high, i64))
    return ptr, kb.insert(arith.IndexCastOp(length, IndexType()))


def string_of(kb: KernelBuilder, ptr: SSAValue, length: SSAValue) -> SSAValue:
    """The string element of pointer `ptr` (i64) and `length` (index)."""
    low = kb.insert(arith.ExtUIOp(ptr, I128))
    n = kb.insert(arith.ExtUIOp(kb.insert(arith.IndexCastOp(length, i64)), I128))
    high = kb.insert(arith.ShLIOp(n, kb.constant(64, I128)))
    return _cast(kb, kb.insert(arith.OrIOp(low, high)), StringType())


def bytes_at(kb: KernelBuilder, ptr: SSAValue) -> SSAValue:
    """The bytes at pointer `ptr` (i64) as a `memref<?xi8>`."""
    pointer = kb.insert(llvm.IntToPtrOp(ptr))
    return _cast(kb, pointer, BYTES)


def address_of(kb: KernelBuilder, mem: SSAValue) -> SSAValue:
    """The address (i64) of buffer `mem`'s first element."""
    pointer = _cast(kb, mem, llvm.LLVMPointerType())
    return kb.insert(llvm.PtrToIntOp(pointer, i64))


def equal(kb: KernelBuilder, a: SSAValue, b: SSAValue) -> SSAValue:
    """i1: strings `a` and `b` hold the same bytes (the lengths, then every byte)."""
    pa, na = parts(kb, a)
    pb, nb = parts(kb, b)
    same_length = kb.insert(arith.CmpiOp(na, nb, "eq"))
    # compare min(na, nb) bytes, so a differing length never reads past either string
    n = kb.insert(arith.SelectOp(same_length, na, kb.constant(0, IndexType())))
    ba, bb = bytes_at(kb, pa), bytes_at(kb, pb)

    def step(k, acc):
        x, y = kb.load(ba, [k]), kb.load(bb, [k])
        return [kb.insert(arith.AndIOp(acc, kb.insert(arith.CmpiOp(x, y, "eq"))))]

    (same,) = kb.reduce(0, n, [same_length], step)
    assert same.type == i1
    return same
