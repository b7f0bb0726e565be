"""The corpus llama (tests/models/real_exports, optimum's text-generation-with-past export)
quantized to int4 by onnxruntime's `MatMulNBitsQuantizer` in QOperator format: every MatMul
by a weight becomes com.microsoft MatMulNBits (block_size 32, asymmetric: uint8 zero points;
symmetric: none, zero point 8 and scales of both signs), what onnxruntime-genai, Olive and
optimum ship for int4 LLMs. onnxc runs them on its weight-only kernel
(graph.matmul_weight_quantized, lowering/graph_to_loops/weight_quant_gemm.py).

Reference: onnxruntime with graph optimizations off (ORT_DISABLE_ALL: the graph onnxc
imports, not rewritten by onnxruntime's optimizer, which would fuse the QDQ form into
MatMulNBits and other subgraphs into its contrib ops). The quantizer leaves accuracy_level
unset, so onnxruntime's MatMulNBits computes in f32 from the exactly dequantized weights, as
onnxc does: the same tolerance as the float corpus models (rtol 1e-4, atol 1e-5: f32 sums in
another order). A prefill, three decode steps that feed back the present cache, and a
batch of two, from one compile; cold and warm (`cache_pass`).
"""

from __future__ import annotations

import functools

import numpy as np
import onnx
import pytest

from tests.models.real_exports import corpus
from tests.models.test_real_exports import _decode_feeds, _empty_cache

pytestmark = pytest.mark.models
RTOL, ATOL = 1e-4, 1e-5


@functools.lru_cache(maxsize=4)
def quantized_llama(symmetric: bool, qdq: bool = False, level: int | None = None) -> bytes:
    from onnxruntime.quantization import QuantFormat
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    quantizer = MatMulNBitsQuantizer(
        corpus.load("llama"), block_size=32, is_symmetric=symmetric, accuracy_level=level,
        quant_format=QuantFormat.QDQ if qdq else QuantFormat.QOperator)
    quantizer.process()
    return quantizer.model.model.SerializeToString()


@pytest.mark.parametrize("symmetric, qdq, level", [
    (False, False, None), (True, False, None), (True, True, None), (False, False, 4)],
    ids=["asymmetric", "symmetric", "symmetric_qdq", "asymmetric_level4"])
def test_int4_llama_prefills_then_decodes(symmetric, qdq, level, cache_pass):
    """symmetric_qdq: the QDQ form of the symmetric quantizer (int4 weights, no zero point,
    blocked DequantizeLinear -> MatMul; the asymmetric one is the corpus' llama_int4_qdq),
    which fuse-weight-only-matmul turns into the same op. asymmetric_level4: accuracy_level
    4, A quantized to int8 per block by both (onnxc's VNNI kernel, weight_quant_int8.py:
    measured within 2e-7 of onnxruntime, so the same tolerance)."""
    import onnxruntime as ort

    import onnxc
    from onnxc.target import host_target

    if level == 4 and not host_target().has_feature("avx512vnni"):
        pytest.skip("onnxc's int8 form of level 4 needs AVX512-VNNI (elsewhere it is f32)")
    data = quantized_llama(symmetric, qdq, level)
    model = onnx.load_from_string(data)
    if qdq:
        assert sum(n.op_type == "DequantizeLinear" for n in model.graph.node) == 15
        fused = onnxc.optimize(model)
        assert sum(op.name == "graph.matmul_weight_quantized" for op in fused.walk()) == 15
    else:
        nbits = [n for n in model.graph.node if n.op_type == "MatMulNBits"]
        assert len(nbits) == 15 and all(n.domain == "com.microsoft" for n in nbits)
        assert all(len(n.input) > 3 and n.input[3] for n in nbits) != symmetric  # zero points
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    compiled = cache_pass.compile(model, num_threads=1)
    outputs = [o.name for o in model.graph.output]
    rng = np.random.default_rng(1)
    for batch, prompt in ((1, 5), (2, 3)):
        feeds = _decode_feeds("llama", rng.integers(0, 256, (batch, prompt)),
                              _empty_cache("llama", batch), 0)
        for step in range(4 if batch == 1 else 2):
            ours = cache_pass.outputs(compiled.run(None, feeds))
            for name, a, b in zip(outputs, ours, session.run(None, feeds), strict=True):
                np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL,
                                           err_msg=f"{name}: batch {batch} step {step}")
            length = feeds["attention_mask"].shape[1]
            result = dict(zip(outputs, ours))
            token = result["logits"][:, -1:].argmax(-1).astype(np.int64)
            past = {f"past_key_values.{k}": result[f"present.{k}"]
                    for k in (o.removeprefix("present.") for o in outputs
                              if o.startswith("present."))}
            feeds = _decode_feeds("llama", token, past, length)
