"""ONNX Attention (opsets 23-25) and RotaryEmbedding (opset 23) against
onnx.reference.ReferenceEvaluator: 3D / 4D inputs, grouped-query heads, causal masks offset
by the past cache or by nonpad_kv_seqlen, bool / float / short masks, softcap, the four
qk_matmul_output modes, sliding windows, fully masked rows (0, not NaN), f64; rotary
embeddings halved or interleaved, partial, with or without position ids. Also the flash
kernel's -inf handling: key blocks that are masked for a whole row block (a window far from
the start) must add nothing. And the graph.attention kernel the fuse-attention row makes,
against onnxruntime on the unfused graph (rtol 1e-4 / atol 1e-5).

Tolerances: f32 rtol 1e-5 / atol 1e-6 (the reference scales Q and K by sqrt(scale) each,
we scale the scores once); f64 rtol 1e-12 / atol 1e-12.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import onnxc
from onnxc.dialects import graph
from onnxc.errors import OnnxcError
from tests.single_op import graph_model, reference_run, single_op_model

F32 = TensorProto.FLOAT
F64 = TensorProto.DOUBLE
BOOL = TensorProto.BOOL
I64 = TensorProto.INT64
TOLERANCE = {F32: (1e-5, 1e-6), F64: (1e-12, 1e-12)}
NAMES = ["Q", "K", "V", "attn_mask", "past_key", "past_value", "nonpad_kv_seqlen"]
OUTPUTS = ["Y", "present_key", "present_value", "qk_matmul_output"]


def _present(names: list[str], inputs: dict) -> list[str]:
    """The node's inputs: `names` given in `inputs`, "" for one skipped, none after the last."""
    present = [n if n in inputs else "" for n in names]
    while present and not present[-1]:
        present.pop()
    return present


def _untyped(names) -> dict:
    """Outputs of undefined element type and shape (the reference infers them)."""
    return {n: (TensorProto.UNDEFINED, None) for n in names}


def _feeds(inputs: dict, rng, nonpad=None) -> dict:
    feeds = {}
    for name, (t, shape) in inputs.items():
        if t == BOOL:
            feeds[name] = rng.random(shape) > 0.3
        elif t == I64:
            feeds[name] = np.asarray(nonpad, np.int64)
        else:
            dtype = np.float64 if t == F64 else np.float32
            feeds[name] = rng.standard_normal(shape).astype(dtype)
    return feeds


def _check(model, feeds, elem=F32, expect_kernel: bool | None = None):
    expected = ReferenceEvaluator(model).run(None, feeds)
    if expect_kernel is not None:
        optimized = onnxc.optimize(model, opt_level=0)
        fused = any(isinstance(op, graph.AttentionOp) for op in optimized.walk())
        assert fused == expect_kernel
    got = onnxc.compile(model, cache_dir=False).run(None, feeds)
    rtol, atol = TOLERANCE[elem]
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.shape == e.shape
        assert not np.isnan(g).any()
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)


def attention(q, k, v, *, mask=None, mask_type=F32, past=None, nonpad=None, opset=23,
              elem=F32, outputs=3, **attrs):
    """An Attention model: q/k/v shapes, optional mask shape, past length."""
    inputs = {"Q": (elem, q), "K": (elem, k), "V": (elem, v)}
    if mask is not None:
        inputs["attn_mask"] = (mask_type if mask_type == BOOL else elem, mask)
    if past is not None:
        b, hkv = (k[0], k[1]) if len(k) == 4 else (k[0], attrs["kv_num_heads"])
        dk = k[3] if len(k) == 4 else k[2] // hkv
        dv = v[3] if len(v) == 4 else v[2] // hkv
        inputs["past_key"] = (elem, (b, hkv, past, dk))
        inputs["past_value"] = (elem, (b, hkv, past, dv))
    if nonpad is not None:
        inputs["nonpad_kv_seqlen"] = (I64, (len(nonpad),))
    model = single_op_model("Attention", inputs, _untyped(OUTPUTS[:outputs]), attrs=attrs,
                            node_inputs=_present(NAMES, inputs), opset=opset)
    return model, inputs


