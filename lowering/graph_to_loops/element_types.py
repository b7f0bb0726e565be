"""What the kernels ask of an element type: float, bool (i1) or unsigned, and the identities
of `max` and `min` over it (the start of a max-pool or a reduce-min).
"""

from __future__ import annotations

import math as pymath

from xdsl.dialects.builtin import AnyFloat, IntegerType, Signedness
from xdsl.ir import Attribute


def is_float(t: Attribute) -> bool:
    return isinstance(t, AnyFloat)


def is_bool(t: Attribute) -> bool:
    return isinstance(t, IntegerType) and t.width.data == 1


def is_unsigned(t: Attribute) -> bool:
    return isinstance(t, IntegerType) and t.signedness.data == Signedness.UNSIGNED


def min_value(t: Attribute) -> float | int:
    """The identity of `max` for element type `t`."""
    if is_float(t):
        return -pymath.inf
    assert isinstance(t, IntegerType)
    if t.width.data == 1 or is_unsigned(t):
        return 0
    return -(1 << (t.width.data - 1))


def max_value(t: Attribute) -> float | int:
    """The identity of `min` for element type `t`."""
    if is_float(t):
        return pymath.inf
    assert isinstance(t, IntegerType)
    if t.width.data == 1:
        return 1
    return (1 << t.width.data) - 1 if is_unsigned(t) else (1 << (t.width.data - 1)) - 1
