"""com.microsoft attention ops as onnxruntime's tools write them: Attention (packed QKV
weights), MultiHeadAttention, GroupQueryAttention (KV cache) and RotaryEmbedding.

Each becomes the ONNX-standard op (onnx_ops_attention.py's Attention, onnx_ops_rotary.py's
RotaryEmbedding) through `onnx_node`, after the contrib op's own steps: the input projection
and its bias, the past state's layout, and the masks in onnxruntime's conventions:

- a key mask (mask_index / key_padding_mask) adds `mask_filter_value` (-10000 unless given)
  to the scores of the keys it hides, a finite value, so a row it hides entirely is a
  uniform average as in onnxruntime (not the 0 of ONNX Attention's -inf masks);
- `unidirectional` hides the future keys with the float's lowest value, replacing the key
  mask there (onnxruntime's PrepareMask). Alone it is ONNX Attention's is_causal (the
  kernel skips the hidden keys: the result is the same);
- GroupQueryAttention's cache is onnxruntime's dynamic one: present = past + the new keys,
  [B, Hkv, P + S, D], with total_sequence_length == P + S (checked in the run when it is no
  constant). seqlens_k[b] + 1 keys are valid for batch entry b, the new ones written at
  seqlens_k[b] + 1 - S (0 at the first prompt, S == total_sequence_length), the rows after
  them zero; query s of entry b sees the keys up to its position (causal) and within
  local_window_size of it. Rotary positions are position_ids, or the write position + s;
  at the first prompt position_ids[0, 0] + s for every entry, as onnxruntime reads them.
  head_sink (or smooth_softmax=1: sinks of 0) is one more key whose K and V are 0 and whose
  bias is the head's sink: exp(sink) more in each softmax's denominator.

What onnxruntime's CPU kernels refuse (Attention's do_rotary and 4-D masks, packed QKV/KV
MultiHeadAttention) and the buffer-sharing, beam-search, quantized-cache and ragged-chunk
inputs are refused with a located error naming the attribute or input.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, StringAttr, i32, i64

from onnxc.dialects import graph, graph_gather_scatter
from onnxc.dialects.dense_data import from_numpy
from onnxc.dialects.size_facts import decide_equal
from onnxc.dialects.symbolic_dims import Dim
from onnxc.frontend import onnx_types as types
from onnxc.frontend.onnx_context import NodeContext, Result, Tensor
from onnxc.frontend.onnx_graph_builder import GraphBuilder, Value, shape
from onnxc.frontend.onnx_ops_attention import _from_end, _to_heads
from onnxc.frontend.onnx_ops_math import Converter
from onnxc.frontend.onnx_ops_microsoft import arange, check_ids, float_builder, onnx_node


def _is_int32(ctx: NodeContext, i: int) -> bool:
    return ctx.element_type(i) == i32


def _refuse_inputs(ctx: NodeContext, names: dict[int, str], why: str) -> None:
    for i, name in names.items():
        if ctx.has_input(i):
            raise ctx.unsupported(f"input {i} ({name}): {why}")


def _size(b: GraphBuilder, n: Dim) -> Value:
    """A size as an int64 [1] tensor (computed in the run when symbolic)."""
    if isinstance(n, int):
        return np.array([n], np.int64)
    return b.value(Tensor.of_array(np.array([n], dtype=object)))


def _broadcast_rows(b: GraphBuilder, row: Value, batch: Dim) -> Value:
    """A [1, n] tensor repeated to [batch, n]."""
    if batch == 1:
        return row
    el = row.type.get_element_type() if not isinstance(row, np.ndarray) else i64
    zeros = b.ctx.emit1(graph.ConstantOfShapeOp(
        properties={"value": from_numpy(np.zeros((1,), np.int64 if el == i64 else np.int32))},
        result_types=[types.tensor_type((batch, 1), el)]))
    return b.add(b.value(row), zeros)


# ---------------------------------------------------------------------------- RotaryEmbedding


def convert_rotary_embedding(ctx: NodeContext) -> list[Result]:
    """RotaryEmbedding (com.microsoft): input [B, S, N*H] or [B, N, S, H], position_ids
    [B, S] or [1] (an offset: positions offset + s), cos / sin caches [max, rd / 2]."""
    b = float_builder(ctx, 2, 3)
    if ctx.attr("is_packed_batching", 0):
        raise ctx.unsupported("is_packed_batching=1 (ragged batches)")
    if float(ctx.attr("scale", 1.0)) != 1.0:
        raise ctx.unsupported("attribute scale other than 1.0 (onnxruntime's CPU kernel "
                              "ignores it)")
    x, cos, sin = b.input(0), b.input(2), b.input(3)
    dims = shape(x)
    heads, rd = ctx.attr("num_heads", 0), ctx.attr("rotary_embedding_dim", 0)
    if len(shape(cos)) != 2 or shape(cos) != shape(sin):
        raise ctx.invalid(f"cos_cache {list(shape(cos))} and sin_cache {list(shape(sin))} "
                          f"must be alike and 2-D")
    attrs = {"interleaved": int(ctx.attr("interleaved", 0))}
    if len(dims) == 4:
        batch, seq, head = dims[0], dims[2], dims[3]
    elif len(dims) == 3:
        batch, seq, hidden = dims
        if rd and not heads:
            raise ctx.invalid("rotary_embedding_dim needs num_heads")
        head = hidden // heads if heads else 2 * shape(cos)[1]
        if head <= 0 or hidden % head:
            raise ctx.invalid(f"hidden size {hidden} does not split into heads of {head}")
        attrs["num_heads"] = hidden // head
    else:
        raise ctx.invalid(f"input {list(dims)} must be 3-D or 4-D")
    rotated = rd or head
    if shape(cos)[1] * 2 != rotated:
        raise ctx.invalid(f"cos_cache dimension 1 ({shape(cos)[1]}) must be head_size / 2 or "
                          f"rotary_embedding_dim / 2 ({rotated // 2})")
    attrs["rotary_embedding_dim"] = rotated
    positions = _rotary_positions(ctx, b, batch, seq)
    check_ids(ctx, positions, shape(cos)[0], "position_ids")
    return onnx_node(ctx, "RotaryEmbedding", [ctx.tensor(0), cos, sin, positions], attrs)


def _rotary_positions(ctx: NodeContext, b: GraphBuilder, batch: Dim, seq: Dim) -> Value:
    ids = b.input(1)
    if ctx.element_type(1) != i64:
        raise ctx.invalid(f"position_ids must be int64, not {ctx.element_type(1)}")
    if shape(ids) == (batch, seq):
        return ids
    if shape(ids) != (1,):
        raise ctx.invalid(f"position_ids {list(shape(ids))} must be [{batch}, {seq}] or [1]")
    row = b.reshape(b.add(arange(b, seq), ids), (1, seq))
    return _broadcast_rows(b, row, batch)


# ---------------------------------------------------------------------------- masks


def _key_mask(ctx: NodeContext, b: GraphBuilder, i: int, batch: Dim, seq: Dim,
              total: Dim, start_positions: bool) -> Value | None:
    """Key mask input `i` (int32) as an additive bias broadcasting to [B, N, S, T]:
    mask_filter_value where it hides a key. Its forms: [B, T] or [B, S, T] of 0 / 1, [B]
    valid lengths (right padding), [2B] ends then starts (left padding too, with
    `start_positions`), [3B + 2] (its first B entries, the key lengths, as onnxruntime's
    CPU kernels read it)."""
    if not ctx.has_input(i):
        return None
    mask = b.input(i)
    if not _is_int32(ctx, i):
        raise ctx.invalid(f"input {i} (the key mask) must be int32, not {ctx.element_type(i)}")
    dims = shape(mask)
    filt = b.floats(float(ctx.attr("mask_filter_value", -10000.0)))
    zero = b.floats(0.0)
    if _fit(dims, (batch, total)) or _fit(dims, (batch, seq, total)):
        keep = b.less(np.zeros((), np.int32), mask)
        bias = b.where(keep, zero, filt)
        return b.reshape(bias, (batch, 1, 1, total) if len(dims) == 2 else (batch, 1, seq, total))
    if len(dims) != 1:
        if len(dims) == 4:
            raise ctx.unsupported(f"a 4-D key mask {list(dims)} (onnxruntime's CPU kernel does "
                                  f"not take one either)")
        raise ctx.invalid(f"key mask {list(dims)} must be [{batch}, {total}], [{batch}, {seq}, "
                          f"{total}], [{batch}]" + (f", [2 * {batch}]" if start_positions else "")
                          + f" or [3 * {batch} + 2]")
    keys = b.reshape(arange(b, total, i32), (1, 1, 1, total))
    if dims in ((batch,), (3 * batch + 2,)):
        ends = mask if dims == (batch,) else b.slice_last(mask, 0, batch)
        hidden = b.less_equal(b.reshape(ends, (batch, 1, 1, 1)), keys)
    elif dims == (2 * batch,) and start_positions:
        ends = b.reshape(b.slice_last(mask, 0, batch), (batch, 1, 1, 1))
        starts = b.reshape(b.slice_last(mask, batch, 2 * batch), (batch, 1, 1, 1))
        hidden = b.emit(graph.OrOp, [b.less_equal(ends, keys), b.less(keys, starts)])
    else:
        raise ctx.invalid(f"key mask {list(dims)} must be [{batch}, {total}], [{batch}, {seq}, "
                          f"{total}], [{batch}]" + (f", [2 * {batch}]" if start_positions else "")
                          + f" or [3 * {batch} + 2]")
    return b.where(hidden, filt, zero)


def _fit(dims: tuple, want: tuple) -> bool:
    """Whether `dims` are `want`, or may be (sizes of other symbols: the reshape to `want`
    makes that a run-time check)."""
    return len(dims) == len(want) and all(decide_equal(d, w) is not False
                                          for d, w in zip(dims, want))


def _with_causal(b: GraphBuilder, bias: Value, seq: Dim, total: Dim) -> Value:
    """`bias` with the future keys' entries replaced by the lowest float: query i sees key j
    when j <= i + (T - S), i.e. T - j >= S - i."""
    visible = b.less_equal(b.reshape(_from_end(b, seq), (seq, 1)),
                           b.reshape(_from_end(b, total), (1, total)))
    return b.where(visible, bias, b.floats(np.finfo(b.dtype).min))


def _attention_bias(ctx: NodeContext, b: GraphBuilder, i: int, full: tuple) -> Value | None:
    if not ctx.has_input(i):
        return None
    bias = b.input(i)
    dims = shape(bias)
    if len(dims) != 4 or dims[0] not in (1, full[0]) or dims[1] not in (1, full[1]) or \
            not _fit(dims[2:], full[2:]):
        raise ctx.invalid(f"attention_bias {list(dims)} must be [{full[0]} or 1, {full[1]} or "
                          f"1, {full[2]}, {full[3]}]")
    return b.reshape(bias, (*dims[:2], *full[2:]))


def _add(b: GraphBuilder, x: Value | None, y: Value | None) -> Value | None:
    return y if x is None else x if y is None else b.add(x, y)


def _attend(ctx: NodeContext, b: GraphBuilder, q: Value, k: Value, v: Value,
            past: tuple[Value, Value] | None, key_mask: Value | None,
            extra_bias: Value | None, causal: bool, qk_wanted: bool = False,
            ) -> list[Result]:
    """ONNX Attention on 4-D Q, K, V ([B, N, S, H]) with the past keys and values, the key
    mask, the attention bias and the unidirectional mask in onnxruntime's conventions:
    [Y [B, S, N*Hv], present K, present V, scores before the softmax if `qk_wanted`]."""
    batch, heads, seq, _ = shape(q)
    total = shape(k)[2] + (shape(past[0])[2] if past is not None else 0)
    bias = _add(b, key_mask, extra_bias)
    in_op = causal and bias is None and not qk_wanted  # ONNX is_causal: the same result
    if causal and not in_op:
        if bias is None:
            bias = b.floats(np.zeros((1, 1, 1, 1), np.float32))
        bias = _with_causal(b, bias, seq, total)
    attrs: dict = {"is_causal": int(in_op)}
    scale = ctx.attr("scale", None)
    if scale is not None:
        attrs["scale"] = float(scale)
    if qk_wanted:
        attrs["qk_matmul_output_mode"] = 2  # scale * Q K^T + the masks
    pk, pv = past if past is not None else (None, None)
    results = onnx_node(ctx, "Attention", [q, k, v, bias, pk, pv], attrs, outputs=4,
                        used=(0, 1, 2, 3) if qk_wanted else (0, 1, 2))
    y = b.transpose(results[0], (0, 2, 1, 3))
    y = b.reshape(y, (batch, seq, heads * shape(y)[3]))
    return [b.value(y), results[1], results[2], results[3] if qk_wanted else None]


# ---------------------------------------------------------------------------- Attention


def convert_attention(ctx: NodeContext) -> list[Result]:
    """Attention (com.microsoft): Q, K, V = input @ weights + bias (packed, split by
    qkv_hidden_sizes), num_heads heads, mask_index, the past state [2, B, N, P, H] and
    present, attention_bias, unidirectional."""
    b = float_builder(ctx, 1, 2, 4, 5)
    if ctx.attr("do_rotary", 0):
        raise ctx.unsupported("do_rotary=1 (onnxruntime's CPU kernel does not take it either)")
    if ctx.attr("past_present_share_buffer", 0):
        raise ctx.unsupported("past_present_share_buffer=1 (a shared cache buffer)")
    _refuse_inputs(ctx, {6: "past_sequence_length"}, "it goes with a shared cache buffer")
    heads = ctx.attr("num_heads")
    x, w = b.input(0), b.input(1)
    if len(shape(x)) != 3 or len(shape(w)) != 2 or shape(w)[0] != shape(x)[2]:
        raise ctx.invalid(f"input {list(shape(x))} must be 3-D and weights {list(shape(w))} "
                          f"[{shape(x)[2] if len(shape(x)) == 3 else '?'}, ...]")
    sizes = ctx.ints("qkv_hidden_sizes") or [shape(w)[1] // 3] * 3
    if len(sizes) != 3 or sum(sizes) != shape(w)[1] or sizes[0] != sizes[1] or \
            heads <= 0 or any(s <= 0 or s % heads for s in sizes):
        raise ctx.invalid(f"qkv_hidden_sizes {sizes} must be 3 positive multiples of num_heads "
                          f"{heads}, Q's and K's equal, summing to the weights' {shape(w)[1]}")
    batch, seq, _ = shape(x)
    (qkv,) = onnx_node(ctx, "MatMul", [ctx.tensor(0), ctx.tensor(1)])
    if ctx.has_input(2):
        bias = b.input(2)
        if shape(bias) != (shape(w)[1],):
            raise ctx.invalid(f"bias {list(shape(bias))} must be [{shape(w)[1]}]")
        qkv = b.add(qkv, bias)
    q = b.slice_last(qkv, 0, sizes[0])
    k = b.slice_last(qkv, sizes[0], 2 * sizes[0])
    v = b.slice_last(qkv, 2 * sizes[0], sum(sizes))
    q, k, v = (_to_heads(b, t, heads) for t in (q, k, v))
    past = None
    if ctx.has_input(4):
        state = b.input(4)
        want = (2, batch, heads, None, sizes[0] // heads)
        if len(shape(state)) != 5 or any(s is not None and d != s
                                         for d, s in zip(shape(state), want)):
            raise ctx.invalid(f"past {list(shape(state))} must be [2, {batch}, {heads}, past, "
                              f"{sizes[0] // heads}]")
        if sizes[2] != sizes[0]:
            raise ctx.invalid("with a past state, Q, K and V have one hidden size")
        inner = shape(state)[1:]
        past = (b.reshape(b.emit(graph.SliceOp, [state], starts=types.i64_array([0]),
                                 ends=types.i64_array([1]), axes=types.i64_array([0]),
                                 steps=types.i64_array([1])), inner),
                b.reshape(b.emit(graph.SliceOp, [state], starts=types.i64_array([1]),
                                 ends=types.i64_array([2]), axes=types.i64_array([0]),
                                 steps=types.i64_array([1])), inner))
    total = seq + (shape(past[0])[2] if past is not None else 0)
    key_mask = _key_mask(ctx, b, 3, batch, seq, total, start_positions=True)
    extra = _attention_bias(ctx, b, 5, (batch, heads, seq, total))
    y, pk, pv, _ = _attend(ctx, b, q, k, v, past, key_mask, extra,
                           bool(ctx.attr("unidirectional", 0)))
    present = None
    if ctx.output_used(1):
        present = b.concat([b.reshape(t, (1, *shape(t))) for t in (pk, pv)], 0)
    return [y, b.value(present) if present is not None else None]


# ---------------------------------------------------------------------------- MultiHeadAttention


def convert_multi_head_attention(ctx: NodeContext) -> list[Result]:
    """MultiHeadAttention: query [B, S, D]; key / value [B, L, D] (+ bias), or [B, N, L, H]
    (cross attention, already projected: no bias); key_padding_mask, attention_bias,
    past_key / past_value [B, N, P, H] with present_key / present_value; qk: the scores
    before the softmax, masks included."""
    b = float_builder(ctx, 1, 2, 3, 5, 6, 7)
    _refuse_inputs(ctx, {8: "past_sequence_length"}, "it goes with a shared cache buffer")
    _refuse_inputs(ctx, {9: "cache_indirection"}, "beam search's cache indirection")
    heads = ctx.attr("num_heads")
    q = b.input(0)
    if len(shape(q)) != 3:
        raise ctx.unsupported(f"query {list(shape(q))}: packed QKV (onnxruntime's CPU kernel "
                              f"does not take it either)" if len(shape(q)) == 5 else
                              f"query {list(shape(q))} must be 3-D")
    if not ctx.has_input(1) or not ctx.has_input(2):
        raise ctx.unsupported("packed KV, or no key / value (onnxruntime's CPU kernel needs "
                              "both, unpacked)")
    batch, seq, hidden = shape(q)
    if heads <= 0 or hidden % heads:
        raise ctx.invalid(f"query hidden size {hidden} is no multiple of num_heads {heads}")
    k, v = b.input(1), b.input(2)
    projected = len(shape(k)) == 4
    if len(shape(k)) != len(shape(v)) or len(shape(k)) not in (3, 4):
        raise ctx.invalid(f"key {list(shape(k))} and value {list(shape(v))} must both be 3-D "
                          f"[B, L, D] or 4-D [B, N, L, H]")
    v_hidden = shape(v)[2] if not projected else shape(v)[1] * shape(v)[3]
    if ctx.has_input(3):
        bias = b.input(3)
        if shape(bias) != (2 * hidden + v_hidden,):
            raise ctx.invalid(f"bias {list(shape(bias))} must be [{2 * hidden + v_hidden}]")
        q = b.add(q, b.slice_last(bias, 0, hidden))
        if not projected:
            k = b.add(k, b.slice_last(bias, hidden, 2 * hidden))
            v = b.add(v, b.slice_last(bias, 2 * hidden, 2 * hidden + v_hidden))
    q = _to_heads(b, q, heads)
    if not projected:
        k, v = _to_heads(b, k, heads), _to_heads(b, v, heads)
    if shape(k)[:2] != (batch, heads) or shape(v)[:3] != shape(k)[:3]:
        raise ctx.invalid(f"key {list(shape(k))} / value {list(shape(v))} do not fit "
                          f"{heads} heads of batch {batch}")
    past = None
    if ctx.has_input(6) or ctx.has_input(7):
        if projected:
            raise ctx.invalid("past_key / past_value with a 4-D (projected) key")
        past = (b.input(6), b.input(7))
    total = shape(k)[2] + (shape(past[0])[2] if past is not None else 0)
    causal = bool(ctx.attr("unidirectional", 0))
    if causal and (projected or shape(k)[2] != seq):
        raise ctx.unsupported(f"unidirectional=1 with {shape(k)[2]} keys for {seq} queries "
                              f"(cross attention: onnxruntime's mask there is no causal one)")
    key_mask = _key_mask(ctx, b, 4, batch, seq, total, start_positions=False)
    extra = _attention_bias(ctx, b, 5, (batch, heads, seq, total))
    return _attend(ctx, b, q, k, v, past, key_mask, extra, causal,
                   qk_wanted=ctx.output_used(3))


# ---------------------------------------------------------------------------- GroupQueryAttention

_GQA_REFUSED = {
    12: ("k_scale", "a quantized KV cache"), 13: ("v_scale", "a quantized KV cache"),
    14: ("q_norm_weight", "per-head Q/K RMS normalization"),
    15: ("k_norm_weight", "per-head Q/K RMS normalization"),
    16: ("query_seqlens", "right-padded query chunks"),
}


def _gqa_refusals(ctx: NodeContext) -> None:
    for i, (name, what) in _GQA_REFUSED.items():
        if ctx.has_input(i):
            raise ctx.unsupported(f"input {i} ({name}): {what}")
    for name, default, what in (("sliding_window_cache", 0, "a window-sized cache"),
                                ("k_quant_type", "NONE", "a quantized KV cache"),
                                ("v_quant_type", "NONE", "a quantized KV cache"),
                                ("qk_output", 0, "the output_qk output")):
        value = ctx.attr(name, default)
        if value != default:
            raise ctx.unsupported(f"attribute {name}={value!r} ({what})")
    if ctx.attr("smooth_softmax", -1) not in (-1, 0, 1):
        raise ctx.invalid(f"smooth_softmax must be -1, 0 or 1, not {ctx.attr('smooth_softmax')}")
    if ctx.has_attr("kv_cache_bit_width"):
        raise ctx.unsupported("attribute kv_cache_bit_width (a quantized KV cache)")
    if ctx.output_used(3):
        raise ctx.unsupported("the output_qk output")


def _total_length(ctx: NodeContext, b: GraphBuilder, length: Dim) -> None:
    """total_sequence_length must be the present length (onnxruntime's dynamic cache):
    checked here when a constant, in the run otherwise."""
    total = ctx.tensor(6)
    if not _is_int32(ctx, 6) or len([d for d in total.shape if d != 1]) > 0:
        raise ctx.invalid(f"total_sequence_length must be an int32 scalar, not "
                          f"{total.element_type} {list(total.shape)}")
    if total.array is not None:
        value = total.array.reshape(-1)[0]
        value = value if not isinstance(value, np.integer) else int(value)
        equal = decide_equal(value, length)
        if equal is False:
            raise ctx.unsupported(f"total_sequence_length {value} where past + new keys are "
                                  f"{length}: only onnxruntime's dynamic cache (total = past "
                                  f"+ new) is supported, not a static one")
        if equal:
            return
    given = b.emit(graph.CastOp, [b.reshape(b.input(6), (1,))], i64)
    excess = b.sub(given, b.reshape(_size(b, length), (1,)))
    ctx.emit(graph.CheckIndicesOp(operands=[b.value(excess)], properties={  # excess == 0
        "bounds": DenseArrayBase.from_list(i64, [1]), "negative": IntegerAttr(0, i64),
        "node": StringAttr(ctx.label), "op_type": StringAttr(ctx.op_name),
        "operand": StringAttr("total_sequence_length (past + sequence length: onnxruntime's "
                              "dynamic cache)")}))


def convert_group_query_attention(ctx: NodeContext) -> list[Result]:
    """GroupQueryAttention: num_heads query heads over kv_num_heads key/value heads, the
    KV cache (past_key / past_value [B, Hkv, P, D] -> present [B, Hkv, P + S, D]) written
    at each entry's seqlens_k, causal (and local_window_size) masks at each entry's
    positions, rotary embedding (do_rotary), attention_bias, softcap, scale."""
    b = float_builder(ctx, 1, 2, 3, 4, 7, 8, 10)
    _gqa_refusals(ctx)
    hq, hkv = ctx.attr("num_heads"), ctx.attr("kv_num_heads")
    query = b.input(0)
    if len(shape(query)) != 3:
        raise ctx.invalid(f"query {list(shape(query))} must be 3-D")
    batch, seq, width = shape(query)
    if hq <= 0 or hkv <= 0 or hq % hkv:
        raise ctx.invalid(f"num_heads {hq} must be a positive multiple of kv_num_heads {hkv}")
    if ctx.has_input(1) != ctx.has_input(2):
        raise ctx.invalid("key and value go together")
    if ctx.has_input(1):
        head = width // hq
        q, k, v = query, b.input(1), b.input(2)
    else:  # packed [B, S, (Hq + 2 Hkv) D]
        head = width // (hq + 2 * hkv)
        q = b.slice_last(query, 0, hq * head)
        k = b.slice_last(query, hq * head, (hq + hkv) * head)
        v = b.slice_last(query, (hq + hkv) * head, (hq + 2 * hkv) * head)
    if head <= 0 or shape(q) != (batch, seq, hq * head) or \
            shape(k) != (batch, seq, hkv * head) or shape(v) != shape(k):
        raise ctx.invalid(f"query {list(shape(query))}, key and value do not split into "
                          f"{hq} / {hkv} heads of one size over {seq} new positions")
    q, k, v = _to_heads(b, q, hq), _to_heads(b, k, hkv), _to_heads(b, v, hkv)
    past_len: Dim = 0
    if ctx.has_input(3) != ctx.has_input(4):
        raise ctx.invalid("past_key and past_value go together")
    if ctx.has_input(3):
        pk, pv = b.input(3), b.input(4)
        if len(shape(pk)) != 4 or shape(pk) != shape(pv) or \
                shape(pk)[:2] != (batch, hkv) or shape(pk)[3] != head:
            raise ctx.invalid(f"past_key {list(shape(pk))} / past_value {list(shape(pv))} "
                              f"must be [{batch}, {hkv}, past, {head}]")
        past_len = shape(pk)[2]
    length = past_len + seq
    _total_length(ctx, b, length)
    seqlens = b.input(5)
    if shape(seqlens) != (batch,) or not _is_int32(ctx, 5):
        raise ctx.invalid(f"seqlens_k must be int32 [{batch}]")
    valid = b.reshape(b.add(b.emit(graph.CastOp, [seqlens], i64), np.ones((), np.int64)),
                      (batch, 1))  # t_b, [B, 1]
    first = isinstance(past_len, int) and past_len == 0
    written = np.zeros((batch, 1), np.int64) if first and isinstance(batch, int) else \
        _write_positions(b, valid, batch, seq, past_len)  # p_b, [B, 1]
    if ctx.attr("do_rotary", 0):
        q, k = _gqa_rotary(ctx, b, q, k, written, batch, seq, past_len)
    elif ctx.has_input(7) or ctx.has_input(8) or ctx.has_input(9):
        raise ctx.invalid("cos_cache / sin_cache / position_ids are read only with do_rotary=1")
    keys = arange(b, length)  # j
    present = []
    for new, past_i in ((k, 3), (v, 4)):
        cache = new if not ctx.has_input(past_i) else \
            b.concat([b.input(past_i), _zeros(b, new)], 2)
        if ctx.has_input(past_i) and not first:
            kept = b.less(b.reshape(keys, (1, 1, length, 1)),
                          b.reshape(written, (batch, 1, 1, 1)))
            cache = b.where(kept, cache, b.floats(0.0))
        if ctx.has_input(past_i):
            cache = b.emit(graph_gather_scatter.TensorScatterOp, [cache, new, b.reshape(written, (batch,))],
                           axis=types.i64_attr(2), circular=types.i64_attr(0))
        present.append(cache)
    bias = _gqa_mask(ctx, b, keys, valid, written, batch, seq, length)
    extra = _attention_bias(ctx, b, 10, (batch, hq, seq, length))
    if extra is not None:
        bias = b.add(bias, extra)
    keys_in, values_in = present
    sinks = _sinks(ctx, b, hq)
    if sinks is not None:  # one more key: K and V 0, its score the head's sink
        keys_in = b.concat([keys_in, _zeros_of(b, (batch, hkv, 1, head))], 2)
        values_in = b.concat([values_in, _zeros_of(b, (batch, hkv, 1, head))], 2)
        per_head = b.add(bias, _zeros_of(b, (1, hq, 1, 1)))
        column = b.add(b.reshape(sinks, (1, hq, 1, 1)), _zeros_of(b, (batch, 1, seq, 1)))
        bias = b.concat([per_head, column], 3)
    attrs: dict = {"is_causal": 0}
    if ctx.has_attr("scale"):
        attrs["scale"] = float(ctx.attr("scale"))
    if float(ctx.attr("softcap", 0.0)):
        attrs["softcap"] = float(ctx.attr("softcap"))
    results = onnx_node(ctx, "Attention", [q, keys_in, values_in, bias], attrs,
                        outputs=3, used=(0,))
    y = b.transpose(results[0], (0, 2, 1, 3))
    y = b.reshape(y, (batch, seq, hq * head))
    return [b.value(y), b.value(present[0]), b.value(present[1]), None]


def _sinks(ctx: NodeContext, b: GraphBuilder, heads: int) -> Value | None:
    """Each query head's sink logit (head_sink, or 0 with smooth_softmax=1): a term
    exp(sink) more in the softmax's denominator; None without either."""
    if ctx.has_input(11):
        sinks = b.input(11)
        if shape(sinks) != (heads,):
            raise ctx.invalid(f"head_sink {list(shape(sinks))} must be [{heads}]")
        return sinks
    return b.floats(np.zeros(heads)) if ctx.attr("smooth_softmax", -1) == 1 else None


def _zeros(b: GraphBuilder, like: Value) -> Value:
    return _zeros_of(b, shape(like))


def _zeros_of(b: GraphBuilder, dims: tuple) -> Value:
    """Zeros of the node's float type, an array when `dims` are static."""
    if all(isinstance(d, int) for d in dims):
        return b.floats(np.zeros(dims))
    return b.ctx.emit1(graph.ConstantOfShapeOp(
        properties={"value": from_numpy(np.zeros((1,), b.dtype))},
        result_types=[types.tensor_type(dims, b.el)]))


def _write_positions(b: GraphBuilder, valid: Value, batch: Dim, seq: Dim,
                     past_len: Dim) -> Value:
    """Where each entry's new keys go, [B, 1] int64: t_b - S, or 0 at the first prompt
    (no past: S == total_sequence_length)."""
    behind = b.sub(valid, _size(b, seq))
    if isinstance(past_len, int):
        return behind if past_len else b.mul(behind, np.zeros((), np.int64))
    later = b.emit(graph.CastOp, [b.less(np.zeros((), np.int64), _size(b, past_len))], i64)
    return b.mul(behind, later)


def _gqa_mask(ctx: NodeContext, b: GraphBuilder, keys: Value, valid: Value, written: Value,
              batch: Dim, seq: Dim, length: Dim) -> Value:
    """0 where query s of entry b sees key j, -inf elsewhere, [B, 1, S, L]: j < t_b, and
    (causal) j <= p_b + s, and (local_window_size W > 0) j > p_b + s - W."""
    window = ctx.attr("local_window_size", -1)
    causal = ctx.attr("causal", 1)
    if causal not in (0, 1):
        raise ctx.invalid(f"causal must be 0 or 1, not {causal}")
    if window != -1 and (not causal or window <= 0):
        raise ctx.invalid(f"local_window_size {window} must be -1, or positive with causal=1")
    j = b.reshape(keys, (1, 1, 1, length))
    allowed = b.less(j, b.reshape(valid, (batch, 1, 1, 1)))
    if causal:
        position = b.add(b.reshape(written, (batch, 1, 1, 1)),
                         b.reshape(arange(b, seq), (1, 1, seq, 1)))  # p_b + s
        allowed = b.and_(allowed, b.less_equal(j, position))
        if window > 0:
            allowed = b.and_(allowed, b.less(position, b.add(j, np.array(window, np.int64))))
    return b.where(allowed, b.floats(0.0), b.floats(-np.inf))


def _gqa_rotary(ctx: NodeContext, b: GraphBuilder, q: Value, k: Value, written: Value,
                batch: Dim, seq: Dim, past_len: Dim) -> tuple[Value, Value]:
    """Q and the new K rotated (ONNX RotaryEmbedding on [B, H, S, D]) at position_ids, or
    at p_b + s; at the first prompt position_ids[0, 0] + s for every entry."""
    if not ctx.has_input(7) or not ctx.has_input(8):
        raise ctx.invalid("do_rotary=1 needs cos_cache and sin_cache")
    cos, sin = b.input(7), b.input(8)
    if len(shape(cos)) != 2 or shape(cos) != shape(sin):
        raise ctx.invalid(f"cos_cache {list(shape(cos))} / sin_cache {list(shape(sin))} must "
                          f"be alike and 2-D")
    rotated = 2 * shape(cos)[1]
    steps = b.reshape(arange(b, seq), (1, seq))
    if ctx.has_input(9):
        ids = b.input(9)
        if shape(ids) != (batch, seq) or ctx.element_type(9) != i64:
            raise ctx.invalid(f"position_ids must be int64 [{batch}, {seq}]")
        corner = b.emit(graph.SliceOp, [ids], starts=types.i64_array([0, 0]),
                        ends=types.i64_array([1, 1]), axes=types.i64_array([0, 1]),
                        steps=types.i64_array([1, 1])) if not isinstance(ids, np.ndarray) \
            else ids[:1, :1]
        first = _broadcast_rows(b, b.add(corner, steps), batch)
        if isinstance(past_len, int):
            positions = first if past_len == 0 else ids
        else:
            later = b.less(np.zeros((), np.int64), _size(b, past_len))
            positions = b.where(later, ids, first)
    else:
        positions = b.add(written, steps)
    check_ids(ctx, positions, shape(cos)[0], "position_ids")
    attrs = {"interleaved": int(ctx.attr("rotary_interleaved", 0)),
             "rotary_embedding_dim": rotated}
    (q,) = onnx_node(ctx, "RotaryEmbedding", [q, cos, sin, positions], attrs)
    (k,) = onnx_node(ctx, "RotaryEmbedding", [k, cos, sin, positions], attrs)
    return q, k


CONVERTERS: dict[str, Converter] = {
    "Attention": convert_attention,
    "MultiHeadAttention": convert_multi_head_attention,
    "GroupQueryAttention": convert_group_query_attention,
    "RotaryEmbedding": convert_rotary_embedding,
}
"""com.microsoft's attention family, by op type."""
