"""The recurrences of LSTM, GRU and RNN as ONNX's LSTM, GRU and RNN.

The importer (frontend/onnx_ops_rnn.py) splits each layer into the input projection, one
graph.gemm over every step (X W^T + Wb, + Rb where it commutes: all of it but GRU's Rbh
under linear_before_reset), reshaped into `gates` [S, B, D, G*H], and the recurrence
(graph.lstm_recurrence, gru_recurrence, rnn_recurrence) on those gates. ONNX's ops take the
unprojected X and W, so each recurrence is one call of a function (`LSTMRecurrence`, ...)
whose body is the ONNX op:

- when the gates are still that projection (Reshape of a plain Gemm, transB, alpha = beta
  = 1, of X reshaped to rows), the body is the op on X and W itself, W reshaped to
  [D, G*H, I] and B = [the Gemm's bias as Wb, zeros as Rb] (GRU under linear_before_reset:
  Rbh as Rb's last H); the projection's own nodes are then unused and dropped
  (onnx_export's pruning), so the layer comes back as one node;
- otherwise (a pass changed the projection) the body runs the op on the gates themselves:
  X = the gates as [S, B, D * G*H] and per direction d a constant W that picks d's block
  (W[d, j, d * G*H + j] = 1, zeros elsewhere), zero biases but Rbh. Exact for finite gates
  (one gate times 1 plus zeros); an infinite or NaN gate makes its row's other gates NaN.

The rest are the op's attributes, inverted from the properties: direction, hidden_size,
the activations with the alpha / beta of those that take them (in order, as ONNX consumes
them), clip, layout, input_forget, linear_before_reset; sequence_lens is cast to int32.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto
from xdsl.ir import Operation, SSAValue

from onnxc.dialects import graph, graph_rnn
from onnxc.dialects.graph import float_of, int_of, shape_of
from onnxc.dialects.graph_epilogue import epilogue_of
from onnxc.dialects.graph_rnn import RecurrenceOp
from onnxc.frontend.onnx_export import (
    FUNCTION_DOMAIN,
    Emitter,
    FunctionBody,
    OnnxWriter,
    numpy_dtype_of,
)

_KINDS = {graph_rnn.LSTMRecurrenceOp: "LSTM", graph_rnn.GRURecurrenceOp: "GRU",
          graph_rnn.RNNRecurrenceOp: "RNN"}
_ALPHA = {"Affine", "LeakyRelu", "ThresholdedRelu", "ScaledTanh", "HardSigmoid", "Elu"}
_BETA = {"Affine", "ScaledTanh", "HardSigmoid"}
"""The gate activations that take ONNX's activation_alpha / activation_beta."""
_FORMAL = {"gates": "X", "recurrence": "R", "recurrence_bias": "Rbh",
           "sequence_lens": "sequence_lens", "initial_h": "initial_h",
           "initial_c": "initial_c", "peepholes": "P"}


def _attributes(op: RecurrenceOp) -> dict[str, object]:
    acts = op.activation_list()
    alphas = [a for name, a, _ in acts if name in _ALPHA]
    betas = [b for name, _, b in acts if name in _BETA]
    attrs: dict[str, object] = {
        "direction": op.direction.data, "hidden_size": op.hidden(),
        "activations": [name for name, _, _ in acts],
        "activation_alpha": alphas or None, "activation_beta": betas or None,
        "clip": None if op.clip is None else float(op.clip.value.data),
        "layout": int_of(op.layout)}
    if isinstance(op, graph_rnn.LSTMRecurrenceOp):
        attrs["input_forget"] = int_of(op.input_forget)
    if isinstance(op, graph_rnn.GRURecurrenceOp):
        attrs["linear_before_reset"] = int_of(op.linear_before_reset)
    return attrs


