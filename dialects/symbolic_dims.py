"""Symbolic sizes: sizes known only at run time, as expressions over named size symbols.

A model input declared `[1, "seq", 768]` has a dimension `seq` that every compile must keep
generic. `SymDim` is such a size: an integer polynomial whose atoms are size symbols
(`seq`, `past`) or the functions that shape rules compute with, floor division, `min` and
`max` (`floordiv(H-1, 2)+1`, `min(seq, 128)`, `past+seq`, `12*seq`). This is the algebra of
MLIR's affine and semi-affine expressions: ceiling division and modulo are written with
floor division (`ceildiv(a, b) = floordiv(a+b-1, b)`, `mod(a, b) = a - b*floordiv(a, b)`).

Canonical forms make equal sizes compare equal where it matters: the polynomial's terms are
merged and sorted (so a - a is 0 whatever a is); `floordiv(P, d)` by a constant keeps in its
argument only the terms of P whose coefficients are not multiples of d, reduced into [0, d)
and divided by their common factor with d (`floordiv(2*H+5, 2)` is `H+2`, `floordiv(-H, 2)`
is `-H+floordiv(H, 2)`); floor divisions that cancel out are the polynomial they equal
(`floordiv(H+1, 2)+floordiv(H, 2)` is `H`); `min` and `max` flatten, drop arguments another
one provably bounds, and absorb the polynomial they are added to (`seq+1-max(1, seq)` is
`min(1, seq)`). Equal sizes of different forms (`H-floordiv(H, 2)` and `floordiv(H+1, 2)`)
are equal to `size_facts.decide_equal`; the shape rules write a ceiling as `ceildiv`, one
form.

It behaves like an int wherever shape rules add, multiply, divide and compare (the
importer's and the dialect's rules run unchanged on it, like torch's SymInt): `//` and `%`
are floor division and modulo, `sym_min` / `sym_max` are min and max. Whatever needs a
concrete number (`int(d)`, `range(d)`, an order that the symbols do not decide) raises
`SymbolicDimError`, a `ValueError`, so a rule that cannot be symbolic fails loudly instead of
computing with a wrong size. Orders and equalities the symbols leave open are decided, or
turned into run-time guards, by `dialects/size_facts.py`.

Their text form is parsed by `size_text.parse_dim`; sizes with some symbols given (a value,
or a range up to a capacity) are in `size_substitution.py`, their bounds by interval
arithmetic in `size_bounds.py`, sums of floor divisions in `size_quasi_affine.py`.

Symbols stand for sizes: every symbol is at least 0 (`seq >= 0` decides `past+seq >= seq`,
not `seq > 0`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from math import gcd, prod

from onnxc.dialects.size_bounds import bounds
from onnxc.dialects.size_quasi_affine import affine_equivalent, quasi_period


class SymbolicDimError(ValueError):
    """A concrete size was needed where the size is symbolic."""


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
FUNCTIONS = ("floordiv", "min", "max")
"""The compound atoms; `ceildiv` and `mod` are parsed into floor divisions."""


def symbol_name(name: str) -> str:
    """An ONNX `dim_param` as a symbol name: characters other than letters, digits and `_`
    become `_` (they would not survive the printed form `past+seq`)."""
    cleaned = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return cleaned if cleaned and not cleaned[0].isdigit() else f"s_{cleaned}"


class SizeFn:
    """A compound atom: `floordiv(p, d)` (d a positive constant or a size), `min(a, b, ...)`
    or `max(a, b, ...)`, its arguments already canonical."""

    __slots__ = ("_hash", "args", "fn", "text")

    def __init__(self, fn: str, args: tuple[Dim, ...]):
        self.fn = fn
        self.args = args
        self.text = f"{fn}({', '.join(str(a) for a in args)})"
        self._hash = hash(self.text)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SizeFn) and self.text == other.text

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return self.text

    def symbols(self) -> set[str]:
        return {s for a in self.args if isinstance(a, SymDim) for s in a.symbols()}

    def evaluate(self, values: Mapping[str, int]) -> int:
        args = [a if isinstance(a, int) else a.evaluate(values) for a in self.args]
        if self.fn == "floordiv":
            if args[1] == 0:
                raise SymbolicDimError(f"{self.text}: division by zero")
            return args[0] // args[1]
        return min(args) if self.fn == "min" else max(args)


Atom = str | SizeFn
Monomial = tuple[Atom, ...]
"""atoms sorted by `_atom_key`, repeated for powers; () is the constant term"""


def _atom_key(atom: Atom) -> tuple[int, str]:
    return (0, atom) if isinstance(atom, str) else (1, atom.text)


def _compound(m: Monomial) -> bool:
    """Whether `m` holds a floordiv, min or max (atoms sort symbols first: the last tells)."""
    return bool(m) and not isinstance(m[-1], str)


_MONOMIAL_KEYS: dict[Monomial, tuple] = {}


def _monomial_key(m: Monomial) -> tuple:
    key = _MONOMIAL_KEYS.get(m)
    if key is None:
        key = _MONOMIAL_KEYS[m] = tuple(_atom_key(a) for a in m)
    return key


class SymDim:
    """An integer polynomial over size atoms; build with `SymDim.symbol` and arithmetic."""

    __slots__ = ("_hash", "_terms")

    def __init__(self, terms: Mapping[Monomial, int]):
        if len(terms) > 1:
            self._terms = {m: terms[m] for m in sorted(terms, key=_monomial_key) if terms[m]}
        else:
            self._terms = {m: c for m, c in terms.items() if c}
        self._hash = hash(tuple(self._terms.items()))

    @staticmethod
    def symbol(name: str) -> SymDim:
        if not _NAME.fullmatch(name) or name in FUNCTIONS or name in ("ceildiv", "mod"):
            raise SymbolicDimError(f"'{name}' is not a symbol name (letters, digits, _)")
        return SymDim({(name,): 1})

    # ------------------------------------------------------------------ structure

    @property
    def terms(self) -> Mapping[Monomial, int]:
        return self._terms

    def symbols(self) -> set[str]:
        found: set[str] = set()
        for m in self._terms:
            for atom in m:
                if isinstance(atom, str):
                    found.add(atom)
                else:
                    found |= atom.symbols()
        return found

    def atoms(self) -> set[Atom]:
        return {a for m in self._terms for a in m}

    def is_polynomial(self) -> bool:
        """Whether every atom is a symbol (no floor division, min or max)."""
        return all(isinstance(a, str) for m in self._terms for a in m)

    def lower_bound(self) -> int | None:
        """The smallest value over symbols >= 0, None when no constant bounds it."""
        return bounds(self)[0]

    def evaluate(self, values: Mapping[str, int]) -> int:
        """The size for the given symbol values (Python ints: no overflow)."""
        total = 0
        for m, c in self._terms.items():
            total += c * prod(values[a] if isinstance(a, str) else a.evaluate(values)
                              for a in m)
        return total

    # ------------------------------------------------------------------ arithmetic

    @staticmethod
    def _of(value: object) -> SymDim:
        if isinstance(value, SymDim):
            return value
        if isinstance(value, bool) or not isinstance(value, int):
            try:
                value = int(value.__index__())  # type: ignore[attr-defined]  # numpy ints
            except AttributeError:
                return NotImplemented  # type: ignore[return-value]
        return SymDim({(): value})

    def __add__(self, other: int | SymDim) -> Dim:
        o = SymDim._of(other)
        if o is NotImplemented:
            return NotImplemented
        terms = dict(self._terms)
        for m, c in o._terms.items():
            terms[m] = terms.get(m, 0) + c
        return from_terms(terms)

    __radd__ = __add__

    def __neg__(self) -> Dim:
        return from_terms({m: -c for m, c in self._terms.items()})

    def __pos__(self) -> SymDim:
        return self

    def __sub__(self, other: int | SymDim) -> Dim:
        o = SymDim._of(other)
        if o is NotImplemented:
            return NotImplemented
        terms = dict(self._terms)
        for m, c in o._terms.items():
            terms[m] = terms.get(m, 0) - c
        return from_terms(terms)

    def __rsub__(self, other: int | SymDim) -> Dim:
        o = SymDim._of(other)
        return NotImplemented if o is NotImplemented else o - self

    def __mul__(self, other: int | SymDim) -> Dim:
        o = SymDim._of(other)
        if o is NotImplemented:
            return NotImplemented
        terms: dict[Monomial, int] = {}
        for m1, c1 in self._terms.items():
            for m2, c2 in o._terms.items():
                m = tuple(sorted(m1 + m2, key=_atom_key)) if m1 and m2 else m1 or m2
                terms[m] = terms.get(m, 0) + c1 * c2
        return from_terms(terms)

    __rmul__ = __mul__

    def __floordiv__(self, other: int | SymDim) -> Dim:
        if SymDim._of(other) is NotImplemented:
            return NotImplemented
        return floordiv(self, other)

    def __rfloordiv__(self, other: int) -> Dim:
        return floordiv(other, self)

    def __mod__(self, other: int | SymDim) -> Dim:
        if SymDim._of(other) is NotImplemented:
            return NotImplemented
        return mod(self, other)

    def __rmod__(self, other: int) -> Dim:
        return mod(other, self)

    def __divmod__(self, other: int | SymDim) -> tuple[Dim, Dim]:
        if SymDim._of(other) is NotImplemented:
            return NotImplemented
        return floordiv(self, other), mod(self, other)

    # ------------------------------------------------------------------ comparison

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SymDim):
            return self._terms == other._terms
        return False  # canonical: a SymDim is never a plain constant

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return self._hash

    def __lt__(self, other: int | SymDim) -> bool:
        return _decide(other - self - 1, f"{self} < {other}")

    def __le__(self, other: int | SymDim) -> bool:
        return _decide(other - self, f"{self} <= {other}")

    def __gt__(self, other: int | SymDim) -> bool:
        return _decide(self - other - 1, f"{self} > {other}")

    def __ge__(self, other: int | SymDim) -> bool:
        return _decide(self - other, f"{self} >= {other}")

    def __bool__(self) -> bool:
        low, high = bounds(self)
        if (low is not None and low > 0) or (high is not None and high < 0):
            return True
        raise SymbolicDimError(f"whether {self} is 0 depends on the symbols")

    # ------------------------------------------------------------------ concrete values

    def __index__(self) -> int:
        raise SymbolicDimError(f"dimension {self} is symbolic; a fixed size is needed here")

    __int__ = __index__

    def __float__(self) -> float:
        raise SymbolicDimError(f"dimension {self} is symbolic; a fixed size is needed here")

    # ------------------------------------------------------------------ text

    def __str__(self) -> str:
        # with two compound atoms or more, they print first: read back left to right, a
        # polynomial term before them would be absorbed into the first min or max alone
        # (`from_terms`), which the canonical form did not do
        extrema_first = sum(map(_compound, self._terms)) > 1
        parts = []
        for m, c in sorted(self._terms.items(), key=lambda t: (
                extrema_first and not _compound(t[0]), -len(t[0]), _monomial_key(t[0]))):
            factors = ([str(abs(c))] if abs(c) != 1 or not m else []) + [str(a) for a in m]
            parts.append(("-" if c < 0 else "+") + "*".join(factors))
        return "".join(parts).removeprefix("+")

    def __repr__(self) -> str:
        return f"SymDim({self})"


Dim = int | SymDim


def simplify(d: SymDim | int) -> Dim:
    """A constant polynomial as its int."""
    if isinstance(d, SymDim):
        if not d.terms:
            return 0
        if len(d.terms) == 1 and () in d.terms:
            return d.terms[()]
    return d


def from_terms(terms: dict[Monomial, int]) -> Dim:
    """The canonical Dim of `terms` (already merged, so that a - a is 0 whatever a is): a
    sum of one min or max (coefficient 1 or -1) and a polynomial is one min or max of the
    sums (`seq+1-max(1, seq)` is `min(1, seq)`), and floor divisions that cancel out as a
    whole are the polynomial they equal (floordiv(H+1, 2) + floordiv(H, 2) is H)."""
    terms = {m: c for m, c in terms.items() if c}  # a cancelled atom must not count
    compound = [m for m in terms if _compound(m)]
    if not compound:
        return simplify(SymDim(terms))
    if len(compound) > 1:
        pulled = _mirrored_extrema(terms, compound)
        if pulled is None:
            pulled = _pull_common_parts(terms, compound)
        if pulled is not None:
            return pulled
    if len(compound) == 1 and len(terms) > 1 and abs(terms[compound[0]]) == 1 \
            and _lone_extremum(compound[0]) is not None:
        (fn,) = compound[0]
        sign = terms[compound[0]]
        rest = SymDim({m: c for m, c in terms.items() if m != compound[0]})
        other = fn.fn if sign == 1 else ("max" if fn.fn == "min" else "min")
        return _extremum(other, [sign * a + rest for a in fn.args])
    return _cancelled(simplify(SymDim(terms)))


def _mirrored_extrema(terms: dict[Monomial, int], compound: list[Monomial]) -> Dim | None:
    """min(a_i) + max(k - a_i) is k (with one coefficient): a crop by max(0, H-4) then a
    pad to a fixed size sums to that size, however the terms were pushed into the max."""
    for m1 in compound:
        low = _lone_extremum(m1)
        if low is None or low.fn != "min":
            continue
        for m2 in compound:
            high = _lone_extremum(m2)
            if high is None or high.fn != "max" or terms[m1] != terms[m2] \
                    or len(high.args) != len(low.args):
                continue
            for b in high.args:
                k = low.args[0] + b
                if sorted(map(str, (simplify(SymDim._of(k - a)) for a in low.args))) \
                        == sorted(map(str, high.args)):
                    merged = {m: c for m, c in terms.items() if m not in (m1, m2)}
                    for m, c in SymDim._of(k).terms.items():
                        merged[m] = merged.get(m, 0) + terms[m1] * c
                    return from_terms({m: c for m, c in merged.items() if c})
    return None


def _pull_common_parts(terms: dict[Monomial, int], compound: list[Monomial]) -> Dim | None:
    """With two or more compound atoms the sum stays outside them, so a min or max whose
    arguments share a polynomial part gives it up (`min(A+r, A+e) - min(r, s)` is
    `A + min(r, e) - min(r, s)`, however it was built); None when none shares one."""
    merged = dict(terms)
    changed = False
    for m in compound:
        fn = _lone_extremum(m)
        if fn is None:
            continue
        args = [SymDim._of(a) for a in fn.args]
        common = {k: c for k, c in args[0].terms.items()
                  if not _compound(k)
                  and all(a.terms.get(k) == c for a in args[1:])}
        if not common:
            continue
        part, c = SymDim(common), merged.pop(m)
        inner = SymDim._of(_extremum(fn.fn, [a - part for a in args]))
        for k, v in [*common.items(), *inner.terms.items()]:
            merged[k] = merged.get(k, 0) + c * v
        changed = True
    return from_terms({k: v for k, v in merged.items() if v}) if changed else None


def _lone_extremum(m: Monomial) -> SizeFn | None:
    """The atom of a monomial that is one min or max alone."""
    if len(m) == 1 and isinstance(m[0], SizeFn) and m[0].fn in ("min", "max"):
        return m[0]
    return None


def _cancelled(d: Dim) -> Dim:
    """d with the sum of its floor divisions by constants replaced by the polynomial it
    equals, when it equals one (floordiv(H+1, 2) + floordiv(H, 2) is H)."""
    if not isinstance(d, SymDim):
        return d
    quasi = {m: c for m, c in d.terms.items()
             if len(m) <= 1 and quasi_period(SymDim({m: 1})) is not None}
    if sum(bool(m) and not isinstance(m[0], str) for m in quasi) < 2:
        return d
    affine = affine_equivalent(SymDim(quasi))
    if affine is None:
        return d
    rest = SymDim({m: c for m, c in d.terms.items() if m not in quasi})
    return simplify(rest) + affine if rest.terms else affine


# ---------------------------------------------------------------------- the functions


def floordiv(a: Dim, b: Dim) -> Dim:
    """floor(a / b), canonical (see the module docstring)."""
    if isinstance(b, int):
        if b == 0:
            raise SymbolicDimError(f"division of {a} by zero")
        if isinstance(a, int):
            return a // b
        if b < 0:
            return floordiv(-a, -b)
        return _floordiv_constant(a, b)
    if isinstance(a, int) and a == 0:
        return 0
    return _floordiv_symbolic(SymDim._of(a), b)


def _floordiv_constant(p: SymDim, d: int) -> Dim:
    if d == 1:
        return p
    quotient: dict[Monomial, int] = {}
    rest: dict[Monomial, int] = {}
    for m, c in p.terms.items():
        q, r = divmod(c, d)
        if q:
            quotient[m] = q
        if r:
            rest[m] = r
    whole = from_terms(quotient)
    if all(not m for m in rest):  # 0 <= remainder < d
        return whole
    constant = rest.pop((), 0)
    g = gcd(d, *rest.values())
    if g > 1:  # floor((g*X + s) / (g*e)) = floor(X / e) for 0 <= s < g
        rest = {m: c // g for m, c in rest.items()}
        if constant // g:
            rest[()] = constant // g
        d //= g
        if d == 1:
            return whole + from_terms(rest)
    elif constant:
        rest[()] = constant
    numerator = from_terms(rest)
    if isinstance(numerator, int):
        return whole + numerator // d
    low, high = bounds(numerator)
    if low is not None and high is not None and low // d == high // d:
        return whole + low // d
    return whole + SymDim({(SizeFn("floordiv", (numerator, d)),): 1})


def _floordiv_symbolic(p: SymDim, d: SymDim) -> Dim:
    """floor(p / d) for a size d (at least 1 wherever it divides: a guard's business):
    an exact quotient (`(64*b*t - 64*b) / (16*b*t - 16*b)` is 4), else the terms of p that
    d's one monomial divides come out of the division."""
    exact = _exact_quotient(p, d)
    if exact is not None:
        return exact
    whole: Dim = 0
    rest = p
    if len(d.terms) == 1:
        ((dm, dc),) = d.terms.items()
        if dc > 0:
            taken: dict[Monomial, int] = {}
            kept: dict[Monomial, int] = {}
            for m, c in p.terms.items():
                left = list(m)
                if c % dc == 0 and all(a in left and not left.remove(a) for a in dm):
                    taken[tuple(left)] = c // dc
                else:
                    kept[m] = c
            whole = simplify(SymDim(taken))
            rest = SymDim(kept)
            if not kept:
                return whole
    return whole + SymDim({(SizeFn("floordiv", (rest, d)),): 1})


def _exact_quotient(p: SymDim, d: SymDim) -> Dim | None:
    """q with p == q * d, by polynomial division (atoms as variables, leading terms in
    graded order), or None when d does not divide p."""
    def lead(x: SymDim) -> Monomial:
        return max(x.terms, key=lambda m: (len(m), _monomial_key(m)))

    dm = lead(d)
    dc = d.terms[dm]
    quotient: Dim = 0
    rest: Dim = p
    for _ in range(32):
        if isinstance(rest, int):
            return quotient if rest == 0 else None
        rm = lead(rest)
        left = list(rm)
        for atom in dm:
            if atom not in left:
                return None
            left.remove(atom)
        if rest.terms[rm] % dc:
            return None
        term = simplify(SymDim({tuple(left): rest.terms[rm] // dc}))
        quotient = quotient + term
        rest = rest - term * d
    return None


def ceildiv(a: Dim, b: Dim) -> Dim:
    """ceil(a / b) for b > 0: floordiv(a + b - 1, b)."""
    if isinstance(b, int) and b < 0:
        return ceildiv(-a, -b)
    return floordiv(a + b - 1, b)


def mod(a: Dim, b: Dim) -> Dim:
    """a - b * floor(a / b): Python's `%`, which is ONNX's Mod with fmod=0."""
    return a - b * floordiv(a, b)


def sym_min(*args: Dim) -> Dim:
    return _extremum("min", args)


def sym_max(*args: Dim) -> Dim:
    return _extremum("max", args)


def _extremum(fn: str, args: Sequence[Dim]) -> Dim:
    pick = min if fn == "min" else max
    flat: list[Dim] = []
    for a in args:
        inner = _as_fn(a, fn)
        flat.extend(inner.args if inner is not None else [a])
    numbers = [a for a in flat if isinstance(a, int)]
    symbolic: list[SymDim] = []
    for a in flat:
        if isinstance(a, SymDim) and a not in symbolic:
            symbolic.append(a)
    candidates: list[Dim] = [*symbolic, *([pick(numbers)] if numbers else [])]

    from onnxc.dialects.size_facts import decide_nonnegative

    def bounded_by(a: Dim, b: Dim) -> bool:  # b is provably at least as good as a
        return decide_nonnegative(a - b if fn == "min" else b - a) is True

    kept = [a for i, a in enumerate(candidates)
            if not any(j != i and bounded_by(a, b) and not (j > i and bounded_by(b, a))
                       for j, b in enumerate(candidates))]
    if len(kept) == 1:
        return kept[0]
    kept.sort(key=lambda a: (1, str(a)) if isinstance(a, SymDim) else (0, str(a)))
    return SymDim({(SizeFn(fn, tuple(kept)),): 1})


def _as_fn(d: Dim, fn: str) -> SizeFn | None:
    """`d`'s atom when `d` is exactly one call of `fn`."""
    if isinstance(d, SymDim) and len(d.terms) == 1:
        ((m, c),) = d.terms.items()
        if c == 1 and len(m) == 1 and isinstance(m[0], SizeFn) and m[0].fn == fn:
            return m[0]
    return None


# ---------------------------------------------------------------------- comparison


def _decide(diff: Dim, what: str) -> bool:
    """Whether diff >= 0 for every value of the symbols; SymbolicDimError when that
    depends on them (size_facts proves what intervals cannot)."""
    from onnxc.dialects.size_facts import decide_nonnegative

    answer = decide_nonnegative(diff)
    if answer is None:
        raise SymbolicDimError(f"whether {what} depends on the symbols")
    return answer


# ---------------------------------------------------------------------- shapes


def is_static(shape: Iterable[Dim]) -> bool:
    return all(isinstance(d, int) for d in shape)


def symbols_of(shape: Iterable[Dim]) -> set[str]:
    return {s for d in shape if isinstance(d, SymDim) for s in d.symbols()}


def num_elements(shape: Sequence[Dim]) -> Dim:
    """The product of the dimensions (a polynomial when any is symbolic)."""
    total: Dim = 1
    for d in shape:
        total = total * d
    return total


def evaluate_shape(shape: Sequence[Dim], values: Mapping[str, int]) -> tuple[int, ...]:
    return tuple(d if isinstance(d, int) else d.evaluate(values) for d in shape)
