"""Data movement, gather and attention kernels with symbolic dimensions, end to end.

Each case is graph IR written once: compiled with symbolic types (`tensor<1x?x4xf32,
#graph.dims<["seq"]>>`) it runs at every size, compiled with the sizes filled in it is the
static kernel; both are compared with numpy at sizes 1, 7, 64 and odd ones (the attention
cases also at sizes that leave partial query and key blocks).
"""

from __future__ import annotations

import numpy as np
import pytest

from onnxc.dialects.size_text import parse_dim
from onnxc.errors import InvalidInputError
from tests.ir_helpers import compile_graph

rng = np.random.default_rng(7)

SEQS = (1, 7, 64, 13)


def tensor(shape, element="f32", env=None) -> str:
    """The tensor type of `shape` (ints and polynomials as text): symbolic when `env` is
    None, else with each polynomial's value for the symbol values in `env`."""
    if env is not None:
        shape = [d if isinstance(d, int) else parse_dim(d).evaluate(env) for d in shape]
    symbols = [d for d in shape if not isinstance(d, int)]
    dims = "".join(f"{'?' if isinstance(d, str) else d}x" for d in shape)
    encoding = ", #graph.dims<[" + ", ".join(f'"{s}"' for s in symbols) + "]>" if symbols else ""
    return f"tensor<{dims}{element}{encoding}>"


def function(args, body: str, results) -> str:
    """`func.func @main` with `args` / `results` as (name, type) pairs."""
    sig = ", ".join(f"%{n}: {t}" for n, t in args)
    outs = ", ".join(t for _, t in results)
    names = ", ".join(f"%{n}" for n, _ in results)
    return f"func.func @main({sig}) -> ({outs}) {{\n{body}\n  func.return {names} : {outs}\n}}\n"


def run_both(ir, envs, inputs, reference, exact=True, rtol=1e-5, atol=1e-6):
    """Compile `ir(t)` (t: the tensor-type function) symbolic once and static per symbol
    values in `envs`; both must give `reference(*inputs(env))` for each."""
    symbolic = compile_graph(ir(lambda shape, element="f32": tensor(shape, element)))
    for env in envs:
        arrays = inputs(env)
        want = reference(*arrays)
        want = want if isinstance(want, tuple) else (want,)
        static = compile_graph(ir(
            lambda shape, element="f32", env=env: tensor(shape, element, env)))
        for model, kind in ((symbolic, "symbolic"), (static, "static")):
            got = model(*arrays)
            assert len(got) == len(want)
            for g, w in zip(got, want):
                assert g.shape == w.shape, (kind, env)
                if exact:
                    np.testing.assert_array_equal(g, w, err_msg=f"{kind} {env}")
                else:
                    np.testing.assert_allclose(g, w, rtol=rtol, atol=atol,
                                               err_msg=f"{kind} {env}")


