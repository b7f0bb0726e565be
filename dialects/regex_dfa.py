"""RegexFullMatch's pattern, compiled at compile time to a DFA over UTF-8 bytes.

Python's regex parser (`re._parser`) gives the parse tree; this module builds a Thompson NFA
over bytes from it (a code point class becomes the UTF-8 byte sequences of its ranges), and
the subset construction turns that into a table `next[state, byte]` and `accept[state]`
that the kernel walks once per byte (lowering/graph_to_loops/strings.py). A string matches
when the walk over all its bytes ends in an accepting state: a full match.

The syntax is onnxruntime's, RE2's, as far as a DFA goes, with RE2's meanings where Python's
differ: `\\d`, `\\w`, `\\s` are ASCII (`[0-9]`, `[0-9A-Za-z_]`, `[\\t\\n\\f\\r ]`), `.` is
any character but `\\n` (any with `(?s)`), `(?i)` folds the simple case pairs. What no DFA
runs (backreferences, lookaround, a word boundary its neighbouring characters do not decide,
anchors inside the pattern, atomic groups, possessive repeats) and what Python's parser refuses (RE2's `\\pL`, `[[:alpha:]]`)
is an UnsupportedRegex naming the construct.
"""

from __future__ import annotations

import functools
import re
from re import _constants as C  # type: ignore[attr-defined]
from re import _parser as sre  # type: ignore[attr-defined]

import numpy as np

MAX_STATES = 4096
"""the largest DFA compiled (its table is 1 KiB per state)"""
MAX_REPEAT = 1000
"""RE2's bound on a counted repetition"""
_UNICODE_MAX = 0x10FFFF

_DIGIT = [(0x30, 0x39)]
_WORD = [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)]
_SPACE = [(0x09, 0x0A), (0x0C, 0x0D), (0x20, 0x20)]


class UnsupportedRegex(ValueError):
    """A pattern onnxc cannot run as a DFA, or cannot parse (the message names why)."""


# ----------------------------------------------------------------------------- code points


def _normalize(ranges) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return [(lo, hi) for lo, hi in out]


def _complement(ranges) -> list[tuple[int, int]]:
    out, start = [], 0
    for lo, hi in _normalize(ranges):
        if lo > start:
            out.append((start, lo - 1))
        start = hi + 1
    if start <= _UNICODE_MAX:
        out.append((start, _UNICODE_MAX))
    return out


def _fold(ranges) -> list[tuple[int, int]]:
    """`ranges` with the other case of each character (the simple case pairs) of one or two
    UTF-8 bytes (U+0000-U+07FF: Latin, Greek, Cyrillic, Armenian, ...); characters past
    them keep their case."""
    extra = []
    for lo, hi in ranges:
        for c in range(lo, min(hi, 0x7FF) + 1):
            for other in {chr(c).lower(), chr(c).upper()}:
                if len(other) == 1 and ord(other) != c:
                    extra.append((ord(other), ord(other)))
    return _normalize([*ranges, *extra])


def _utf8_sequences(lo: int, hi: int, out: list) -> None:
    """The byte-range sequences whose concatenations are the UTF-8 encodings of the code
    points lo..hi (surrogates left out), as in RE2 and Go's utf8 range compiler."""
    if lo > hi:
        return
    if lo <= 0xDFFF and hi >= 0xD800:
        _utf8_sequences(lo, min(hi, 0xD7FF), out)
        _utf8_sequences(max(lo, 0xE000), hi, out)
        return
    for boundary in (0x7F, 0x7FF, 0xFFFF):
        if lo <= boundary < hi:
            _utf8_sequences(lo, boundary, out)
            _utf8_sequences(boundary + 1, hi, out)
            return
    if hi <= 0x7F:
        out.append([(lo, hi)])
        return
    length = len(chr(lo).encode("utf-8"))
    for i in range(1, length):
        mask = (1 << (6 * i)) - 1
        if lo & ~mask != hi & ~mask:
            if lo & mask:
                _utf8_sequences(lo, lo | mask, out)
                _utf8_sequences((lo | mask) + 1, hi, out)
                return
            if hi & mask != mask:
                _utf8_sequences(lo, (hi & ~mask) - 1, out)
                _utf8_sequences(hi & ~mask, hi, out)
                return
    out.append(list(zip(chr(lo).encode("utf-8"), chr(hi).encode("utf-8"))))


# ----------------------------------------------------------------------------- NFA


