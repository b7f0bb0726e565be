"""onnxruntime as an exact reference for int8 models, on every x86 host.

On x86 hosts without AVX512-VNNI (or AVX-VNNI), onnxruntime multiplies u8 activations by s8
weights with `vpmaddubsw`, whose i16 pair sums saturate: its QLinearConv, QLinearMatMul,
MatMulInteger and QDQ results are then not the ones ONNX defines (onnxruntime's quantization
docs say so; microsoft/onnxruntime#16105 shows it on an AMD AVX2 machine). Its u8 x u8
kernels widen to i16 first and are exact everywhere.

`exact_twin(model)` rewrites each s8 weight initializer (with its zero point) to u8 by adding
128 to both: every dequantized value, and so every result ONNX defines, is unchanged, and
onnxruntime computes the twin exactly. onnxc's results on the original must equal
onnxruntime's on the twin. `ort_exact(model, feeds)` runs the twin. A model with s8
activations is left as it is: onnxruntime has no s8 x u8 kernels, and its s8 x s8 ones do
not saturate.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, numpy_helper

WEIGHT_INPUTS = {
    # op: (index of the weight, index of its zero point)
    "MatMulInteger": (1, 3),
    "ConvInteger": (1, 3),
    "QLinearConv": (3, 5),
    "QLinearMatMul": (3, 5),
    "DequantizeLinear": (0, 2),
}


def exact_twin(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of `model` whose s8 weight initializers (and their zero points) are u8 + 128."""
    if _has_int8_activations(model):
        return model
    twin = onnx.ModelProto()
    twin.CopyFrom(model)
    graph = twin.graph
    initializers = {t.name: t for t in graph.initializer}
    for node in graph.node:
        if node.op_type not in WEIGHT_INPUTS or node.domain not in ("", "ai.onnx"):
            continue
        w_at, zp_at = WEIGHT_INPUTS[node.op_type]
        weight = initializers.get(node.input[w_at]) if len(node.input) > w_at else None
        if weight is None or weight.data_type != TensorProto.INT8:
            continue
        zp_name = node.input[zp_at] if len(node.input) > zp_at else ""
        zp = (numpy_helper.to_array(initializers[zp_name]) if zp_name
              else np.zeros((), np.int8))
        inputs = list(node.input) + [""] * (zp_at + 1 - len(node.input))
        inputs[w_at] = _add_initializer(graph, f"{weight.name}_u8",
                                        numpy_helper.to_array(weight))
        inputs[zp_at] = _add_initializer(graph, f"{zp_name or weight.name + '_zp'}_u8", zp)
        del node.input[:]
        node.input.extend(inputs)
    return twin


def _has_int8_activations(model: onnx.ModelProto) -> bool:
    inferred = onnx.shape_inference.infer_shapes(model)
    weights = {t.name for t in model.graph.initializer}
    values = [*inferred.graph.input, *inferred.graph.value_info, *inferred.graph.output]
    return any(v.type.tensor_type.elem_type == TensorProto.INT8 and v.name not in weights
               for v in values)


def _add_initializer(graph: onnx.GraphProto, name: str, values: np.ndarray) -> str:
    if all(t.name != name for t in graph.initializer):
        shifted = (values.astype(np.int16) + 128).astype(np.uint8)
        graph.initializer.append(numpy_helper.from_array(shifted, name))
    return name


def ort_exact(model: onnx.ModelProto, feeds, threads: int = 1, **options) -> list[np.ndarray]:
    """onnxruntime's outputs for `model`, computed on its exact twin."""
    session_options = ort.SessionOptions()
    session_options.intra_op_num_threads = threads
    session_options.log_severity_level = 3  # the twin leaves the s8 initializers unused
    for key, value in options.items():
        setattr(session_options, key, value)
    session = ort.InferenceSession(exact_twin(model).SerializeToString(), session_options,
                                   providers=["CPUExecutionProvider"])
    return session.run(None, feeds)
