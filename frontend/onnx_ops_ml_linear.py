"""ai.onnx.ml's linear models (LinearClassifier, LinearRegressor) as graph ops, and what
they share with the SVMs (onnx_ops_ml_svm.py): features as f32 rows, class labels, and the
post_transform of the scores.

The formulas are onnxruntime's (core/providers/cpu/ml/linearclassifier.cc, ml_common.h),
which skl2onnx's models are checked against, including its special cases: a classifier of
one coefficient row and two labels writes the scores `[1 - s, s]` (s its logistic under
LOGISTIC; PROBIT refused), the label is `labels[1]` when that row's raw score is > 0; PROBIT is
`sqrt(2) * erfinv(2 s - 1)` with onnxruntime's closed-form erfinv approximation, and
SOFTMAX_ZERO leaves scores within 1e-7 of zero out of the sum.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import f32, i1, i64
from xdsl.ir import SSAValue

from onnxc.dialects import graph
from onnxc.dialects.graph_strings import StringType
from onnxc.dialects.symbolic_dims import Dim
from onnxc.frontend import onnx_types as types
from onnxc.frontend.onnx_context import NodeContext, Result
from onnxc.frontend.onnx_graph_builder import GraphBuilder, Value, shape
from onnxc.frontend.onnx_ops_strings import text_array

POST_TRANSFORMS = ("NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO", "PROBIT")


class MLBuilder(GraphBuilder):
    """A GraphBuilder of f32 scores, with the ops ai.onnx.ml's converters share."""

    def __init__(self, ctx: NodeContext):
        super().__init__(ctx, f32)

    def _fold_or_emit(self, fold, op_class, operands, el=None, **props):
        # numpy scalars (np.float32(2)) are constants too
        operands = [np.asarray(v) if isinstance(v, np.generic) else v for v in operands]
        return super()._fold_or_emit(fold, op_class, operands, el, **props)

    def emit(self, op_class, operands, el=None, **props) -> SSAValue:
        operands = [np.asarray(v) if isinstance(v, np.generic) else v for v in operands]
        return super().emit(op_class, operands, el, **props)

    def unary(self, op_class, a: Value, el=None) -> SSAValue:
        return self.emit(op_class, [a], el)

    def compare(self, op_class, a: Value, b: Value) -> SSAValue:
        return self.emit(op_class, [a, b], i1)

    def cast(self, a: Value, el) -> Value:
        if isinstance(a, np.ndarray):
            return a.astype(types.numpy_dtype(types.onnx_type_of_element(el)))
        if a.type.get_element_type() == el:
            return a
        return self.ctx.emit1(graph.CastOp(operands=[a], result_types=[
            types.tensor_type(shape(a), el)]))

    def reduce(self, op_class, a: Value, axis: int, keepdims: bool = True) -> SSAValue:
        axis %= max(len(shape(a)), 1)
        return self.emit(op_class, [a], axes=types.i64_array([axis]),
                         keepdims=types.i64_attr(int(keepdims)))

    def arg_max(self, a: Value, axis: int = -1) -> SSAValue:
        """The first index of the largest element along `axis` (std::max_element's)."""
        axis %= len(shape(a))
        return self.emit(graph.ArgMaxOp, [a], i64, axis=types.i64_attr(axis),
                         keepdims=types.i64_attr(0), select_last_index=types.i64_attr(0))

    def gather_last(self, data: Value, indices: Value) -> SSAValue:
        axis = len(shape(data)) - 1
        return self.emit(graph.GatherOp, [data, indices], axis=types.i64_attr(axis))

    def pick(self, table: np.ndarray, indices: Value) -> SSAValue:
        """`table[indices]` for a constant 1-D table and indices known to be in range."""
        return self.emit(graph.GatherOp, [table, indices], axis=types.i64_attr(0))


def float_rows(ctx: NodeContext, b: MLBuilder) -> tuple[Value, list[Dim]]:
    """Input 0 as f32 rows [N, C] (onnxruntime casts every input type to float; a 1-D input
    is one row), and the input's own shape."""
    rank = ctx.rank(0)
    if rank not in (1, 2):
        raise ctx.invalid(f"X must be [N, C] or [C], got rank {rank}")
    el = ctx.element_type(0)
    if not (types.is_float(el) or el in (i64, types.element_type(types.TP.INT32))):
        raise ctx.invalid(f"X must be float, double, int64 or int32, not {el}")
    x = b.cast(ctx.operand(0), f32)
    dims = list(ctx.shape(0))
    if rank == 1:
        x = b.reshape(x, [1, dims[0]])
    return x, dims


