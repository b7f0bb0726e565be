"""Each activation's meaning, written once: ACTIVATIONS, read by every place that computes one.

An activation is a formula over an `ops` object, so that one text is the loops the kernels
emit (graph_to_loops/activation_ops.py over a KernelBuilder: the elementwise kernels and
the conv/gemm/matmul epilogues), the scalar body fuse-elementwise builds (fusion_scalar.py)
and the numpy the evaluator runs (NUMPY_OPS); the exporter reads its ONNX name and the
epilogue verifier its parameters. An `ops` provides

    constant(value, like)  a constant of `like`'s element type (an integer one truncated)
    add mul div max min    binary; max / min propagate NaN (arith.maximumf, np.maximum)
    neg exp tanh erf       unary
    less_than select       an ordered `<`, and where(cond, a, b)
    muladd(a, b, c)        a * b + c: one fma in loops, two roundings in numpy

The order a formula calls them in is the order the ops are emitted: reordering it changes
the loops text (not its values). Where numpy computes an activation otherwise on purpose,
its record says so in `numpy` (GELU's reference runs in float64 through math.erf).

Kept out of the table on purpose: the RNN gate activations (graph_rnn.ACTIVATIONS: vector
code of their own in graph_to_loops/rnn.py) and the activations the importer writes as a few
graph ops (frontend/onnx_ops_activation.py: HardSigmoid, Elu, Selu, ...).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

Formula = Callable[[Any, Any, "float | None", "float | None"], Any]
"""formula(ops, x, alpha, beta) -> the activation of x"""


def _relu(ops, x, alpha, beta):
    return ops.max(x, ops.constant(0, x))


def _clip(ops, x, lo, hi):
    """max(x, lo) then min(., hi); an absent bound is no op."""
    if lo is not None:
        x = ops.max(x, ops.constant(lo, x))
    if hi is not None:
        x = ops.min(x, ops.constant(hi, x))
    return x


def _leaky_relu(ops, x, alpha, beta):
    scaled = ops.mul(x, ops.constant(alpha, x))
    return ops.select(ops.less_than(x, ops.constant(0.0, x)), scaled, x)


def _sigmoid(ops, x, alpha, beta):
    one = ops.constant(1.0, x)
    e = ops.exp(ops.neg(x))
    return ops.div(one, ops.add(one, e))


def _tanh(ops, x, alpha, beta):
    return ops.tanh(x)


def _hard_swish(ops, x, alpha, beta):
    """x * clip(alpha * x + beta, 0, 1)."""
    gate = ops.min(ops.max(ops.muladd(ops.constant(alpha, x), x, ops.constant(beta, x)),
                           ops.constant(0.0, x)), ops.constant(1.0, x))
    return ops.mul(x, gate)


def gelu(ops, x, approximate: str):
    """0.5 x (1 + erf(x / sqrt 2)) as 0.5x * phi + 0.5x, or its tanh approximation."""
    if approximate == "tanh":
        cube = ops.mul(ops.mul(x, x), x)
        inner = ops.muladd(cube, ops.constant(0.044715, x), x)
        phi = ops.tanh(ops.mul(inner, ops.constant(math.sqrt(2 / math.pi), x)))
    else:
        phi = ops.erf(ops.mul(x, ops.constant(math.sqrt(0.5), x)))
    half_x = ops.mul(x, ops.constant(0.5, x))
    return ops.muladd(half_x, phi, half_x)


def _erf64(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(x) if x.size else x


@dataclass(frozen=True)
class Activation:
    """One activation: its epilogue name, ONNX name, parameters and formula."""

    name: str
    """the value of an epilogue's `activation` property"""
    onnx: str
    """its name in exported ONNX (the op type; GeluTanh is Gelu with approximate="tanh")"""
    formula: Formula
    required: frozenset[str] = frozenset()
    """epilogue parameters it needs (activation_alpha / activation_beta)"""
    allowed: frozenset[str] = frozenset()
    """epilogue parameters it takes"""
    integer: bool = False
    """also defined on integer elements"""
    numpy: Callable[[np.ndarray, float | None, float | None], np.ndarray] | None = None
    """the evaluator's form where it differs from the formula on purpose"""

    def evaluate(self, x: np.ndarray, alpha: float | None = None,
                 beta: float | None = None) -> np.ndarray:
        """The activation of `x` in numpy (the evaluator's)."""
        if self.numpy is not None:
            return self.numpy(x, alpha, beta)
        return self.formula(NUMPY_OPS, np.asarray(x), alpha, beta)


