"""attention-operand-views and graph.as_strided.

- The view algebra (`restride`, `compose`, the steps) against numpy: a view it returns reads
  exactly the elements numpy's reshape / transpose / indexing give.
- Attention blocks in the forms exporters write (torch's BERT: a fused QKV product split and
  transposed, Q and K scaled by D^-1/4, the result transposed back; ViT / Swin: Q, K, V
  stacked on an axis and gathered): after -O3 the attention reads strided views of the
  product and writes the transposed result itself (no transpose, split or gather kernel
  runs); the outputs match onnxruntime (rtol 1e-4, atol 1e-5, the fused-attention
  tolerance of tests/unit/ops/test_attention.py) and the compile without the pass (bit for
  bit where the folded factors are powers of two, else within 1e-6 of the output's
  magnitude: the scores are the same product of three numbers rounded in another order), at
  one and two threads, cold and from the compile cache.
- graph.as_strided read by a kernel that takes no strided operand is a copy (interpreted and
  native), and onnxc optimize exports it as a Gather that onnxruntime runs.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, i64
from xdsl.parser import Parser

import onnxc
from onnxc.dialects import graph
from onnxc.dialects.dense_data import as_strided_elements as as_strided
from onnxc.dialects.graph_shapes import row_major_strides
from onnxc.lowering.graph_to_loops.interpreter import run_single_op
from onnxc.passes import attention_views as av
from onnxc.passes.verify_numerics import check_pass_equivalence
from onnxc.pipeline import make_context

F32 = TensorProto.FLOAT


def _read(source: np.ndarray, view: av.View) -> np.ndarray:
    return as_strided(source, view.offset, view.sizes, view.strides)


# --------------------------------------------------------------------------- view algebra


@pytest.mark.parametrize("shape, perm, new", [
    ((2, 3, 4), (1, 0, 2), (3, 8)),        # merges the last two: expressible
    ((2, 3, 4), (1, 0, 2), (6, 4)),        # merges two transposed axes: a copy
    ((4, 6), (1, 0), (6, 2, 2)),           # splits a strided axis
    ((1, 5, 3, 8), (0, 2, 1, 3), (1, 3, 5, 2, 4)),
    ((3, 1, 4), (2, 1, 0), (4, 3)),        # unit axes have any stride
    ((2, 3), (0, 1), (1, 1, 6, 1)),
])
def test_restride_reads_what_numpy_reshape_gives(shape, perm, new):
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    t = av.View(0, tuple(shape[p] for p in perm), tuple(row_major_strides(shape)[p] for p in perm))
    view = av.restride(t, new)
    expected = np.transpose(x, perm).reshape(new)
    if view is None:  # numpy must copy too
        assert not np.shares_memory(np.transpose(x, perm).reshape(new), x)
    else:
        np.testing.assert_array_equal(_read(x, view), expected)


def test_compose_matches_indexing_the_view():
    """Every as_strided of a transposed, narrowed tensor that `compose` accepts reads what
    indexing that tensor's row-major copy gives; the BERT case (head views of one third of
    a fused QKV row) is accepted."""
    rng = np.random.default_rng(0)
    x = np.arange(8 * 48, dtype=np.float32).reshape(8, 48)
    part = av.View(16, (8, 16), (48, 1))  # K's columns of the fused product
    heads = av.View(0, (1, 2, 8, 8), (128, 8, 16, 1))  # [B, H, S, D] of the [S, 16] part
    composed = av.compose(part, heads)
    assert composed is not None
    np.testing.assert_array_equal(
        _read(x, composed), x[:, 16:32].reshape(1, 8, 2, 8).transpose(0, 2, 1, 3))
    accepted = 0
    for _ in range(300):
        shape = tuple(int(d) for d in rng.integers(1, 5, size=3))
        perm = tuple(rng.permutation(3))
        outer = av.View(0, tuple(shape[p] for p in perm),
                        tuple(row_major_strides(shape)[p] for p in perm))
        plain = np.transpose(np.arange(np.prod(shape), dtype=np.float32).reshape(shape), perm)
        sizes = tuple(int(d) for d in rng.integers(1, 4, size=2))
        strides = tuple(int(s) for s in rng.integers(0, 6, size=2))
        reach = sum((n - 1) * s for n, s in zip(sizes, strides))
        if reach >= plain.size:
            continue
        offset = int(rng.integers(0, plain.size - reach))
        inner = av.View(offset, sizes, strides)
        composed = av.compose(outer, inner)
        if composed is None:
            continue
        accepted += 1
        source = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
        np.testing.assert_array_equal(_read(source, composed), _read(plain.copy(), inner))
    assert accepted > 50


# --------------------------------------------------------------------------- models

S, H, D = 16, 2, 32
E = H * D


def _bert_block(scale_qk: float | None) -> helper.ModelProto:
    """One self-attention block as torch exports BERT: x @ W_qkv + b, Split, Reshape to
    [1, S, H, D], Transpose to [1, H, S, D] (K to [1, H, D, S]), scores scaled (by
    1/sqrt(D) after the product, or by `scale_qk` on Q and K before it: the SDPA form),
    + mask, Softmax, @ V, Transpose back, Reshape, output projection."""
    rng = np.random.default_rng(1)
    init = [numpy_helper.from_array((rng.standard_normal((E, 3 * E)) / 8).astype(np.float32), "w"),
            numpy_helper.from_array(rng.standard_normal(3 * E).astype(np.float32) / 4, "b"),
            numpy_helper.from_array((rng.standard_normal((E, E)) / 8).astype(np.float32), "wo"),
            numpy_helper.from_array(np.array([1, S, H, D], np.int64), "heads"),
            numpy_helper.from_array(np.array([1, S, E], np.int64), "merged"),
            numpy_helper.from_array(np.array([E, E, E], np.int64), "parts")]
    n = helper.make_node
    nodes = [n("MatMul", ["x", "w"], ["xw"]), n("Add", ["xw", "b"], ["qkv"]),
             n("Split", ["qkv", "parts"], ["q0", "k0", "v0"], axis=2)]
    for name in ("q", "k", "v"):
        nodes.append(n("Reshape", [f"{name}0", "heads"], [f"{name}1"]))
    source = {"q": "q1", "k": "k1"}
    if scale_qk is not None:
        init.append(numpy_helper.from_array(np.array(scale_qk, np.float32), "s"))
        nodes += [n("Mul", ["q1", "s"], ["q2"]), n("Mul", ["k1", "s"], ["k2"])]
        source = {"q": "q2", "k": "k2"}
    nodes += [n("Transpose", [source["q"]], ["qt"], perm=[0, 2, 1, 3]),
              n("Transpose", [source["k"]], ["kt"], perm=[0, 2, 3, 1]),
              n("Transpose", ["v1"], ["vt"], perm=[0, 2, 1, 3]),
              n("MatMul", ["qt", "kt"], ["scores"])]
    logits = "scores"
    if scale_qk is None:
        init.append(numpy_helper.from_array(np.array(np.sqrt(D), np.float32), "sqrt_d"))
        nodes.append(n("Div", ["scores", "sqrt_d"], ["scaled"]))
        logits = "scaled"
    nodes += [n("Add", [logits, "mask"], ["masked"]), n("Softmax", ["masked"], ["p"], axis=-1),
              n("MatMul", ["p", "vt"], ["o"]), n("Transpose", ["o"], ["ot"], perm=[0, 2, 1, 3]),
              n("Reshape", ["ot", "merged"], ["om"]), n("MatMul", ["om", "wo"], ["y"])]
    g = helper.make_graph(nodes, "bert_block",
                          [helper.make_tensor_value_info("x", F32, [1, S, E]),
                           helper.make_tensor_value_info("mask", F32, [1, 1, 1, S])],
                          [helper.make_tensor_value_info("y", F32, [1, S, E])], init)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


def _stacked_block() -> helper.ModelProto:
    """torchvision's nn.MultiheadAttention export (ViT, Swin): the QKV product reshaped to
    [S, 1, 3, E], stacked to [3, S, 1, E], Q/K/V gathered with scalar indices, each reshaped
    to [S, H, D] and transposed to [H, S, D], then [1, H, S, D]; Q scaled by D^-1/4 with a
    scalar and K with a [1, 1, 1, 1] constant (which adds the batch axis)."""
    rng = np.random.default_rng(2)
    s = D ** -0.25
    init = [numpy_helper.from_array((rng.standard_normal((E, 3 * E)) / 8).astype(np.float32), "w"),
            numpy_helper.from_array(np.array([S, 1, 3, E], np.int64), "split3"),
            numpy_helper.from_array(np.array([S, H, D], np.int64), "heads"),
            numpy_helper.from_array(np.array([1, H, S, D], np.int64), "batched"),
            numpy_helper.from_array(np.array(s, np.float32), "sq"),
            numpy_helper.from_array(np.full((1, 1, 1, 1), s, np.float32), "sk")]
    n = helper.make_node
    nodes = [n("MatMul", ["x", "w"], ["qkv"]), n("Reshape", ["qkv", "split3"], ["r"]),
             n("Transpose", ["r"], ["st"], perm=[2, 0, 1, 3])]
    for i, name in enumerate("qkv"):
        init.append(numpy_helper.from_array(np.array(i, np.int64), f"i{i}"))
        nodes += [n("Gather", ["st", f"i{i}"], [f"{name}0"], axis=0),
                  n("Reshape", [f"{name}0", "heads"], [f"{name}1"]),
                  n("Transpose", [f"{name}1"], [f"{name}2"], perm=[1, 0, 2])]
    nodes += [n("Reshape", ["q2", "batched"], ["q3"]), n("Mul", ["q3", "sq"], ["q4"]),
              n("Mul", ["k2", "sk"], ["k4"]), n("Reshape", ["v2", "batched"], ["v4"]),
              n("Transpose", ["k4"], ["kt"], perm=[0, 1, 3, 2]),
              n("MatMul", ["q4", "kt"], ["scores"]), n("Softmax", ["scores"], ["p"], axis=-1),
              n("MatMul", ["p", "v4"], ["y"])]
    g = helper.make_graph(nodes, "stacked_block",
                          [helper.make_tensor_value_info("x", F32, [S, E])],
                          [helper.make_tensor_value_info("y", F32, [1, H, S, D])], init)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


def _feeds(model) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    feeds = {}
    for vi in model.graph.input:
        shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        feeds[vi.name] = rng.standard_normal(shape).astype(np.float32)
    if "mask" in feeds:
        feeds["mask"] = np.where(np.arange(S) < S - 3, 0.0, -1e4).astype(np.float32).reshape(
            1, 1, 1, S)
    return feeds


def _without_views() -> tuple[str, ...]:
    from onnxc.passes.levels import level_passes

    return tuple(p for p in level_passes(3) if p != "attention-operand-views")


def _ops_before_attention(model) -> list[str]:
    module = onnxc.optimize(model, opt_level=3)
    names = []
    for op in module.walk():
        if isinstance(op, graph.AttentionOp):
            return names
        names.append(op.name)
    raise AssertionError("no graph.attention")


@pytest.mark.parametrize("block, exact", [
    (lambda: _bert_block(None), True),
    (lambda: _bert_block(D ** -0.25), False),
    (_stacked_block, False),
], ids=["bert", "bert_sdpa_scaled", "stacked_vit"])
@pytest.mark.parametrize("threads", [1, 2])
def test_attention_reads_the_projection_in_place(block, exact, threads, tmp_path):
    model = block()
    before = _ops_before_attention(model)
    assert "graph.as_strided" in before
    for copy in ("graph.transpose", "graph.split", "graph.gather", "graph.mul",
                 "graph.mul_scalar"):
        assert copy not in before, before
    feeds = _feeds(model)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    (expected,) = ort.InferenceSession(model.SerializeToString(), so,
                                       providers=["CPUExecutionProvider"]).run(None, feeds)
    cold = onnxc.compile(model, cache_dir=tmp_path, num_threads=threads)
    warm = onnxc.compile(model, cache_dir=tmp_path, num_threads=threads)
    unviewed = onnxc.compile(model, cache_dir=False, num_threads=threads,
                             pass_pipeline=_without_views())
    (y,) = cold.run(None, feeds)
    np.testing.assert_array_equal(warm.run(None, feeds)[0], y)
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-5)
    (reference,) = unviewed.run(None, feeds)
    profiled = onnxc.compile(model, cache_dir=False, num_threads=threads, profile=True)
    profiled.run(None, feeds)
    kernels = {row.op for row in profiled.profile().rows}
    assert "graph.attention" in kernels  # reading views, writing the transposed result:
    assert not kernels & {"graph.as_strided", "graph.transpose", "graph.split"}, kernels
    if exact:
        np.testing.assert_array_equal(y, reference)
    else:
        assert np.abs(y - reference).max() <= 1e-6 * np.abs(reference).max()


# --------------------------------------------------------------------------- lit cases

LIT = Path(__file__).parents[1] / "lit" / "passes" / "attention-operand-views.mlir"


@pytest.mark.parametrize("chunk", LIT.read_text().split("// -----"),
                         ids=lambda c: c.split("func.func @", 1)[1].split("(", 1)[0])
def test_lit_case_is_equivalent(chunk):
    """Each lit case evaluates (passes/evaluator.py) to the same outputs after the pass."""
    check_pass_equivalence(Parser(make_context(), chunk).parse_module(),
                           "attention-operand-views", distribution="normal")


# --------------------------------------------------------------------------- the op alone


@pytest.mark.parametrize("shape, offset, sizes, strides", [
    ((4, 6), 3, (3, 4), (1, 6)),
    ((2, 3, 8), 8, (2, 2, 4), (24, 2, 1)),
    ((5,), 0, (2, 3), (0, 1)),     # a broadcast (stride 0)
    ((3, 4), 0, (0, 4), (4, 1)),   # empty
])
def test_as_strided_copy_kernel(shape, offset, sizes, strides):
    """Read by no strided-operand kernel, graph.as_strided runs its copy kernel."""
    x = np.random.default_rng(4).standard_normal(shape).astype(np.float32)
    props = {"offset": IntegerAttr(offset, i64), "strides": DenseArrayBase.from_list(i64, strides)}
    (y,) = run_single_op(graph.AsStridedOp, [x], [(sizes, np.float32)], props)
    np.testing.assert_array_equal(y, as_strided(x, offset, sizes, strides))
    flat = x.reshape(-1)
    for index in itertools.product(*(range(n) for n in sizes)):
        assert y[index] == flat[offset + sum(i * s for i, s in zip(index, strides))]


def test_as_strided_exports_as_gather():
    """onnxc optimize writes the as_strided views of an attention as Gathers of the flat
    product; onnxruntime runs that model to the compiled outputs."""
    model = _bert_block(None)
    exported = onnxc.optimize(model, opt_level=3, as_onnx=True)
    assert any(node.op_type == "Gather" for node in exported.graph.node)
    feeds = _feeds(model)
    (expected,) = onnxc.compile(model, cache_dir=False).run(None, feeds)
    (y,) = ort.InferenceSession(exported.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-5)
