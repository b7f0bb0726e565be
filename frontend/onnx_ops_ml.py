"""ai.onnx.ml's preprocessing, linear and kernel-machine operators (Scaler, Normalizer,
LinearClassifier, SVMClassifier, ...) as graph ops, so they compile like any other net.

This module holds the preprocessing and encoding ops and the domain's table; the linear
models are in onnx_ops_ml_linear.py, the SVMs in onnx_ops_ml_svm.py, tree ensembles in
onnx_ops_ml_trees.py. Semantics are onnxruntime's CPU kernels' (core/providers/cpu/ml/),
against which skl2onnx's models are checked. Every op keeps the rows of its [N, ...] inputs
apart, so each is registered `sample_wise(rows=True)` (frontend/batch_axes.py).

String categories, keys and class labels are string constants (!graph.string). ZipMap (a
sequence of maps) is refused with how to export without it (frontend/onnx_refused.py).
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, StringAttr, f32, i1, i64

from onnxc.dialects import graph
from onnxc.dialects.graph_strings import StringType
from onnxc.frontend import onnx_types as types
from onnxc.frontend.batch_axes import sample_wise
from onnxc.frontend.onnx_context import NodeContext, Result
from onnxc.frontend.onnx_graph_builder import Value, shape
from onnxc.frontend.onnx_ops_math import Converter
from onnxc.frontend.onnx_ops_microsoft import onnx_node
from onnxc.frontend.onnx_ops_ml_linear import (
    MLBuilder,
    convert_linear_classifier,
    convert_linear_regressor,
)
from onnxc.frontend.onnx_ops_ml_svm import convert_svm_classifier, convert_svm_regressor
from onnxc.frontend.onnx_ops_strings import key_index, text_array

_NUMERIC = ("float", "double", "int64", "int32")


def _numeric_input(ctx: NodeContext, i: int = 0) -> None:
    el = ctx.element_type(i)
    if types.onnx_type_of_element(el) not in (types.TP.FLOAT, types.TP.DOUBLE, types.TP.INT64,
                                              types.TP.INT32):
        raise ctx.invalid(f"input {i} must be one of {', '.join(_NUMERIC)}, not {el}")


def _per_column(ctx: NodeContext, values, name: str, default: float) -> np.ndarray:
    """A per-feature attribute of 1 value (every column) or one per column of X."""
    array = np.asarray(values if values else [default], np.float32)
    columns = ctx.shape(0)[-1] if ctx.rank(0) else 1
    if array.size != 1 and array.size != columns:
        raise ctx.invalid(f"{name} has {array.size} values; X has {columns} columns")
    return array


def convert_scaler(ctx: NodeContext) -> list[Result]:
    """Y = (X - offset) * scale, as float."""
    _numeric_input(ctx)
    b = MLBuilder(ctx)
    offset = _per_column(ctx, ctx.attr("offset", None), "offset", 0.0)
    scale = _per_column(ctx, ctx.attr("scale", None), "scale", 1.0)
    return [b.value(b.mul(b.sub(b.cast(ctx.operand(0), f32), offset), scale))]


def convert_normalizer(ctx: NodeContext) -> list[Result]:
    """Each row divided by its MAX (the largest value, not magnitude), L1 or L2 norm; a row
    whose norm is 0 is copied."""
    _numeric_input(ctx)
    if ctx.rank(0) not in (1, 2):
        raise ctx.invalid(f"X must be [N, C] or [C], got rank {ctx.rank(0)}")
    norm = ctx.attr("norm", "MAX")
    b = MLBuilder(ctx)
    x = b.cast(ctx.operand(0), f32)
    axis = ctx.rank(0) - 1
    if norm == "MAX":
        total = b.reduce(graph.ReduceMaxOp, x, axis)
    elif norm == "L1":
        total = b.reduce(graph.ReduceSumOp, b.unary(graph.AbsOp, x), axis)
    elif norm == "L2":
        total = b.reduce(graph.ReduceSumOp, b.mul(x, x), axis)
    else:
        raise ctx.invalid(f"norm must be MAX, L1 or L2, not {norm!r}")
    zero = b.compare(graph.EqualOp, total, np.float32(0))
    divisor = b.unary(graph.SqrtOp, total) if norm == "L2" else total
    safe = b.where(zero, np.float32(1), divisor)
    return [b.value(b.div(x, safe))]


def convert_binarizer(ctx: NodeContext) -> list[Result]:
    """Y = 1 where X > threshold, else 0, in X's type."""
    _numeric_input(ctx)
    b = MLBuilder(ctx)
    x = ctx.operand(0)
    dtype = types.numpy_dtype(types.onnx_type_of_element(ctx.element_type(0)))
    threshold = np.array(ctx.attr("threshold", 0.0)).astype(dtype)
    above = b.compare(graph.GreaterOp, x, threshold)
    return [b.emit(graph.WhereOp, [above, np.array(1, dtype), np.array(0, dtype)],
                   ctx.element_type(0))]


