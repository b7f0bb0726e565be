"""GatherBlockQuantized (frontend/onnx_ops_microsoft_gather_quant.py) beside onnxruntime
1.32: uint8 data packing 4 or 8 bits with and without zero points, int4 and uint4 data,
both quantize axes, indices out of range (zero slices) and negative, f16 scales; and the
corpus llama quantized by MatMulNBitsQuantizer with its embedding Gather included.
Dequantized values are the same f32 products in both: exact, except f16 scales (rounded
once, 1 ulp)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxc
from onnxc.errors import ModelLoadError
from tests.single_op import reference_run

ROWS, COLS = 6, 64


def model(data, scales, zero=None, indices_shape=(2, 3), **attrs):
    inits = [numpy_helper.from_array(data, "data"), numpy_helper.from_array(scales, "scales")]
    names = ["data", "idx", "scales"]
    if zero is not None:
        inits.append(numpy_helper.from_array(zero, "zero"))
        names.append("zero")
    node = helper.make_node("GatherBlockQuantized", names, ["y"], name="n",
                            domain="com.microsoft", **attrs)
    out_type = TensorProto.FLOAT16 if scales.dtype == np.float16 else TensorProto.FLOAT
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("idx", TensorProto.INT64, indices_shape)],
        [helper.make_tensor_value_info("y", out_type, None)], inits)
    return helper.make_model(graph, ir_version=10, opset_imports=[
        helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)])


def compare(m, idx):
    expected = reference_run(m, {"idx": idx})
    got = onnxc.compile(m).run(None, {"idx": idx})
    np.testing.assert_array_equal(got[0], expected[0])


@pytest.mark.parametrize("bits", [4, 8])
@pytest.mark.parametrize("with_zero", [False, True])
@pytest.mark.parametrize("scale_type", [np.float32, np.float16])
def test_uint8_packed_along_the_last_axis(bits, with_zero, scale_type):
    rng = np.random.default_rng(bits + with_zero)
    per = 8 // bits
    data = rng.integers(0, 256, (ROWS, COLS // per)).astype(np.uint8)
    scales = rng.uniform(-0.1, 0.1, (ROWS, COLS // 32)).astype(scale_type)
    zero = rng.integers(0, 256, (ROWS, COLS // 32 // per)).astype(np.uint8) \
        if with_zero and bits == 4 else None
    if with_zero and bits == 8:
        zero = rng.integers(0, 256, (ROWS, COLS // 32)).astype(np.uint8)
    idx = np.array([[0, 5, -1], [2, 2, -6]], np.int64)
    compare(model(data, scales, zero, bits=bits, block_size=32), idx)


@pytest.mark.parametrize("dtype", [ml_dtypes.int4, ml_dtypes.uint4])
@pytest.mark.parametrize("quantize_axis, gather_axis", [(1, 0), (0, 1)])
def test_int4_data_on_either_axis(dtype, quantize_axis, gather_axis):
    rng = np.random.default_rng(3)
    lo, hi = (-8, 8) if dtype == ml_dtypes.int4 else (0, 16)
    data = rng.integers(lo, hi, (32, 48)).astype(dtype)
    blocks = [32 // 16, 48] if quantize_axis == 0 else [32, 48 // 16]
    scales = rng.uniform(0.01, 0.1, blocks).astype(np.float32)
    zero = rng.integers(lo, hi, blocks).astype(dtype)
    idx = np.array([[0, 3, 31], [7, -2, 10]], np.int64)
    compare(model(data, scales, zero, block_size=16, quantize_axis=quantize_axis,
                  gather_axis=gather_axis), idx)


def test_indices_out_of_range_give_zero_slices():
    rng = np.random.default_rng(4)
    data = rng.integers(0, 256, (ROWS, COLS // 2)).astype(np.uint8)
    scales = rng.uniform(0.01, 0.1, (ROWS, COLS // 32)).astype(np.float32)
    m = model(data, scales, block_size=32)
    idx = np.array([[0, 6, -7], [100, 1, -1]], np.int64)
    got = onnxc.compile(m).run(None, {"idx": idx})[0]
    assert not got[0, 1].any() and not got[0, 2].any() and not got[1, 0].any()
    assert got[0, 0].any() and got[1, 2].any()


def test_bad_scales_shape_is_refused():
    data = np.zeros((ROWS, COLS // 2), np.uint8)
    m = model(data, np.ones((ROWS, 3), np.float32), block_size=32)
    with pytest.raises(ModelLoadError, match="scales \\[6, 3\\] must be \\[6, 2\\]"):
        onnxc.compile(m)


def test_llama_with_int4_embedding_and_matmuls():
    """MatMulNBitsQuantizer(op_types_to_quantize=(MatMul, Gather)): GatherBlockQuantized for
    the embedding, MatMulNBits for the projections; logits against onnxruntime's MatMulNBits
    path (rtol 1e-4, atol 1e-4: onnxruntime's MatMulNBits kernel sums its int4 products in
    another order)."""
    from onnxruntime.quantization import QuantFormat
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    from tests.models.real_exports import corpus

    source = corpus.load("llama")
    quantizer = MatMulNBitsQuantizer(source, block_size=32, is_symmetric=False,
                                     quant_format=QuantFormat.QOperator,
                                     op_types_to_quantize=("MatMul", "Gather"),
                                     quant_axes=(("MatMul", 0), ("Gather", 1)))
    quantizer.process()
    quantized = quantizer.model.model
    assert "GatherBlockQuantized" in {n.op_type for n in quantized.graph.node}
    compiled = onnxc.compile(quantized)
    rng = np.random.default_rng(5)
    case = next(iter(corpus.cases("llama")))
    feeds = corpus.feeds("llama", case, rng)
    expected = reference_run(quantized, feeds)
    for got, want in zip(compiled.run(None, feeds), expected):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
