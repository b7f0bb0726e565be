"""Attention (opsets 23-25) onto graph.attention, or a MatMul/Softmax decomposition.

Every masking rule of the op (attn_mask bool or additive, is_causal with its bottom-right
offset from the past cache or nonpad_kv_seqlen, the opset-25 sliding window, nonpad padding)
becomes one additive bias (0 / -inf / the float mask), a compile-time array unless a run-time
input feeds it. Then:
- graph.attention (the flash kernel, no Sq x Sk buffer) when neither softcap nor the
  qk_matmul_output output is wanted;
- otherwise the decomposition MatMul(Q, K^T) * scale -> softcap -> + bias -> Softmax ->
  MatMul(P, V), which also exposes the requested scores.
Grouped-query attention (q heads = r x kv heads, each kv head serving r consecutive q heads)
costs no K/V copy: graph.attention maps query head h to K/V head h // r itself, or, for few
queries per head (decode), Q [B, Hq, Sq, D] is viewed as [B, Hkv, r*Sq, D] to fill the
kernel's vector lanes. A causal mask with one offset (none or the past length) is the op's
`causal_offset`, and the kernel skips the keys it hides. A row whose bias is -inf
everywhere (no attendable key) outputs 0, as the reference says, through a Where on the
result (onnx/reference/ops/op_attention.py).
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import FloatAttr, IntegerType, UnitAttr, i64

from onnxc.dialects import graph
from onnxc.dialects import graph_shapes as shapes
from onnxc.dialects.dense_data import from_numpy
from onnxc.dialects.symbolic_dims import Dim, SymbolicDimError, is_static
from onnxc.frontend import onnx_types as types
from onnxc.frontend.onnx_context import NodeContext, Result
from onnxc.frontend.onnx_graph_builder import GraphBuilder, Value, is_bool, shape
from onnxc.frontend.onnx_ops_math import Converter


class _Heads:
    """Sizes of one Attention node, with K/V already extended by the past cache."""

    def __init__(self, batch: Dim, hq: int, hkv: int, sq: Dim, sk: Dim, past: Dim):
        self.batch, self.hq, self.hkv, self.sq, self.sk, self.past = batch, hq, hkv, sq, sk, past
        self.groups = hq // hkv
        self.symbolic = not is_static((sq, sk, past))
        """whether the sequence lengths are symbolic (masks cannot be position tables)"""


def _to_heads(b: GraphBuilder, x: Value, heads: int) -> Value:
    """[B, S, H*D] -> [B, H, S, D]."""
    batch, seq, hidden = shape(x)
    return b.transpose(b.reshape(x, (batch, seq, heads, hidden // heads)), (0, 2, 1, 3))


def _inputs_4d(ctx: NodeContext, b: GraphBuilder) -> tuple[Value, Value, Value]:
    q, k, v = b.input(0), b.input(1), b.input(2)
    rank = len(shape(q))
    if rank not in (3, 4) or len(shape(k)) != rank or len(shape(v)) != rank:
        raise ctx.invalid(f"Q {shape(q)}, K {shape(k)} and V {shape(v)} need one rank, 3 or 4")
    if rank == 4:
        return q, k, v
    hq, hkv = ctx.attr("q_num_heads", None), ctx.attr("kv_num_heads", None)
    if hq is None or hkv is None:
        raise ctx.invalid("3D inputs need q_num_heads and kv_num_heads")
    if hq <= 0 or hkv <= 0 or shape(q)[2] % hq or shape(k)[2] % hkv or shape(v)[2] % hkv:
        raise ctx.invalid(f"hidden sizes Q {shape(q)}, K {shape(k)}, V {shape(v)} do not "
                          f"split into {hq} / {hkv} heads")
    return _to_heads(b, q, hq), _to_heads(b, k, hkv), _to_heads(b, v, hkv)


def _with_past(ctx: NodeContext, b: GraphBuilder, k: Value, v: Value) -> tuple[Value, Value, int]:
    if ctx.has_input(4) != ctx.has_input(5):
        raise ctx.invalid("past_key and past_value go together")
    if not ctx.has_input(4):
        return k, v, 0
    pk, pv = b.input(4), b.input(5)
    if len(shape(pk)) != 4 or len(shape(pv)) != 4:
        raise ctx.invalid(f"past_key {shape(pk)} and past_value {shape(pv)} must be 4D")
    if shape(pk)[:2] != shape(k)[:2] or shape(pk)[3] != shape(k)[3] or \
            shape(pv)[:2] != shape(v)[:2] or shape(pv)[3] != shape(v)[3]:
        raise ctx.invalid(f"past_key {shape(pk)} / past_value {shape(pv)} do not fit K "
                          f"{shape(k)} / V {shape(v)}")
    return b.concat([pk, k], 2), b.concat([pv, v], 2), shape(pk)[2]


# ---------------------------------------------------------------------------- the bias


def _user_mask(ctx: NodeContext, b: GraphBuilder, sk: int) -> Value | None:
    """attn_mask as an additive bias, its last axis padded with -inf up to Sk."""
    if not ctx.has_input(3):
        return None
    mask = b.input(3)
    el = ctx.element_type(3)
    if not is_bool(el) and el != b.el:
        raise ctx.invalid(f"attn_mask has element type {el}; it must be bool or {b.el}")
    if not shape(mask):
        raise ctx.invalid("attn_mask must have rank >= 1")
    if is_bool(el):
        mask = b.where(mask, b.floats(0.0), b.floats(-np.inf))
    width = shape(mask)[-1]
    if width > sk:
        raise ctx.invalid(f"attn_mask {shape(mask)} is longer than the {sk} keys")
    if width < sk:
        pad = b.floats(np.full((*shape(mask)[:-1], sk - width), -np.inf))
        mask = b.concat([mask, pad], len(shape(mask)) - 1)
    return mask


def _nonpad(ctx: NodeContext, b: GraphBuilder, batch: int) -> Value | None:
    """nonpad_kv_seqlen (opset 24) as an int64 [B, 1, 1, 1] tensor, or None."""
    if not ctx.has_input(6):
        return None
    if ctx.has_input(4):
        raise ctx.invalid("nonpad_kv_seqlen cannot be combined with past_key / past_value")
    lens = b.input(6)
    el = ctx.element_type(6)
    if not (isinstance(el, IntegerType) and el.width.data == 64) or shape(lens) != (batch,):
        raise ctx.invalid(f"nonpad_kv_seqlen must be int64 [{batch}], not {el} {shape(lens)}")
    return b.reshape(lens, (batch, 1, 1, 1))


def _allowed(ctx: NodeContext, b: GraphBuilder, h: _Heads, lens: Value | None,
             causal: bool) -> Value | None:
    """Where causality (when `causal`), the sliding window and the key padding allow
    attending (True), as [Sq, Sk] or [B, 1, Sq, Sk] booleans; None when they allow all."""
    left, right = ctx.attr("left_window_size", -1), ctx.attr("right_window_size", -1)
    if left < -1 or right < -1:
        raise ctx.invalid(f"window sizes {left} / {right} must be -1 or >= 0")
    if lens is None and not causal and left < 0 and right < 0:
        return None
    if h.symbolic:
        raise SymbolicDimError(f"a {'causal ' if causal else ''}mask over {h.sq} queries and "
                               f"{h.sk} keys (a run-time position table)")
    i = np.arange(h.sq, dtype=np.int64).reshape(-1, 1)
    j = np.arange(h.sk, dtype=np.int64).reshape(1, -1)
    allowed: Value | None = None

    def both(cond: Value) -> None:
        nonlocal allowed
        allowed = cond if allowed is None else b.and_(allowed, cond)

    if lens is None:
        # diff = (i + offset) - j, the query's absolute position minus the key's
        diff = i + h.past - j
        if causal:
            both(diff >= 0)
        if left >= 0:
            both(diff <= left)
        if right >= 0:
            both(-diff <= right)
        return allowed
    # external cache: offset[b] = lens[b] - Sq, so diff = lens[b] - e with e = j - i + Sq
    e = (j - i + h.sq).reshape(1, 1, h.sq, h.sk)
    if causal:
        both(b.less_equal(e, lens))
    if left >= 0:
        both(b.less_equal(lens, e + left))
    if right >= 0:
        both(b.less_equal(e - right, lens))
    both(b.less(j.reshape(1, 1, 1, h.sk), lens))  # keys past the valid length
    return allowed


def _bias(ctx: NodeContext, b: GraphBuilder, h: _Heads, mask: Value | None,
          lens: Value | None, causal: bool) -> Value | None:
    """The additive bias, broadcastable to [B, Hq, Sq, Sk], or None when it is all 0."""
    allowed = _allowed(ctx, b, h, lens, causal)
    if allowed is None:
        return mask
    if isinstance(allowed, np.ndarray) and allowed.all():
        return mask
    blocked = b.where(allowed, b.floats(0.0), b.floats(-np.inf))
    return blocked if mask is None else b.add(mask, blocked)


def _as_4d(b: GraphBuilder, x: Value) -> Value:
    dims = shape(x)
    if len(dims) > 4:
        raise b.ctx.invalid(f"attn_mask {dims} has rank > 4")
    return b.reshape(x, (1,) * (4 - len(dims)) + dims)


def _check_bias(ctx: NodeContext, bias: Value, h: _Heads) -> None:
    full = (h.batch, h.hq, h.sq, h.sk)
    text = f"attn_mask ({', '.join(map(str, shape(bias)))}) does not broadcast to " \
           f"({', '.join(map(str, full))})"
    try:
        if shapes.broadcast_shapes(full, shape(bias)) != full:
            raise ValueError
    except SymbolicDimError as err:
        raise ctx.symbolic(SymbolicDimError(f"{text}: {err}")) from None
    except ValueError:
        raise ctx.invalid(text) from None


# ---------------------------------------------------------------------------- the two paths


def _grouped(b: GraphBuilder, x: Value, h: _Heads) -> Value:
    """[B, Hq, S, D] -> [B, Hkv, r*S, D] (a view: q head g*r + t is row block t of kv head g)."""
    batch, _, seq, d = shape(x)
    return b.reshape(x, (batch, h.hkv, h.groups * seq, d))


def _ungrouped(b: GraphBuilder, x: Value, h: _Heads) -> Value:
    batch, _, rows, d = shape(x)
    return b.reshape(x, (batch, h.hq, rows // h.groups, d))


GROUPED_QUERY_ROWS = 16
"""Below this many queries per head, grouped-query heads are stacked into one query block
(Q viewed as [B, Hkv, r*Sq, D]) so the kernel's vector lanes fill up (decode: Sq = 1)."""