ATTENTION = {
    "4d": {"q": (2, 4, 5, 8), "k": (2, 4, 7, 8), "v": (2, 4, 7, 6)},
    "4d_scaled": {"q": (1, 2, 3, 8), "k": (1, 2, 4, 8), "v": (1, 2, 4, 8), "scale": 0.3},
    "3d_diff_heads": {"q": (2, 4, 24), "k": (2, 6, 24), "v": (2, 6, 18), "q_num_heads": 3,
        "kv_num_heads": 3},
    "4d_gqa_causal_past": {"q": (1, 6, 3, 8), "k": (1, 2, 3, 8), "v": (1, 2, 3, 8), "past": 5,
        "is_causal": 1},
    "3d_gqa_short_mask": {"q": (2, 4, 24), "k": (2, 7, 12), "v": (2, 7, 12), "mask": (4, 5),
        "q_num_heads": 6, "kv_num_heads": 3},
    "gqa_bool_mask_per_head": {"q": (2, 4, 5, 8), "k": (2, 2, 6, 8), "v": (2, 2, 6, 8),
        "mask": (2, 4, 5, 6), "mask_type": BOOL},
    "gqa_bool_mask_2d_causal": {"q": (1, 4, 5, 8), "k": (1, 1, 5, 8), "v": (1, 1, 5, 8),
        "mask": (5, 5), "mask_type": BOOL, "is_causal": 1},
    "mask_3d_past": {"q": (2, 3, 4, 8), "k": (2, 3, 2, 8), "v": (2, 3, 2, 8), "mask": (3, 4, 6),
        "past": 4},
    "softcap_mask": {"q": (1, 2, 4, 8), "k": (1, 2, 6, 8), "v": (1, 2, 6, 8), "mask": (4, 6),
        "softcap": 2.0},
    "3d_softcap_gqa_causal": {"q": (2, 3, 32), "k": (2, 5, 16), "v": (2, 5, 16), "softcap": 3.0,
        "is_causal": 1, "q_num_heads": 4, "kv_num_heads": 2},
    "decode_nonpad_gqa": {"q": (3, 4, 1, 8), "k": (3, 2, 9, 8), "v": (3, 2, 9, 8), "is_causal": 1,
        "nonpad": [9, 4, 1], "opset": 24},
    "prefill_nonpad_mask": {"q": (2, 2, 4, 8), "k": (2, 2, 8, 8), "v": (2, 2, 8, 8), "is_causal": 1,
        "mask": (2, 1, 4, 8), "nonpad": [8, 5], "opset": 24},
    "window_both_sides": {"q": (1, 2, 6, 8), "k": (1, 2, 6, 8), "v": (1, 2, 6, 8),
        "left_window_size": 2, "right_window_size": 1, "opset": 25},
    "window_nonpad": {"q": (2, 2, 3, 8), "k": (2, 2, 7, 8), "v": (2, 2, 7, 8), "is_causal": 1,
        "left_window_size": 3, "nonpad": [7, 5], "opset": 25},
    "f64_causal": {"q": (1, 2, 5, 4), "k": (1, 2, 5, 4), "v": (1, 2, 5, 3), "is_causal": 1,
        "elem": F64},
}


@pytest.mark.parametrize("case", ATTENTION.values(), ids=ATTENTION.keys())
def test_attention_matches_reference(case):
    case = dict(case)
    nonpad = case.get("nonpad")
    model, inputs = attention(**case)
    rng = np.random.default_rng(0)
    kernel = "softcap" not in case
    _check(model, _feeds(inputs, rng, nonpad), case.get("elem", F32), expect_kernel=kernel)


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
@pytest.mark.parametrize("softcap", [0.0, 2.5])
def test_qk_matmul_output_modes(mode, softcap):
    model, inputs = attention((2, 4, 3, 8), (2, 2, 3, 8), (2, 2, 3, 8), mask=(3, 7), past=4,
                              is_causal=1, outputs=4, qk_matmul_output_mode=mode,
                              softcap=softcap)
    _check(model, _feeds(inputs, np.random.default_rng(mode)), expect_kernel=False)


@pytest.mark.parametrize("outputs", [1, 4])
def test_fully_masked_rows_are_zero(outputs):
    """Rows with no attendable key output 0 (and 0 probabilities), through the kernel and
    through the decomposition alike; the other rows are untouched."""
    model, inputs = attention((1, 2, 4, 8), (1, 2, 5, 8), (1, 2, 5, 8), mask=(4, 5),
                              mask_type=BOOL, outputs=outputs, qk_matmul_output_mode=3)
    feeds = _feeds(inputs, np.random.default_rng(1))
    feeds["attn_mask"][1] = False
    feeds["attn_mask"][3] = False
    feeds["attn_mask"][0] = True
    _check(model, feeds, expect_kernel=outputs == 1)


@pytest.mark.parametrize("elem", [F32, F64])
def test_kernel_skips_fully_masked_key_blocks(elem):
    """A causal sliding window far from the first keys masks whole key blocks (8 keys in
    the vector kernel, 16 in the scalar one) of a query row block: exp(-inf - -inf) must
    not poison the running sums. 40 queries fill two vector blocks plus a tail."""
    model, inputs = attention((1, 2, 40, 8), (1, 2, 40, 8), (1, 2, 40, 8), is_causal=1,
                              left_window_size=3, opset=25, elem=elem)
    _check(model, _feeds(inputs, np.random.default_rng(2)), elem, expect_kernel=True)


