"""A of the int8 GEMM (int8_gemm.py): the input as i32 words of 4 channels (bytes) or 2 (i16).

The packed kernel reads A one word at a time (broadcast against 16 columns of B). The copy
puts the input into that form: an i32 scratch [N, HP, WP, CW] bordered with the input zero
point, the channel tail padded with it, s8 bytes flipped to u8 (the products take unsigned
bytes of A); in the "pairs" form each channel is zero-extended to i16. When C is a multiple
of the channels per word, the words of a row are consecutive, so the copy is one vector loop
per row (16 bytes at a time); a ui8 input in the byte form with no padding is not copied at
all (`load_word` reads it in place).
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import arith, llvm
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
from onnxc.lowering.graph_to_loops.int8_layout import Int8Gemm
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder, is_nonzero, may_exceed
from onnxc.lowering.graph_to_loops.qlinear import widen


def input_offset(op: QuantizedProductOp) -> tuple[int, bool]:
    """(the zero point of A as stored in the scratch, whether bytes are flipped from s8)."""
    x = op.quantized_operands()[0]
    signed = x.type.get_element_type().signedness.data != Signedness.UNSIGNED
    zp = int_of(op.input_zero_point)
    return (zp + 128, True) if signed else (zp, False)


def pack_input(kb: KernelBuilder, op: QuantizedProductOp, g: Int8Gemm, x: SSAValue,
               scratch: SSAValue) -> None:
    """scratch[n, hp, wp, cw] = `g.per_word` channels of x (the zero point outside it),
    little-endian; threads split the input rows."""
    zp, flip = input_offset(op)
    per_word = g.per_word
    bits = 32 // per_word
    lanes = sum(1 << (bits * b) for b in range(per_word))  # 0x01010101 or 0x00010001
    flip_mask = kb.constant(_as_i32(0x80 * lanes), i32)
    pad_word = kb.constant(_as_i32(zp * lanes), i32)
    pad_lane = zp ^ 0x80 if flip else zp  # a tail channel, before the flip of the word
    src = kb.view(x, [g.n * g.h, g.w, g.c])
    flat = kb.view(x, [g.n * g.h * g.w * g.c])
    full_words, tail = divmod(g.c, per_word)

    def fill(at: Index, length: int) -> None:
        kb.for_(0, length, lambda i: kb.store(pad_word, scratch, [kb.iadd(at, i)]))

    def flipped(value: SSAValue) -> SSAValue:
        if not flip:
            return value
        mask = flip_mask
        if isinstance(value.type, VectorType):
            mask = kb.vsplat(mask, value.type)
        return kb.insert(arith.XOrIOp(value, mask))

    def word(src_row: Index, col: Index, cw: Index, real: int) -> SSAValue:
        acc = None
        for b in range(per_word):
            if b < real:
                at = [src_row, col, kb.iadd(kb.imul(cw, per_word), b)]
                lane = widen_unsigned(kb, kb.load(src, at))
            else:
                lane = kb.constant(pad_lane, i32)
            shifted = lane if b == 0 else kb.insert(
                arith.ShLIOp(lane, kb.constant(bits * b, i32)))
            acc = shifted if acc is None else kb.insert(arith.OrIOp(acc, shifted))
        assert acc is not None
        return flipped(acc)

    def row_words(src_row: Index, dst: Index) -> None:
        """The row's channels are whole words: VECTOR_BYTES at a time, then word by word."""
        length = g.w * g.c_words
        vectors, rest = divmod(length * per_word, VECTOR_BYTES)
        step = VECTOR_BYTES // per_word  # words per vector
        kb.for_(0, vectors, lambda i: kb.vstore(
            flipped(_vector_words(kb, flat, kb.iadd(kb.imul(src_row, g.w * g.c),
                                                    kb.imul(i, VECTOR_BYTES)), per_word)),
            scratch, [kb.idx(kb.iadd(dst, kb.imul(i, step)))]))
        if is_nonzero(rest):
            first = vectors * step
            kb.for_(first, length, lambda i: kb.store(
                word(src_row, kb.idiv(i, g.c_words), kb.isub(i, kb.imul(
                    kb.idiv(i, g.c_words), g.c_words)), per_word),
                scratch, [kb.iadd(dst, i)]))

    def interior(n: Index, h: Index, at: Index) -> None:
        src_row = kb.iadd(kb.imul(n, g.h), h)

        def column(col: Index) -> None:
            dst = kb.iadd(at, kb.imul(col, g.c_words))
            kb.for_(0, full_words, lambda cw: kb.store(
                word(src_row, col, cw, per_word), scratch, [kb.iadd(dst, cw)]))
            kb.store(word(src_row, col, full_words, tail), scratch, [kb.iadd(dst, full_words)])

        if tail:
            kb.for_(0, g.w, column)
        else:
            row_words(src_row, at)

    _bordered_images(kb, g, g.c_words, fill, interior)


