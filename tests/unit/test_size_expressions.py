"""Symbolic sizes as expressions (dialects/symbolic_dims.py) and the facts proved about them
(dialects/size_facts.py): canonical forms, the values they take, proofs and guards.

Every canonical form is checked against the values: an expression built two ways must
print the same, and must evaluate to what Python's integers give at many sizes (symbols
are sizes: at least 0).
"""

from __future__ import annotations

import itertools
import operator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onnxc.dialects.size_facts import (
    Guard,
    decide_equal,
    decide_nonnegative,
    recording,
    require_at_least,
    require_equal,
)
from onnxc.dialects.size_substitution import monotone_upper
from onnxc.dialects.size_text import parse_dim
from onnxc.dialects.symbolic_dims import (
    SymbolicDimError,
    SymDim,
    ceildiv,
    floordiv,
    mod,
    sym_max,
    sym_min,
)

H, W, SEQ, PAST = (SymDim.symbol(s) for s in ("H", "W", "seq", "past"))
SIZES = [*range(0, 40), 64, 97, 224]


def values_agree(expr, reference, symbols=("H",)) -> None:
    """`expr` (a Dim) equals `reference(**sizes)` at every size in SIZES."""
    for point in itertools.product(SIZES, repeat=len(symbols)):
        sizes = dict(zip(symbols, point))
        value = expr if isinstance(expr, int) else expr.evaluate(sizes)
        assert value == reference(**sizes), (str(expr), sizes)


# ----------------------------------------------------------------------------- canonical


