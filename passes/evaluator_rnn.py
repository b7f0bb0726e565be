"""numpy semantics of the recurrence ops (graph_rnn), for passes/evaluator.py.

Written from the ONNX LSTM / GRU / RNN docs, with onnxruntime's readings where the docs are
loose: clip bounds the gate pre-activations but not LSTM's cell state before h; a step past
a row's sequence length keeps the state and writes zeros to y; a row of length 0 ends with
zero states. The activations (and the clip) are their formulas in dialects/activations.py,
evaluated in float64.
"""

from __future__ import annotations

import numpy as np

from onnxc.dialects.activations import ACTIVATIONS, GATE_ACTIVATIONS
from onnxc.dialects.graph import int_of
from onnxc.dialects.graph_rnn import (
    GRURecurrenceOp,
    LSTMRecurrenceOp,
    RecurrenceOp,
    RNNRecurrenceOp,
)


def _activation(name: str, alpha: float, beta: float, clip: float | None = None):
    """The gate activation `name` of float64 values, their pre-activation clipped first."""
    activation = GATE_ACTIVATIONS[name]

    def apply(x: np.ndarray) -> np.ndarray:
        if clip is not None:
            x = ACTIVATIONS["clip"].evaluate(x, -clip, clip)
        return activation.evaluate(x, alpha, beta)

    return apply


def recurrence(op: RecurrenceOp, args: list[np.ndarray]) -> list[np.ndarray]:
    named = op.operand_map(args)
    dtype = named["gates"].dtype
    layout = int_of(op.layout)
    gates = named["gates"].astype(np.float64)
    if layout:
        gates = gates.transpose(1, 0, 2, 3)  # [S, B, D, G*H]
    steps, batch, dirs, _ = gates.shape
    h = op.hidden()
    r = named["recurrence"].astype(np.float64)
    lens = named.get("sequence_lens")
    lens = np.full(batch, steps) if lens is None else lens.astype(np.int64)

    def state(name: str) -> np.ndarray:
        value = named.get(name)
        if value is None:
            return np.zeros((dirs, batch, h))
        value = value.astype(np.float64)
        value = value.transpose(1, 0, 2) if layout else value
        return np.where((lens > 0)[None, :, None], value, 0.0)  # as onnxruntime

    hs, cs = state("initial_h"), state("initial_c")
    y = np.zeros((steps, dirs, batch, h))
    clip = op.clip.value.data if op.clip is not None else None
    acts = op.activation_list()
    per = op.ACTIVATIONS_PER_DIRECTION
    for d in range(dirs):
        fns = [_activation(name, a, b, clip) for name, a, b in acts[d * per:(d + 1) * per]]
        order = range(steps - 1, -1, -1) if op.is_reverse(d) else range(steps)
        for t in order:
            valid = (t < lens)[:, None]
            h_old, c_old = hs[d], cs[d]
            x = gates[t, :, d]
            hr = h_old @ r[d].T
            if isinstance(op, LSTMRecurrenceOp):
                p = named.get("peepholes")
                p = np.zeros((dirs, 3 * h)) if p is None else p.astype(np.float64)
                xi, xo, xf, xc = np.split(x + hr, 4, -1)
                i = fns[0](xi + p[d, :h] * c_old)
                f = 1 - i if int_of(op.input_forget) else fns[0](xf + p[d, 2 * h:] * c_old)
                c = f * c_old + i * fns[1](xc)
                o = fns[0](xo + p[d, h:2 * h] * c)
                h_new = o * _activation(*acts[d * per + 2])(c)  # as onnxruntime: C unclipped
                cs[d] = np.where(valid, c, c_old)
            elif isinstance(op, GRURecurrenceOp):
                z = fns[0](x[:, :h] + hr[:, :h])
                rg = fns[0](x[:, h:2 * h] + hr[:, h:2 * h])
                if int_of(op.linear_before_reset):
                    rbh = named["recurrence_bias"].astype(np.float64)[d]
                    cand = fns[1](x[:, 2 * h:] + rg * (hr[:, 2 * h:] + rbh))
                else:
                    cand = fns[1](x[:, 2 * h:] + (rg * h_old) @ r[d, 2 * h:].T)
                h_new = (1 - z) * cand + z * h_old
            else:
                assert isinstance(op, RNNRecurrenceOp)
                h_new = fns[0](x + hr)
            hs[d] = np.where(valid, h_new, h_old)
            y[t, d] = np.where(valid, h_new, 0)
    if layout:
        y, hs, cs = y.transpose(2, 0, 1, 3), hs.transpose(1, 0, 2), cs.transpose(1, 0, 2)
    out = [y.astype(dtype), hs.astype(dtype)]
    if isinstance(op, LSTMRecurrenceOp):
        out.append(cs.astype(dtype))
    return out


EVALUATORS = {LSTMRecurrenceOp: recurrence, GRURecurrenceOp: recurrence,
              RNNRecurrenceOp: recurrence}
