"""Quasi-affine sizes: sums of size symbols and floor divisions by constants
(`floordiv(H+1, 2) + floordiv(H, 2)`), and the affine polynomial such a size equals for
every value of its symbols, when it equals one (that one is `H`).

A quasi-affine size is a * x + p(x mod L) for L the lcm of its divisors, so evaluating it
over two periods of each symbol decides whether p is constant. symbolic_dims.py's canonical
forms replace floor divisions that cancel out by that polynomial, and size_facts.py proves
sizes constant with it. The sizes are symbolic_dims' `SymDim`s; symbolic_dims imports this
module, so it builds them from the class of the size it is given.
"""

from __future__ import annotations

import itertools
from math import lcm
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from onnxc.dialects.symbolic_dims import Dim, SymDim

def affine_equivalent(d: SymDim) -> Dim | None:
    """The affine polynomial sum(a_i * x_i) + c that the quasi-affine d equals for every
    value of its symbols, if one does: d is a * x + p(x mod L) for L the lcm of its
    divisors, so the slopes are its growth over one period, and p must be constant."""
    period = quasi_period(d)
    symbols = sorted(d.symbols())
    if period is None or not symbols or (2 * period) ** len(symbols) > _GRID:
        return None
    zero = dict.fromkeys(symbols, 0)
    base = d.evaluate(zero)
    slopes = {}
    for s in symbols:
        rise = d.evaluate({**zero, s: period}) - base
        if rise % period:
            return None
        slopes[s] = rise // period
    for point in itertools.product(range(2 * period), repeat=len(symbols)):
        values = dict(zip(symbols, point))
        if d.evaluate(values) != base + sum(slopes[s] * values[s] for s in symbols):
            return None
    result: Dim = base
    for s in symbols:
        result = result + slopes[s] * type(d).symbol(s)  # SymDim: this module cannot import it
    return result


_GRID = 4096
"""Points evaluated at most to find that a quasi-affine size is a constant."""


def quasi_affine_constant(d: Dim) -> int | None:
    """The constant that the quasi-affine d (sums of symbols and floor divisions by
    constants) equals for every value of its symbols, else None
    (`floordiv(H, 2) + floordiv(H+1, 2) - H` is 0)."""
    if isinstance(d, int):
        return d
    affine = affine_equivalent(d)
    return affine if isinstance(affine, int) else None


def quasi_period(d: Dim) -> int | None:
    """A period of the quasi-affine d's periodic part (1 without divisions): the lcm over
    its floor divisions of (the divisor times its numerator's period: floordiv(A, k) of an
    A that grows by a * L over L grows by a * L over k * L); None when d is not
    quasi-affine (a product of atoms, min, max, a symbolic divisor)."""
    if isinstance(d, int):
        return 1
    period = 1
    for m in d.terms:
        if len(m) > 1:
            return None
        for atom in m:
            if isinstance(atom, str):
                continue
            if atom.fn != "floordiv" or not isinstance(atom.args[1], int):
                return None
            inner = quasi_period(atom.args[0])
            if inner is None:
                return None
            period = lcm(period, inner * atom.args[1])
    return period
