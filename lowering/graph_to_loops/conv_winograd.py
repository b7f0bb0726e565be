"""Winograd F(4x4, 3x3): stride-1 3x3 f32 convolutions in NHWC with 4x fewer multiplies.

Each 4x4 block of outputs ("tile") is Y = A^T [ sum_c (G g_c G^T) . (B^T d_c B) ] A over the
6x6 input patch d_c of each channel c (Lavin & Gray 2016, points 0, +-1, +-2). Written as
matrices, the sum over channels at each of the 36 transform points xi is one GEMM:
M[xi] (tiles x Cout) = V[xi] (tiles x C) @ U[xi] (C x Cout). The kernel runs in three
phases, each a parallel loop:

1. input transform: V[xi, p, c] = (B^T d B)[xi] for every tile p, vectorized over channels,
   read from a zero-bordered copy of the input that covers the whole tile grid (the
   bottom and right tiles of a map whose size is not a multiple of 4 read past it);
2. the 36 products on the packed micro-kernel (gemm_microkernel.PackedGemm), U packed at
   compile time from the filter transform G g G^T; threads split the 36 points;
3. output transform: Y = A^T M A per tile, vectorized over output channels, with the bias,
   the residual of graph.conv_add and the activation applied before the one store (only
   the outputs inside the map are stored).

The batch may be symbolic (a model exported with a dynamic batch axis): the tile count,
V, M and the bordered copy are then run-time sizes, and the products' last row block is
the micro-kernel's run-time remainder.

Accuracy: the transforms multiply by constants up to 8 (A^T) and 5 (B^T), so rounding
errors grow. Against a float64 reference on N(0, 1) inputs and weights scaled 1/sqrt(9 C)
(tests/unit/ops/test_conv_winograd.py), max |error| / max |output| measured 1.3e-6 to
3.4e-6 with 16-48 channels and 9.2e-6 with 272 (the direct conv: 1.9e-7 to 1.4e-6, 6-7x
less); the tests hold it to `ERROR_BOUND`.

When (`applies`): 3x3, stride 1, dilation 1, one group, static height and width, channel
counts a multiple of the vector width, and enough tiles (`MIN_TILES`: per image when the
batch is symbolic) that streaming the 4x larger transformed weights is paid back by the
products saved.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, MemRefType, VectorType, f32
from xdsl.ir import Operation, SSAValue

from onnxc.dialects import graph
from onnxc.dialects.dense_data import from_numpy, zeros
from onnxc.dialects.graph_epilogue import epilogue_of
from onnxc.dialects.symbolic_dims import Dim, is_static
from onnxc.lowering.graph_to_loops import gemm_bf16
from onnxc.lowering.graph_to_loops.branches import choose
from onnxc.lowering.graph_to_loops.buffer_types import RunTimeScratch
from onnxc.lowering.graph_to_loops.conv_nhwc import (
    ConvGeometry,
    geometry,
    supports_nhwc,
    weight_value,
)
from onnxc.lowering.graph_to_loops.conv_padded_input import pad_input, scratch_of
from onnxc.lowering.graph_to_loops.epilogue import activate, clamp_vectors, on_vectors
from onnxc.lowering.graph_to_loops.gemm_microkernel import PackedGemm
from onnxc.lowering.graph_to_loops.gemm_tiles import GemmShape, pack, tiling_for
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder
from onnxc.target import Target

TILE = 4
"""outputs per tile side"""
PATCH = TILE + 2
"""inputs per tile side: the tile and the 3x3 window's border"""
POINTS = PATCH * PATCH

B_T = np.array([[4, 0, -5, 0, 1, 0],
                [0, -4, -4, 1, 1, 0],
                [0, 4, -4, -1, 1, 0],
                [0, -2, -1, 2, 1, 0],
                [0, 2, -1, -2, 1, 0],
                [0, 4, 0, -5, 0, 1]], np.float64)
