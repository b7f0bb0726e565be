"""MatMul and Gemm with symbolic dimensions (lowering/graph_to_loops/gemm.py,
gemm_microkernel.py) against numpy, and against the same IR compiled with static shapes.

The transformer projection `[1, seq, K] x W` runs the packed kernel with run-time row loops
and a run-time choice among the remainder tiles: sizes 1..MR + 1 hit every remainder, 64 and
100 several row blocks and chunks. Attention's products `[1, H, seq, D] x [1, H, D, L]` and
`[1, H, seq, L] x [1, H, L, D]` (L = seq or past+seq) run the batched kernel with run-time
bounds in every dimension. The other paths (a B computed at run time, symbolic batch
dimensions, narrow or 1-D B, f64) are covered too.
"""

from __future__ import annotations

import numpy as np
import pytest

from onnxc.lowering.graph_to_loops.gemm_tiles import KC, tiling_for
from onnxc.target import host_target
from tests.ir_helpers import compile_graph, const, parse_graph

RNG = np.random.default_rng(11)
MR = tiling_for(host_target()).mr
"""Rows of the host's register tile: the models here compile for the host."""
SIZES = sorted({1, 2, 3, 5, 7, 13, 64, 100, MR, MR + 1})
STATIC_SIZES = (1, 7, 64)


def T(shape, element: str = "f32") -> str:
    """The tensor type of `shape` (ints and symbol polynomials as strings)."""
    dims = [str(d) for d in shape if isinstance(d, str)]
    body = "".join(f"{'?' if isinstance(d, str) else d}x" for d in shape) + element
    return f"tensor<{body}, #graph.dims<{dims}>>".replace("'", '"') if dims else f"tensor<{body}>"


def _fn(args: list[tuple[str, tuple]], body: list[str], results: list[tuple[str, tuple]],
        element: str = "f32") -> str:
    sig = ", ".join(f"%{n}: {T(s, element)}" for n, s in args)
    outs = ", ".join(T(s, element) for _, s in results)
    return (f"func.func @main({sig}) -> ({outs}) {{\n" + "\n".join(body) + "\n"
            f"  func.return {', '.join('%' + n for n, _ in results)} : {outs}\n}}\n")


def _rand(*shape) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _close(got, want, k: int) -> None:
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.sqrt(k))


def _at(shape, sizes: dict[str, int]) -> tuple:
    """`shape` with its symbols evaluated (sums like `past+seq` included)."""
    def value(d):
        if isinstance(d, int):
            return d
        return sum(sizes[s.strip()] for s in d.split("+"))
    return tuple(value(d) for d in shape)


# --------------------------------------------------------------------------- projections

def _relu(x):
    return np.maximum(x, 0)


def _gelu(x):
    from math import erf
    return (0.5 * x * (1 + np.vectorize(erf)(x / np.sqrt(2)))).astype(np.float32)


PROJECTIONS = {
    # name: (A shape, K, N, activation)
    "seq_tail_panel": ((1, "seq", 40), 40, 37, "relu"),  # N tail with a partial vector
    "two_k_blocks": ((1, "seq", KC + 44), KC + 44, 70, None),
    "rows_2d_gelu": (("seq", 64), 64, 48, "gelu"),
    "batch_times_seq": ((2, "seq", 24), 24, 32, None),  # M = 2 * seq
}


def _projection(a_shape, k, n, act, w):
    out = (*a_shape[:-1], n)
    props = f' {{activation = "{act}"}}' if act else ""
    return _fn([("a", a_shape)], [
        const("w", w),
        f"  %y = graph.matmul(%a, %w){props} : ({T(a_shape)}, {T((k, n))}) -> {T(out)}",
    ], [("y", out)])