def class_labels(ctx: NodeContext, ints: str = "classlabels_ints") -> np.ndarray | None:
    """The classifier's class labels: int64 (classlabels_ints), or str (classlabels_strings,
    an object array that becomes a string constant); None when it has none."""
    strings = ctx.attr("classlabels_strings", None)
    if strings:
        return text_array(list(strings))
    labels = ctx.ints(ints)
    return None if labels is None else np.array(labels, np.int64)


def label_element(labels: np.ndarray):
    """The element type of a label output: i64, or !graph.string."""
    return StringType() if labels.dtype == object else i64


def default_labels(labels: np.ndarray | None) -> np.ndarray:
    """A one-score binary classifier's (negative, positive) labels: its two labels, else
    onnxruntime's 0 and 1 ("0" and "1" for string labels)."""
    if labels is not None and len(labels) == 2:
        return labels
    if labels is not None and labels.dtype == object:
        return text_array(["0", "1"])
    return np.array([0, 1], np.int64)


def post_transform_name(ctx: NodeContext) -> str:
    name = ctx.attr("post_transform", "NONE")
    if name not in POST_TRANSFORMS:
        raise ctx.invalid(f"post_transform must be one of {', '.join(POST_TRANSFORMS)}, "
                          f"not {name!r}")
    return name


def probit(b: MLBuilder, s: Value) -> Value:
    """onnxruntime's ComputeProbit: sqrt(2) * ErfInv(2 s - 1), ErfInv by its closed-form
    approximation (constant 0.147), f32 throughout."""
    one, f = np.float32(1), np.float32
    x = b.sub(b.mul(s, f(2)), one)
    sign = b.where(b.less(x, f(0)), f(-1), one)
    log = b.unary(graph.LogOp, b.mul(b.sub(one, x), b.add(one, x)))
    v = b.add(f(2) / (f(3.14159) * f(0.147)), b.mul(log, f(0.5)))
    v2 = b.mul(log, one / f(0.147))
    v3 = b.sub(b.unary(graph.SqrtOp, b.sub(b.mul(v, v), v2)), v)
    return b.mul(b.mul(sign, b.unary(graph.SqrtOp, v3)), f(1.41421356))


def softmax_zero(b: MLBuilder, s: Value) -> Value:
    """ComputeSoftmaxZero: exp(s - max) over the scores further than 1e-7 from zero, the
    others scaled by exp(-max), all divided by the sum of the former."""
    top = b.reduce(graph.ReduceMaxOp, s, -1)
    nonzero = b.compare(graph.GreaterOp, b.unary(graph.AbsOp, s), np.float32(1e-7))
    e = b.where(nonzero, b.unary(graph.ExpOp, b.sub(s, top)),
                b.mul(s, b.unary(graph.ExpOp, b.unary(graph.NegOp, top))))
    total = b.reduce(graph.ReduceSumOp, b.where(nonzero, e, np.float32(0)), -1)
    return b.div(e, total)


def transformed(b: MLBuilder, scores: Value, name: str) -> Value:
    """The post_transform of [N, K] scores, K >= 2 (batched_update_scores_inplace's
    `batch_size > 1` branch: each score, or each row)."""
    if name == "LOGISTIC":
        return b.unary(graph.SigmoidOp, scores)
    if name == "SOFTMAX":
        return b.softmax_last(scores)
    if name == "SOFTMAX_ZERO":
        return softmax_zero(b, scores)
    if name == "PROBIT":
        return probit(b, scores)
    return scores


def single_score(b: MLBuilder, scores: Value, name: str) -> Value:
    """A one-score model's [N, 1] scores with no second class: only PROBIT applies."""
    return probit(b, scores) if name == "PROBIT" else scores


