"""Gemm fusion: every rewrite whose result is a graph.gemm.

A 2-D MatMul becomes a Gemm when something around it fits Gemm's form
alpha * op(A) op(B) + beta * C: a bias Add (fuse-matmul-add), a scalar Mul or Div on an
operand or the result (fuse-matmul-scale, into alpha), a BatchNormalization over its columns
with constant B (fuse-matmul-bn), a 2-D Transpose of an operand (fuse-matmul-transpose, into
transA / transB). A 1x1 Conv on the N x C x 1 x 1 output of a global pool is a fully connected
layer and becomes a Gemm too (conv-after-global-pool-to-gemm). The folds fire only on float
ops without an epilogue whose intermediate value has no other user.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, i64
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from onnxc.dialects import graph
from onnxc.dialects.graph import float_of, int_of, ints_of, shape_of, tensor_type
from onnxc.dialects.graph_epilogue import epilogue_of
from onnxc.dialects.symbolic_dims import num_elements
from onnxc.passes.base import GraphPatternPass
from onnxc.passes.constants import (
    constant_value,
    element_type,
    insert_constant,
    is_float_tensor,
    scalar,
    single_use,
)
from onnxc.passes.fusion_match import binary_with_constant, bn_scale_shift, float_result, producer

# --------------------------------------------------------------------------- helpers


def _gemm(
    a: SSAValue, b: SSAValue, c: SSAValue | None, result, alpha: float, beta: float,
    trans_a: int = 0, trans_b: int = 0, keep: Operation | None = None,
) -> graph.GemmOp:
    el = element_type(a)
    props = {
        "alpha": FloatAttr(alpha, el), "beta": FloatAttr(beta, el),
        "transA": IntegerAttr(trans_a, i64), "transB": IntegerAttr(trans_b, i64),
    }
    if keep is not None:  # carry the epilogue of the op being replaced
        props.update({k: v for k, v in keep.properties.items() if k.startswith("activation")})
    return graph.GemmOp(operands=[a, b, [c] if c is not None else []], result_types=[result],
                        properties=props)


def _plain_2d_matmul(value: SSAValue) -> graph.MatMulOp | None:
    """A 2-D x 2-D float MatMul without epilogue whose only user is the consumer."""
    mm = value.owner
    if not isinstance(mm, graph.MatMulOp) or epilogue_of(mm) is not None:
        return None
    if len(shape_of(mm.lhs)) != 2 or len(shape_of(mm.rhs)) != 2:
        return None
    if not is_float_tensor(value) or not single_use(value):
        return None
    return mm


def _gemm_form(op: graph.MatMulOp | graph.GemmOp) -> tuple:
    """(A, B, C, alpha, beta, transA, transB) of a Gemm, or of a MatMul as the Gemm it is
    (no C, alpha = beta = 1, no transposes)."""
    if isinstance(op, graph.MatMulOp):
        return op.lhs, op.rhs, None, 1.0, 1.0, 0, 0
    return (op.a, op.b, op.c, float_of(op.alpha), float_of(op.beta), int_of(op.trans_a),
            int_of(op.trans_b))


# --------------------------------------------------------------------------- matmul + add / scale / bn


class MatMulAddToGemm(RewritePattern):
    """MatMul(A, B) + c (c broadcasting to M x N) -> Gemm(A, B, c); also fills an absent
    Gemm bias. A Linear on rows, [..., K] times a constant 2-D B plus a bias over the last
    axis (a transformer's [1, seq, K], ConvNeXt's [1, H, W, K]), becomes the same Gemm
    between views of A and of the result as [M, K] and [M, N] (`rows_as_gemm`)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, add: graph.AddOp, rewriter: PatternRewriter):
        out = shape_of(add.output)
        for prod, c in ((add.lhs, add.rhs), (add.rhs, add.lhs)):
            if shape_of(prod) != out:
                continue
            if len(out) > 2:
                if self.rows_as_gemm(add, prod, c, rewriter):
                    return
                continue
            mm = _plain_2d_matmul(prod)
            if mm is not None:
                rewriter.replace(add, _gemm(mm.lhs, mm.rhs, c, add.output.type, 1.0, 1.0))
                return
            gemm = prod.owner
            if (isinstance(gemm, graph.GemmOp) and gemm.c is None and single_use(prod)
                    and epilogue_of(gemm) is None):
                rewriter.replace(add, _gemm(
                    gemm.a, gemm.b, c, add.output.type, float_of(gemm.alpha), 1.0,
                    int_of(gemm.trans_a), int_of(gemm.trans_b)))
                return

    @staticmethod
    def rows_as_gemm(add: graph.AddOp, prod: SSAValue, c: SSAValue,
                     rewriter: PatternRewriter) -> bool:
        """The Linear's Gemm between row views, when `prod` is such a MatMul: the bias is
        added in the packed GEMM's registers (its B is a constant), not in one more pass
        over the result, and an activation after it becomes its epilogue (fuse-activation
        looks through the view). Symbolic leading sizes are welcome (M is their product)."""
        mm = prod.owner
        if not isinstance(mm, graph.MatMulOp) or epilogue_of(mm) is not None:
            return False
        out = shape_of(add.output)
        if (len(shape_of(mm.rhs)) != 2 or not isinstance(mm.rhs.owner, graph.ConstantOp)
                or len(shape_of(mm.lhs)) != len(out) or not isinstance(out[-1], int)
                or not is_float_tensor(prod) or not single_use(prod)):
            return False
        bias = shape_of(c)
        n = out[-1]
        if not bias or bias[-1] != n or any(d != 1 for d in bias[:-1]):
            return False
        rows = num_elements(out[:-1])
        el = element_type(prod)
        a = graph.ReshapeOp(operands=[mm.lhs],
                            result_types=[tensor_type([rows, shape_of(mm.lhs)[-1]], el)])
        new: list[Operation] = [a]
        if len(bias) > 2:  # [1, ..., 1, N] -> [1, N]
            new.append(graph.ReshapeOp(operands=[c], result_types=[tensor_type([1, n], el)]))
            c = new[-1].results[0]
        gemm = _gemm(a.output, mm.rhs, c, tensor_type([rows, n], el), 1.0, 1.0)
        view = graph.ReshapeOp(operands=[gemm.output], result_types=[add.output.type])
        rewriter.replace(add, [*new, gemm, view], [view.output])
        return True


