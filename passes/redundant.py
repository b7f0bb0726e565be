"""Redundant node elimination: ops that compute nothing, or less than the ops around them.

Every pattern replaces an op by a value the graph already has (or by fewer ops) and fires
only on static facts it can check: equal types, all-zero pads, 1x1 windows, leading-1 shapes,
lossless intermediate casts. `drop-orphans` is the dead-code sweep; the others leave dead
producers to the driver's DCE.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import (
    AnyFloat,
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    Signedness,
    TensorType,
    f32,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.transforms.dead_code_elimination import is_trivially_dead

from onnxc.dialects import graph
from onnxc.dialects import graph_shapes as shapes
from onnxc.dialects.dense_data import from_numpy
from onnxc.dialects.graph import int_of, ints_of, shape_of
from onnxc.passes.base import STATISTICS, GraphPatternPass
from onnxc.passes.constants import constant_value, is_ones
from onnxc.passes.inverse_pairs import compose, is_identity, keeps_whole_axis, permutation_of
from onnxc.passes.rewrite_utils import (
    i64_array,
    only_returned,
    rebuild,
    reshape_to,
    single_user,
    with_shape,
)

# --------------------------------------------------------------------------- drop-no-op


class DropIdentity(RewritePattern):
    """Identity and inference Dropout return their input."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.IdentityOp | graph.DropoutOp, rewriter: PatternRewriter):
        rewriter.replace(op, [], [op.input])


class DropSingleSplit(RewritePattern):
    """A Split into one part is its input."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.SplitOp, rewriter: PatternRewriter):
        if len(op.outputs) == 1 and op.outputs[0].type == op.input.type:
            rewriter.replace(op, [], [op.input])


class DropSingleConcat(RewritePattern):
    """A Concat of one input is that input."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ConcatOp, rewriter: PatternRewriter):
        if len(op.inputs) == 1 and op.inputs[0].type == op.output.type:
            rewriter.replace(op, [], [op.inputs[0]])


class DropSameShapeReshape(RewritePattern):
    """A Reshape/Flatten/Squeeze/Unsqueeze whose result type is its input's type."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ReshapeLikeOp, rewriter: PatternRewriter):
        if op.output.type == op.input.type:
            rewriter.replace(op, [], [op.input])


class DropZeroPad(RewritePattern):
    """A Pad that adds nothing on any side."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.PadOp, rewriter: PatternRewriter):
        if all(p == 0 for p in op.pad_sizes()) and op.output.type == op.input.type:
            rewriter.replace(op, [], [op.input])


class DropSameShapeExpand(RewritePattern):
    """Expand to the input's own shape: the importer's `x * ones(shape)` when it grows nothing."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.MulOp, rewriter: PatternRewriter):
        for x, ones in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            if is_ones(ones) and x.type == op.output.type:
                rewriter.replace(op, [], [x])
                return


@dataclass(frozen=True)
class DropNoOpPass(GraphPatternPass):
    """Remove Identity, Dropout, one-part Split/Concat, same-shape reshapes and Expands, zero Pads."""

    name = "drop-no-op"
    patterns = (DropIdentity, DropSingleSplit, DropSingleConcat, DropSameShapeReshape,
                DropZeroPad, DropSameShapeExpand)


# --------------------------------------------------------------------------- drop-noop-cast


class DropNoopCast(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.CastOp, rewriter: PatternRewriter):
        if op.output.type == op.input.type:
            rewriter.replace(op, [], [op.input])


@dataclass(frozen=True)
class DropNoopCastPass(GraphPatternPass):
    """Remove Casts whose source element type is their destination type."""

    name = "drop-noop-cast"
    patterns = (DropNoopCast,)


# --------------------------------------------------------------------------- drop-full-slice


def is_full_slice(op: graph.SliceOp) -> bool:
    """Every sliced axis keeps all of its elements in order (start 0, end >= dim, step 1)."""
    x = shape_of(op.input)
    for start, end, axis, step in zip(*op.bounds(), ints_of(op.axes), ints_of(op.steps)):
        dim = x[shapes.normalize_axis(axis, len(x))]
        first, last = shapes.normalized_slice_bounds(dim, start, end, step)
        if not keeps_whole_axis(dim, first, last, step):
            return False
    return op.output.type == op.input.type


class DropFullSlice(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.SliceOp, rewriter: PatternRewriter):
        if is_full_slice(op):
            rewriter.replace(op, [], [op.input])


@dataclass(frozen=True)
class DropFullSlicePass(GraphPatternPass):
    """Remove Slices that keep the whole tensor."""

    name = "drop-full-slice"
    patterns = (DropFullSlice,)


# --------------------------------------------------------------------------- drop-identity-pool


class DropIdentityPool(RewritePattern):
    """Max/AveragePool with a 1x1 window, stride 1 and no padding copies its input."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.MaxPoolOp | graph.AveragePoolOp,
                          rewriter: PatternRewriter):
        if (all(k == 1 for k in ints_of(op.kernel_shape))
                and all(s == 1 for s in ints_of(op.strides))
                and all(p == 0 for p in ints_of(op.pads))
                and op.output.type == op.input.type):
            rewriter.replace(op, [], [op.input])


