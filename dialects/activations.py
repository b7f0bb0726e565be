"""Each activation's meaning, written once, and read by every place that computes one.

An activation is a formula over an `ops` object, so that one text is the loops the kernels
emit (graph_to_loops/activation_ops.py over a KernelBuilder: the elementwise kernels and
the conv/gemm/matmul epilogues; graph_to_loops/epilogue.py over the GEMM's vector
registers; graph_to_loops/rnn.py over the recurrences' vector lanes), the scalar body
fuse-elementwise builds (fusion_scalar.py) and the numpy the evaluator runs (NUMPY_OPS);
the exporter reads its ONNX name, the epilogue verifier its parameters and the importer of
LSTM / GRU / RNN its default alpha and beta. An `ops` provides

    constant(value, like)  a constant of `like`'s element type (an integer one truncated)
    add sub mul div        binary
    max min                binary; they propagate NaN (arith.maximumf, np.maximum)
    neg abs exp tanh erf   unary
    log1p                  log(1 + x) (libm's log1p; the recurrences' vector lanes have no
                           vector log1p and compute log(1 + x))
    less_than select       an ordered `<`, and where(cond, a, b)
    muladd(a, b, c)        a * b + c: one fma in loops, two roundings in numpy

(fuse-elementwise's body builder provides the ops of the formulas it fuses: those of
ACTIVATIONS.) The order a formula calls them in is the order the ops are emitted:
reordering it changes the loops text (not its values). Where numpy computes an activation
otherwise on purpose, its record says so in `numpy` (GELU's reference runs in float64
through math.erf).

The tables:
- ACTIVATIONS: the activations a conv / gemm / matmul epilogue applies, by the epilogue's
  `activation` property (graph_epilogue), and `activation_of` the graph op each one is;
- GATE_ACTIVATIONS: those ONNX's LSTM, GRU and RNN allow for their gates, by ONNX name
  (graph_rnn verifies the names, the importer fills in their default alpha / beta);
- SOFTPLUS, MISH, THRESHOLDED_RELU: graph.softplus, graph.mish and graph.thresholded_relu
  (graph_to_loops/elementwise_unary.py, evaluator_logic.py), Softplus and ThresholdedRelu
  also gate activations.
Relu, Tanh, Sigmoid and HardSigmoid (HardSwish's gate) are one formula wherever they occur.
The activations the importer writes as a few graph ops (frontend/onnx_ops_activation.py:
HardSigmoid, Elu, Selu, ... as ONNX ops) are not formulas: their graph ops are.
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


def _hard_sigmoid(ops, x, alpha, beta):
    """clip(alpha * x + beta, 0, 1)."""
    return ops.min(ops.max(ops.muladd(ops.constant(alpha, x), x, ops.constant(beta, x)),
                           ops.constant(0.0, x)), ops.constant(1.0, x))


def _hard_swish(ops, x, alpha, beta):
    """x * clip(alpha * x + beta, 0, 1)."""
    return ops.mul(x, _hard_sigmoid(ops, x, alpha, beta))


def _silu(ops, x, alpha, beta):
    """x * sigmoid(x) (SiLU, Swish: EfficientNet's, YOLO's)."""
    return ops.mul(x, _sigmoid(ops, x, alpha, beta))


def _softplus(ops, x, alpha, beta):
    """log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)): exp never overflows."""
    zero = ops.constant(0.0, x)
    tail = ops.exp(ops.neg(ops.abs(x)))
    positive = ops.max(x, zero)
    return ops.add(positive, ops.log1p(tail))


def _mish(ops, x, alpha, beta):
    """x * tanh(softplus(x))."""
    return ops.mul(x, ops.tanh(_softplus(ops, x, alpha, beta)))


def _thresholded_relu(ops, x, alpha, beta):
    """x where alpha < x, else 0."""
    return ops.select(ops.less_than(ops.constant(alpha, x), x), x, ops.constant(0.0, x))


def _affine(ops, x, alpha, beta):
    return ops.muladd(ops.constant(alpha, x), x, ops.constant(beta, x))


def _gate_leaky_relu(ops, x, alpha, beta):
    """alpha * min(x, 0) + max(x, 0), one fma and no compare (the recurrences' vector code;
    -0 gives +0 here, where the epilogue's select keeps -0)."""
    zero = ops.constant(0.0, x)
    return ops.muladd(ops.constant(alpha, x), ops.min(x, zero), ops.max(x, zero))


def _scaled_tanh(ops, x, alpha, beta):
    return ops.mul(ops.constant(alpha, x), ops.tanh(ops.mul(ops.constant(beta, x), x)))


def _elu(ops, x, alpha, beta):
    """alpha * (exp(min(x, 0)) - 1) + max(x, 0)."""
    zero = ops.constant(0.0, x)
    below = ops.sub(ops.exp(ops.min(x, zero)), ops.constant(1.0, x))
    return ops.muladd(ops.constant(alpha, x), below, ops.max(x, zero))


def _softsign(ops, x, alpha, beta):
    return ops.div(x, ops.add(ops.constant(1.0, x), ops.abs(x)))


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
    """erf in float64 (math.erf: numpy has none), NUMPY_OPS.erf."""
    return np.vectorize(math.erf, otypes=[np.float64])(x) if x.size else x


@dataclass(frozen=True)
class Activation:
    """One activation: its name, ONNX name, parameters and formula."""

    name: str
    """its name; for those of ACTIVATIONS the value of an epilogue's `activation` property"""
    onnx: str
    """its ONNX name (the op type in exported ONNX, the name in an LSTM's `activations`;
    GeluTanh is Gelu with approximate="tanh")"""
    formula: Formula
    required: frozenset[str] = frozenset()
    """epilogue parameters it needs (activation_alpha / activation_beta)"""
    allowed: frozenset[str] = frozenset()
    """epilogue parameters it takes"""
    integer: bool = False
    """also defined on integer elements"""
    numpy: Callable[[np.ndarray, float | None, float | None], np.ndarray] | None = None
    """the evaluator's form where it differs from the formula on purpose"""
    alpha: float | None = None
    """ONNX's default alpha, for a gate activation that takes one (None: takes none)"""
    beta: float | None = None
    """ONNX's default beta, likewise"""

    def evaluate(self, x: np.ndarray, alpha: float | None = None,
                 beta: float | None = None) -> np.ndarray:
        """The activation of `x` in numpy (the evaluator's)."""
        if self.numpy is not None:
            return self.numpy(x, alpha, beta)
        return self.formula(NUMPY_OPS, np.asarray(x), alpha, beta)

    @functools.cached_property
    def calls(self) -> frozenset[str]:
        """The ops its formula calls (with alpha = beta = 1): graph_to_loops/rnn.py runs an
        activation that compares on scalar lanes only."""
        return _called_ops(self.formula)


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
    Activation("silu", "Silu", _silu),
    Activation("gelu", "Gelu", lambda ops, x, a, b: gelu(ops, x, "none"),
               numpy=lambda y, a, b: (0.5 * y * (1 + _erf64(y / math.sqrt(2)))).astype(y.dtype)),
    Activation("gelu_tanh", "GeluTanh", lambda ops, x, a, b: gelu(ops, x, "tanh"),
               numpy=lambda y, a, b: 0.5 * y * (
                   1 + np.tanh(math.sqrt(2 / math.pi) * (y + 0.044715 * y**3)))),
)}
"""Epilogue name -> its activation. clip's alpha / beta are its min / max (either may be
absent), leaky_relu's alpha its slope, hard_swish's x * clip(alpha x + beta, 0, 1); silu
is x * sigmoid(x), which ONNX (before opset 24's Swish) writes as Sigmoid and Mul."""

