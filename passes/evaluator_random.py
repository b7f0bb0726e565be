"""Numpy reference of graph.random: the kernel's generator (dialects/graph_random.py) in
numpy's uint64 arithmetic, so a seeded draw evaluates to the numbers the compiled kernel
gives (numpy's log / sin / cos may differ from libm's in the last bit: a few float32 ulps
for normal draws, uniform ones are identical). An unseeded draw takes its key from os.urandom: new numbers per evaluation, as per
run natively (so folding never sees a constant: constant folding skips the op anyway)."""

from __future__ import annotations

import os

import numpy as np
from xdsl.ir import Operation

from onnxc.dialects.dense_data import element_dtype
from onnxc.dialects.graph import float_of, shape_of
from onnxc.dialects.graph_random import (
    GOLDEN,
    MIX,
    RandomOp,
    below_high,
    seed_key,
    splitmix64,
)


def _mix(z: np.ndarray) -> np.ndarray:
    z = (z ^ (z >> np.uint64(30))) * np.uint64(MIX[0])
    z = (z ^ (z >> np.uint64(27))) * np.uint64(MIX[1])
    return z ^ (z >> np.uint64(31))


def draw_units(key: int, counters: np.ndarray) -> np.ndarray:
    """Counter i's number in [0, 1) as float64: the top 53 bits of its SplitMix64 word."""
    with np.errstate(over="ignore"):
        bits = _mix(np.uint64(key) + (counters.astype(np.uint64) + np.uint64(1))
                    * np.uint64(GOLDEN))
    return (bits >> np.uint64(11)).astype(np.float64) * 2.0 ** -53


def _random(op: RandomOp, a: list[np.ndarray]) -> list[np.ndarray]:
    shape = a[0].shape if a else shape_of(op.output)
    dtype = element_dtype(op.output.type.get_element_type())
    n = int(np.prod(shape, dtype=np.int64))
    if op.seed is not None:
        key = seed_key(float_of(op.seed))
    else:
        key = splitmix64(int.from_bytes(os.urandom(8), "little"))
    counters = np.arange(n, dtype=np.uint64)
    lo, hi = float_of(op.a), float_of(op.b)
    if op.distribution.data == "normal":  # pair i // 2: cosine to even i, sine to odd i
        pairs = counters // np.uint64(2)
        # in float32 for a float32 or float16 result, as the kernel (libm's logf, sinf...)
        math_type = np.float64 if dtype == np.float64 else np.float32
        u1 = (1.0 - draw_units(key, 2 * pairs)).astype(math_type)
        u2 = draw_units(key, 2 * pairs + np.uint64(1)).astype(math_type)
        angle = math_type(2 * np.pi) * u2
        turn = np.where(counters % np.uint64(2) == 0, np.cos(angle), np.sin(angle))
        radius = np.sqrt(math_type(-2.0) * np.log(u1))
        values = radius.astype(np.float64) * turn.astype(np.float64) * hi + lo
    else:
        values = draw_units(key, counters) * (hi - lo) + lo
        below = below_high(lo, hi, np.dtype(dtype))
        if below is not None:
            return [np.minimum(values.astype(dtype), np.asarray(below, dtype)).reshape(shape)]
    return [values.reshape(shape).astype(dtype)]


EVALUATORS: dict[type[Operation], object] = {RandomOp: _random}