def convert_imputer(ctx: NodeContext) -> list[Result]:
    """X's elements equal to the replaced value (NaN: every NaN) become the imputed value of
    their column. Float inputs read the _float(s) attributes, integer ones the _int64(s)."""
    _numeric_input(ctx)
    el = ctx.element_type(0)
    dtype = types.numpy_dtype(types.onnx_type_of_element(el))
    b = MLBuilder(ctx)
    x = ctx.operand(0)
    if types.is_float(el):
        imputed, replaced = ctx.attr("imputed_value_floats", None), \
            ctx.attr("replaced_value_float", 0.0)
        what = "imputed_value_floats"
    else:
        imputed, replaced = ctx.ints("imputed_value_int64s"), ctx.attr("replaced_value_int64", 0)
        what = "imputed_value_int64s"
    if not imputed:
        raise ctx.invalid(f"{what} is required for {el} input")
    values = np.asarray(imputed).astype(dtype)
    columns = ctx.shape(0)[-1] if ctx.rank(0) else 1
    if values.size != 1 and values.size != columns:
        raise ctx.invalid(f"{what} has {values.size} values; X has {columns} columns")
    if types.is_float(el) and np.isnan(replaced):
        match = b.unary(graph.IsNaNOp, x, i1)
    else:
        match = b.compare(graph.EqualOp, x, np.array(replaced).astype(dtype))
    return [b.emit(graph.WhereOp, [match, values, x], el)]


def convert_array_feature_extractor(ctx: NodeContext) -> list[Result]:
    """Z = X[..., Y]: the columns of X (last axis) that the int64 indices Y name, flattened;
    a 1-D X gives one row. Indices are checked to lie in [0, columns)."""
    b = MLBuilder(ctx)
    x = ctx.operand(0)
    dims = list(ctx.shape(0))
    if not dims:
        raise ctx.invalid("X must have rank >= 1")
    columns = dims[-1]
    if not isinstance(columns, int):
        raise ctx.invalid(f"the last axis of X must be static, not {columns}")
    if ctx.element_type(1) != i64:
        raise ctx.invalid(f"Y must be int64, not {ctx.element_type(1)}")
    count = int(np.prod([d for d in ctx.shape(1)]))
    known = ctx.tensor(1).array
    if known is not None:
        flat = known.reshape(-1).astype(np.int64)
        if np.any((flat < 0) | (flat >= columns)):
            raise ctx.invalid(f"Y's indices {flat.tolist()} must lie in [0, {columns})")
        indices: Value = flat
    else:
        indices = b.reshape(ctx.operand(1), [count])
        ctx.emit(graph.CheckIndicesOp(operands=[indices], properties={
            "bounds": DenseArrayBase.from_list(i64, [columns]),
            "negative": IntegerAttr(0, i64), "node": StringAttr(ctx.label),
            "op_type": StringAttr(ctx.op_name), "operand": StringAttr("Y")}))
    if len(dims) == 1:
        x = b.reshape(x, [1, columns])
    return [b.value(b.gather_last(x, indices))]