G = np.array([[1 / 4, 0, 0],
              [-1 / 6, -1 / 6, -1 / 6],
              [-1 / 6, 1 / 6, -1 / 6],
              [1 / 24, 1 / 12, 1 / 6],
              [1 / 24, -1 / 12, 1 / 6],
              [0, 0, 1]], np.float64)
A_T = np.array([[1, 1, 1, 1, 1, 0],
                [0, 1, -1, 2, -2, 0],
                [0, 1, 1, 4, 4, 0],
                [0, 1, -1, 8, -8, 1]], np.float64)

TRANSFORM_COLUMNS = 1024
"""Columns of the weights' [9, C * Cout] taps the filter transform takes at a time: its
float64 product, [36, 1024] (288 KiB), stays in the L2 and its memory is reused."""

MIN_TILES = 4
"""Fewer tiles than this and the products are too few rows to pay for streaming U, 4x the
direct conv's packed weights, from memory. ResNet-50's 7x7 maps at batch 1 have 4 (rows of
the micro-kernel half empty): taking them too made the whole net 64.2 -> 61.9 ms (one
thread, Zen 4; the 512-channel layer alone 2.2 -> 1.9 ms). With a symbolic batch, the tiles
of one image count."""
ERROR_BOUND = 2e-5
"""max |winograd - exact| / max |exact| allowed by the tests (measured: at most 9.2e-6)"""