def _stack_groups(h: _Heads, bias: Value | None, causal: bool) -> bool:
    """Whether graph.attention gets the stacked view rather than K/V head mapping: for
    grouped heads with few queries, unless the causal mask is in the op (it follows the query
    index, which stacking changes) or the bias varies per query (it would be copied r times)."""
    if h.groups == 1 or causal:
        return False
    per_key = bias is None or shape(bias)[-2:-1] in ((), (1,))
    if h.symbolic:  # a per-query bias would be copied over symbolic sizes
        return per_key and isinstance(h.sq, int) and h.sq < GROUPED_QUERY_ROWS
    return h.sq < GROUPED_QUERY_ROWS or per_key


def _stacked_bias(b: GraphBuilder, bias: Value, h: _Heads) -> Value:
    """The bias over the stacked queries [B, Hkv, r*Sq, Sk] (a per-key bias stays as is)."""
    bias = _as_4d(b, bias)
    nb, nh, nq, _ = shape(bias)
    if nh == 1 and nq == 1:
        return bias
    full = b.add(bias, b.floats(np.zeros((1, h.hq, h.sq, h.sk))))
    return b.reshape(full, (nb, h.hkv, h.groups * h.sq, h.sk))


def _fused(b: GraphBuilder, q: Value, k: Value, v: Value, bias: Value | None, scale: float,
           h: _Heads, causal: bool) -> Value:
    """Y through graph.attention; `causal` puts the (scalar-offset) causal mask in the op,
    whose kernel then skips the invisible keys, `bias` holds the other masks."""
    props = {"scale": FloatAttr(scale, b.el)}
    if causal and isinstance(h.past, int):
        props["causal_offset"] = types.i64_attr(h.past)
    elif causal:  # a symbolic past, and the queries are the newest keys: Sk - Sq
        props["causal_from_end"] = UnitAttr()
    stacked = _stack_groups(h, bias, causal)
    if stacked:
        q = _grouped(b, q, h)
        bias = None if bias is None else _stacked_bias(b, bias, h)
    out_shape = (*shape(q)[:-1], shape(v)[-1])
    op = graph.AttentionOp(
        operands=[b.value(q), b.value(k), b.value(v), None if bias is None else b.value(bias)],
        result_types=[types.tensor_type(out_shape, b.el)], properties=props)
    y = b.ctx.emit1(op)
    return _ungrouped(b, y, h) if stacked else y


