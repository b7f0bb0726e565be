"""Symbolic dimensions in the normalization, softmax, reduction, unary / logic elementwise,
scalar and fused elementwise kernels: each case is one graph-dialect function compiled once
with symbolic types (run at several sizes) and once with static types, both against numpy.

A shape is written with ints and symbol polynomials (`"seq"`, `"past+seq"`); `_type` makes
the tensor type, `#graph.dims` for the symbolic form.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence

import numpy as np
import pytest

from onnxc.dialects.size_text import parse_dim
from tests.ir_helpers import compile_graph

Shape = Sequence[int | str]

SIZES = (1, 7, 64, 13)
"""Symbol values every symbolic kernel runs at: one, small odd, a vector multiple, odd."""

STATIC_SIZES = (7, 13)
"""Symbol values the static form is compiled for (one compile each)."""

_NUMPY = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64,
          "i1": np.bool_, "ui8": np.uint8}


def _type(shape: Shape, element: str, values: dict[str, int] | None = None) -> str:
    """The tensor type of `shape`: symbolic, or with `values` substituted (static)."""
    if values is not None:
        shape = [_size(d, values) for d in shape]
    dims = "x".join("?" if isinstance(d, str) else str(d) for d in shape)
    text = f"{dims}x{element}" if shape else element
    symbols = [d for d in shape if isinstance(d, str)]
    if symbols:
        return f"tensor<{text}, #graph.dims<{json.dumps(symbols)}>>"
    return f"tensor<{text}>"


def _size(d: int | str, values: dict[str, int]) -> int:
    return d if isinstance(d, int) else parse_dim(d).evaluate(values)


def _random(shape: Sequence[int], element: str, rng: np.random.Generator) -> np.ndarray:
    dtype = _NUMPY[element]
    if element == "i1":
        return rng.random(shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        values = rng.integers(1, 50, shape) * rng.choice([-1, 1], shape)
        return values.astype(dtype) if dtype != np.uint8 else np.abs(values).astype(dtype)
    return (rng.standard_normal(shape) * 3).astype(dtype)


class Case:
    """A function `@main` of graph ops: `types` name -> (shape, element) fill `{name}` in
    `body`; `args` are the inputs, `results` the outputs; `reference` computes the outputs
    from the inputs in numpy."""

    def __init__(self, body: str, types: dict[str, tuple[Shape, str]], args: Sequence[str],
                 results: Sequence[str], reference: Callable, rtol: float = 1e-5,
                 atol: float = 1e-5, inputs: Callable | None = None):
        self.body, self.types, self.args, self.results = body, types, args, results
        self.reference, self.rtol, self.atol = reference, rtol, atol
        self.inputs = inputs
        """inputs(values, rng) -> arrays, where random ones do not fit"""

    def text(self, values: dict[str, int] | None) -> str:
        t = {name: _type(shape, el, values) for name, (shape, el) in self.types.items()}
        params = ", ".join(f"%{a}: {t[a]}" for a in self.args)
        outs = ", ".join(t[r] for r in self.results)
        ret = ", ".join(f"%{r}" for r in self.results)
        return (f"func.func @main({params}) -> ({outs}) {{\n{self.body.format(**t)}\n"
                f"  func.return {ret} : {outs}\n}}\n")

    def check(self, model, values: dict[str, int], seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        if self.inputs is not None:
            inputs = self.inputs(values, rng)
        else:
            inputs = [_random([_size(d, values) for d in self.types[a][0]],
                              self.types[a][1], rng) for a in self.args]
        expected = self.reference(*inputs)
        expected = expected if isinstance(expected, tuple) else (expected,)
        got = model(*inputs)
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert g.shape == np.shape(e), (g.shape, np.shape(e), values)
            if g.dtype == np.bool_ or np.issubdtype(g.dtype, np.integer):
                np.testing.assert_array_equal(g, e)
            else:
                np.testing.assert_allclose(g, e, rtol=self.rtol, atol=self.atol,
                                           err_msg=str(values))


def run(case: Case, sizes: Sequence[dict[str, int]] | None = None,
        static: Sequence[dict[str, int]] | None = None, num_threads: int = 1) -> None:
    symbols = sorted({s for shape, _ in case.types.values() for d in shape
                      if isinstance(d, str) for s in parse_dim(d).symbols()})
    sizes = sizes or [dict.fromkeys(symbols, n) for n in SIZES]
    static = static or [dict.fromkeys(symbols, n) for n in STATIC_SIZES]
    model = compile_graph(case.text(None), num_threads=num_threads)
    for k, values in enumerate(sizes):
        case.check(model, values, seed=k)
    for values in static:
        case.check(compile_graph(case.text(values)), values)


# --------------------------------------------------------------------------- references


def softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def layer_norm(x, scale, bias, axis: int, eps: float = 1e-5, centered: bool = True):
    axes = tuple(range(axis % x.ndim, x.ndim))
    mean = x.mean(axis=axes, keepdims=True) if centered else 0.0
    d = x - mean
    inv = 1.0 / np.sqrt((d * d).mean(axis=axes, keepdims=True) + eps)
    y = d * inv * scale + (bias if bias is not None else 0.0)
    return y.astype(x.dtype), mean, inv


_erf = np.vectorize(math.erf, otypes=[np.float64])


# --------------------------------------------------------------------------- softmax


def _softmax_case(shape: Shape, axis: int) -> Case:
    return Case("  %y = graph.softmax(%x) {{axis = " + str(axis) + " : i64}} : ({x}) -> {x}",
                {"x": (shape, "f32"), "y": (shape, "f32")}, ["x"], ["y"],
                lambda x: softmax(x, axis))


@pytest.mark.parametrize("shape, axis", [
    ((1, "seq", 37), -1),          # symbolic rows, static row
    ((2, "seq"), -1),              # symbolic softmax axis (last)
    (("seq", 6, 300), 1),          # symbolic rows, static strips of 256 + a remainder
    ((2, "seq", 3), 1),            # symbolic non-last axis, static columns
    ((3, 2, "seq"), 0),            # symbolic columns: run-time strips and remainder
])
def test_softmax(shape, axis):
    run(_softmax_case(shape, axis))


def test_softmax_symbolic_columns_strip_remainders():
    """Columns of 256 and more: full strips, with and without a remainder strip."""
    run(_softmax_case((2, 3, "seq"), 1),
        sizes=[{"seq": n} for n in (255, 256, 257, 600, 1)], static=[{"seq": 300}],
        num_threads=2)


def test_attention_scores_softmax():
    """Scores [1, H, seq, past+seq] masked by Where with a broadcast [1, 1, seq, past+seq]
    mask, then softmax over the symbolic last axis, on two threads."""
    s = (1, 2, "seq", "past+seq")
    m = (1, 1, "seq", "past+seq")
    body = ("  %f = graph.where(%m, %x, %c) : ({m}, {x}, {c}) -> {x}\n"
            "  %y = graph.softmax(%f) {{axis = -1 : i64}} : ({x}) -> {x}\n"
            "  %k2 = graph.relu(%k) : ({k}) -> {k}")
    case = Case(body, {"x": (s, "f32"), "m": (m, "i1"), "c": ((1,), "f32"),
                       "k": ((1, "past"), "f32")}, ["x", "m", "c", "k"], ["y", "k2"],
                lambda x, m, c, k: (softmax(np.where(m, x, c), -1), np.maximum(k, 0)))
    case.types["y"] = case.types["x"]
    case.types["k2"] = case.types["k"]
    sizes = [{"seq": q, "past": p} for q, p in ((1, 1), (7, 3), (64, 1), (13, 50))]
    run(case, sizes=sizes, static=[{"seq": 7, "past": 5}], num_threads=2)


# --------------------------------------------------------------------------- row norms


def _affine(kind: str, shape: Shape, axis: int, param: Shape) -> Case:
    types = {"x": (shape, "f32"), "s": (param, "f32"), "b": (param, "f32"),
             "y": (shape, "f32")}
    attrs = f"{{{{axis = {axis} : i64, epsilon = 1.000000e-05 : f32}}}}"
    if kind == "rms":
        body = f"  %y = graph.rms_normalization(%x, %s) {attrs} : ({{x}}, {{s}}) -> {{x}}"
        return Case(body, types, ["x", "s"], ["y"],
                    lambda x, s: layer_norm(x, s, None, axis, centered=False)[0], 1e-4, 1e-4)
    if kind == "layer":
        body = (f"  %y = graph.layer_normalization(%x, %s, %b) {attrs} : "
                "({x}, {s}, {b}) -> {x}")
        return Case(body, types, ["x", "s", "b"], ["y"],
                    lambda x, s, b: layer_norm(x, s, b, axis)[0], 1e-4, 1e-4)
    stat = (*shape[:axis % len(shape)], *([1] * (len(shape) - axis % len(shape))))
    types["m"] = types["i"] = (stat, "f32")
    body = (f"  %y, %m, %i = graph.layer_normalization_stats(%x, %s) {attrs} : "
            "({x}, {s}) -> ({x}, {m}, {i})")

    def reference(x, s):
        y, mean, inv = layer_norm(x, s, None, axis)
        return y, mean.astype(np.float32), inv.astype(np.float32)

    return Case(body, types, ["x", "s"], ["y", "m", "i"], reference, 1e-4, 1e-4)


@pytest.mark.parametrize("kind", ["layer", "rms", "stats"])
@pytest.mark.parametrize("shape, axis, param", [
    ((1, "seq", 64), -1, (64,)),           # symbolic rows (a transformer's hidden states)
    (("seq", 3, 5), 1, (5,)),              # symbolic rows, two normalized dims
    ((2, "seq", 8), 1, (8,)),              # a symbolic normalized dim (run-time 1 / n)
    ((2, "seq"), -1, ("seq",)),            # a symbolic scale
])
def test_row_normalizations(kind, shape, axis, param):
    run(_affine(kind, shape, axis, param))


# --------------------------------------------------------------------------- reductions

_REDUCE = {"reduce_mean": np.mean, "reduce_sum": np.sum, "reduce_max": np.max,
           "reduce_min": np.min, "reduce_prod": np.prod}


def _reduce_case(op: str, shape: Shape, axes: tuple[int, ...], keepdims: bool,
                 element: str = "f32") -> Case:
    out = [1 if i in axes else d for i, d in enumerate(shape)]
    out = out if keepdims else [d for i, d in enumerate(shape) if i not in axes]
    listed = ", ".join(map(str, axes))
    attrs = f"{{{{axes = array<i64: {listed}>, keepdims = {int(keepdims)} : i64}}}}"
    body = f"  %y = graph.{op}(%x) {attrs} : ({{x}}) -> {{y}}"
    fn = _REDUCE[op]
    inputs = None
    if op == "reduce_prod":  # factors near 1: products stay finite

        def inputs(values, rng):
            size = [_size(d, values) for d in shape]
            return [rng.uniform(0.8, 1.25, size).astype(_NUMPY[element])]

    return Case(body, {"x": (shape, element), "y": (out, element)}, ["x"], ["y"],
                lambda x: fn(x, axis=axes, keepdims=keepdims).astype(x.dtype), 1e-4, 1e-4,
                inputs)


@pytest.mark.parametrize("op", ["reduce_mean", "reduce_sum", "reduce_max", "reduce_min"])
@pytest.mark.parametrize("shape, axes, keepdims", [
    ((1, "seq", 5), (2,), True),      # static axis, symbolic rows (LayerNorm's mean)
    ((2, "seq", 5), (1,), False),     # symbolic axis, kept inner rows
    ((2, "seq", 5), (1, 2), True),    # symbolic and static axes merged
    (("seq", 4), (0, 1), False),      # everything
])
def test_reduce(op, shape, axes, keepdims):
    run(_reduce_case(op, shape, axes, keepdims))


def test_reduce_integer_and_product():
    run(_reduce_case("reduce_max", (3, "seq"), (1,), False, "i32"))
    case = _reduce_case("reduce_prod", ("seq", 3), (0,), True)
    run(case, sizes=[{"seq": n} for n in (1, 7, 13)])


def test_reduce_large_parallel():
    """Symbolic work is threaded whatever its size (MIN_PARALLEL_ELEMENTS)."""
    run(_reduce_case("reduce_mean", ("seq", 768), (1,), True),
        sizes=[{"seq": n} for n in (1, 7, 64)], static=[{"seq": 64}], num_threads=2)


def test_log_softmax_composition():
    """LogSoftmax as the importer composes it: reduce_max, sub, exp, reduce_sum, log, sub,
    over a symbolic last axis."""
    x, r = ((1, "seq", "seq"), "f32"), ((1, "seq", 1), "f32")
    body = (
        "  %m = graph.reduce_max(%x) {{axes = array<i64: 2>, keepdims = 1 : i64}} : ({x}) -> {r}\n"
        "  %d = graph.sub(%x, %m) : ({x}, {r}) -> {x}\n"
        "  %e = graph.exp(%d) : ({x}) -> {x}\n"
        "  %s = graph.reduce_sum(%e) {{axes = array<i64: 2>, keepdims = 1 : i64}} : ({x}) -> {r}\n"
        "  %l = graph.log(%s) : ({r}) -> {r}\n"
        "  %y = graph.sub(%d, %l) : ({x}, {r}) -> {x}")

    def reference(x):
        d = x - x.max(axis=2, keepdims=True)
        return d - np.log(np.exp(d).sum(axis=2, keepdims=True))

    run(Case(body, {"x": x, "r": r, "y": x}, ["x"], ["y"], reference, 1e-4, 1e-4))


# --------------------------------------------------------------------------- elementwise


def _unary(op: str, reference, element: str = "f32", attrs: str = "",
           shape: Shape = (1, "seq", 9), out: str | None = None) -> Case:
    out = out or element
    body = f"  %y = graph.{op}(%x) {attrs} : ({{x}}) -> {{y}}"
    return Case(body, {"x": (shape, element), "y": (shape, out)}, ["x"], ["y"], reference,
                1e-5, 1e-5)


@pytest.mark.parametrize("case", [
    _unary("gelu", lambda x: (0.5 * x * (1 + _erf(x / np.sqrt(2)))).astype(np.float32),
           attrs='{{approximate = "none"}}'),
    _unary("gelu", lambda x: (0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi)
                                                     * (x + 0.044715 * x ** 3)))
                              ).astype(np.float32), attrs='{{approximate = "tanh"}}'),
    _unary("erf", lambda x: _erf(x).astype(np.float32)),
    _unary("sin", np.sin),
    _unary("floor", np.floor),
    _unary("sign", np.sign, element="i32"),
    _unary("softplus", lambda x: np.log1p(np.exp(x)).astype(np.float32)),
    _unary("add_scalar", lambda x: x + np.float32(1.5), attrs="{{scalar = 1.500000e+00 : f64}}"),
    _unary("mul_scalar", lambda x: x * 3, element="i64", attrs="{{scalar = 3.000000e+00 : f64}}"),
    _unary("is_nan", np.isnan, out="i1"),
    _unary("not", np.logical_not, element="i1"),
], ids=lambda c: c.body.split("graph.")[1].split("(")[0])
def test_unary(case):
    run(case)


def _binary(op: str, reference, a: Shape, b: Shape, out: Shape, element: str = "f32",
            result: str | None = None, attrs: str = "") -> Case:
    body = f"  %y = graph.{op}(%a, %b) {attrs} : ({{a}}, {{b}}) -> {{y}}"
    return Case(body, {"a": (a, element), "b": (b, element), "y": (out, result or element)},
                ["a", "b"], ["y"], reference)


@pytest.mark.parametrize("case", [
    _binary("less", np.less, (1, "seq", 8), (8,), (1, "seq", 8), result="i1"),
    _binary("equal", np.equal, ("seq", 1), (1, "seq"), ("seq", "seq"), "i32", "i1"),
    # (integer Mod and Div carry a run-time divisor check: not part of these kernels)
    _binary("mod", np.mod, (2, "seq"), (2, "seq"), (2, "seq"), attrs="{{fmod = 0 : i64}}"),
    _binary("mod", np.fmod, ("seq", 3), (3,), ("seq", 3), attrs="{{fmod = 1 : i64}}"),
    _binary("and", np.logical_and, ("seq", 5), ("seq", 1), ("seq", 5), "i1"),
    _binary("bitwise_xor", np.bitwise_xor, (3, "seq"), (3, "seq"), (3, "seq"), "i32"),
    _binary("prelu", lambda x, s: np.where(x < 0, x * s, x), (1, "seq", 6), (6,),
            (1, "seq", 6)),
], ids=lambda c: c.body.split("graph.")[1].split("(")[0])
def test_binary(case):
    run(case)


def test_where_broadcast_mask():
    """Where with a causal mask [1, 1, seq, seq] over scores [1, 3, seq, seq]."""
    s, m = (1, 3, "seq", "seq"), (1, 1, "seq", "seq")
    body = "  %y = graph.where(%m, %x, %f) : ({m}, {x}, {f}) -> {x}"
    case = Case(body, {"m": (m, "i1"), "x": (s, "f32"), "f": ((1,), "f32"), "y": (s, "f32")},
                ["m", "x", "f"], ["y"], np.where)
    run(case)


def test_fused_elementwise_and_weighted_sum():
    x, b = ((1, "seq", 4, 3), "f32"), ((1, 1, 3), "f32")
    body = ("  %r = graph.fused_elementwise(%x, %b) : ({x}, {b}) -> {x} {{\n"
            "  ^bb0(%p: f32, %q: f32):\n"
            "    %t = arith.addf %p, %q : f32\n"
            "    %z = arith.constant 0.000000e+00 : f32\n"
            "    %u = arith.maximumf %t, %z : f32\n"
            "    graph.yield %u : f32\n"
            "  }}\n"
            "  %w = graph.weighted_sum(%r, %x, %b) {{coefficients = array<f64: 5.000000e-01, "
            "-1.000000e+00, 2.000000e+00>}} : ({x}, {x}, {b}) -> {x}")

    def reference(x, b):
        r = np.maximum(x + b, 0)
        return r, 0.5 * r - x + 2 * b

    run(Case(body, {"x": x, "b": b, "r": x, "w": x}, ["x", "b"], ["r", "w"], reference))


# --------------------------------------------------------------------------- channel ops


def test_batch_normalization_lrn_channel_shuffle():
    x = ((1, 4, "seq", 3), "f32")
    body = (
        "  %n = graph.batch_normalization(%x, %p, %p, %q, %q) {{epsilon = 1.000000e-05 : f32}}"
        " : ({x}, {p}, {p}, {p}, {p}) -> {x}\n"
        "  %l = graph.lrn(%x) {{size = 3 : i64, alpha = 1.000000e-04 : f32, "
        "beta = 7.500000e-01 : f32, bias = 1.000000e+00 : f32}} : ({x}) -> {x}\n"
        "  %c = graph.channel_shuffle(%x) {{group = 2 : i64}} : ({x}) -> {x}")

    def reference(x, p, q):
        c = lambda v: v.reshape(1, 4, 1, 1)
        n = (x - c(q)) * (c(p) / np.sqrt(c(q) + 1e-5)) + c(p)
        sq = np.pad(x * x, ((0, 0), (1, 1), (0, 0), (0, 0)))
        window = sq[:, :-2] + sq[:, 1:-1] + sq[:, 2:]
        lrn = x / (1.0 + 1e-4 / 3 * window) ** 0.75
        shuffled = x.reshape(1, 2, 2, -1, 3).transpose(0, 2, 1, 3, 4).reshape(x.shape)
        return n.astype(np.float32), lrn.astype(np.float32), shuffled

    def inputs(values, rng):  # variances (and means: the same operand) positive
        xs = (rng.standard_normal((1, 4, values["seq"], 3)) * 3).astype(np.float32)
        p = rng.standard_normal(4).astype(np.float32)
        q = (np.abs(rng.standard_normal(4)) + 0.5).astype(np.float32)
        return [xs, p, q]

    run(Case(body, {"x": x, "p": ((4,), "f32"), "q": ((4,), "f32"), "n": x, "l": x, "c": x},
             ["x", "p", "q"], ["n", "l", "c"], reference, 1e-4, 1e-4, inputs))
