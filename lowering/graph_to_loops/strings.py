"""Kernels of the string ops (dialects/graph_strings.py; docs/strings.md): each reads and
writes `{ptr, len}` string elements through string_bytes.py.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    IndexType,
    IntegerType,
    UnrealizedConversionCastOp,
    i1,
    i8,
    i32,
    i64,
)
from xdsl.ir import SSAValue

from onnxc.dialects import graph_strings
from onnxc.dialects.dense_data import from_numpy
from onnxc.dialects.graph_base import shape_of
from onnxc.dialects.regex_dfa import compile_dfa, compile_key_trie
from onnxc.lowering.graph_to_loops import string_bytes
from onnxc.lowering.graph_to_loops.branches import when
from onnxc.lowering.graph_to_loops.element_types import is_unsigned
from onnxc.lowering.graph_to_loops.loops import KernelBuilder, unflatten
from onnxc.lowering.graph_to_loops.rules import KernelRule


def strings_kernel(op: graph_strings.StringsOp, kb: KernelBuilder, ins, outs):
    """out[i] = {&data[spans[i, 0]], spans[i, 1]}: the spans were checked at import."""
    data, spans = ins
    n = kb.count(outs[0])
    out = kb.view(outs[0], [n])
    pairs = kb.view(spans, [n, 2])
    base = string_bytes.address_of(kb, data)

    def element(i):
        offset, length = kb.load(pairs, [i, 0]), kb.load(pairs, [i, 1])
        ptr = kb.insert(arith.AddiOp(base, offset))
        kb.store(string_bytes.string_of(kb, ptr, kb.insert(arith.IndexCastOp(length,
                                                                              IndexType()))),
                 out, [i])

    kb.for_(0, n, element)


def _index(kb: KernelBuilder, value):
    if value.type != i64:
        value = kb.insert(arith.ExtUIOp(value, i64))
    return kb.insert(arith.IndexCastOp(value, IndexType()))


def dfa_tables(op: graph_strings.RegexFullMatchOp, target) -> list:
    """The pattern's DFA (dialects/regex_dfa.py): next state by state * 256 + byte (i32),
    accepting states (i8)."""
    next_state, accept = compile_dfa(op.pattern.data)
    return [from_numpy(next_state.reshape(-1)), from_numpy(accept.astype(np.int8))]


def regex_full_match_kernel(op: graph_strings.RegexFullMatchOp, kb: KernelBuilder, ins,
                            outs):
    """Per string, the DFA walked over its bytes from state 0; matched when it ends in an
    accepting state. Every byte value has a next state, so no input leaves the table."""
    x, next_state, accept = ins
    n = kb.count(outs[0])
    strings, matched = kb.view(x, [n]), kb.view(outs[0], [n])
    zero = kb.constant(0, i32)

    def element(i):
        ptr, length = string_bytes.parts(kb, kb.load(strings, [i]))
        data = string_bytes.bytes_at(kb, ptr)

        def step(k, state):
            row = kb.insert(arith.MuliOp(_index(kb, state), kb.idx(256)))
            at = kb.insert(arith.AddiOp(row, _index(kb, kb.load(data, [k]))))
            return [kb.load(next_state, [at])]

        (state,) = kb.reduce(0, length, [zero], step)
        accepted = kb.load(accept, [_index(kb, state)])
        kb.store(kb.insert(arith.CmpiOp(accepted, kb.constant(0, accepted.type), "ne")),
                 matched, [i])

    kb.parallel_for(0, n, element)




# --------------------------------------------------------------------------- StringSplit

_NO_LIMIT = 1 << 62


class _Bits:
    """i1 and index helpers for the split scans."""

    def __init__(self, kb: KernelBuilder):
        self.kb = kb
        self.true = kb.constant(1, i1)
        self.one64, self.zero64 = kb.constant(1, i64), kb.constant(0, i64)

    def all(self, *conds):
        out = conds[0]
        for c in conds[1:]:
            out = self.kb.insert(arith.AndIOp(out, c))
        return out

    def any(self, *conds):
        out = conds[0]
        for c in conds[1:]:
            out = self.kb.insert(arith.OrIOp(out, c))
        return out

    def not_(self, c):
        return self.kb.insert(arith.XOrIOp(c, self.true))

    def icmp(self, a, b, predicate: str):
        return self.kb.insert(arith.CmpiOp(a, b, predicate))

    def select(self, c, a, b):
        return self.kb.insert(arith.SelectOp(c, a, b))

    def inc(self, c, count):
        return self.kb.insert(arith.AddiOp(count, self.select(c, self.one64, self.zero64)))


def _split_scan(kb: KernelBuilder, op, ptr, length, emit) -> SSAValue:
    """The pieces of one string (i64); `emit(j, start, size)` (i64, index, index) is called
    where each piece is found, or `emit` is None (the counting pass)."""
    b = _Bits(kb)
    data = string_bytes.bytes_at(kb, ptr)
    limit = op.maxsplit.value.data
    limit = kb.constant(_NO_LIMIT if limit < 0 else limit, i64)
    delimiter = op.delimiter.data.encode("utf-8")
    zero = kb.idx(0)

    def piece(cond, j, start, end):
        if emit is not None:
            when(kb, cond, lambda: emit(j, start, kb.insert(arith.SubiOp(end, start))))

    if delimiter:
        m = kb.idx(len(delimiter))

        def step(p, next_ok, splits, start):
            room = b.icmp(kb.insert(arith.AddiOp(p, m)), length, "ule")
            matched = [b.all(b.icmp(p, next_ok, "uge"), room, b.icmp(splits, limit, "slt"))]
            for t, byte in enumerate(delimiter):
                at = kb.insert(arith.AddiOp(p, kb.idx(t)))
                at = b.select(b.icmp(at, length, "ult"), at, p)  # in bounds even unmatched
                value = kb.load(data, [at])
                matched.append(b.icmp(value, kb.constant(byte - 256 if byte > 127 else byte,
                                                         value.type), "eq"))
            cut = b.all(*matched)
            piece(cut, splits, start, p)
            after = kb.insert(arith.AddiOp(p, m))
            return [b.select(cut, after, next_ok), b.inc(cut, splits),
                    b.select(cut, after, start)]

        _, splits, start = kb.for_(0, length, step, iter_args=[zero, b.zero64, zero])
        nonempty = b.icmp(length, zero, "ne")  # onnxruntime: "" has no pieces
        piece(nonempty, splits, start, length)
        return b.select(nonempty, kb.insert(arith.AddiOp(splits, b.one64)), b.zero64)

    false = kb.constant(0, i1)

    def ws_step(p, count, inside, start, rest, end):
        value = kb.load(data, [p])
        space = b.icmp(value, kb.constant(ord(" "), value.type), "eq")
        ends = b.all(inside, space, b.not_(rest))
        piece(ends, count, start, p)
        begins = b.all(b.not_(inside), b.not_(space))
        count = b.inc(ends, count)
        return [count, b.select(ends, false, b.select(begins, b.true, inside)),
                b.select(begins, p, start),
                b.any(rest, b.all(begins, b.icmp(count, limit, "eq"))),
                b.select(space, end, kb.insert(arith.AddiOp(p, kb.idx(1))))]

    count, inside, start, _, end = kb.for_(
        0, length, ws_step, iter_args=[b.zero64, false, zero, false, zero])
    piece(inside, count, start, end)  # the last piece ends at its last non-space byte
    return b.inc(inside, count)


def string_split_kernel(op: graph_strings.StringSplitOp, kb: KernelBuilder, ins, outs):
    """Count each string's pieces (the counts output) and the most of them; then, when the
    most fits the pieces' capacity, write each row's pieces and pad it with "". Every piece
    lies inside its string: the scans never read past its length."""
    pieces_out, counts_out, cell = outs
    n = kb.count(counts_out)
    strings, counts = kb.view(ins[0], [n]), kb.view(counts_out, [n])
    (k,) = op.defined()
    capacity = kb.insert(arith.IndexCastOp(kb.idx(kb.dim(k)), i64))

    def count_one(i, most):
        ptr, length = string_bytes.parts(kb, kb.load(strings, [i]))
        found = _split_scan(kb, op, ptr, length, None)
        kb.store(found, counts, [i])
        return [kb.insert(arith.MaxSIOp(most, found))]

    (most,) = kb.reduce(0, n, [kb.constant(0, i64)], count_one)
    kb.store(most, cell, [0])
    width = kb.insert(arith.IndexCastOp(most, IndexType()))

    def write():
        out = kb.view(pieces_out, [kb.imul(n, kb.dim(k))])
        empty = string_bytes.string_of(kb, kb.constant(0, i64), kb.idx(0))

        def write_one(i):
            ptr, length = string_bytes.parts(kb, kb.load(strings, [i]))
            row = kb.insert(arith.MuliOp(i if not isinstance(i, int) else kb.idx(i), width))

            def emit(j, start, size):
                at = kb.insert(arith.AddiOp(row, _index(kb, j)))
                begin = kb.insert(arith.AddiOp(ptr, kb.insert(arith.IndexCastOp(start, i64))))
                kb.store(string_bytes.string_of(kb, begin, size), out, [at])

            found = _index(kb, _split_scan(kb, op, ptr, length, emit))
            kb.for_(found, width, lambda j: kb.store(
                empty, out, [kb.insert(arith.AddiOp(row, kb.idx(j)))]))

        kb.for_(0, n, write_one)

    when(kb, kb.insert(arith.CmpiOp(most, capacity, "sle")), write)


def string_keep_kernel(op: graph_strings.StringKeepOp, kb: KernelBuilder, ins, outs):
    """Count the kept strings; write them in order, or one "" when none is kept. The count
    is at most C + 1, the room its buffer has (a bound, never outgrown)."""
    x, keep = ins
    out, cell = outs
    (count_symbol,) = op.defined()
    n = shape_of(op.input)[0]
    strings, mask = kb.view(x, [n]), kb.view(keep, [n])
    result = kb.view(out, [kb.dim(count_symbol)])
    one, zero = kb.constant(1, i64), kb.constant(0, i64)

    def counted(i, total):
        kept = kb.load(mask, [i])
        return [kb.insert(arith.AddiOp(total, kb.insert(arith.SelectOp(kept, one, zero))))]

    (kept,) = kb.reduce(0, n, [zero], counted)
    none = kb.insert(arith.CmpiOp(kept, zero, "eq"))
    kb.store(kb.insert(arith.SelectOp(none, one, kept)), cell, [0])
    when(kb, none, lambda: kb.store(string_bytes.string_of(kb, zero, kb.idx(0)), result, [0]))

    def write(i, j):
        kept = kb.load(mask, [i])
        when(kb, kept, lambda: kb.store(kb.load(strings, [i]), result, [_index(kb, j)]))
        return [kb.insert(arith.AddiOp(j, kb.insert(arith.SelectOp(kept, one, zero))))]

    kb.reduce(0, n, [zero], write)


# --------------------------------------------------------------------------- new bytes


def _broadcast_load(kb: KernelBuilder, mem, shape, multi):
    """`mem[...]` at the result index `multi`, broadcast (right-aligned, size-1 axes)."""
    offset = len(multi) - len(shape)
    return kb.load(mem, [0 if d == 1 else multi[offset + k] for k, d in enumerate(shape)])


def _copy(kb: KernelBuilder, ptr, length, data, at) -> None:
    """data[at + k] = byte k of the string at `ptr`, for k < length."""
    source = string_bytes.bytes_at(kb, ptr)
    kb.for_(0, length, lambda k: kb.store(kb.load(source, [k]), data,
                                          [kb.insert(arith.AddiOp(at, kb.idx(k)))]))


def _made_strings(op, kb: KernelBuilder, outs, total, write) -> None:
    """Store the bytes' `total` (index) as the run size; when it fits the room `data` has,
    `write(data, base)`: `data` as a flat byte view, `base` its address (i64)."""
    data, _, cell = outs
    (symbol,) = op.defined()
    kb.store(kb.insert(arith.IndexCastOp(total, i64)), cell, [0])
    room = kb.idx(kb.dim(symbol))
    fits = kb.insert(arith.CmpiOp(total, room, "ule"))
    when(kb, fits, lambda: write(kb.view(data, [room]), string_bytes.address_of(kb, data)))


def string_concat_kernel(op: graph_strings.StringConcatOp, kb: KernelBuilder, ins, outs):
    """Sum the result's lengths; when they fit, copy lhs then rhs bytes of each result
    string into `data`, one after the other, and point the result at them."""
    lhs, rhs = ins
    out = outs[1]
    shapes = [kb.shape(lhs), kb.shape(rhs), kb.shape(out)]
    n = kb.count(out)
    flat = kb.view(out, [n])

    def operands(o):
        multi = unflatten(kb, o, shapes[2])
        return [string_bytes.parts(kb, _broadcast_load(kb, m, s, multi))
                for m, s in ((lhs, shapes[0]), (rhs, shapes[1]))]

    def counted(o, total):
        (_, a), (_, b) = operands(o)
        return [kb.insert(arith.AddiOp(total, kb.insert(arith.AddiOp(a, b))))]

    (total,) = kb.reduce(0, n, [kb.idx(0)], counted)

    def write(data, base):
        def one(o, at):
            (pa, a), (pb, b) = operands(o)
            _copy(kb, pa, a, data, at)
            _copy(kb, pb, b, data, kb.insert(arith.AddiOp(at, a)))
            size = kb.insert(arith.AddiOp(a, b))
            start = kb.insert(arith.AddiOp(base, kb.insert(arith.IndexCastOp(at, i64))))
            kb.store(string_bytes.string_of(kb, start, size), flat, [o])
            return [kb.insert(arith.AddiOp(at, size))]

        kb.reduce(0, n, [kb.idx(0)], one)

    _made_strings(op, kb, outs, total, write)


def case_constants(op: graph_strings.StringCaseOp, target) -> list:
    return [from_numpy(graph_strings.case_table(bool(op.upper.value.data)))]


def string_case_kernel(op: graph_strings.StringCaseOp, kb: KernelBuilder, ins, outs):
    """Each string's bytes copied into `data` with the case table applied to its one-byte
    characters and its two-byte ones (U+0080-U+07FF, mapped to as many bytes or fewer); the input
    is valid UTF-8 (checked at the boundary), and a lead byte at a string's last position is
    copied as it is, so no read passes the string's length."""
    x, table = ins
    out = outs[1]
    n = kb.count(out)
    strings, flat = kb.view(x, [n]), kb.view(out, [n])
    b = _Bits(kb)

    def counted(i, total):
        _, length = string_bytes.parts(kb, kb.load(strings, [i]))
        return [kb.insert(arith.AddiOp(total, length))]

    (total,) = kb.reduce(0, n, [kb.idx(0)], counted)

    def write(data, base):
        def one(i, at):
            ptr, length = string_bytes.parts(kb, kb.load(strings, [i]))
            source = string_bytes.bytes_at(kb, ptr)

            def step(k, skip, w):
                byte = kb.load(source, [k])
                value = kb.insert(arith.ExtUIOp(byte, i32))
                nxt = kb.insert(arith.AddiOp(k, kb.idx(1)))
                has_next = b.icmp(nxt, length, "ult")
                lead = b.all(b.icmp(value, kb.constant(0xC0, i32), "uge"),
                             b.icmp(value, kb.constant(0xE0, i32), "ult"), has_next)
                ascii = b.icmp(value, kb.constant(0x80, i32), "ult")
                second = kb.insert(arith.ExtUIOp(kb.load(source, [b.select(has_next, nxt, k)]),
                                                 i32))
                cp = b.select(lead, kb.insert(arith.OrIOp(
                    kb.insert(arith.ShLIOp(kb.insert(arith.AndIOp(
                        value, kb.constant(0x1F, i32))), kb.constant(6, i32))),
                    kb.insert(arith.AndIOp(second, kb.constant(0x3F, i32))))), value)
                in_table = b.all(b.any(ascii, lead), b.icmp(
                    cp, kb.constant(graph_strings.CASE_TABLE_SIZE, i32), "ult"))
                mapped = kb.load(table, [_index(kb, b.select(in_table, cp,
                                                             kb.constant(0, i32)))])
                mapped = b.select(in_table, mapped, cp)
                single = b.icmp(mapped, kb.constant(0x80, i32), "ult")
                live = b.not_(skip)

                def store(v, at_w):
                    kb.store(kb.insert(arith.TruncIOp(v, byte.type)), data, [at_w])

                def mapped_char():
                    def one():
                        store(mapped, w)

                    def two():
                        store(kb.insert(arith.OrIOp(kb.constant(0xC0, i32), kb.insert(
                            arith.ShRUIOp(mapped, kb.constant(6, i32))))), w)
                        store(kb.insert(arith.OrIOp(kb.constant(0x80, i32), kb.insert(
                            arith.AndIOp(mapped, kb.constant(0x3F, i32))))),
                            kb.insert(arith.AddiOp(w, kb.idx(1))))

                    when(kb, single, one)
                    when(kb, b.not_(single), two)

                when(kb, b.all(live, b.any(ascii, lead)), mapped_char)
                when(kb, b.all(live, b.not_(ascii), b.not_(lead)),
                     lambda: kb.store(byte, data, [w]))
                width = b.select(b.all(lead, b.not_(single)), kb.idx(2), kb.idx(1))
                advanced = kb.insert(arith.AddiOp(w, b.select(live, width, kb.idx(0))))
                return [b.all(live, lead), advanced]

            _, end = kb.for_(0, length, step, iter_args=[kb.constant(0, i1), at])
            start = kb.insert(arith.AddiOp(base, kb.insert(arith.IndexCastOp(at, i64))))
            kb.store(string_bytes.string_of(kb, start, kb.insert(arith.SubiOp(end, at))),
                     flat, [i])
            return [end]

        kb.reduce(0, n, [kb.idx(0)], one)

    _made_strings(op, kb, outs, total, write)


