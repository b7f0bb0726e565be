"""RotaryEmbedding (opset 23) as a decomposition into Gather, Slice, Mul, Sub/Add, Concat.

Each rotated pair (x1, x2) of a head becomes (cos x1 - sin x2, sin x1 + cos x2), the pairs
being the two halves of the first rotary_embedding_dim channels, or adjacent channels when
`interleaved`; the other channels pass through. cos / sin come from the caches gathered at
position_ids ([B, S] -> [B, S, rd/2]) or are given per position already. A decomposition
rather than a kernel: every step is an existing vectorized elementwise or copy kernel, the
op is a small share of a transformer layer's time, and the fusions may merge the
elementwise steps.
"""

from __future__ import annotations

from xdsl.dialects.builtin import IntegerType

from onnxc.frontend import onnx_types as types
from onnxc.frontend.onnx_context import NodeContext, Result
from onnxc.frontend.onnx_graph_builder import GraphBuilder, Value, shape
from onnxc.frontend.onnx_ops_math import Converter


def _caches(ctx: NodeContext, b: GraphBuilder, batch: int, seq: int,
            half: int) -> tuple[Value, Value]:
    """cos and sin as [B, S, rd/2]."""
    cos, sin = b.input(1), b.input(2)
    if ctx.element_type(1) != b.el or ctx.element_type(2) != b.el:
        raise ctx.invalid("cos_cache and sin_cache must have the input's element type")
    if ctx.has_input(3):
        ids = b.input(3)
        if not isinstance(ctx.element_type(3), IntegerType) or shape(ids) != (batch, seq):
            raise ctx.invalid(f"position_ids must be integers [{batch}, {seq}], not "
                              f"{ctx.element_type(3)} {shape(ids)}")
        if len(shape(cos)) != 2 or shape(cos) != shape(sin):
            raise ctx.invalid(f"with position_ids, the caches must be 2D and alike, not "
                              f"{shape(cos)} / {shape(sin)}")
        cos, sin = b.gather0(cos, ids), b.gather0(sin, ids)
    for name, cache in (("cos_cache", cos), ("sin_cache", sin)):
        if shape(cache) != (batch, seq, half):
            raise ctx.invalid(f"{name} {shape(cache)} must be [{batch}, {seq}, {half}]")
    return cos, sin


def convert_rotary_embedding(ctx: NodeContext) -> list[Result]:
    el = ctx.element_type(0)
    if not types.is_float(el):
        raise ctx.unsupported(f"element type {el} (float types only)")
    b = GraphBuilder(ctx, el)
    x = b.input(0)
    dims = shape(x)
    if len(dims) == 4:  # [B, H, S, D]: cos / sin broadcast over the heads (axis 1)
        batch, _, seq, head = dims
        head_axis = 1
    elif len(dims) == 3:  # [B, S, H*D] viewed as [B, S, H, D]
        heads = ctx.attr("num_heads", 0)
        if heads <= 0 or dims[2] % heads:
            raise ctx.invalid(f"3D input {dims} needs num_heads dividing its last dimension")
        batch, seq, head = dims[0], dims[1], dims[2] // heads
        x = b.reshape(x, (batch, seq, heads, head))
        head_axis = 2
    else:
        raise ctx.invalid(f"input {dims} must be 3D or 4D")
    rd = ctx.attr("rotary_embedding_dim", 0) or head
    if rd % 2 or rd > head:
        raise ctx.invalid(f"rotary_embedding_dim {rd} must be even and at most {head}")
    half = rd // 2
    cos, sin = _caches(ctx, b, batch, seq, half)
    table = [batch, seq, half]
    table.insert(head_axis, 1)  # [B, 1, S, rd/2] or [B, S, 1, rd/2]
    cos, sin = b.reshape(cos, table), b.reshape(sin, table)
    if ctx.attr("interleaved", 0):
        # channel pairs (2i, 2i+1): view [..., rd] as [..., rd/2, 2]
        pairs = b.slice_last(x, 0, rd)
        pairs = b.reshape(pairs, (*shape(pairs)[:-1], half, 2))
        x1, x2 = b.slice_last(pairs, 0, 1), b.slice_last(pairs, 1, 2)
        cos = b.reshape(cos, (*shape(cos), 1))
        sin = b.reshape(sin, (*shape(sin), 1))
    else:
        x1, x2 = b.slice_last(x, 0, half), b.slice_last(x, half, rd)
    real = b.sub(b.mul(cos, x1), b.mul(sin, x2))
    imag = b.add(b.mul(sin, x1), b.mul(cos, x2))
    rotated = b.concat([real, imag], len(shape(real)) - 1)
    if ctx.attr("interleaved", 0):  # [..., rd/2, 2] back to [..., rd]
        rotated = b.reshape(rotated, (*shape(rotated)[:-2], rd))
    if rd < head:
        rotated = b.concat([rotated, b.slice_last(x, rd, head)], len(shape(x)) - 1)
    return [b.reshape(rotated, dims)]


CONVERTERS: dict[str, Converter] = {
    "RotaryEmbedding": convert_rotary_embedding,
}