CAUSAL = {  # (q heads, kv heads, queries, past): head mapping, stacking edges, long past
    "mha_two_vector_blocks_and_tail": (4, 4, 37, 0),
    "gqa_prefill_with_past": (6, 2, 40, 9),
    "gqa_decode_like": (4, 2, 3, 20),
    "mqa": (2, 1, 17, 3),
}


@pytest.mark.parametrize("elem", [F32, F64])
@pytest.mark.parametrize("case", CAUSAL.values(), ids=CAUSAL.keys())
def test_causal_offset_in_kernel(case, elem):
    """is_causal with a past cache (or none) is graph.attention's causal_offset, K/V keep
    their own heads; the vector (f32) and scalar (f64) kernels skip the hidden keys."""
    hq, hkv, sq, past = case
    model, inputs = attention((2, hq, sq, 8), (2, hkv, sq, 8), (2, hkv, sq, 6),
                              past=past or None, is_causal=1, elem=elem)
    ops = [op for op in onnxc.optimize(model, opt_level=0).walk()
           if isinstance(op, graph.AttentionOp)]
    assert len(ops) == 1 and ops[0].causal_offset.value.data == past
    assert ops[0].kv_groups() == hq // hkv
    _check(model, _feeds(inputs, np.random.default_rng(4)), elem)


def test_decode_step_stacks_grouped_heads():
    """One query after a past cache sees every key: no causal mask at all, and the 4 query
    heads of each K/V head are stacked into one query block of the kernel."""
    model, inputs = attention((2, 8, 1, 16), (2, 2, 1, 16), (2, 2, 1, 16), past=30,
                              is_causal=1)
    ops = [op for op in onnxc.optimize(model, opt_level=0).walk()
           if isinstance(op, graph.AttentionOp)]
    assert len(ops) == 1 and ops[0].causal_offset is None and ops[0].mask is None
    assert graph.shape_of(ops[0].query) == (2, 2, 4, 16)
    _check(model, _feeds(inputs, np.random.default_rng(6)))


def test_causal_and_mask_hide_a_row_together():
    """Neither the causal frontier nor the mask hides query 0's row alone, together they
    do: that row is 0, the others are exact."""
    model, inputs = attention((1, 2, 20, 8), (1, 2, 20, 8), (1, 2, 20, 8), mask=(20, 20),
                              mask_type=BOOL, is_causal=1)
    feeds = _feeds(inputs, np.random.default_rng(5))
    feeds["attn_mask"][:, :] = True
    feeds["attn_mask"][0, 0] = False  # query 0 sees key 0 only, causally
    _check(model, feeds, expect_kernel=True)


def test_constant_mask_without_masked_rows_adds_no_guard():
    model, _ = attention((1, 2, 4, 8), (1, 2, 4, 8), (1, 2, 4, 8), is_causal=1,
                         left_window_size=2, opset=25)
    optimized = onnxc.optimize(model, opt_level=0)
    assert not any(isinstance(op, graph.WhereOp) for op in optimized.walk())


@pytest.mark.parametrize("bad", [
    {"q": (1, 3, 2, 8), "k": (1, 2, 2, 8), "v": (1, 2, 2, 8)},  # 3 q heads over 2 kv heads
    {"q": (1, 2, 8), "k": (1, 2, 8), "v": (1, 2, 8)},  # 3D without head counts
    {"q": (1, 2, 2, 8), "k": (1, 2, 3, 8), "v": (1, 2, 3, 8), "mask": (2, 4)},  # mask too long
])
def test_attention_errors_are_typed(bad):
    model, _ = attention(**bad)
    with pytest.raises(OnnxcError):
        onnxc.compile(model, cache_dir=False)


# ------------------------------------------------------------------------ RotaryEmbedding


def rotary(x, cache, ids=True, constant_ids=False, **attrs):
    inputs = {"input": (F32, x), "cos_cache": (F32, cache), "sin_cache": (F32, cache)}
    batch, seq = x[0], (x[1] if len(x) == 3 else x[2])
    initializers = {}
    if ids:
        inputs["position_ids"] = (I64, (batch, seq))
        if constant_ids:
            data = np.arange(batch * seq).reshape(batch, seq) % cache[0]
            initializers["position_ids"] = data.astype(np.int64)
    model = single_op_model(
        "RotaryEmbedding", inputs, _untyped(["output"]), attrs=attrs, opset=23,
        node_inputs=_present(["input", "cos_cache", "sin_cache", "position_ids"], inputs),
        initializers=initializers)
    return model, inputs, initializers