@pytest.mark.parametrize("name", PROJECTIONS)
def test_projection(name):
    """[.., seq, K] x constant W: symbolic and static kernels against numpy at every row
    remainder."""
    a_shape, k, n, act = PROJECTIONS[name]
    w = _rand(k, n)
    post = {"relu": _relu, "gelu": _gelu, None: lambda x: x}[act]
    model = compile_graph(_projection(a_shape, k, n, act, w))
    for seq in SIZES:
        x = _rand(*_at(a_shape, {"seq": seq}))
        (y,) = model(x)
        _close(y, post(x @ w), k)
    for seq in STATIC_SIZES:
        shape = _at(a_shape, {"seq": seq})
        static = compile_graph(_projection(shape, k, n, act, w))
        x = _rand(*shape)
        np.testing.assert_allclose(model(x)[0], static(x)[0], rtol=1e-6, atol=1e-6)


def test_projection_threads():
    """The chunked row-block loop with a run-time trip count, split over two threads."""
    a_shape, k, n = (1, "seq", 32), 32, 40
    w = _rand(k, n)
    model = compile_graph(_projection(a_shape, k, n, "relu", w), num_threads=2)
    for seq in (1, 5, 64, 200, 1000):
        x = _rand(1, seq, k)
        _close(model(x)[0], _relu(x @ w), k)


GEMMS = {
    # name: (transA, transB, C shape or None, alpha, beta, activation)
    "fc_bias_relu": (0, 1, (48,), 1.0, 1.0, "relu"),
    "trans_a": (1, 0, (1, 48), 0.5, 2.0, None),
    "rows_bias": (0, 0, ("seq", 48), 1.0, -1.0, "sigmoid"),
    "column_bias": (0, 1, ("seq", 1), -1.5, 0.25, "tanh"),
    "no_bias": (0, 0, None, 2.0, 1.0, "clip"),
}


def _gemm(m, k, n, ta, tb, c_shape, alpha, beta, act, w, c):
    a_shape = (k, m) if ta else (m, k)
    b_shape = (n, k) if tb else (k, n)
    args = [("a", a_shape)]
    body = [const("w", w)]
    operands, types = "%a, %w", f"{T(a_shape)}, {T(b_shape)}"
    if c_shape is not None:
        if all(isinstance(d, int) for d in c_shape):
            body.append(const("c", c))
        else:
            args.append(("c", c_shape))
        operands, types = operands + ", %c", types + f", {T(c_shape)}"
    props = f"alpha = {alpha} : f32, beta = {beta} : f32, transA = {ta} : i64, transB = {tb} : i64"
    if act == "clip":
        props += ', activation = "clip", activation_alpha = -0.5 : f32, activation_beta = 0.5 : f32'
    elif act:
        props += f', activation = "{act}"'
    body.append(f"  %y = graph.gemm({operands}) {{{props}}} : ({types}) -> {T((m, n))}")
    return _fn(args, body, [("y", (m, n))])


def _gemm_reference(x, w, c, ta, tb, alpha, beta, act):
    y = alpha * ((x.T if ta else x) @ (w.T if tb else w))
    if c is not None:
        y = y + beta * c
    if act == "relu":
        y = np.maximum(y, 0)
    elif act == "sigmoid":
        y = 1 / (1 + np.exp(-y))
    elif act == "tanh":
        y = np.tanh(y)
    elif act == "clip":
        y = np.clip(y, -0.5, 0.5)
    return y


@pytest.mark.parametrize("name", GEMMS)
def test_gemm(name):
    """Gemm with symbolic rows: transA/transB, alpha, the C shapes (static or with the
    rows' symbol) and the activation epilogue."""
    ta, tb, c_shape, alpha, beta, act = GEMMS[name]
    k, n = 45, 48
    w = _rand(n, k) if tb else _rand(k, n)
    c_static = _rand(*c_shape) if c_shape and all(isinstance(d, int) for d in c_shape) else None
    model = compile_graph(_gemm("seq", k, n, ta, tb, c_shape, alpha, beta, act, w, c_static))
    for seq in SIZES:
        x = _rand(k, seq) if ta else _rand(seq, k)
        feeds = [x]
        c = c_static
        if c_shape is not None and c_static is None:
            c = _rand(*_at(c_shape, {"seq": seq}))
            feeds.append(c)
        (y,) = model(*feeds)
        _close(y, _gemm_reference(x, w, c, ta, tb, alpha, beta, act), k)


