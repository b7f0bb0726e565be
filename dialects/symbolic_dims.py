"""Symbolic dimensions: sizes known only at run time, as polynomials in named symbols.

A model input declared `[1, "seq", 768]` has a dimension `seq` that every compile must keep
generic. `SymDim` is such a size: an integer polynomial in symbols (`seq`, `past + seq`,
`12 * seq`, `seq * seq`), normalised so that two sizes are equal exactly when their
polynomials are. It behaves like an int wherever the shape rules only add, multiply and
compare for equality (the importer's and the dialect's rules run unchanged on it, like
torch's SymInt). Whatever needs a concrete number (`int(d)`, `range(d)`, an order that the
symbols do not decide) raises `SymbolicDimError`, a `ValueError`, so a rule that cannot be
symbolic fails loudly instead of computing with a wrong size.

Symbols stand for sizes of at least 1: `seq >= 1` decides `seq > 0`, not `seq > 1`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from math import prod

Monomial = tuple[str, ...]
"""sorted symbol names, repeated for powers; () is the constant term"""


class SymbolicDimError(ValueError):
    """A concrete size was needed where the size is symbolic."""


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def symbol_name(name: str) -> str:
    """An ONNX `dim_param` as a symbol name: characters other than letters, digits and `_`
    become `_` (they would not survive the printed form `past+seq`)."""
    cleaned = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return cleaned if cleaned and not cleaned[0].isdigit() else f"s_{cleaned}"


class SymDim:
    """An integer polynomial in size symbols; build with `SymDim.symbol` and arithmetic."""

    __slots__ = ("_hash", "_terms")

    def __init__(self, terms: Mapping[Monomial, int]):
        self._terms = {m: c for m, c in sorted(terms.items()) if c}
        self._hash = hash(tuple(self._terms.items()))

    @staticmethod
    def symbol(name: str) -> SymDim:
        if not _NAME.fullmatch(name):
            raise SymbolicDimError(f"'{name}' is not a symbol name (letters, digits, _)")
        return SymDim({(name,): 1})

    # ------------------------------------------------------------------ structure

    @property
    def terms(self) -> Mapping[Monomial, int]:
        return self._terms

    def symbols(self) -> set[str]:
        return {s for m in self._terms for s in m}

    def lower_bound(self) -> int | None:
        """The smallest value over symbols >= 1, None when it has no lower bound (a negative
        coefficient on a symbol)."""
        if any(c < 0 for m, c in self._terms.items() if m):
            return None
        return sum(self._terms.values())

    def evaluate(self, values: Mapping[str, int]) -> int:
        """The size for the given symbol values (Python ints: no overflow)."""
        return sum(c * prod(values[s] for s in m) for m, c in self._terms.items())

    # ------------------------------------------------------------------ arithmetic

    @staticmethod
    def _of(value: int | SymDim) -> SymDim:
        if isinstance(value, SymDim):
            return value
        if isinstance(value, bool) or not isinstance(value, int):
            try:
                value = int(value.__index__())  # numpy integers
            except AttributeError:
                return NotImplemented  # type: ignore[return-value]
        return SymDim({(): value})

    def __add__(self, other: int | SymDim) -> int | SymDim:
        o = SymDim._of(other)
        if o is NotImplemented:
            return NotImplemented
        terms = dict(self._terms)
        for m, c in o._terms.items():
            terms[m] = terms.get(m, 0) + c
        return simplify(SymDim(terms))

    __radd__ = __add__

    def __neg__(self) -> SymDim:
        return SymDim({m: -c for m, c in self._terms.items()})

    def __sub__(self, other: int | SymDim) -> int | SymDim:
        o = SymDim._of(other)
        return NotImplemented if o is NotImplemented else self + (-o)

    def __rsub__(self, other: int | SymDim) -> int | SymDim:
        return (-self) + other

    def __mul__(self, other: int | SymDim) -> int | SymDim:
        o = SymDim._of(other)
        if o is NotImplemented:
            return NotImplemented
        terms: dict[Monomial, int] = {}
        for m1, c1 in self._terms.items():
            for m2, c2 in o._terms.items():
                m = tuple(sorted(m1 + m2))
                terms[m] = terms.get(m, 0) + c1 * c2
        return simplify(SymDim(terms))

    __rmul__ = __mul__

    def __floordiv__(self, other: int | SymDim) -> int | SymDim:
        """Exact division only: by an integer dividing every coefficient, or by a polynomial
        of one term (`seq * 768 // seq`)."""
        o = SymDim._of(other)
        if o is NotImplemented:
            return NotImplemented
        if len(o._terms) != 1:
            raise SymbolicDimError(f"cannot divide {self} by {o}")
        ((dm, dc),) = o._terms.items()
        terms: dict[Monomial, int] = {}
        for m, c in self._terms.items():
            rest = list(m)
            for s in dm:
                if s not in rest:
                    raise SymbolicDimError(f"{self} is not a multiple of {o}")
                rest.remove(s)
            if c % dc:
                raise SymbolicDimError(f"{self} is not a multiple of {o}")
            terms[tuple(rest)] = c // dc
        return simplify(SymDim(terms))

    def __rfloordiv__(self, other: int) -> int | SymDim:
        raise SymbolicDimError(f"cannot divide {other} by the symbolic {self}")

    def __mod__(self, other: int | SymDim) -> int:
        try:
            self // other
        except SymbolicDimError:
            raise SymbolicDimError(f"{self} modulo {other} depends on the symbols") from None
        return 0

    # ------------------------------------------------------------------ comparison

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SymDim):
            return self._terms == other._terms
        return False  # normalised: a SymDim is never a plain constant

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return self._hash

    def _compare(self, other: int | SymDim) -> tuple[int | None, int | None]:
        """Bounds of self - other over symbols >= 1: (lowest, highest or None)."""
        diff = self - other
        if isinstance(diff, int):
            return diff, diff
        low = diff.lower_bound()
        high = None
        if all(c <= 0 for m, c in diff.terms.items() if m):
            high = sum(diff.terms.values())
        return low, high

    def __lt__(self, other: int | SymDim) -> bool:
        low, high = self._compare(other)
        if high is not None and high < 0:
            return True
        if low is not None and low >= 0:
            return False
        raise SymbolicDimError(f"whether {self} < {other} depends on the symbols")

    def __ge__(self, other: int | SymDim) -> bool:
        return not self < other

    def __gt__(self, other: int | SymDim) -> bool:
        low, high = self._compare(other)
        if low is not None and low > 0:
            return True
        if high is not None and high <= 0:
            return False
        raise SymbolicDimError(f"whether {self} > {other} depends on the symbols")

    def __le__(self, other: int | SymDim) -> bool:
        return not self > other

    def __bool__(self) -> bool:
        return True  # a non-zero polynomial (zero normalises to the int 0)

    # ------------------------------------------------------------------ concrete values

    def __index__(self) -> int:
        raise SymbolicDimError(f"dimension {self} is symbolic; a fixed size is needed here")

    __int__ = __index__

    def __float__(self) -> float:
        raise SymbolicDimError(f"dimension {self} is symbolic; a fixed size is needed here")

    # ------------------------------------------------------------------ text

    def __str__(self) -> str:
        parts = []
        for m, c in sorted(self._terms.items(), key=lambda t: (-len(t[0]), t[0])):
            factors = ([str(abs(c))] if abs(c) != 1 or not m else []) + list(m)
            text = "*".join(factors)
            parts.append(("-" if c < 0 else "+") + text)
        text = "".join(parts)
        return text.removeprefix("+")

    def __repr__(self) -> str:
        return f"SymDim({self})"


Dim = int | SymDim


def simplify(d: SymDim | int) -> Dim:
    """A constant polynomial as its int."""
    if isinstance(d, SymDim):
        if not d.terms:
            return 0
        if set(d.terms) == {()}:
            return d.terms[()]
    return d


_TERM = re.compile(r"\s*([+-])?\s*([^+-]+)")


def parse_dim(text: str) -> Dim:
    """The inverse of `str(SymDim)`: `seq`, `2*seq+1`, `past+seq`, `seq*seq`."""
    total: Dim = 0
    pos = 0
    text = text.strip()
    if not text:
        raise SymbolicDimError("empty dimension")
    while pos < len(text):
        m = _TERM.match(text, pos)
        if m is None or (pos and not m.group(1)):
            raise SymbolicDimError(f"'{text}' is not a dimension polynomial")
        term: Dim = -1 if m.group(1) == "-" else 1
        for factor in m.group(2).split("*"):
            factor = factor.strip()
            if factor.isdigit():
                term = term * int(factor)
            elif _NAME.fullmatch(factor):
                term = term * SymDim.symbol(factor)
            else:
                raise SymbolicDimError(f"'{text}' is not a dimension polynomial")
        total = total + term
        pos = m.end()
    return total


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
