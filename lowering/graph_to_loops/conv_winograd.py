"""Winograd F(4x4, 3x3) and F(2x2, 3x3): stride-1 3x3 f32 convolutions in NHWC with 4x (2.25x)
fewer multiplies.

Each tile x tile block of outputs ("tile") is Y = A^T [ sum_c (G g_c G^T) . (B^T d_c B) ] A
over the (tile + 2)^2 input patch d_c of each channel c (Lavin & Gray 2016; F(4x4) at the
points 0, +-1, +-2, F(2x2) at 0, +-1). Written as matrices, the sum over channels at each
transform point xi (36, or 16) is one GEMM: M[xi] (tiles x Cout) = V[xi] (tiles x C) @ U[xi]
(C x Cout). The kernel runs in three phases, each a parallel loop:

1. input transform: V[xi, p, c] = (B^T d B)[xi] for every tile p, vectorized over channels,
   read from a zero-bordered copy of the input that covers the whole tile grid (the
   bottom and right tiles of a map whose size is not a multiple of the tile read past it);
2. the products on the packed micro-kernel (gemm_microkernel.PackedGemm), U packed at
   compile time from the filter transform G g G^T; threads split the points;
3. output transform: Y = A^T M A per tile, vectorized over output channels, with the bias,
   the residual of graph.conv_add and the activation applied before the one store (only
   the outputs inside the map are stored).

The form is chosen per conv (`grid_of`): F(4x4) saves more multiplies, but its U is 4x the
conv's weights (F(2x2)'s 16/9) and small maps give its products few rows, so maps with few
4x4 tiles take F(2x2).

The batch, height and width may be symbolic (a model exported with dynamic axes): the
tile count, V, M and the bordered copy are then run-time sizes, and the products' last row
block is the micro-kernel's run-time remainder. Over symbolic maps the bordered copy's
bottom and right pads are grown by tile - 1 (what the last tile reads past the map at
most, whatever the size), and the last tile of a row or column stores the outputs inside
the map by a branch on their run-time count (1 to tile).

Accuracy: the transforms multiply by constants up to 8 (A^T) and 5 (B^T), so rounding
errors grow. Against a float64 reference on N(0, 1) inputs and weights scaled 1/sqrt(9 C)
(tests/unit/ops/test_conv_winograd.py), max |error| / max |output| measured 1.3e-6 to
3.4e-6 with 16-48 channels and 9.2e-6 with 272 (the direct conv: 1.9e-7 to 1.4e-6, 6-7x
less); F(2x2)'s constants are +-1 and 1/2: 2.2e-7 to 2.0e-6 with 16-512 channels. The tests
hold both to `ERROR_BOUND`.

When (`applies`): 3x3, stride 1, dilation 1, one group, channel counts a multiple of the
vector width, and enough tiles of a form (`MIN_TILES`: per image when the batch is
symbolic) that streaming its larger transformed weights is paid back by the products saved;
over symbolic maps, whose tiles are unknown until the run, F(4x4).
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
from onnxc.dialects.symbolic_dims import Dim, ceildiv, is_static
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
"""F(4x4, 3x3)'s transforms (points 0, +-1, +-2 and infinity)"""


@dataclass(frozen=True, eq=False)
class Form:
    """F(tile x tile, 3x3): its output tile side and its transforms B^T, G, A^T."""

    tile: int
    b_t: np.ndarray
    g: np.ndarray
    a_t: np.ndarray

    @property
    def patch(self) -> int:
        """inputs per tile side: the tile and the 3x3 window's border"""
        return self.tile + 2

    @property
    def points(self) -> int:
        return self.patch * self.patch


F4 = Form(4, B_T, G, A_T)
F2 = Form(2, np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], np.float64),
          np.array([[1, 0, 0], [1 / 2, 1 / 2, 1 / 2], [1 / 2, -1 / 2, 1 / 2], [0, 0, 1]],
                   np.float64),
          np.array([[1, 1, 1, 0], [0, 1, -1, -1]], np.float64))
"""F(2x2, 3x3) (points 0, +-1 and infinity): 2.25x fewer multiplies than the direct conv
instead of 4x, and U only 16/9 of its weights instead of 4x (`grid_of`)."""

TRANSFORM_COLUMNS = 1024
"""Columns of the weights' [9, C * Cout] taps the filter transform takes at a time: its
float64 product, [36, 1024] (288 KiB), stays in the L2 and its memory is reused."""