def _bordered_images(kb: KernelBuilder, g: Int8Gemm, units: int, fill, interior) -> None:
    """Every image of a scratch [n, hp, wp, units]: the pad rows and each input row's left
    and right pads by `fill(at, count)`, the row between them by `interior(n, h, at)` (at
    its first element); the rows in parallel for a large map."""
    row = g.wp * units

    def image(n: Index) -> None:
        base = kb.imul(n, g.hp * row)
        fill(base, g.pt * row)

        def inner(h: Index) -> None:
            at = kb.iadd(base, kb.imul(kb.iadd(h, g.pt), row))
            fill(at, g.pl * units)
            interior(n, h, kb.iadd(at, g.pl * units))
            fill(kb.iadd(at, (g.pl + g.w) * units), g.pr * units)

        if may_exceed(g.h * g.w * g.c, (1 << 14) - 1):
            kb.parallel_for(0, g.h, inner)
        else:
            kb.for_(0, g.h, inner)
        fill(kb.iadd(base, (g.pt + g.h) * row), g.pb * row)

    kb.for_(0, g.n, image)


VECTOR_BYTES = 16
"""Input bytes per vector step of the copy (one xmm load; 4 or 8 words out)."""


def pack_input_bytes(kb: KernelBuilder, op: QuantizedProductOp, g: Int8Gemm, x: SSAValue,
                     scratch: SSAValue) -> None:
    """scratch[n, hp, wp, c] = the input's bytes bordered with its zero point (s8 flipped
    to u8), no channel tail, then per_word - 1 bytes of it that a kernel row's last word
    reads past the map: A of the packed runs (int8_layout.py). An input row is contiguous
    in both, so it is copied VECTOR_BYTES at a time."""
    zp, flip = input_offset(op)
    pad = kb.constant(zp - 256 if zp > 127 else zp, i8)
    vector = VectorType(i8, [VECTOR_BYTES])
    mask = kb.vsplat(kb.constant(-128, i8), vector) if flip else None
    flat = kb.view(x, [g.n * g.h * g.w * g.c])
    row, length = g.wp * g.c, g.w * g.c
    vectors, rest = divmod(length, VECTOR_BYTES)

    def fill(at: Index, count: Index) -> None:
        kb.for_(0, count, lambda i: kb.store(pad, scratch, [kb.iadd(at, i)]))

    def signless(value: SSAValue, t) -> SSAValue:
        value = kb.insert(UnrealizedConversionCastOp.get([value], [t]))
        if mask is None:
            return value
        return kb.insert(arith.XOrIOp(value, mask if t == vector else kb.constant(-128, i8)))

    def copy(src: Index, dst: Index) -> None:
        element = VectorType(flat.type.get_element_type(), [VECTOR_BYTES])
        kb.for_(0, vectors, lambda i: kb.vstore(
            signless(kb.vload(flat, [kb.idx(kb.iadd(src, kb.imul(i, VECTOR_BYTES)))], element),
                     vector), scratch, [kb.idx(kb.iadd(dst, kb.imul(i, VECTOR_BYTES)))]))
        if is_nonzero(rest):
            kb.for_(vectors * VECTOR_BYTES, length, lambda i: kb.store(
                signless(kb.load(flat, [kb.iadd(src, i)]), i8), scratch, [kb.iadd(dst, i)]))

    _bordered_images(kb, g, g.c, fill, lambda n, h, at: copy(
        kb.imul(kb.iadd(kb.imul(n, g.h), h), length), at))
    fill(g.n * g.hp * row, g.per_word - 1)


def _vector_words(kb: KernelBuilder, flat: SSAValue, at: Index, per_word: int) -> SSAValue:
    """VECTOR_BYTES bytes of a flat ui8 / i8 memref from byte `at`, as i32 words of
    `per_word` channels (bytes as they are, or each zero-extended to i16)."""
    raw = kb.vload(flat, [kb.idx(at)],
                                  VectorType(flat.type.get_element_type(), [VECTOR_BYTES]))
    signless = kb.insert(UnrealizedConversionCastOp.get([raw], [VectorType(i8, [VECTOR_BYTES])]))
    if per_word == 2:
        signless = kb.insert(llvm.ZExtOp(signless, VectorType(IntegerType(16), [VECTOR_BYTES])))
    return kb.insert(llvm.BitcastOp(signless, VectorType(i32, [VECTOR_BYTES // per_word])))


def load_word(kb: KernelBuilder, flat: SSAValue, at: Index) -> SSAValue:
    """Bytes at .. at + 3 of a flat ui8 / i8 memref as one little-endian i32."""
    bytes4 = kb.vload(flat, [kb.idx(at)], VectorType(flat.type.get_element_type(), [4]))
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
