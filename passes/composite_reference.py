"""numpy semantics of the ops the fusion and replacement passes create (graph_composite),
entries of the evaluator's table. Fused steps compute in the inputs' float type, as the
kernel does."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.ir import Operation

from onnxc.dialects import graph
from onnxc.dialects.graph import int_of
from onnxc.passes.constants import numpy_dtype

STEP_FUNCTIONS: dict[str, Callable[..., np.ndarray]] = {
    "relu": lambda x: np.maximum(x, 0),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh,
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "neg": np.negative,
    "abs": np.abs,
    "reciprocal": lambda x: 1 / x,
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "pow": np.power,
    "max": np.maximum,
    "min": np.minimum,
    "leaky_relu": lambda x, alpha: np.where(x < 0, x * x.dtype.type(alpha), x),
    "clip": lambda x, lo, hi: np.minimum(np.maximum(x, x.dtype.type(lo)), x.dtype.type(hi)),
    "add_scalar": lambda x, s: x + x.dtype.type(s),
    "sub_scalar": lambda x, s: x - x.dtype.type(s),
    "mul_scalar": lambda x, s: x * x.dtype.type(s),
    "div_scalar": lambda x, s: x / x.dtype.type(s),
    "pow_scalar": lambda x, s: np.power(x, x.dtype.type(s)),
    "dequantize": lambda x, s, z: _dequantize(x, s, z),
    "quantize": lambda x, s, z, lo, hi: np.clip(
        np.rint(x / x.dtype.type(s)) + x.dtype.type(z), x.dtype.type(lo), x.dtype.type(hi)),
}


def _dequantize(x: np.ndarray, scale: float, zero: float) -> np.ndarray:
    """(x - zero) * scale; an integer input (ui8/i8) computes in f32, as the kernel."""
    if x.dtype.kind in "iu":
        return (x.astype(np.int32) - int(zero)).astype(np.float32) * np.float32(scale)
    return (x - x.dtype.type(zero)) * x.dtype.type(scale)


def fused_elementwise(op: graph.FusedElementwiseOp, args: list[np.ndarray]) -> list[np.ndarray]:
    values = list(args)
    with np.errstate(all="ignore"):
        for step in op.parsed_steps():
            values.append(np.asarray(STEP_FUNCTIONS[step.op](
                *(values[r] for r in step.refs), *step.params)))
    out = np.broadcast_to(values[-1], np.broadcast_shapes(*(a.shape for a in args)))
    return [np.array(out, dtype=numpy_dtype(op.output.type.get_element_type()))]


def channel_shuffle(op: graph.ChannelShuffleOp, args: list[np.ndarray]) -> list[np.ndarray]:
    x, g = args[0], int_of(op.group)
    n, c = x.shape[:2]
    grouped = x.reshape(n, g, c // g, *x.shape[2:])
    return [np.ascontiguousarray(np.swapaxes(grouped, 1, 2)).reshape(x.shape)]


def conv_add(op: graph.ConvAddOp, args: list[np.ndarray]) -> list[np.ndarray]:
    """graph.conv's semantics, plus the addend (the evaluator adds the epilogue after)."""
    from onnxc.passes.evaluator import EVALUATORS as GRAPH_EVALUATORS  # it imports this module

    (y,) = GRAPH_EVALUATORS[graph.ConvOp](op, args[:-1])
    return [y + args[-1]]


EVALUATORS: dict[type[Operation], Callable[[Operation, list[np.ndarray]], list[np.ndarray]]] = {
    graph.FusedElementwiseOp: fused_elementwise,
    graph.ChannelShuffleOp: channel_shuffle,
    graph.ConvAddOp: conv_add,
}
