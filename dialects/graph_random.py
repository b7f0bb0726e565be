"""Graph ops that draw random numbers (ONNX RandomUniform / RandomNormal and their *Like
forms; Bernoulli, Multinomial and training-mode Dropout are built on them).

They are not pure: two draws with the same properties are different tensors, and a draw is
never a constant (an unseeded one differs per run). `DrawsRandomBits` gives them a write
effect, so CSE (xDSL's driver asks `is_side_effect_free`) never merges two of them and
constant folding leaves them (passes/constant_folding.py asks the same).

The numbers: element i of a draw is splitmix64(key + (i + 1) * golden) (Steele, Lea and
Flood's SplitMix64 finalizer over a Weyl sequence: a counter-based generator, so elements are
independent of the order they are computed in and of threads). Uniform takes the top 53 bits
as a float64 in [0, 1), scaled to [low, high) and rounded once to the element type (a value
that rounds up to high takes the type's largest value below it: `below_high`; a float16
draw is made in float32 at -O1 and above, whose cast may still round up to high); normal
takes two such uniforms (counters 2p, 2p + 1) through Box-Muller, whose cosine is element 2p
and sine element 2p + 1 (its log / sqrt / sin / cos in float32 for a float16 or float32
result, 1.3x faster than in float64, in float64 for a float64 one). The key is splitmix64 of the seed's float64 bits when the op has a seed (the same
numbers every run, on every machine, cold or warm compile), otherwise of the CPU's cycle
counter read when the kernel runs (different numbers per call; not cryptographic).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import AnyFloat, FloatAttr, StringAttr, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import EffectInstance, MemoryEffect, MemoryEffectKind
from xdsl.utils.exceptions import VerifyException

from onnxc.dialects.graph_base import GraphOp, shape_of

DISTRIBUTIONS = ("uniform", "normal")

GOLDEN = 0x9E3779B97F4A7C15
"""SplitMix64's Weyl increment (2^64 / phi, odd)."""
MIX = (0xBF58476D1CE4E5B9, 0x94D049BB133111EB)
MASK = (1 << 64) - 1


def splitmix64(z: int) -> int:
    """SplitMix64's finalizer of a 64-bit state (Python ints; the kernel computes the same
    with i64 wrap-around)."""
    z &= MASK
    z = ((z ^ (z >> 30)) * MIX[0]) & MASK
    z = ((z ^ (z >> 27)) * MIX[1]) & MASK
    return z ^ (z >> 31)


def below_high(low: float, high: float, dtype) -> float | None:
    """The largest `dtype` value below `high`, which a uniform draw is clamped to after its
    rounding to `dtype` (a float64 in [0, 1) just below 1 rounds to 1.0 in float32 about once
    in 2^25 draws, and a Bernoulli(1.0) then drew a 0); None for an empty range."""
    if not high > low:
        return None
    return float(np.nextafter(dtype.type(high), dtype.type(-np.inf)))


def seed_key(seed: float) -> int:
    """The generator key of a seeded op: SplitMix64 of the seed's float64 bits."""
    return splitmix64(struct.unpack("<Q", struct.pack("<d", float(seed)))[0])


class DrawsRandomBits(MemoryEffect):
    """Each execution yields new values: an effect CSE and folding must respect."""

    @classmethod
    def get_effects(cls, op: Operation) -> set[EffectInstance]:
        return {EffectInstance(MemoryEffectKind.WRITE)}


@irdl_op_definition
class RandomOp(GraphOp):
    """Random numbers of the result's shape and float type: uniform in [a, b) or normal
    with mean a and standard deviation b; `seed` fixes them (else they differ per run).
    The optional operand only gives the shape (RandomUniformLike), its data is not read."""

    name = "graph.random"
    traits = traits_def(DrawsRandomBits())
    like = opt_operand_def(TensorType)
    output = result_def(TensorType)
    distribution = prop_def(StringAttr)
    a = prop_def(FloatAttr)
    b = prop_def(FloatAttr)
    seed = opt_prop_def(FloatAttr)

    def same_element_type_operands(self) -> Sequence[SSAValue]:
        return ()

    def verify_element_types(self) -> None:
        if not isinstance(self.output.type.get_element_type(), AnyFloat):
            raise VerifyException(f"{self.name}: the result must be a float tensor")

    def infer_shapes(self):
        if self.distribution.data not in DISTRIBUTIONS:
            raise ValueError(f"unknown distribution '{self.distribution.data}'")
        if self.like is not None:
            return [shape_of(self.like)]
        return None


RANDOM_OPS = [RandomOp]
