"""A of the int8 GEMM (int8_gemm.py): the input as i32 words of 4 channels each.

The packed kernel reads A one 4-byte word at a time (broadcast against 16 columns of B). The
copy puts the input into that form: an i32 scratch [N, HP, WP, C4] bordered with the input
zero point, the channel tail padded with it, s8 bytes flipped to u8 (vpdpbusd multiplies
unsigned bytes of A). When C % 4 == 0 the words of a row are its bytes as they are, so the
copy is a plain word loop LLVM vectorises; a ui8 input with no padding is not copied at all
(`load_word` reads it in place).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from xdsl.dialects import arith, llvm, vector
from xdsl.dialects.builtin import (
    IntegerType,
    Signedness,
    UnrealizedConversionCastOp,
    VectorType,
    i8,
    i32,
)
from xdsl.ir import SSAValue

from onnxc.dialects.graph_base import int_of
from onnxc.dialects.graph_qlinear import QuantizedProductOp
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder
from onnxc.lowering.graph_to_loops.qlinear import widen

if TYPE_CHECKING:
    from onnxc.lowering.graph_to_loops.int8_gemm import Int8Gemm


def input_offset(op: QuantizedProductOp) -> tuple[int, bool]:
    """(the zero point of A as stored in the scratch, whether bytes are flipped from s8)."""
    x = op.quantized_operands()[0]
    signed = x.type.get_element_type().signedness.data != Signedness.UNSIGNED
    zp = int_of(op.input_zero_point)
    return (zp + 128, True) if signed else (zp, False)


def pack_input(kb: KernelBuilder, op: QuantizedProductOp, g: Int8Gemm, x: SSAValue,
               scratch: SSAValue) -> None:
    """scratch[n, hp, wp, c4] = 4 bytes of x (the zero point outside it), little-endian;
    threads split the input rows."""
    zp, flip = input_offset(op)
    pad_word = kb.constant(_as_i32(zp * 0x01010101), i32)
    pad_byte = zp ^ 0x80 if flip else zp  # a tail byte, before the flip of the word
    src = kb.view(x, [g.n * g.h, g.w, g.c])
    flat = kb.view(x, [g.n * g.h * g.w * g.c])
    row = g.wp * g.c4
    full_c4, tail = divmod(g.c, 4)

    def fill(at: Index, length: int) -> None:
        kb.for_(0, length, lambda i: kb.store(pad_word, scratch, [kb.iadd(at, i)]))

    def word(src_row: Index, col: Index, c4: Index, real: int) -> SSAValue:
        acc = None
        for b in range(4):
            if b < real:
                at = [src_row, col, kb.iadd(kb.imul(c4, 4), b)]
                byte = widen_unsigned(kb, kb.load(src, at))
            else:
                byte = kb.constant(pad_byte, i32)
            shifted = byte if b == 0 else kb.insert(arith.ShLIOp(byte, kb.constant(8 * b, i32)))
            acc = shifted if acc is None else kb.insert(arith.OrIOp(acc, shifted))
        assert acc is not None
        if flip:
            acc = kb.insert(arith.XOrIOp(acc, kb.constant(_as_i32(0x80808080), i32)))
        return acc

    def image(n: Index) -> None:
        base = kb.imul(n, g.hp * row)
        fill(base, g.pt * row)

        def inner(h: Index) -> None:
            at = kb.iadd(base, kb.imul(kb.iadd(h, g.pt), row))
            src_row = kb.iadd(kb.imul(n, g.h), h)
            fill(at, g.pl * g.c4)

            def column(col: Index) -> None:
                dst = kb.iadd(at, kb.imul(kb.iadd(col, g.pl), g.c4))
                kb.for_(0, full_c4, lambda c4: kb.store(
                    word(src_row, col, c4, 4), scratch, [kb.iadd(dst, c4)]))
                if tail:
                    kb.store(word(src_row, col, full_c4, tail), scratch,
                             [kb.iadd(dst, full_c4)])

            def row_words(i: Index) -> None:
                """Whole words: the row's bytes as they are (a copy LLVM vectorises)."""
                value = load_word(kb, flat, kb.iadd(kb.imul(src_row, g.w * g.c4), i))
                if flip:
                    value = kb.insert(arith.XOrIOp(value, kb.constant(_as_i32(0x80808080), i32)))
                kb.store(value, scratch, [kb.iadd(kb.iadd(at, g.pl * g.c4), i)])

            if tail:
                kb.for_(0, g.w, column)
            else:
                kb.for_(0, g.w * g.c4, row_words)
            fill(kb.iadd(at, (g.pl + g.w) * g.c4), g.pr * g.c4)

        if g.h * g.w * g.c >= 1 << 14:
            kb.parallel_for(0, g.h, inner)
        else:
            kb.for_(0, g.h, inner)
        fill(kb.iadd(base, (g.pt + g.h) * row), g.pb * row)

    kb.for_(0, g.n, image)


def load_word(kb: KernelBuilder, flat: SSAValue, at: Index) -> SSAValue:
    """Bytes 4 * at .. 4 * at + 3 of a flat ui8 / i8 memref as one little-endian i32."""
    bytes4 = kb.insert(vector.LoadOp(flat, [kb.idx(kb.imul(at, 4))],
                                     VectorType(flat.type.get_element_type(), [4])))
    raw = kb.insert(UnrealizedConversionCastOp.get([bytes4], [VectorType(i8, [4])]))
    return kb.insert(llvm.BitcastOp(raw, i32))


def _as_i32(bits: int) -> int:
    return int(np.uint32(bits).view(np.int32))


def widen_unsigned(kb: KernelBuilder, v: SSAValue) -> SSAValue:
    """A byte's bits as an i32 in [0, 255] (s8 bytes too: the flip is done on the word)."""
    t = v.type
    assert isinstance(t, IntegerType)
    if t.signedness.data == Signedness.UNSIGNED:
        return widen(kb, v)
    return kb.insert(arith.AndIOp(widen(kb, v), kb.constant(0xFF, i32)))