def test_a_stride_2_convolution_has_one_form_however_the_rule_wrote_it():
    conv = (H + 2 * 1 - 3) // 2 + 1  # kernel 3, pads 1, stride 2
    assert conv == ceildiv(H, 2) == floordiv(H + 1, 2)
    assert str(conv) == "floordiv(H+1, 2)"
    assert decide_equal(conv, -(-H // 2)) is True  # H-floordiv(H, 2): another form
    values_agree(conv, lambda H: (H - 1) // 2 + 1)


@pytest.mark.parametrize(("make", "reference"), [
    (lambda: floordiv(2 * H + 5, 2), lambda H: (2 * H + 5) // 2),
    (lambda: floordiv(-H, 2), lambda H: -H // 2),
    (lambda: -floordiv(H, 2), lambda H: -(H // 2)),
    (lambda: mod(H, 4), lambda H: H % 4),
    (lambda: H % 3 + 3 * (H // 3), lambda H: H),
    (lambda: floordiv(6 * H + 4, 4), lambda H: (6 * H + 4) // 4),
    (lambda: ceildiv(H, 32) * 32 - H, lambda H: -(-H // 32) * 32 - H),
    (lambda: floordiv(floordiv(H, 2), 3), lambda H: H // 6),
    (lambda: floordiv(H, W) if False else floordiv(H * 2, 2), lambda H: H),
])
def test_floor_division_and_modulo_keep_their_values(make, reference):
    values_agree(make(), reference)


def test_nested_floor_divisions_do_not_cancel_too_soon():
    """floordiv of a floordiv has the product of the divisors as its period: 2*E - 2*O of
    E = floordiv(floordiv(w+1, 2)+1, 2), O = floordiv(E+1, 2) is no constant (a stride-2
    conv after a stride-2 conv and a stride-2 pool, ResNet's third downsampling)."""
    e = floordiv(floordiv(W + 1, 2) + 1, 2)
    o = floordiv(e + 1, 2)
    values_agree(2 * e - 2 * o, lambda W: 2 * (((W + 1) // 2 + 1) // 2)
                 - 2 * ((((W + 1) // 2 + 1) // 2 + 1) // 2), ("W",))
    assert floordiv(floordiv(W, 2), 2) - floordiv(W, 4) == 0


def test_floor_divisions_that_cancel_are_a_constant():
    assert floordiv(H, 2) + floordiv(H + 1, 2) - H == 0
    # what SAME_UPPER padding of a stride-2, kernel-3 window computes for its end pad
    total = sym_max(0, (ceildiv(H, 2) - 1) * 2 + 3 - H)
    assert total - total // 2 == 1


def test_min_and_max_flatten_drop_what_is_bounded_and_absorb_sums():
    assert sym_min(SEQ, SEQ + PAST) == SEQ  # past >= 0
    assert sym_max(SEQ - 1, 0) == sym_max(0, SEQ - 1)
    assert str(sym_min(H + 3, 10)) == "min(10, H+3)"
    assert sym_min(H + 1, 8) + 2 == sym_min(H + 3, 10)
    assert sym_min(H, W) + 1 == sym_min(H + 1, W + 1)
    assert sym_min(sym_min(H, W), 5) == sym_min(5, H, W)
    assert SEQ + 1 - sym_max(1, SEQ) == sym_min(1, SEQ)
    assert decide_equal(-sym_max(H, 3), sym_min(-3, -H)) is True
    assert sym_min(H, W) - sym_min(H, W) == 0
    values_agree(sym_min(H + 3, 10) - sym_max(H, 2), lambda H: min(H + 3, 10) - max(H, 2))


def test_division_by_a_size_takes_out_its_multiples():
    assert floordiv(H * W + 3 * W, W) == H + 3
    assert str(floordiv(H, W)) == "floordiv(H, W)"
    values_agree(mod(H, W + 1), lambda H, W: H % (W + 1), ("H", "W"))


@pytest.mark.parametrize("text", [
    "seq", "2*seq+1", "past+seq", "floordiv(H+1, 2)", "min(1, seq)", "max(0, seq-1)",
    "2*floordiv(W+31, 32)*H", "min(7, H)+3", "floordiv(H, W)", "-H+2*floordiv(H+1, 2)",
])
def test_printed_sizes_parse_back_to_themselves(text):
    d = parse_dim(text)
    assert str(d) == str(parse_dim(str(d)))
    assert parse_dim(str(d)) == d


def test_ceildiv_and_mod_parse_into_floor_divisions():
    assert parse_dim("ceildiv(W, 32)") == floordiv(W + 31, 32)
    assert parse_dim("mod(H, 3)") == H - 3 * floordiv(H, 3)


@pytest.mark.parametrize("text", ["", "floordiv(H)", "min()", "H+", "2*(H", "foo(H, 2)",
                                  "H // 2"])
def test_malformed_sizes_are_refused(text):
    with pytest.raises(SymbolicDimError):
        parse_dim(text)


def test_a_symbol_may_not_be_named_like_a_function():
    with pytest.raises(SymbolicDimError):
        SymDim.symbol("floordiv")


# ----------------------------------------------------------------------------- proofs


@pytest.mark.parametrize(("diff", "answer"), [
    (SEQ + PAST - SEQ, True),
    (H - 2 * floordiv(H, 2), True),  # H mod 2
    (sym_max(H, 5) - H, True),
    (sym_min(H, W) - W - 1, False),
    (floordiv(H + 1, 2) - 1, None),  # a stride-2 output of an empty input is 0
    (H - W, None),
    (-SEQ - 1, False),
])
def test_orders_are_decided_for_every_size_or_left_open(diff, answer):
    assert decide_nonnegative(diff) is answer


def test_equalities_of_quasi_affine_sizes_are_decided_exactly():
    assert decide_equal(floordiv(H, 2) + floordiv(H + 1, 2), H) is True
    assert decide_equal(H + 1, H) is False
    assert decide_equal(floordiv(H, 2), floordiv(H + 1, 2)) is None  # equal for even H
    assert decide_equal(H, W) is None


def test_comparisons_the_sizes_leave_open_raise():
    with pytest.raises(SymbolicDimError, match="depends on the symbols"):
        bool(SEQ > 0)  # seq may be 0
    assert SEQ + 1 > 0
    with pytest.raises(SymbolicDimError):
        bool(SEQ)


# ----------------------------------------------------------------------------- guards


def test_open_conditions_become_guards_while_recording():
    with recording() as guards:
        require_equal(H, W, "inner dimensions")
        require_at_least(floordiv(H + 1, 2), 1, "window fits")
        require_equal(H, H, "the same")  # proved: no guard
    assert [g.text() for g in guards] == ["H-W == 0", "floordiv(H+1, 2)-1 >= 0"]
    assert guards[0].holds({"H": 3, "W": 3}) and not guards[0].holds({"H": 3, "W": 4})
    assert not guards[1].holds({"H": 0}) and guards[1].holds({"H": 1})
    assert Guard.parse(guards[1].text(), "x") == Guard(guards[1].size, ">=", "x")


def test_impossible_conditions_are_errors_and_unrecorded_ones_assumed():
    with pytest.raises(ValueError, match="inner"):
        require_equal(H + 1, H, "inner")
    require_equal(H, W, "assumed")  # outside recording(): a verifier re-deriving a type


# ----------------------------------------------------------------------------- random


_SYMBOLS = {"H": H, "W": W}


class _Built:
    """A size built by the algebra, the same computation on Python ints, and how it was
    built (shown when a case fails)."""

    def __init__(self, expr, reference, text: str):
        self.expr, self.reference, self.text = expr, reference, text

    def __repr__(self) -> str:
        return self.text


@st.composite
def _expressions(draw, depth: int = 3):
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        if draw(st.booleans()):
            name = draw(st.sampled_from(sorted(_SYMBOLS)))
            return _Built(_SYMBOLS[name], lambda v, n=name: v[n], name)
        c = draw(st.integers(-4, 6))
        return _Built(c, lambda v, c=c: c, str(c))
    kind = draw(st.sampled_from(["add", "sub", "mul", "floordiv", "ceildiv", "mod", "min",
                                 "max", "neg"]))
    a = draw(_expressions(depth - 1))
    if kind == "neg":
        return _Built(-a.expr, lambda v: -a.reference(v), f"-({a.text})")
    if kind in ("floordiv", "ceildiv", "mod"):
        d = draw(st.integers(1, 5))
        fn = {"floordiv": floordiv, "ceildiv": ceildiv, "mod": mod}[kind]
        py = {"floordiv": operator.floordiv, "ceildiv": lambda x, y: -(-x // y),
              "mod": operator.mod}[kind]
        return _Built(fn(a.expr, d), lambda v: py(a.reference(v), d),
                      f"{kind}({a.text}, {d})")
    b = draw(_expressions(depth - 1))
    if kind == "mul" and isinstance(a.expr, SymDim) and isinstance(b.expr, SymDim):
        b = _Built(2, lambda v: 2, "2")  # products of compound atoms stay small
    fn = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
          "min": sym_min, "max": sym_max}[kind]
    py = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
          "min": min, "max": max}[kind]
    return _Built(fn(a.expr, b.expr), lambda v: py(a.reference(v), b.reference(v)),
                  f"{kind}({a.text}, {b.text})")


def test_a_sum_of_two_extrema_and_a_polynomial_prints_canonically():
    """Pulling W out of the min leaves W + max(1, W) + min(..): printed with W first, it
    read back as max(2*W, W+1) + min(..) (W absorbed into the max alone); the extrema print
    first now. Found by the random test below."""
    d = sym_max(1, W) + sym_min(mod(W, 2), mod(W, 3))
    assert str(d) == "max(1, W)+min(-2*floordiv(W, 2), -3*floordiv(W, 3))+W"
    assert parse_dim(str(d)) == d


_GRID = [*range(0, 19), 31, 64, 97, 224]


@settings(max_examples=300, deadline=None)
@given(_expressions())
def test_random_expressions_keep_their_values_and_print_canonically(built):
    """Whatever the algebra rewrote, the size is the same function of the symbols, and
    its printed form parses back to the same canonical size."""
    expr = built.expr
    for h, w in itertools.product(_GRID, repeat=2):
        sizes = {"H": h, "W": w}
        value = expr if isinstance(expr, int) else expr.evaluate(sizes)
        assert value == built.reference(sizes), (str(expr), sizes)
    if isinstance(expr, SymDim):
        assert parse_dim(str(expr)) == expr, str(expr)


@settings(max_examples=300, deadline=None)
@given(_expressions(), _expressions())
def test_random_proofs_hold_at_every_size(first, second):
    """What the prover decides is true at every size on the grid."""
    a, b = first.expr, second.expr
    diff = a - b
    nonnegative, equal = decide_nonnegative(diff), decide_equal(a, b)
    for h, w in itertools.product(_GRID, repeat=2):
        sizes = {"H": h, "W": w}
        value = diff if isinstance(diff, int) else diff.evaluate(sizes)
        if nonnegative is True:
            assert value >= 0, (str(diff), sizes)
        if nonnegative is False:
            assert value < 0, (str(diff), sizes)
        if equal is True:
            assert value == 0, (str(a), str(b), sizes)
        if equal is False:
            assert value != 0, (str(a), str(b), sizes)


@settings(max_examples=300, deadline=None)
@given(_expressions())
def test_room_for_a_run_size_bounds_it_and_grows_with_it(built):
    """monotone_upper(d, {W}) (a buffer placed while W is a capacity) is at least d at
    every W up to the capacity, and does not fall as the capacity grows."""
    room = monotone_upper(built.expr, ["W"])
    if room is None:
        return
    for h in _GRID:
        def at(w, expr=room, h=h):
            return expr if isinstance(expr, int) else expr.evaluate({"H": h, "W": w})
        for capacity in _GRID:
            assert at(capacity) >= max(built.reference({"H": h, "W": w})
                                       for w in range(capacity + 1)), (str(room), h, capacity)
            assert at(capacity + 1) >= at(capacity), (str(room), h, capacity)


def test_room_for_a_run_time_slice_is_its_end():
    start, end, n = (SymDim.symbol(s) for s in ("start", "end", "n"))
    length = sym_max(0, sym_min(end, n) - sym_min(start, n))
    assert monotone_upper(length, ["start", "end"]) == sym_min(end, n)
    assert monotone_upper(length, []) == length


def test_a_sum_beside_two_extrema_has_one_form_however_it_was_built():
    """maskrcnn's paste: `B + min(r, e) - min(r, s)` built with B pushed into the first min
    (min(B+r, B+e) - min(r, s)) or added last is one size."""
    b, r, e, s = (SymDim.symbol(n) for n in ("B", "r", "e", "s"))
    pushed = (b + sym_min(r, e)) - sym_min(r, s)
    added = (sym_min(r, e) - sym_min(r, s)) + b
    assert pushed == added
    assert str(parse_dim("min(B+r, B+e)-min(r, s)")) == str(added)
    for point in itertools.product(range(9), repeat=4):
        sizes = dict(zip(("B", "r", "e", "s"), point))
        assert pushed.evaluate(sizes) == point[0] + min(point[1], point[2]) - min(
            point[1], point[3])


def test_questions_over_every_size_are_answered_once():
    """min/max simplification asks whether the same differences are nonnegative again and
    again (20,800 times, 223 different, in Mask R-CNN's compile): the answer over every
    value of the symbols is remembered; with ranges it is worked out each time."""
    from onnxc.dialects import size_facts

    d = sym_max(H, 7) - H - 1  # nonnegative only where H <= 6: depends on H
    assert isinstance(d, SymDim)
    first = decide_nonnegative(d)
    hits = size_facts._decided_everywhere.cache_info().hits
    assert decide_nonnegative(d) is first is None
    assert size_facts._decided_everywhere.cache_info().hits == hits + 1
    assert decide_nonnegative(d, {"H": (0, 6)}) is True
    assert size_facts._decided_everywhere.cache_info().hits == hits + 1