_ALPHA, _BETA = "activation_alpha", "activation_beta"

ACTIVATIONS: dict[str, Activation] = {a.name: a for a in (
    Activation("relu", "Relu", _relu, integer=True),
    Activation("clip", "Clip", _clip, allowed=frozenset({_ALPHA, _BETA}), integer=True),
    Activation("leaky_relu", "LeakyRelu", _leaky_relu, frozenset({_ALPHA}),
               frozenset({_ALPHA})),
    Activation("sigmoid", "Sigmoid", _sigmoid),
    Activation("tanh", "Tanh", _tanh),
    Activation("hard_swish", "HardSwish", _hard_swish, frozenset({_ALPHA, _BETA}),
               frozenset({_ALPHA, _BETA})),
    Activation("gelu", "Gelu", lambda ops, x, a, b: gelu(ops, x, "none"),
               numpy=lambda y, a, b: (0.5 * y * (1 + _erf64(y / math.sqrt(2)))).astype(y.dtype)),
    Activation("gelu_tanh", "GeluTanh", lambda ops, x, a, b: gelu(ops, x, "tanh"),
               numpy=lambda y, a, b: 0.5 * y * (
                   1 + np.tanh(math.sqrt(2 / math.pi) * (y + 0.044715 * y**3)))),
)}
"""Epilogue name -> its activation. clip's alpha / beta are its min / max (either may be
absent), leaky_relu's alpha its slope, hard_swish's x * clip(alpha x + beta, 0, 1)."""


class _NumpyOps:
    """The ops of a formula in numpy: constants of the operand's dtype (as the kernels'),
    muladd unfused (numpy has no fma)."""

    @staticmethod
    def constant(value: float, like: np.ndarray) -> np.ndarray:
        if like.dtype.kind == "f":
            return np.asarray(value, like.dtype)
        return np.asarray(int(value)).astype(like.dtype)

    add, mul, div = staticmethod(np.add), staticmethod(np.multiply), staticmethod(np.divide)
    max, min = staticmethod(np.maximum), staticmethod(np.minimum)
    neg, exp, tanh = staticmethod(np.negative), staticmethod(np.exp), staticmethod(np.tanh)
    erf = staticmethod(_erf64)
    less_than, select = staticmethod(np.less), staticmethod(np.where)

    @staticmethod
    def muladd(a, b, c):
        return a * b + c


NUMPY_OPS = _NumpyOps()


@functools.cache
def _graph_rules() -> dict[type, Callable[[Any], tuple[str, float | None, float | None]]]:
    # imported here: graph's op definitions import graph_epilogue, which imports this module
    from onnxc.dialects import graph
    from onnxc.dialects.graph import float_of

    def bound(attr) -> float | None:
        return None if attr is None else float_of(attr)

    return {
        graph.ReluOp: lambda op: ("relu", None, None),
        graph.SigmoidOp: lambda op: ("sigmoid", None, None),
        graph.TanhOp: lambda op: ("tanh", None, None),
        graph.LeakyReluOp: lambda op: ("leaky_relu", float_of(op.alpha), None),
        graph.ClipOp: lambda op: ("clip", bound(op.min), bound(op.max)),
        graph.GeluOp: lambda op: (
            "gelu_tanh" if op.approximate.data == "tanh" else "gelu", None, None),
    }


def activation_of(op) -> tuple[Activation, float | None, float | None] | None:
    """The activation graph op `op` computes, with its parameters; None for other ops."""
    rule = _graph_rules().get(type(op))
    if rule is None:
        return None
    name, alpha, beta = rule(op)
    return ACTIVATIONS[name], alpha, beta


__all__ = ["ACTIVATIONS", "NUMPY_OPS", "Activation", "activation_of", "gelu"]
