"""fp16 and bf16 tensors on every kind of kernel (passes/half_precision.py): one-node models
whose inputs, weights and output are in the half type, against onnx.reference on the same
values in f32, rounded once to the half type.

onnxc computes in f32 and rounds each op's result once, so the only differences are the f32
arithmetic's own (a K-deep dot product, an exp, a different summation order: a few f32 ulps)
where they move the result across a half rounding boundary: one half ulp. Tolerance: rtol
2u, atol u * max|reference| (u = 2^-11 for fp16, 2^-8 for bf16; the atol covers results near
zero, whose ulp is smaller than the error of the f32 sum they came from).
"""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from xdsl.dialects.builtin import BFloat16Type, Float16Type, IntegerAttr, TensorType, i64
from xdsl.ir import Block

import onnxc
import onnxc.passes.levels
from onnxc.dialects import graph
from onnxc.errors import UnsupportedOpError
from onnxc.passes.half_precision import has_half_kernel, needs_widening
from onnxc.passes.rewrite_utils import i64_array
from onnxc.passes.verify_numerics import check_pass_equivalence
from tests.ir_helpers import parse_graph, split_lit_cases
from tests.single_op import numbered, single_op_model

RNG = np.random.default_rng(10)
HALVES = {"fp16": (np.dtype(np.float16), 2.0**-11), "bf16": (np.dtype(ml_dtypes.bfloat16), 2.0**-8)}


def _model(op, inputs, attrs, consts, elem_type, opset, outputs=1):
    """Inputs x0.. of `elem_type` and the arrays' shapes, constants c0.., outputs y0..;
    shapes inferred (strict)."""
    return single_op_model(op, {f"x{i}": (elem_type, a.shape) for i, a in enumerate(inputs)},
                           [f"y{i}" for i in range(outputs)], attrs=attrs,
                           initializers=numbered(consts, "c"), opset=opset,
                           infer_shapes="strict")


def check(op: str, shapes, attrs=None, consts=(), half="fp16", opset=17, opt_level=3,
          outputs=1):
    """`op` on half inputs and half constant operands (`consts`, f32 arrays rounded to the
    half type) against onnx.reference in f32 on the same values, rounded once."""
    dtype, u = HALVES[half]
    elem = helper.np_dtype_to_tensor_dtype(dtype)
    xs = [RNG.standard_normal(s).astype(dtype) for s in shapes]
    cs = [c.astype(dtype) if c.dtype == np.float32 else c for c in consts]
    model = _model(op, xs, attrs or {}, cs, elem, opset, outputs)
    wide = _model(op, [x.astype(np.float32) for x in xs], attrs or {},
                  [c.astype(np.float32) if c.dtype == dtype else c for c in cs],
                  TensorProto.FLOAT, opset, outputs)
    expected = ReferenceEvaluator(wide).run(None, {f"x{i}": x.astype(np.float32)
                                                   for i, x in enumerate(xs)})
    got = onnxc.compile(model, opt_level=opt_level).run(None, {f"x{i}": x
                                                               for i, x in enumerate(xs)})
    for ours, reference in zip(got, expected):
        assert ours.shape == reference.shape
        if reference.dtype != np.float32:  # indices: exact
            np.testing.assert_array_equal(ours, reference)
            continue
        assert ours.dtype == dtype
        rounded = reference.astype(dtype).astype(np.float64)
        np.testing.assert_allclose(ours.astype(np.float64), rounded, rtol=2 * u,
                                   atol=u * float(np.abs(reference).max()))


def _w(*shape, scale=0.3):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