def convert_one_hot_encoder(ctx: NodeContext) -> list[Result]:
    """Y[..., k] = 1.0 where X equals category k (cats_int64s, or cats_strings for string
    X), an extra last axis; with zeros=0 a value that is no category is an error at run
    time (InvalidInputError)."""
    b = MLBuilder(ctx)
    if isinstance(ctx.element_type(0), StringType):
        if not ctx.attr("cats_strings", None):
            raise ctx.invalid("string X needs cats_strings")
        cats: np.ndarray = text_array(list(ctx.attr("cats_strings")))
        x = ctx.operand(0)
    else:
        if not ctx.ints("cats_int64s"):
            raise ctx.invalid(f"cats_int64s is required for {ctx.element_type(0)} X")
        _numeric_input(ctx)
        cats = np.asarray(ctx.ints("cats_int64s"), np.int64)
        x = b.cast(ctx.operand(0), i64)  # onnxruntime truncates float input to int64
    x = b.reshape(x, [*shape(x), 1])
    equal = b.cast(b.compare(graph.EqualOp, x, cats), f32)
    if not ctx.attr("zeros", 1):
        found = b.cast(b.reduce(graph.ReduceMaxOp, equal, -1), i64)  # 1 found, 0 not
        missing = b.sub(found, np.array(1, np.int64))  # -1 where X is no category
        ctx.emit(graph.CheckIndicesOp(operands=[b.value(missing)], properties={
            "bounds": DenseArrayBase.from_list(i64, [1]),
            "negative": IntegerAttr(0, i64), "node": StringAttr(ctx.label),
            "op_type": StringAttr(ctx.op_name),
            "operand": StringAttr("X (a value that is no category, with zeros=0)")}))
    return [b.value(equal)]


def _encoder_table(ctx: NodeContext) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """LabelEncoder's keys, values and default (opset 1-4 attribute forms)."""
    keys = ctx.attr("keys_tensor", None)
    if keys is None:
        keys = (np.asarray(ctx.attr("keys_int64s"), np.int64) if ctx.has_attr("keys_int64s")
                else text_array(ctx.attr("keys_strings")) if ctx.has_attr("keys_strings")
                else np.asarray(ctx.attr("keys_floats", []), np.float32))
    values = ctx.attr("values_tensor", None)
    if values is None:
        values = (np.asarray(ctx.attr("values_int64s"), np.int64)
                  if ctx.has_attr("values_int64s")
                  else text_array(ctx.attr("values_strings"))
                  if ctx.has_attr("values_strings")
                  else np.asarray(ctx.attr("values_floats", []), np.float32))
    if ctx.opset < 2:  # classes_strings: string -> its index, or an index -> its string
        classes = text_array(ctx.attr("classes_strings", []))
        index = np.arange(classes.size, dtype=np.int64)
        keys, values = ((classes, index) if isinstance(ctx.element_type(0), StringType)
                        else (index, classes))
    keys, values = text_array(keys).reshape(-1), text_array(values).reshape(-1)
    if keys.size == 0 or keys.size != values.size:
        raise ctx.invalid(f"LabelEncoder needs as many keys as values, got {keys.size} and "
                          f"{values.size}")
    default = ctx.attr("default_tensor", None)
    if default is None:
        if values.dtype == object:
            default = text_array(ctx.attr("default_string", "_Unused"))
        elif values.dtype == np.int64 or np.issubdtype(values.dtype, np.integer):
            default = ctx.attr("default_int64", -1)
        else:
            default = ctx.attr("default_float", -0.0)
    default = np.asarray(default).reshape(-1)
    if default.size != 1:
        raise ctx.invalid(f"default_tensor must hold one value, got {default.size}")
    return keys, values, default.astype(values.dtype).reshape(())


def convert_label_encoder(ctx: NodeContext) -> list[Result]:
    """Y = values[k] where X equals keys[k] (the first such k; from opset 4 a NaN key
    matches a NaN), else the default: one comparison against every key, the first match's
    value."""
    keys, values, default = _encoder_table(ctx)
    el = ctx.element_type(0)
    key_type = (types.TP.STRING if keys.dtype == object
                else types.onnx_type_of_numpy(keys.dtype))
    if types.onnx_type_of_element(el) != key_type:
        raise ctx.invalid(f"X is {el}, the keys are {types.type_name(key_type)}")
    b = MLBuilder(ctx)
    x = ctx.operand(0)
    if keys.dtype == object:  # string keys: a trie of them, one walk per string
        index = key_index(ctx, x, keys.tolist())
        found = b.compare(graph.GreaterOrEqualOp, index, np.int64(0))
        picked = b.pick(values, b.emit(graph.WhereOp, [found, index, np.int64(0)], i64))
        return [b.emit(graph.WhereOp, [found, picked, default],
                       picked.type.get_element_type())]
    column = b.reshape(x, [*shape(x), 1])
    match = b.compare(graph.EqualOp, column, keys)
    if ctx.opset >= 4 and keys.dtype.kind == "f" and np.isnan(keys).any():  # opset 4's rule
        both_nan = b.emit(graph.AndOp, [b.unary(graph.IsNaNOp, column, i1), np.isnan(keys)],
                          i1)
        match = b.emit(graph.OrOp, [match, both_nan], i1)
    hits = b.cast(match, f32)
    found = b.compare(graph.GreaterOp, b.reduce(graph.ReduceMaxOp, hits, -1, keepdims=False),
                      np.float32(0))
    picked = b.pick(values, b.arg_max(hits))
    return [b.emit(graph.WhereOp, [found, picked, default], picked.type.get_element_type())]


