"""The model-zoo networks that the onnx package ships, and random-weight variants of them.

onnx ships nine opset-9 networks under `onnx/backend/test/data/light` whose weights are all
one repeated value (built by ConstantOfShape), so their expected outputs are constant vectors
that a wrong kernel can still match. `randomize_weights` keeps each graph and replaces those
weights with seeded random initializers of a sensible scale (He-style for weights, positive
variances for BatchNormalization), which makes every kernel's arithmetic visible in the output.
Used by the model tests, the benchmarks and `onnxc run`.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np
import onnx
from onnx import numpy_helper

from onnxc.zoo_bert import BERT_TINY, bert_encoder, bert_inputs
from onnxc.zoo_micro import elementwise_chain, matmul_model
from onnxc.zoo_mobilenet import mobilenet_v2_like

ZOO_MODELS = (
    "bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50",
    "shufflenet", "squeezenet", "vgg19", "zfnet512",
)

REFERENCE_IR_VERSION = 8
"""IR version stamped on generated models: onnxruntime 1.31 refuses onnx 1.23's default 14."""


def benchmark_models() -> dict[str, Callable[[], onnx.ModelProto]]:
    """The performance work's models, by name, each with seeded random weights."""
    return {
        "resnet50": lambda: randomize_weights(load_zoo("resnet50")),
        "squeezenet": lambda: randomize_weights(load_zoo("squeezenet")),
        "shufflenet": lambda: randomize_weights(load_zoo("shufflenet")),
        "mobilenet_v2_like": mobilenet_v2_like,
        "bert_encoder": lambda: bert_encoder(layers=2),
        "matmul_512": lambda: matmul_model(512),
        "elementwise_chain_16m": elementwise_chain,
    }


def zoo_dir() -> str:
    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")


def zoo_path(name: str) -> str:
    """Path of `light_<name>.onnx` inside the installed onnx package."""
    path = os.path.join(zoo_dir(), f"light_{name}.onnx")
    if not os.path.exists(path):
        raise FileNotFoundError(f"onnx does not ship {path}")
    return path


def load_zoo(name: str) -> onnx.ModelProto:
    return onnx.load(zoo_path(name))


def _role_of(value_name: str, graph: onnx.GraphProto) -> str:
    """How a weight is used: 'var'/'scale' need positive values; a conv/gemm weight is
    'weight_relu' when a Relu follows its layer (He scaling), else 'weight' (LeCun scaling),
    so that activations neither explode nor vanish through dozens of random layers."""
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name != value_name:
                continue
            if node.op_type == "BatchNormalization":
                if i == 1 and _feeds_residual(node.output[0], graph):
                    return "residual_scale"
                return {1: "scale", 2: "shift", 3: "shift", 4: "var"}.get(i, "shift")
            if node.op_type == "Unsqueeze":
                return _role_of(node.output[0], graph)
            if node.op_type == "Mul":
                return "scale"
            if node.op_type in ("Conv", "Gemm", "MatMul") and i == 1:
                return "weight_relu" if _feeds_relu(node.output[0], graph) else "weight"
    return "shift"


def _feeds_residual(value_name: str, graph: onnx.GraphProto) -> bool:
    """Whether `value_name` is a branch merged into a residual Sum/Add."""
    return any(value_name in n.input and n.op_type in ("Sum", "Add") and len(n.input) > 1
               and not any(i in {t.name for t in graph.initializer} for i in n.input)
               for n in graph.node)


def _feeds_relu(value_name: str, graph: onnx.GraphProto, hops: int = 3) -> bool:
    """Whether `value_name` reaches a Relu through at most `hops` per-channel ops."""
    if hops == 0:
        return False
    for node in graph.node:
        if value_name in node.input:
            if node.op_type == "Relu":
                return True
            if node.op_type in ("BatchNormalization", "Add", "Mul", "Sum", "Unsqueeze") and (
                _feeds_relu(node.output[0], graph, hops - 1)
            ):
                return True
    return False