def second_class(ctx: NodeContext, b: MLBuilder, s: Value, name: str,
                 negated: bool) -> Value:
    """A one-score binary classifier's [N, 2] scores: `[-s, s]` (`negated`, onnxruntime's
    mixed-weights case), else `[1 - s, s]`, s the logistic of the score under LOGISTIC
    (onnxruntime 1.32 as measured; SOFTMAX and SOFTMAX_ZERO change nothing). PROBIT there
    writes one score of two (the other slot is never set), so it is refused."""
    if name == "PROBIT":
        raise ctx.unsupported("post_transform PROBIT on a binary classifier of one score: "
                              "onnxruntime leaves its second score unset")
    if name == "LOGISTIC":
        s = b.unary(graph.SigmoidOp, s)
    first = b.unary(graph.NegOp, s) if negated else b.sub(np.float32(1), s)
    return b.concat([first, s], 1)


def labels_of_scores(b: MLBuilder, scores: Value, labels: np.ndarray) -> SSAValue:
    """`labels[argmax(scores)]` along the last axis, the first on ties."""
    return b.pick(labels, b.arg_max(scores))


def linear_scores(b: MLBuilder, ctx: NodeContext, x: Value, coefficients: Sequence[float],
                  intercepts: np.ndarray, what: str) -> Value:
    """X @ W.T + intercepts for `coefficients` W of [len(intercepts), C] (row-major)."""
    features = shape(x)[1]
    rows = len(intercepts)
    if not isinstance(features, int):
        raise ctx.invalid(f"the number of features of X must be static, not {features}")
    if len(coefficients) != rows * features:
        raise ctx.invalid(f"{what} has {len(coefficients)} coefficients, expected {rows} x "
                          f"{features} (outputs x features of X)")
    w = np.asarray(coefficients, np.float32).reshape(rows, features).T.copy()
    return b.add(b.matmul(x, w), intercepts.astype(np.float32))


def convert_linear_classifier(ctx: NodeContext) -> list[Result]:
    b = MLBuilder(ctx)
    x, _ = float_rows(ctx, b)
    name = post_transform_name(ctx)
    coefficients = ctx.attr("coefficients")
    intercepts = ctx.attr("intercepts", None)
    features = shape(x)[1]
    rows = len(intercepts) if intercepts else len(coefficients) // max(int(features), 1)
    intercepts = np.asarray(intercepts if intercepts else [0.0] * rows, np.float32)
    scores = linear_scores(b, ctx, x, coefficients, intercepts, "coefficients")
    labels = class_labels(ctx)
    if rows == 1:
        pair = default_labels(labels)
        positive = b.compare(graph.GreaterOp, b.reshape(scores, [shape(x)[0]]), np.float32(0))
        label = b.emit(graph.WhereOp, [positive, pair[1:2].reshape(()), pair[0:1].reshape(())],
                       label_element(pair))
        if labels is not None and len(labels) == 2:
            z = second_class(ctx, b, scores, name, negated=False)
        else:
            z = single_score(b, scores, name)
    else:
        if labels is None or len(labels) != rows:
            raise ctx.invalid(f"the class labels must name the {rows} classes the "
                              f"coefficients score, got {0 if labels is None else len(labels)}")
        label = labels_of_scores(b, scores, labels)
        z = transformed(b, scores, name)
    return [b.value(label), b.value(z)]


def convert_linear_regressor(ctx: NodeContext) -> list[Result]:
    """Y = X @ W.T + intercepts, [N, targets]; post_transform as onnxruntime applies it (to
    each row when targets > 1; PROBIT alone on one target)."""
    b = MLBuilder(ctx)
    x, _ = float_rows(ctx, b)
    name = post_transform_name(ctx)
    targets = int(ctx.attr("targets", 1))
    if targets < 1:
        raise ctx.invalid(f"targets must be >= 1, got {targets}")
    intercepts = ctx.attr("intercepts", None)
    intercepts = np.asarray(intercepts if intercepts else [0.0] * targets, np.float32)
    if len(intercepts) != targets:
        raise ctx.invalid(f"intercepts has {len(intercepts)} values, targets is {targets}")
    y = linear_scores(b, ctx, x, ctx.attr("coefficients"), intercepts, "coefficients")
    y = transformed(b, y, name) if targets > 1 else single_score(b, y, name)
    return [b.value(y)]