def _scalar_factor(op: Operation) -> tuple[SSAValue, float] | None:
    """(x, s) for x * s, s * x or x / s with a single-element constant s."""
    if not isinstance(op, (graph.MulOp, graph.DivOp)):
        return None
    split = binary_with_constant(op)
    s = scalar(split[1]) if split is not None else None
    if s is None or shape_of(op.output) != shape_of(split[0]):
        return None
    if isinstance(op, graph.DivOp):
        if s == 0.0:
            return None
        s = 1.0 / s
    return split[0], s


class ScaleIntoGemmAlpha(RewritePattern):
    """(A x B) * s, (A x B) / s, (A * s) x B and A x (B * s) -> Gemm with alpha * s."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter):
        if isinstance(op, (graph.MulOp, graph.DivOp)):
            self._after(op, rewriter)
        elif isinstance(op, (graph.MatMulOp, graph.GemmOp)):
            self._before(op, rewriter)

    def _after(self, op: Operation, rewriter: PatternRewriter) -> None:
        found = _scalar_factor(op)
        if found is None or not is_float_tensor(op.results[0]):
            return
        x, s = found
        mm = _plain_2d_matmul(x)
        if mm is not None:
            rewriter.replace(op, _gemm(mm.lhs, mm.rhs, None, op.results[0].type, s, 1.0))
            return
        gemm = x.owner
        if isinstance(gemm, graph.GemmOp) and single_use(x) and epilogue_of(gemm) is None:
            rewriter.replace(op, _gemm(
                gemm.a, gemm.b, gemm.c, op.results[0].type, float_of(gemm.alpha) * s,
                float_of(gemm.beta) * s, int_of(gemm.trans_a), int_of(gemm.trans_b)))

    def _before(self, op: graph.MatMulOp | graph.GemmOp, rewriter: PatternRewriter) -> None:
        if not is_float_tensor(op.output):
            return
        if isinstance(op, graph.MatMulOp) and (
                len(shape_of(op.lhs)) != 2 or len(shape_of(op.rhs)) != 2):
            return
        a, b, c, alpha, beta, ta, tb = _gemm_form(op)
        for side in (0, 1):
            operand = (a, b)[side]
            found = _scalar_factor(operand.owner) if isinstance(operand.owner, Operation) else None
            if found is None or not single_use(operand):
                continue
            x, s = found
            a2, b2 = (x, b) if side == 0 else (a, x)
            rewriter.replace(op, _gemm(a2, b2, c, op.output.type, alpha * s, beta, ta, tb,
                                          keep=op))
            return


class FoldBatchNormIntoGemm(RewritePattern):
    """BN over the columns of MatMul(A, B) / Gemm(A, B, C) with constant B folds into B
    and the bias: the result is one Gemm."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, bn: graph.BatchNormalizationOp, rewriter: PatternRewriter):
        producer = bn.input.owner
        if len(shape_of(bn.input)) != 2 or not is_float_tensor(bn.input):
            return
        if not isinstance(producer, (graph.MatMulOp, graph.GemmOp)) or not single_use(bn.input):
            return
        if epilogue_of(producer) is not None:
            return
        st = bn_scale_shift(bn)
        if st is None:
            return
        s, t = st
        if isinstance(producer, graph.MatMulOp) and len(shape_of(producer.lhs)) != 2:
            return
        a, b, c, alpha, beta, ta, tb = _gemm_form(producer)
        w = constant_value(b)
        c_val = constant_value(c) if c is not None else np.zeros(())
        if w is None or c_val is None:
            return
        w = w.astype(np.float64)
        w = w * s[:, None] if tb else w * s[None, :]
        new_c = (beta * c_val.astype(np.float64)) * s + t
        el = element_type(bn.output)
        w_val = insert_constant(rewriter, w, el, bn)
        c_new = insert_constant(rewriter, new_c, el, bn)
        rewriter.replace(bn, _gemm(a, w_val, c_new, bn.output.type, alpha, 1.0, ta, tb))


