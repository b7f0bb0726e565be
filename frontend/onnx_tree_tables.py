"""ai.onnx.ml trees -> the canonical tables of graph.tree_ensemble_* (dialects/graph_trees.py).

The three encodings (TreeEnsembleRegressor / TreeEnsembleClassifier opsets 1-3 with their
`*_as_tensor` forms, and opset 5's TreeEnsemble with leaves apart and set membership) are
read into one `Forest` of nodes in attribute order; `canonical` then turns each node's mode
into an interval over f32 (exactly the set of f32 inputs onnxruntime's comparison accepts,
whether the threshold was float or double), expands a BRANCH_MEMBER set into a chain of EQ
nodes, makes leaves their own children and measures every tree's depth. Malformed trees
(a child or leaf that does not exist, a feature outside the input, a cycle, an unknown
mode) raise the node's ModelLoadError naming the tree and node."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from onnxc.frontend.onnx_context import NodeContext

MODES = ("BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ",
         "BRANCH_MEMBER")
"""opset 5's mode codes 0-6, by position"""

_F32 = np.float32


@dataclass
class Forest:
    """Nodes in attribute order: `mode` "LEAF" or a MODES entry, `true` / `false` node
    positions (-1 for a leaf), `names` what errors call a node (tree and node id)."""

    tree: list[int] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    mode: list[str] = field(default_factory=list)
    threshold: list[float] = field(default_factory=list)
    feature: list[int] = field(default_factory=list)
    true: list[int] = field(default_factory=list)
    false: list[int] = field(default_factory=list)
    missing_true: list[int] = field(default_factory=list)
    members: dict[int, list[float]] = field(default_factory=dict)
    roots: list[int] = field(default_factory=list)
    weights: list[tuple[int, int, float]] = field(default_factory=list)
    """(node position, column, weight): each adds to that leaf's column"""

    def add(self, tree: int, name: str, mode: str, threshold: float, feature: int,
            missing: int) -> int:
        self.tree.append(tree)
        self.names.append(name)
        self.mode.append(mode)
        self.threshold.append(threshold)
        self.feature.append(feature)
        self.true.append(-1)
        self.false.append(-1)
        self.missing_true.append(missing)
        return len(self.mode) - 1


def _floats(ctx: NodeContext, name: str) -> np.ndarray | None:
    """`name` or `name_as_tensor` as float64 (a double tensor keeps its precision)."""
    if ctx.has_attr(name + "_as_tensor"):
        return np.asarray(ctx.attr(name + "_as_tensor"), dtype=np.float64).reshape(-1)
    value = ctx.attr(name, None)
    return None if value is None else np.asarray(value, dtype=np.float32).astype(np.float64)


def _same_length(ctx: NodeContext, what: str, **lists) -> None:
    sizes = {k: len(v) for k, v in lists.items()}
    if len(set(sizes.values())) > 1:
        raise ctx.invalid(f"the {what} attributes differ in length: {sizes}")


def read_legacy(ctx: NodeContext, prefix: str) -> tuple[Forest, int]:
    """TreeEnsembleRegressor (prefix 'target') / TreeEnsembleClassifier ('class') opsets
    1-3; returns the forest and its number of weight columns (one past the largest id)."""
    tree_ids = ctx.ints("nodes_treeids", [])
    node_ids = ctx.ints("nodes_nodeids", [])
    features = ctx.ints("nodes_featureids", [])
    modes = ctx.attr("nodes_modes", [])
    values = _floats(ctx, "nodes_values")
    values = np.zeros(len(tree_ids)) if values is None else values
    trues = ctx.ints("nodes_truenodeids", [])
    falses = ctx.ints("nodes_falsenodeids", [])
    missing = ctx.ints("nodes_missing_value_tracks_true", None) or [0] * len(tree_ids)
    _same_length(ctx, "nodes_*", treeids=tree_ids, nodeids=node_ids, featureids=features,
                 modes=modes, values=values, truenodeids=trues, falsenodeids=falses,
                 missing_value_tracks_true=missing)
    if not tree_ids:
        raise ctx.invalid("the ensemble has no nodes")
    forest = Forest()
    where: dict[tuple[int, int], int] = {}
    first: set[int] = set()
    for k, (t, n) in enumerate(zip(tree_ids, node_ids)):
        if (t, n) in where:
            raise ctx.invalid(f"tree {t} node {n} is defined twice")
        mode = modes[k]
        if mode != "LEAF" and mode not in MODES[:6]:
            raise ctx.invalid(f"tree {t} node {n}: unknown mode {mode!r}")
        where[t, n] = forest.add(t, f"tree {t} node {n}", mode, float(values[k]), features[k],
                                 missing[k])
        if t not in first:  # a tree's root is its first node, as onnx.reference reads it
            first.add(t)
            forest.roots.append(where[t, n])
    for k, (t, n) in enumerate(zip(tree_ids, node_ids)):
        if modes[k] == "LEAF":
            continue
        for child, side in ((trues[k], forest.true), (falses[k], forest.false)):
            if (t, child) not in where:
                raise ctx.invalid(f"tree {t} node {n}: its child {child} is no node of tree {t}")
            side[k] = where[t, child]
    w_trees = ctx.ints(f"{prefix}_treeids", [])
    w_nodes = ctx.ints(f"{prefix}_nodeids", [])
    w_ids = ctx.ints(f"{prefix}_ids", [])
    w_values = _floats(ctx, f"{prefix}_weights")
    w_values = np.zeros(0) if w_values is None else w_values
    _same_length(ctx, f"{prefix}_*", treeids=w_trees, nodeids=w_nodes, ids=w_ids,
                 weights=w_values)
    for t, n, i, w in zip(w_trees, w_nodes, w_ids, w_values):
        at = where.get((t, n))
        if at is None or forest.mode[at] != "LEAF":
            raise ctx.invalid(f"a weight for tree {t} node {n}, which is no leaf")
        if i < 0:
            raise ctx.invalid(f"tree {t} node {n}: negative {prefix} id {i}")
        forest.weights.append((at, i, float(w)))
    columns = 1 + max((i for _, i, _ in forest.weights), default=0)
    return forest, columns


