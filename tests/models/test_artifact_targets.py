"""Whole networks compiled ahead of time for other CPUs, run under qemu-user, against
onnxruntime on this machine.

For AArch64 (cortex-a76: NEON, dotprod) and x86-64-v3 (AVX2, no AVX-512, run as a Haswell
so any AVX-512 instruction is a SIGILL), each model becomes an artifact (onnxc compile:
runtime/artifact.py) whose `run` program reads the inputs and writes the outputs as raw files
(tests/artifact_runner.py). Float models with random weights: within rtol 1e-3 / atol 1e-4
of onnxruntime, as the zoo tests on this machine (accumulation order differs). The int8
models (quantize_dynamic BERT, QDQ ResNet-50): within the tolerances of
test_quantized_models.py, against onnxruntime on their u8-weight twins (exact products).
A subset of onnx's node tests: onnx's own tolerances against its expected outputs.

qemu is about 250x slower than the CPU it emulates, so by default this runs the smaller
networks (SqueezeNet, MobileNetV2, the 2-layer BERT, the dynamic int8 BERT) and a dozen node
tests on both targets (about four minutes); `-m slow` adds the other zoo nets and the QDQ
ResNet-50. Skipped without qemu-user or the AArch64 C toolchain (.ci/run installs them).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import onnxc
from onnxc.zoo import (
    ZOO_MODELS,
    bert_encoder,
    bert_inputs,
    expose_logits,
    load_zoo,
    mobilenet_v2_like,
    random_inputs,
    randomize_weights,
)
from tests.artifact_runner import run_artifact, skip_unless_runnable
from tests.exact_int8_reference import ort_exact

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
import quantized_models  # noqa: E402

pytestmark = pytest.mark.models

TARGETS = ("cortex-a76", "x86-64-v3")
EMULATED_SECONDS = 3600
"""A cap on one emulated run: VGG-19 (20 GFLOP) takes about 190 s as cortex-a76 and over
600 s as a Haswell (qemu's AVX2 translation is the slower one), more on a loaded machine."""
RTOL, ATOL = 1e-3, 1e-4
DEFAULT_NETS = ("squeezenet", "mobilenet_v2_like", "bert_encoder")
NODE_TESTS = (
    "test_add_bcast", "test_conv_with_strides_padding", "test_maxpool_2d_pads",
    "test_averagepool_2d_same_upper", "test_gemm_all_attributes", "test_softmax_axis_1",
    "test_erf", "test_gather_1", "test_layer_normalization_4d_axis1", "test_lstm_defaults",
    "test_dynamicquantizelinear", "test_argmax_default_axis_example",
    "test_transpose_all_permutations_0", "test_instancenorm_example",
)


def _float_case(name: str):
    if name == "mobilenet_v2_like":
        model = mobilenet_v2_like(seed=3)
    elif name == "bert_encoder":
        model = bert_encoder(layers=2)
        return model, bert_inputs(model, seed=4)
    else:
        model = expose_logits(randomize_weights(load_zoo(name), seed=1))
    return model, random_inputs(model, seed=2)


def _onnxruntime(model, feeds):
    options = ort.SessionOptions()
    options.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"]).run(None, feeds)


NETS = [pytest.param(name, marks=[] if name in DEFAULT_NETS else [pytest.mark.slow])
        for name in (*ZOO_MODELS, "mobilenet_v2_like", "bert_encoder")]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", NETS)
def test_network_artifact_matches_onnxruntime(name, target, tmp_path):
    skip_unless_runnable(target)
    model, feeds = _float_case(name)
    built = onnxc.compile_artifact(model, tmp_path / name, target=target, num_threads=2)
    got_all = run_artifact(built.directory, feeds, EMULATED_SECONDS)
    for got, expected in zip(got_all, _onnxruntime(model, feeds), strict=True):
        np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", ["bert_dynamic",
                                  pytest.param("resnet50_qdq", marks=pytest.mark.slow)])
def test_quantized_artifact_matches_onnxruntime(name, target, tmp_path):
    """The tolerances of test_quantized_models.py: one quantum of the dynamic scales for
    BERT (3e-2), 1e-2 on ResNet-50's dequantized logits."""
    skip_unless_runnable(target)
    model = quantized_models.load(name)
    feeds = bert_inputs(model, seed=5) if name.startswith("bert") else random_inputs(model, 123)
    built = onnxc.compile_artifact(model, tmp_path / name, target=target, num_threads=2)
    atol = 3e-2 if name.startswith("bert") else 1e-2
    got_all = run_artifact(built.directory, feeds, EMULATED_SECONDS)
    for got, expected in zip(got_all, ort_exact(model, feeds), strict=True):
        np.testing.assert_allclose(got.astype(np.float64), expected, rtol=0, atol=atol)


def _node_cases() -> dict:
    """onnx's node test cases by name (model, data sets, tolerances)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from onnx.backend.test.case import node

        return {case.name: case for case in node.collect_testcases(None)}


@pytest.mark.parametrize("target", TARGETS)
def test_node_tests_as_artifacts(target, tmp_path):
    skip_unless_runnable(target)
    cases = _node_cases()
    for name in NODE_TESTS:
        case = cases[name]
        model = onnx.ModelProto()
        model.CopyFrom(case.model)
        model.ir_version = min(model.ir_version, 10)
        built = onnxc.compile_artifact(model, tmp_path / name, target=target, num_threads=2)
        for inputs, expected in case.data_sets:
            got = run_artifact(built.directory, list(inputs))
            for g, e in zip(got, expected, strict=True):
                np.testing.assert_allclose(g, e, rtol=case.rtol, atol=case.atol,
                                           err_msg=name)
