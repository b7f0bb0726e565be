"""`fuse-pointwise-depthwise`: a 1x1 conv and the depthwise conv of its result become one
graph.pointwise_depthwise where the tensor between them would not stay in the cache.

MobileNet, EfficientNet and MnasNet blocks expand C channels to 4-6x as many with a 1x1
conv, then run a 3x3 (or 5x5) depthwise conv over the expansion. Unfused, the expanded
tensor (4.8 MB in MobileNetV2's second block) is written to memory by one kernel and read
back by the next; the depthwise kernel then waits on memory, and a second thread adds
little (Zen 3, MobileNetV2's 112x112x96 depthwise layer: 173 us on one thread, 190 on two).
The fused kernel keeps only the kh expanded rows the current depthwise row reads.

It runs with the lowering passes, after assign-layout (both convs must run in NHWC): like
the layout, whether to fuse is a decision about memory, not about the graph. A pair fuses
when the expanded tensor of one image is at least `min-bytes` (default: a core's L2 on the
machines measured), both convs have constant weights and biases (every export after
BatchNormalization folding), the 1x1 conv's result has no other reader, the depthwise
window is undilated with stride at most its height, the kh-row ring of expanded rows is at
most RING_MAX_BYTES and the rows the kernel's strips compute twice are at most
MAX_RECOMPUTED of them.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import Float32Type, TensorType
from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from onnxc.dialects import graph
from onnxc.dialects.graph import int_of, ints_of, shape_of
from onnxc.dialects.graph_composite import POINTWISE_EPILOGUE, recomputed_share
from onnxc.dialects.layout import layout_of
from onnxc.dialects.onnxc_attributes import PRECISION_ATTR
from onnxc.dialects.symbolic_dims import is_static
from onnxc.passes.base import GraphPatternPass

MIN_BYTES = 512 * 1024
"""Expanded tensors (one image) from this size are fused: a Zen 3 core's L2."""
RING_MAX_BYTES = 256 * 1024
"""The fused kernel's ring of kh expanded rows must stay in L2 next to its input rows."""
MAX_RECOMPUTED = 1 / 8
"""Each strip of the fused kernel recomputes the kh - s expanded rows it shares with the
strip above: fused where that is at most this share of the 1x1 conv's work (EfficientNet's
14 x 14 5x5 layers would recompute 4 rows of every 7: 1.6x the 1x1 work, slower fused)."""


def _plain_f32_nhwc(op: Operation) -> bool:
    """An NHWC graph.conv on f32, static sizes, constant weight and bias, no bf16 mark."""
    if type(op) is not graph.ConvOp or op.bias is None or PRECISION_ATTR in op.attributes:
        return False
    if layout_of(op.input.type) != "NHWC" or layout_of(op.output.type) != "NHWC":
        return False
    types = [*op.operand_types, *op.result_types]
    if not all(isinstance(t, TensorType) and isinstance(t.element_type, Float32Type)
               and is_static(shape_of(t)) for t in types):
        return False
    return (len(shape_of(op.input)) == 4 and isinstance(op.weight.owner, graph.ConstantOp)
            and isinstance(op.bias.owner, graph.ConstantOp))


def _is_pointwise(op: Operation) -> bool:
    return (_plain_f32_nhwc(op) and shape_of(op.weight)[2:] == (1, 1)
            and ints_of(op.strides) == (1, 1) and not any(ints_of(op.pads))
            and int_of(op.group, 1) == 1)


def _is_depthwise(op: Operation) -> bool:
    if not _plain_f32_nhwc(op):
        return False
    c = shape_of(op.input)[1]
    kh = shape_of(op.weight)[2]
    sh, _ = ints_of(op.strides)
    return (int_of(op.group, 1) == c == shape_of(op.output)[1] > 1
            and ints_of(op.dilations) == (1, 1) and 1 <= sh <= kh)


class FusePointwiseIntoDepthwise(RewritePattern):
    """depthwise(pointwise(x)) -> graph.pointwise_depthwise(x, ...) (see the module doc)."""

    def __init__(self, min_bytes: int = MIN_BYTES):
        self.min_bytes = min_bytes

    @op_type_rewrite_pattern
    def match_and_rewrite(self, dw: graph.ConvOp, rewriter: PatternRewriter):
        pw = dw.input.owner
        if not (_is_depthwise(dw) and isinstance(pw, graph.ConvOp) and _is_pointwise(pw)
                and pw.output.has_one_use()):
            return
        _, c1, h, w = shape_of(pw.output)
        kh = shape_of(dw.weight)[2]
        if h * w * c1 * 4 < self.min_bytes or kh * w * c1 * 4 > RING_MAX_BYTES:
            return
        if recomputed_share(shape_of(dw.output)[2], kh, ints_of(dw.strides)[0]) > MAX_RECOMPUTED:
            return
        own = {k: v for k, v in dw.properties.items() if k != "group"}
        pointwise = {own_name: pw.properties[name]
                     for own_name, name in POINTWISE_EPILOGUE.items() if name in pw.properties}
        rewriter.replace(dw, graph.PointwiseDepthwiseOp.create(
            operands=[pw.input, pw.weight, pw.bias, dw.weight, dw.bias],
            result_types=[dw.output.type], properties={**own, **pointwise}))
        rewriter.erase(pw)


@dataclass(frozen=True)
class FusePointwiseDepthwisePass(GraphPatternPass):
    """Fuse a 1x1 conv into the depthwise conv after it where their intermediate tensor is
    larger than the cache (graph.pointwise_depthwise)."""

    name = "fuse-pointwise-depthwise"

    min_bytes: int = MIN_BYTES
    """Fuse where the expanded tensor of one image has at least this many bytes."""

    def rewrite_patterns(self):
        return [FusePointwiseIntoDepthwise(self.min_bytes)]