def read_opset5(ctx: NodeContext) -> Forest:
    """opset 5's TreeEnsemble: interior nodes, then one LEAF node per leaf_* entry."""
    features = ctx.ints("nodes_featureids")
    splits = np.asarray(ctx.attr("nodes_splits"), dtype=np.float64).reshape(-1)
    modes = np.asarray(ctx.attr("nodes_modes"), dtype=np.int64).reshape(-1)
    trues, falses = ctx.ints("nodes_truenodeids"), ctx.ints("nodes_falsenodeids")
    true_leaf = ctx.ints("nodes_trueleafs")
    false_leaf = ctx.ints("nodes_falseleafs")
    missing = ctx.ints("nodes_missing_value_tracks_true", None) or [0] * len(features)
    _same_length(ctx, "nodes_*", featureids=features, splits=splits, modes=modes,
                 truenodeids=trues, falsenodeids=falses, trueleafs=true_leaf,
                 falseleafs=false_leaf, missing_value_tracks_true=missing)
    targets = ctx.ints("leaf_targetids")
    weights = np.asarray(ctx.attr("leaf_weights"), dtype=np.float64).reshape(-1)
    _same_length(ctx, "leaf_*", targetids=targets, weights=weights)
    members = ctx.attr("membership_values", None)
    sets = _membership_sets(members)
    forest = Forest()
    member_index = 0
    for k, m in enumerate(modes):
        if not 0 <= m < len(MODES):
            raise ctx.invalid(f"node {k}: unknown mode {m}")
        forest.add(-1, f"node {k}", MODES[m], float(splits[k]), features[k], missing[k])
        if MODES[m] == "BRANCH_MEMBER":
            if member_index >= len(sets):
                raise ctx.invalid(f"node {k}: no membership_values set for it")
            forest.members[k] = sets[member_index]
            member_index += 1
    if member_index != len(sets):
        raise ctx.invalid(f"{len(sets)} membership_values sets for {member_index} "
                          "BRANCH_MEMBER nodes")
    inner = len(modes)
    for j, (t, w) in enumerate(zip(targets, weights)):
        at = forest.add(-1, f"leaf {j}", "LEAF", 0.0, 0, 0)
        forest.weights.append((at, t, float(w)))
    for k in range(inner):
        for child, leaf, side in ((trues[k], true_leaf[k], forest.true),
                                  (falses[k], false_leaf[k], forest.false)):
            limit = len(targets) if leaf else inner
            if not 0 <= child < limit:
                raise ctx.invalid(f"node {k}: its {'leaf' if leaf else 'node'} {child} is "
                                  f"outside [0, {limit})")
            side[k] = inner + child if leaf else child
    for r in ctx.ints("tree_roots"):
        if not 0 <= r < inner:
            raise ctx.invalid(f"tree root {r} is outside the {inner} nodes")
        forest.roots.append(r)
    for i, r in enumerate(forest.roots):
        forest.tree[r] = i
    return forest


def _membership_sets(values) -> list[list[float]]:
    if values is None:
        return []
    sets, current = [], []
    for v in np.asarray(values, dtype=np.float64).reshape(-1):
        if np.isnan(v):
            sets.append(current)
            current = []
        else:
            current.append(float(v))
    return sets


def _at_most(t: float, ty=_F32) -> float:
    """The largest value of type `ty` <= t (x <= t exactly when x <= it)."""
    f = ty(t)
    return float(np.nextafter(f, ty(-np.inf)) if float(f) > t else f)


def _at_least(t: float, ty=_F32) -> float:
    f = ty(t)
    return float(np.nextafter(f, ty(np.inf)) if float(f) < t else f)