class DropUnitGlobalPool(RewritePattern):
    """A global pool over spatial dimensions that are all 1 copies its input."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.GlobalPoolOp, rewriter: PatternRewriter):
        if op.output.type == op.input.type:
            rewriter.replace(op, [], [op.input])


@dataclass(frozen=True)
class DropIdentityPoolPass(GraphPatternPass):
    """Remove pools whose window covers one element."""

    name = "drop-identity-pool"
    patterns = (DropIdentityPool, DropUnitGlobalPool)


# --------------------------------------------------------------------------- drop-layout-cast-at-output


class AbsorbOutputConversionIntoGemm(RewritePattern):
    """Y^T = (A'B')^T = B'^T A'^T: a Gemm writes its transposed result itself by swapping its
    operands and flipping both trans flags; a bias C becomes C^T (a view when it is 1-D)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.TransposeOp, rewriter: PatternRewriter):
        gemm = op.input.owner
        if (not isinstance(gemm, graph.GemmOp) or permutation_of(op) != (1, 0)
                or not only_returned(op.output) or single_user(gemm.output) is not op):
            return
        m, n = shape_of(gemm.output)
        new_ops: list[Operation] = []
        c = gemm.c
        if c is not None:
            cs = (1,) * (2 - len(shape_of(c))) + shape_of(c)
            if cs[0] != 1 and cs[1] != 1:
                return  # a full 2-D bias would need its own transpose
            ct = with_shape(c.type, (cs[1], cs[0]))
            if ct != c.type:
                new_ops.append(reshape_to(c, ct))
                c = new_ops[-1].results[0]
        props = dict(gemm.properties)
        props["transA"] = IntegerAttr(1 - int_of(gemm.trans_b), gemm.trans_a.type)
        props["transB"] = IntegerAttr(1 - int_of(gemm.trans_a), gemm.trans_b.type)
        new_ops.append(graph.GemmOp.create(
            operands=[gemm.b, gemm.a, *([c] if c is not None else [])],
            result_types=[with_shape(gemm.output.type, (n, m))], properties=props,
        ))
        rewriter.replace(op, new_ops)


class AbsorbOutputConversionIntoMatMul(RewritePattern):
    """(A B)^T = B^T A^T: a 2-D MatMul whose transposed result is a graph output becomes a
    Gemm on swapped operands with both trans flags set (its epilogue comes along)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.TransposeOp, rewriter: PatternRewriter):
        mm = op.input.owner
        if (not isinstance(mm, graph.MatMulOp) or permutation_of(op) != (1, 0)
                or len(shape_of(mm.lhs)) != 2 or len(shape_of(mm.rhs)) != 2
                or not only_returned(op.output) or single_user(mm.output) is not op):
            return
        one = FloatAttr(1.0, f32)
        props = {**mm.properties, "alpha": one, "beta": one,
                 "transA": IntegerAttr(1, i64), "transB": IntegerAttr(1, i64)}
        rewriter.replace(op, graph.GemmOp.create(
            operands=[mm.rhs, mm.lhs], result_types=[op.output.type], properties=props))


class RelayConstantAtOutput(RewritePattern):
    """A conversion of a constant output: the constant is stored in the output layout."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.TransposeOp, rewriter: PatternRewriter):
        array = constant_value(op.input)
        if array is None or not only_returned(op.output):
            return
        relaid = np.ascontiguousarray(np.transpose(array, permutation_of(op)))
        rewriter.replace(op, graph.ConstantOp(from_numpy(relaid, op.output.type.get_element_type())))