MIN_TILES = 16
"""Fewer tiles than this in a form and its products are too few rows for the micro-kernel
to pay for streaming U from memory: F(4x4) takes maps from 13x13, F(2x2) those from 7x7
(`grid_of`). With a symbolic batch, the tiles of one image count."""
ERROR_BOUND = 2e-5
"""max |winograd - exact| / max |exact| allowed by the tests (measured: at most 9.2e-6)"""


@dataclass(frozen=True)
class TileGrid:
    """The tiles of `form` covering a conv's output, and the sizes of the kernel's
    buffers."""

    conv: ConvGeometry
    form: Form

    @property
    def tiles_h(self) -> Dim:
        return ceildiv(self.conv.oh, self.form.tile)

    @property
    def tiles_w(self) -> Dim:
        return ceildiv(self.conv.ow, self.form.tile)

    @property
    def per_image(self) -> Dim:
        return self.tiles_h * self.tiles_w

    @property
    def tiles(self) -> Dim:
        return self.conv.n * self.per_image

    @cached_property
    def padded(self) -> ConvGeometry:
        """The conv with bottom and right pads grown so that every tile's patch is inside
        the padded input (never shrunk: the original pads are inside the grid). Over a
        symbolic map, by tile - 1, the most the last tile reads past the output (pads
        stay constants)."""
        g = self.conv
        tile = self.form.tile
        if not is_static([g.h, g.w]):
            return replace(g, pb=g.pb + tile - 1, pr=g.pr + tile - 1)
        return replace(g, pb=tile * self.tiles_h + 2 - g.h - g.pt,
                       pr=tile * self.tiles_w + 2 - g.w - g.pl)


def applies(op: Operation, target: Target) -> bool:
    """Whether `op` runs as Winograd on `target` (see the module docstring's When)."""
    return grid_of(op, target) is not None


def grid_of(op: Operation, target: Target) -> TileGrid | None:
    """The tile grid `op` runs on: F(4x4) where it has MIN_TILES tiles, else F(2x2) where
    that has, else None (the direct conv).

    ResNet's 3x3 convs of 512 channels on 7x7 maps have 4 F(4x4) tiles: 4 rows per product
    and U 38 MB, streamed from memory in a net. In ResNet-18 (Zen 4, one thread / two) such
    a conv took 1.74 / 1.16 ms in F(4x4) and takes 1.31 / 0.72 ms in F(2x2) (16 rows, U 17
    MB); the direct conv 2.1 / 1.1 ms. The whole net: -2.9% / -10.8%, ResNet-50 -0.6% /
    -2.7%. Alone, with part of U left in the L3 between runs, F(4x4) is 4-6% faster.

    Over symbolic maps F(4x4): exports with dynamic image sizes are mostly of large images
    (segmentation, detection), and even on ResNet-18's 7x7 maps F(4x4) beat the direct
    conv (1.74 against 2.1 ms at one thread)."""
    if not supports_nhwc(op) or gemm_bf16.requested(op):
        return None
    g = geometry(op)
    vw = tiling_for(target).vw
    if not ((g.kh, g.kw, g.sh, g.sw, g.dh, g.dw, g.groups) == (3, 3, 1, 1, 1, 1, 1)
            and g.c % vw == 0 and g.cout % vw == 0):
        return None
    if not is_static([g.h, g.w]):
        return TileGrid(g, F4)
    for form in (F4, F2):
        grid = TileGrid(g, form)
        tiles = grid.tiles if isinstance(grid.tiles, int) else grid.per_image
        if tiles >= MIN_TILES:
            return grid
    return None


