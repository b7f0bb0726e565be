"""Matching helpers shared by the fusion passes: producer chains, scalar operands, uses.

Exporters write the same formula in several orders (x * 0.5 * a, (x * a) * 0.5, ...) and as
Div by c or Mul by 1/c; these helpers let a pattern ask for "a Mul of x by a scalar" without
spelling every permutation, and check that the intermediates it would absorb have no reader
outside the match (otherwise fusing duplicates work instead of removing it).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from typing import TypeVar

import numpy as np
from xdsl.ir import Operation, SSAValue

from onnxc.dialects import graph
from onnxc.dialects.graph import float_of, shape_of
from onnxc.passes.constants import constant_value, is_float_tensor, scalar

OpT = TypeVar("OpT", bound=Operation)

COMMUTATIVE = (graph.AddOp, graph.MulOp)


def producer(value: SSAValue, cls: type[OpT]) -> OpT | None:
    """The op of class `cls` defining `value`, or None."""
    return value.owner if isinstance(value.owner, cls) else None


def scalar_constant(value: SSAValue) -> float | None:
    """The value of a single-element graph constant, or None."""
    return scalar(constant_value(value))


def operand_orders(op: Operation) -> Iterator[tuple[SSAValue, SSAValue]]:
    """(lhs, rhs), and (rhs, lhs) too when `op` is commutative."""
    lhs, rhs = op.operands[0], op.operands[1]
    yield lhs, rhs
    if isinstance(op, COMMUTATIVE):
        yield rhs, lhs


SCALAR_FORMS: dict[type[Operation], type[Operation]] = {
    graph.AddOp: graph.AddScalarOp,
    graph.SubOp: graph.SubScalarOp,
    graph.MulOp: graph.MulScalarOp,
    graph.DivOp: graph.DivScalarOp,
    graph.PowOp: graph.PowScalarOp,
}
"""fold-scalar-binary's form of each binary op (the scalar as a property)."""


def with_scalar(op: Operation | None, cls: type[Operation]) -> tuple[SSAValue, float] | None:
    """(x, c) when `op` is `cls`(x, c) (either order for Add/Mul) with c a scalar constant
    that does not change x's shape by broadcasting, or the scalar form of `cls`."""
    if isinstance(op, SCALAR_FORMS.get(cls, ())):
        return op.input, float(op.scalar.value.data)
    if not isinstance(op, cls) or len(op.operands) != 2:
        return None
    for x, c in operand_orders(op):
        value = scalar_constant(c)
        if value is not None and shape_of(x) == shape_of(op.results[0]):
            return x, value
    return None


def scaled_by(value: SSAValue) -> tuple[SSAValue, float] | None:
    """(x, s) when `value` is x * s or x / (1/s) with s a scalar constant."""
    mul = with_scalar(value.owner, graph.MulOp)
    if mul is not None:
        return mul
    div = with_scalar(value.owner, graph.DivOp)
    if div is not None and div[1] != 0.0:
        return div[0], 1.0 / div[1]
    return None


def close(a: float, b: float, rel: float = 1e-5) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-7)


def same_data(a: SSAValue, b: SSAValue) -> bool:
    """`a` and `b` are one tensor, or one seen through a Reshape that only adds or drops
    leading 1s: the same elements in the same order, equal under broadcasting against the
    other operands' shape. drop-reshape-before-binary leaves such pairs (GPT-2's Conv1D
    output reshaped to [1, seq, n], one Add of its GELU reading the [seq, n] Gemm)."""
    if a == b:
        return True
    for view, source in ((a, b), (b, a)):
        reshape = view.owner
        if isinstance(reshape, graph.ReshapeOp) and reshape.input == source:
            return _without_leading_ones(shape_of(view)) == _without_leading_ones(
                shape_of(source))
    return False


def _without_leading_ones(shape: tuple) -> tuple:
    start = 0
    while start < len(shape) - 1 and shape[start] == 1:
        start += 1
    return tuple(shape[start:])


def used_only_by(values: Iterable[SSAValue], ops: Iterable[Operation]) -> bool:
    """True when every use of every value is an operand of one of `ops`."""
    allowed = {id(op) for op in ops}
    return all(id(use.operation) in allowed for v in values for use in v.uses)


def product_factors(
    root: Operation, limit: int = 4
) -> tuple[list[SSAValue], float, list[Operation]] | None:
    """The non-constant leaves of the tree of Muls rooted at `root` (a Mul or mul_scalar)
    whose inner Muls have one use, the product of its scalar-constant leaves, and the Muls:
    x * (0.5 * a) gives ([x, a], 0.5, ops). None past `limit` leaves."""
    leaves: list[SSAValue] = []
    constant = 1.0
    inner: list[Operation] = []

    def expand(op: Operation) -> None:
        nonlocal constant
        inner.append(op)
        if isinstance(op, graph.MulScalarOp):
            constant *= float(op.scalar.value.data)
            children = [op.input]
        else:
            children = [op.operands[0], op.operands[1]]
        for value in children:
            c = scalar_constant(value)
            if c is not None:
                constant *= c
            elif isinstance(value.owner, (graph.MulOp, graph.MulScalarOp)) and (
                value.has_one_use() and len(leaves) < limit
            ):
                expand(value.owner)
            else:
                leaves.append(value)

    expand(root)
    return None if len(leaves) > limit else (leaves, constant, inner)


def float_result(op: Operation) -> bool:
    return len(op.results) == 1 and is_float_tensor(op.results[0])


def binary_with_constant(
    op: graph.BinaryElementwiseOp,
) -> tuple[SSAValue, np.ndarray] | None:
    """(the other operand, the constant) of a binary op with one constant operand."""
    rhs = constant_value(op.rhs)
    if rhs is not None and constant_value(op.lhs) is None:
        return op.lhs, rhs
    lhs = constant_value(op.lhs)
    if lhs is not None and rhs is None and not isinstance(op, (graph.SubOp, graph.DivOp)):
        return op.rhs, lhs
    return None


def bn_scale_shift(bn: graph.BatchNormalizationOp) -> tuple[np.ndarray, np.ndarray] | None:
    """BN as y = x * s + t per channel, when all its parameters are constants."""
    params = [constant_value(v) for v in (bn.scale, bn.bias, bn.mean, bn.var)]
    if any(p is None for p in params):
        return None
    scale, bias, mean, var = (p.astype(np.float64) for p in params)
    s = scale / np.sqrt(var + float_of(bn.epsilon))
    return s, bias - mean * s
