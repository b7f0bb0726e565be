"""An op's lowering is one rule, and an activation one formula (issue 33, part 2).

Structure: every graph op with a kernel has exactly one KernelRule (graph_to_loops/rules.py),
the tables kernels.py derives agree with the rules, and the codegen hints that used to be
op-name strings (early kernels, no strength reduction, the forecast's convolution weight)
say what they said. Numerics: each activation of dialects/activations.py, evaluated by numpy
from its formula, against the compiled one-node model and onnxruntime (rtol 1e-5, atol 1e-6;
the kernels' exp / tanh / erf are polynomials), and as a MatMul epilogue in the interpreter.
"""

from __future__ import annotations

import types
from collections import Counter

import numpy as np
import pytest
from xdsl.dialects.builtin import FloatAttr, StringAttr, TensorType, f32
from xdsl.ir import Block

from onnxc.dialects import graph, graph_epilogue
from onnxc.dialects.activations import ACTIVATIONS, activation_of
from onnxc.frontend import onnx_export_fused
from onnxc.lowering import early_kernels
from onnxc.lowering.graph_to_loops import kernels
from onnxc.lowering.graph_to_loops.interpreter import run_single_op
from onnxc.lowering.graph_to_loops.rules import KernelRule
from tests.single_op import assert_same_outputs, reference_run, single_op_model

RTOL, ATOL = 1e-5, 1e-6


def _all_rules() -> list[KernelRule]:
    return [rule for module in kernels._MODULES for rule in module.RULES]


def test_every_kernel_op_has_exactly_one_rule():
    counts = Counter(rule.op for rule in _all_rules())
    assert [op.name for op, n in counts.items() if n != 1] == []
    assert set(counts) == set(kernels.KERNELS) == set(kernels.RULES)


def test_two_rules_for_one_op_fail_the_import():
    rule = KernelRule(graph.ReluOp, lambda op, kb, ins, outs: None)
    first = types.SimpleNamespace(__name__="first", RULES=(rule,))
    second = types.SimpleNamespace(__name__="second", RULES=(rule,))
    with pytest.raises(ImportError, match="two kernel rules for 'graph.relu'"):
        kernels._collect((first, second))


def test_derived_tables_agree_with_the_rules():
    rules = kernels.RULES
    assert kernels.KERNELS == {op: r.build for op, r in rules.items()}
    for table, field in ((kernels.KERNEL_CONSTANTS, "constants"),
                         (kernels.KERNEL_SCRATCH, "scratch"), (kernels.KERNEL_KEYS, "key")):
        assert table == {op: getattr(r, field) for op, r in rules.items()
                         if getattr(r, field) is not None}, field
    # what kernels.py wrote by hand before it had rules
    assert {op.name for op in kernels.KERNEL_CONSTANTS} >= {
        "graph.conv", "graph.conv_add", "graph.matmul", "graph.gemm", "graph.resize"}
    assert {op.name for op in kernels.KERNEL_SCRATCH} >= {
        "graph.conv", "graph.conv_add", "graph.matmul", "graph.gemm", "graph.resize",
        "graph.non_max_suppression"}


def test_every_symbolic_rule_is_in_symbolic_kernels():
    symbolic = {r.op for r in _all_rules() if r.symbolic}
    assert symbolic == kernels.SYMBOLIC_KERNELS
    assert kernels.SYMBOLIC_KERNELS <= set(kernels.KERNELS)


def test_codegen_hints_say_what_the_op_name_strings_said():
    assert early_kernels.EARLY_KERNELS == kernels.EARLY_KERNELS == frozenset({
        "graph.conv", "graph.conv_add", "graph.matmul", "graph.gemm", "graph.attention",
        "graph.pointwise_depthwise"})
    assert kernels.UNREDUCED_KERNELS == frozenset({"graph.conv", "graph.conv_add",
                                                   "graph.pointwise_depthwise"})
    for op in kernels.KERNELS:  # the forecast weighed `name.startswith("graph.conv")` 3x
        weight = 4 if op.name == "graph.pointwise_depthwise" else 3 if op.name.startswith(
            "graph.conv") else 1  # the fused kernel: a 1x1 conv's and a depthwise conv's
        assert kernels.forecast_weight(op.name) == weight
    assert kernels.forecast_weight("graph.if") == 1
    assert {op.name for op in kernels.BF16_KERNELS} == {  # compute_precision's former list
        "graph.matmul", "graph.gemm", "graph.conv", "graph.conv_add"}