def lookup_tables(op: graph_strings.StringLookupOp, target) -> list:
    """The key trie (dialects/regex_dfa.compile_key_trie): byte classes, next states by
    state * classes + class, the key index of each state (all i32)."""
    classes, table, which = compile_key_trie(op.key_list())
    return [from_numpy(classes.astype(np.int32)), from_numpy(table.reshape(-1)),
            from_numpy(which)]


def string_lookup_kernel(op: graph_strings.StringLookupOp, kb: KernelBuilder, ins, outs):
    """Per string, the trie walked once per byte from the root; the key index of the state
    it ends in (-1: no key). Every class and state index comes from the tables, which the
    compile built complete: no input leaves them."""
    x, classes, table, which = ins
    width = compile_key_trie(op.key_list())[1].shape[1]
    n = kb.count(outs[0])
    strings, found = kb.view(x, [n]), kb.view(outs[0], [n])

    def element(i):
        ptr, length = string_bytes.parts(kb, kb.load(strings, [i]))
        data = string_bytes.bytes_at(kb, ptr)

        def step(k, state):
            cls = kb.load(classes, [_index(kb, kb.load(data, [k]))])
            row = kb.insert(arith.MuliOp(_index(kb, state), kb.idx(width)))
            return [kb.load(table, [kb.insert(arith.AddiOp(row, _index(kb, cls)))])]

        (state,) = kb.reduce(0, length, [kb.constant(0, i32)], step)
        key = kb.load(which, [_index(kb, state)])
        kb.store(kb.insert(arith.ExtSIOp(key, i64)), found, [i])

    kb.parallel_for(0, n, element)