class _NFA:
    """States with epsilon moves and byte-range moves; fragments are (start, end)."""

    def __init__(self):
        self.eps: list[list[int]] = []
        self.moves: list[list[tuple[int, int, int]]] = []

    def state(self) -> int:
        self.eps.append([])
        self.moves.append([])
        if len(self.eps) > 64 * MAX_STATES:
            raise UnsupportedRegex("the pattern is too large")
        return len(self.eps) - 1

    def empty(self) -> tuple[int, int]:
        s = self.state()
        return s, s

    def chars(self, ranges) -> tuple[int, int]:
        start, end = self.state(), self.state()
        for lo, hi in _normalize(ranges):
            sequences: list = []
            _utf8_sequences(lo, hi, sequences)
            for seq in sequences:
                at = start
                for k, (blo, bhi) in enumerate(seq):
                    to = end if k == len(seq) - 1 else self.state()
                    self.moves[at].append((blo, bhi, to))
                    at = to
        return start, end

    def concat(self, parts) -> tuple[int, int]:
        if not parts:
            return self.empty()
        for (_, a_end), (b_start, _) in zip(parts, parts[1:]):
            self.eps[a_end].append(b_start)
        return parts[0][0], parts[-1][1]

    def alternate(self, parts) -> tuple[int, int]:
        start, end = self.state(), self.state()
        for s, e in parts:
            self.eps[start].append(s)
            self.eps[e].append(end)
        return start, end

    def star(self, frag) -> tuple[int, int]:
        start, end = self.state(), self.state()
        s, e = frag
        self.eps[start] += [s, end]
        self.eps[e] += [s, end]
        return start, end

    def optional(self, frag) -> tuple[int, int]:
        start, end = self.state(), self.state()
        self.eps[start] += [frag[0], end]
        self.eps[frag[1]].append(end)
        return start, end


class _Builder:
    def __init__(self, nfa: _NFA):
        self.nfa = nfa

    def sequence(self, items, flags: int, first: bool, last: bool) -> tuple[int, int]:
        parts = []
        for k, (op, av) in enumerate(items):
            if op is C.AT and av in (C.AT_BOUNDARY, C.AT_NON_BOUNDARY):
                parts.append(self._boundary(items, k, flags, first, last))
                continue
            parts.append(self.node(op, av, flags, first and k == 0,
                                   last and k == len(items) - 1))
        return self.nfa.concat(parts)

    def _boundary(self, items, k: int, flags: int, first: bool, last: bool):
        """`\\b` / `\\B` where its neighbours decide it: each side one character of a set
        that is all word or all non-word characters, or the text's start or end (a full
        match's); else UnsupportedRegex."""
        def side(j: int, edge: bool) -> bool | None:  # True: word, False: non-word
            if not 0 <= j < len(items):
                return False if edge else None
            chars = _chars_of(*items[j], flags)
            if chars is None:
                return None
            word = _normalize(_WORD)
            inside = all(any(w0 <= lo and hi <= w1 for w0, w1 in word) for lo, hi in chars)
            outside = not _intersects(chars, word)
            return True if inside else False if outside else None

        before, after = side(k - 1, first and k == 0), side(k + 1, last and k == len(items) - 1)
        if before is None or after is None:
            raise UnsupportedRegex("a word boundary its neighbours do not decide")
        holds = before != after
        if items[k][1] is C.AT_NON_BOUNDARY:
            holds = not holds
        return self.nfa.empty() if holds else self.nfa.chars([])

    def _class(self, ranges, flags: int) -> tuple[int, int]:
        ranges = _normalize(ranges)
        return self.nfa.chars(_fold(ranges) if flags & re.IGNORECASE else ranges)

    def node(self, op, av, flags: int, first: bool, last: bool) -> tuple[int, int]:
        nfa = self.nfa
        if op is C.LITERAL:
            return self._class([(av, av)], flags)
        if op is C.NOT_LITERAL:
            chars = _fold([(av, av)]) if flags & re.IGNORECASE else [(av, av)]
            return nfa.chars(_complement(chars))
        if op is C.ANY:
            return nfa.chars([(0, _UNICODE_MAX)] if flags & re.DOTALL
                             else _complement([(0x0A, 0x0A)]))
        if op is C.IN:
            return self._class(_class_ranges(av, flags), 0)
        if op is C.BRANCH:
            return nfa.alternate([self.sequence(seq.data, flags, first, last)
                                  for seq in av[1]])
        if op is C.SUBPATTERN:
            _, add, remove, pattern = av
            if (add | remove) & ~(re.IGNORECASE | re.DOTALL):
                raise UnsupportedRegex("a group flag other than i and s")
            return self.sequence(pattern.data, (flags | add) & ~remove, first, last)
        if op in (C.MAX_REPEAT, C.MIN_REPEAT):
            low, high, pattern = av
            if low > MAX_REPEAT or (high is not C.MAXREPEAT and high > MAX_REPEAT):
                raise UnsupportedRegex(f"a repetition past {MAX_REPEAT}")

            def copy():
                return self.sequence(pattern.data, flags, False, False)

            parts = [copy() for _ in range(low)]
            if high is C.MAXREPEAT:
                parts.append(nfa.star(copy()))
            else:
                parts += [nfa.optional(copy()) for _ in range(high - low)]
            return nfa.concat(parts)
        if op is C.AT:
            if av in (C.AT_BEGINNING, C.AT_BEGINNING_STRING) and first:
                return nfa.empty()  # a full match starts at the beginning anyway
            if av in (C.AT_END, C.AT_END_STRING) and last:
                return nfa.empty()
            raise UnsupportedRegex(f"the anchor or boundary {str(av).lower()} inside the "
                                   f"pattern")
        names = {C.GROUPREF: "a backreference", C.GROUPREF_EXISTS: "a conditional group",
                 C.ASSERT: "a lookahead or lookbehind", C.ASSERT_NOT: "a negative lookaround",
                 C.ATOMIC_GROUP: "an atomic group", C.POSSESSIVE_REPEAT: "a possessive repeat"}
        raise UnsupportedRegex(names.get(op, f"the construct {str(op).lower()}"))


