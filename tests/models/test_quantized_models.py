"""The quantized models of issue 10 (benchmarks/quantized_models.py) at -O3 against
onnxruntime, cold and then from the compile cache (tests/models/conftest.py). onnxruntime
runs each model's u8-weight twin (tests/exact_int8_reference.py): on hosts without VNNI its
u8 x s8 kernels saturate, its u8 x u8 ones are exact everywhere.

resnet50_qdq (quantize_static, QDQ): the passes turn it into 53 qlinear_conv, one
qlinear_matmul and 16 fused residual loops over u8 tensors; onnxruntime fuses the same QDQ
groups into QLinearConv / QLinearMatMul / QLinearAdd. Both requantize the same exact integer
accumulators with the same f32 output scales, so they differ only where an f32 product falls
within rounding of a tie (one quantum), and such a difference can move later layers by a
quantum or two. The test reads the logits (the Gemm's u8 output, dequantized) and the
softmax: within 1e-2 absolute, and the u8 logits mostly bit-equal (measured: u8 logits,
logits and softmax bit-identical to onnxruntime on seeds 1, 2, 3 and 123).

bert_dynamic (quantize_dynamic: DynamicQuantizeLinear + MatMulInteger): the integer
products are exact, but each DynamicQuantizeLinear derives its scale from the run-time
min/max of its input, so a float difference of ~1e-6 upstream (op order in LayerNorm, Erf,
attention) that tips one element over a rounding tie, or moves a layer's max, shifts later
activations by a quantum of that layer's dynamic scale (up to ~0.03 here). Measured against
onnxruntime on seeds 5-8: max 0.0008 to 0.020, while onnxruntime's own quantization error
against the fp32 model is ~0.075. The test allows 3e-2 absolute (about one quantum of the
largest dynamic scale) and requires the difference to be well under the quantization error.

resnet18_qoperator (quantize_static, QOperator format, com.microsoft QLinearAdd /
QLinearGlobalAveragePool / QGemm): quantized in the test from the real export, compiled once
with symbolic height and width; logits bit-identical to onnxruntime at 224x224 and 160x200.
mobilenet_v3_large_qoperator, the same way: also QLinearMul (squeeze-excitation gates and
Hardswish as x * HardSigmoid(x), the HardSigmoid in float between DQ and Q), depthwise
QLinearConv; logits bit-identical too.

llama_int4_symmetric (MatMulNBitsQuantizer(is_symmetric=True), QDQ): int4 weights without a
zero point, about half of the block scales negative; quantized in the test (milliseconds)
from the corpus llama, compiled once with its symbolic batch, sequence and past lengths, and
run through a prefill and decode steps against onnxruntime without graph optimizations, as
tests/models/test_real_exports.py runs llama_int4_qdq (with them onnxruntime fuses DQ +
MatMul into MatMulNBits, which also quantizes the activations).
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

from onnxc.zoo import random_inputs
from tests.exact_int8_reference import ort_exact

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
import quantized_models

LOGITS_U8 = "r174_QuantizeLinear_Output"
LOGITS = "r174_DequantizeLinear_Output"


def _reference(model: onnx.ModelProto, feeds):
    return ort_exact(model, feeds)


def resnet50_qdq_with_logits() -> onnx.ModelProto:
    """resnet50_qdq with its u8 logits and their dequantized values as extra outputs."""
    model = quantized_models.load("resnet50_qdq")
    for name, el in ((LOGITS_U8, onnx.TensorProto.UINT8), (LOGITS, onnx.TensorProto.FLOAT)):
        model.graph.output.append(onnx.helper.make_tensor_value_info(name, el, [1, 1000]))
    return model


@pytest.mark.models
def test_resnet50_qdq_matches_onnxruntime(cache_pass) -> None:
    model = resnet50_qdq_with_logits()
    feeds = random_inputs(model, seed=123)
    probs, logits_u8, logits = _reference(model, feeds)
    compiled = cache_pass.compile(model, opt_level=3)
    ours = cache_pass.outputs(compiled.run(None, feeds))
    assert ours[1].dtype == np.uint8
    np.testing.assert_allclose(ours[2], logits, rtol=0, atol=1e-2)
    np.testing.assert_allclose(ours[0], probs, rtol=0, atol=1e-2)
    assert np.mean(ours[1] == logits_u8) > 0.9  # bit-equal on the seeds tried


@pytest.mark.models
def test_bert_dynamic_matches_onnxruntime(cache_pass) -> None:
    model = quantized_models.load("bert_dynamic")
    feeds = random_inputs(model, seed=5)
    (expected,) = _reference(model, feeds)
    (exact,) = _reference(quantized_models.load("bert_fp32"), feeds)
    compiled = cache_pass.compile(model, opt_level=3)
    (actual,) = cache_pass.outputs(compiled.run(None, feeds))
    np.testing.assert_allclose(actual, expected, rtol=0, atol=3e-2)
    assert np.abs(actual - expected).max() < 0.5 * np.abs(expected - exact).max()


def _quantize_qoperator(name: str) -> bytes:
    """The corpus model `name` (one image input, dynamic sizes) through onnxruntime's
    recommended preprocessing (`quant_pre_process`) and `quantize_static` in QOperator
    format. Per-channel int8 weights with `reduce_range` (7-bit, as onnxruntime advises
    without VNNI, where its u8 x s8 kernels saturate); four seeded calibration images."""
    import tempfile

    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )
    from onnxruntime.quantization.shape_inference import quant_pre_process

    from tests.models.real_exports import corpus

    model = corpus.load(name)
    input_name = model.graph.input[0].name
    rng = np.random.default_rng(7)
    images = iter([{input_name: rng.random((1, 3, 224, 224), dtype=np.float32)}
                   for _ in range(4)])

    class Images(CalibrationDataReader):
        def get_next(self):
            return next(images, None)

    with tempfile.TemporaryDirectory() as tmp:
        src, pre, out = (str(Path(tmp) / f) for f in ("f.onnx", "p.onnx", "q.onnx"))
        onnx.save(model, src)
        quant_pre_process(src, pre, skip_symbolic_shape=True)
        quantize_static(pre, out, Images(), quant_format=QuantFormat.QOperator,
                        per_channel=True, reduce_range=True, weight_type=QuantType.QInt8,
                        activation_type=QuantType.QUInt8)
        return Path(out).read_bytes()


@functools.lru_cache(maxsize=1)
def resnet18_qoperator() -> bytes:
    """torchvision resnet18 (the real export resnet18_ts, dynamic batch/height/width) in
    QOperator format: com.microsoft QLinearAdd, QLinearGlobalAveragePool and QGemm beside
    QLinearConv."""
    return _quantize_qoperator("resnet18_ts")


def _classifier_logits(data: bytes, model: onnx.ModelProto, cache_pass):
    """(onnxc's, onnxruntime's) logits of a quantized image classifier at 224x224 and
    160x200 (seeded random images), from one onnxc compile at -O3."""
    import onnxruntime as ort

    name = model.graph.input[0].name
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    compiled = cache_pass.compile(model, opt_level=3)
    for seed, (height, width) in ((1, (224, 224)), (2, (160, 200))):
        feeds = {name: np.random.default_rng(seed).random((1, 3, height, width),
                                                          dtype=np.float32)}
        (expected,) = session.run(None, feeds)
        (actual,) = cache_pass.outputs(compiled.run(None, feeds))
        yield actual, expected


@pytest.mark.models
def test_resnet18_qoperator_matches_onnxruntime(cache_pass) -> None:
    """Every integer product is exact and both requantize with the same f32 scales: the
    logits are bit-identical to onnxruntime's (measured at both sizes below), one compile
    with symbolic height and width. The test allows one quantum of the logits' scale
    (0.113), for a rounding tie an f32 product may fall on."""

    data = resnet18_qoperator()
    model = onnx.load_from_string(data)
    ops = {n.op_type for n in model.graph.node}
    assert {"QLinearConv", "QLinearAdd", "QLinearGlobalAveragePool", "QGemm"} <= ops
    for actual, expected in _classifier_logits(data, model, cache_pass):
        np.testing.assert_allclose(actual, expected, rtol=0, atol=0.114)
        assert actual.argmax() == expected.argmax()


@functools.lru_cache(maxsize=1)
def llama_int4_symmetric() -> bytes:
    """The corpus llama (optimum export, past_key_values) through onnxruntime's
    MatMulNBitsQuantizer(block_size=32, is_symmetric=True, quant_format=QDQ): every MatMul
    weight an int4 blocked DequantizeLinear (axis 0) without zero point."""
    import logging

    from onnxruntime.quantization import QuantFormat
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    from tests.models.real_exports import corpus

    logging.disable(logging.WARNING)  # the quantizer warns that it raises the opset to 21
    try:
        quantizer = MatMulNBitsQuantizer(corpus.load("llama"), block_size=32, is_symmetric=True,
                                         quant_format=QuantFormat.QDQ)
        quantizer.process()
    finally:
        logging.disable(logging.NOTSET)
    return quantizer.model.model.SerializeToString()


@pytest.mark.models
def test_llama_int4_symmetric_qdq_matches_onnxruntime(cache_pass) -> None:
    """A prefill (empty cache) and three decode steps feeding back the present cache, then a
    batch of two, from one compile. rtol 1e-4, atol 1e-5 as for llama_int4_qdq
    (test_real_exports.py): the dequantized weights are exact in f32 on both sides, the f32
    products are summed in another order."""
    import onnxruntime as ort
    from onnx import numpy_helper

    from tests.models import test_real_exports as real

    data = llama_int4_symmetric()
    model = onnx.load_from_string(data)
    inits = {t.name: t for t in model.graph.initializer}
    dqs = [n for n in model.graph.node if n.op_type == "DequantizeLinear"]
    scales = np.concatenate([numpy_helper.to_array(inits[n.input[1]]).ravel() for n in dqs])
    assert len(dqs) >= 10 and all(len(n.input) == 2 for n in dqs)  # symmetric: no zero point
    assert {inits[n.input[0]].data_type for n in dqs} == {onnx.TensorProto.INT4}
    assert 0.3 < np.mean(scales < 0) < 0.7
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    compiled = cache_pass.compile(model, num_threads=1)
    outputs = [o.name for o in model.graph.output]
    entry_name = "llama"
    rng = np.random.default_rng(3)
    for batch, prompt, steps in ((1, 5, 4), (2, 3, 2)):
        feeds = real._decode_feeds(entry_name, rng.integers(0, 256, (batch, prompt)),
                                   real._empty_cache(entry_name, batch), 0)
        for step in range(steps):
            ours = dict(zip(outputs, cache_pass.outputs(compiled.run(None, feeds)),
                            strict=True))
            theirs = dict(zip(outputs, session.run(None, feeds), strict=True))
            for name in outputs:
                np.testing.assert_allclose(ours[name], theirs[name], rtol=1e-4, atol=1e-5,
                                           err_msg=f"batch {batch} step {step} {name}")
            token = ours["logits"][:, -1:].argmax(-1).astype(np.int64)
            past = {f"past_key_values.{n.removeprefix('present.')}": v
                    for n, v in ours.items() if n.startswith("present.")}
            feeds = real._decode_feeds(entry_name, token, past,
                                       feeds["attention_mask"].shape[1])


@functools.lru_cache(maxsize=1)
def mobilenet_v3_large_qoperator() -> bytes:
    """torchvision mobilenet_v3_large (the real export mobilenet_v3_large_ts) in QOperator
    format: QLinearConv (depthwise too), com.microsoft QLinearMul, QLinearAdd,
    QLinearGlobalAveragePool, QGemm, and HardSigmoid between DequantizeLinear and
    QuantizeLinear."""
    return _quantize_qoperator("mobilenet_v3_large_ts")


@pytest.mark.models
def test_mobilenet_v3_large_qoperator_matches_onnxruntime(cache_pass) -> None:
    """Integer products exact and requantized with the same f32 scales, the HardSigmoids in
    f32 between the same DQ and Q: logits bit-identical to onnxruntime's (measured at both
    sizes below on Zen 4 with VNNI), one compile with symbolic height and width. The test
    allows one quantum of the logits' scale (their DequantizeLinear's, 1.2e-4), for a
    rounding tie an f32 product may fall on, and 99% of the logits bit-equal."""
    from onnx import numpy_helper

    data = mobilenet_v3_large_qoperator()
    model = onnx.load_from_string(data)
    ops = {n.op_type for n in model.graph.node}
    assert {"QLinearConv", "QLinearMul", "QLinearAdd", "QLinearGlobalAveragePool", "QGemm",
            "HardSigmoid"} <= ops
    last = next(n for n in model.graph.node if n.output[0] == model.graph.output[0].name)
    assert last.op_type == "DequantizeLinear"
    inits = {t.name: t for t in model.graph.initializer}
    quantum = float(numpy_helper.to_array(inits[last.input[1]]))
    for actual, expected in _classifier_logits(data, model, cache_pass):
        assert np.unique(expected).size > 50  # not a degenerate (vanished) output
        np.testing.assert_allclose(actual, expected, rtol=0, atol=quantum * 1.001)
        assert np.mean(actual == expected) > 0.99
        assert actual.argmax() == expected.argmax()
