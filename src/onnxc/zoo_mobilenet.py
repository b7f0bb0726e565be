"""A MobileNetV2-style network with random weights, for the fusion passes and benchmarks.

`mobilenet_v2_like(seed)` keeps what makes MobileNetV2 interesting to a graph compiler: a
224 x 224 input, inverted residual blocks (1x1 expand -> 3x3 depthwise -> 1x1 project, each
conv followed by BatchNormalization, Clip(0, 6) after the first two), residual Adds where
stride is 1 and widths match, a 1x1 head conv, GlobalAveragePool, Flatten and a Gemm
classifier. It is an honest reduced-depth version: 10 blocks instead of 17 and a 640-wide
head instead of 1280, so it compiles in seconds.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# (expansion t, output channels c, stride s) per block, as in the MobileNetV2 table.
MOBILENET_V2_BLOCKS = (
    (1, 16, 1), (6, 24, 2), (6, 24, 1), (6, 32, 2), (6, 32, 1),
    (6, 64, 2), (6, 64, 1), (6, 96, 1), (6, 160, 2), (6, 160, 1),
)
OPSET = 13
IR_VERSION = 8  # onnxruntime 1.31 refuses onnx 1.23's default


class _Builder:
    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.count = 0

    def name(self, base: str) -> str:
        self.count += 1
        return f"{base}_{self.count}"

    def init(self, base: str, array: np.ndarray) -> str:
        name = self.name(base)
        self.inits.append(numpy_helper.from_array(array.astype(np.float32), name))
        return name

    def node(self, op: str, inputs: list[str], **attrs) -> str:
        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def conv_bn(self, x: str, c_in: int, c_out: int, k: int, stride: int, group: int,
                relu6: bool) -> str:
        fan_in = (c_in // group) * k * k
        w = self.rng.standard_normal((c_out, c_in // group, k, k)) * np.sqrt(2.0 / fan_in)
        y = self.node("Conv", [x, self.init("w", w)], kernel_shape=[k, k],
                      strides=[stride, stride], pads=[k // 2] * 4, group=group)
        bn = [self.init("gamma", self.rng.uniform(0.5, 1.5, c_out)),
              self.init("beta", self.rng.standard_normal(c_out) * 0.1),
              self.init("mean", self.rng.standard_normal(c_out) * 0.1),
              self.init("var", self.rng.uniform(0.5, 1.5, c_out))]
        y = self.node("BatchNormalization", [y, *bn], epsilon=1e-5)
        if relu6:
            y = self.node("Clip", [y, self.init("min", np.array(0.0)),
                                   self.init("max", np.array(6.0))])
        return y


def mobilenet_v2_like(seed: int = 0, classes: int = 1000) -> onnx.ModelProto:
    """The reduced MobileNetV2 described above, input `input` 1x3x224x224, output `logits`."""
    b = _Builder(seed)
    x = b.conv_bn("input", 3, 32, 3, 2, 1, relu6=True)
    c_in = 32
    for t, c_out, stride in MOBILENET_V2_BLOCKS:
        hidden = c_in * t
        y = x if t == 1 else b.conv_bn(x, c_in, hidden, 1, 1, 1, relu6=True)
        y = b.conv_bn(y, hidden, hidden, 3, stride, hidden, relu6=True)  # depthwise
        y = b.conv_bn(y, hidden, c_out, 1, 1, 1, relu6=False)
        x = b.node("Add", [x, y]) if stride == 1 and c_in == c_out else y
        c_in = c_out
    x = b.conv_bn(x, c_in, 640, 1, 1, 1, relu6=True)
    x = b.node("GlobalAveragePool", [x])
    x = b.node("Flatten", [x], axis=1)
    w = b.rng.standard_normal((classes, 640)) * np.sqrt(1.0 / 640)
    logits = b.node("Gemm", [x, b.init("fc_w", w), b.init("fc_b", np.zeros(classes))],
                    transB=1)
    b.nodes.append(helper.make_node("Identity", [logits], ["logits"], name="logits"))
    graph = helper.make_graph(
        b.nodes, "mobilenet_v2_like",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 224, 224])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, classes])],
        b.inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    return model