# --------------------------------------------------------------------------- activations


def test_epilogue_names_and_parameters_come_from_the_table():
    assert set(graph_epilogue.ACTIVATIONS) == set(ACTIVATIONS)
    for name, (required, allowed) in graph_epilogue.ACTIVATIONS.items():
        assert (required, allowed) == (set(ACTIVATIONS[name].required),
                                       set(ACTIVATIONS[name].allowed))
    assert onnx_export_fused._ACTIVATION_NAMES == {n: a.onnx for n, a in ACTIVATIONS.items()}


# activation -> (ONNX op, its attributes, constant inputs, the table's alpha and beta)
ONE_NODE = {
    "relu": ("Relu", {}, {}, None, None),
    "clip": ("Clip", {}, {"lo": np.float32(-0.75), "hi": np.float32(1.25)}, -0.75, 1.25),
    "leaky_relu": ("LeakyRelu", {"alpha": 0.1}, {}, 0.1, None),
    "sigmoid": ("Sigmoid", {}, {}, None, None),
    "tanh": ("Tanh", {}, {}, None, None),
    "hard_swish": ("HardSwish", {}, {}, 1 / 6, 0.5),
    "gelu": ("Gelu", {}, {}, None, None),
    "gelu_tanh": ("Gelu", {"approximate": "tanh"}, {}, None, None),
}


# activations that ONNX (opset 20) writes as several nodes: (the nodes, the table's alpha
# and beta); x is the input, y the output
SEVERAL_NODES = {
    "silu": ([("Sigmoid", ["x"], ["s"]), ("Mul", ["x", "s"], ["y"])], None, None),
}


def test_every_activation_has_a_numerics_case():
    assert set(ONE_NODE) | set(SEVERAL_NODES) == set(ACTIVATIONS)
    assert not set(ONE_NODE) & set(SEVERAL_NODES)


@pytest.mark.parametrize("name", sorted(SEVERAL_NODES))
def test_several_node_activation_numpy_compiled_onnxruntime(name):
    """The same for an activation ONNX writes as a few nodes, after a Conv (where it becomes
    the conv's epilogue, on vectors) and alone (elementwise kernels)."""
    import onnxc
    from onnx import TensorProto, helper, numpy_helper

    nodes, alpha, beta = SEVERAL_NODES[name]
    x = _x(1, 8, 6, 10)
    w = np.random.default_rng(4).standard_normal((16, 8, 1, 1)).astype(np.float32) / 4
    for with_conv in (True, False):
        renamed = {"x": "c" if with_conv else "x"}
        body = [helper.make_node(t, [renamed.get(i, i) for i in ins], outs)
                for t, ins, outs in nodes]
        if with_conv:
            body.insert(0, helper.make_node("Conv", ["x", "w"], ["c"]))
        out = (1, 16, 6, 10) if with_conv else x.shape
        graph_proto = helper.make_graph(
            body, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)],
            [numpy_helper.from_array(w, "w")] if with_conv else [])
        model = helper.make_model(graph_proto, opset_imports=[helper.make_opsetid("", 20)])
        model.ir_version = 9
        (expected,) = reference_run(model, {"x": x})
        compiled = onnxc.compile(model, profile=True, cache_dir=False)
        (got,) = compiled.run(None, {"x": x})
        assert_same_outputs([got], [expected], rtol=RTOL, atol=ATOL)
        if with_conv:
            assert {row.op for row in compiled.profile().rows} <= {"graph.conv",
                                                                  "layout.convert"}
            pre = np.einsum("nchw,mc->nmhw", x, w[:, :, 0, 0])
        else:
            pre = x
        evaluated = ACTIVATIONS[name].evaluate(pre, alpha, beta)
        assert_same_outputs([evaluated], [got], rtol=RTOL, atol=1e-5)


def _x(*shape) -> np.ndarray:
    x = np.random.default_rng(3).uniform(-4, 4, shape).astype(np.float32)
    x.flat[:4] = [0.0, -0.0, 4.0, -4.0]
    return x


