"""Floating-point operation counts of an ONNX graph, for GFLOP/s and %-of-peak figures.

The count is a property of the model, not of an engine: both onnxc and onnxruntime are
credited with the same FLOPs whatever they fuse or skip. Conventions (the usual ones):
2*M*N*K for MatMul/Gemm, 2*N*M*OH*OW*(C/g)*KH*KW for Conv (a multiply-add is two FLOPs),
one per output element for elementwise ops, one per input element for reductions and
global pools, output elements times window size for windowed pools. Shape-only ops
(Reshape, Transpose, Concat, ...) count zero.
"""

from __future__ import annotations

import math

import onnx

ELEMENTWISE = frozenset({
    "Abs", "Add", "BatchNormalization", "Ceil", "Clip", "Cos", "Div", "Elu", "Equal", "Erf",
    "Exp", "Floor", "Gelu", "Greater", "HardSigmoid", "HardSwish", "LayerNormalization",
    "LeakyRelu", "Less", "Log", "LogSoftmax", "LRN", "Max", "Mean", "Min", "Mul", "Neg",
    "Not", "PRelu", "Pow", "Reciprocal", "Relu", "Round", "Selu", "Sigmoid", "Sign", "Sin",
    "Softmax", "Softplus", "Sqrt", "Sub", "Sum", "Tanh", "Where",
})
"""Ops credited one FLOP per output element."""

REDUCTIONS = frozenset({
    "GlobalAveragePool", "GlobalMaxPool", "ReduceL2", "ReduceMax", "ReduceMean", "ReduceMin",
    "ReduceSum", "ReduceSumSquare",
})
"""Ops credited one FLOP per input element."""

WINDOWED = frozenset({"AveragePool", "MaxPool"})


def _shapes(model: onnx.ModelProto) -> dict[str, tuple[int, ...]]:
    """Static shapes of every value onnx's shape inference can resolve."""
    inferred = onnx.shape_inference.infer_shapes(model)
    graph = inferred.graph
    shapes: dict[str, tuple[int, ...]] = {
        init.name: tuple(init.dims) for init in graph.initializer
    }
    for value in (*graph.input, *graph.value_info, *graph.output):
        t = value.type.tensor_type
        if not t.HasField("shape"):
            continue
        dims = tuple(d.dim_value for d in t.shape.dim)
        if all(d > 0 for d in dims) or not dims:
            shapes[value.name] = dims
    return shapes


def _attr(node: onnx.NodeProto, name: str, default):
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def node_flops(node: onnx.NodeProto, shapes: dict[str, tuple[int, ...]]) -> int:
    """FLOPs of one node; 0 when it moves data only or a shape is unknown."""
    out = shapes.get(node.output[0]) if node.output else None
    if out is None:
        return 0
    op = node.op_type
    if op == "MatMul":
        a = shapes.get(node.input[0])
        return 2 * math.prod(out) * a[-1] if a else 0
    if op == "Gemm":
        a = shapes.get(node.input[0])
        if not a:
            return 0
        k = a[0] if _attr(node, "transA", 0) else a[1]
        return 2 * math.prod(out) * k
    if op == "Conv":
        w = shapes.get(node.input[1])
        # out = [N, M, OH, OW]; w = [M, C/g, KH, KW]: 2*N*M*OH*OW * C/g*KH*KW.
        return 2 * math.prod(out) * math.prod(w[1:]) if w else 0
    if op in ELEMENTWISE:
        return math.prod(out)
    if op in REDUCTIONS:
        inp = shapes.get(node.input[0])
        return math.prod(inp) if inp else 0
    if op in WINDOWED:
        return math.prod(out) * math.prod(_attr(node, "kernel_shape", [1]))
    return 0


def count_flops(model: onnx.ModelProto) -> int:
    """Total FLOPs of one inference of `model` (top-level graph only)."""
    shapes = _shapes(model)
    return sum(node_flops(node, shapes) for node in model.graph.node)