def _projection(op: RecurrenceOp) -> tuple[SSAValue, SSAValue, SSAValue | None] | None:
    """(X [S, B, I] (layout 1: [B, S, I]), W [D * G*H, I], the bias [D * G*H] or None) when
    the gates are the importer's projection of X, else None."""
    gates = shape_of(op.gates)
    reshape = op.gates.owner
    if not isinstance(reshape, graph.ReshapeOp):
        return None
    gemm = reshape.input.owner
    if not (isinstance(gemm, graph.GemmOp) and epilogue_of(gemm) is None
            and float_of(gemm.alpha) == 1.0 and int_of(gemm.trans_a) == 0
            and int_of(gemm.trans_b) == 1
            and (gemm.c is None or float_of(gemm.beta) == 1.0)):
        return None
    rows = gemm.a.owner
    if not isinstance(rows, graph.ReshapeOp):
        return None
    x, w = shape_of(rows.input), shape_of(gemm.b)
    if len(x) != 3 or x[:2] != gates[:2] or w != (gates[2] * gates[3], x[2]):
        return None
    if gemm.c is not None and shape_of(gemm.c) != (w[0],):
        return None
    return rows.input, gemm.b, gemm.c


def _recurrence(w: OnnxWriter, op: RecurrenceOp) -> None:
    kind = _KINDS[type(op)]
    present = op.operand_map(list(op.operands))
    gates = shape_of(op.gates)
    d, h = op.directions(), op.hidden()
    gh = gates[3]
    dtype = numpy_dtype_of(op.gates)
    attrs = _attributes(op)
    outputs = ["Y", "Y_h", "Y_c"][:len(op.results)]
    projection = _projection(op)
    if projection is not None:
        x_value, w_value, bias_value = projection
        del present["gates"]
        present = {"gates": x_value, "weight": w_value,
                   **({"bias": bias_value} if bias_value is not None else {}), **present}
    formal = [{"weight": "W", "bias": "Wb"}.get(name) or _FORMAL[name] for name in present]
    lbr = "Rbh" in formal

    def build(body: FunctionBody) -> None:
        if projection is None:
            x = body.apply("Reshape", ["X", body.const(
                np.asarray([*gates[:2], d * gh], np.int64), "shape")], "gates")
            pick = np.zeros((d, gh, d * gh), dtype)
            for k in range(d):
                pick[k, :, k * gh:(k + 1) * gh] = np.eye(gh, dtype=dtype)
            weight = body.const(pick, "W")
        else:
            x = "X"
            weight = body.apply("Reshape", ["W", body.const(
                np.asarray([d, gh, -1], np.int64), "shape")], "weight")
        parts = [body.apply("Reshape", ["Wb", body.const(np.asarray([d, gh], np.int64),
                                                          "shape")], "input_bias")
                 if "Wb" in formal else body.const(np.zeros((d, gh), dtype), "input_bias"),
                 body.const(np.zeros((d, gh - h if lbr else gh), dtype), "recurrence_bias")]
        if lbr:
            parts.append("Rbh")
        bias = body.apply("Concat", parts, "bias", axis=1)
        lens = ""
        if "sequence_lens" in formal:
            lens = "sequence_lens"
            if numpy_dtype_of(present["sequence_lens"]) != np.int32:
                lens = body.apply("Cast", [lens], "lens", to=TensorProto.INT32)
        inputs = [x, weight, "R", bias, lens,
                  *(name if name in formal else "" for name in ("initial_h", "initial_c", "P"))]
        while not inputs[-1]:
            inputs.pop()
        body.node(kind, inputs, outputs, **attrs)

    key = (kind, tuple(formal), projection is not None,
           tuple(tuple(shape_of(v)) for v in present.values()), dtype.name,
           numpy_dtype_of(present["sequence_lens"]).name if "sequence_lens" in present
           else None, tuple((k, str(v)) for k, v in attrs.items()))
    fn = w.function(key, f"{kind}Recurrence", formal, outputs, build)
    w.emit(op, fn, w.names(list(present.values())), domain=FUNCTION_DOMAIN)


RECURRENT_EMITTERS: dict[type[Operation], Emitter] = {
    graph_rnn.LSTMRecurrenceOp: _recurrence,
    graph_rnn.GRURecurrenceOp: _recurrence,
    graph_rnn.RNNRecurrenceOp: _recurrence,
}