@pytest.mark.parametrize("name", sorted(ONE_NODE))
def test_activation_numpy_compiled_onnxruntime(name):
    """The numpy of the formula, the compiled one-node model and onnxruntime agree."""
    import onnxc

    op_type, attrs, consts, alpha, beta = ONE_NODE[name]
    x = _x(2, 3, 5, 7)
    model = single_op_model(op_type, {"x": x, **consts}, {"y": (np.float32, list(x.shape))},
                            attrs=attrs, initializers=consts, opset=20, ir_version=9)
    (expected,) = reference_run(model, {"x": x})
    (compiled,) = onnxc.compile(model).run(None, {"x": x})
    evaluated = ACTIVATIONS[name].evaluate(x, alpha, beta)
    assert_same_outputs([compiled], [expected], rtol=RTOL, atol=ATOL)
    assert_same_outputs([evaluated], [compiled], rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_as_an_epilogue(name):
    """The epilogue's loops (graph_to_loops/epilogue.py, interpreted) against numpy, on a
    MatMul whose product is exact (small integers times multiples of 1/8)."""
    alpha, beta = ONE_NODE[name][3:] if name in ONE_NODE else SEVERAL_NODES[name][1:]
    rng = np.random.default_rng(5)
    a = (rng.integers(-32, 32, (3, 4)) / 8).astype(np.float32)
    b = rng.integers(-1, 3, (4, 5)).astype(np.float32)
    props = {"activation": StringAttr(name)}
    if alpha is not None:
        props["activation_alpha"] = FloatAttr(alpha, f32)
    if beta is not None:
        props["activation_beta"] = FloatAttr(beta, f32)
    (got,) = run_single_op(graph.MatMulOp, [a, b], [((3, 5), np.float32)], props)
    expected = ACTIVATIONS[name].evaluate(a @ b, alpha, beta)
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)


def test_graph_ops_name_their_activation():
    t = TensorType(f32, [2])
    arg = Block(arg_types=[t]).args[0]
    leaky = graph.LeakyReluOp(operands=[arg], result_types=[t],
                              properties={"alpha": FloatAttr(0.25, f32)})
    clip = graph.ClipOp(operands=[arg], result_types=[t], properties={"max": FloatAttr(6.0, f32)})
    gelu = graph.GeluOp(operands=[arg], result_types=[t],
                        properties={"approximate": StringAttr("tanh")})
    assert activation_of(leaky) == (ACTIVATIONS["leaky_relu"], 0.25, None)
    assert activation_of(clip) == (ACTIVATIONS["clip"], None, 6.0)
    assert activation_of(gelu) == (ACTIVATIONS["gelu_tanh"], None, None)
    assert activation_of(graph.ExpOp(operands=[arg], result_types=[t])) is None


# --------------------------------------------------------------------------- gate activations


def test_gate_activations_name_the_recurrences_activations_and_defaults():
    """The importer's names and defaults and the recurrence verifier read GATE_ACTIVATIONS;
    Relu, Tanh, Sigmoid and Softplus / ThresholdedRelu are the records the epilogues and
    the elementwise ops use, HardSigmoid HardSwish's gate."""
    from onnxc.dialects import activations as act

    assert tuple(act.GATE_ACTIVATIONS) == (
        "Relu", "Tanh", "Sigmoid", "Affine", "LeakyRelu", "ThresholdedRelu", "ScaledTanh",
        "HardSigmoid", "Elu", "Softsign", "Softplus")
    defaults = {n: (a.alpha, a.beta) for n, a in act.GATE_ACTIVATIONS.items()
                if (a.alpha, a.beta) != (None, None)}
    assert defaults == {  # the importer's former table of ONNX's defaults
        "Affine": (1.0, 0.0), "LeakyRelu": (0.01, None), "ThresholdedRelu": (1.0, None),
        "ScaledTanh": (1.0, 1.0), "HardSigmoid": (0.2, 0.5), "Elu": (1.0, None)}
    for name in ("relu", "tanh", "sigmoid"):
        assert act.GATE_ACTIVATIONS[ACTIVATIONS[name].onnx] is ACTIVATIONS[name]
    assert act.GATE_ACTIVATIONS["Softplus"] is act.SOFTPLUS
    assert act.GATE_ACTIVATIONS["ThresholdedRelu"] is act.THRESHOLDED_RELU
    x = _x(64).astype(np.float64)
    np.testing.assert_array_equal(
        ACTIVATIONS["hard_swish"].evaluate(x, 0.2, 0.5),
        x * act.GATE_ACTIVATIONS["HardSigmoid"].evaluate(x, 0.2, 0.5))
    assert {n for n, a in act.GATE_ACTIVATIONS.items() if "less_than" in a.calls} == {
        "ThresholdedRelu"}  # the one the recurrence kernel runs on scalar lanes