CASES = {
    "conv": ("Conv", [(1, 8, 9, 9)], {"pads": [1, 1, 1, 1]}, lambda: [_w(16, 8, 3, 3), _w(16)]),
    "depthwise": ("Conv", [(1, 8, 7, 7)], {"group": 8, "pads": [1, 1, 1, 1]},
                  lambda: [_w(8, 1, 3, 3)]),
    "matmul": ("MatMul", [(2, 5, 64), (2, 64, 7)], {}, list),
    "gemm": ("Gemm", [(4, 96)], {"transB": 1}, lambda: [_w(10, 96), _w(10)]),
    "maxpool": ("MaxPool", [(1, 4, 8, 8)], {"kernel_shape": [3, 3], "strides": [2, 2]}, list),
    "avgpool": ("AveragePool", [(1, 4, 8, 8)], {"kernel_shape": [2, 2]}, list),
    "global_avg": ("GlobalAveragePool", [(1, 6, 5, 5)], {}, list),
    "batchnorm": ("BatchNormalization", [(2, 3, 4, 4)], {},
                  lambda: [_w(3) + 1, _w(3), _w(3), np.abs(_w(3)) + 0.5]),
    "layernorm": ("LayerNormalization", [(3, 48)], {"axis": -1}, lambda: [_w(48) + 1, _w(48)]),
    "softmax": ("Softmax", [(3, 40)], {"axis": -1}, list),
    "reduce_mean": ("ReduceMean", [(4, 6, 5)], {"axes": [1, 2]}, list),
    "erf": ("Erf", [(5, 7)], {}, list),
    "leaky_relu": ("LeakyRelu", [(5, 7)], {"alpha": 0.1}, list),
    "argmax": ("ArgMax", [(4, 9)], {"axis": 1}, list),
    "broadcast_add": ("Add", [(3, 4), (4,)], {}, list),
}


@pytest.mark.parametrize("half", sorted(HALVES))
@pytest.mark.parametrize("case", sorted(CASES))
def test_half_op(case, half):
    op, shapes, attrs, consts = CASES[case]
    check(op, shapes, attrs, consts(), half=half)


@pytest.mark.parametrize("half", sorted(HALVES))
@pytest.mark.parametrize("case", ["conv", "softmax", "matmul"])
def test_half_op_without_graph_passes(case, half):
    """-O0 runs no graph pass: widen-half-precision runs before lowering at every level."""
    op, shapes, attrs, consts = CASES[case]
    check(op, shapes, attrs, consts(), half=half, opt_level=0)


def test_topk_values_and_indices():
    check("TopK", [(3, 10)], {"axis": 1}, [np.array([4], np.int64)], outputs=2)


def test_weights_are_converted_at_compile_time():
    """The f32 conv reads an f32 constant, not a run-time cast of the fp16 weight."""
    model = _model("Conv", [np.zeros((1, 2, 4, 4), np.float16)], {},
                   [_w(3, 2, 1, 1).astype(np.float16)], TensorProto.FLOAT16, 17)
    module = onnxc.optimize(model, opt_level=1)
    ops = list(module.walk())
    conv = next(op for op in ops if isinstance(op, graph.ConvOp))
    assert isinstance(conv.weight.owner, graph.ConstantOp)
    assert str(conv.weight.type) == "tensor<3x2x1x1xf32>"
    casts = [op for op in ops if isinstance(op, graph.CastOp)]
    assert [str(c.input.type) for c in casts] == ["tensor<1x2x4x4xf16>", "tensor<1x3x4x4xf32>"]


def test_which_ops_keep_half():
    """f16 elementwise kernels and byte-moving ops keep half; bf16 arithmetic widens."""
    f16, bf16 = TensorType(Float16Type(), [4]), TensorType(BFloat16Type(), [4])
    h, b = Block(arg_types=[f16, bf16]).args
    add16 = graph.AddOp(operands=[h, h], result_types=[f16])
    assert has_half_kernel(add16) and not needs_widening(add16)
    assert needs_widening(graph.AddOp(operands=[b, b], result_types=[bf16]))
    assert needs_widening(graph.SoftmaxOp(operands=[h], result_types=[f16],
                                          properties={"axis": IntegerAttr(0, i64)}))
    transpose = graph.TransposeOp(operands=[b], result_types=[bf16],
                                  properties={"perm": i64_array([0])})
    assert not needs_widening(transpose)


def test_io_types_stay_half():
    model = _model("Relu", [np.zeros((2, 3), ml_dtypes.bfloat16)], {}, [],
                   TensorProto.BFLOAT16, 17)
    compiled = onnxc.compile(model)
    assert compiled.inputs[0].dtype == np.dtype(ml_dtypes.bfloat16)
    x = np.array([[-1.5, 0.0, 2.25], [3.0, -0.0, -7.0]], ml_dtypes.bfloat16)
    (y,) = compiled(x)
    assert y.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(y, np.maximum(x.astype(np.float32), 0).astype(y.dtype))


