"""The `graph` dialect: ONNX operators on statically shaped tensors.

This is the level the importer produces and the graph optimizations rewrite. It differs from
ONNX in three ways that make rewriting simple:
- every tensor type is static (`tensor<1x3x224x224xf32>`);
- inputs that ONNX allows to be computed but that are constant in practice (axes, shapes,
  pads, slice bounds, clip bounds) are properties, so patterns can read them directly;
- attributes are normalised across opsets (explicit pads instead of auto_pad, opset-13
  Softmax semantics, the target shape of Reshape/Cast carried by the result type).

Every op prints as `%r = graph.<op>(%a, %b) {props} : (types) -> types` and verifies its result
shapes with the rules in `graph_shapes`.
"""

from __future__ import annotations

from xdsl.ir import Dialect

from onnxc.dialects.graph_base import GraphOp, float_of, int_of, ints_of, shape_of
from onnxc.dialects.graph_composite import (
    ChannelShuffleOp,
    ConvAddOp,
    FusedElementwiseOp,
)
from onnxc.dialects.graph_fused import (
    AttentionOp,
    GeluOp,
    LayerNormalizationOp,
    PReluOp,
    WeightedSumOp,
)
from onnxc.dialects.graph_layout import LayoutConvertOp
from onnxc.dialects.graph_math import (
    AbsOp,
    AddOp,
    BinaryElementwiseOp,
    CastOp,
    ClipOp,
    ConstantOfShapeOp,
    ConstantOp,
    DivOp,
    DropoutOp,
    ErfOp,
    ExpOp,
    GemmOp,
    IdentityOp,
    LeakyReluOp,
    LogOp,
    MatMulOp,
    MaxOp,
    MinOp,
    MulOp,
    NegOp,
    PowOp,
    ReciprocalOp,
    ReluOp,
    SigmoidOp,
    SqrtOp,
    SubOp,
    SumOp,
    TanhOp,
    UnaryElementwiseOp,
    VariadicElementwiseOp,
)
from onnxc.dialects.graph_nn import (
    AveragePoolOp,
    BatchNormalizationOp,
    ConvOp,
    GlobalAveragePoolOp,
    GlobalMaxPoolOp,
    GlobalPoolOp,
    LRNOp,
    MaxPoolOp,
    PoolOp,
    SoftmaxOp,
)
from onnxc.dialects.graph_quant import DequantizeLinearOp, QuantizeLinearOp
from onnxc.dialects.graph_reduce import ReduceMeanOp, ReduceOp, ReduceSumOp
from onnxc.dialects.graph_scalar import (
    AddScalarOp,
    DivScalarOp,
    MulScalarOp,
    PowScalarOp,
    ScalarBinaryOp,
    SubScalarOp,
)
from onnxc.dialects.graph_tensor import (
    ConcatOp,
    FlattenOp,
    GatherOp,
    PadOp,
    ReshapeLikeOp,
    ReshapeOp,
    ShapeOp,
    SliceOp,
    SplitOp,
    SqueezeOp,
    TransposeOp,
    UnsqueezeOp,
)

Graph = Dialect(
    "graph",
    [
        ConstantOp, ConstantOfShapeOp,
        ReluOp, SigmoidOp, TanhOp, ExpOp, LogOp, SqrtOp, NegOp, AbsOp, ReciprocalOp,
        IdentityOp, DropoutOp, LeakyReluOp, ClipOp, CastOp,
        AddOp, SubOp, MulOp, DivOp, PowOp, SumOp, MaxOp, MinOp,
        MatMulOp, GemmOp,
        ConvOp, MaxPoolOp, AveragePoolOp, GlobalAveragePoolOp, GlobalMaxPoolOp,
        BatchNormalizationOp, LRNOp, SoftmaxOp,
        ReshapeOp, FlattenOp, SqueezeOp, UnsqueezeOp, TransposeOp, ConcatOp, SplitOp,
        SliceOp, GatherOp, PadOp, ShapeOp,
        ErfOp, ReduceMeanOp, ReduceSumOp,
        AddScalarOp, SubScalarOp, MulScalarOp, DivScalarOp, PowScalarOp,
        LayerNormalizationOp, GeluOp, PReluOp, WeightedSumOp, AttentionOp,
        FusedElementwiseOp, ChannelShuffleOp, ConvAddOp,
        LayoutConvertOp, QuantizeLinearOp, DequantizeLinearOp,
    ],
    [],
)

__all__ = [
    "Graph", "GraphOp", "float_of", "int_of", "ints_of", "shape_of",
    "ScalarBinaryOp", "AddScalarOp", "SubScalarOp", "MulScalarOp", "DivScalarOp", "PowScalarOp",
    "ConstantOp",
    "ConstantOfShapeOp",
    "UnaryElementwiseOp",
    "ReluOp",
    "SigmoidOp",
    "TanhOp",
    "ExpOp",
    "LogOp",
    "SqrtOp",
    "NegOp",
    "AbsOp",
    "ReciprocalOp",
    "IdentityOp",
    "DropoutOp",
    "LeakyReluOp",
    "ClipOp",
    "CastOp",
    "BinaryElementwiseOp",
    "AddOp",
    "SubOp",
    "MulOp",
    "DivOp",
    "PowOp",
    "VariadicElementwiseOp",
    "SumOp",
    "MaxOp",
    "MinOp",
    "MatMulOp",
    "GemmOp",
    "ConvOp",
    "PoolOp",
    "MaxPoolOp",
    "AveragePoolOp",
    "GlobalPoolOp",
    "GlobalAveragePoolOp",
    "GlobalMaxPoolOp",
    "BatchNormalizationOp",
    "LRNOp",
    "SoftmaxOp",
    "ReshapeLikeOp",
    "ReshapeOp",
    "FlattenOp",
    "SqueezeOp",
    "UnsqueezeOp",
    "TransposeOp",
    "ConcatOp",
    "SplitOp",
    "SliceOp",
    "GatherOp",
    "PadOp",
    "ShapeOp",
    "ErfOp",
    "ReduceOp",
    "ReduceMeanOp",
    "ReduceSumOp",
    "LayerNormalizationOp",
    "GeluOp",
    "PReluOp",
    "WeightedSumOp",
    "AttentionOp",
    "FusedElementwiseOp",
    "ChannelShuffleOp",
    "ConvAddOp",
    "LayoutConvertOp",
    "QuantizeLinearOp",
    "DequantizeLinearOp",
]
