"""1-D convolutions as 2-D ones over a height of 1, so that they run on the NHWC kernels.

Audio and speech front ends are stacks of 1-D convs (wav2vec2's feature extractor, Whisper's
two input convs). The plain N-D kernel (lowering/graph_to_loops/conv.py) computes them one
output channel at a time with scalar loops; the NHWC implicit GEMM runs them at GEMM speed.
`assign-layout` calls `convs_as_2d` first, so every rank-3 f32 `graph.conv` /
`graph.conv_add` with a constant weight becomes

    %x4 = graph.unsqueeze(%x) {axes = [2]}           // [N, C, W] -> [N, C, 1, W]
    %y4 = graph.conv(%x4, %w4, ...)                  // weight [M, C/g, 1, K], pads [0, b, 0, e]
    %y  = graph.squeeze(%y4) {axes = [2]}            // [N, M, 1, W'] -> [N, M, W']

with strides, dilations and pads given a leading 1 / 1 / 0, the group, bias, residual
(unsqueezed as the input) and activation kept. The layout pass then gives the 2-D conv NHWC
like any other. Measured on the real-export Whisper encoder (d_model 64, 128 frames), one
thread: its two convs took 66% of the run on the plain kernel.
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import Float32Type, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from onnxc.dialects import graph
from onnxc.dialects.dense_data import from_numpy
from onnxc.dialects.graph import ints_of, shape_of
from onnxc.passes.layout_fold import constant_value
from onnxc.passes.rewrite_utils import i64_array, with_shape

CONVS = (graph.ConvOp, graph.ConvAddOp)


def _applies(op: Operation) -> bool:
    if not isinstance(op, CONVS) or len(shape_of(op.input)) != 3:
        return False
    if not isinstance(op.weight.owner, graph.ConstantOp):
        return False
    return all(isinstance(t, TensorType) and isinstance(t.get_element_type(), Float32Type)
               for t in (*op.operand_types, *op.result_types))


def _unsqueezed(value: SSAValue, before: Operation) -> SSAValue:
    n, c, w = shape_of(value)
    op = graph.UnsqueezeOp.create(operands=[value],
                                  result_types=[with_shape(value.type, [n, c, 1, w])],
                                  properties={"axes": i64_array([2])})
    Rewriter.insert_op(op, InsertPoint.before(before))
    return op.results[0]


def _weight_2d(op: Operation) -> SSAValue:
    owner = op.weight.owner
    assert isinstance(owner, graph.ConstantOp)
    w = constant_value(owner.value)
    m, c, k = w.shape
    new = graph.ConstantOp(from_numpy(w.reshape(m, c, 1, k),
                                      op.weight.type.get_element_type()))
    Rewriter.insert_op(new, InsertPoint.before(op))
    return new.output


def _as_2d(op: Operation) -> None:
    x4 = _unsqueezed(op.input, op)
    operands = [x4, _weight_2d(op)]
    if op.bias is not None:
        operands.append(op.bias)
    if isinstance(op, graph.ConvAddOp):
        operands.append(_unsqueezed(op.addend, op))
    begin, end = ints_of(op.pads)
    properties = dict(op.properties)
    properties.update(strides=i64_array([1, *ints_of(op.strides)]),
                      dilations=i64_array([1, *ints_of(op.dilations)]),
                      pads=i64_array([0, begin, 0, end]))
    n, m, w = shape_of(op.output)
    conv = type(op).create(operands=operands,
                           result_types=[with_shape(op.output.type, [n, m, 1, w])],
                           properties=properties, attributes=dict(op.attributes))
    squeeze = graph.SqueezeOp.create(operands=[conv.results[0]],
                                     result_types=[op.output.type],
                                     properties={"axes": i64_array([2])})
    Rewriter.insert_op(conv, InsertPoint.before(op))
    Rewriter.insert_op(squeeze, InsertPoint.before(op))
    old_weight = op.weight.owner
    op.results[0].replace_all_uses_with(squeeze.results[0])
    Rewriter.erase_op(op)
    if not old_weight.results[0].uses:
        Rewriter.erase_op(old_weight)


def convs_as_2d(f: func.FuncOp) -> int:
    """Rewrite `f`'s 1-D f32 convs with constant weights (top level of its body) as 2-D
    ones; returns how many."""
    convs = [op for op in f.body.block.ops if _applies(op)]
    for op in convs:
        _as_2d(op)
    return len(convs)
