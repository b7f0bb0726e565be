"""Importer tests for elementwise math, Cast, Clip, MatMul and Gemm across opsets."""

from __future__ import annotations

import numpy as np
import onnx
import onnx.parser
import pytest
from xdsl.dialects.builtin import f32, i64

import onnxc
from onnxc.dialects import graph
from onnxc.dialects.graph import float_of, int_of, shape_of
from onnxc.errors import ModelLoadError, UnsupportedOpError
from tests.ir_helpers import imported_ops

ort = pytest.importorskip("onnxruntime")

NEWEST = 28


def imported(text: str, opset: int) -> list:
    return imported_ops(text, opset)


def names(ops) -> list[str]:
    return [op.name for op in ops]


UNARY = {
    "Relu": graph.ReluOp, "Sigmoid": graph.SigmoidOp, "Tanh": graph.TanhOp,
    "Exp": graph.ExpOp, "Log": graph.LogOp, "Sqrt": graph.SqrtOp, "Neg": graph.NegOp,
    "Abs": graph.AbsOp, "Reciprocal": graph.ReciprocalOp, "Identity": graph.IdentityOp,
}


@pytest.mark.parametrize("opset", [9, 13, NEWEST])
@pytest.mark.parametrize("op_type", sorted(UNARY))
def test_unary(op_type: str, opset: int):
    (op,) = imported(f"g (float[2,3] x) => (y) {{ y = {op_type}(x) }}", opset)
    assert isinstance(op, UNARY[op_type])
    assert shape_of(op.output) == (2, 3)
    assert op.output.name_hint == "y"


def test_leaky_relu_default_and_explicit_alpha():
    (op,) = imported("g (float[4] x) => (y) { y = LeakyRelu(x) }", 9)
    assert float_of(op.alpha) == pytest.approx(0.01)
    (op,) = imported("g (float[4] x) => (y) { y = LeakyRelu<alpha = 0.2>(x) }", 16)
    assert float_of(op.alpha) == pytest.approx(0.2)


def test_clip_attributes_before_opset_11():
    (op,) = imported("g (float[4] x) => (y) { y = Clip<min = -1.5>(x) }", 9)
    assert isinstance(op, graph.ClipOp)
    assert float_of(op.min) == -1.5 and op.max is None


@pytest.mark.parametrize("opset", [11, 13, NEWEST])
def test_clip_constant_inputs(opset: int):
    (op,) = imported(
        "g (float[4] x) => (y) <float lo = {0.0}, float hi = {6.0}> { y = Clip(x, lo, hi) }",
        opset,
    )
    assert (float_of(op.min), float_of(op.max)) == (0.0, 6.0)
    (op,) = imported("g (float[4] x) => (y) <float hi = {6.0}> { y = Clip(x, , hi) }", opset)
    assert op.min is None and float_of(op.max) == 6.0
    (op,) = imported("g (float[4] x) => (y) { y = Clip(x) }", opset)
    assert op.min is None and op.max is None


def test_clip_bounds_computed_in_the_run_are_max_and_min():
    """Clip(x, lo, hi) with graph inputs as bounds: min(max(x, lo), hi), as ONNX defines
    it (hi wins where lo > hi); run against onnxruntime, bounds crossing included."""
    ops = imported("g (float[n,3] x, float lo, float hi) => (y) { y = Clip(x, lo, hi) }", 13)
    assert names(ops) == ["graph.clip", "graph.max", "graph.min"]
    model = onnx.parser.parse_model(
        '<ir_version: 8, opset_import: ["" : 13]> g (float[n,3] x, float lo, float hi) => '
        "(float[n,3] y) { y = Clip(x, lo, hi) }")
    compiled = onnxc.compile(model, cache_dir=False, quiet=True)
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    for rows, lo, hi in ((4, -0.5, 0.5), (2, 0.2, 0.1), (0, 0.0, 1.0)):
        feeds = {"x": rng.standard_normal((rows, 3)).astype(np.float32),
                 "lo": np.array(lo, np.float32), "hi": np.array(hi, np.float32)}
        np.testing.assert_array_equal(compiled.run(None, feeds)[0],
                                      session.run(None, feeds)[0])