def test_runtime_packed_b():
    """A B computed at run time: packed per k-block into the scratch, rows at run time."""
    k, n = KC + 20, 40
    text = _fn([("a", ("seq", k)), ("b", (k, n))], [
        f"  %y = graph.matmul(%a, %b) : ({T(('seq', k))}, {T((k, n))}) -> {T(('seq', n))}",
    ], [("y", ("seq", n))])
    model = compile_graph(text)
    for seq in SIZES:
        x, b = _rand(seq, k), _rand(k, n)
        _close(model(x, b)[0], x @ b, k)


# --------------------------------------------------------------------------- attention

H, D = 3, 16


def _attention(act: str | None = None):
    """scores = Q K^T, out = scores V; L = past+seq (`pl` only carries `past`)."""
    q, kt = (1, H, "seq", D), (1, H, D, "past+seq")
    s, v, o = (1, H, "seq", "past+seq"), (1, H, "past+seq", D), (1, H, "seq", D)
    props = f' {{activation = "{act}"}}' if act else ""
    return _fn([("q", q), ("kt", kt), ("v", v), ("pl", ("past",))], [
        f"  %s = graph.matmul(%q, %kt){props} : ({T(q)}, {T(kt)}) -> {T(s)}",
        f"  %o = graph.matmul(%s, %v) : ({T(s)}, {T(v)}) -> {T(o)}",
    ], [("s", s), ("o", o)])


@pytest.mark.parametrize("act", [None, "relu"])
def test_attention_products(act):
    model = compile_graph(_attention(act))
    for seq, past in [(1, 1), (1, 30), (2, 7), (7, 1), (7, 9), (13, 20), (64, 1), (3, 64)]:
        length = seq + past
        q, kt = _rand(1, H, seq, D), _rand(1, H, D, length)
        v = _rand(1, H, length, D)
        s, o = model(q, kt, v, np.zeros(past, np.float32))
        want = q @ kt if act is None else _relu(q @ kt)
        _close(s, want, D)
        _close(o, want @ v, length)


def test_attention_seq_by_seq():
    """[1, H, seq, D] x [1, H, D, seq] and the contraction over seq, static and symbolic."""
    def text(seq):
        q, kt, s = (1, H, seq, D), (1, H, D, seq), (1, H, seq, seq)
        return _fn([("q", q), ("kt", kt), ("v", q)], [
            f"  %s = graph.matmul(%q, %kt) : ({T(q)}, {T(kt)}) -> {T(s)}",
            f"  %o = graph.matmul(%s, %v) : ({T(s)}, {T(q)}) -> {T(q)}",
        ], [("o", q)])

    model = compile_graph(text("seq"), num_threads=2)
    for seq in SIZES:
        q, kt, v = _rand(1, H, seq, D), _rand(1, H, D, seq), _rand(1, H, seq, D)
        _close(model(q, kt, v)[0], (q @ kt) @ v, seq * D)
    for seq in STATIC_SIZES:
        static = compile_graph(text(seq))
        q, kt, v = _rand(1, H, seq, D), _rand(1, H, D, seq), _rand(1, H, seq, D)
        np.testing.assert_allclose(model(q, kt, v)[0], static(q, kt, v)[0], rtol=1e-5,
                                   atol=1e-5)


# --------------------------------------------------------------------------- other paths