class ComposeConversionsAtOutput(RewritePattern):
    """A conversion of a conversion before an output is one transpose (none for identity)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.TransposeOp, rewriter: PatternRewriter):
        inner = op.input.owner
        first = permutation_of(inner)
        if first is None or not only_returned(op.output):
            return
        perm = compose(first, permutation_of(op))
        if is_identity(perm):
            rewriter.replace(op, [], [inner.input])
        else:
            rewriter.replace(op, graph.TransposeOp(operands=[inner.input],
                                                   result_types=[op.output.type],
                                                   properties={"perm": i64_array(perm)}))


@dataclass(frozen=True)
class DropLayoutCastAtOutputPass(GraphPatternPass):
    """No conversion op right before a graph output where the producer can write the output
    layout itself: a Gemm or 2-D MatMul (swapped operands and trans flags), a constant
    (re-laid at compile time) or another conversion (one composed permutation, none when it
    is the identity)."""

    name = "drop-layout-cast-at-output"
    patterns = (AbsorbOutputConversionIntoGemm, AbsorbOutputConversionIntoMatMul,
                RelayConstantAtOutput,
                ComposeConversionsAtOutput)


# --------------------------------------------------------------------------- drop-orphans


@dataclass(frozen=True)
class DropOrphansPass(ModulePass):
    """Dead-code elimination of graph ops (constants included) whose results nobody uses.

    A single reverse sweep per block removes whole dead chains; function arguments are the
    model's interface and stay, and so do ops with effects (graph.bind_sizes)."""

    name = "drop-orphans"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for block in [b for o in op.walk() for r in o.regions for b in r.blocks]:
            for inner in reversed(list(block.ops)):
                if isinstance(inner, graph.GraphOp) and is_trivially_dead(inner):
                    block.erase_op(inner)
                    STATISTICS.record(self.name, "EraseUnusedOp")


# --------------------------------------------------------------------------- drop-reshape-before-binary


def _only_adds_leading_ones(op: Operation) -> bool:
    if not isinstance(op, graph.ReshapeLikeOp):
        return False
    x, y = shape_of(op.input), shape_of(op.output)
    k = len(y) - len(x)
    return k > 0 and y[k:] == x and all(d == 1 for d in y[:k])


class DropReshapeBeforeBinary(RewritePattern):
    """Broadcasting right-aligns operands, so leading 1-dims added by a reshape change nothing
    as long as the result keeps its shape."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.BinaryElementwiseOp, rewriter: PatternRewriter):
        for i, v in enumerate((op.lhs, op.rhs)):
            producer = v.owner
            if not _only_adds_leading_ones(producer):
                continue
            operands = [op.lhs, op.rhs]
            operands[i] = producer.input
            out = shapes.broadcast_shapes(*(shape_of(o) for o in operands))
            if out == shape_of(op.output):
                rewriter.replace(op, rebuild(op, operands, [op.output.type]))
                return


@dataclass(frozen=True)
class DropReshapeBeforeBinaryPass(GraphPatternPass):
    """Skip Reshapes/Unsqueezes that only add leading 1-dims before a broadcasting binary op."""

    name = "drop-reshape-before-binary"
    patterns = (DropReshapeBeforeBinary,)


# --------------------------------------------------------------------------- drop-flatten-after-*


def _is_global_pool_result(value: SSAValue) -> bool:
    return isinstance(value.owner, graph.GlobalPoolOp)


class DropFlattenAfterGlobalPool(RewritePattern):
    """pool (N x C x 1 x 1) -> flatten (N x C) -> reshape-like: the consumer takes any shape of
    the same data (its result type carries its shape), so it reads the pool result directly."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ReshapeLikeOp, rewriter: PatternRewriter):
        flatten = op.input.owner
        if not isinstance(flatten, graph.FlattenOp | graph.ReshapeOp):
            return
        if not _is_global_pool_result(flatten.input):
            return
        pooled = shape_of(flatten.input)
        if shape_of(flatten.output) != pooled[:2]:
            return
        if op.output.type == flatten.input.type:
            rewriter.replace(op, [], [flatten.input])
        else:
            rewriter.replace(op, reshape_to(flatten.input, op.output.type))


@dataclass(frozen=True)
class DropFlattenAfterGlobalPoolPass(GraphPatternPass):
    """Drop the N x C flatten after a global pool when its consumer accepts either shape."""

    name = "drop-flatten-after-global-pool"
    patterns = (DropFlattenAfterGlobalPool,)