SOFTPLUS = Activation("softplus", "Softplus", _softplus)
MISH = Activation("mish", "Mish", _mish)
THRESHOLDED_RELU = Activation("thresholded_relu", "ThresholdedRelu", _thresholded_relu,
                              alpha=1.0)

GATE_ACTIVATIONS: dict[str, Activation] = {a.onnx: a for a in (
    ACTIVATIONS["relu"],
    ACTIVATIONS["tanh"],
    ACTIVATIONS["sigmoid"],
    Activation("affine", "Affine", _affine, alpha=1.0, beta=0.0),
    Activation("leaky_relu", "LeakyRelu", _gate_leaky_relu, alpha=0.01),
    THRESHOLDED_RELU,
    Activation("scaled_tanh", "ScaledTanh", _scaled_tanh, alpha=1.0, beta=1.0),
    Activation("hard_sigmoid", "HardSigmoid", _hard_sigmoid, alpha=0.2, beta=0.5),
    Activation("elu", "Elu", _elu, alpha=1.0),
    Activation("softsign", "Softsign", _softsign),
    SOFTPLUS,
)}
"""The activations ONNX's LSTM, GRU and RNN allow, by their canonical ONNX name, with ONNX's
default alpha / beta where they take one. Affine is alpha x + beta, ScaledTanh
alpha tanh(beta x), HardSigmoid clip(alpha x + beta, 0, 1), Elu's alpha the scale of its
negative part, ThresholdedRelu's alpha its threshold."""


class _NumpyOps:
    """The ops of a formula in numpy: constants of the operand's dtype (as the kernels'),
    muladd unfused (numpy has no fma)."""

    @staticmethod
    def constant(value: float, like: np.ndarray) -> np.ndarray:
        if like.dtype.kind == "f":
            return np.asarray(value, like.dtype)
        return np.asarray(int(value)).astype(like.dtype)

    add, sub = staticmethod(np.add), staticmethod(np.subtract)
    mul, div = staticmethod(np.multiply), staticmethod(np.divide)
    max, min = staticmethod(np.maximum), staticmethod(np.minimum)
    neg, abs = staticmethod(np.negative), staticmethod(np.abs)
    exp, tanh = staticmethod(np.exp), staticmethod(np.tanh)
    erf, log1p = staticmethod(_erf64), staticmethod(np.log1p)
    less_than, select = staticmethod(np.less), staticmethod(np.where)

    @staticmethod
    def muladd(a, b, c):
        return a * b + c


NUMPY_OPS = _NumpyOps()


class _Recorder:
    """An `ops` that notes which ops a formula calls (on placeholder values)."""

    def __init__(self):
        self.called: set[str] = set()

    def __getattr__(self, name: str):
        self.called.add(name)
        return lambda *args: None


def _called_ops(formula: Formula) -> frozenset[str]:
    recorder = _Recorder()
    formula(recorder, None, 1.0, 1.0)
    return frozenset(recorder.called - {"constant"})


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


__all__ = ["ACTIVATIONS", "GATE_ACTIVATIONS", "MISH", "NUMPY_OPS", "SOFTPLUS", "THRESHOLDED_RELU",
           "Activation", "activation_of", "gelu"]
