"""Facts about symbolic sizes: proofs of orders and equalities, and guards where the symbols
leave them open.

Shape rules ask two kinds of questions of sizes (dialects/symbolic_dims.py): an order (a
convolution's output is at least 1, a slice bound lies inside its axis) and an equality (the
inner dimensions of a MatMul, two broadcast dimensions). `decide_nonnegative` and
`decide_equal` answer them for every value of the symbols (all at least 0) or say that the
answer depends on the values:

- bounds by interval arithmetic first;
- then each `min` / `max` is split into its cases (the expression must hold with the atom
  replaced by each argument), and each `floordiv(P, d)` by a constant is replaced by
  `(P - r) / d` with a fresh `r` in [0, d-1], so `H - 2*floordiv(H, 2) >= 0` is proved;
- an equality of quasi-affine sizes (sums of symbols and floor divisions by constants, what
  convolution and pooling rules produce) is decided exactly by evaluating the difference on a
  grid of one period in every symbol (`floordiv(H, 2) + floordiv(H+1, 2) == H`).

What the symbols leave open, a rule `require`s: a condition that the model is only valid
under (the inner dimensions `?a` and `?b` of a MatMul are equal; a convolution's input is at
least its window). Under `recording()` (the importer, one node at a time) such a condition
becomes a `Guard`, which the compiled model checks at run time before it computes anything
that assumed it (passes/insert_checks.py); a condition that can never hold is a
`ValueError` at once. Outside `recording()` (op verifiers, rewrite patterns re-deriving
types that the importer already guarded) the condition is assumed, as torch's ShapeEnv
assumes the guards it has emitted.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from math import gcd

from onnxc.dialects.size_bounds import Interval, bounds
from onnxc.dialects.size_quasi_affine import quasi_affine_constant
from onnxc.dialects.size_text import parse_dim
from onnxc.dialects.symbolic_dims import (
    Dim,
    SizeFn,
    SymDim,
    from_terms,
    simplify,
)

_DEPTH = 6
"""Case splits and substitutions per proof: min/max nest little in real shape rules."""


# ---------------------------------------------------------------------- proofs


def decide_nonnegative(d: Dim, ranges: Mapping[str, Interval] | None = None) -> bool | None:
    """True when d >= 0 for every value of the symbols, False when d < 0 for every value,
    None when it depends on them."""
    if isinstance(d, int):
        return d >= 0
    if not ranges:
        return _decided_everywhere(d)
    return _decide_nonnegative(d, ranges)


@functools.lru_cache(maxsize=4096)
def _decided_everywhere(d: SymDim) -> bool | None:
    """`decide_nonnegative` over every value of the symbols, remembered: min/max
    simplification asks about the same few differences again and again (Mask R-CNN over
    symbolic image sizes: 20,800 questions, 223 different ones, a third of its compile)."""
    return _decide_nonnegative(d, None)


def _decide_nonnegative(d: SymDim, ranges: Mapping[str, Interval] | None) -> bool | None:
    low, high = bounds(d, ranges)
    if low is not None and low >= 0:
        return True
    if high is not None and high < 0:
        return False
    if _prove(d, dict(ranges or {}), _DEPTH):
        return True
    if _prove(-d - 1, dict(ranges or {}), _DEPTH):
        return False
    return None


def decide_equal(a: Dim, b: Dim) -> bool | None:
    """True when a == b for every value of the symbols, False when never, None when it
    depends on them."""
    if a == b:
        return True
    diff = a - b
    if isinstance(diff, int):
        return diff == 0
    above, below = decide_nonnegative(diff), decide_nonnegative(-diff)
    if above and below:
        return True
    if above is False or below is False or _prove(diff - 1, {}, _DEPTH) \
            or _prove(-diff - 1, {}, _DEPTH):
        return False
    if _quasi_affine_zero(diff):
        return True
    return None


def _prove(d: Dim, ranges: dict[str, Interval], depth: int) -> bool:
    """Whether d >= 0 for every value in `ranges` (symbols not named: at least 0)."""
    if isinstance(d, int):
        return d >= 0
    low, _ = bounds(d, ranges)
    if low is not None and low >= 0:
        return True
    if depth == 0:
        return False
    fn = _first_fn(d)
    if fn is None:
        return False
    if fn.fn in ("min", "max"):
        if _monotone(d, fn, ranges) == (1 if fn.fn == "max" else -1) and any(
                _prove(substitute(d, fn, arg), ranges, depth - 1) for arg in fn.args):
            # d grows with a max (shrinks with a min): each argument bounds it from below
            # at every size, so one bound that is >= 0 proves it
            return True
        # the atom is one of its arguments, whichever it is: every case must hold (each
        # narrowing the ranges: max(3, H) + min(-3, -H) is 0 in both)
        return all(_prove_case(d, fn, arg, ranges, depth) for arg in fn.args)
    numerator, divisor = fn.args
    if not isinstance(divisor, int) or _degree(d, fn) > 1:
        return False
    r = f"_r{len(ranges)}"  # floordiv(P, d) = (P - r) / d, 0 <= r < d
    inner = {**ranges, r: (0, divisor - 1)}
    scaled = substitute(d * divisor, fn, numerator - SymDim.symbol(r), divisor)
    return _prove(scaled, inner, depth - 1)


def _prove_case(d: SymDim, fn: SizeFn, arg: Dim, ranges: dict[str, Interval],
                depth: int) -> bool:
    """d >= 0 where min/max `fn` is `arg`, which is then at most (at least) the other
    arguments: a condition on one symbol narrows its range (max(3, H) is 3 where H <= 3),
    and a case no value reaches holds."""
    narrowed = dict(ranges)
    for other in fn.args:
        if other is arg:
            continue
        condition = arg - other if fn.fn == "max" else other - arg  # >= 0 in this case
        if not _narrow(narrowed, condition):
            return True
    return _prove(substitute(d, fn, arg), narrowed, depth - 1)


def _narrow(ranges: dict[str, Interval], condition: Dim) -> bool:
    """Narrow `ranges` by condition >= 0 where it is a * s + k in one symbol s; False when
    no value satisfies it."""
    if isinstance(condition, int):
        return condition >= 0
    linear = [m for m in condition.terms if m]
    if len(linear) != 1 or len(linear[0]) != 1 or not isinstance(linear[0][0], str):
        return True
    (symbol,) = linear[0]
    a, k = condition.terms[linear[0]], condition.terms.get((), 0)
    low, high = ranges.get(symbol, (0, None))
    if a > 0:  # s >= ceil(-k / a)
        bound = -(k // a)
        low = bound if low is None else max(low, bound)
    else:  # s <= floor(k / -a)
        bound = k // -a
        high = bound if high is None else min(high, bound)
    ranges[symbol] = (low, high)
    return low is None or high is None or low <= high


def _first_fn(d: SymDim) -> SizeFn | None:
    for m in d.terms:
        for atom in m:
            if isinstance(atom, SizeFn):
                return atom
    return None


def _monotone(d: SymDim, atom: SizeFn, ranges: Mapping[str, Interval]) -> int:
    """1 when d grows with `atom` (every term holding it has a positive coefficient and
    non-negative other factors), -1 when it shrinks, 0 otherwise."""
    signs = set()
    for m, c in d.terms.items():
        if atom in m:
            if m.count(atom) > 1:
                return 0
            low = bounds(simplify(SymDim({tuple(a for a in m if a != atom): 1})), ranges)[0]
            if low is None or low < 0:
                return 0
            signs.add(1 if c > 0 else -1)
    return signs.pop() if len(signs) == 1 else 0


def _degree(d: SymDim, atom: SizeFn) -> int:
    return max((m.count(atom) for m in d.terms), default=0)


def substitute(d: Dim, atom: SizeFn, value: Dim, divisor: int = 1) -> Dim:
    """d with `atom` replaced by `value / divisor`; with a divisor, d has been multiplied by
    it and holds the atom at most once per term, so every such term divides exactly."""
    if isinstance(d, int):
        return d
    total: Dim = 0
    for m, c in d.terms.items():
        count = m.count(atom)
        if not count:
            total = total + SymDim({m: c})
            continue
        term: Dim = (c // divisor) * simplify(SymDim({tuple(a for a in m if a != atom): 1}))
        for _ in range(count):
            term = term * value
        total = total + term
    return total


# ---------------------------------------------------------------------- quasi-affine


def _quasi_affine_zero(d: SymDim) -> bool:
    """Whether the quasi-affine d is 0 for every value of its symbols (False when d is not
    quasi-affine or is not 0 somewhere on one period of its symbols)."""
    return quasi_affine_constant(d) == 0


# ---------------------------------------------------------------------- guards


@dataclass(frozen=True)
class Guard:
    """A condition on sizes that a model is only valid under, checked at run time:
    `size >= 0` (relation ">=") or `size == 0` (relation "==")."""

    size: Dim
    relation: str
    reason: str

    def holds(self, values: Mapping[str, int]) -> bool:
        value = self.size if isinstance(self.size, int) else self.size.evaluate(values)
        return value >= 0 if self.relation == ">=" else value == 0

    def text(self) -> str:
        return f"{self.size} {self.relation} 0"

    @staticmethod
    def parse(text: str, reason: str) -> Guard:
        size, relation, zero = text.rsplit(" ", 2)
        if relation not in (">=", "==") or zero != "0":
            raise ValueError(f"'{text}' is not a guard (`size >= 0` or `size == 0`)")
        return Guard(parse_dim(size), relation, reason)


_RECORDER: ContextVar[list[Guard] | None] = ContextVar("size_guards", default=None)


@contextmanager
def recording() -> Iterator[list[Guard]]:
    """Collect the guards that the shape rules run inside need (the importer's, per node)."""
    guards: list[Guard] = []
    token = _RECORDER.set(guards)
    try:
        yield guards
    finally:
        _RECORDER.reset(token)


def _guard(size: Dim, relation: str, reason: str) -> None:
    recorder = _RECORDER.get()
    if recorder is None:
        return
    if isinstance(size, SymDim):  # one form per condition: 8*seq-8 == 0 is seq-1 == 0
        factor = gcd(*size.terms.values())
        size = from_terms({m: c // factor for m, c in size.terms.items()})
        if relation == "==":  # and a == b is b == a
            size = min(size, -size, key=lambda d: (str(d).startswith("-"), str(d)))
    guard = Guard(size, relation, reason)
    if all(g.text() != guard.text() for g in recorder):
        recorder.append(guard)


def require_equal(a: Dim, b: Dim, reason: str) -> None:
    """The model is valid only where a == b: ValueError when never, a guard when that
    depends on the symbols."""
    answer = decide_equal(a, b)
    if answer is False:
        raise ValueError(f"{reason}: {a} != {b}")
    if answer is None:
        _guard(a - b, "==", f"{reason}: {a} == {b}")


def require_at_least(a: Dim, b: Dim, reason: str) -> None:
    """The model is valid only where a >= b: ValueError when never, a guard when that
    depends on the symbols."""
    answer = decide_nonnegative(a - b)
    if answer is False:
        raise ValueError(f"{reason}: {a} < {b}")
    if answer is None:
        _guard(a - b, ">=", f"{reason}: {a} >= {b}")
