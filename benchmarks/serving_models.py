"""The serving benchmark's models and the Triton repository both servers are given.

ResNet-50 (the zoo network with seeded random weights, as benchmarks/bench.py builds it) and
BERT-2 (the zoo encoder, 2 layers, width 768, seq 128), each with a symbolic leading `batch`
so that both servers can batch requests, and with plain tensor names (`data` -> `prob`,
`hidden_states`, `attention_mask` -> `last_hidden_state`) that both servers accept as they
are. The same `.onnx` file is served by `onnxc serve` (REPO/<model>/1/model.onnx, with
config.pbtxt) and by the Triton peer (benchmarks/serving_peer.py: an onnxruntime session
loaded from that file).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

MODELS = ("resnet50", "bert2")


@dataclass(frozen=True)
class BatcherSettings:
    """Triton's dynamic-batcher fields, the same for both servers."""

    max_batch_size: int = 8
    preferred_batch_sizes: tuple[int, ...] = (4, 8)
    max_queue_delay_us: int = 2000
    instances: int = 1  # executor threads (onnxc) / model instances (Triton) per model
    threads: int = 1  # onnxc threads per run / onnxruntime intra-op threads per instance


def _rename(model: onnx.ModelProto, names: dict[str, str]) -> None:
    """Rename graph inputs/outputs (and every node edge using them) in place."""
    graph = model.graph
    for value in [*graph.input, *graph.output]:
        value.name = names.get(value.name, value.name)
    for node in graph.node:
        for i, name in enumerate(node.input):
            node.input[i] = names.get(name, name)
        for i, name in enumerate(node.output):
            node.output[i] = names.get(name, name)


def _symbolic_batch(model: onnx.ModelProto) -> None:
    for value in [*model.graph.input, *model.graph.output]:
        first = value.type.tensor_type.shape.dim[0]
        first.Clear()
        first.dim_param = "batch"


def _copy_batch_in_reshapes(model: onnx.ModelProto, prefix: str) -> None:
    """Reshape targets [1, ...] -> [0 (copy the input's batch), ...] (as exporters write them)."""
    for k, init in enumerate(model.graph.initializer):
        if init.name.startswith(prefix) and init.data_type == onnx.TensorProto.INT64:
            target = numpy_helper.to_array(init).copy()
            if target.ndim == 1 and target.size and target[0] == 1:
                target[0] = 0
                model.graph.initializer[k].CopyFrom(numpy_helper.from_array(target, init.name))


def resnet50() -> onnx.ModelProto:
    from onnxc.zoo import load_zoo, randomize_weights

    model = randomize_weights(load_zoo("resnet50"))
    constants = {i.name for i in model.graph.initializer}  # opset-9 models list them as inputs
    inputs = [v for v in model.graph.input if v.name not in constants]
    del model.graph.input[:]
    model.graph.input.extend(inputs)
    used = {name for node in model.graph.node for name in node.input}
    kept = [i for i in model.graph.initializer if i.name in used]  # an unused blob
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept)
    _copy_batch_in_reshapes(model, "OC2_DUMMY")  # the Reshape before the classifier's Gemm
    _rename(model, {"gpu_0/data_0": "data", "gpu_0/softmax_1": "prob"})
    _symbolic_batch(model)
    onnx.checker.check_model(model)
    return model


def bert2() -> onnx.ModelProto:
    from onnxc.zoo_bert import bert_encoder

    model = bert_encoder(layers=2)
    _copy_batch_in_reshapes(model, "shape")
    _symbolic_batch(model)
    onnx.checker.check_model(model)
    return model


BUILDERS = {"resnet50": resnet50, "bert2": bert2}


def sample_inputs(model: onnx.ModelProto, batch: int = 1, seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded inputs of `batch` samples: N(0, 1) floats, BERT's mask with a padded last quarter."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for value in model.graph.input:
        shape = [batch] + [d.dim_value for d in value.type.tensor_type.shape.dim[1:]]
        if value.name == "attention_mask":
            mask = np.ones(shape, np.float32)
            mask[:, shape[1] - shape[1] // 4:] = 0.0
            feeds[value.name] = mask
        else:
            feeds[value.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


_TYPES = {onnx.TensorProto.FLOAT: "TYPE_FP32", onnx.TensorProto.INT64: "TYPE_INT64"}


def config_pbtxt(name: str, model: onnx.ModelProto, settings: BatcherSettings) -> str:
    """Triton's ModelConfig text for `model` (dims without the batch dim)."""

    def tensors(kind: str, values) -> str:
        out = []
        for value in values:
            t = value.type.tensor_type
            dims = ", ".join(str(d.dim_value) for d in t.shape.dim[1:])
            out.append(f'  {{ name: "{value.name}" data_type: {_TYPES[t.elem_type]} '
                       f"dims: [ {dims} ] }}")
        return f"{kind} [\n" + ",\n".join(out) + "\n]\n"

    preferred = ", ".join(str(s) for s in settings.preferred_batch_sizes)
    return (f'name: "{name}"\n'
            f"max_batch_size: {settings.max_batch_size}\n"
            + tensors("input", model.graph.input)
            + tensors("output", model.graph.output)
            + "dynamic_batching {\n"
            + (f"  preferred_batch_size: [ {preferred} ]\n" if preferred else "")
            + f"  max_queue_delay_microseconds: {settings.max_queue_delay_us}\n}}\n"
            + f"instance_group [ {{ count: {settings.instances} kind: KIND_CPU }} ]\n"
            + f'parameters {{ key: "num_threads" value {{ string_value: "{settings.threads}" }} }}\n')


def write_repository(root: Path, names: list[str], settings: BatcherSettings) -> Path:
    """REPO/<model>/config.pbtxt and REPO/<model>/1/model.onnx for each model in `names`."""
    for name in names:
        model = BUILDERS[name]()
        (root / name / "1").mkdir(parents=True, exist_ok=True)
        onnx.save(model, str(root / name / "1" / "model.onnx"))
        (root / name / "config.pbtxt").write_text(config_pbtxt(name, model, settings))
    return root