def _identity_rnn(name: str, alpha: float | None, beta: float | None, hidden: int):
    """An RNN layer whose input projection is the identity and whose recurrence is zero:
    Y = activation(X), the kernel's vector lanes and scalar tail both."""
    from onnx import TensorProto, helper, numpy_helper

    w = np.eye(hidden, dtype=np.float32)[None]
    r = np.zeros((1, hidden, hidden), np.float32)
    attrs = {"hidden_size": hidden, "activations": [name]}
    if alpha is not None:
        attrs["activation_alpha"] = [alpha]
    if beta is not None:
        attrs["activation_beta"] = [beta]
    node = helper.make_node("RNN", ["X", "W", "R"], ["Y"], **attrs)
    graph_ = helper.make_graph(
        [node], "rnn", [helper.make_tensor_value_info("X", TensorProto.FLOAT, (3, 2, hidden))],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, (3, 1, 2, hidden))],
        [numpy_helper.from_array(w, "W"), numpy_helper.from_array(r, "R")])
    model = helper.make_model(graph_, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 9
    return model


@pytest.mark.parametrize("name", ["Relu", "Tanh", "Sigmoid", "Affine", "LeakyRelu",
                                  "ThresholdedRelu", "ScaledTanh", "HardSigmoid", "Elu",
                                  "Softsign", "Softplus"])
def test_gate_activation_compiled_in_the_recurrence_is_its_formula(name):
    """The recurrence kernel's lanes (graph_to_loops/rnn.py) and the numpy of the formula
    agree on every gate activation, with ONNX's default parameters."""
    import onnxc
    from onnxc.dialects.activations import GATE_ACTIVATIONS

    activation = GATE_ACTIVATIONS[name]
    hidden = 11
    model = _identity_rnn(name, activation.alpha, activation.beta, hidden)
    x = _x(3, 2, hidden)
    (y,) = onnxc.compile(model).run(None, {"X": x})
    expected = activation.evaluate(x.astype(np.float64), activation.alpha, activation.beta)
    np.testing.assert_allclose(y[:, 0], expected, rtol=RTOL, atol=ATOL)


# elementwise op -> (its record, attributes, the record's alpha)
ELEMENTWISE = {
    "Softplus": ("SOFTPLUS", {}, None),
    "Mish": ("MISH", {}, None),
    "ThresholdedRelu": ("THRESHOLDED_RELU", {"alpha": 0.5}, 0.5),
}


@pytest.mark.parametrize("op_type", sorted(ELEMENTWISE))
def test_elementwise_activation_numpy_compiled_onnxruntime(op_type):
    """graph.softplus / mish / thresholded_relu: the formula's numpy (the evaluator's), the
    compiled one-node model and onnxruntime agree."""
    import onnxc
    from onnxc.dialects import activations as act

    record, attrs, alpha = ELEMENTWISE[op_type]
    x = _x(2, 3, 5, 7) * 8  # Softplus's tail matters past |x| = 16
    model = single_op_model(op_type, {"x": x}, {"y": (np.float32, list(x.shape))},
                            attrs=attrs, opset=20, ir_version=9)
    (expected,) = reference_run(model, {"x": x})
    (compiled,) = onnxc.compile(model).run(None, {"x": x})
    evaluated = getattr(act, record).evaluate(x, alpha)
    assert_same_outputs([compiled], [expected], rtol=RTOL, atol=ATOL)
    assert_same_outputs([evaluated], [compiled], rtol=RTOL, atol=ATOL)
