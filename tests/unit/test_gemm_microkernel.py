"""The packed GEMM kernel (lowering/graph_to_loops/gemm_microkernel.py) against numpy.

Shapes are chosen to hit every compile-time edge: M not a multiple of MR, N not a multiple
of NR or of the vector width (a zero-padded tail panel), N wider than one N-stripe, K over
several k-blocks with a short last one; B constant (packed at compile time, alpha folded)
and B an input (packed at run time into arena scratch); Gemm's transA/transB, alpha, the
C shapes ONNX broadcasts, and the fused activation epilogue.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper
from xdsl.dialects import arith, scf, vector

import onnxc
from onnxc import pipeline
from onnxc.dialects import graph
from onnxc.dialects.onnxc_attributes import PARALLEL_ATTR
from onnxc.frontend import import_onnx
from onnxc.lowering.graph_to_loops import gemm_column_split, gemm_microkernel
from onnxc.lowering.graph_to_loops.gemm_column_split import MIN_GEMV_CHUNKS, MIN_SPLIT_PANELS
from onnxc.lowering.graph_to_loops.gemm_microkernel import MAX_SHARED_ROWS_FRACTION
from onnxc.lowering.graph_to_loops.gemm_tiles import (
    KC,
    NC,
    GemmShape,
    pack,
    tiling_for,
)
from onnxc.lowering.graph_to_loops.interpreter import run_single_op
from onnxc.target import host_target
from tests.single_op import graph_model

RNG = np.random.default_rng(7)


def _model(nodes, inputs, output_shape, initializers):
    return graph_model(nodes, {n: (np.float32, a.shape) for n, a in inputs},
                       {"y": (np.float32, output_shape)}, initializers=dict(initializers),
                       opset=17, ir_version=8)


def _run(model, feeds):
    return onnxc.compile(model).run(None, feeds)[0]


def _rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("m,k,n,const_b", [
    (20, 30, 40, False),   # runtime packing, N tail with a partial vector
    (5, 7, 9, True),       # smaller than one tile in every dimension
    (33, 300, 70, True),   # two k-blocks, M and N remainders
    (17, 2 * KC + 1, 100, False),  # three k-blocks (a looped middle one), last of depth 1
    (9, 40, NC + 48, True),  # a full N-stripe plus a tail stripe ending in a half panel
    (64, 64, 64, False),
])
def test_matmul(m, k, n, const_b):
    a, b = _rand(m, k), _rand(k, n)
    inits = [("b", b)] if const_b else []
    inputs = [("a", a)] + ([] if const_b else [("b", b)])
    model = _model([helper.make_node("MatMul", ["a", "b"], ["y"])], inputs, (m, n), inits)
    y = _run(model, dict(inputs))
    np.testing.assert_allclose(y, a @ b, rtol=1e-4, atol=1e-4 * np.sqrt(k))


@pytest.mark.parametrize("trans_a,trans_b,c_shape,const_b,alpha,beta,act", [
    (0, 1, (37,), True, 1.0, 1.0, "Relu"),        # a fully connected layer
    (1, 0, (1, 37), False, 0.5, 2.0, None),
    (1, 1, (19, 1), True, -1.5, 0.25, "Sigmoid"),
    (0, 0, (19, 37), False, 1.0, 1.0, "Clip"),
    (0, 1, (), False, 2.0, -1.0, None),
    (0, 0, None, True, 1.0, 1.0, "Tanh"),
])
def test_gemm(trans_a, trans_b, c_shape, const_b, alpha, beta, act):
    m, k, n = 19, 45, 37
    a = _rand(k, m) if trans_a else _rand(m, k)
    b = _rand(n, k) if trans_b else _rand(k, n)
    feeds, inits = {"a": a}, []
    if const_b:
        inits.append(("b", b))
    else:
        feeds["b"] = b
    names = ["a", "b"]
    if c_shape is not None:
        c = _rand(*c_shape)
        feeds["c"] = c
        names.append("c")
    out = "g" if act else "y"
    nodes = [helper.make_node("Gemm", names, [out], transA=trans_a, transB=trans_b,
                              alpha=alpha, beta=beta)]
    if act == "Clip":
        inits += [("lo", np.array(-0.5, np.float32)), ("hi", np.array(0.75, np.float32))]
        nodes.append(helper.make_node("Clip", ["g", "lo", "hi"], ["y"]))
    elif act:
        nodes.append(helper.make_node(act, ["g"], ["y"]))
    model = _model(nodes, list(feeds.items()), (m, n), inits)
    y = _run(model, feeds)

    expected = alpha * ((a.T if trans_a else a) @ (b.T if trans_b else b))
    if c_shape is not None:
        expected = expected + beta * feeds["c"]
    if act == "Relu":
        expected = np.maximum(expected, 0)
    elif act == "Sigmoid":
        expected = 1 / (1 + np.exp(-expected))
    elif act == "Clip":
        expected = np.clip(expected, -0.5, 0.75)
    elif act == "Tanh":
        expected = np.tanh(expected)
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("k,n,act", [
    (2 * KC, 20, "Tanh"),          # equal k-blocks: first and last tested at run time
    (2 * KC + 88, 40, "Sigmoid"),  # a shorter last block after the loop
    (3 * KC, 37, "Relu"),
])
def test_epilogue_of_the_last_of_looped_k_blocks(k, n, act):
    """Bias and activation apply once, in the last k-block, to full and tail panels."""
    m = 13
    a, b, c = _rand(m, k), _rand(k, n) / np.float32(np.sqrt(k)), _rand(n)
    nodes = [helper.make_node("Gemm", ["a", "b", "c"], ["g"]), helper.make_node(act, ["g"], ["y"])]
    y = _run(_model(nodes, [("a", a)], (m, n), [("b", b), ("c", c)]), {"a": a})
    z = a @ b + c
    expected = {"Tanh": np.tanh, "Sigmoid": lambda v: 1 / (1 + np.exp(-v)),
                "Relu": lambda v: np.maximum(v, 0)}[act](z)
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("const_b", [True, False])
@pytest.mark.parametrize("threads", [1, 2])
def test_clamped_last_row_block(const_b, threads):
    """M rows with every remainder of the host's MR, enough for the remainder to be one more
    MR-row block ending at row M, whose first rows are the previous block's. It must neither
    store those rows nor read them back between k-blocks (three here, B packed at compile
    time or at run time), nor apply the scalar epilogue to them twice, on one thread or
    two."""
    t = tiling_for(host_target())
    k, n = 2 * KC + 40, t.nr + t.vw + 3  # looped k-blocks; a tail panel with a partial vector
    b, c = _rand(k, n) / np.float32(np.sqrt(k)), _rand(n)
    for rem in range(1, t.mr):
        m = MAX_SHARED_ROWS_FRACTION * t.mr + rem  # enough rows for the clamped block
        a = _rand(m, k)
        feeds, inits = {"a": a}, [("c", c)]
        if const_b:
            inits.append(("b", b))
        else:
            feeds["b"] = b
        nodes = [helper.make_node("Gemm", ["a", "b", "c"], ["g"]),
                 helper.make_node("Sigmoid", ["g"], ["y"])]
        model = _model(nodes, list(feeds.items()), (m, n), inits)
        y = onnxc.compile(model, num_threads=threads).run(None, feeds)[0]
        expected = 1 / (1 + np.exp(-(a @ b + c)))
        np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-5, err_msg=f"M = {m}")


@pytest.mark.parametrize("own_columns", [True, False])
def test_run_time_b_packed_by_the_threads(own_columns, monkeypatch, tmp_path):
    """A B that is an input is packed at run time by the threads: each packs and multiplies
    its own runs of panels (`build_packed_column_split`, A's k-block within
    PACKED_SPLIT_A_BYTES), or (set to 0 here) each stripe's panels are split to pack, then
    its row blocks. Two k-blocks, a full N-stripe, a partial one and a tail panel: on two
    threads the same sums as on one (no panel packed twice or missed), cold and from the
    compile cache."""
    if not own_columns:
        monkeypatch.setattr(gemm_column_split, "PACKED_SPLIT_A_BYTES", 0)
    runs = []
    build = gemm_microkernel.PackedGemm.build_packed_column_split
    monkeypatch.setattr(gemm_microkernel.PackedGemm, "build_packed_column_split",
                        lambda self: (runs.append(self.g.n), build(self))[1])
    t = tiling_for(host_target())
    m, k, n = 5 * t.mr + 3, KC + 40, NC + 2 * t.nr + 5
    a, b = _rand(m, k), _rand(k, n) / np.float32(np.sqrt(k))
    model = _model([helper.make_node("MatMul", ["a", "b"], ["y"])], [("a", a), ("b", b)],
                   (m, n), [])
    one, two = (onnxc.compile(model, num_threads=threads, cache_dir=tmp_path).run(
        None, {"a": a, "b": b})[0] for threads in (1, 2))
    assert runs == ([n, n] if own_columns else [])
    np.testing.assert_allclose(one, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(two, one)
    warm = onnxc.compile(model, num_threads=2, cache_dir=tmp_path)
    assert warm.from_cache
    np.testing.assert_array_equal(warm.run(None, {"a": a, "b": b})[0], one)


@pytest.mark.parametrize("act", ["Relu", "Sigmoid"])
def test_column_split_of_few_rows(act):
    """Under two row blocks (M = 1, MR, MR + 1) with a constant B, threads split the panels
    (`splits_columns`): runs of them over three k-blocks, more runs than MIN_GEMV_CHUNKS' worth
    of panels, a tail panel with a partial vector after the loop; the vector (Relu) and
    scalar (Sigmoid) epilogues; the same on one thread and two."""
    t = tiling_for(host_target())
    k, n = 2 * KC + 40, (MIN_SPLIT_PANELS + MIN_GEMV_CHUNKS + 1) * t.nr + t.vw + 3
    b, c = _rand(k, n) / np.float32(np.sqrt(k)), _rand(n)
    for m in (1, t.mr, t.mr + 1):
        assert m // t.mr < 2 and n // t.nr >= MIN_SPLIT_PANELS  # the column split's case
        a = _rand(m, k)
        nodes = [helper.make_node("Gemm", ["a", "b", "c"], ["g"]),
                 helper.make_node(act, ["g"], ["y"])]
        model = _model(nodes, [("a", a)], (m, n), [("b", b), ("c", c)])
        z = a @ b + c
        expected = np.maximum(z, 0) if act == "Relu" else 1 / (1 + np.exp(-z))
        one, two = (onnxc.compile(model, num_threads=threads, cache_dir=False).run(
            None, {"a": a})[0] for threads in (1, 2))
        np.testing.assert_allclose(one, expected, rtol=1e-4, atol=1e-5, err_msg=f"M = {m}")
        np.testing.assert_array_equal(one, two)


@pytest.mark.parametrize("m", [41, 191])
def test_column_split_of_a_large_b(m, monkeypatch):
    """A B past SPLIT_B_BYTES (0 here) and rows within SPLIT_A_BYTES split the columns too,
    a stripe of panels per parallel iteration with a loop over all row blocks inside: with
    the M remainder a tile of its own (41 rows) and clamped into the last block (191:
    AVX2's 6 and AVX-512's 8 rows both leave MR - 1); bit-identical on one thread and two."""
    monkeypatch.setattr(gemm_column_split, "SPLIT_B_BYTES", 0)
    t = tiling_for(host_target())
    k, n = KC + 40, 2 * NC + 3 * t.nr + t.vw + 3
    assert m * KC * 4 <= gemm_column_split.SPLIT_A_BYTES and m // t.mr >= 2
    a, b = _rand(m, k), _rand(k, n) / np.float32(np.sqrt(k))
    model = _model([helper.make_node("MatMul", ["a", "b"], ["y"])], [("a", a)], (m, n),
                   [("b", b)])
    one, two = (onnxc.compile(model, num_threads=threads, cache_dir=False).run(
        None, {"a": a})[0] for threads in (1, 2))
    np.testing.assert_allclose(one, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(one, two)


def test_column_split_over_run_time_rows(monkeypatch, tmp_path):
    """A run-time M (a sequence, an image's pixels) times a B past
    SPLIT_B_BYTES_RUNTIME_ROWS (0 here):
    the column split with run-time row blocks and the remainder's tile chosen at run time;
    a MatMul from 1 row (a decode step) to several blocks, and a 3x3 conv over symbolic
    image sizes (the implicit GEMM's rows), against onnxruntime at one thread and two,
    compiled into a cache and then read back from it (warm: the same outputs)."""
    import onnxruntime
    from onnx import TensorProto, numpy_helper

    monkeypatch.setattr(gemm_column_split, "SPLIT_B_BYTES_RUNTIME_ROWS", 0)
    split = []
    build = gemm_microkernel.PackedGemm.build_column_split
    monkeypatch.setattr(gemm_microkernel.PackedGemm, "build_column_split",
                        lambda self: (split.append(type(self).__name__), build(self))[1])
    t = tiling_for(host_target())
    k, n = KC + 24, NC + 2 * t.nr + t.vw + 1
    w = numpy_helper.from_array(_rand(k, n) / np.float32(np.sqrt(k)), "w")
    f = (MIN_SPLIT_PANELS * t.nr + t.vw, 10, 3, 3)  # stride 2: the implicit GEMM
    wc = numpy_helper.from_array(_rand(*f) / np.float32(np.sqrt(90)), "wc")
    graph_ = helper.make_graph(
        [helper.make_node("MatMul", ["a", "w"], ["y"]),
         helper.make_node("Conv", ["x", "wc"], ["z"], pads=[1, 1, 1, 1], strides=[2, 2])],
        "g",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, ["seq", k]),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 10, "H", "W"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["seq", n]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, None)], [w, wc])
    model = helper.make_model(graph_, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    reference = onnxruntime.InferenceSession(model.SerializeToString(),
                                             providers=["CPUExecutionProvider"])
    for threads in (1, 2):
        compiled = onnxc.compile(model, num_threads=threads, cache_dir=tmp_path, quiet=True)
        assert sorted(split) == ["ConvGemm", "_DenseGemm"], split  # both split columns
        split.clear()
        warm = onnxc.compile(model, num_threads=threads, cache_dir=tmp_path, quiet=True)
        assert warm.from_cache and not compiled.from_cache and not split
        for rows, (h, wd) in [(1, (1, 1)), (t.mr - 1, (2, 3)), (t.mr, (3, 5)),
                              (3 * t.mr + 2, (9, 7))]:
            feeds = {"a": _rand(rows, k), "x": _rand(1, 10, h, wd)}
            ours = compiled.run(None, feeds)
            for cold, again, theirs in zip(ours, warm.run(None, feeds),
                                           reference.run(None, feeds), strict=True):
                np.testing.assert_allclose(cold, theirs, rtol=1e-4, atol=1e-5,
                                           err_msg=f"{threads} threads, {rows} rows")
                np.testing.assert_array_equal(again, cold)


@pytest.mark.parametrize(("k", "n", "splits"), [
    (2048, 512, True),    # T5-small's FFN output (4 MiB of B), ResNet-50's last 1x1 convs
    (768, 3072, True),    # BERT's / GPT-2's FFN input (9 MiB)
    (256, 512, False),    # 512 KiB: one KC x NC block, re-read from the L2
])
def test_a_few_rows_times_a_b_past_a_mib_split_columns(k, n, splits, monkeypatch, tmp_path):
    """128 rows (a sequence) times a constant B: chunks of 12 rows each re-read all of B,
    which in a net is cold; from SPLIT_B_BYTES on, each parallel iteration is a run of
    panels over all the rows instead (B read once), and the outputs are the same sums,
    cold and read back from the compile cache."""
    split = []
    build = gemm_microkernel.PackedGemm.build_column_split
    monkeypatch.setattr(gemm_microkernel.PackedGemm, "build_column_split",
                        lambda self: (split.append(self.g.n), build(self))[1])
    m = 128
    a, b = _rand(m, k), _rand(k, n) / np.float32(np.sqrt(k))
    model = _model([helper.make_node("MatMul", ["a", "b"], ["y"])], [("a", a)], (m, n),
                   [("b", b)])
    pipeline.run_passes(pipeline.make_context(), import_onnx(model), "convert-graph-to-loops")
    assert split == ([n] if splits else [])
    if splits:  # and the product: against float64, bit-identical at one thread and two
        one, two = (onnxc.compile(model, num_threads=threads, cache_dir=tmp_path).run(
            None, {"a": a})[0] for threads in (1, 2))
        np.testing.assert_allclose(one, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-5)
        np.testing.assert_array_equal(one, two)
        warm = onnxc.compile(model, num_threads=1, cache_dir=tmp_path)
        assert warm.from_cache
        np.testing.assert_array_equal(warm.run(None, {"a": a})[0], one)


def test_lm_head_splits_columns():
    """GPT-2's LM head shape (128 rows, B of 16 MiB and more): the parallel loop runs over
    stripes of NC columns, not over chunks of rows (each of which read all of B; 128 x 768 x
    50257 ran at 50 GFLOP/s, onnxruntime's at 88, now level)."""
    k = 256
    n = (16 << 20) // (4 * k)
    assert _parallel_iterations(128, k, n) == n // NC


def _parallel_iterations(m: int, k: int, n: int) -> int:
    """The trip count of the one parallel loop of an [m, k] x [k, n] MatMul's kernel."""
    module = import_onnx(_model([helper.make_node("MatMul", ["a", "b"], ["y"])],
                                [("a", np.zeros((m, k), np.float32))], (m, n),
                                [("b", np.zeros((k, n), np.float32))]))
    pipeline.run_passes(pipeline.make_context(), module, "convert-graph-to-loops")
    (parallel,) = [op for op in module.walk()
                   if isinstance(op, scf.ForOp) and PARALLEL_ATTR in op.attributes]
    assert isinstance(parallel.ub.owner, arith.ConstantOp)
    return parallel.ub.owner.value.value.data


def _k_loops(m: int, k: int, n: int) -> list[tuple[int, int]]:
    """(step, vector FMAs in the body) of each k loop of an [m, k] x [k, n] MatMul's
    kernel: the scf.for loops whose own block holds FMAs."""
    module = import_onnx(_model([helper.make_node("MatMul", ["a", "b"], ["y"])],
                                [("a", np.zeros((m, k), np.float32))], (m, n),
                                [("b", np.zeros((k, n), np.float32))]))
    pipeline.run_passes(pipeline.make_context(), module, "convert-graph-to-loops")
    loops = []
    for op in module.walk():
        if isinstance(op, scf.ForOp):
            fmas = sum(isinstance(o, vector.FMAOp) for o in op.body.block.ops)
            if fmas:
                assert isinstance(op.step.owner, arith.ConstantOp)
                loops.append((op.step.owner.value.value.data, fmas))
    return loops


def test_full_tiles_take_k_unroll_steps_per_iteration(monkeypatch):
    """A full MR x NR tile's k loop runs K_UNROLL steps (their FMAs) per iteration; a
    remainder's tile of MR - 1 rows one (it keeps one sum per accumulator); a k-block of a
    depth K_UNROLL does not divide, 2 or 1; a kernel of fewer than MIN_UNROLL_FLOPS one."""
    t = tiling_for(host_target())
    assert _k_loops(2 * t.mr, 4 * gemm_microkernel.K_UNROLL, t.nr) == [
        (1, t.mr * t.nr // t.vw)]
    monkeypatch.setattr(gemm_microkernel, "MIN_UNROLL_FLOPS", 0)
    per_step = t.mr * t.nr // t.vw
    unroll = gemm_microkernel.K_UNROLL
    assert _k_loops(2 * t.mr, 4 * unroll, t.nr) == [(unroll, unroll * per_step)]
    rem = (t.mr - 1) * t.nr // t.vw
    assert sorted(_k_loops(t.mr - 1, 4 * unroll, t.nr)) == [(1, rem)]
    assert _k_loops(2 * t.mr, 4 * unroll + 2, t.nr) == [(2, 2 * per_step)]
    assert _k_loops(2 * t.mr, 4 * unroll + 1, t.nr) == [(1, per_step)]


@pytest.mark.parametrize("m,k", [
    (13, 4 * 8 + 2),        # unrolled by 2; a remainder row
    (12, KC + 3),           # a k-block by K_UNROLL, a last one of depth 3 by 1
    (7, 2 * KC + 4 * 3),    # three k-blocks, each unrolled
])
def test_unrolled_k_loops_match_numpy(m, k, monkeypatch):
    """The unrolled loops' products are numpy's: each step's A values and B row are the
    step's own (a k offset off by one fails on every element)."""
    monkeypatch.setattr(gemm_microkernel, "MIN_UNROLL_FLOPS", 0)
    a, b = _rand(m, k), _rand(k, 37)
    model = _model([helper.make_node("MatMul", ["a", "b"], ["y"])], [("a", a)], (m, 37),
                   [("b", b)])
    y = onnxc.compile(model, cache_dir=False).run(None, {"a": a})[0]  # this process's code
    np.testing.assert_allclose(y, a @ b, rtol=1e-4, atol=1e-4 * np.sqrt(k))


def test_matmul_folds_leading_dimensions_of_a_into_m():
    a, b = _rand(2, 9, 40), _rand(40, 24)
    model = _model([helper.make_node("MatMul", ["a", "b"], ["y"])], [("a", a)], (2, 9, 24),
                   [("b", b)])
    np.testing.assert_allclose(_run(model, {"a": a}), a @ b, rtol=1e-4, atol=1e-4)


def test_pack_layout_matches_the_kernels_offsets():
    """B[k0 + kk, j + c] sits at k0 * npad + kc * j + kk * w + c, w = min(NR, npad - j)."""
    t = tiling_for(host_target())
    k, n = KC + 3, 2 * t.nr + t.vw - 1
    g = GemmShape(1, n, k, False, False, 1.0, 0.0, None)
    b = _rand(k, n)
    packed, npad = pack(b, g, t), g.npad(t)
    assert packed.size == k * npad
    for kk_abs, j_abs in [(0, 0), (5, t.nr + 3), (KC + 2, 2 * t.nr + 1), (KC, n - 1)]:
        k0, kk = divmod(kk_abs, KC)
        k0 *= KC
        kc = min(KC, k - k0)
        j = j_abs // t.nr * t.nr
        w = min(t.nr, npad - j)
        assert packed[k0 * npad + kc * j + kk * w + (j_abs - j)] == b[kk_abs, j_abs]
    j = 2 * t.nr  # the tail panel (width VW) of the last k-block (depth 3), past column n
    assert packed[KC * npad + 3 * j + (npad - 1 - j)] == 0


def test_kernel_runs_in_the_interpreter():
    """The loops-level kernel itself (vector ops, runtime packing), without LLVM."""
    a, b = _rand(17, 5), _rand(5, 20)
    (y,) = run_single_op(graph.MatMulOp, [a, b], [((17, 20), np.float32)])
    np.testing.assert_allclose(y, a @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("m", "k", "n", "iterations"), [
    (196, 320, 320, range(24, 34)),   # regnet's 14 x 14 1x1 convs: chunks of one row block
    (49, 784, 784, range(24, 26)),    # its 7 x 7 ones (2.4 MB of B): runs of 1-2 panels
    (1, 1280, 1000, range(8, 9)),     # a classifier head streams B: MIN_GEMV_CHUNKS runs
])
def test_parallel_iterations_are_small_enough_to_balance(m, k, n, iterations):
    """Threads claim a product's parallel iterations one by one; a 14 x 14 map's 33 row
    blocks in 9 chunks (7 runs of 7 panels for a 7 x 7 map's) left one thread a chunk
    behind at T=2 (regnet_y_800mf 6% slower). A head's GEMV keeps long runs of panels."""
    assert _parallel_iterations(m, k, n) in iterations
