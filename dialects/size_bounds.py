"""Bounds of symbolic sizes by interval arithmetic, every size symbol in [0, inf) unless a
range is given (`seq-1` is in [-1, inf), `floordiv(H, 2)` with H in [4, 9] in [2, 4]).

symbolic_dims.py asks these bounds first (whether a size is 0, a floor division whose
quotient they fix); what intervals cannot decide, size_facts.py proves.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from onnxc.dialects.symbolic_dims import Dim, Monomial, SizeFn

Interval = tuple[int | None, int | None]
"""(lowest, highest); None: unbounded on that side"""

NONNEGATIVE: Interval = (0, None)


def bounds(d: Dim, ranges: Mapping[str, Interval] | None = None) -> Interval:
    """Bounds of `d` by interval arithmetic, every symbol in [0, inf) unless `ranges` says
    otherwise."""
    if isinstance(d, int):
        return d, d
    low: int | None = 0
    high: int | None = 0
    for m, c in d.terms.items():
        lo, hi = _scale(_monomial_bounds(m, ranges), c)
        low = None if low is None or lo is None else low + lo
        high = None if high is None or hi is None else high + hi
    return low, high


def _monomial_bounds(m: Monomial, ranges: Mapping[str, Interval] | None) -> Interval:
    result: Interval = (1, 1)
    for atom in m:
        if isinstance(atom, str):
            interval = ranges.get(atom, NONNEGATIVE) if ranges else NONNEGATIVE
        else:
            interval = _fn_bounds(atom, ranges)
        result = _product(result, interval)
    return result


def _fn_bounds(fn: SizeFn, ranges: Mapping[str, Interval] | None) -> Interval:
    args = [bounds(a, ranges) for a in fn.args]
    if fn.fn == "floordiv":
        (plo, phi), (dlo, _) = args
        if dlo is not None and dlo >= 1:
            if isinstance(fn.args[1], int):
                return (None if plo is None else plo // dlo,
                        None if phi is None else phi // dlo)
            if plo is not None and plo >= 0:
                return 0, None if phi is None else phi // dlo
        return None, None
    lows = [lo for lo, _ in args]
    highs = [hi for _, hi in args]
    if fn.fn == "min":
        return (None if None in lows else min(lows),  # type: ignore[type-var]
                min((h for h in highs if h is not None), default=None))
    return (max((lo for lo in lows if lo is not None), default=None),
            None if None in highs else max(highs))  # type: ignore[type-var]


def _scale(interval: Interval, c: int) -> Interval:
    lo, hi = interval
    lo = None if lo is None else lo * c
    hi = None if hi is None else hi * c
    return (lo, hi) if c >= 0 else (hi, lo)


def _product(a: Interval, b: Interval) -> Interval:
    inf = float("inf")
    ends = [[-inf if a[0] is None else a[0], inf if a[1] is None else a[1]],
            [-inf if b[0] is None else b[0], inf if b[1] is None else b[1]]]
    products = [0 if x == 0 or y == 0 else x * y for x in ends[0] for y in ends[1]]
    lo, hi = min(products), max(products)
    return (None if lo == -inf else int(lo), None if hi == inf else int(hi))