# --------------------------------------------------------------------------- matmul-transpose


def _swapped_2d(value: SSAValue) -> SSAValue | None:
    """A when `value` is Transpose(A, [1, 0]) read by nothing else."""
    transpose = producer(value, graph.TransposeOp)
    if transpose is None or ints_of(transpose.perm) != (1, 0) or not value.has_one_use():
        return None
    return transpose.input


class MatMulTransposeToGemm(RewritePattern):
    """MatMul(A^T, B) / MatMul(A, B^T) of 2-D operands -> Gemm with transA / transB.

    Only 2-D: Gemm is 2-D, and a batched transposed operand would need a flag on
    graph.matmul and its kernel; the batched case that matters (attention's K^T) is
    absorbed by fuse-attention instead.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.MatMulOp, rewriter: PatternRewriter) -> None:
        if len(shape_of(op.lhs)) != 2 or len(shape_of(op.rhs)) != 2 or not float_result(op):
            return
        if op.properties.get("activation") is not None:
            return
        a, b = _swapped_2d(op.lhs), _swapped_2d(op.rhs)
        if a is None and b is None:
            return
        rewriter.replace(op, _gemm(a or op.lhs, b or op.rhs, None, op.output.type, 1.0, 1.0,
                                   int(a is not None), int(b is not None)))


class GemmTransposeToFlag(RewritePattern):
    """Gemm(Transpose(A), B) toggles transA (and likewise for B)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.GemmOp, rewriter: PatternRewriter) -> None:
        a, b = _swapped_2d(op.a), _swapped_2d(op.b)
        if a is None and b is None:
            return
        props = dict(op.properties)
        if a is not None:
            props["transA"] = IntegerAttr(1 - int_of(op.trans_a), i64)
        if b is not None:
            props["transB"] = IntegerAttr(1 - int_of(op.trans_b), i64)
        gemm = graph.GemmOp(operands=[a or op.a, b or op.b, op.c],
                            result_types=[op.output.type], properties=props)
        rewriter.replace(op, gemm)


# --------------------------------------------------------------------------- 1x1 conv as gemm


class PointwiseConvOnPixelToGemm(RewritePattern):
    """A 1x1, unpadded, ungrouped conv on N x C x 1 x 1 (after a global pool) is a fully
    connected layer: reshape(N x C) -> Gemm(x, W as M x C, b, transB) -> reshape back."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, conv: graph.ConvOp, rewriter: PatternRewriter):
        x_shape, w_shape = shape_of(conv.input), shape_of(conv.weight)
        if any(d != 1 for d in x_shape[2:]) or any(k != 1 for k in w_shape[2:]):
            return
        if any(ints_of(conv.pads)) or int_of(conv.group, 1) != 1:
            return
        n, c, m = x_shape[0], x_shape[1], w_shape[0]
        el = element_type(conv.output)
        def reshape(v: SSAValue, shape: tuple[int, ...]) -> SSAValue:
            op = graph.ReshapeOp(operands=[v], result_types=[graph.tensor_type(shape, el)])
            rewriter.insert(op, InsertPoint.before(conv))
            return op.output

        gemm = _gemm(reshape(conv.input, (n, c)), reshape(conv.weight, (m, c)), conv.bias,
                     graph.tensor_type((n, m), el), 1.0, 1.0, trans_b=1, keep=conv)
        rewriter.insert(gemm, InsertPoint.before(conv))
        rewriter.replace(conv, graph.ReshapeOp(operands=[gemm.output],
                                                  result_types=[conv.output.type]))


# --------------------------------------------------------------------------- passes


@dataclass(frozen=True)
class FuseMatmulAddPass(GraphPatternPass):
    """MatMul followed by a bias Add becomes one Gemm."""

    name = "fuse-matmul-add"
    patterns = (MatMulAddToGemm,)


@dataclass(frozen=True)
class FuseMatmulScalePass(GraphPatternPass):
    """Fold a scalar Mul or Div on a MatMul/Gemm's operand or result into Gemm's alpha."""

    name = "fuse-matmul-scale"
    patterns = (ScaleIntoGemmAlpha,)


@dataclass(frozen=True)
class FuseMatmulBnPass(GraphPatternPass):
    """Fold a BatchNormalization over a MatMul/Gemm's columns into its constant weights and bias."""

    name = "fuse-matmul-bn"
    patterns = (FoldBatchNormIntoGemm,)


@dataclass(frozen=True)
class FuseMatmulTransposePass(GraphPatternPass):
    """A 2-D Transpose feeding MatMul/Gemm becomes Gemm's transA/transB."""

    name = "fuse-matmul-transpose"
    patterns = (MatMulTransposeToGemm, GemmTransposeToFlag)


@dataclass(frozen=True)
class ConvAfterGlobalPoolToGemmPass(GraphPatternPass):
    """A 1x1 Conv on the N x C x 1 x 1 output of a global pool becomes a Gemm (a fully connected
    layer)."""

    name = "conv-after-global-pool-to-gemm"
    patterns = (PointwiseConvOnPixelToGemm,)
