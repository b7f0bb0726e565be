"""graph.tree_ensemble_regressor / graph.tree_ensemble_classifier: ai.onnx.ml's tree
ensembles, their trees held as compile-time tables in the op's properties.

The importer writes every tree in one canonical form, so that neither the kernel nor the
evaluator dispatches on a node's mode in the run:

- a node tests whether its feature lies in the closed interval [`lower`, `upper`] (bounds
  of the input's type, f32 or f64, held as their i32 / i64 bit patterns: exact, and an
  infinite bound survives the custom syntax, whose float arrays print infinities in a hex
  form they do not parse)
  (LEQ t is [-inf, t], LT t is [-inf, prev(t)], GTE / GT / EQ likewise; NEQ and a
  complement are the same interval with the children swapped), and goes to
  `children[2 * node]` when it does, to `children[2 * node + 1]` when it does not. A NaN
  feature is in no interval; `nan_inside` sends it to the first child instead (missing
  values tracked to the true branch);
- a leaf is its own two children: the walk of tree k is exactly `depths[k]` steps from
  `roots[k]`, without a test for leaves, and ends on a leaf whatever the input (the
  verifier checks every index the walk may read is in range, so no input reads outside
  the tables);
- `leaf_weights` (f32; f64 for an f64 input, whose sums are f64 as onnxruntime's) is
  dense, [nodes, columns] row-major (zero where a leaf gives a column
  nothing); `has_weight` marks the (node, column) pairs a leaf does give, which MIN and MAX
  read (a column no tree reaches is 0, as onnxruntime gives it).

The aggregation (`aggregate`: SUM, AVERAGE, MIN, MAX), `base_values` and `post_transform`
(NONE, LOGISTIC, SOFTMAX, SOFTMAX_ZERO, PROBIT) follow onnxruntime's TreeEnsemble kernels
(tree_ensemble_aggregator.h, ml_common.h), sums in f32 in tree order.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, StringAttr, TensorType, f32, f64, i64
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def
from xdsl.utils.exceptions import VerifyException

from onnxc.dialects.graph_base import GraphOp, int_of, shape_of

AGGREGATES = ("SUM", "AVERAGE", "MIN", "MAX")
POST_TRANSFORMS = ("NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO", "PROBIT")
BINARY_MODES = (0, 1, 2)
"""classifier `binary`: 0 one score column per class; 1 one column for two classes, its
weights all >= 0 (scores [1 - s, s], the positive class when s > 0.5); 2 one column with
weights of both signs (scores [-s, s] or their logistic, the positive class when s > 0)"""


def _values(attr: DenseArrayBase) -> np.ndarray:
    """The array's elements, read from its bytes (get_values unpacks one by one)."""
    el = attr.elt_type
    dtype = "<f4" if el == f32 else "<f8" if el == f64 else f"<i{el.width.data // 8}"
    return np.frombuffer(attr.data.data, dtype=dtype)


def _i32(attr: DenseArrayBase) -> np.ndarray:
    return _values(attr).astype(np.int64)


def _f32(attr: DenseArrayBase) -> np.ndarray:
    return _values(attr).astype(np.float32)


def _bounds(attr: DenseArrayBase) -> np.ndarray:
    """f32 bounds from i32 bit patterns, f64 bounds from i64 ones."""
    values = _values(attr)
    return values.view(np.float64) if values.dtype.itemsize == 8 else values.view(np.float32)


class TreeTables:
    """The canonical tables of an ensemble op as numpy arrays (module docstring)."""

    def __init__(self, op: TreeEnsembleFields):
        self.features = _i32(op.features)
        self.lower = _bounds(op.lower)
        self.upper = _bounds(op.upper)
        self.children = _i32(op.children)
        self.nan_inside = _i32(op.nan_inside)
        self.roots = _i32(op.roots)
        self.depths = _i32(op.depths)
        self.dtype = np.dtype(np.float64 if op.input.type.get_element_type() == f64
                              else np.float32)
        """the input's, which the comparisons, the weights and the sums have"""
        self.base_values = _values(op.base_values).astype(self.dtype)
        nodes = len(self.features)
        weights = _values(op.leaf_weights).astype(self.dtype)
        has = _i32(op.has_weight)
        self.columns = len(weights) // nodes if nodes else 0
        self.leaf_weights = weights.reshape(nodes, self.columns)
        self.has_weight = has.reshape(nodes, self.columns).astype(bool)
        self.aggregate = op.aggregate.data
        self.post_transform = op.post_transform.data

    @property
    def nodes(self) -> int:
        return len(self.features)


