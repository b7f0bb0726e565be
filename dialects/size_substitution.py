"""Sizes with some of their symbols given: the values folding found for them
(`substituted`, passes/size_specialization.py), or a range from 0 up to a capacity (`monotone_upper`:
the room a buffer needs before the run decides the size; lowering/graph_to_loops/convert_graph_to_loops.py and
runtime/symbolic_shapes.py)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from onnxc.dialects.size_bounds import bounds
from onnxc.dialects.symbolic_dims import (
    Atom,
    Dim,
    SymDim,
    floordiv,
    sym_max,
    sym_min,
)


def substituted(d: Dim, values: Mapping[str, Dim]) -> Dim:
    """`d` with the symbols `values` names replaced by their sizes (ints or expressions),
    in canonical form: a run symbol bound to a constant once folding found its value."""
    if isinstance(d, int) or not d.symbols() & set(values):
        return d
    total: Dim = 0
    for monomial, coefficient in d.terms.items():
        term: Dim = coefficient
        for atom in monomial:
            term = term * _substituted_atom(atom, values)
        total = total + term
    return total


def _substituted_atom(atom: Atom, values: Mapping[str, Dim]) -> Dim:
    if isinstance(atom, str):
        return values.get(atom, SymDim.symbol(atom))
    args = [substituted(a, values) for a in atom.args]
    if atom.fn == "floordiv":
        return floordiv(*args)
    return sym_min(*args) if atom.fn == "min" else sym_max(*args)


def monotone_upper(d: Dim, symbols: Iterable[str]) -> Dim | None:
    """A size at least `d` for every value of `symbols` from 0 up to theirs, and
    non-decreasing in them: each occurrence of one that `d` decreases in is replaced by 0.
    What a buffer allocated while they are still capacities needs: a run-time slice
    `min(end, n) - min(start, n)` gets room for `min(end, n)`. None when the structure does
    not say the direction (a product of factors that may be negative, a division by one)."""
    names = set(symbols)
    if isinstance(d, int) or not d.symbols() & names:
        return d
    return _upper(d, names, 1)


def _upper(d: Dim, names: set[str], sign: int) -> Dim | None:
    if isinstance(d, int) or not d.symbols() & names:
        return d
    total: Dim = 0
    for monomial, coefficient in d.terms.items():
        polarity = sign if coefficient > 0 else -sign
        if len(monomial) > 1 and not all(_nonnegative_atom(a) for a in monomial):
            return None  # a product grows with each factor only when none is negative
        term: Dim = coefficient
        for atom in monomial:
            factor = _upper_atom(atom, names, polarity)
            if factor is None:
                return None
            term = term * factor
        total = total + term
    return total


def _nonnegative_atom(atom: Atom) -> bool:
    low = bounds(SymDim({(atom,): 1}))[0]
    return low is not None and low >= 0


def _upper_atom(atom: Atom, names: set[str], polarity: int) -> Dim | None:
    if isinstance(atom, str):
        return 0 if atom in names and polarity < 0 else SymDim.symbol(atom)
    if atom.fn == "floordiv":
        numerator, divisor = atom.args
        if not isinstance(divisor, int) and divisor.symbols() & names:
            return None
        upper = _upper(numerator, names, polarity)
        return None if upper is None else floordiv(upper, divisor)
    args = [_upper(a, names, polarity) for a in atom.args]
    if any(a is None for a in args):
        return None
    return sym_min(*args) if atom.fn == "min" else sym_max(*args)  # type: ignore[arg-type]


__all__ = ["monotone_upper", "substituted"]