class DropFlattenAfterLinear(RewritePattern):
    """Gemm and 2-D MatMul results are already M x N: Flatten(axis=1) returns them as they are."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.FlattenOp | graph.ReshapeOp, rewriter: PatternRewriter):
        producer = op.input.owner
        if not isinstance(producer, graph.GemmOp | graph.MatMulOp):
            return
        if len(shape_of(op.input)) == 2 and op.output.type == op.input.type:
            rewriter.replace(op, [], [op.input])


@dataclass(frozen=True)
class DropFlattenAfterLinearPass(GraphPatternPass):
    """Drop a Flatten after a fully connected layer whose output is already 2-D."""

    name = "drop-flatten-after-linear"
    patterns = (DropFlattenAfterLinear,)


# --------------------------------------------------------------------------- merge-reshapes


class MergeReshapes(RewritePattern):
    """reshape-like(reshape-like(x)) is one reshape of x to the last shape (x when it is x's)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ReshapeLikeOp, rewriter: PatternRewriter):
        inner = op.input.owner
        if not isinstance(inner, graph.ReshapeLikeOp):
            return
        if op.output.type == inner.input.type:
            rewriter.replace(op, [], [inner.input])
        else:
            rewriter.replace(op, reshape_to(inner.input, op.output.type))


class FoldSoftmaxCoercion(RewritePattern):
    """The opset<13 Softmax import form flatten(axis=a) -> softmax(axis=1) [-> log] ->
    reshape(back) normalises jointly over dims a..; when only one of them (k) is > 1 that is
    a softmax over axis k of the original tensor."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ReshapeOp, rewriter: PatternRewriter):
        chain: list[Operation] = []
        value = op.input
        if isinstance(value.owner, graph.LogOp):
            chain.append(value.owner)
            value = value.owner.input
        softmax = value.owner
        if not isinstance(softmax, graph.SoftmaxOp) or int_of(softmax.axis) not in (1, -1):
            return
        flatten = softmax.input.owner
        if not isinstance(flatten, graph.FlattenOp) or len(shape_of(flatten.output)) != 2:
            return
        if flatten.input.type != op.output.type:
            return
        if any(single_user(o.results[0]) is None for o in (softmax, *chain)):
            return
        x = shape_of(flatten.input)
        axis = int_of(flatten.axis) + (len(x) if int_of(flatten.axis) < 0 else 0)
        if not 0 <= axis < len(x):
            return
        # a symbolic size may be > 1: it counts as big (softmax over it is right for any size)
        big = [d for d in range(axis, len(x)) if not isinstance(x[d], int) or x[d] > 1]
        if len(big) > 1:
            return
        k = big[0] if big else axis
        new_ops: list[Operation] = [graph.SoftmaxOp(
            operands=[flatten.input], result_types=[op.output.type],
            properties={"axis": IntegerAttr(k, softmax.axis.type)})]
        if chain:
            new_ops.append(graph.LogOp(operands=[new_ops[-1].results[0]],
                                       result_types=[op.output.type]))
        rewriter.replace(op, new_ops)


@dataclass(frozen=True)
class MergeReshapesPass(GraphPatternPass):
    """Collapse chains of reshape-like ops, and the old Softmax 2-D coercion when it is a
    softmax over one axis."""

    name = "merge-reshapes"
    patterns = (MergeReshapes, FoldSoftmaxCoercion)


# --------------------------------------------------------------------------- merge-casts


def _mantissa_bits(t: Attribute) -> int:
    return {BFloat16Type: 8, Float16Type: 11, Float32Type: 24, Float64Type: 53}[type(t)]


def _exponent_bits(t: Attribute) -> int:
    return {BFloat16Type: 8, Float16Type: 5, Float32Type: 8, Float64Type: 11}[type(t)]


def lossless(src: Attribute, dst: Attribute) -> bool:
    """Every value of element type `src` is exactly representable in `dst`."""
    if src == dst:
        return True
    if isinstance(src, IntegerType):
        unsigned = src.signedness.data == Signedness.UNSIGNED or src.width.data == 1
        bits = src.width.data if unsigned else src.width.data - 1  # magnitude bits
        if isinstance(dst, IntegerType):
            if src.width.data == 1:
                return True
            dst_unsigned = dst.signedness.data == Signedness.UNSIGNED
            if dst_unsigned:
                return unsigned and dst.width.data >= src.width.data
            return dst.width.data - 1 >= bits
        if isinstance(dst, AnyFloat):
            return _mantissa_bits(dst) >= bits
        return False
    if isinstance(src, AnyFloat) and isinstance(dst, AnyFloat):  # bf16 -> f16 overflows
        return (_mantissa_bits(dst) >= _mantissa_bits(src)
                and _exponent_bits(dst) >= _exponent_bits(src))
    return False


class MergeCasts(RewritePattern):
    """cast(cast(x, T1), T2) = cast(x, T2) when x -> T1 is exact (x when T2 is x's type)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.CastOp, rewriter: PatternRewriter):
        inner = op.input.owner
        if not isinstance(inner, graph.CastOp):
            return
        src = inner.input.type
        assert isinstance(src, TensorType)
        if not lossless(src.get_element_type(), inner.output.type.get_element_type()):
            return
        if op.output.type == src:
            rewriter.replace(op, [], [inner.input])
        else:
            rewriter.replace(op, graph.CastOp(operands=[inner.input],
                                              result_types=[op.output.type]))


@dataclass(frozen=True)
class MergeCastsPass(GraphPatternPass):
    """Collapse consecutive Casts when the intermediate type loses nothing."""

    name = "merge-casts"
    patterns = (MergeCasts,)


__all__ = [
    "DropFlattenAfterGlobalPoolPass",
    "DropFlattenAfterLinearPass",
    "DropFullSlicePass",
    "DropIdentityPoolPass",
    "DropLayoutCastAtOutputPass",
    "DropNoOpPass",
    "DropNoopCastPass",
    "DropOrphansPass",
    "DropReshapeBeforeBinaryPass",
    "MergeCastsPass",
    "MergeReshapesPass",
]
