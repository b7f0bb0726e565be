"""Every supported op, compiled end to end by onnxc.compile, against onnx.reference.

Each case is a one-node ONNX model (plus constant inputs as initializers) with seeded random
inputs; the reference is `onnx.reference.ReferenceEvaluator` (models below opset 13 are first
converted to opset 17, since the evaluator mis-evaluates opset-9 BatchNormalization and old
Softmax), except for LRN, where it sums squares over the wrong axis (its loop runs over the
batch dimension: onnx/reference/ops/op_lrn.py), so onnxruntime is the reference there.
Tolerance for float32: rtol 1e-5, atol 1e-5 (only summation order differs);
transcendental functions use rtol 1e-4 (our exp/tanh/erf vs numpy's).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx
import pytest
from onnx import TensorProto, numpy_helper
from onnx.reference import ReferenceEvaluator

import onnxc
from tests.single_op import numbered, single_op_model

F32 = TensorProto.FLOAT
I64 = TensorProto.INT64


@dataclass
class Case:
    """One node: its op, attributes, runtime inputs and constant (initializer) inputs."""

    id: str
    op: str
    inputs: list[tuple[str, tuple[int, ...]]]  # (dtype-tag "f"/"i"/"p"(positive f), shape)
    attrs: dict = field(default_factory=dict)
    consts: list[np.ndarray | None] = field(default_factory=list)  # appended after inputs
    opset: int = 17
    outputs: int = 1
    rtol: float = 1e-5
    reference: str = "onnx"  # or "onnxruntime" where onnx.reference is known to be wrong


def c(*a, **k) -> Case:
    return Case(*a, **k)


X4 = ("f", (2, 3, 5, 6))
UNARY = [
    c("relu", "Relu", [X4]), c("sigmoid", "Sigmoid", [X4], rtol=1e-4),
    c("tanh", "Tanh", [X4], rtol=1e-4), c("exp", "Exp", [X4], rtol=1e-4),
    c("log", "Log", [("p", (3, 7))], rtol=1e-4), c("sqrt", "Sqrt", [("p", (3, 7))]),
    c("neg", "Neg", [X4]), c("abs", "Abs", [X4]), c("reciprocal", "Reciprocal", [("p", (4, 5))]),
    c("identity", "Identity", [X4]), c("dropout", "Dropout", [X4]),
    c("leaky_relu", "LeakyRelu", [X4], {"alpha": 0.1}),
    c("clip_attr_opset9", "Clip", [X4], {"min": -0.2, "max": 0.3}, opset=9),
    c("clip_inputs", "Clip", [X4], consts=[np.float32(-0.1), np.float32(0.25)]),
    c("clip_min_only", "Clip", [X4], consts=[np.float32(0.05)]),
    c("cast_f_to_i", "Cast", [("f", (3, 4))], {"to": I64}),
    c("cast_i_to_f", "Cast", [("i", (3, 4))], {"to": F32}),
]
BINARY = [
    c(f"{op.lower()}_{tag}", op, [("p" if op in ("Div", "Pow") else "f", a),
                                 ("p" if op in ("Div", "Pow") else "f", b)],
      rtol=1e-4 if op == "Pow" else 1e-5)
    for op in ("Add", "Sub", "Mul", "Div", "Pow")
    for tag, a, b in (("same", (2, 3, 4), (2, 3, 4)), ("bcast_vec", (2, 3, 4), (4,)),
                      ("bcast_both", (2, 1, 4), (3, 1)), ("scalar", (3, 4), ()))
] + [
    c(f"{op.lower()}_variadic", op, [("f", (2, 3, 4)), ("f", (3, 1)), ("f", (4,))])
    for op in ("Sum", "Max", "Min")
] + [c("sum_one_input", "Sum", [("f", (3, 4))]), c("add_int", "Add", [("i", (3, 4)), ("i", (4,))])]
LINALG = [
    c("matmul_2d", "MatMul", [("f", (3, 4)), ("f", (4, 5))]),
    c("matmul_batched", "MatMul", [("f", (2, 3, 4)), ("f", (2, 4, 5))]),
    c("matmul_bcast", "MatMul", [("f", (2, 3, 4)), ("f", (4, 5))]),
    c("matmul_vec_left", "MatMul", [("f", (4,)), ("f", (4, 5))]),
    c("matmul_vec_right", "MatMul", [("f", (3, 4)), ("f", (4,))]),
    c("gemm_plain", "Gemm", [("f", (3, 4)), ("f", (4, 5))]),
    c("gemm_bias_vec", "Gemm", [("f", (3, 4)), ("f", (4, 5)), ("f", (5,))]),
    c("gemm_trans", "Gemm", [("f", (4, 3)), ("f", (5, 4)), ("f", (3, 5))],
      {"transA": 1, "transB": 1, "alpha": 0.5, "beta": 2.0}),
    c("gemm_bias_scalar_opset9", "Gemm", [("f", (3, 4)), ("f", (4, 5)), ("f", (1,))],
      {"transB": 0}, opset=9),
]
CONV = [
    c("conv_basic", "Conv", [("f", (1, 3, 7, 7)), ("f", (4, 3, 3, 3))]),
    c("conv_bias_pads", "Conv", [("f", (2, 3, 7, 8)), ("f", (4, 3, 3, 3)), ("f", (4,))],
      {"pads": [1, 1, 1, 1]}),
    c("conv_strides_asym_pads", "Conv", [("f", (1, 2, 9, 9)), ("f", (3, 2, 3, 2))],
      {"strides": [2, 3], "pads": [0, 1, 2, 0]}),
    c("conv_dilations", "Conv", [("f", (1, 2, 9, 9)), ("f", (2, 2, 3, 3))],
      {"dilations": [2, 2], "pads": [2, 2, 2, 2]}),
    c("conv_group", "Conv", [("f", (1, 4, 6, 6)), ("f", (6, 2, 3, 3)), ("f", (6,))],
      {"group": 2, "pads": [1, 1, 1, 1]}),
    c("conv_depthwise", "Conv", [("f", (1, 4, 6, 6)), ("f", (4, 1, 3, 3))],
      {"group": 4, "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    c("conv_same_upper", "Conv", [("f", (1, 2, 7, 7)), ("f", (3, 2, 4, 4))],
      {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    c("conv_1d", "Conv", [("f", (2, 3, 10)), ("f", (4, 3, 3))], {"pads": [1, 0]}),
    c("conv_1x1", "Conv", [("f", (1, 8, 5, 5)), ("f", (4, 8, 1, 1))]),
]
POOL = [
    c("maxpool_basic", "MaxPool", [X4], {"kernel_shape": [2, 2]}),
    c("maxpool_pads_strides", "MaxPool", [("f", (1, 2, 7, 7))],
      {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    c("maxpool_ceil", "MaxPool", [("f", (1, 2, 8, 8))],
      {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
    c("maxpool_dilations", "MaxPool", [("f", (1, 1, 8, 8))],
      {"kernel_shape": [2, 2], "dilations": [2, 2]}),
    c("avgpool_exclude_pad", "AveragePool", [("f", (1, 2, 7, 7))],
      {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
    c("avgpool_include_pad", "AveragePool", [("f", (1, 2, 7, 7))],
      {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1],
       "count_include_pad": 1}),
    c("avgpool_ceil", "AveragePool", [("f", (1, 2, 8, 8))],
      {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
    c("global_avgpool", "GlobalAveragePool", [X4]),
    c("global_maxpool", "GlobalMaxPool", [X4]),
]
NORM = [
    c("batchnorm", "BatchNormalization",
      [X4, ("f", (3,)), ("f", (3,)), ("f", (3,)), ("p", (3,))], {"epsilon": 1e-3}),
    c("batchnorm_opset9", "BatchNormalization",
      [X4, ("f", (3,)), ("f", (3,)), ("f", (3,)), ("p", (3,))], opset=9),
    c("lrn", "LRN", [("f", (1, 7, 4, 4))], {"size": 5, "alpha": 1e-3, "beta": 0.75,
                                            "bias": 1.0}, rtol=1e-4, reference="onnxruntime"),
    c("lrn_size3", "LRN", [("f", (2, 4, 3, 3))], {"size": 3, "alpha": 0.1}, rtol=1e-4,
      reference="onnxruntime"),
    c("softmax_last", "Softmax", [("f", (3, 10))], rtol=1e-4),
    c("softmax_axis1", "Softmax", [("f", (2, 5, 3))], {"axis": 1}, rtol=1e-4),
    c("softmax_opset9_coerced", "Softmax", [("f", (2, 3, 4))], {"axis": 1}, opset=9,
      rtol=1e-4),
]
MOVEMENT = [
    c("reshape", "Reshape", [("f", (2, 3, 4))], consts=[np.array([4, -1, 3], np.int64)]),
    c("reshape_zero", "Reshape", [("f", (2, 3, 4))], consts=[np.array([0, 12], np.int64)]),
    c("flatten_1", "Flatten", [X4]), c("flatten_0", "Flatten", [X4], {"axis": 0}),
    c("flatten_3", "Flatten", [X4], {"axis": 3}),
    c("transpose_default", "Transpose", [("f", (2, 3, 4))]),
    c("transpose_perm", "Transpose", [X4], {"perm": [0, 2, 3, 1]}),
    c("concat_axis1", "Concat", [("f", (2, 3, 4)), ("f", (2, 1, 4)), ("f", (2, 2, 4))],
      {"axis": 1}),
    c("concat_neg_axis", "Concat", [("f", (2, 3)), ("f", (2, 4))], {"axis": -1}),
    c("split_equal", "Split", [("f", (2, 6, 3))], {"axis": 1}, outputs=3),
    c("split_sizes", "Split", [("f", (5, 4))], consts=[np.array([2, 3], np.int64)],
      outputs=2),
    c("slice_basic", "Slice", [("f", (5, 6))], consts=[np.array([1, 0]), np.array([4, 6])]),
    c("slice_neg_step", "Slice", [("f", (5, 6))],
      consts=[np.array([-1]), np.array([-100]), np.array([1]), np.array([-2])]),
    c("slice_clamped", "Slice", [("f", (4, 5, 6))],
      consts=[np.array([1, -3]), np.array([1000, -1]), np.array([0, 2])]),
    c("slice_opset9", "Slice", [("f", (4, 5))], {"starts": [1], "ends": [3], "axes": [1]},
      opset=9),
    c("unsqueeze", "Unsqueeze", [("f", (3, 4))], consts=[np.array([0, 3])]),
    c("unsqueeze_opset11", "Unsqueeze", [("f", (3, 4))], {"axes": [1, -1]}, opset=11),
    c("squeeze", "Squeeze", [("f", (1, 3, 1, 4))], consts=[np.array([0, 2])]),
    c("squeeze_all", "Squeeze", [("f", (1, 3, 1, 4))]),
    c("shape", "Shape", [X4]),
    c("gather_axis0", "Gather", [("f", (5, 4))], consts=[np.array([[0, 4], [-1, 2]])]),
    c("gather_axis1", "Gather", [("f", (3, 5, 2))], {"axis": 1}, consts=[np.array([3, 0])]),
    c("pad_constant", "Pad", [("f", (2, 3))], {"mode": "constant"},
      consts=[np.array([1, 0, 2, 3]), np.float32(0.5)]),
    c("pad_reflect", "Pad", [("f", (1, 2, 4, 5))], {"mode": "reflect"},
      consts=[np.array([0, 0, 2, 1, 0, 0, 1, 3])]),
    c("pad_edge", "Pad", [("f", (3, 4))], {"mode": "edge"}, consts=[np.array([2, 1, 0, 2])]),
    c("pad_opset9", "Pad", [("f", (2, 3))], {"pads": [0, 1, 1, 0], "value": -1.0}, opset=9),
    c("constant_of_shape", "ConstantOfShape", [],
      {"value": numpy_helper.from_array(np.array([0.25], np.float32))},
      consts=[np.array([2, 3])]),
]
CASES = UNARY + BINARY + LINALG + CONV + POOL + NORM + MOVEMENT


def _sample(tag: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    if tag == "i":
        return rng.integers(-5, 6, size=shape).astype(np.int64)
    data = rng.standard_normal(shape) if tag == "f" else rng.uniform(0.5, 2.0, shape)
    return np.asarray(data, dtype=np.float32)


def _const(value) -> np.ndarray | None:
    """A constant input as an array (integers as int64); None: an omitted input."""
    if value is None:
        return None
    arr = np.asarray(value)
    return arr.astype(np.int64) if arr.dtype.kind == "i" else arr


def build(case: Case, rng: np.random.Generator) -> tuple[onnx.ModelProto, dict]:
    feeds = {f"x{i}": _sample(tag, shape, rng) for i, (tag, shape) in enumerate(case.inputs)}
    model = single_op_model(case.op, feeds, [f"y{k}" for k in range(case.outputs)],
                            attrs=case.attrs,
                            initializers=numbered([_const(v) for v in case.consts], "c"),
                            node_name=f"{case.id}_node", opset=case.opset, ir_version=8)
    return model, feeds


def reference(model: onnx.ModelProto, feeds: dict, engine: str = "onnx") -> list[np.ndarray]:
    if engine == "onnxruntime":
        import onnxruntime

        session = onnxruntime.InferenceSession(
            model.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        return session.run(None, feeds)
    if model.opset_import[0].version < 13:
        model = onnx.version_converter.convert_version(model, 17)
    return ReferenceEvaluator(model).run(None, feeds)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_op_matches_reference(case: Case) -> None:
    model, feeds = build(case, np.random.default_rng(0))
    expected = reference(model, feeds, case.reference)
    actual = onnxc.compile(model).run(None, feeds)
    assert len(actual) == len(expected)
    for got, exp in zip(actual, expected):
        exp = np.asarray(exp)
        assert got.shape == exp.shape and got.dtype == exp.dtype
        np.testing.assert_allclose(got, exp, rtol=case.rtol, atol=1e-5)