def test_clip_bound_of_another_type_is_invalid():
    with pytest.raises(ModelLoadError, match=r"\(Clip, opset 13\).*min must be a scalar"):
        imported("g (float[4] x, double m) => (y) { y = Clip(x, m) }", 13)


@pytest.mark.parametrize("opset", [9, 13, NEWEST])
def test_cast_sets_result_element_type(opset: int):
    (op,) = imported("g (float[2,3] x) => (y) { y = Cast<to = 7>(x) }", opset)
    assert isinstance(op, graph.CastOp)
    assert op.output.type.get_element_type() == i64
    assert shape_of(op.output) == (2, 3)


def test_cast_to_same_type_is_identity():
    (op,) = imported("g (float[2] x) => (y) { y = Cast<to = 1>(x) }", 13)
    assert isinstance(op, graph.IdentityOp)


def test_cast_to_unsupported_type():
    with pytest.raises(UnsupportedOpError, match="COMPLEX64"):
        imported("g (float[2] x) => (y) { y = Cast<to = 14>(x) }", 13)


def test_cast_with_string_target_before_opset_6():
    (op,) = imported('g (int64[2] x) => (y) { y = Cast<to = "FLOAT">(x) }', 5)
    assert op.output.type.get_element_type() == f32


BINARY = {"Add": graph.AddOp, "Sub": graph.SubOp, "Mul": graph.MulOp, "Div": graph.DivOp,
          "Pow": graph.PowOp}


@pytest.mark.parametrize("opset", [7, 13, NEWEST])
@pytest.mark.parametrize("op_type", sorted(BINARY))
def test_binary_broadcasts(op_type: str, opset: int):
    (op,) = imported(f"g (float[2,1,4] a, float[3,1] b) => (y) {{ y = {op_type}(a, b) }}", opset)
    assert isinstance(op, BINARY[op_type])
    assert shape_of(op.output) == (2, 3, 4)


def test_legacy_broadcast_with_axis_unsqueezes_rhs():
    ops = imported(
        "g (float[2,3,4,5] a, float[3] b) => (y) { y = Add<broadcast = 1, axis = 1>(a, b) }", 6
    )
    assert names(ops) == ["graph.unsqueeze", "graph.add"]
    assert shape_of(ops[0].output) == (3, 1, 1)
    assert shape_of(ops[1].output) == (2, 3, 4, 5)


def test_legacy_broadcast_without_axis_aligns_at_the_end():
    ops = imported(
        "g (float[2,3,4,5] a, float[4,5] b) => (y) { y = Mul<broadcast = 1>(a, b) }", 6
    )
    assert names(ops) == ["graph.mul"]


def test_pow_with_integer_exponent_casts_it():
    ops = imported("g (float[3] a, int64[3] b) => (y) { y = Pow(a, b) }", 15)
    assert names(ops) == ["graph.cast", "graph.pow"]
    assert ops[0].output.type.get_element_type() == f32


@pytest.mark.parametrize("op_type", ["Sum", "Max", "Min"])
def test_variadic(op_type: str):
    (op,) = imported(
        f"g (float[2,3] a, float[3] b, float[1,1] c) => (y) {{ y = {op_type}(a, b, c) }}", 13
    )
    assert op.name == f"graph.{op_type.lower()}"
    assert len(op.inputs) == 3 and shape_of(op.output) == (2, 3)


@pytest.mark.parametrize("opset", [6, 8, 13])
@pytest.mark.parametrize("op_type", ["Sum", "Max", "Min"])
def test_variadic_with_one_input_is_identity(op_type: str, opset: int):
    (op,) = imported(f"g (float[2,3] a) => (y) {{ y = {op_type}(a) }}", opset)
    assert isinstance(op, graph.IdentityOp)


