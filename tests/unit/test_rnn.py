"""LSTM, GRU and RNN: compiled results against onnxruntime and onnx.reference.

Tolerances: rel 1e-5 + abs 1e-6 against onnx.reference (f64 numpy math on f32 inputs); the
f32 polynomial exp/tanh and a different summation order than onnxruntime's MLAS leave up to a
few 1e-7 absolute on these small layers, so onnxruntime comparisons use rel 1e-4 + abs 2e-6.
onnxruntime refuses layout = 1, so batch-first cases compare with onnx.reference or with
onnxruntime on the same data transposed to layout 0.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import onnxc
from onnxc.errors import InvalidInputError, UnsupportedOpError

ort = pytest.importorskip("onnxruntime")

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
REF_TOL = {"rtol": 1e-5, "atol": 1e-6}
ORT_TOL = {"rtol": 1e-4, "atol": 2e-6}


def rnn_model(kind: str, steps: int, batch: int, inputs: int, hidden: int, *,
              direction: str = "forward", layout: int = 0, weights_constant: bool = True,
              seq_lens=None, initial: bool = False, peepholes: bool = False, bias: bool = True,
              opset: int = 14, seed: int = 0, **attrs):
    """One LSTM/GRU/RNN node and its feeds."""
    dirs = 2 if direction == "bidirectional" else 1
    g = GATES[kind]
    rng = np.random.default_rng(seed)
    arrays = {"W": rng.uniform(-0.5, 0.5, (dirs, g * hidden, inputs)),
              "R": rng.uniform(-0.5, 0.5, (dirs, g * hidden, hidden))}
    if bias:
        arrays["B"] = rng.uniform(-0.5, 0.5, (dirs, 2 * g * hidden))
    x_shape = (batch, steps, inputs) if layout else (steps, batch, inputs)
    state = (batch, dirs, hidden) if layout else (dirs, batch, hidden)
    feeds = {"X": rng.standard_normal(x_shape).astype(np.float32)}
    graph_inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, x_shape)]
    initializers = []
    names = ["X", "W", "R", "B" if bias else ""]
    for name, array in arrays.items():
        array = array.astype(np.float32)
        if weights_constant:
            initializers.append(numpy_helper.from_array(array, name))
        else:
            graph_inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT,
                                                              array.shape))
            feeds[name] = array
    names.append("L" if seq_lens is not None else "")
    if seq_lens is not None:
        feeds["L"] = np.array(seq_lens, np.int32)
        graph_inputs.append(helper.make_tensor_value_info("L", TensorProto.INT32, (batch,)))
    extra = ["h0"] + (["c0"] if kind == "LSTM" else [])
    for name in extra:
        names.append(name if initial else "")
        if initial:
            feeds[name] = rng.standard_normal(state).astype(np.float32)
            graph_inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, state))
    if peepholes:
        names.append("P")
        p = rng.uniform(-0.5, 0.5, (dirs, 3 * hidden)).astype(np.float32)
        initializers.append(numpy_helper.from_array(p, "P"))
    while names and names[-1] == "":
        names.pop()
    outputs = ["Y", "Y_h"] + (["Y_c"] if kind == "LSTM" else [])
    if layout:
        attrs["layout"] = 1
    node = helper.make_node(kind, names, outputs, hidden_size=hidden, direction=direction,
                            **attrs)
    y = (batch, steps, dirs, hidden) if layout else (steps, dirs, batch, hidden)
    infos = [helper.make_tensor_value_info(n, TensorProto.FLOAT, y if n == "Y" else state)
             for n in outputs]
    graph = helper.make_graph([node], "rnn", graph_inputs, infos, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(model)
    return model, feeds


def run_onnxc(model, feeds):
    return onnxc.compile(model).run(None, feeds)


def run_ort(model, feeds):
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def assert_close(actual, expected, tol):
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected, strict=True):
        assert a.shape == e.shape
        np.testing.assert_allclose(a, e, **tol)


# ------------------------------------------------------------------ against onnx.reference

@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_directions_match_reference(kind, direction):
    model, feeds = rnn_model(kind, 5, 2, 3, 20, direction=direction, initial=True)
    expected = ReferenceEvaluator(model).run(None, feeds)
    assert_close(run_onnxc(model, feeds), expected, REF_TOL)


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_batch_first_layout_matches_reference(kind):
    model, feeds = rnn_model(kind, 4, 3, 5, 17, direction="bidirectional", layout=1,
                             initial=True)
    expected = ReferenceEvaluator(model).run(None, feeds)
    assert_close(run_onnxc(model, feeds), expected, REF_TOL)


def test_peepholes_match_reference():
    model, feeds = rnn_model("LSTM", 6, 2, 3, 33, direction="bidirectional", peepholes=True,
                             initial=True)
    expected = ReferenceEvaluator(model).run(None, feeds)
    assert_close(run_onnxc(model, feeds), expected, REF_TOL)


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_float64_matches_reference(kind):
    rng = np.random.default_rng(3)
    g, h = GATES[kind], 11
    weights = [numpy_helper.from_array(rng.uniform(-0.5, 0.5, (2, g * h, n)), name)
               for name, n in (("W", 3), ("R", h))]
    node = helper.make_node(kind, ["X", "W", "R"], ["Y", "Y_h"], hidden_size=h,
                            direction="bidirectional")
    graph = helper.make_graph(
        [node], "rnn", [helper.make_tensor_value_info("X", TensorProto.DOUBLE, (4, 2, 3))],
        [helper.make_tensor_value_info("Y", TensorProto.DOUBLE, (4, 2, 2, h)),
         helper.make_tensor_value_info("Y_h", TensorProto.DOUBLE, (2, 2, h))], weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    feeds = {"X": rng.standard_normal((4, 2, 3))}
    assert_close(run_onnxc(model, feeds), ReferenceEvaluator(model).run(None, feeds),
                 {"rtol": 1e-12, "atol": 1e-14})


# ------------------------------------------------------------------ against onnxruntime

@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_sequence_lens_match_onnxruntime(kind, direction):
    """Rows shorter than the sequence (one of length 0): zeros in Y past the end, the last
    valid state in Y_h; W, R, B are graph inputs (R packed at run time)."""
    model, feeds = rnn_model(kind, 6, 4, 3, 19, direction=direction, initial=True,
                             seq_lens=[6, 3, 0, 1], weights_constant=False)
    assert_close(run_onnxc(model, feeds), run_ort(model, feeds), ORT_TOL)


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_batch_first_sequence_lens_match_onnxruntime_transposed(kind):
    model, feeds = rnn_model(kind, 5, 3, 4, 9, direction="bidirectional", layout=1,
                             initial=True, seq_lens=[2, 5, 4])
    model0, feeds0 = rnn_model(kind, 5, 3, 4, 9, direction="bidirectional", initial=True,
                               seq_lens=[2, 5, 4])
    feeds0["X"] = feeds["X"].transpose(1, 0, 2)
    for name in ("h0", "c0"):
        if name in feeds:
            feeds0[name] = feeds[name].transpose(1, 0, 2)
    expected = run_ort(model0, feeds0)
    expected = [expected[0].transpose(2, 0, 1, 3)] + [e.transpose(1, 0, 2) for e in expected[1:]]
    assert_close(run_onnxc(model, feeds), expected, ORT_TOL)


@pytest.mark.parametrize("before_reset", [0, 1])
def test_gru_linear_before_reset_matches_onnxruntime(before_reset):
    model, feeds = rnn_model("GRU", 5, 2, 3, 21, direction="bidirectional", initial=True,
                             linear_before_reset=before_reset)
    assert_close(run_onnxc(model, feeds), run_ort(model, feeds), ORT_TOL)


def test_clip_and_input_forget_match_onnxruntime():
    model, feeds = rnn_model("LSTM", 5, 2, 3, 21, clip=0.5, input_forget=1, peepholes=True)
    assert_close(run_onnxc(model, feeds), run_ort(model, feeds), ORT_TOL)


@pytest.mark.parametrize(("kind", "activations", "alpha", "beta"), [
    ("RNN", ["Relu", "LeakyRelu"], [0.2], []),
    ("RNN", ["ThresholdedRelu", "ScaledTanh"], [0.1, 0.7], [1.3]),
    ("RNN", ["Affine", "Softsign"], [0.7], [0.1]),
    ("GRU", ["HardSigmoid", "Softsign", "Sigmoid", "Elu"], [0.3, 0.8], [0.4]),
    ("LSTM", ["Sigmoid", "Elu", "Softplus", "HardSigmoid", "Tanh", "Relu"], [0.7, 0.25],
     [0.45]),
])
def test_activations_match_onnxruntime(kind, activations, alpha, beta):
    """alpha / beta are consumed in order by the activations that take them."""
    params = {"activation_alpha": alpha} if alpha else {}
    if beta:
        params["activation_beta"] = beta
    model, feeds = rnn_model(kind, 5, 2, 3, 18, direction="bidirectional",
                             activations=activations, clip=2.5, **params)
    assert_close(run_onnxc(model, feeds), run_ort(model, feeds), ORT_TOL)


def test_no_bias_large_hidden_matches_onnxruntime():
    """H = 70: full GEMV chunks, a zero-padded tail chunk and a scalar gate-math tail."""
    model, feeds = rnn_model("LSTM", 3, 1, 8, 70, direction="bidirectional", bias=False)
    assert_close(run_onnxc(model, feeds), run_ort(model, feeds), ORT_TOL)


def test_opset_7_and_22_import():
    for opset in (7, 22):
        model, feeds = rnn_model("GRU", 3, 2, 3, 5, opset=opset)
        assert_close(run_onnxc(model, feeds), run_ort(model, feeds), ORT_TOL)


def test_constant_and_run_time_recurrence_weights_do_not_share_a_kernel():
    """Batch == hidden makes the packing scratch and the constant table the same type: the
    kernel key must still tell a constant R from a graph-input R."""
    rng = np.random.default_rng(5)
    h = 5
    w = rng.uniform(-0.5, 0.5, (1, 4 * h, 3)).astype(np.float32)
    r1, r2 = (rng.uniform(-0.5, 0.5, (1, 4 * h, h)).astype(np.float32) for _ in range(2))
    nodes = [helper.make_node("LSTM", ["X", "W", "R1"], ["", "h1"], hidden_size=h),
             helper.make_node("LSTM", ["X", "W", "R2"], ["", "h2"], hidden_size=h)]
    graph = helper.make_graph(
        nodes, "two", [helper.make_tensor_value_info("X", TensorProto.FLOAT, (4, h, 3)),
                       helper.make_tensor_value_info("R2", TensorProto.FLOAT, r2.shape)],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, (1, h, h)) for n in ("h1", "h2")],
        [numpy_helper.from_array(w, "W"), numpy_helper.from_array(r1, "R1")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    feeds = {"X": rng.standard_normal((4, h, 3)).astype(np.float32), "R2": r2}
    assert_close(run_onnxc(model, feeds), run_ort(model, feeds), ORT_TOL)


# ------------------------------------------------------------------ a stacked tagger

def tagger_model(steps: int, batch: int, embed: int, hidden: int, tags: int, seed: int = 0):
    """Two stacked bidirectional LSTMs and a linear head, as torch.onnx exports an
    nn.LSTM(num_layers=2, bidirectional=True) tagger: Y [S, 2, B, H] -> Transpose(0, 2, 1, 3)
    -> Reshape [S, B, 2H] between the layers."""
    rng = np.random.default_rng(seed)

    def init(name, *shape):
        scale = 1 / np.sqrt(hidden)
        return numpy_helper.from_array(rng.uniform(-scale, scale, shape).astype(np.float32),
                                       name)

    inits = [helper.make_tensor("shape", TensorProto.INT64, [3], [steps, batch, 2 * hidden]),
             init("head", 2 * hidden, tags), init("head_bias", tags)]
    nodes, x = [], "X"
    for layer, size in enumerate((embed, 2 * hidden)):
        w, r, b = f"W{layer}", f"R{layer}", f"B{layer}"
        inits += [init(w, 2, 4 * hidden, size), init(r, 2, 4 * hidden, hidden),
                  init(b, 2, 8 * hidden)]
        nodes += [
            helper.make_node("LSTM", [x, w, r, b], [f"y{layer}", f"h{layer}", f"c{layer}"],
                             hidden_size=hidden, direction="bidirectional"),
            helper.make_node("Transpose", [f"y{layer}"], [f"t{layer}"], perm=[0, 2, 1, 3]),
            helper.make_node("Reshape", [f"t{layer}", "shape"], [f"o{layer}"]),
        ]
        x = f"o{layer}"
    nodes += [helper.make_node("MatMul", [x, "head"], ["logits"]),
              helper.make_node("Add", ["logits", "head_bias"], ["scores"])]
    graph = helper.make_graph(
        nodes, "tagger",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, (steps, batch, embed))],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, (steps, batch, tags))],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    feeds = {"X": rng.standard_normal((steps, batch, embed)).astype(np.float32)}
    return model, feeds


def test_stacked_bidirectional_tagger_matches_onnxruntime():
    model, feeds = tagger_model(24, 1, 16, 40, 9)
    assert_close(run_onnxc(model, feeds), run_ort(model, feeds),
                 {"rtol": 1e-4, "atol": 1e-5})


def test_batch_first_symbolic_batch_runs_per_sample():
    """layout = 1 puts the batch first: the dynamic-batch mechanism compiles N = 1 once."""
    model, _ = rnn_model("GRU", 4, 1, 3, 6, direction="bidirectional", layout=1)
    for value in [*model.graph.input[:1], *model.graph.output]:
        value.type.tensor_type.shape.dim[0].dim_param = "N"
    compiled = onnxc.compile(model)
    for batch in (1, 3):
        x = np.random.default_rng(batch).standard_normal((batch, 4, 3)).astype(np.float32)
        expected = ReferenceEvaluator(model).run(None, {"X": x})
        assert_close(compiled.run(None, {"X": x}), expected, REF_TOL)


# ------------------------------------------------------------------ errors

def test_sequence_lens_out_of_range_is_a_run_time_error():
    model, feeds = rnn_model("LSTM", 4, 2, 3, 5, seq_lens=[4, 2])
    compiled = onnxc.compile(model)
    compiled.run(None, feeds)
    for bad in ([5, 1], [2, -1]):
        feeds["L"] = np.array(bad, np.int32)
        with pytest.raises(InvalidInputError, match="sequence_lens value .* out of range"):
            compiled.run(None, feeds)


def test_unknown_activation_is_refused():
    model, _ = rnn_model("RNN", 3, 1, 2, 4, activations=["Swish"])
    with pytest.raises(UnsupportedOpError, match="activation 'Swish'"):
        onnxc.compile(model)


def test_opset_1_is_refused():
    model, _ = rnn_model("RNN", 3, 1, 2, 4)
    model.opset_import[0].version = 1
    with pytest.raises(UnsupportedOpError, match="opsets before 7"):
        onnxc.compile(model)
