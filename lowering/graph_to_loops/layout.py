"""The kernel of `layout.convert` between unblocked layouts: a transpose by the permutation.

The shape is collapsed like the transpose kernel's (dims that stay adjacent are merged), so
NCHW -> NHWC is [N, C, H*W] -> [N, H*W, C]. When the innermost output dimension is not the
innermost input one (a real transpose), both are walked in TILE x TILE tiles, so reads and
writes each touch TILE cache lines per tile instead of striding the whole plane. The
outermost of those loops that has more than one trip is the parallel one: a model's NCHW
input of three channels is [1, 3, 50176] -> [1, 50176, 3], whose only long loop is the
tiles' (ShuffleNet's input conversion ran serially: 86 us at one thread, 92 at two).
"""

from __future__ import annotations

from collections.abc import Sequence

from onnxc.dialects.graph_base import shape_of
from onnxc.dialects.layout import (
    PLAIN_LETTERS,
    ConvertOp,
    layout_of,
    parse_spec,
    physical_shape,
)
from onnxc.dialects.symbolic_dims import Dim
from onnxc.errors import LoweringError
from onnxc.lowering.graph_to_loops.data_movement import collapse_transpose
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder, parallel_nest
from onnxc.lowering.graph_to_loops.rules import KernelRule

TILE = 16
"""Tile edge of the blocked transpose: 16 floats = one 64-byte cache line."""


def permute(kb: KernelBuilder, src, dst, shape: Sequence[Dim], perm: Sequence[int]) -> None:
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
        parallel_nest(kb, [kb.dim(d) for d in out_shape], move)
        return
    # Tile the output's last dim and the input's last dim; the others are plain loops.
    # Full TILE x TILE tiles have static bounds (LLVM unrolls and vectorizes them); the
    # remainder strips are separate static-bound loops, so no tile needs a min().
    outer = [j for j in range(rank) if j not in (at_out, rank - 1)]
    tiled = [rank - 1, at_out]
    sizes = [out_shape[d] for d in tiled]

    full0, rem0 = sizes[0] // TILE, sizes[0] % TILE
    full1, rem1 = sizes[1] // TILE, sizes[1] % TILE
    outer_sizes = [out_shape[d] for d in outer]
    trips = [*outer_sizes, full0, full1]
    par = next((i for i, d in enumerate(trips) if not isinstance(d, int) or d > 1), None)

    def loop(level: int):
        return kb.parallel_for if level == par else kb.for_

    def tiles(ivs: list[Index]) -> None:
        def tile(starts: list[Index], extents: list[int]) -> None:
            def inner(ts: list[Index]) -> None:
                full: list[Index] = [0] * rank
                for d, v in zip(outer, ivs):
                    full[d] = v
                for d, s0, t in zip(tiled, starts, ts):
                    full[d] = kb.iadd(s0, t)
                move(full)

            if isinstance(extents[0], int) and extents[0] < TILE:
                # few output columns (an image's 3 channels): walk the input's rows in the
                # outer loop, so that each iteration stores its output row's few values
                # together and LLVM vectorizes the loop with interleaved stores
                kb.nest(extents[::-1], lambda ts: inner(ts[::-1]))
            else:
                kb.nest(extents, inner)

        def strip(s0: Index, e0: Dim) -> None:
            loop(len(outer) + 1)(0, full1, lambda b: tile([s0, kb.imul(b, TILE)], [e0, TILE]))
            if not _is_zero(rem1):  # a run-time size: a run-time remainder
                tile([s0, full1 * TILE], [e0, rem1])

        loop(len(outer))(0, full0, lambda a: strip(kb.imul(a, TILE), TILE))
        if not _is_zero(rem0):
            strip(full0 * TILE, rem0)

    def outer_nest(level: int, ivs: list[Index]) -> None:
        if level == len(outer):
            tiles(ivs)
            return
        loop(level)(0, outer_sizes[level], lambda i: outer_nest(level + 1, [*ivs, i]))

    outer_nest(0, [])


def _is_zero(d: Dim) -> bool:
    return isinstance(d, int) and d == 0


def convert_kernel(op: ConvertOp, kb: KernelBuilder, ins, outs):
    """`layout.convert` between unblocked layouts: physical input -> physical output order
    (sizes may be symbolic: run-time loop bounds and tile remainders)."""
    src_t, dst_t = op.input.type, op.output.type
    shape = list(shape_of(src_t))
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


RULES = (KernelRule(ConvertOp, convert_kernel, symbolic=True),)
"""symbolic: a symbolic conv's input and output convert at run time sizes."""
