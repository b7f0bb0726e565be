"""Dynamic batch: one compilation for one sample runs at any batch size (frontend/batch_axes.py)."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import onnxc
from onnxc.errors import InvalidInputError, ShapeInferenceError
from tests.single_op import graph_model

RTOL, ATOL = 1e-4, 1e-5
"""f32 kernels against onnx.reference's float64-accumulating numpy."""


def _model(nodes, inputs, outputs, inits=(), opset=17) -> onnx.ModelProto:
    return graph_model(nodes, inputs, outputs, initializers=list(inits), opset=opset,
                       ir_version=9)


def _init(name, shape, seed):
    data = np.random.default_rng(seed).standard_normal(shape).astype(np.float32) * 0.3
    return numpy_helper.from_array(data, name)


def _cnn() -> onnx.ModelProto:
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("GlobalAveragePool", ["r"], ["p"]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "fc", "fb"], ["logits"], transB=1),
        helper.make_node("Softmax", ["logits"], ["y"], axis=-1),
    ]
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])],
        [_init("w", [16, 3, 3, 3], 1), _init("b", [16], 2), _init("fc", [10, 16], 3),
         _init("fb", [10], 4)],
    )


def _encoder_block() -> onnx.ModelProto:
    """[N, S, H] -> Reshape [N*S, H] -> MatMul -> Reshape back -> Softmax over H -> + x."""
    shape_flat = numpy_helper.from_array(np.array([-1, 8], np.int64), "flat")
    shape_back = numpy_helper.from_array(np.array([-1, 4, 8], np.int64), "back")
    nodes = [
        helper.make_node("Reshape", ["x", "flat"], ["x2"]),
        helper.make_node("MatMul", ["x2", "w"], ["m"]),
        helper.make_node("Reshape", ["m", "back"], ["m3"]),
        helper.make_node("Softmax", ["m3"], ["s"], axis=-1),
        helper.make_node("Add", ["s", "x"], ["y"]),
    ]
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4, 8])],
        [shape_flat, shape_back, _init("w", [8, 8], 5)],
    )


@pytest.mark.parametrize("build", [_cnn, _encoder_block], ids=["cnn", "encoder"])
def test_one_compilation_runs_every_batch_size(build):
    """The CNN runs once per sample (its convs keep static tiles: the spec's batch is None);
    the encoder, which has no op with static-only kernels, compiles its batch as a symbolic
    dimension (one GEMM over every sample's rows, compilation.STATIC_KERNEL_OPS)."""
    model = build()
    compiled = onnxc.compile(model, cache_dir=False)
    if build is _cnn:
        assert compiled.inputs[0].shape[0] is None and compiled.symbolic is None
    else:
        assert compiled.inputs[0].shape[0] == "batch"
        assert compiled.symbolic is not None and compiled.symbolic.separable_batch == "batch"
    reference = ReferenceEvaluator(model)
    sample = compiled.inputs[0].shape[1:]
    for n in (1, 2, 5):
        x = np.random.default_rng(n).standard_normal((n, *sample)).astype(np.float32)
        (y,) = compiled(x)
        (expected,) = reference.run(None, {"x": x})
        assert y.shape == expected.shape
        np.testing.assert_allclose(y, expected, rtol=RTOL, atol=ATOL)


def test_zero_samples_give_empty_outputs(tmp_path):
    compiled = onnxc.compile(_cnn(), cache_dir=False)
    (y,) = compiled(np.zeros((0, 3, 8, 8), np.float32))
    assert y.shape == (0, 10)
    for encoder in (onnxc.compile(_encoder_block(), cache_dir=tmp_path),
                    onnxc.compile(_encoder_block(), cache_dir=tmp_path)):  # cold, then a hit
        (y,) = encoder(np.zeros((0, 4, 8), np.float32))
        assert y.shape == (0, 4, 8)
    assert encoder.from_cache


def test_wrong_sample_shape_is_rejected():
    compiled = onnxc.compile(_cnn(), cache_dir=False)
    with pytest.raises(InvalidInputError, match="x"):
        compiled(np.zeros((2, 3, 8, 9), np.float32))


def _reduce_over_batch() -> onnx.ModelProto:
    nodes = [helper.make_node("ReduceSum", ["x"], ["y"], axes=[0], keepdims=1)]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], opset=11)


def _transpose_batch() -> onnx.ModelProto:
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0]),
             helper.make_node("Relu", ["t"], ["y"])]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, "N"])])


@pytest.mark.parametrize("build", [_reduce_over_batch, _transpose_batch],
                         ids=["ReduceSum", "Transpose"])
def test_ops_that_mix_samples_compile_with_a_symbolic_batch(build):
    """Not batch-separable: the batch stays a symbolic dimension of one compiled model
    (tests/unit/test_symbolic_runtime.py) instead of a per-sample loop."""
    model = build()
    compiled = onnxc.compile(model, cache_dir=False)
    assert "N" in compiled.inputs[0].shape
    reference = ReferenceEvaluator(model)
    for n in (1, 3, 6):
        x = np.random.default_rng(n).standard_normal((n, 4)).astype(np.float32)
        np.testing.assert_allclose(compiled(x)[0], reference.run(None, {"x": x})[0],
                                   rtol=RTOL, atol=ATOL)


def test_other_dynamic_dimensions_are_symbolic_or_fixed():
    nodes = [helper.make_node("Relu", ["x"], ["y"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, "S"])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, "S"])])
    compiled = onnxc.compile(model, cache_dir=False)
    assert compiled.inputs[0].shape == (2, "S")
    for s in (1, 5, 9):
        x = np.linspace(-1, 1, 2 * s, dtype=np.float32).reshape(2, s)
        np.testing.assert_array_equal(compiled(x)[0], np.maximum(x, 0))
    fixed = onnxc.compile(model, cache_dir=False, input_shapes={"x": [2, 5]})
    x = np.linspace(-1, 1, 10, dtype=np.float32).reshape(2, 5)
    np.testing.assert_array_equal(fixed(x)[0], np.maximum(x, 0))
    with pytest.raises(InvalidInputError, match="expected"):
        fixed(np.zeros((2, 6), np.float32))


@pytest.mark.parametrize("axes, separable", [(None, False), ([2, 3], True)])
def test_statistics_over_the_batch_axis_are_found_from_their_axes(axes, separable):
    """MeanVarianceNormalization keeps the shape, so only its axes (default [0, 2, 3]) tell."""
    from onnxc.frontend.batch_axes import batch_axis

    attrs = {} if axes is None else {"axes": axes}
    nodes = [helper.make_node("MeanVarianceNormalization", ["x"], ["y"], **attrs)]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2, 3, 3])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2, 3, 3])])
    if separable:
        assert batch_axis(model).inputs == {"x": 1}
    else:
        with pytest.raises(ShapeInferenceError, match="MeanVarianceNormalization"):
            batch_axis(model)


def test_an_op_of_another_domain_is_not_read_as_the_default_domains_namesake():
    """com.microsoft.Gelu is not registered sample-wise, so the batch analysis does not
    apply the default domain's Gelu rule to it: the model compiles with a symbolic batch."""
    from onnxc.frontend.batch_axes import batch_axis

    spec = ["N", 4]
    model = helper.make_model(
        helper.make_graph([helper.make_node("Gelu", ["x"], ["y"], domain="com.microsoft")],
                          "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, spec)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, spec)]),
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
        ir_version=8)
    with pytest.raises(ShapeInferenceError, match="com.microsoft"):
        batch_axis(model)
    compiled = onnxc.compile(model, cache_dir=False)
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    assert compiled(x)[0].shape == (3, 4)