ROTARY = {
    "4d": {"x": (2, 4, 3, 8), "cache": (50, 4)},
    "4d_interleaved": {"x": (2, 4, 3, 8), "cache": (50, 4), "interleaved": 1},
    "3d": {"x": (2, 3, 32), "cache": (50, 4), "num_heads": 4},
    "3d_interleaved_partial": {"x": (2, 3, 32), "cache": (50, 2), "num_heads": 4, "interleaved": 1,
        "rotary_embedding_dim": 4},
    "partial": {"x": (1, 2, 5, 16), "cache": (9, 3), "rotary_embedding_dim": 6},
    "no_ids": {"x": (2, 4, 3, 8), "cache": (2, 3, 4), "ids": False},
    "no_ids_partial_interleaved": {"x": (2, 4, 3, 8), "cache": (2, 3, 2), "ids": False,
        "rotary_embedding_dim": 4, "interleaved": 1},
    "constant_ids": {"x": (1, 2, 6, 8), "cache": (5, 4), "constant_ids": True},
}


@pytest.mark.parametrize("case", ROTARY.values(), ids=ROTARY.keys())
def test_rotary_matches_reference(case):
    model, inputs, initializers = rotary(**case)
    rng = np.random.default_rng(3)
    feeds = {}
    for name, (t, shape) in inputs.items():
        if name in initializers:
            continue
        if t == I64:
            feeds[name] = rng.integers(0, case["cache"][0], shape).astype(np.int64)
        else:
            feeds[name] = rng.standard_normal(shape).astype(np.float32)
    _check(model, feeds)


@pytest.mark.parametrize("bad", [
    {"x": (2, 4, 3, 8), "cache": (50, 3)},  # cache width is not head/2
    {"x": (2, 3, 30), "cache": (50, 4), "num_heads": 4},  # heads do not divide 30
    {"x": (2, 4, 3, 8), "cache": (50, 2), "rotary_embedding_dim": 5},  # odd rotary dim
])
def test_rotary_errors_are_typed(bad):
    model, _, _ = rotary(**bad)
    with pytest.raises(OnnxcError):
        onnxc.compile(model, cache_dir=False)


# --------------------------------------------------------------------------- the fused kernel
# (from test_attention_kernel.py) The vectorized graph.attention kernel
# (lowering/graph_to_loops/attention.py) against onnxruntime on the unfused Q K^T / softmax / V
# graph, over shapes that exercise its edges: query counts below, at and above the vector
# width with a partial last block, key counts with a partial key block, masks broadcast per
# key or varying per query, several heads.

KERNEL_RTOL, KERNEL_ATOL = 1e-4, 1e-5


def attention_model(batch, heads, sq, sk, d, dv, mask_shape):
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["q", "kt"], ["s"]),
             helper.make_node("Mul", ["s", "c"], ["sc"])]
    scores = "sc"
    inputs = {"q": (batch, heads, sq, d), "k": (batch, heads, sk, d),
              "v": (batch, heads, sk, dv)}
    if mask_shape is not None:
        nodes.append(helper.make_node("Add", ["sc", "mask"], ["sm"]))
        inputs["mask"] = mask_shape
        scores = "sm"
    nodes += [helper.make_node("Softmax", [scores], ["p"], axis=-1),
              helper.make_node("MatMul", ["p", "v"], ["y"])]
    model = graph_model(nodes, {n: (np.float32, s) for n, s in inputs.items()},
                        {"y": (np.float32, None)},
                        initializers={"c": np.array(d ** -0.5, np.float32)}, opset=17,
                        ir_version=8)
    return model, inputs


CASES = {
    "bert_like": (1, 3, 32, 40, 16, 16, (1, 1, 1, 40)),
    "tail_only": (2, 2, 5, 9, 8, 3, (2, 1, 1, 9)),
    "full_and_tail": (1, 2, 37, 13, 4, 5, (1, 1, 1, 13)),
    "mask_per_query": (2, 2, 19, 11, 8, 6, (2, 1, 19, 11)),
    "mask_per_head_and_query": (1, 3, 17, 8, 4, 4, (1, 3, 17, 8)),
    "no_mask": (1, 2, 16, 24, 8, 8, None),
    "two_vector_blocks_mask_per_query": (1, 2, 50, 12, 8, 5, (1, 2, 50, 12)),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_attention_matches_onnxruntime(case):
    model, inputs = attention_model(*case)
    optimized = onnxc.optimize(model, pass_pipeline="fuse-attention")
    assert any(isinstance(op, graph.AttentionOp) for op in optimized.walk())
    rng = np.random.default_rng(0)
    feeds = {n: rng.standard_normal(s).astype(np.float32) for n, s in inputs.items()}
    if "mask" in feeds:
        feeds["mask"] = np.where(feeds["mask"] > 1.0, -10000.0, feeds["mask"]).astype(np.float32)
    (expected,) = reference_run(model, feeds, "onnxruntime")
    got = onnxc.compile(model, pass_pipeline="fuse-attention", cache_dir=False).run(None, feeds)[0]
    np.testing.assert_allclose(got, expected, rtol=KERNEL_RTOL, atol=KERNEL_ATOL)