def transformed_weights(op: Operation, target: Target) -> DenseIntOrFPElementsAttr:
    """U[xi] = (G W[m, c] G^T)[xi] as one C x Cout matrix per point (36 or 16), each packed
    for the micro-kernel, one after the other (computed in float64, rounded once).

    One [points, 9] x [9, C * Cout] product (kron(G, G) maps a tap (k, l) to a point (i, j)),
    a k-block of C at a time and TRANSFORM_COLUMNS columns of it at a time, each point's
    k-block packed where it goes. The whole product in float64, its float32 copy and the
    float64 taps were 130 MB of fresh pages for a 512 x 512 conv, 0.2-0.5 s in a compile
    on a Zen 3 VM: ResNet-50's 13 transforms took 0.7-1.0 s of its 3.5-4.8 s cold compile,
    which is now 2.3-3.3 s (old and new trees alternating; the packed bits are the same)."""
    t = tiling_for(target)
    grid = grid_of(op, target)
    assert grid is not None
    g, form = grid.conv, grid.form
    w = weight_value(op)
    assert w is not None
    cout, c = w.shape[:2]
    shape = _point_shape(grid)
    npad = shape.npad(t)
    size = g.c * npad
    packed = zeros(form.points * size, np.float32)
    kron = np.kron(form.g, form.g)
    points = np.empty((form.points, min(t.kc, c) * cout), np.float32)
    for c0 in range(0, c, t.kc):  # the packing's k-blocks
        depth = min(t.kc, c - c0)
        taps = w[:, c0:c0 + depth].transpose(2, 3, 1, 0).reshape(9, depth * cout)
        block = points[:, :depth * cout]
        for col in range(0, depth * cout, TRANSFORM_COLUMNS):
            end = col + TRANSFORM_COLUMNS
            block[:, col:end] = kron @ taps[:, col:end].astype(np.float64)
        block_shape = replace(shape, k=depth)
        for xi in range(form.points):
            at = xi * size + c0 * npad
            pack(block[xi].reshape(depth, cout), block_shape, t,
                 out=packed[at:at + depth * npad])
    return from_numpy(packed, f32)


