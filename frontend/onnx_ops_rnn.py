"""LSTM, GRU and RNN (opsets 7-22): an input-projection GEMM plus a recurrence graph op.

X W^T + Wb (+ Rb, which commutes with it except for GRU's h gate under linear_before_reset)
is computed for every time step at once by one `graph.gemm` over the [steps * batch, input]
rows and all directions' weights ([D * G * H, input], transB), so it runs on the packed GEMM
kernel; the `graph.*_recurrence` op (dialects/graph_rnn.py) then only does the sequential
part. Activation names are matched case-insensitively (as onnxruntime does) and their alpha /
beta resolved here, consumed in order by the activations that take them, ONNX's defaults
otherwise (dialects/activations.py GATE_ACTIVATIONS: the names, which take alpha / beta,
and the defaults).
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    Float32Type,
    Float64Type,
    IntegerType,
    StringAttr,
    f64,
)
from xdsl.ir import SSAValue

from onnxc.dialects import graph
from onnxc.dialects.activations import GATE_ACTIVATIONS
from onnxc.dialects.graph_rnn import (
    DIRECTIONS,
    GRURecurrenceOp,
    LSTMRecurrenceOp,
    RNNRecurrenceOp,
)
from onnxc.frontend import onnx_types as types
from onnxc.frontend.onnx_context import NodeContext, Result
from onnxc.frontend.onnx_graph_builder import GraphBuilder
from onnxc.frontend.onnx_ops_math import Converter

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
DEFAULT_ACTIVATIONS = {"LSTM": ["Sigmoid", "Tanh", "Tanh"], "GRU": ["Sigmoid", "Tanh"],
                       "RNN": ["Tanh"]}
_CANONICAL = {name.lower(): name for name in GATE_ACTIVATIONS}


def _activations(ctx: NodeContext, directions: int) -> tuple[list[str], list[float], list[float]]:
    per_direction = len(DEFAULT_ACTIVATIONS[ctx.op_type])
    names = ctx.attr("activations", None)
    if names is None:
        names = DEFAULT_ACTIVATIONS[ctx.op_type] * directions
    elif len(names) == per_direction and directions == 2:
        names = list(names) * 2
    if len(names) != per_direction * directions:
        raise ctx.invalid(f"{len(names)} activations; {ctx.op_type} with {directions} "
                          f"direction(s) needs {per_direction * directions}")
    canonical = []
    for name in names:
        if name.lower() not in _CANONICAL:
            raise ctx.unsupported(f"activation '{name}'")
        canonical.append(_CANONICAL[name.lower()])
    given_alpha = list(ctx.attr("activation_alpha", []))
    given_beta = list(ctx.attr("activation_beta", []))
    alphas, betas = [], []
    for name in canonical:  # each takes the next given value, or its default (0 if none)
        for default, given, resolved in ((GATE_ACTIVATIONS[name].alpha, given_alpha, alphas),
                                         (GATE_ACTIVATIONS[name].beta, given_beta, betas)):
            if default is None:
                resolved.append(0.0)
            else:
                resolved.append(float(given.pop(0)) if given else default)
    return canonical, alphas, betas


def _biases(ctx: NodeContext, b: GraphBuilder, d: int, h: int, gates: int,
            before_reset: bool) -> tuple[SSAValue | None, SSAValue | None]:
    """The GEMM's bias [D * G * H] (Wb + Rb, without GRU's Rbh under linear_before_reset)
    and that Rbh [D, H] (None when not needed)."""
    if not ctx.has_input(3):
        if not before_reset:
            return None, None
        return None, b.value(b.floats(np.zeros((d, h))))
    gh = gates * h
    bias = ctx.tensor(3)
    if bias.shape != (d, 2 * gh):
        raise ctx.invalid(f"B {bias.shape} differs from {(d, 2 * gh)}")
    keep = np.ones(gh)
    if before_reset:
        keep[2 * h:] = 0.0  # Rbh stays inside r * (H Rh^T + Rbh)
    if bias.array is not None:
        wb, rb = bias.array[:, :gh], bias.array[:, gh:]
        total = (wb + rb * keep).reshape(-1)
        return (b.value(b.floats(total)),
                b.value(b.floats(rb[:, 2 * h:])) if before_reset else None)
    v = b.value(bias)
    wb, rb = b.slice_last(v, 0, gh), b.slice_last(v, gh, 2 * gh)
    rbh = b.slice_last(rb, 2 * h, 3 * h) if before_reset else None
    if before_reset:
        rb = b.mul(rb, b.floats(np.broadcast_to(keep, (d, gh))))
    return b.reshape(b.add(wb, rb), (d * gh,)), rbh


def _projection(ctx: NodeContext, b: GraphBuilder, bias: SSAValue | None, d: int,
                gh: int) -> SSAValue:
    """X W^T + bias for every step and direction, as gates [S, B, D, G*H] (layout 1:
    [B, S, D, G*H])."""
    x, w = ctx.shape(0), ctx.shape(1)
    rows = x[0] * x[1]
    x2 = b.value(b.reshape(b.input(0), (rows, x[2])))
    w2 = b.value(b.reshape(b.input(1), (d * gh, w[2])))
    out = types.tensor_type((rows, d * gh), b.el)
    gemm = ctx.emit1(graph.GemmOp(operands=[x2, w2, bias], result_types=[out], properties={
        "alpha": types.float_attr(1.0, b.el), "beta": types.float_attr(1.0, b.el),
        "transA": types.i64_attr(0), "transB": types.i64_attr(1)}))
    return b.reshape(gemm, (x[0], x[1], d, gh))


def _sequence_lens(ctx: NodeContext, steps: int) -> SSAValue | None:
    """sequence_lens, or None when absent or a constant that is `steps` everywhere."""
    if not ctx.has_input(4):
        return None
    lens = ctx.tensor(4)
    if not isinstance(lens.element_type, IntegerType):
        raise ctx.invalid("sequence_lens must be integers")
    if lens.array is not None and lens.array.size and np.all(lens.array == steps):
        return None
    return ctx.materialize(lens)


def convert_recurrent(ctx: NodeContext) -> list[Result]:
    kind = ctx.op_type
    if ctx.opset < 7:
        raise ctx.unsupported("opsets before 7 (the output_sequence attribute)")
    el = ctx.element_type(0)
    if not isinstance(el, Float32Type | Float64Type):
        raise ctx.unsupported(f"element type {el} (f32 and f64 only)")
    x, w, r = ctx.tensor(0), ctx.tensor(1), ctx.tensor(2)
    if len(x.shape) != 3 or len(w.shape) != 3 or len(r.shape) != 3:
        raise ctx.invalid(f"X {x.shape}, W {w.shape} and R {r.shape} must have rank 3")
    direction = ctx.attr("direction", "forward")
    if direction not in DIRECTIONS:
        raise ctx.invalid(f"unknown direction '{direction}'")
    d, gates, h = DIRECTIONS[direction], GATES[kind], r.shape[2]
    if ctx.attr("hidden_size", h) != h:
        raise ctx.invalid(f"hidden_size {ctx.attr('hidden_size')} differs from R {r.shape}")
    if w.shape != (d, gates * h, x.shape[2]) or r.shape != (d, gates * h, h):
        raise ctx.invalid(f"W {w.shape} / R {r.shape} do not fit {d} direction(s), "
                          f"{gates} gates, hidden {h}, input {x.shape[2]}")
    layout = ctx.attr("layout", 0)
    if layout not in (0, 1):
        raise ctx.invalid(f"layout must be 0 or 1, not {layout}")
    steps = x.shape[1] if layout else x.shape[0]
    names, alphas, betas = _activations(ctx, d)
    before_reset = kind == "GRU" and bool(ctx.attr("linear_before_reset", 0))
    b = GraphBuilder(ctx, el)
    bias, rbh = _biases(ctx, b, d, h, gates, before_reset)
    projected = _projection(ctx, b, bias, d, gates * h)
    props = {
        "direction": StringAttr(direction),
        "activations": ArrayAttr([StringAttr(n) for n in names]),
        "activation_alpha": DenseArrayBase.from_list(f64, alphas),
        "activation_beta": DenseArrayBase.from_list(f64, betas),
        "layout": types.i64_attr(layout),
    }
    clip = ctx.attr("clip", None)
    if clip is not None:
        props["clip"] = types.float_attr(float(clip), el)
    lens = _sequence_lens(ctx, steps)
    initial_h = ctx.operand(5) if ctx.has_input(5) else None
    batch = x.shape[0] if layout else x.shape[1]
    state = types.tensor_type((batch, d, h) if layout else (d, batch, h), el)
    y = types.tensor_type((batch, steps, d, h) if layout else (steps, d, batch, h), el)
    recurrence = ctx.operand(2)
    if kind == "LSTM":
        props["input_forget"] = types.i64_attr(ctx.attr("input_forget", 0))
        initial_c = ctx.operand(6) if ctx.has_input(6) else None
        peepholes = ctx.operand(7) if ctx.has_input(7) else None
        op = LSTMRecurrenceOp(
            operands=[projected, recurrence, lens, initial_h, initial_c, peepholes],
            result_types=[y, state, state], properties=props)
        return list(ctx.emit(op).results)
    if kind == "GRU":
        props["linear_before_reset"] = types.i64_attr(int(before_reset))
        op = GRURecurrenceOp(operands=[projected, recurrence, rbh, lens, initial_h],
                             result_types=[y, state], properties=props)
        return list(ctx.emit(op).results)
    op = RNNRecurrenceOp(operands=[projected, recurrence, lens, initial_h],
                         result_types=[y, state], properties=props)
    return list(ctx.emit(op).results)


CONVERTERS: dict[str, Converter] = {
    "LSTM": convert_recurrent,
    "GRU": convert_recurrent,
    "RNN": convert_recurrent,
}