OTHER = {
    # name: (A shape, B shape, output shape)
    "symbolic_batch": (("b", "seq", 12), ("b", 12, 20), ("b", "seq", 20)),
    "matrix_times_batch": (("seq", 6), (4, 6, 24), (4, "seq", 24)),
    "narrow_b": ((1, 2, "seq", 8), (1, 2, 8, 3), (1, 2, "seq", 3)),
    "vector_b": (("seq", 9), (9,), ("seq",)),
    "vector_a": ((9,), (9, "seq"), ("seq",)),
    "symbolic_k_2d": (("seq", "seq"), ("seq", 10), ("seq", 10)),
}


@pytest.mark.parametrize("name", OTHER)
def test_other_matmuls(name):
    a_shape, b_shape, out = OTHER[name]
    model = compile_graph(_fn([("a", a_shape), ("b", b_shape)], [
        f"  %y = graph.matmul(%a, %b) : ({T(a_shape)}, {T(b_shape)}) -> {T(out)}",
    ], [("y", out)]))
    for seq in (1, 2, 7, 19):
        sizes = {"seq": seq, "b": 3}
        a, b = _rand(*_at(a_shape, sizes)), _rand(*_at(b_shape, sizes))
        _close(model(a, b)[0], np.matmul(a, b), 20)


def test_f64_general_kernel():
    """A non-f32 product runs the general i-k-j kernel, with run-time bounds."""
    a_shape, out = (1, "seq", 5), (1, "seq", 7)
    line = (f"  %y = graph.matmul(%a, %b) : ({T(a_shape, 'f64')}, {T((5, 7), 'f64')}) -> "
            f"{T(out, 'f64')}")
    text = _fn([("a", a_shape), ("b", (5, 7))], [line], [("y", out)], element="f64")
    model = compile_graph(text)
    for seq in (1, 4, 9):
        a, b = RNG.standard_normal((1, seq, 5)), RNG.standard_normal((5, 7))
        np.testing.assert_allclose(model(a, b)[0], a @ b, rtol=1e-12)


@pytest.mark.parametrize("trans_b", [0, 1])
def test_f64_general_gemm(trans_b):
    """Gemm off the packed kernel (f64): i-k-j rows, or i-j-k dot products with transB."""
    b_shape = (7, 5) if trans_b else (5, 7)
    props = (f"alpha = 0.5 : f64, beta = 2.0 : f64, transA = 0 : i64, transB = {trans_b} : i64,"
             ' activation = "relu"')
    line = (f"  %y = graph.gemm(%a, %b, %c) {{{props}}} : ({T(('seq', 5), 'f64')}, "
            f"{T(b_shape, 'f64')}, {T(('seq', 7), 'f64')}) -> {T(('seq', 7), 'f64')}")
    text = _fn([("a", ("seq", 5)), ("b", b_shape), ("c", ("seq", 7))], [line],
               [("y", ("seq", 7))], element="f64")
    model = compile_graph(text)
    for seq in (1, 4, 9):
        a, b, c = (RNG.standard_normal(s) for s in ((seq, 5), b_shape, (seq, 7)))
        want = np.maximum(0.5 * (a @ (b.T if trans_b else b)) + 2.0 * c, 0)
        np.testing.assert_allclose(model(a, b, c)[0], want, rtol=1e-12, atol=1e-12)


def test_remainder_tiles_in_kernel():
    """The symbolic projection kernel holds one scf.if per possible row remainder, inside
    one more (the last parallel chunk runs the remainder), and the row loops take run-time
    bounds (no size of M in the kernel's memref types)."""
    from onnxc import pipeline

    a_shape, k, n = (1, "seq", 32), 32, 32
    module = parse_graph(_projection(a_shape, k, n, None, _rand(k, n)))
    pipeline.run_passes(pipeline.make_context(), module, ("convert-graph-to-loops",),
                        verify=False)
    text = str(module)
    kernel = text[text.index("@matmul_0"):]
    kernel = kernel[: kernel.index("func.return")]
    assert kernel.count("scf.if") == 1 + (MR - 1)
    assert "memref<?xf32>" in kernel