def scratch(op: Operation, target: Target) -> list[MemRefType | RunTimeScratch]:
    """The bordered input copy, V [points, tiles, C] and M [points, tiles, Cout] (flat in
    the dynamic arena when a size is symbolic)."""
    grid = grid_of(op, target)
    assert grid is not None
    p, points = grid.padded, grid.form.points
    return [scratch_of(f32, [p.n, p.hp, p.wp, p.c]),
            scratch_of(f32, [points, grid.tiles, p.c]),
            scratch_of(f32, [points, grid.tiles, p.cout])]


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
        found = grid_of(op, kb.target)
        assert found is not None
        self.grid = grid = found
        self.form = grid.form
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
        points = self.form.points
        self.input_transform(src, kb.view(self.v, [points * grid.tiles * p.c]))
        _PointProducts(self.op, kb, grid, self.v, self.m, self.u).build()
        self.output_transform(kb.view(self.m, [points * grid.tiles * p.cout]))

    def tile_rows(self, body) -> None:
        """body(n, ty, p0) for each row of tiles (the parallel loop), p0 its first tile."""
        kb, grid = self.kb, self.grid

        def row(r: Index) -> None:
            n = kb.idiv(r, grid.tiles_h)
            body(n, kb.isub(r, kb.imul(n, grid.tiles_h)), kb.imul(r, grid.tiles_w))

        kb.parallel_for(0, self.g.n * grid.tiles_h, row)

    def input_transform(self, src: SSAValue, v: SSAValue) -> None:
        kb, grid, vw = self.kb, self.grid, self.t.vw
        p, tile, patch = grid.padded, self.form.tile, self.form.patch
        stride = kb.imul(self.tiles, p.c)  # between points in V

        def row(n: Index, ty: Index, p0: Index) -> None:
            top = kb.imul(kb.iadd(kb.imul(n, p.hp), kb.imul(ty, tile)), p.wp * p.c)

            def one_tile(tx: Index) -> None:
                corner = kb.iadd(top, kb.imul(tx, tile * p.c))
                out = kb.imul(kb.iadd(p0, tx), p.c)

                def channels(cv: Index) -> None:
                    c = kb.imul(cv, vw)
                    at = kb.iadd(corner, c)
                    d = [[kb.vload(src, [kb.iadd(at, (i * p.wp + j) * p.c)], self.vtype)
                          for j in range(patch)] for i in range(patch)]
                    vs = _sandwich(kb, self.form.b_t, d, self.vtype)
                    dst = kb.iadd(out, c)
                    for i in range(patch):
                        for j in range(patch):
                            kb.vstore(vs[i][j], v,
                                      [kb.iadd(dst, kb.imul(stride, i * patch + j))])

                kb.for_(0, p.c // vw, channels)

            kb.for_(0, grid.tiles_w, one_tile)

        self.tile_rows(row)

    def output_transform(self, m: SSAValue) -> None:
        """Full tiles store tile x tile outputs; the last tile of a row or column keeps only
        those inside the map (a static count per branch: `_by_count`)."""
        kb, grid, g, tile = self.kb, self.grid, self.g, self.form.tile
        last_h, last_w = g.oh - tile * (grid.tiles_h - 1), g.ow - tile * (grid.tiles_w - 1)

        def row(n: Index, ty: Index, p0: Index) -> None:
            def columns(rows: int) -> None:
                whole = isinstance(last_w, int) and last_w == tile
                full_w = grid.tiles_w if whole else grid.tiles_w - 1
                kb.for_(0, full_w, lambda tx: self.output_tile(m, n, ty, tx, p0, rows, tile))
                if not whole:
                    _by_count(kb, last_w, tile, lambda cols: self.output_tile(
                        m, n, ty, grid.tiles_w - 1, p0, rows, cols))

            if isinstance(last_h, int) and last_h == tile:
                columns(tile)
                return
            is_last = kb.insert(arith.CmpiOp(kb.idx(ty), kb.idx(grid.tiles_h - 1), "eq"))
            choose(kb, is_last, lambda: _by_count(kb, last_h, tile, columns) or [],
                   lambda: columns(tile) or [])

        self.tile_rows(row)

    def output_tile(self, m: SSAValue, n: Index, ty: Index, tx: Index, p0: Index,
                    rows: int, cols: int) -> None:
        kb, g, vw = self.kb, self.g, self.t.vw
        tile, patch = self.form.tile, self.form.patch
        stride = kb.imul(self.tiles, g.cout)
        src = kb.imul(kb.iadd(p0, tx), g.cout)
        pixel = kb.iadd(kb.imul(kb.iadd(kb.imul(n, g.oh), kb.imul(ty, tile)), g.ow),
                        kb.imul(tx, tile))
        epilogue = epilogue_of(self.op)
        scalar_act = epilogue is not None and not on_vectors(epilogue[0])

        def channels(jv: Index) -> None:
            j = kb.imul(jv, vw)
            at = kb.iadd(src, j)
            mv = [[kb.vload(m, [kb.iadd(at, kb.imul(stride, i * patch + k))], self.vtype)
                   for k in range(patch)] for i in range(patch)]
            ys = _sandwich(kb, self.form.a_t, mv, self.vtype)
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


def _by_count(kb: KernelBuilder, count: Dim, top: int, body) -> None:
    """body(c) for c = count, a size from 1 to top: one call when it is static, else
    branches on its run-time value (the last: top)."""
    if isinstance(count, int):
        body(count)
        return
    value = kb.idx(kb.dim(count))

    def from_(c: int) -> list[SSAValue]:
        if c == top:
            body(top)
            return []
        hit = kb.insert(arith.CmpiOp(value, kb.idx(c), "eq"))
        choose(kb, hit, lambda: body(c) or [], lambda: from_(c + 1))
        return []

    from_(1)


class _PointProducts(PackedGemm):
    """M[xi] = V[xi] @ U[xi] for the form's points: one packed GEMM of `tiles` rows per
    point, rows offset by xi * tiles in V and M, the packed B by xi * C * npad. Threads
    split the points; no epilogue (the output transform applies it)."""

    def __init__(self, op: Operation, kb: KernelBuilder, grid: TileGrid, v: SSAValue,
                 m: SSAValue, u: SSAValue):
        shape = _point_shape(grid)
        self.points = points = grid.form.points
        super().__init__(op, kb, shape, kb.view(m, [points * grid.tiles, shape.n]), u)
        self.act = None
        self.a = kb.view(v, [points * grid.tiles, shape.k])

    def k_loop(self, blk, ctx, i0, mr, init, step):
        kb = self.kb
        return kb.unrolled_for(blk.kc, lambda kk, *acc: step(
            kk, [kb.load(self.a, [kb.iadd(i0, r), kb.iadd(blk.k0, kk)]) for r in range(mr)],
            *acc), self.unroll(mr), init)

    def vector_epilogue(self, acc, i0, mr: int, j, nv: int) -> list[SSAValue]:
        return list(acc)

    def repeats(self) -> int:
        return self.points

    def build(self) -> None:
        kb = self.kb
        per_point = self.g.k * self.npad

        def point(xi: Index) -> None:
            self.row0 = kb.imul(xi, self.m)
            self.b0 = kb.imul(xi, per_point)
            self.k_blocks(lambda blk: self.k_block(blk, (0, self.row_blocks)))
            self.remainder()

        kb.parallel_for(0, self.points, point)


def kernel(op: Operation, kb: KernelBuilder, ins, outs) -> None:
    """ins: x, weight (unused), [bias], [residual], U packed, bordered input, V, M."""
    WinogradConv(op, kb, ins, outs).build()