def _random_weight(rng: np.random.Generator, shape: tuple[int, ...], role: str) -> np.ndarray:
    if len(shape) >= 2:
        fan_in = int(np.prod(shape[1:]))
        gain = 2.0 if role == "weight_relu" else 1.0
        data = rng.standard_normal(shape) * np.sqrt(gain / max(fan_in, 1))
    elif role in ("var", "scale"):
        data = rng.uniform(0.5, 1.5, shape)
    elif role == "residual_scale":  # small gamma on residual branches, as in ResNet training
        data = rng.uniform(0.1, 0.3, shape)
    else:
        data = rng.standard_normal(shape) * 0.1
    return data.astype(np.float32)


def randomize_weights(model: onnx.ModelProto, seed: int = 0) -> onnx.ModelProto:
    """A copy of `model` whose float weights are seeded random initializers.

    Weights built by ConstantOfShape from a constant shape and float initializers (which these
    old models also list as graph inputs) are both replaced; integer initializers (shapes)
    stay. Weights stop being graph inputs, so every runtime treats them as constants.
    """
    rng = np.random.default_rng(seed)
    out = onnx.ModelProto()
    out.CopyFrom(model)
    graph = out.graph
    inits = {i.name: i for i in graph.initializer}
    kept_nodes, dropped, new_inits = [], set(), []
    for node in graph.node:
        shape_name = node.input[0] if node.op_type == "ConstantOfShape" else None
        if shape_name is None or shape_name not in inits:
            kept_nodes.append(node)
            continue
        shape = tuple(int(d) for d in numpy_helper.to_array(inits[shape_name]))
        dropped.add(shape_name)
        data = _random_weight(rng, shape, _role_of(node.output[0], graph))
        new_inits.append(numpy_helper.from_array(data, node.output[0]))
    for init in graph.initializer:
        if init.name not in dropped and init.data_type == onnx.TensorProto.FLOAT:
            shape = tuple(init.dims)
            dropped.add(init.name)
            data = _random_weight(rng, shape, _role_of(init.name, graph))
            new_inits.append(numpy_helper.from_array(data, init.name))
    del graph.node[:]
    graph.node.extend(kept_nodes)
    remaining = [i for i in graph.initializer if i.name not in dropped]
    del graph.initializer[:]
    graph.initializer.extend(remaining + new_inits)
    weights = {i.name for i in new_inits} | dropped
    kept_inputs = [i for i in graph.input if i.name not in weights]
    del graph.input[:]
    graph.input.extend(kept_inputs)
    out.ir_version = REFERENCE_IR_VERSION
    return out


def expose_logits(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy with the input of the final Softmax added as a graph output.

    With random weights the class probabilities saturate to 0/1, which hides small errors;
    the logits before the Softmax keep every kernel's error visible.
    """
    out = onnx.ModelProto()
    out.CopyFrom(model)
    softmaxes = [n for n in out.graph.node if n.op_type == "Softmax"]
    if not softmaxes:
        return out
    inferred = onnx.shape_inference.infer_shapes(out)
    infos = {v.name: v for v in inferred.graph.value_info}
    name = softmaxes[-1].input[0]
    if name in infos and name not in {o.name for o in out.graph.output}:
        out.graph.output.append(infos[name])
    return out


def random_inputs(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded inputs for every non-initializer graph input: floats in [0, 1), ints zero."""
    rng = np.random.default_rng(seed)
    inits = {i.name for i in model.graph.initializer}
    feeds = {}
    for value in model.graph.input:
        if value.name in inits:
            continue
        t = value.type.tensor_type
        shape = [d.dim_value if d.dim_value > 0 else 1 for d in t.shape.dim]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(t.elem_type)
        if np.issubdtype(dtype, np.floating):
            feeds[value.name] = rng.random(shape).astype(dtype)
        else:
            feeds[value.name] = np.zeros(shape, dtype=dtype)
    return feeds


__all__ = [
    "BERT_TINY", "REFERENCE_IR_VERSION", "ZOO_MODELS", "benchmark_models", "bert_encoder",
    "bert_inputs", "elementwise_chain", "expose_logits", "load_zoo", "matmul_model",
    "mobilenet_v2_like", "random_inputs", "randomize_weights", "zoo_dir", "zoo_path",
]