def _interval(mode: str, t: float, ty=_F32) -> tuple[float, float, bool]:
    """(lower, upper, swapped): the x of type `ty` (f32, or f64 for a double input) with
    `x mode t` are those in [lower, upper], or outside it when swapped. NaN thresholds
    compare false."""
    down, up = ty(-np.inf), ty(np.inf)
    if np.isnan(t):
        return (np.inf, -np.inf, mode == "BRANCH_NEQ")
    if mode == "BRANCH_LEQ":
        return (-np.inf, _at_most(t, ty), False)
    if mode == "BRANCH_LT":
        hi = _at_most(t, ty)
        hi = float(np.nextafter(ty(hi), down)) if hi == t else hi
        return (-np.inf, hi, False) if t > -np.inf else (np.inf, -np.inf, False)
    if mode == "BRANCH_GTE":
        return (_at_least(t, ty), np.inf, False)
    if mode == "BRANCH_GT":
        lo = _at_least(t, ty)
        lo = float(np.nextafter(ty(lo), up)) if lo == t else lo
        return (lo, np.inf, False) if t < np.inf else (np.inf, -np.inf, False)
    exact = float(ty(t)) == t
    lo, hi = (t, t) if exact else (np.inf, -np.inf)  # EQ / NEQ: no x equals t inexactly
    return (lo, hi, mode == "BRANCH_NEQ")


@dataclass
class Tables:
    features: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    children: np.ndarray
    nan_inside: np.ndarray
    roots: np.ndarray
    depths: np.ndarray
    leaf_weights: np.ndarray
    has_weight: np.ndarray


def canonical(ctx: NodeContext, forest: Forest, columns: int, width: int,
              dtype=np.float32) -> Tables:
    """The canonical tables of `forest` (module docstring); `width` is the input's F,
    `dtype` its type (float32, or float64: bounds and weights in double)."""
    _expand_members(forest)
    n = len(forest.mode)
    ty = np.dtype(dtype).type
    features = np.zeros(n, np.int32)
    lower = np.full(n, -np.inf, dtype)
    upper = np.full(n, np.inf, dtype)
    children = np.repeat(np.arange(n, dtype=np.int32), 2)
    nan_inside = np.zeros(n, np.int32)
    for k in range(n):
        if forest.mode[k] == "LEAF":
            continue
        f = forest.feature[k]
        if not 0 <= f < width:
            raise ctx.invalid(f"{forest.names[k]}: feature {f} is outside the input's "
                              f"{width} features")
        lo, hi, swapped = _interval(forest.mode[k], forest.threshold[k], ty)
        features[k], lower[k], upper[k] = f, lo, hi
        inside, outside = forest.true[k], forest.false[k]
        if swapped:
            inside, outside = outside, inside
        children[2 * k], children[2 * k + 1] = inside, outside
        # a NaN is in no interval: it goes outside, which is the false branch unless swapped
        nan_inside[k] = int(bool(forest.missing_true[k]) and not swapped)
    depths = np.array([_depth(ctx, forest, r) for r in forest.roots], np.int32)
    weights = np.zeros((n, columns), dtype)
    has = np.zeros((n, columns), np.int32)
    for at, col, w in forest.weights:
        if not 0 <= col < columns:
            raise ctx.invalid(f"{forest.names[at]}: target {col} is outside [0, {columns})")
        weights[at, col] = ty(weights[at, col] + ty(w))
        has[at, col] = 1
    return Tables(features, lower, upper, children, nan_inside,
                  np.asarray(forest.roots, np.int32), depths, weights, has)


def _expand_members(forest: Forest) -> None:
    """A BRANCH_MEMBER node with set {a, b, ...} becomes EQ a, whose false branch is EQ b,
    ...: the same branch for every input, NaN included (in no set, tracked alike)."""
    for k, values in forest.members.items():
        if not values:
            forest.mode[k], forest.threshold[k] = "BRANCH_EQ", float("nan")
            continue
        last_false = forest.false[k]
        forest.mode[k], forest.threshold[k] = "BRANCH_EQ", values[0]
        previous = k
        for v in values[1:]:
            at = forest.add(forest.tree[k], forest.names[k], "BRANCH_EQ", v,
                            forest.feature[k], forest.missing_true[k])
            forest.true[at] = forest.true[k]
            forest.false[previous] = at
            previous = at
        forest.false[previous] = last_false


def _depth(ctx: NodeContext, forest: Forest, root: int) -> int:
    """Steps from `root` to its deepest leaf, level by level; a walk longer than the
    ensemble's node count is a cycle."""
    frontier, depth = {root}, 0
    limit = len(forest.mode)
    while True:
        inner = [k for k in frontier if forest.mode[k] != "LEAF"]
        if not inner:
            return depth
        depth += 1
        if depth > limit:
            raise ctx.invalid(f"{forest.names[inner[0]]} is on a cycle")
        frontier = {c for k in inner for c in (forest.true[k], forest.false[k])}