# --------------------------------------------------------------------------- Cast


def _signed_constant(kb: KernelBuilder, value: int):
    """An i64 constant of `value`'s 64 bits (values past 2^63 as their two's complement)."""
    return kb.constant(value - (1 << 64) if value >= 1 << 63 else value, i64)


def _magnitude(kb: KernelBuilder, value, element):
    """(negative, |value| as u64 bits) of an integer element (i1: 0 or 1)."""
    width = element.width.data
    signed = width > 1 and not is_unsigned(element)
    if is_unsigned(element):  # the same bits, signless (LLVM's integers carry no sign)
        value = kb.insert(UnrealizedConversionCastOp.get([value], [IntegerType(width)]))
    if width < 64:
        value = kb.insert((arith.ExtSIOp if signed else arith.ExtUIOp)(value, i64))
    zero = kb.constant(0, i64)
    if not signed:
        return kb.constant(0, i1), value
    negative = kb.insert(arith.CmpiOp(value, zero, "slt"))
    return negative, kb.insert(arith.SelectOp(negative, kb.insert(arith.SubiOp(zero, value)),
                                              value))


def _digits(kb: KernelBuilder, magnitude):
    """How many decimal digits u64 `magnitude` has (1 for 0), as index."""
    b = _Bits(kb)
    count = b.one64
    for k in range(1, 20):
        count = b.inc(b.icmp(magnitude, _signed_constant(kb, 10 ** k), "uge"), count)
    return _index(kb, count)


