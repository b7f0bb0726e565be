"""`widen-half-precision`: fp16 and bf16 models store in half, compute in f32.

ONNX models in FLOAT16 or BFLOAT16 keep their tensors in 16 bits, but onnxc's big kernels
(packed GEMM and conv, pooling, normalization, softmax, attention, reductions) compute in f32
only. This pass rewrites every graph op on f16/bf16 tensors whose kernel has no half support
into the same op on f32 between `graph.cast`s, as onnxruntime's CPU provider does for the
ops it has no fp16 kernel for (InsertCastTransformer):

    %y = graph.conv(%x, %w) : (tensor<1x3x8x8xf16>, tensor<4x3x3x3xf16>) -> tensor<1x4x6x6xf16>
becomes
    %0 = graph.cast(%x) {onnxc.widened} : (tensor<1x3x8x8xf16>) -> tensor<1x3x8x8xf32>
    %w32 = graph.constant {value = dense<...> : tensor<4x3x3x3xf32>}
    %1 = graph.conv(%0, %w32) : (...) -> tensor<1x4x6x6xf32>
    %y = graph.cast(%1) {onnxc.widened} : (tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf16>

- Constant operands (weights, biases, scales) are converted at compile time: the f32 op
  reads a new f32 constant, never a run-time cast, so the GEMM/conv kernels pack plain f32
  weights. Half -> f32 is exact, so nothing is lost.
- Activations are converted by the casts; every value the model names keeps its half type
  (and its rounding), so outputs are rounded where the model says they are.
- Ops whose kernels take half directly stay as they are: elementwise f16 arithmetic, tests
  and select (their trait HalfKernel: LLVM computes each op in f32 and rounds once), and the
  ops that only move or view bytes, which take bf16 as well (AnyElementKernel); the traits
  are declared on the ops (dialects/graph_traits.py).
- A value read by several widened ops is cast once (before its first such user: no CSE runs
  at -O0).
- Float properties in the half type (Clip bounds, LeakyRelu alpha, ConstantOfShape's fill
  value) become f32 properties of the same value.

With `widen-half-precision{f32-between-ops=true}` the value between two widened ops stays f32:
the round trip f32 -> half -> f32 of the casts this pass inserted (marked `onnxc.widened`)
is dropped, as onnxruntime drops the casts its InsertCastTransformer inserted. That rounds
at fewer places (closer to onnxruntime) and saves the cast loops, but stores those
intermediates in f32; the default keeps every value the model declares half in half.

It runs late in every -O level (after the fusions that want to see the model's own ops, before
`fuse-elementwise`) and again, always, right before lowering (pipeline.GRAPH_TO_LOOPS), so a
half model compiles at -O0 too; the second run finds nothing left at -O1 and above, where
fp16 and bf16 graphs are widened whole and early instead (`widen-half-graph`, below).
Quantization ops are left alone: their f16 scales are the quantization kernels' business
(QuantizationKernel).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import (
    BFloat16Type,
    DenseIntOrFPElementsAttr,
    Float16Type,
    FloatAttr,
    TensorType,
    UnitAttr,
    f32,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from onnxc.dialects import graph
from onnxc.dialects.dense_data import from_numpy, to_numpy
from onnxc.dialects.graph_base import GraphOp
from onnxc.dialects.graph_traits import AnyElementKernel, HalfKernel, QuantizationKernel
from onnxc.dialects.onnxc_attributes import WIDENED_ATTR
from onnxc.passes.base import GraphPatternPass
from onnxc.passes.constants import constant_value, insert_constant
from onnxc.passes.rewrite_utils import rebuild

HALF = (Float16Type, BFloat16Type)

def is_half(t: Attribute, types: tuple[type[Attribute], ...] = HALF) -> bool:
    return isinstance(t, TensorType) and isinstance(t.get_element_type(), types)


def has_half_kernel(op: Operation) -> bool:
    """Whether `op`'s kernel takes its half operands and results as they are: any element
    type (AnyElementKernel), or f16 (HalfKernel)."""
    if op.has_trait(AnyElementKernel):
        return True
    types = [*op.operand_types, *op.result_types]
    if any(isinstance(t, TensorType) and isinstance(t.get_element_type(), BFloat16Type)
           for t in types):
        return False
    return op.has_trait(HalfKernel)


def needs_widening(op: Operation, types: tuple[type[Attribute], ...] = HALF,
                   every_op: bool = False) -> bool:
    """Whether `op` has tensors of `types` and must compute in f32: when its kernel takes no
    half, or for every op but casts, constants and bit casts (`every_op`)."""
    if not isinstance(op, GraphOp) or op.has_trait(QuantizationKernel):
        return False
    if not any(is_half(t, types) for t in (*op.operand_types, *op.result_types)):
        return False
    if every_op:  # but casts, constants and bit casts (which read the half bits themselves)
        return not isinstance(op, graph.CastOp | graph.ConstantOp | graph.BitCastOp)
    return not has_half_kernel(op)


def widened(t: Attribute, types: tuple[type[Attribute], ...] = HALF) -> Attribute:
    """`t` with f32 elements when it is a tensor type of `types` (layout encoding kept)."""
    if not is_half(t, types):
        return t
    assert isinstance(t, TensorType)
    return TensorType(f32, t.get_shape(), t.encoding)


def _f32_operand(rewriter: PatternRewriter, value: SSAValue, before: Operation) -> SSAValue:
    """`value` as f32: a new constant when it is one (converted now), else a cast, shared by
    the widened users after the first."""
    array = constant_value(value)
    if array is not None:
        return insert_constant(rewriter, np.asarray(array, np.float32), f32, before)
    target = TensorType(f32, value.type.get_shape(), value.type.encoding)
    for use in value.uses:
        user = use.operation
        if (isinstance(user, graph.CastOp) and user.output.type == target
                and user.parent is before.parent and user.is_before_in_block(before)):
            return user.output
    cast = _marked_cast(value, target)
    rewriter.insert(cast, InsertPoint.before(before))
    return cast.output


def _marked_cast(value: SSAValue, target: Attribute) -> graph.CastOp:
    return graph.CastOp(operands=[value], result_types=[target],
                        attributes={WIDENED_ATTR: UnitAttr()})


@dataclass
class WidenHalfOp(RewritePattern):
    """An op on f16/bf16 whose kernel computes in f32 only -> the f32 op between casts."""

    types: tuple[type[Attribute], ...] = HALF
    every_op: bool = False

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not needs_widening(op, self.types, self.every_op):
            return
        done: dict[SSAValue, SSAValue] = {}
        for value in op.operands:
            if is_half(value.type, self.types) and value not in done:
                done[value] = _f32_operand(rewriter, value, op)
        wide = rebuild(op, [done.get(v, v) for v in op.operands],
                       [widened(t, self.types) for t in op.result_types])
        for name, prop in op.properties.items():
            if isinstance(prop, FloatAttr) and isinstance(prop.type, self.types):
                wide.properties[name] = FloatAttr(prop.value.data, f32)
            if isinstance(prop, DenseIntOrFPElementsAttr) and is_half(prop.type, self.types):
                wide.properties[name] = from_numpy(to_numpy(prop), f32)
        new_ops: list[Operation] = [wide]
        results: list[SSAValue] = []
        for old, new in zip(op.results, wide.results):
            if old.type == new.type:
                results.append(new)
                continue
            cast = _marked_cast(new, old.type)
            new_ops.append(cast)
            results.append(cast.output)
        rewriter.replace(op, new_ops, results)


class DropWidenedRoundTrip(RewritePattern):
    """cast(cast(y: f32 -> half) -> f32) = y when this pass inserted both casts."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.CastOp, rewriter: PatternRewriter):
        inner = op.input.owner
        if (WIDENED_ATTR in op.attributes and isinstance(inner, graph.CastOp)
                and WIDENED_ATTR in inner.attributes and inner.input.type == op.output.type):
            rewriter.replace(op, [], [inner.input])


