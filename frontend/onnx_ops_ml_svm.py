"""ai.onnx.ml's SVMClassifier and SVMRegressor as graph ops: the kernel is a matmul of the
features against the support vectors (compile-time constants) and an elementwise kernel
function; the one-vs-one decision values are one more matmul against a constant matrix
that places each pair's dual coefficients, and the votes a matmul of their signs.

Semantics are onnxruntime's (core/providers/cpu/ml/svmclassifier.cc, svmregressor.cc,
svmclassifier.h, ml_common.h), which skl2onnx's models are checked against:
- the label is the class with the most one-vs-one votes (`score > 0` votes for the pair's
  first class), the first on ties; with no support vectors (liblinear mode) the largest
  score's, except a binary model without probabilities, whose label is `labels[1]` when the
  top score is > 0 (>= 0.5 when every coefficient is >= 0);
- probabilities (prob_a, prob_b given) are Platt's sigmoid of each pair's score, clipped to
  [1e-7, 1 - 1e-7], coupled into class probabilities by libsvm's iterative method
  (`multiclass_probability`: at most 100 rounds, each sample stopping once its error is
  below 0.005 / classes): a graph.loop whose carried value is the [N, classes]
  probabilities, each sample's update masked once it has converged;
- without probabilities, the scores are the pairwise decision values (a binary model's
  `[-s, s]`, or `[1 - s, s]` under a post_transform).
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import TensorType, f32, i1, i64
from xdsl.ir import Block, Region, SSAValue

from onnxc.dialects import graph
from onnxc.frontend import onnx_types as types
from onnxc.frontend.onnx_context import NodeContext, Result, Tensor
from onnxc.frontend.onnx_graph_builder import Value, shape
from onnxc.frontend.onnx_ops_ml_linear import (
    MLBuilder,
    class_labels,
    float_rows,
    label_element,
    labels_of_scores,
    post_transform_name,
    second_class,
    single_score,
    transformed,
)

KERNELS = ("LINEAR", "POLY", "RBF", "SIGMOID")
COUPLING_ROUNDS = 100
"""libsvm's (and onnxruntime's) bound on the pairwise-coupling iterations"""


def _kernel(ctx: NodeContext) -> tuple[str, float, float, float]:
    kind = ctx.attr("kernel_type", "LINEAR")
    if kind not in KERNELS:
        raise ctx.invalid(f"kernel_type must be one of {', '.join(KERNELS)}, not {kind!r}")
    params = list(ctx.attr("kernel_params", None) or [])
    if params and len(params) != 3:
        raise ctx.invalid(f"kernel_params must be [gamma, coef0, degree], got {params}")
    gamma, coef0, degree = params or (0.0, 0.0, 0.0)
    return kind, float(gamma), float(coef0), float(degree)


def kernel_values(ctx: NodeContext, b: MLBuilder, x: Value, vectors: np.ndarray) -> Value:
    """[N, V]: the kernel of each row of `x` [N, F] with each support vector [V, F]."""
    kind, gamma, coef0, degree = _kernel(ctx)
    f = np.float32
    dot = b.matmul(x, np.ascontiguousarray(vectors.T))
    if kind == "LINEAR":
        return dot
    if kind == "RBF":  # |x - v|^2 = |x|^2 - 2 x.v + |v|^2, never below 0
        norms = b.reduce(graph.ReduceSumOp, b.mul(x, x), 1)
        d2 = b.add(b.sub(norms, b.mul(dot, f(2))), (vectors * vectors).sum(axis=1).astype(f))
        d2 = b.emit(graph.ClipOp, [d2], min=types.float_attr(0.0))
        return b.unary(graph.ExpOp, b.mul(d2, f(-gamma)))
    z = b.mul(dot, f(gamma))
    if coef0 != 0:
        z = b.add(z, f(coef0))
    if kind == "SIGMOID":
        return b.unary(graph.TanhOp, z)
    if degree == 2:
        return b.mul(z, z)
    if degree == 3:
        return b.mul(b.mul(z, z), z)
    return b.emit(graph.PowOp, [z, np.array(degree, f)])


def _support_vectors(ctx: NodeContext, count: int, features) -> np.ndarray:
    values = np.asarray(ctx.attr("support_vectors", None) or [], np.float32)
    if count <= 0 or values.size % count or (isinstance(features, int)
                                             and values.size != count * features):
        raise ctx.invalid(f"support_vectors has {values.size} values, not {count} vectors of "
                          f"the {features} features of X")
    return values.reshape(count, -1)


def _pairs(classes: int) -> list[tuple[int, int]]:
    return [(i, j) for i in range(classes) for j in range(i + 1, classes)]


def _pair_weights(coefficients: np.ndarray, per_class: list[int]) -> np.ndarray:
    """[V, pairs]: pair (i, j)'s decision value is `kernels @ W[:, p] + rho[p]`, W holding
    coefficient row j-1 on class i's vectors and row i on class j's (libsvm's layout)."""
    starts = np.cumsum([0, *per_class])
    pairs = _pairs(len(per_class))
    w = np.zeros((starts[-1], len(pairs)), np.float32)
    for p, (i, j) in enumerate(pairs):
        w[starts[i]:starts[i + 1], p] = coefficients[j - 1, starts[i]:starts[i + 1]]
        w[starts[j]:starts[j + 1], p] = coefficients[i, starts[j]:starts[j + 1]]
    return w


def _votes(b: MLBuilder, scores: Value, classes: int) -> Value:
    """[N, classes] one-vs-one votes: pair (i, j) votes i when its score is > 0, else j."""
    pairs = _pairs(classes)
    first = np.zeros((len(pairs), classes), np.float32)
    second = np.zeros_like(first)
    for p, (i, j) in enumerate(pairs):
        first[p, i], second[p, j] = 1, 1
    won = b.cast(b.compare(graph.GreaterOp, scores, np.float32(0)), f32)
    return b.add(b.matmul(won, first - second), second.sum(axis=0))


def _pairwise_probabilities(b: MLBuilder, scores: Value, classes: int, prob_a: np.ndarray,
                            prob_b: np.ndarray) -> Value:
    """[N, classes, classes] r: r[i, j] the probability of i against j (Platt's sigmoid of
    the pair's score, 1 - logistic(s * A + B), clipped), r[j, i] = 1 - r[i, j], 0 on the
    diagonal."""
    f = np.float32
    val = b.sub(f(1), b.unary(graph.SigmoidOp, b.add(b.mul(scores, prob_a), prob_b)))
    val = b.emit(graph.ClipOp, [val], min=types.float_attr(1e-7),
                 max=types.float_attr(float(f(1) - f(1e-7))))
    upper = np.zeros((len(prob_a), classes * classes), f)
    lower = np.zeros_like(upper)
    for p, (i, j) in enumerate(_pairs(classes)):
        upper[p, i * classes + j], lower[p, j * classes + i] = 1, 1
    r = b.add(b.matmul(val, upper), b.matmul(b.sub(f(1), val), lower))
    n = shape(scores)[0]
    return b.reshape(r, [n, classes, classes])


def couple(ctx: NodeContext, b: MLBuilder, r: Value, classes: int) -> SSAValue:
    """libsvm's multiclass_probability for each sample's r [N, C, C]: a graph.loop of at
    most COUPLING_ROUNDS rounds carrying p [N, C]; each round recomputes Qp and pQp, and a
    sample whose max |Qp - pQp| is below 0.005 / C keeps its p (it would have stopped);
    the loop stops when every sample has."""
    f = np.float32
    n = shape(r)[0]
    rt = b.transpose(r, [0, 2, 1])
    eye = np.eye(classes, dtype=f)
    # Q[i][i] = sum_j r[j][i]^2, Q[i][j] = -r[j][i] r[i][j]
    diag = b.reduce(graph.ReduceSumOp, b.mul(rt, rt), 2)  # [N, C, 1]
    q = b.add(b.unary(graph.NegOp, b.mul(rt, r)), b.mul(diag, eye))
    rows = [b.reshape(b.emit(graph.SliceOp, [q], starts=types.i64_array([i]),
                                   ends=types.i64_array([i + 1]), axes=types.i64_array([1]),
                                   steps=types.i64_array([1])), [n, classes])
            for i in range(classes)]
    q_diag = b.reshape(diag, [n, classes])
    p_type = types.tensor_type([n, classes], f32)
    p0 = b.value(b.add(b.mul(q_diag, f(0)), f(1) / f(classes)))  # 1/C, [N, C]
    block = Block(arg_types=[TensorType(i64, []), TensorType(i1, []), p_type])
    inner = MLBuilder(ctx.in_block(block))
    p = block.args[2]
    qp = inner.reshape(inner.matmul(q, inner.reshape(p, [n, classes, 1])), [n, classes])
    pqp = inner.reduce(graph.ReduceSumOp, inner.mul(p, qp), 1)
    error = inner.reduce(graph.ReduceMaxOp, inner.unary(graph.AbsOp, inner.sub(qp, pqp)), 1)
    active = inner.unary(graph.NotOp, inner.compare(graph.LessOp, error,
                                                    f(0.005) / f(classes)), i1)
    new_p: Value = p
    for i in range(classes):
        qii = inner.slice_last(q_diag, i, i + 1)
        qp_i = inner.slice_last(qp, i, i + 1)
        diff = inner.div(inner.sub(pqp, qp_i), qii)
        new_p = inner.add(new_p, inner.mul(diff, eye[i]))
        grow = inner.add(diff, f(1))
        pqp = inner.add(pqp, inner.mul(diff, inner.add(inner.mul(diff, qii),
                                                       inner.mul(qp_i, f(2)))))
        pqp = inner.div(inner.div(pqp, grow), grow)
        qp = inner.div(inner.add(qp, inner.mul(diff, rows[i])), grow)
        new_p = inner.div(new_p, grow)
    new_p = inner.emit(graph.WhereOp, [active, new_p, p], f32)
    any_active = inner.reduce(graph.ReduceMaxOp, inner.cast(active, f32), 0, keepdims=False)
    go_on = inner.compare(graph.GreaterOp, inner.reshape(any_active, []), f(0))
    block.add_op(graph.YieldOp(go_on, new_p))
    trips = ctx.materialize(Tensor.of_array(np.array(COUPLING_ROUNDS, np.int64)))
    start = ctx.materialize(Tensor.of_array(np.array(True)))
    loop = graph.LoopOp(trips, start, [p0], [p_type], Region(block), None)
    return ctx.emit(loop).results[0]


def convert_svm_classifier(ctx: NodeContext) -> list[Result]:
    b = MLBuilder(ctx)
    x, _ = float_rows(ctx, b)
    name = post_transform_name(ctx)
    labels = class_labels(ctx)
    if labels is None or len(labels) == 0:
        raise ctx.invalid("classlabels_ints or classlabels_strings is required")
    classes = len(labels)
    coefficients = np.asarray(ctx.attr("coefficients"), np.float32)
    rho = np.asarray(ctx.attr("rho"), np.float32)
    prob_a = np.asarray(ctx.attr("prob_a", None) or [], np.float32)
    prob_b = np.asarray(ctx.attr("prob_b", None) or [], np.float32)
    if len(prob_a) != len(prob_b):
        raise ctx.invalid(f"prob_a has {len(prob_a)} values, prob_b {len(prob_b)}")
    per_class = [int(v) for v in ctx.ints("vectors_per_class", [])]
    npairs = classes * (classes - 1) // 2
    _kernel(ctx)  # checked in either mode
    if sum(per_class) == 0:  # liblinear: one coefficient row per class
        return _linear_svm(ctx, b, x, name, labels, coefficients, rho, bool(len(prob_a)))
    if len(per_class) != classes:
        raise ctx.invalid(f"vectors_per_class has {len(per_class)} counts for {classes} "
                          f"classes")
    count = sum(per_class)
    vectors = _support_vectors(ctx, count, shape(x)[1])
    if coefficients.size != (classes - 1) * count or len(rho) < npairs or (
            len(prob_a) and len(prob_a) < npairs):
        raise ctx.invalid(f"{classes} classes of {count} support vectors need "
                          f"{(classes - 1) * count} coefficients and {npairs} rho (and prob_a, "
                          f"prob_b), got {coefficients.size}, {len(rho)}, {len(prob_a)}")
    kernels = kernel_values(ctx, b, x, vectors)
    w = _pair_weights(coefficients.reshape(classes - 1, count), per_class)
    scores = b.add(b.matmul(kernels, w), rho[:npairs])
    label = labels_of_scores(b, _votes(b, scores, classes), labels)
    if len(prob_a):
        r = _pairwise_probabilities(b, scores, classes, prob_a[:npairs], prob_b[:npairs])
        z = transformed(b, couple(ctx, b, r, classes), name)
    elif classes <= 2:
        z = second_class(ctx, b, scores, name, negated=name == "NONE")
    else:
        z = transformed(b, scores, name)
    return [b.value(label), b.value(z)]


def _linear_svm(ctx: NodeContext, b: MLBuilder, x: Value, name: str, labels: np.ndarray,
                coefficients: np.ndarray, rho: np.ndarray, have_proba: bool) -> list[Result]:
    """No support vectors: scores = X @ W.T + rho[0], W [classes, features]."""
    classes = len(labels)
    features = shape(x)[1]
    if not len(rho) or coefficients.size != classes * features:
        raise ctx.invalid(f"a linear SVM of {classes} classes and {features} features needs "
                          f"{classes * features} coefficients and a rho, got "
                          f"{coefficients.size} and {len(rho)}")
    w = np.ascontiguousarray(coefficients.reshape(classes, -1).T)
    scores = b.add(b.matmul(x, w), rho[0])
    label = labels_of_scores(b, scores, labels)
    if classes == 2 and not have_proba:  # ChooseClass's binary rule
        top = b.reduce(graph.ReduceMaxOp, scores, 1, keepdims=False)
        threshold_op = graph.GreaterOrEqualOp if bool(np.all(coefficients >= 0)) \
            else graph.GreaterOp
        threshold = 0.5 if threshold_op is graph.GreaterOrEqualOp else 0.0
        positive = b.compare(threshold_op, top, np.float32(threshold))
        label = b.emit(graph.WhereOp, [positive, labels[1:2].reshape(()), label],
                       label_element(labels))
    z = transformed(b, scores, name) if classes > 1 else single_score(b, scores, name)
    return [b.value(label), b.value(z)]


def convert_svm_regressor(ctx: NodeContext) -> list[Result]:
    """Y [N, 1] = kernels @ coefficients + rho[0] (or X @ coefficients + rho[0] with no
    support vectors); one_class: 1 where that is > 0, else -1. onnxruntime applies no
    post_transform here, nor does onnxc (a value other than NONE is refused)."""
    b = MLBuilder(ctx)
    x, _ = float_rows(ctx, b)
    if post_transform_name(ctx) != "NONE":
        raise ctx.unsupported("a post_transform on SVMRegressor (onnxruntime ignores it)")
    count = int(ctx.attr("n_supports", 0))
    coefficients = np.asarray(ctx.attr("coefficients"), np.float32)
    rho = np.asarray(ctx.attr("rho"), np.float32)
    if not len(rho):
        raise ctx.invalid("rho is required")
    if count > 0:
        vectors = _support_vectors(ctx, count, shape(x)[1])
        if coefficients.size < count:
            raise ctx.invalid(f"{count} support vectors need {count} coefficients, got "
                              f"{coefficients.size}")
        base = kernel_values(ctx, b, x, vectors)
        weights = coefficients[:count]
    else:
        if coefficients.size != shape(x)[1]:
            raise ctx.invalid(f"a linear SVM of {shape(x)[1]} features needs that many "
                              f"coefficients, got {coefficients.size}")
        base, weights = x, coefficients
    y = b.add(b.matmul(base, weights.reshape(-1, 1)), rho[:1])
    if ctx.attr("one_class", 0):
        y = b.emit(graph.WhereOp, [b.compare(graph.GreaterOp, y, np.float32(0)),
                                   np.array(1, np.float32), np.array(-1, np.float32)], f32)
    return [b.value(y)]