def test_mean_is_sum_divided_by_count():
    ops = imported("g (float[2] a, float[2] b) => (y) { y = Mean(a, b) }", 13)
    assert names(ops) == ["graph.sum", "graph.constant", "graph.div"]
    assert list(ops[1].value.get_values()) == [2.0]


@pytest.mark.parametrize(
    ("a", "b", "out"),
    [("[2,3]", "[3,4]", (2, 4)), ("[5,2,3]", "[3]", (5, 2)), ("[3]", "[4,3,2]", (4, 2)),
     ("[7,1,2,3]", "[5,3,4]", (7, 5, 2, 4))],
)
def test_matmul_shapes(a: str, b: str, out: tuple[int, ...]):
    (op,) = imported(f"g (float{a} a, float{b} b) => (y) {{ y = MatMul(a, b) }}", 13)
    assert isinstance(op, graph.MatMulOp) and shape_of(op.output) == out


def test_gemm_defaults_and_transpose():
    (op,) = imported(
        "g (float[4,3] a, float[5,4] b, float[5] c) => (y) "
        "{ y = Gemm<transA = 1, transB = 1>(a, b, c) }",
        13,
    )
    assert isinstance(op, graph.GemmOp)
    assert (int_of(op.trans_a), int_of(op.trans_b)) == (1, 1)
    assert (float_of(op.alpha), float_of(op.beta)) == (1.0, 1.0)
    assert op.c is not None and shape_of(op.output) == (3, 5)


def test_gemm_legacy_broadcast_attribute():
    (op,) = imported(
        "g (float[2,3] a, float[3,4] b, float[4] c) => (y) "
        "{ y = Gemm<broadcast = 1, alpha = 0.5>(a, b, c) }",
        6,
    )
    assert float_of(op.alpha) == 0.5 and shape_of(op.output) == (2, 4)


def test_gemm_without_c_since_opset_11():
    (op,) = imported("g (float[2,3] a, float[3,4] b) => (y) { y = Gemm(a, b) }", 11)
    assert op.c is None


def test_identity_of_constant_stays_constant():
    ops = imported(
        "g (float[2] x) => (y) <float[2] w = {1.0, 2.0}> { i = Identity(w) y = Add(x, i) }", 13
    )
    assert names(ops) == ["graph.constant", "graph.add"]


def test_cast_like_takes_the_second_input_type():
    (op,) = imported("g (float[3] x, int32[1] t) => (y) { y = CastLike(x, t) }", 15)
    assert isinstance(op, graph.CastOp)
    assert str(op.output.type) == "tensor<3xi32>"


@pytest.mark.parametrize(
    ("body", "ops"),
    [
        ("y = PRelu(x, s)", ["graph.constant", "graph.min", "graph.mul", "graph.relu",
                             "graph.add"]),
        ("y = HardSigmoid(x)", ["graph.constant", "graph.mul", "graph.constant", "graph.add",
                                "graph.clip"]),
        ("y = Softsign(x)", ["graph.abs", "graph.constant", "graph.add", "graph.div"]),
        ("y = Elu(x)", ["graph.constant", "graph.min", "graph.exp", "graph.constant",
                        "graph.sub", "graph.constant", "graph.mul", "graph.relu", "graph.add"]),
    ],
)
def test_activations_are_decomposed(body: str, ops: list[str]):
    assert names(imported(f"g (float[2,3] x, float[3] s) => (y) {{ {body} }}", 16)) == ops


def test_activation_on_integers_is_unsupported():
    with pytest.raises(UnsupportedOpError, match="Elu of i32"):
        imported("g (int32[3] x) => (y) { y = Elu(x) }", 13)


def test_gelu_imports_as_one_op():
    assert names(imported("g (float[3] x) => (y) { y = Gelu(x) }", 20)) == ["graph.gelu"]
    tanh = imported('g (float[3] x) => (y) { y = Gelu<approximate = "tanh">(x) }', 20)
    assert names(tanh) == ["graph.gelu"]