def convert_feature_vectorizer(ctx: NodeContext) -> list[Result]:
    """The inputs' features side by side, as float: input i's row flattened, cut or padded
    with zeros to inputdimensions[i], rows of a 1-D input its one row."""
    b = MLBuilder(ctx)
    dims = ctx.ints("inputdimensions", [])
    inputs = [i for i in range(ctx.num_inputs) if ctx.has_input(i)]
    if len(dims) != len(inputs):
        raise ctx.invalid(f"inputdimensions has {len(dims)} sizes for {len(inputs)} inputs")
    batch = None
    parts = []
    for i, width in zip(inputs, dims):
        _numeric_input(ctx, i)
        sizes = list(ctx.shape(i))
        x = b.cast(ctx.operand(i), f32)
        rows = 1 if len(sizes) <= 1 else sizes[0]
        feature_sizes = sizes[-1:] if len(sizes) <= 1 else sizes[1:]
        if not all(isinstance(d, int) for d in feature_sizes):
            raise ctx.invalid(f"input {i}'s features must have static sizes, got {sizes}")
        features = int(np.prod(feature_sizes))
        batch = rows if batch is None else batch
        x = b.reshape(x, [rows, features])
        if features > width:
            x = b.slice_last(x, 0, width)
        elif features < width:
            x = b.emit(graph.PadOp, [x], pads=types.i64_array([0, 0, 0, width - features]),
                       mode=StringAttr("constant"), value=types.float_attr(0.0))
        parts.append(x)
    return [b.value(b.concat(parts, 1))]


def convert_category_mapper(ctx: NodeContext) -> list[Result]:
    """CategoryMapper: strings to int64 by cats_strings -> cats_int64s (default_int64), or
    int64 to strings the other way (default_string): LabelEncoder (opset 2) with those
    keys and values."""
    strings = [s.decode() if isinstance(s, bytes) else s for s in ctx.attr("cats_strings", [])]
    ints = [int(i) for i in ctx.attr("cats_int64s", [])]
    if len(strings) != len(ints):
        raise ctx.invalid(f"cats_strings has {len(strings)} values, cats_int64s {len(ints)}")
    default_string = ctx.attr("default_string", "_Unused")
    default_string = (default_string.decode() if isinstance(default_string, bytes)
                      else default_string)
    if isinstance(ctx.element_type(0), StringType):
        attrs = {"keys_strings": strings, "values_int64s": ints,
                 "default_int64": int(ctx.attr("default_int64", -1))}
    else:
        attrs = {"keys_int64s": ints, "values_strings": strings,
                 "default_string": default_string}
    return onnx_node(ctx, "LabelEncoder", [ctx.tensor(0)], attrs, opset=2, domain="ai.onnx.ml")


def _rows(converter: Converter) -> Converter:
    return sample_wise(converter, rows=True)


CONVERTERS: dict[str, Converter] = {
    "Scaler": _rows(convert_scaler),
    "Normalizer": _rows(convert_normalizer),
    "Binarizer": _rows(convert_binarizer),
    "Imputer": _rows(convert_imputer),
    "ArrayFeatureExtractor": convert_array_feature_extractor,
    "OneHotEncoder": _rows(convert_one_hot_encoder),
    "LabelEncoder": _rows(convert_label_encoder),
    "FeatureVectorizer": _rows(convert_feature_vectorizer),
    "CategoryMapper": sample_wise(convert_category_mapper),
    "LinearClassifier": _rows(convert_linear_classifier),
    "LinearRegressor": _rows(convert_linear_regressor),
    "SVMClassifier": _rows(convert_svm_classifier),
    "SVMRegressor": _rows(convert_svm_regressor),
}
"""ai.onnx.ml converters by op type."""