def _chars_of(op, av, flags: int) -> list[tuple[int, int]] | None:
    """The characters one item matches when it matches exactly one character."""
    if op is C.LITERAL:
        return _fold([(av, av)]) if flags & re.IGNORECASE else [(av, av)]
    if op is C.IN:
        return _class_ranges(av, flags)
    if op is C.NOT_LITERAL:
        return _complement(_fold([(av, av)]) if flags & re.IGNORECASE else [(av, av)])
    if op is C.ANY:
        return [(0, _UNICODE_MAX)] if flags & re.DOTALL else _complement([(0x0A, 0x0A)])
    return None


def _intersects(a, b) -> bool:
    return any(lo <= h and l <= hi for lo, hi in a for l, h in b)


def _class_ranges(items, flags: int) -> list[tuple[int, int]]:
    ranges: list[tuple[int, int]] = []
    negate = False
    for op, av in items:
        if op is C.NEGATE:
            negate = True
        elif op is C.LITERAL:
            ranges.append((av, av))
        elif op is C.RANGE:
            ranges.append(av)
        elif op is C.CATEGORY:
            ranges += _category(av)
        else:
            raise UnsupportedRegex(f"the class item {str(op).lower()}")
    if flags & re.IGNORECASE:
        ranges = _fold(ranges)
    return _complement(ranges) if negate else _normalize(ranges)


def _category(av) -> list[tuple[int, int]]:
    table = {C.CATEGORY_DIGIT: _DIGIT, C.CATEGORY_WORD: _WORD, C.CATEGORY_SPACE: _SPACE}
    for positive, negative in ((C.CATEGORY_DIGIT, C.CATEGORY_NOT_DIGIT),
                               (C.CATEGORY_WORD, C.CATEGORY_NOT_WORD),
                               (C.CATEGORY_SPACE, C.CATEGORY_NOT_SPACE)):
        if av is positive:
            return table[positive]
        if av is negative:
            return _complement(table[positive])
    raise UnsupportedRegex(f"the class {str(av).lower()}")


# ----------------------------------------------------------------------------- RE2 syntax

_POSIX = {
    "alnum": "0-9A-Za-z", "alpha": "A-Za-z", "ascii": "\\x00-\\x7f", "blank": "\\t ",
    "cntrl": "\\x00-\\x1f\\x7f", "digit": "0-9", "graph": "!-~", "lower": "a-z",
    "print": " -~", "punct": "!-/:-@\\[-`{-~", "space": "\\t\\n\\v\\f\\r ",
    "upper": "A-Z", "word": "0-9A-Za-z_", "xdigit": "0-9A-Fa-f",
}
"""RE2's POSIX classes (ASCII), as the ranges Python's parser reads inside a class"""


def _re2_classes(pattern: str) -> str:
    """`pattern` with RE2's `[[:alpha:]]` classes written as Python reads them (Python takes
    `[:alpha:]` as the characters `[:alph`); UnsupportedRegex for RE2 syntax Python reads
    otherwise: a negated POSIX class, or `{,n}` (text in RE2, a repeat in Python)."""
    out, i, in_class, first = [], 0, False, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            out.append(pattern[i:i + 2])
            i += 2
            first = False
            continue
        if in_class and pattern.startswith("[:", i):
            end = pattern.find(":]", i + 2)
            name = pattern[i + 2:end] if end > 0 else ""
            if name.startswith("^") or name not in _POSIX:
                raise UnsupportedRegex(f"the class [:{name}:]")
            out.append(_POSIX[name])
            i = end + 2
            first = False
            continue
        if not in_class and pattern.startswith("{,", i):
            raise UnsupportedRegex("'{,' (RE2 reads it as text, Python as a repeat)")
        if ch == "[" and not in_class:
            in_class, first = True, True
            out.append(ch)
            i += 1
            if pattern.startswith("^", i):
                out.append("^")
                i += 1
            continue
        if ch == "]" and in_class and not first:
            in_class = False
        first = False
        out.append(ch)
        i += 1
    return "".join(out)