def _decomposed(ctx: NodeContext, b: GraphBuilder, q: Value, k: Value, v: Value,
                bias: Value | None, guard: Value | None, scale: float,
                h: _Heads) -> tuple[Value, Value | None]:
    """(Y [B, Hq, Sq, Dv], qk_matmul_output or None) through explicit score tensors."""
    mode = ctx.attr("qk_matmul_output_mode", 0)
    if mode not in (0, 1, 2, 3):
        raise ctx.invalid(f"qk_matmul_output_mode must be 0..3, not {mode}")
    softcap = float(ctx.attr("softcap", 0.0))
    scores = b.matmul(_grouped(b, q, h), b.transpose(k, (0, 1, 3, 2)))
    scores = b.mul(_ungrouped(b, scores, h), b.floats(scale))
    if softcap > 0:
        scores = b.mul(b.tanh(b.div(scores, b.floats(softcap))), b.floats(softcap))
    exposed = scores
    if bias is not None:
        scores = b.add(scores, bias)
    if mode == 2:
        exposed = scores
    probs = b.softmax_last(scores)
    if guard is not None:
        probs = b.where(guard, b.floats(0.0), probs)
    if mode == 3:
        exposed = probs
    y = _ungrouped(b, b.matmul(_grouped(b, probs, h), v), h)
    return y, exposed


