"""ai.onnx.ml's tree ensembles (TreeEnsembleClassifier, TreeEnsembleRegressor, opset 5's
TreeEnsemble): the trees are compile-time data and become native code.

Each converter reads its encoding into canonical tables (onnx_tree_tables.py) and emits one
graph.tree_ensemble_regressor or graph.tree_ensemble_classifier, whose kernel walks the
trees (lowering/graph_to_loops/tree_ensemble.py). Integer inputs are converted to f32 first
(onnxruntime compares them as float too). A double input of a regressor is compared and
summed in double, as onnxruntime does (without a post transform); a classifier's is
refused."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseArrayBase,
    IntegerAttr,
    StringAttr,
    f32,
    f64,
    i32,
    i64,
)

from onnxc.dialects.graph_trees import (
    AGGREGATES,
    POST_TRANSFORMS,
    TreeEnsembleClassifierOp,
    TreeEnsembleRegressorOp,
)
from onnxc.frontend import onnx_types as types
from onnxc.frontend.batch_axes import sample_wise
from onnxc.frontend.onnx_context import NodeContext, Result
from onnxc.frontend.onnx_ops_math import Converter, cast_to
from onnxc.frontend.onnx_tree_tables import Tables, canonical, read_legacy, read_opset5

_AGGREGATE_CODES = ("AVERAGE", "SUM", "MIN", "MAX")
"""opset 5's aggregate_function codes"""
_POST_CODES = ("NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT")
"""opset 5's post_transform codes"""


def _input(ctx: NodeContext, double: bool = False) -> tuple:
    """The input as f32 [N, F] (f64 kept where `double`), N and its static F."""
    shape = ctx.shape(0)
    el = ctx.element_type(0)
    if el == f64 and not double:
        raise ctx.unsupported("a double input of a classifier; cast it to float")
    if el not in (f32, f64, i64, i32):
        raise ctx.unsupported(f"input element type {el}")
    if len(shape) == 1:
        raise ctx.unsupported("a 1-D input: give [N, F]")
    if len(shape) != 2 or not isinstance(shape[1], int):
        raise ctx.unsupported("the input must be [N, F] with F static")
    return cast_to(ctx, ctx.operand(0), f64 if el == f64 else f32), shape[0], shape[1]


def _array(el, values: np.ndarray) -> DenseArrayBase:
    """A dense array from numpy's bytes (from_list converts element by element: seconds for
    a forest of 400,000 nodes)."""
    dtype = {i32: "<i4", i64: "<i8", f32: "<f4", f64: "<f8"}[el]
    return DenseArrayBase(el, BytesAttr(np.ascontiguousarray(values, dtype=dtype).tobytes()))


def _props(ctx: NodeContext, t: Tables, aggregate: str, post: str,
           base: np.ndarray | None) -> dict:
    if aggregate not in AGGREGATES:
        raise ctx.invalid(f"unknown aggregate_function {aggregate!r}")
    if post not in POST_TRANSFORMS:
        raise ctx.invalid(f"unknown post_transform {post!r}")
    double = t.lower.dtype == np.float64
    if double and post != "NONE":
        raise ctx.unsupported(f"post_transform {post} on a double input")
    fl, bits = (f64, i64) if double else (f32, i32)
    bits_dtype = "<i8" if double else "<i4"
    base = np.zeros(0) if base is None else np.asarray(base)
    return {
        "features": _array(i32, t.features),
        "lower": _array(bits, t.lower.view(bits_dtype)),
        "upper": _array(bits, t.upper.view(bits_dtype)),
        "children": _array(i32, t.children),
        "nan_inside": _array(i32, t.nan_inside),
        "roots": _array(i32, t.roots),
        "depths": _array(i32, t.depths),
        "leaf_weights": _array(fl, t.leaf_weights.reshape(-1)),
        "has_weight": _array(i32, t.has_weight.reshape(-1)),
        "base_values": _array(fl, base),
        "aggregate": StringAttr(aggregate),
        "post_transform": StringAttr(post),
    }


def _dtype(x) -> type:
    return np.float64 if x.type.get_element_type() == f64 else np.float32


def _base(ctx: NodeContext) -> np.ndarray | None:
    if ctx.has_attr("base_values_as_tensor"):
        return np.asarray(ctx.attr("base_values_as_tensor"), np.float64).reshape(-1)
    value = ctx.attr("base_values", None)
    return None if value is None else np.asarray(value, np.float32)