# ----------------------------------------------------------------------------- DFA


@functools.lru_cache(maxsize=64)
def compile_dfa(pattern: str) -> tuple[np.ndarray, np.ndarray]:
    """(next, accept) of `pattern`'s full match over UTF-8 bytes: `next` int32 [states, 256]
    (state 0 the start), `accept` uint8 [states], both read-only (cached: the importer
    checks the pattern, the lowering builds the kernel's tables from it). UnsupportedRegex
    says why not."""
    try:
        tree = sre.parse(_re2_classes(pattern))
    except re.error as err:
        raise UnsupportedRegex(f"cannot parse the pattern: {err}") from None
    flags = tree.state.flags
    if flags & ~(re.IGNORECASE | re.DOTALL | re.UNICODE):
        raise UnsupportedRegex("a flag other than i and s")
    nfa = _NFA()
    start, end = _Builder(nfa).sequence(tree.data, flags, True, True)

    def closure(states) -> frozenset[int]:
        seen, stack = set(states), list(states)
        while stack:
            for t in nfa.eps[stack.pop()]:
                if t not in seen:
                    seen.add(t)
                    stack.append(t)
        return frozenset(seen)

    first = closure([start])
    index = {first: 0}
    order = [first]
    rows: list[np.ndarray] = []
    k = 0
    while k < len(order):
        current = order[k]
        targets: list[set[int]] = [set() for _ in range(256)]
        for s in current:
            for lo, hi, to in nfa.moves[s]:
                for b in range(lo, hi + 1):
                    targets[b].add(to)
        row = np.empty(256, np.int32)
        for b in range(256):
            key = closure(targets[b])
            if key not in index:
                if len(order) >= MAX_STATES:
                    raise UnsupportedRegex(f"its DFA has more than {MAX_STATES} states")
                index[key] = len(order)
                order.append(key)
            row[b] = index[key]
        rows.append(row)
        k += 1
    accept = np.array([end in s for s in order], np.uint8)
    table = np.stack(rows)
    table.flags.writeable = accept.flags.writeable = False
    return table, accept


def full_match(next_state: np.ndarray, accept: np.ndarray, text: str) -> bool:
    """Walk the DFA over `text`'s UTF-8 bytes (what the kernel does)."""
    state = 0
    for b in text.encode("utf-8"):
        state = int(next_state[state, b])
    return bool(accept[state])




MAX_TABLE = 1 << 24
"""the most entries (states x byte classes) a key trie's table may have (64 MiB)"""


@functools.lru_cache(maxsize=16)
def compile_key_trie(keys: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A DFA over UTF-8 bytes telling which of `keys` a string is: (classes uint8[256], the
    byte class of each byte value; next int32 [states, classes], state 0 the root and state
    1 the dead state; which int32 [states], the index of the key a string ending there is,
    its first occurrence, or -1). UnsupportedRegex when the table would pass MAX_TABLE."""
    encoded = [k.encode("utf-8") for k in keys]
    used = sorted({b for k in encoded for b in k})
    classes = np.zeros(256, np.uint8)  # class 0: a byte no key has
    for c, b in enumerate(used, start=1):
        classes[b] = c
    width = len(used) + 1
    children: list[dict[int, int]] = [{}, {}]
    which = [-1, -1]
    for index, key in enumerate(encoded):
        state = 0
        for b in key:
            nxt = children[state].get(b)
            if nxt is None:
                nxt = len(children)
                children[state][b] = nxt
                children.append({})
                which.append(-1)
            state = nxt
        if which[state] < 0:
            which[state] = index
    if len(children) * width > MAX_TABLE:
        raise UnsupportedRegex(f"a key table of {len(children)} x {width} entries")
    table = np.ones((len(children), width), np.int32)  # to the dead state
    for state, edges in enumerate(children):
        for b, to in edges.items():
            table[state, classes[b]] = to
    out = classes, table, np.array(which, np.int32)
    for a in out:
        a.flags.writeable = False
    return out


__all__ = ["MAX_STATES", "MAX_TABLE", "UnsupportedRegex", "compile_dfa", "compile_key_trie",
           "full_match"]