def _symbolic_causal(b: GraphBuilder, h: _Heads, mask: Value | None, lens: Value | None,
                     decomposed: bool) -> tuple[Value | None, bool]:
    """is_causal over symbolic sizes, as (the mask to use, whether graph.attention applies
    the causal mask itself): the kernel's causal_offset when the past length is a constant
    and nothing else masks; otherwise a run-time causal bias added to the mask (no position
    table of symbolic size exists at import)."""
    if h.sq == 1 and h.sk - h.past == 1:
        return mask, False  # one query at the last position: it sees every key
    if lens is not None:
        raise SymbolicDimError(f"is_causal with nonpad_kv_seqlen over {h.sq} queries and "
                               f"{h.sk} keys")
    if mask is None and not decomposed and (isinstance(h.past, int) or h.sk - h.sq == h.past):
        return None, True  # the kernel's causal frontier: a constant or Sk - Sq
    causal = _causal_bias(b, h)
    return (causal if mask is None else b.add(mask, causal)), False


def _from_end(b: GraphBuilder, n: Dim) -> Value:
    """[n, n - 1, ..., 1] as int64: positions counted from the end, computed at run time for
    a symbolic n (a reverse cumulative sum of ones)."""
    if isinstance(n, int):
        return np.arange(n, 0, -1, dtype=np.int64)
    one = np.ones((1,), dtype=np.int64)
    ones = b.ctx.emit1(graph.ConstantOfShapeOp(properties={"value": from_numpy(one)},
                                               result_types=[types.tensor_type((n,), i64)]))
    return b.emit(graph.CumSumOp, [ones], axis=types.i64_attr(0),
                  exclusive=types.i64_attr(0), reverse=types.i64_attr(1))


