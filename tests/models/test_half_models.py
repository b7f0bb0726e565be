"""fp16 and bf16 models at -O3, cold and then from the compile cache (tests/models/conftest.py).

fp16: resnet50_fp16 and bert_fp16 (benchmarks/quantized_models.py: onnxruntime's float16
converter, fp16 inputs, weights and outputs) against onnxruntime on the same fp16 model.
bf16: mobilenet_v2_like (a small CNN: convs, depthwise convs, Clip, residual Adds, global
pool, Gemm) and the 2-layer BERT encoder with every initializer, input and output cast to
bf16 (`to_bf16`). onnxruntime has no bf16 Conv/MatMul on the CPU, so the bf16 reference is
the fp32 model with the same bf16-rounded weights and inputs, run by onnxruntime in f32.

Tolerance, derived before looking at the results: at -O0 onnxc stores every op's result in
the model's half type (unit roundoff u = 2^-11 for fp16, 2^-8 for bf16) and computes in f32
(its own f32 rounding, K * 2^-24 for a K-deep dot product, is negligible next to u). Each
rounding is a relative error of at most u of the activation's magnitude; in these networks
(normalized layers) such a perturbation reaches the output with gain about 1, and the ones
along a path add up. So |ours - reference| <= depth * u * max|reference|, where depth is the
number of rounding ops on the longest path from input to output: the weighted layers
(Conv, MatMul, Gemm) plus one per elementwise/normalization op between them that the model
runs in its half type. onnxruntime rounds at fewer places (it keeps f32 between the casts it
inserts), and so does onnxc from -O1 on (widen-half-graph), which only makes the
difference smaller than this bound. Measured (2026-11-25): 1.45 u * max for ResNet-50's
logits, 2.2 for BERT fp16, 0.5-0.7 (the output's own rounding) for the bf16 pair. ResNet-50's and
MobileNet's outputs are compared before the Softmax (`expose_logits`): the probabilities of
random weights saturate and would hide errors.
"""

from __future__ import annotations

import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, numpy_helper

from onnxc.zoo import bert_encoder, bert_inputs, expose_logits, mobilenet_v2_like, random_inputs

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
import quantized_models

U_FP16 = 2.0**-11
U_BF16 = 2.0**-8
WEIGHTED = ("Conv", "MatMul", "Gemm")


def _onnxruntime(model: onnx.ModelProto, feeds) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"]).run(None, feeds)


def rounding_depth(model: onnx.ModelProto) -> int:
    """Rounding ops on the longest path from an input to an output (every node but those
    that only move data; see the module docstring)."""
    moves = {"Reshape", "Transpose", "Flatten", "Identity", "Unsqueeze", "Squeeze", "Split",
             "Concat", "Constant", "Shape", "Gather", "Slice", "Cast"}
    depth: dict[str, int] = {}
    for node in model.graph.node:  # topologically sorted, as ONNX requires
        d = max((depth.get(i, 0) for i in node.input), default=0)
        d += node.op_type not in moves
        for o in node.output:
            depth[o] = d
    return max(depth[o.name] for o in model.graph.output)


def assert_within(ours: np.ndarray, reference: np.ndarray, depth: int, u: float) -> None:
    atol = depth * u * float(np.abs(reference).max())
    np.testing.assert_allclose(np.asarray(ours, np.float64), np.asarray(reference, np.float64),
                               rtol=0, atol=atol)


def to_bf16(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` with every float initializer, Constant, input and output in bf16."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    graph = out.graph
    for i, init in enumerate(graph.initializer):
        if init.data_type == TensorProto.FLOAT:
            array = numpy_helper.to_array(init).astype(ml_dtypes.bfloat16)
            graph.initializer[i].CopyFrom(numpy_helper.from_array(array, init.name))
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.TENSOR and attr.t.data_type == TensorProto.FLOAT:
                array = numpy_helper.to_array(attr.t).astype(ml_dtypes.bfloat16)
                attr.t.CopyFrom(numpy_helper.from_array(array, attr.t.name))
    for value in [*graph.input, *graph.output]:
        if value.type.tensor_type.elem_type == TensorProto.FLOAT:
            value.type.tensor_type.elem_type = TensorProto.BFLOAT16
    del graph.value_info[:]
    return out


def bf16_rounded_fp32(model: onnx.ModelProto) -> onnx.ModelProto:
    """The fp32 model with its float weights rounded to bf16 (and back): the bf16 model's
    exact values, computed in f32."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    for i, init in enumerate(out.graph.initializer):
        if init.data_type == TensorProto.FLOAT:
            array = numpy_helper.to_array(init).astype(ml_dtypes.bfloat16).astype(np.float32)
            out.graph.initializer[i].CopyFrom(numpy_helper.from_array(array, init.name))
    return out


@pytest.mark.models
def test_resnet50_fp16_matches_onnxruntime(cache_pass) -> None:
    model = expose_logits(quantized_models.load("resnet50_fp16"))
    feeds = random_inputs(model, seed=7)
    expected = _onnxruntime(model, feeds)
    compiled = cache_pass.compile(model, opt_level=3)
    actual = cache_pass.outputs(compiled.run(None, feeds))
    assert [a.dtype for a in actual] == [np.float16, np.float16]
    depth = rounding_depth(model)
    for ours, reference in zip(actual, expected):
        assert_within(ours, reference, depth, U_FP16)
    assert actual[1].argmax() == expected[1].argmax()


@pytest.mark.models
def test_bert_fp16_matches_onnxruntime(cache_pass) -> None:
    model = quantized_models.load("bert_fp16")
    feeds = {k: v.astype(np.float16) for k, v in bert_inputs(model, seed=3).items()}
    (expected,) = _onnxruntime(model, feeds)
    compiled = cache_pass.compile(model, opt_level=3)
    (actual,) = cache_pass.outputs(compiled.run(None, feeds))
    assert actual.dtype == np.float16
    assert_within(actual, expected, rounding_depth(model), U_FP16)


def _check_bf16(cache_pass, fp32: onnx.ModelProto, feeds) -> None:
    model = to_bf16(fp32)
    rounded = {k: v.astype(ml_dtypes.bfloat16) for k, v in feeds.items()}
    expected = _onnxruntime(bf16_rounded_fp32(fp32),
                            {k: v.astype(np.float32) for k, v in rounded.items()})
    compiled = cache_pass.compile(model, opt_level=3)
    actual = cache_pass.outputs(compiled.run(None, rounded))
    depth = rounding_depth(model)
    for ours, reference in zip(actual, expected):
        assert ours.dtype == ml_dtypes.bfloat16
        assert_within(ours.astype(np.float32), reference, depth, U_BF16)


@pytest.mark.models
def test_mobilenet_bf16_matches_rounded_fp32(cache_pass) -> None:
    fp32 = quantized_models.to_opset(mobilenet_v2_like())
    _check_bf16(cache_pass, fp32, random_inputs(fp32, seed=11))


@pytest.mark.models
def test_bert_bf16_matches_rounded_fp32(cache_pass) -> None:
    fp32 = bert_encoder(layers=2)
    _check_bf16(cache_pass, fp32, bert_inputs(fp32, seed=4))
