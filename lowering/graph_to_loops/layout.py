"""Kernels of `graph.layout_convert` and `layout.convert`: transposes by the permutation.

The shape is collapsed like the transpose kernel's (dims that stay adjacent are merged), so
NCHW -> NHWC is [N, C, H*W] -> [N, H*W, C]. When the innermost output dimension is not the
innermost input one (a real transpose), both are walked in TILE x TILE tiles, so reads and
writes each touch TILE cache lines per tile instead of striding the whole plane.
"""

from __future__ import annotations

from collections.abc import Sequence

from onnxc.dialects import graph
from onnxc.dialects.graph import shape_of
from onnxc.dialects.layout import (
    PLAIN_LETTERS,
    ConvertOp,
    layout_of,
    parse_spec,
    physical_shape,
)
from onnxc.errors import LoweringError
from onnxc.lowering.graph_to_loops.data_movement import collapse_transpose
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder

TILE = 16
"""Tile edge of the blocked transpose: 16 floats = one 64-byte cache line."""


def permute(kb: KernelBuilder, src, dst, shape: Sequence[int], perm: Sequence[int]) -> None:
    """dst = transpose(src, perm) for row-major buffers, `shape` being src's."""
    in_shape, perm = collapse_transpose(shape, perm)
    out_shape = [in_shape[p] for p in perm]
    src, dst = kb.view(src, in_shape), kb.view(dst, out_shape)
    rank = len(perm)
    inner_in = rank - 1
    at_out = perm.index(inner_in)  # where the input's contiguous dim lands in the output

    def move(ivs: list[Index]) -> None:
        index: list[Index] = [0] * rank
        for j, p in enumerate(perm):
            index[p] = ivs[j]
        kb.store(kb.load(src, index), dst, ivs)

    if perm[-1] == inner_in:
        kb.nest(out_shape, move)
        return
    # Tile the output's last dim and the input's last dim; the others are plain loops.
    outer = [j for j in range(rank) if j not in (at_out, rank - 1)]
    tiled = [at_out, rank - 1]

    def tiles(ivs: list[Index]) -> None:
        def block(bs: list[Index]) -> None:
            starts = [kb.imul(b, TILE) for b in bs]
            bounds = [(s, kb.imin(kb.iadd(s, TILE), out_shape[d])) for s, d in zip(starts, tiled)]

            def inner(ts: list[Index]) -> None:
                full: list[Index] = [0] * rank
                for d, v in zip(outer, ivs):
                    full[d] = v
                for d, v in zip(tiled, ts):
                    full[d] = v
                move(full)

            kb.nest(bounds, inner)

        kb.nest([-(-out_shape[d] // TILE) for d in tiled], block)

    kb.nest([out_shape[d] for d in outer], tiles)


def layout_convert_kernel(op: graph.LayoutConvertOp, kb: KernelBuilder, ins, outs):
    permute(kb, ins[0], outs[0], shape_of(op.input), op.permutation())


def convert_kernel(op: ConvertOp, kb: KernelBuilder, ins, outs):
    """`layout.convert` between unblocked layouts: physical input -> physical output order."""
    src_t, dst_t = op.input.type, op.output.type
    shape = list(src_t.get_shape())  # type: ignore[union-attr]
    specs = [layout_of(src_t), layout_of(dst_t)]
    letters = []
    for spec in specs:
        if spec is None:
            letters.append(PLAIN_LETTERS[len(shape)])
            continue
        order, block, _ = parse_spec(spec)
        if block != 1:
            raise LoweringError(f"layout.convert: blocked layout '{spec}' has no kernel")
        letters.append(order)
    src_letters, dst_letters = letters
    perm = [src_letters.index(d) for d in dst_letters]
    permute(kb, ins[0], outs[0], physical_shape(shape, specs[0]), perm)


KERNELS = {graph.LayoutConvertOp: layout_convert_kernel, ConvertOp: convert_kernel}