@dataclass(frozen=True)
class TileGrid:
    """The 4x4 tiles covering a conv's output, and the sizes of the kernel's buffers."""

    conv: ConvGeometry

    @property
    def tiles_h(self) -> int:
        return -(-self.conv.oh // TILE)

    @property
    def tiles_w(self) -> int:
        return -(-self.conv.ow // TILE)

    @property
    def per_image(self) -> int:
        return self.tiles_h * self.tiles_w

    @property
    def tiles(self) -> Dim:
        return self.conv.n * self.per_image

    @cached_property
    def padded(self) -> ConvGeometry:
        """The conv with bottom and right pads grown so that every tile's patch is inside
        the padded input (never shrunk: the original pads are inside the grid)."""
        g = self.conv
        return replace(g, pb=TILE * self.tiles_h + 2 - g.h - g.pt,
                       pr=TILE * self.tiles_w + 2 - g.w - g.pl)


def applies(op: Operation, target: Target) -> bool:
    """Whether `op` runs as Winograd on `target` (see the module docstring's When)."""
    if not supports_nhwc(op) or gemm_bf16.requested(op):
        return False
    g = geometry(op)
    vw = tiling_for(target).vw
    if not is_static([g.h, g.w]):
        return False
    grid = TileGrid(g)
    tiles = grid.tiles if isinstance(grid.tiles, int) else grid.per_image
    return ((g.kh, g.kw, g.sh, g.sw, g.dh, g.dw, g.groups) == (3, 3, 1, 1, 1, 1, 1)
            and g.c % vw == 0 and g.cout % vw == 0 and tiles >= MIN_TILES)


def transformed_weights(op: Operation, target: Target) -> DenseIntOrFPElementsAttr:
    """U[xi] = (G W[m, c] G^T)[xi] as 36 C x Cout matrices, each packed for the micro-kernel,
    one after the other (computed in float64, rounded once).

    One [36, 9] x [9, C * Cout] product (kron(G, G) maps a tap (k, l) to a point (i, j)),
    a k-block of C at a time and TRANSFORM_COLUMNS columns of it at a time, each point's
    k-block packed where it goes. The whole product in float64, its float32 copy and the
    float64 taps were 130 MB of fresh pages for a 512 x 512 conv, 0.2-0.5 s in a compile
    on a Zen 3 VM: ResNet-50's 13 transforms took 0.7-1.0 s of its 3.5-4.8 s cold compile,
    which is now 2.3-3.3 s (old and new trees alternating; the packed bits are the same)."""
    grid, t = TileGrid(geometry(op)), tiling_for(target)
    g = grid.conv
    w = weight_value(op)
    assert w is not None
    cout, c = w.shape[:2]
    shape = _point_shape(grid)
    npad = shape.npad(t)
    size = g.c * npad
    packed = zeros(POINTS * size, np.float32)
    kron = np.kron(G, G)
    points = np.empty((POINTS, min(t.kc, c) * cout), np.float32)
    for c0 in range(0, c, t.kc):  # the packing's k-blocks
        depth = min(t.kc, c - c0)
        taps = w[:, c0:c0 + depth].transpose(2, 3, 1, 0).reshape(9, depth * cout)
        block = points[:, :depth * cout]
        for col in range(0, depth * cout, TRANSFORM_COLUMNS):
            end = col + TRANSFORM_COLUMNS
            block[:, col:end] = kron @ taps[:, col:end].astype(np.float64)
        block_shape = replace(shape, k=depth)
        for xi in range(POINTS):
            at = xi * size + c0 * npad
            pack(block[xi].reshape(depth, cout), block_shape, t,
                 out=packed[at:at + depth * npad])
    return from_numpy(packed, f32)


def scratch(op: Operation, target: Target) -> list[MemRefType | RunTimeScratch]:
    """The bordered input copy, V [36, tiles, C] and M [36, tiles, Cout] (flat in the
    dynamic arena when the batch is symbolic)."""
    grid = TileGrid(geometry(op))
    p = grid.padded
    return [scratch_of(f32, [p.n, p.hp, p.wp, p.c]),
            scratch_of(f32, [POINTS, grid.tiles, p.c]),
            scratch_of(f32, [POINTS, grid.tiles, p.cout])]


def _point_shape(grid: TileGrid) -> GemmShape:
    return GemmShape(grid.tiles, grid.conv.cout, grid.conv.c, False, False, 1.0, 0.0, None)


# ----------------------------------------------------------------------- transforms


def _combine(kb: KernelBuilder, coefficients, values: list[SSAValue],
             vtype: VectorType) -> SSAValue:
    """sum_k coefficients[k] * values[k], skipping zeros; a +-1 term is an add or sub."""
    terms = [(float(c), v) for c, v in zip(coefficients, values) if c != 0]
    terms.sort(key=lambda cv: abs(cv[0]) != 1)  # start from a term without a multiply
    c0, acc = terms[0]
    if c0 == -1:
        acc = kb.float_op(arith.SubfOp, kb.vsplat(kb.constant(0.0, f32), vtype), acc)
    elif c0 != 1:
        acc = kb.float_op(arith.MulfOp, kb.vsplat(kb.constant(c0, f32), vtype), acc)
    for c, v in terms[1:]:
        if c == 1:
            acc = kb.float_op(arith.AddfOp, acc, v)
        elif c == -1:
            acc = kb.float_op(arith.SubfOp, acc, v)
        else:
            acc = kb.vfma(kb.vsplat(kb.constant(c, f32), vtype), v, acc)
    return acc


def _sandwich(kb: KernelBuilder, left: np.ndarray, x: list[list[SSAValue]],
              vtype: VectorType) -> list[list[SSAValue]]:
    """left @ x @ left^T over a square grid of vectors."""
    cols = [[_combine(kb, left[a], [x[k][j] for k in range(len(x))], vtype)
             for j in range(len(x[0]))] for a in range(left.shape[0])]
    return [[_combine(kb, left[b], cols[a], vtype) for b in range(left.shape[0])]
            for a in range(left.shape[0])]


class WinogradConv:
    """Emits the three phases (see the module docstring) into one kernel."""

    def __init__(self, op: Operation, kb: KernelBuilder, ins, outs):
        self.op, self.kb = op, kb
        self.t = tiling_for(kb.target)
        self.grid = grid = TileGrid(geometry(op))
        self.g = g = grid.conv
        self.tiles = kb.dim(grid.tiles)
        self.vtype = VectorType(f32, [self.t.vw])
        has_bias = op.bias is not None
        residual = isinstance(op, graph.ConvAddOp)
        n_ops = 2 + has_bias + residual
        self.x = ins[0]
        self.bias = ins[2] if has_bias else None
        self.z = kb.view(ins[n_ops - 1], [g.n * g.oh * g.ow * g.cout]) if residual else None
        self.u = ins[n_ops]
        self.xpad, self.v, self.m = ins[n_ops + 1:n_ops + 4]
        self.y = kb.view(outs[0], [g.n * g.oh * g.ow * g.cout])

    def build(self) -> None:
        kb, grid = self.kb, self.grid
        p = grid.padded
        src = pad_input(kb, p, self.x, self.xpad)
        self.input_transform(src, kb.view(self.v, [POINTS * grid.tiles * p.c]))
        _PointProducts(self.op, kb, grid, self.v, self.m, self.u).build()
        self.output_transform(kb.view(self.m, [POINTS * grid.tiles * p.cout]))

    def tile_rows(self, body) -> None:
        """body(n, ty, p0) for each row of tiles (the parallel loop), p0 its first tile."""
        kb, grid = self.kb, self.grid

        def row(r: Index) -> None:
            n = kb.idiv(r, grid.tiles_h)
            body(n, kb.isub(r, kb.imul(n, grid.tiles_h)), kb.imul(r, grid.tiles_w))

        kb.parallel_for(0, self.g.n * grid.tiles_h, row)

    def input_transform(self, src: SSAValue, v: SSAValue) -> None:
        kb, grid, vw = self.kb, self.grid, self.t.vw
        p = grid.padded
        stride = kb.imul(self.tiles, p.c)  # between points in V

        def row(n: Index, ty: Index, p0: Index) -> None:
            top = kb.imul(kb.iadd(kb.imul(n, p.hp), kb.imul(ty, TILE)), p.wp * p.c)

            def tile(tx: Index) -> None:
                corner = kb.iadd(top, kb.imul(tx, TILE * p.c))
                out = kb.imul(kb.iadd(p0, tx), p.c)

                def channels(cv: Index) -> None:
                    c = kb.imul(cv, vw)
                    at = kb.iadd(corner, c)
                    d = [[kb.vload(src, [kb.iadd(at, (i * p.wp + j) * p.c)], self.vtype)
                          for j in range(PATCH)] for i in range(PATCH)]
                    vs = _sandwich(kb, B_T, d, self.vtype)
                    dst = kb.iadd(out, c)
                    for i in range(PATCH):
                        for j in range(PATCH):
                            kb.vstore(vs[i][j], v,
                                      [kb.iadd(dst, kb.imul(stride, i * PATCH + j))])

                kb.for_(0, p.c // vw, channels)

            kb.for_(0, grid.tiles_w, tile)

        self.tile_rows(row)

    def output_transform(self, m: SSAValue) -> None:
        """Full tiles store 4x4 outputs; the last tile of a row or column keeps only those
        inside the map (a static count per branch)."""
        kb, grid, g = self.kb, self.grid, self.g
        last_h, last_w = g.oh - TILE * (grid.tiles_h - 1), g.ow - TILE * (grid.tiles_w - 1)

        def row(n: Index, ty: Index, p0: Index) -> None:
            def columns(rows: int) -> None:
                full_w = grid.tiles_w if last_w == TILE else grid.tiles_w - 1
                kb.for_(0, full_w, lambda tx: self.output_tile(m, n, ty, tx, p0, rows, TILE))
                if last_w != TILE:
                    self.output_tile(m, n, ty, grid.tiles_w - 1, p0, rows, last_w)

            if last_h == TILE:
                columns(TILE)
                return
            is_last = kb.insert(arith.CmpiOp(kb.idx(ty), kb.idx(grid.tiles_h - 1), "eq"))
            choose(kb, is_last, lambda: columns(last_h) or [], lambda: columns(TILE) or [])

        self.tile_rows(row)

    def output_tile(self, m: SSAValue, n: Index, ty: Index, tx: Index, p0: Index,
                    rows: int, cols: int) -> None:
        kb, g, vw = self.kb, self.g, self.t.vw
        stride = kb.imul(self.tiles, g.cout)
        src = kb.imul(kb.iadd(p0, tx), g.cout)
        pixel = kb.iadd(kb.imul(kb.iadd(kb.imul(n, g.oh), kb.imul(ty, TILE)), g.ow),
                        kb.imul(tx, TILE))
        epilogue = epilogue_of(self.op)
        scalar_act = epilogue is not None and not on_vectors(epilogue[0])

        def channels(jv: Index) -> None:
            j = kb.imul(jv, vw)
            at = kb.iadd(src, j)
            mv = [[kb.vload(m, [kb.iadd(at, kb.imul(stride, i * PATCH + k))], self.vtype)
                   for k in range(PATCH)] for i in range(PATCH)]
            ys = _sandwich(kb, A_T, mv, self.vtype)
            bias = kb.vload(self.bias, [j], self.vtype) if self.bias is not None else None
            for a in range(rows):
                for b in range(cols):
                    out = kb.iadd(kb.imul(kb.iadd(pixel, a * g.ow + b), g.cout), j)
                    y = ys[a][b]
                    if bias is not None:
                        y = kb.float_op(arith.AddfOp, y, bias)
                    if self.z is not None:
                        y = kb.float_op(arith.AddfOp, y, kb.vload(self.z, [out], self.vtype))
                    (y,) = clamp_vectors(kb, self.op, [y], self.vtype)
                    kb.vstore(y, self.y, [out])
                    if scalar_act:
                        kb.for_(0, vw, lambda e, o=out: self._activate(kb.iadd(o, e)))

        kb.for_(0, g.cout // vw, channels)

    def _activate(self, at: Index) -> None:
        self.kb.store(activate(self.kb, self.op, self.kb.load(self.y, [at])), self.y, [at])


class _PointProducts(PackedGemm):
    """M[xi] = V[xi] @ U[xi] for the 36 points: one packed GEMM of `tiles` rows per point,
    rows offset by xi * tiles in V and M, the packed B by xi * C * npad. Threads split the
    points; no epilogue (the output transform applies it)."""

    def __init__(self, op: Operation, kb: KernelBuilder, grid: TileGrid, v: SSAValue,
                 m: SSAValue, u: SSAValue):
        shape = _point_shape(grid)
        super().__init__(op, kb, shape, kb.view(m, [POINTS * grid.tiles, shape.n]), u)
        self.act = None
        self.a = kb.view(v, [POINTS * grid.tiles, shape.k])

    def k_loop(self, blk, ctx, i0, mr, init, step):
        kb = self.kb
        return kb.unrolled_for(blk.kc, lambda kk, *acc: step(
            kk, [kb.load(self.a, [kb.iadd(i0, r), kb.iadd(blk.k0, kk)]) for r in range(mr)],
            *acc), self.unroll(mr), init)

    def vector_epilogue(self, acc, i0, mr: int, j, nv: int) -> list[SSAValue]:
        return list(acc)

    def repeats(self) -> int:
        return POINTS

    def build(self) -> None:
        kb = self.kb
        per_point = self.g.k * self.npad

        def point(xi: Index) -> None:
            self.row0 = kb.imul(xi, self.m)
            self.b0 = kb.imul(xi, per_point)
            self.k_blocks(lambda blk: self.k_block(blk, (0, self.row_blocks)))
            self.remainder()

        kb.parallel_for(0, POINTS, point)


def kernel(op: Operation, kb: KernelBuilder, ins, outs) -> None:
    """ins: x, weight (unused), [bias], [residual], U packed, bordered input, V, M."""
    WinogradConv(op, kb, ins, outs).build()