def floats(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def seqs(*extra):
    return [{"seq": s} for s in (*SEQS, *extra)]


# --------------------------------------------------------------------------- transpose


@pytest.mark.parametrize("shape, perm", [
    ((1, "seq", 3, 4), (0, 2, 1, 3)),  # [1, seq, H, D] -> [1, H, seq, D]
    ((1, 3, "seq", 4), (0, 1, 3, 2)),  # [1, H, seq, D] -> [1, H, D, seq]
    (("seq", 5), (1, 0)),
    ((2, "seq", 3), (2, 0, 1)),
])
def test_transpose(shape, perm):
    out = tuple(shape[p] for p in perm)

    def ir(t):
        p = ", ".join(map(str, perm))
        return function([("x", t(shape))], f"  %r = graph.transpose(%x) {{perm = array<i64: {p}>}}"
                        f" : ({t(shape)}) -> {t(out)}", [("r", t(out))])

    def inputs(env):
        return (floats(*(d if isinstance(d, int) else env["seq"] for d in shape)),)

    run_both(ir, seqs(), inputs, lambda x: x.transpose(perm))


def test_transpose_int64_then_reshape():
    """A reshape of a symbolic buffer is the same buffer (a view); the output copy of it is
    sized at run time."""
    def ir(t):
        x, y, z = t((1, "seq", 6), "i64"), t((1, 6, "seq"), "i64"), t((6, "seq"), "i64")
        return function([("x", x)], f"""  %y = graph.transpose(%x) {{perm = array<i64: 0, 2, 1>}} : ({x}) -> {y}
  %r = graph.reshape(%y) {{shape = array<i64: 6, -1>}} : ({y}) -> {z}""", [("r", z)])

    run_both(ir, seqs(), lambda env: (rng.integers(-9, 9, (1, env["seq"], 6)),),
             lambda x: x.transpose(0, 2, 1).reshape(6, -1))


# --------------------------------------------------------------------------- concat / split


def kv_envs():
    return [{"past": p, "seq": s} for p, s in ((1, 1), (3, 7), (64, 1), (1, 64), (9, 13))]


def test_concat_kv_cache():
    """[1, H, past, D] ++ [1, H, seq, D] -> [1, H, past+seq, D], along the symbolic axis."""
    def ir(t):
        a, b, c = t((1, 2, "past", 4)), t((1, 2, "seq", 4)), t((1, 2, "past+seq", 4))
        return function([("a", a), ("b", b)],
                        f"  %r = graph.concat(%a, %b) {{axis = 2 : i64}} : ({a}, {b}) -> {c}",
                        [("r", c)])

    run_both(ir, kv_envs(), lambda env: (floats(1, 2, env["past"], 4), floats(1, 2, env["seq"], 4)),
             lambda a, b: np.concatenate([a, b], axis=2))


def test_concat_static_and_symbolic_parts():
    """A static block before a symbolic one along the symbolic axis, and three parts along a
    static axis of symbolic tensors."""
    def ir(t):
        a, b, c = t((1, 3, 4)), t((1, "seq", 4)), t((1, "seq+3", 4))
        x, y = t((1, "seq", 2)), t((1, "seq", 10))
        return function([("a", a), ("b", b), ("x", x)], f"""  %r = graph.concat(%a, %b) {{axis = 1 : i64}} : ({a}, {b}) -> {c}
  %s = graph.concat(%b, %x, %b) {{axis = -1 : i64}} : ({b}, {x}, {b}) -> {y}""",
                        [("r", c), ("s", y)])

    run_both(ir, seqs(), lambda env: (floats(1, 3, 4), floats(1, env["seq"], 4),
                                      floats(1, env["seq"], 2)),
             lambda a, b, x: (np.concatenate([a, b], 1), np.concatenate([b, x, b], -1)))


def test_split_static_and_symbolic_axes():
    """QKV's split along a static axis of a [1, seq, 12] tensor, and a split of a symbolic
    axis into its parts (past + seq -> seq, past)."""
    def ir(t):
        x, part = t((1, "seq", 12)), t((1, "seq", 4))
        a, b, c = t((1, "past", 3)), t((1, "seq", 3)), t((1, "past+seq", 3))
        return function([("x", x), ("a", a), ("b", b)], f"""  %q, %k, %v = graph.split(%x) {{axis = 2 : i64}} : ({x}) -> ({part}, {part}, {part})
  %c = graph.concat(%a, %b) {{axis = 1 : i64}} : ({a}, {b}) -> {c}
  %s, %p = graph.split(%c) {{axis = 1 : i64}} : ({c}) -> ({b}, {a})""",
                        [("q", part), ("k", part), ("v", part), ("s", b), ("p", a)])

    def reference(x, a, b):
        c = np.concatenate([a, b], 1)
        return (*np.split(x, 3, axis=2), c[:, :b.shape[1]], c[:, b.shape[1]:])

    run_both(ir, kv_envs(), lambda env: (floats(1, env["seq"], 12), floats(1, env["past"], 3),
                                         floats(1, env["seq"], 3)), reference)


# --------------------------------------------------------------------------- slice


SLICES = {
    # name: (input shape, starts, ends, axes, steps, output shape, numpy index)
    "last_row": ((1, "seq", 8), [-1], [2**63 - 1], [1], [1], (1, 1, 8),
                 np.s_[:, -1:]),
    "first_row": ((1, "seq", 8), [0], [1], [1], [1], (1, 1, 8), np.s_[:, :1]),
    "reversed": ((2, "seq", 3), [-1], [-(2**63)], [1], [-1], (2, "seq", 3), np.s_[:, ::-1]),
    "static_axis_step": ((1, "seq", 8), [1], [7], [2], [2], (1, "seq", 3), np.s_[:, :, 1:7:2]),
    "last_column": (("seq", "seq"), [-1], [2**63 - 1], [1], [1], ("seq", 1), np.s_[:, -1:]),
    "both_axes": (("seq", 6), [-1, 5], [2**63 - 1, 0], [0, 1], [1, -2], (1, 3),
                  np.s_[-1:, 5:0:-2]),
}


@pytest.mark.parametrize("case", SLICES.values(), ids=SLICES.keys())
def test_slice(case):
    shape, starts, ends, axes, steps, out, index = case

    def ir(t):
        props = ", ".join(f"{k} = array<i64: {', '.join(map(str, v))}>" for k, v in
                          (("starts", starts), ("ends", ends), ("axes", axes), ("steps", steps)))
        return function([("x", t(shape))],
                        f"  %r = graph.slice(%x) {{{props}}} : ({t(shape)}) -> {t(out)}",
                        [("r", t(out))])

    def inputs(env):
        return (floats(*(d if isinstance(d, int) else env["seq"] for d in shape)),)

    run_both(ir, seqs(), inputs, lambda x: x[index])


# --------------------------------------------------------------------------- gather


def embedding_ir(nonnegative=False):
    extra = ", nonnegative" if nonnegative else ""

    def ir(t):
        w, i, o = t((10, 4)), t((1, "seq"), "i64"), t((1, "seq", 4))
        return function([("w", w), ("i", i)], f"  %r = graph.gather(%w, %i) "
                        f"{{axis = 0 : i64{extra}}} : ({w}, {i}) -> {o}", [("r", o)])
    return ir


@pytest.mark.parametrize("nonnegative", [False, True], ids=["gather", "nonnegative"])
def test_gather_embedding(nonnegative):
    """An embedding lookup [V, C] with indices [1, seq] (negative ones allowed, or not: a
    Slice with run-time bounds); insert-runtime-checks puts a check before it, which the
    static Gather fuses. Long index rows run in parallel chunks."""
    low = 0 if nonnegative else -10
    w = floats(10, 4)
    run_both(embedding_ir(nonnegative), seqs(5000), lambda env: (
        w, rng.integers(low, 10, (1, env["seq"]))), lambda w, i: w[i])


@pytest.mark.parametrize("nonnegative", [False, True], ids=["gather", "nonnegative"])
@pytest.mark.parametrize("seq, bad", [(1, 0), (7, 6), (5000, 4097)])
def test_gather_refuses_bad_indices(nonnegative, seq, bad):
    """The check scans the run-time number of indices and reports the first bad one."""
    model = compile_graph(embedding_ir(nonnegative)(lambda s, e="f32": tensor(s, e)))
    indices = rng.integers(0, 10, (1, seq))
    indices[0, bad] = -11 if not nonnegative else -1
    with pytest.raises(InvalidInputError, match=f"at position {bad} is out of range"):
        model(floats(10, 4), indices)
    indices[0, bad] = 10
    with pytest.raises(InvalidInputError, match=f"value 10 at position {bad}"):
        model(floats(10, 4), indices)


def test_gather_of_symbolic_axis_with_constant_index():
    """Gather of the last row (constant index -1) of a symbolic axis: the kernel wraps and
    clamps it with the run-time size; and of columns of a symbolic tensor (a static axis)."""
    def ir(t):
        x, o, c = t((2, "seq", 4)), t((2, 4)), t((2, "seq", 2))
        i64 = "tensor<i64>"
        cols = "tensor<2xi64>"
        return function([("x", x)], f"""  %i = graph.constant {{value = dense<-1> : {i64}}} : {i64}
  %j = graph.constant {{value = dense<[3, 1]> : {cols}}} : {cols}
  %r = graph.gather(%x, %i) {{axis = 1 : i64}} : ({x}, {i64}) -> {o}
  %s = graph.gather(%x, %j) {{axis = 2 : i64}} : ({x}, {cols}) -> {c}""", [("r", o), ("s", c)])

    run_both(ir, seqs(), lambda env: (floats(2, env["seq"], 4),),
             lambda x: (x[:, -1], x[:, :, [3, 1]]))


# --------------------------------------------------------------------------- tile / index ops


def test_tile():
    """Repeats of static axes of a symbolic tensor, and of its symbolic axis (2*seq rows)."""
    def ir(t):
        x, y, z = t((1, "seq", 3)), t((2, "seq", 6)), t((1, "2*seq", 3))
        return function([("x", x)], f"""  %r = graph.tile(%x) {{repeats = array<i64: 2, 1, 2>}} : ({x}) -> {y}
  %s = graph.tile(%x) {{repeats = array<i64: 1, 2, 1>}} : ({x}) -> {z}""", [("r", y), ("s", z)])

    run_both(ir, seqs(), lambda env: (floats(1, env["seq"], 3),),
             lambda x: (np.tile(x, (2, 1, 2)), np.tile(x, (1, 2, 1))))


def test_range_trilu_cumsum():
    """Position ids (a Range of seq elements), a causal mask (Trilu of [seq, seq]) and running
    sums along a symbolic axis, contiguous and not."""
    def ir(t):
        m, r = t(("seq", "seq")), t(("seq",), "i64")
        a, b = t((2, "seq", 3)), t((2, "seq"))
        scalar = "tensor<i64>"
        return function([("m", m), ("a", a), ("b", b), ("s", scalar), ("d", scalar)], f"""  %p = graph.range(%s, %d) : ({scalar}, {scalar}) -> {r}
  %l = graph.trilu(%m) {{k = 0 : i64, upper = 0 : i64}} : ({m}) -> {m}
  %u = graph.trilu(%m) {{k = 1 : i64, upper = 1 : i64}} : ({m}) -> {m}
  %c = graph.cum_sum(%a) {{axis = 1 : i64, exclusive = 0 : i64, reverse = 1 : i64}} : ({a}) -> {a}
  %e = graph.cum_sum(%b) {{axis = 1 : i64, exclusive = 1 : i64, reverse = 0 : i64}} : ({b}) -> {b}""",
                        [("p", r), ("l", m), ("u", m), ("c", a), ("e", b)])

    def reference(m, a, b, s, d):
        n = m.shape[0]
        exclusive = np.concatenate([np.zeros((2, 1), np.float32), np.cumsum(b, 1)[:, :-1]], 1)
        return (s + d * np.arange(n), np.tril(m), np.triu(m, 1),
                np.flip(np.cumsum(np.flip(a, 1), 1), 1), exclusive)

    run_both(ir, seqs(), lambda env: (floats(env["seq"], env["seq"]), floats(2, env["seq"], 3),
                                      floats(2, env["seq"]), np.array(5), np.array(-3)),
             reference, exact=False)


# --------------------------------------------------------------------------- attention


def attention_reference(q, k, v, mask=None, scale=0.5, causal=None):
    """softmax(scale * Q K^T + mask [+ causal]) V with K/V head h // (Hq / Hkv)."""
    groups = q.shape[-3] // k.shape[-3]
    k, v = np.repeat(k, groups, axis=-3), np.repeat(v, groups, axis=-3)
    scores = (q.astype(np.float64) @ np.swapaxes(k, -1, -2)) * scale
    if mask is not None:
        scores = scores + mask
    if causal is not None:
        i, j = np.arange(q.shape[-2])[:, None], np.arange(k.shape[-2])[None, :]
        scores = np.where(j <= i + causal, scores, -np.inf)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    return ((p / p.sum(-1, keepdims=True)) @ v).astype(q.dtype)


def attention_line(t, q, k, v, o, mask=None, causal=None, element="f32",
                   names=("r", "q", "k", "v", "m")):
    """`%r = graph.attention(%q, %k, %v[, %m])` on values of the given shapes."""
    r, *operands = (f"%{n}" for n in names)
    types = [t(q, element), t(k, element), t(v, element)]
    if mask is not None:
        types.append(t(mask, element))
    props = f"scale = 5.000000e-01 : {element}"
    if causal is not None:
        props += f", causal_offset = {causal} : i64"
    return (f"  {r} = graph.attention({', '.join(operands[:len(types)])}) {{{props}}} : "
            f"({', '.join(types)}) -> {t(o, element)}")


PREFILL = [{"seq": s} for s in (1, 7, 64, 13, 37)]
"""Query counts: one lane, a partial block of one vector, full blocks only, a partial block
of two vectors, full blocks and a partial one (at 4 to 16 lanes per block)."""


@pytest.mark.parametrize("causal", [None, 0])
def test_attention_prefill(causal):
    """Self-attention over seq tokens, with the causal mask in the kernel or none."""
    h, d = 2, 8
    shape = (1, h, "seq", d)

    def ir(t):
        return function([("q", t(shape)), ("k", t(shape)), ("v", t(shape))],
                        attention_line(t, shape, shape, shape, shape, causal=causal),
                        [("r", t(shape))])

    run_both(ir, PREFILL, lambda env: tuple(floats(1, h, env["seq"], d) for _ in range(3)),
             lambda q, k, v: attention_reference(q, k, v, causal=causal),
             exact=False, rtol=1e-4, atol=1e-5)


KV_ENVS = {
    "seq": [{"past": p, "seq": s} for p, s in ((1, 1), (20, 1), (3, 7), (1, 64), (10, 13),
                                               (6, 37))],
    1: [{"past": p} for p in (1, 7, 64, 13)],
}


@pytest.mark.parametrize("seq", KV_ENVS.keys(), ids=["prefill", "decode"])
def test_attention_kv_cache_with_mask(seq):
    """Attention against a cache: K and V are the past [1, H, past, D] and the new
    [1, H, seq, D] concatenated (past+seq keys), the mask [1, 1, seq, past+seq] varies per
    query; key counts leave partial key blocks. Decode: one static query, past symbolic."""
    h, d, dv = 2, 8, 4
    total = "past+seq" if seq == "seq" else "past+1"

    def ir(t):
        pk, pv = (1, h, "past", d), (1, h, "past", dv)
        nk, nv = (1, h, seq, d), (1, h, seq, dv)
        k, v = (1, h, total, d), (1, h, total, dv)
        q, m, o = (1, h, seq, d), (1, 1, seq, total), (1, h, seq, dv)
        body = f"""  %k = graph.concat(%pk, %nk) {{axis = 2 : i64}} : ({t(pk)}, {t(nk)}) -> {t(k)}
  %v = graph.concat(%pv, %nv) {{axis = 2 : i64}} : ({t(pv)}, {t(nv)}) -> {t(v)}
{attention_line(t, q, k, v, o, mask=m)}"""
        return function([("q", t(q)), ("pk", t(pk)), ("nk", t(nk)), ("pv", t(pv)),
                         ("nv", t(nv)), ("m", t(m))], body, [("r", t(o))])

    def inputs(env):
        p, s = env["past"], env.get("seq", 1)
        mask = np.where(rng.random((1, 1, s, p + s)) < 0.2, -1e4, 0).astype(np.float32)
        return (floats(1, h, s, d), floats(1, h, p, d), floats(1, h, s, d),
                floats(1, h, p, dv), floats(1, h, s, dv), mask)

    def reference(q, pk, nk, pv, nv, mask):
        return attention_reference(q, np.concatenate([pk, nk], 2), np.concatenate([pv, nv], 2),
                                   mask)

    run_both(ir, KV_ENVS[seq], inputs, reference, exact=False, rtol=1e-4, atol=1e-5)


def test_attention_grouped_causal_with_static_past():
    """Grouped-query heads (4 query heads on 2 K/V heads), a cache of 3 static positions
    before seq new ones (seq+3 keys), the causal mask offset by them and a per-key mask."""
    d = 8

    def ir(t):
        q, o = (1, 4, "seq", d), (1, 4, "seq", d)
        pk, nk, k = (1, 2, 3, d), (1, 2, "seq", d), (1, 2, "seq+3", d)
        m = (1, 1, 1, "seq+3")
        body = f"""  %k = graph.concat(%pk, %nk) {{axis = 2 : i64}} : ({t(pk)}, {t(nk)}) -> {t(k)}
  %mf = graph.slice(%mm) {{starts = array<i64: 0>, ends = array<i64: 1>, axes = array<i64: 2>, steps = array<i64: 1>}} : ({t((1, 1, "seq", "seq+3"))}) -> {t(m)}
{attention_line(t, q, k, k, o, mask=m, causal=3, names=("r", "q", "k", "k", "mf"))}"""
        return function([("q", t(q)), ("pk", t(pk)), ("nk", t(nk)),
                         ("mm", t((1, 1, "seq", "seq+3")))], body, [("r", t(o))])

    def inputs(env):
        s = env["seq"]
        mask = np.where(rng.random((1, 1, s, s + 3)) < 0.2, -1e4, 0).astype(np.float32)
        return floats(1, 4, s, d), floats(1, 2, 3, d), floats(1, 2, s, d), mask

    def reference(q, pk, nk, mm):
        k = np.concatenate([pk, nk], 2)
        return attention_reference(q, k, k, mm[:, :, :1], causal=3)

    run_both(ir, PREFILL, inputs, reference, exact=False, rtol=1e-4, atol=1e-5)


def test_attention_scalar_kernel_f64_and_symbolic_batch():
    """The scalar kernel (f64) with a causal offset and a per-query mask, and the vector
    kernel over a symbolic batch dimension."""
    h, d = 2, 4

    def ir(t):
        q, m = (1, h, "seq", d), ("seq", "seq")
        b = ("batch", h, "seq", d)
        body = (attention_line(t, q, q, q, q, mask=m, causal=0, element="f64") + "\n" +
                attention_line(t, b, b, b, b, names=("s", "bq", "bk", "bv")))
        return function([("q", t(q, "f64")), ("k", t(q, "f64")), ("v", t(q, "f64")),
                         ("m", t(m, "f64")), ("bq", t(b)), ("bk", t(b)), ("bv", t(b))],
                        body, [("r", t(q, "f64")), ("s", t(b))])

    def inputs(env):
        s, n = env["seq"], env["batch"]
        f64 = [floats(1, h, s, d, dtype=np.float64) for _ in range(3)]
        return (*f64, floats(s, s, dtype=np.float64), *(floats(n, h, s, d) for _ in range(3)))

    def reference(q, k, v, m, bq, bk, bv):
        return attention_reference(q, k, v, m, causal=0), attention_reference(bq, bk, bv)

    envs = [{"seq": s, "batch": b} for s, b in ((1, 1), (7, 3), (64, 1), (13, 2))]
    run_both(ir, envs, inputs, reference, exact=False, rtol=1e-4, atol=1e-5)