def test_float8_arithmetic_is_still_refused():
    """The 8-bit floats stay storage-only types: converts and copies, no kernels."""
    model = _model("Relu", [np.zeros(3, ml_dtypes.float8_e4m3fn)], {}, [],
                   TensorProto.FLOAT8E4M3FN, 21)
    with pytest.raises(UnsupportedOpError, match="Relu of FLOAT8E4M3FN"):
        onnxc.compile(model)


def test_f32_between_ops_rounds_only_what_the_model_returns():
    """`widen-half-precision{f32-between-ops=true}`: conv -> softmax keeps f32 between the
    two ops (onnxruntime's behaviour), so only the output is rounded: within half an ulp of
    the f32 reference, where the default's extra rounding of the conv output may add one."""
    conv = helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1])
    soft = helper.make_node("Softmax", ["c"], ["y"], axis=1)
    w = _w(6, 4, 3, 3)
    half = helper.make_graph(
        [conv, soft], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [1, 4, 5, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [1, 6, 5, 5])],
        [numpy_helper.from_array(w.astype(np.float16), "w")])
    model = helper.make_model(half, opset_imports=[helper.make_opsetid("", 17)])
    wide = onnx.ModelProto()
    wide.CopyFrom(model)
    for v in [*wide.graph.input, *wide.graph.output]:
        v.type.tensor_type.elem_type = TensorProto.FLOAT
    wide.graph.initializer[0].CopyFrom(
        numpy_helper.from_array(w.astype(np.float16).astype(np.float32), "w"))
    x = RNG.standard_normal((1, 4, 5, 5)).astype(np.float16)
    (reference,) = ReferenceEvaluator(wide).run(None, {"x": x.astype(np.float32)})
    pipeline = onnxc.passes.levels.graph_pipeline(3).replace(
        "widen-half-precision", "widen-half-precision{f32-between-ops=true}")
    module = onnxc.optimize(model, pass_pipeline=pipeline)
    assert sum(isinstance(op, graph.CastOp) for op in module.walk()) == 2
    (y,) = onnxc.compile(model, pass_pipeline=pipeline).run(None, {"x": x})
    ulp = np.spacing(reference.astype(np.float16)).astype(np.float64)
    assert np.all(np.abs(y.astype(np.float64) - reference) <= 0.5 * ulp + 1e-7)


LIT = Path(__file__).parents[1] / "lit" / "passes"


@pytest.mark.parametrize("lit_file, pipeline", [
    ("half_widen-half-precision.mlir", "widen-half-precision"),
    ("half_f32-between-ops.mlir", "widen-half-precision{f32-between-ops=true}"),
    ("half_widen-half-graph.mlir", "widen-half-graph"),
])
def test_lit_cases_keep_their_results(lit_file, pipeline):
    """Each lit case evaluated (numpy, passes/evaluator.py) before and after the pass: equal
    within the half type's rounding (verify-numerics' tolerance for half outputs)."""
    changed = 0
    for case in split_lit_cases(LIT / lit_file):
        module = parse_graph(case)
        after = check_pass_equivalence(module, pipeline)
        changed += str(after) != str(module)
    assert changed >= 1


def test_merge_casts_knows_bf16_range():
    """bf16 -> f16 loses range (bf16 has f32's exponent): a cast through f16 stays; one
    through f32 (exact for bf16) goes. (merge-casts, passes/redundant.py)"""
    module = parse_graph("""
func.func @f(%x: tensor<4xbf16>) -> (tensor<4xf32>, tensor<4xf16>) {
  %h = graph.cast(%x) : (tensor<4xbf16>) -> tensor<4xf16>
  %a = graph.cast(%h) : (tensor<4xf16>) -> tensor<4xf32>
  %w = graph.cast(%x) : (tensor<4xbf16>) -> tensor<4xf32>
  %b = graph.cast(%w) : (tensor<4xf32>) -> tensor<4xf16>
  func.return %a, %b : tensor<4xf32>, tensor<4xf16>
}""")
    after = check_pass_equivalence(module, "merge-casts")
    casts = [(str(op.input.type), str(op.output.type)) for op in after.walk()
             if isinstance(op, graph.CastOp)]
    assert casts == [("tensor<4xbf16>", "tensor<4xf16>"), ("tensor<4xf16>", "tensor<4xf32>"),
                     ("tensor<4xbf16>", "tensor<4xf16>")]