class TreeEnsembleFields(GraphOp):
    """The input [N, F] and the tables shared by both ensemble ops (module docstring)."""

    input = operand_def(TensorType)
    features = prop_def(DenseArrayBase)
    lower = prop_def(DenseArrayBase)
    upper = prop_def(DenseArrayBase)
    children = prop_def(DenseArrayBase)
    nan_inside = prop_def(DenseArrayBase)
    roots = prop_def(DenseArrayBase)
    depths = prop_def(DenseArrayBase)
    leaf_weights = prop_def(DenseArrayBase)
    has_weight = prop_def(DenseArrayBase)
    base_values = prop_def(DenseArrayBase)
    aggregate = prop_def(StringAttr)
    post_transform = prop_def(StringAttr)

    def tables(self) -> TreeTables:
        return TreeTables(self)

    def verify_tables(self, score_columns: int) -> int:
        """Every index the walk may read is in range; returns the weight columns."""
        t = self.tables()
        x = shape_of(self.input)
        if len(x) != 2 or not isinstance(x[1], int):
            raise VerifyException(f"{self.name}: the input must be [N, F] with F static")
        n = t.nodes
        if n == 0 or len(t.roots) == 0:
            raise VerifyException(f"{self.name}: an ensemble has at least one tree")
        for name, values, size in (("lower", t.lower, n), ("upper", t.upper, n),
                                   ("children", t.children, 2 * n), ("nan_inside", t.nan_inside, n),
                                   ("depths", t.depths, len(t.roots))):
            if len(values) != size:
                raise VerifyException(f"{self.name}: {name} has {len(values)} entries, not {size}")
        if len(t.leaf_weights.reshape(-1)) != n * t.columns or t.columns == 0:
            raise VerifyException(f"{self.name}: leaf_weights is not [nodes, columns]")
        if t.has_weight.size != t.leaf_weights.size:
            raise VerifyException(f"{self.name}: has_weight is not [nodes, columns]")
        if ((t.features < 0) | (t.features >= max(x[1], 1))).any() and n:
            raise VerifyException(f"{self.name}: a feature index is outside [0, {x[1]})")
        for name, values in (("children", t.children), ("roots", t.roots)):
            if ((values < 0) | (values >= n)).any():
                raise VerifyException(f"{self.name}: a {name} index is outside [0, {n})")
        if (t.depths < 0).any():
            raise VerifyException(f"{self.name}: a negative tree depth")
        if self.aggregate.data not in AGGREGATES:
            raise VerifyException(f"{self.name}: unknown aggregate '{self.aggregate.data}'")
        if self.post_transform.data not in POST_TRANSFORMS:
            raise VerifyException(
                f"{self.name}: unknown post_transform '{self.post_transform.data}'")
        for name in ("lower", "upper", "leaf_weights", "base_values"):
            if getattr(t, name).dtype != t.dtype:
                raise VerifyException(f"{self.name}: {name} is not of the input's type")
        if len(t.base_values) not in (0, 1, t.columns, score_columns):
            raise VerifyException(f"{self.name}: {len(t.base_values)} base_values for "
                                  f"{t.columns} columns")
        return t.columns


@irdl_op_definition
class TreeEnsembleRegressorOp(TreeEnsembleFields):
    """ai.onnx.ml TreeEnsembleRegressor (and TreeEnsemble): `output` [N, targets], the
    trees' leaf weights aggregated per target, plus `base_values`, then `post_transform`
    (with one target only PROBIT applies, as in onnxruntime). An f32 input: f32 throughout;
    an f64 input: f64 comparisons and sums (no post transform), the output f64 or rounded
    to f32. The kernel walks every tree over compile-time tables, branch-free
    (lowering/graph_to_loops/tree_ensemble.py)."""

    name = "graph.tree_ensemble_regressor"
    output = result_def(TensorType)

    def verify_element_types(self) -> None:
        x, y = self.input.type.get_element_type(), self.output.type.get_element_type()
        if x not in (f32, f64) or y not in (f32, f64) or (x == f32 and y == f64):
            raise VerifyException(f"{self.name}: an f32 input gives f32, an f64 one f32 or f64")
        if x == f64 and self.post_transform.data != "NONE":
            raise VerifyException(f"{self.name}: no post_transform on an f64 input")

    def infer_shapes(self):
        columns = self.verify_tables(0)
        return [(shape_of(self.input)[0], columns)]


@irdl_op_definition
class TreeEnsembleClassifierOp(TreeEnsembleFields):
    """ai.onnx.ml TreeEnsembleClassifier: `labels` [N] i64 (from `class_labels`) and `scores`
    [N, classes] f32, as onnxruntime computes them: the class of the largest score (before
    `post_transform`), or for two classes the positive one when its score is > 0; `binary`
    (BINARY_MODES) is onnxruntime's case of one weight column for two classes."""

    name = "graph.tree_ensemble_classifier"
    labels = result_def(TensorType)
    scores = result_def(TensorType)
    class_labels = prop_def(DenseArrayBase)
    binary = prop_def(IntegerAttr)

    def verify_element_types(self) -> None:
        if (self.input.type.get_element_type() != f32
                or self.scores.type.get_element_type() != f32
                or self.labels.type.get_element_type() != i64):
            raise VerifyException(f"{self.name}: input and scores are f32, labels i64")

    def infer_shapes(self):
        classes = len(self.class_labels.get_values())
        columns = self.verify_tables(classes)
        binary = int_of(self.binary)
        if binary not in BINARY_MODES:
            raise VerifyException(f"{self.name}: binary is one of {BINARY_MODES}")
        if binary and (classes != 2 or columns != 1 or len(self.tables().base_values) > 1):
            raise VerifyException(f"{self.name}: binary needs two classes, one weight column "
                                  "and at most one base value")
        if not binary and columns != classes:
            raise VerifyException(f"{self.name}: {columns} weight columns for {classes} classes")
        if classes < 2:
            raise VerifyException(f"{self.name}: a classifier has at least two classes")
        n = shape_of(self.input)[0]
        return [(n,), (n, classes)]


TREE_OPS = [TreeEnsembleRegressorOp, TreeEnsembleClassifierOp]