@dataclass(frozen=True)
class WidenHalfPrecisionPass(GraphPatternPass):
    """Ops on fp16/bf16 without a half kernel compute in f32 between casts; their constant
    operands are converted at compile time."""

    name = "widen-half-precision"
    patterns = (WidenHalfOp,)

    f32_between_ops: bool = False
    """Drop the half round trip between two widened ops (onnxruntime's behaviour)."""

    def rewrite_patterns(self) -> Sequence[RewritePattern]:
        if self.f32_between_ops:
            return [WidenHalfOp(), DropWidenedRoundTrip()]
        return [WidenHalfOp()]


@dataclass(frozen=True)
class WidenHalfGraphPass(GraphPatternPass):
    """An fp16 or bf16 model's graph becomes an f32 graph, casts left at its edges, before
    the fusions (-O1 and above).

    - Numerics: onnxruntime's CPU provider has no half kernel for most ops and inserts casts
      around them, then drops the casts' round trips, so its fp16 results are rounded at the
      graph's edges only; rounding every op's result to half (as at -O0) misses onnx's
      expected outputs by a few ulps (test_attention_4d_causal_fp16_expanded: 2 of 192
      elements), and widening the whole graph matches them.
    - Speed: the graph fusions only match types they can fold, and no bf16 op computes;
      left in half, MobileNetV2 in bf16 kept every BatchNormalization and activation as an
      op of its own between two cast loops (2.4x the f32 time).
    Weights, inputs and outputs stay in half; intermediates are f32."""

    name = "widen-half-graph"

    def rewrite_patterns(self) -> Sequence[RewritePattern]:
        return [WidenHalfOp(HALF, every_op=True), DropWidenedRoundTrip()]


__all__ = ["WidenHalfGraphPass", "WidenHalfPrecisionPass", "has_half_kernel", "needs_widening"]