def string_of_integers_kernel(op: graph_strings.StringOfIntegersOp, kb: KernelBuilder, ins,
                              outs):
    """Count each value's characters (its digits, and '-' for a negative one); when they
    fit, write each value's digits from its last one back, after its '-'."""
    element = op.input.type.get_element_type()
    n = kb.count(outs[1])
    values, flat = kb.view(ins[0], [n]), kb.view(outs[1], [n])
    one, zero = kb.idx(1), kb.idx(0)

    def text(i):
        negative, magnitude = _magnitude(kb, kb.load(values, [i]), element)
        digits = _digits(kb, magnitude)
        return negative, magnitude, digits, kb.insert(arith.AddiOp(
            digits, kb.insert(arith.SelectOp(negative, one, zero))))

    def counted(i, total):
        return [kb.insert(arith.AddiOp(total, text(i)[3]))]

    (total,) = kb.reduce(0, n, [zero], counted)
    ten = kb.constant(10, i64)

    def write(data, base):
        def one_value(i, at):
            negative, magnitude, digits, size = text(i)
            when(kb, negative, lambda: kb.store(kb.constant(ord("-"), i8), data, [at]))
            last = kb.insert(arith.SubiOp(kb.insert(arith.AddiOp(at, size)), one))

            def digit(k, rest):
                character = kb.insert(arith.AddiOp(kb.insert(arith.RemUIOp(rest, ten)),
                                                   kb.constant(ord("0"), i64)))
                kb.store(kb.insert(arith.TruncIOp(character, i8)), data,
                         [kb.insert(arith.SubiOp(last, k))])
                return [kb.insert(arith.DivUIOp(rest, ten))]

            kb.for_(0, digits, digit, iter_args=[magnitude])
            start = kb.insert(arith.AddiOp(base, kb.insert(arith.IndexCastOp(at, i64))))
            kb.store(string_bytes.string_of(kb, start, size), flat, [i])
            return [kb.insert(arith.AddiOp(at, size))]

        kb.reduce(0, n, [zero], one_value)

    _made_strings(op, kb, outs, total, write)