def convert_tree_ensemble_regressor(ctx: NodeContext) -> list[Result]:
    x, n, width = _input(ctx, double=True)
    forest, columns = read_legacy(ctx, "target")
    targets = ctx.attr("n_targets", None)
    if targets is not None:
        if targets < columns:
            raise ctx.invalid(f"a target id is >= n_targets {targets}")
        columns = targets
    base = _base(ctx)
    if base is not None and len(base) not in (0, columns, 1):
        raise ctx.invalid(f"{len(base)} base_values for {columns} targets")
    if base is not None and len(base) == 1 and columns > 1:
        base = None  # onnxruntime reads one base value only for one target
    tables = canonical(ctx, forest, columns, width, _dtype(x))
    props = _props(ctx, tables, ctx.attr("aggregate_function", "SUM"),
                   ctx.attr("post_transform", "NONE"), base)
    out = types.tensor_type((n, columns), f32)
    return [ctx.emit1(TreeEnsembleRegressorOp(operands=[x], result_types=[out],
                                                    properties=props))]


def convert_tree_ensemble(ctx: NodeContext) -> list[Result]:
    """opset 5: the same regressor; its result has the input's element type."""
    if ctx.element_type(0) not in (f32, f64):
        raise ctx.unsupported(f"input element type {ctx.element_type(0)} (float or double)")
    x, n, width = _input(ctx, double=True)
    forest = read_opset5(ctx)
    columns = ctx.attr("n_targets", None)
    if columns is None:
        columns = 1 + max((c for _, c, _ in forest.weights), default=0)
    aggregate = ctx.attr("aggregate_function", 1)
    post = ctx.attr("post_transform", 0)
    if not 0 <= aggregate < len(_AGGREGATE_CODES) or not 0 <= post < len(_POST_CODES):
        raise ctx.invalid(f"aggregate_function {aggregate} / post_transform {post} unknown")
    tables = canonical(ctx, forest, columns, width, _dtype(x))
    props = _props(ctx, tables, _AGGREGATE_CODES[aggregate], _POST_CODES[post], None)
    out = types.tensor_type((n, columns), ctx.element_type(0))
    return [ctx.emit1(TreeEnsembleRegressorOp(operands=[x], result_types=[out],
                                                    properties=props))]


def convert_tree_ensemble_classifier(ctx: NodeContext) -> list[Result]:
    x, n, width = _input(ctx)
    if ctx.has_attr("classlabels_strings"):
        raise ctx.unsupported("string class labels (classlabels_strings): give "
                              "classlabels_int64s")
    labels = ctx.ints("classlabels_int64s", None)
    if not labels:
        raise ctx.invalid("classlabels_int64s is missing")
    forest, columns = read_legacy(ctx, "class")
    classes = len(labels)
    if columns > classes:
        raise ctx.invalid(f"a class id is >= the {classes} class labels")
    ids = {c for _, c, _ in forest.weights}
    binary = 0
    base = _base(ctx)
    post = ctx.attr("post_transform", "NONE")
    if classes == 2 and ids <= {0}:  # onnxruntime's binary case: one weight column
        binary = 1 if all(w >= 0 for _, _, w in forest.weights) else 2
        columns = 1
        if base is not None and len(base) > 1:
            raise ctx.unsupported("two base_values with one weight column")
        if post == "PROBIT":
            raise ctx.unsupported("PROBIT with one weight column for two classes "
                                  "(onnxruntime writes one score of two)")
    else:
        columns = classes
        if base is not None and len(base) not in (0, 1, classes):
            raise ctx.invalid(f"{len(base)} base_values for {classes} classes")
    if classes < 2:
        raise ctx.unsupported("fewer than two classes")
    tables = canonical(ctx, forest, columns, width)
    props = _props(ctx, tables, "SUM", post, base)
    props["class_labels"] = _array(i64, np.asarray(labels))
    props["binary"] = IntegerAttr(binary, i64)
    result_types = [types.tensor_type((n,), i64), types.tensor_type((n, classes), f32)]
    op = ctx.emit(TreeEnsembleClassifierOp(operands=[x], result_types=result_types,
                                                 properties=props))
    return list(op.results)


CONVERTERS: dict[str, Converter] = {
    "TreeEnsembleRegressor": sample_wise(convert_tree_ensemble_regressor),
    "TreeEnsembleClassifier": sample_wise(convert_tree_ensemble_classifier),
    "TreeEnsemble": sample_wise(convert_tree_ensemble),
}
"""ai.onnx.ml tree-ensemble converters by op type."""
