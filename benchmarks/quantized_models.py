"""The quantized and half-precision models of the low-precision work, built reproducibly.

Each builder starts from a seeded fp32 model (onnxc.zoo), converts it to opset 17 and then:
- `resnet50_qdq`: onnxruntime's `quantize_static` in QDQ format, per-channel s8 weights,
  u8 activations, calibrated on 8 seeded random batches (the deployment recipe people use);
- `mobilenetv2_qdq`: the same recipe on zoo_mobilenet's MobileNetV2 (depthwise convs);
- `bert_dynamic`: `quantize_dynamic` (DynamicQuantizeLinear + MatMulInteger);
- `resnet50_fp16` / `bert_fp16`: every float tensor in fp16 (onnxruntime's converter, with
  fp16 inputs and outputs).
onnxruntime appears here only as the tool that writes the models, never to run onnxc's side.
Models are cached under `$ONNXC_BENCH_MODELS` (default ~/.cache/onnxc-bench-models) because
calibration takes tens of seconds. `python benchmarks/quantized_models.py` builds them all.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable

import onnx
from onnx import version_converter

from onnxc.zoo import REFERENCE_IR_VERSION, load_zoo, random_inputs, randomize_weights
from onnxc.zoo_bert import bert_encoder
from onnxc.zoo_mobilenet import mobilenet_v2_like

OPSET = 17
CALIBRATION_BATCHES = 8


def models_dir() -> str:
    path = os.environ.get("ONNXC_BENCH_MODELS") or os.path.expanduser(
        "~/.cache/onnxc-bench-models")
    os.makedirs(path, exist_ok=True)
    return path


def to_opset(model: onnx.ModelProto, opset: int = OPSET) -> onnx.ModelProto:
    """The model at `opset`, its initializers no longer listed as graph inputs (from IR 4 on
    such an input could be overridden, so its value would not be a constant)."""
    converted = version_converter.convert_version(model, opset)
    converted.ir_version = REFERENCE_IR_VERSION
    weights = {t.name for t in converted.graph.initializer}
    kept = [i for i in converted.graph.input if i.name not in weights]
    del converted.graph.input[:]
    converted.graph.input.extend(kept)
    return converted


def _finished(model: onnx.ModelProto) -> onnx.ModelProto:
    """IR version onnxruntime accepts, and only the opset imports the nodes use (the
    quantization tools import every domain they know)."""
    model.ir_version = REFERENCE_IR_VERSION
    used = {n.domain for n in model.graph.node} | {""}
    kept = [o for o in model.opset_import if o.domain in used]
    del model.opset_import[:]
    model.opset_import.extend(kept)
    return model


def resnet50_fp32() -> onnx.ModelProto:
    return to_opset(randomize_weights(load_zoo("resnet50")))


def _preprocessed(model: onnx.ModelProto, directory: str) -> str:
    from onnxruntime.quantization.shape_inference import quant_pre_process

    raw, ready = os.path.join(directory, "fp32.onnx"), os.path.join(directory, "pre.onnx")
    onnx.save(model, raw)
    quant_pre_process(raw, ready, skip_symbolic_shape=True)
    return ready


def quantize_static_qdq(model: onnx.ModelProto, seed: int = 0) -> onnx.ModelProto:
    """QDQ, per-channel s8 weights, u8 activations, MinMax on seeded random batches."""
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    class Batches(CalibrationDataReader):
        def __init__(self):
            self.left = [random_inputs(model, seed=seed + i) for i in range(CALIBRATION_BATCHES)]

        def get_next(self):
            return self.left.pop() if self.left else None

    with tempfile.TemporaryDirectory() as directory:
        out = os.path.join(directory, "qdq.onnx")
        quantize_static(_preprocessed(model, directory), out, Batches(),
                        quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
        return _finished(onnx.load(out))


def quantize_dynamic_int8(model: onnx.ModelProto) -> onnx.ModelProto:
    """quantize_dynamic's default: u8 activations quantized at run time, s8 weights."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory() as directory:
        out = os.path.join(directory, "dynamic.onnx")
        quantize_dynamic(_preprocessed(model, directory), out, weight_type=QuantType.QInt8)
        return _finished(onnx.load(out))


def to_fp16(model: onnx.ModelProto) -> onnx.ModelProto:
    """Every float tensor, inputs and outputs included, in fp16."""
    from onnxruntime.transformers.float16 import convert_float_to_float16

    return _finished(convert_float_to_float16(model, keep_io_types=False,
                                              disable_shape_infer=False))


BUILDERS: dict[str, Callable[[], onnx.ModelProto]] = {
    "resnet50_fp32": resnet50_fp32,
    "resnet50_qdq": lambda: quantize_static_qdq(resnet50_fp32()),
    "mobilenetv2_qdq": lambda: quantize_static_qdq(to_opset(mobilenet_v2_like())),
    "bert_fp32": lambda: to_opset(bert_encoder(layers=2)),
    "bert_dynamic": lambda: quantize_dynamic_int8(to_opset(bert_encoder(layers=2))),
    "resnet50_fp16": lambda: to_fp16(resnet50_fp32()),
    "bert_fp16": lambda: to_fp16(to_opset(bert_encoder(layers=2))),
}


def model_path(name: str) -> str:
    """Path of the named model, built on first use."""
    path = os.path.join(models_dir(), f"{name}.onnx")
    if not os.path.exists(path):
        model = BUILDERS[name]()
        partial = path + f".{os.getpid()}.tmp"
        onnx.save(model, partial)
        os.replace(partial, path)
    return path


def load(name: str) -> onnx.ModelProto:
    return onnx.load(model_path(name))


if __name__ == "__main__":
    for name in sys.argv[1:] or BUILDERS:
        print(name, model_path(name), flush=True)