_U64_TENTH = ((1 << 64) - 1) // 10  # past it, one more digit overflows any u64


def integers_of_strings_kernel(op: graph_strings.IntegersOfStringsOp, kb: KernelBuilder,
                               ins, outs):
    """strtoll / strtoull per string: whitespace, a sign, digits up to the first other
    byte, the magnitude kept in u64 with its overflow; range and presence of a digit give
    `valid`. Only the string's own bytes are read."""
    b = _Bits(kb)
    unsigned = bool(op.unsigned.value.data)
    n = kb.count(outs[0])
    strings = kb.view(ins[0], [n])
    values, valid = kb.view(outs[0], [n]), kb.view(outs[1], [n])
    c = {name: kb.constant(ord(ch), i8) for name, ch in
         (("plus", "+"), ("minus", "-"), ("zero", "0"), ("nine", "9"))}
    spaces = [kb.constant(ord(ch), i8) for ch in " \t\n\v\f\r"]
    phase = {k: kb.constant(v, i8) for k, v in (("space", 0), ("sign", 1), ("digits", 2),
                                                ("done", 3))}
    tenth, ten = _signed_constant(kb, _U64_TENTH), kb.constant(10, i64)
    false = kb.constant(0, i1)

    def element(i):
        ptr, length = string_bytes.parts(kb, kb.load(strings, [i]))
        data = string_bytes.bytes_at(kb, ptr)

        def step(k, state, negative, magnitude, seen, overflow):
            byte = kb.load(data, [k])
            space = b.any(*[b.icmp(byte, s, "eq") for s in spaces])
            digit = b.all(b.icmp(byte, c["zero"], "uge"), b.icmp(byte, c["nine"], "ule"))
            sign = b.any(b.icmp(byte, c["plus"], "eq"), b.icmp(byte, c["minus"], "eq"))
            at = {name: b.icmp(state, v, "eq") for name, v in phase.items()}
            takes_digit = b.all(digit, b.not_(at["done"]))
            value = kb.insert(arith.ExtUIOp(kb.insert(arith.SubiOp(byte, c["zero"])), i64))
            grown = kb.insert(arith.AddiOp(kb.insert(arith.MuliOp(magnitude, ten)), value))
            wraps = b.any(b.icmp(magnitude, tenth, "ugt"),
                          b.icmp(grown, value, "ult"))  # *10 or +digit passed 2^64
            signs = b.all(at["space"], sign)
            stays = b.all(at["space"], space)
            new_state = b.select(takes_digit, phase["digits"],
                                 b.select(signs, phase["sign"],
                                          b.select(stays, phase["space"], phase["done"])))
            return [new_state,
                    b.select(signs, b.icmp(byte, c["minus"], "eq"), negative),
                    b.select(takes_digit, grown, magnitude),
                    b.any(seen, takes_digit),
                    b.any(overflow, b.all(takes_digit, wraps))]

        _, negative, magnitude, seen, overflow = kb.for_(
            0, length, step, iter_args=[phase["space"], false, b.zero64, false, false])
        negated = kb.insert(arith.SubiOp(b.zero64, magnitude))
        if unsigned:
            in_range = b.not_(overflow)
        else:
            limit = b.select(negative, _signed_constant(kb, 1 << 63),
                             _signed_constant(kb, (1 << 63) - 1))
            in_range = b.all(b.not_(overflow), b.icmp(magnitude, limit, "ule"))
        kb.store(b.select(negative, negated, magnitude), values, [i])
        kb.store(b.all(seen, in_range), valid, [i])

    kb.parallel_for(0, n, element)


RULES = (
    KernelRule(graph_strings.StringsOp, strings_kernel, symbolic=True),
    KernelRule(graph_strings.RegexFullMatchOp, regex_full_match_kernel, symbolic=True,
               constants=dfa_tables),
    KernelRule(graph_strings.StringSplitOp, string_split_kernel, symbolic=True),
    KernelRule(graph_strings.StringKeepOp, string_keep_kernel, symbolic=True),
    KernelRule(graph_strings.StringConcatOp, string_concat_kernel, symbolic=True),
    KernelRule(graph_strings.StringCaseOp, string_case_kernel, symbolic=True,
               constants=case_constants),
    KernelRule(graph_strings.StringLookupOp, string_lookup_kernel, symbolic=True,
               constants=lookup_tables),
    KernelRule(graph_strings.StringOfIntegersOp, string_of_integers_kernel, symbolic=True),
    KernelRule(graph_strings.IntegersOfStringsOp, integers_of_strings_kernel, symbolic=True),
)