def _causal_bias(b: GraphBuilder, h: _Heads) -> Value:
    """The causal mask as an additive [Sq, Sk] bias: query i sees key j <= i + past, i.e.
    (Sk - j) >= (Sq - i) + (Skv - Sq) with Skv = Sk - past the new keys; that difference must
    be a constant."""
    delta = h.sk - h.past - h.sq
    if not isinstance(delta, int):
        raise SymbolicDimError(f"is_causal with {h.sq} queries and {h.sk - h.past} new keys "
                               f"(their difference is not a constant)")
    queries = _from_end(b, h.sq)
    if delta:
        queries = b.add(queries, np.array(delta, dtype=np.int64))
    visible = b.less_equal(b.reshape(queries, (h.sq, 1)), b.reshape(_from_end(b, h.sk),
                                                                    (1, h.sk)))
    return b.where(visible, b.floats(0.0), b.floats(-np.inf))


def convert_attention(ctx: NodeContext) -> list[Result]:
    el = ctx.element_type(0)
    if not types.is_float(el):
        raise ctx.unsupported(f"element type {el} (float types only)")
    if ctx.element_type(1) != el or ctx.element_type(2) != el:
        raise ctx.invalid("Q, K and V must have one element type")
    b = GraphBuilder(ctx, el)
    three_d = ctx.rank(0) == 3
    q, k, v = _inputs_4d(ctx, b)
    batch, hq, sq, d = shape(q)
    if shape(k)[0] != batch or shape(v)[0] != batch or shape(k)[3] != d or \
            shape(v)[1] != shape(k)[1] or shape(v)[2] != shape(k)[2]:
        raise ctx.invalid(f"Q {shape(q)}, K {shape(k)} and V {shape(v)} do not chain")
    k, v, past = _with_past(ctx, b, k, v)
    hkv = shape(k)[1]
    if hkv <= 0 or hq % hkv:
        raise ctx.invalid(f"{hq} query heads are not a multiple of {hkv} key/value heads")
    h = _Heads(batch, hq, hkv, sq, shape(k)[2], past)
    scale = ctx.attr("scale", None)
    scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
    mask = _user_mask(ctx, b, h.sk)
    lens = _nonpad(ctx, b, h.batch)
    is_causal = bool(ctx.attr("is_causal", 0))
    wants_scores = ctx.output_used(3)
    decomposed = wants_scores or float(ctx.attr("softcap", 0.0)) > 0
    guarded = True  # whether a row of the bias may be -inf everywhere
    if is_causal and h.symbolic:
        guarded = mask is not None or lens is not None  # causality alone hides no whole row
        mask, is_causal = _symbolic_causal(b, h, mask, lens, decomposed)
    bias = _bias(ctx, b, h, mask, lens, is_causal and not h.symbolic)
    guard = None
    if bias is not None:
        _check_bias(ctx, bias, h)
        guard = b.all_neg_inf_rows(bias) if guarded else None
        if isinstance(guard, np.ndarray) and not guard.any():
            guard = None
    if decomposed:
        y, scores = _decomposed(ctx, b, q, k, v, bias, guard, scale, h)
    else:
        # the kernel applies a causal mask itself when its offset is one number (the past
        # length; nonpad_kv_seqlen makes it per batch) and it hides a key at all (a decode
        # step's single query sees every key: no mask, and grouped heads can be stacked)
        in_op = is_causal and lens is None and (h.symbolic or h.past < h.sk - 1)
        kernel_bias = _bias(ctx, b, h, mask, lens, False) if in_op else bias
        y, scores = _fused(b, q, k, v, kernel_bias, scale, h, in_op), None
        if guard is not None:
            y = b.where(guard, b.floats(0.0), y)
    if three_d:
        y = b.transpose(y, (0, 2, 1, 3))
        n, s, heads, dv = shape(y)
        y = b.reshape(y, (n, s, heads * dv))
    results: list[Result] = [b.value(y), b.value(k), b.value(v)]
    if wants_scores:
        results.append(b.value(scores))
    return results


CONVERTERS: dict[str, Converter] = {
    "Attention": convert_attention,
}
