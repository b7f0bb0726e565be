"""graph.pointwise_depthwise: a 1x1 conv and the depthwise conv of its result, depth-first.

The unfused pair writes the whole expanded tensor (N x H x W x C1) and reads it back; where
it is larger than a core's L2 (fuse-pointwise-depthwise) both kernels wait on memory, and a
second thread does not help them. Here each image's output rows are cut into strips (the
parallel loop). A strip keeps a ring of kh expanded rows (W x C1 each, `kh * W * C1` floats
of scratch per strip): before each output row it computes the expanded rows that row reads
and no earlier row of the strip did (stride s: s rows; a strip's first row: kh), each one
the packed 1x1 GEMM of W pixels (conv_nhwc.ConvGemm, its bias and epilogue) into its slot
`(ih + pad) mod kh`; then the depthwise row code (depthwise.DepthwiseRows) reads its kernel
rows from their slots, in place (taps outside the input skipped, as the plain kernel's).
Rows outside the input are never computed; a strip recomputes the kh - s rows it shares
with the strip above (graph_composite.depth_first_strips; fuse-pointwise-depthwise fuses
where that is at most 1/8 of the 1x1 conv's work).

Each expanded value is the same sum in the same order as the unfused 1x1 kernel's, and each
output the same sum of taps as the unfused depthwise kernel's: the two are bit-identical.
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, MemRefType, f32
from xdsl.ir import Operation, SSAValue

from onnxc.dialects import graph
from onnxc.dialects.graph_composite import depth_first_strips
from onnxc.dialects.layout import layout_of
from onnxc.errors import LoweringError
from onnxc.lowering.graph_to_loops.branches import when
from onnxc.lowering.graph_to_loops.conv_nhwc import (
    NHWC,
    ConvGemm,
    ConvGeometry,
    geometry,
    packed_weights,
    supports_nhwc,
)
from onnxc.lowering.graph_to_loops.depthwise import DepthwiseRows, tap_major_weights
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder
from onnxc.lowering.graph_to_loops.rules import rules
from onnxc.target import Target


def strips(g: ConvGeometry) -> tuple[int, int]:
    """(strips per image, output rows per strip) of the depthwise geometry `g`."""
    assert isinstance(g.oh, int)
    return depth_first_strips(g.oh)


def checked_stages(op: graph.PointwiseDepthwiseOp) -> tuple[Operation, Operation]:
    """`op.stages()`, once the op is known to be what the kernel runs: NHWC activations,
    static f32, constant weights (what fuse-pointwise-depthwise makes)."""
    if layout_of(op.input.type) != NHWC or layout_of(op.output.type) != NHWC:
        raise LoweringError(f"{op.name}: its kernel takes NHWC activations (run "
                            "fuse-pointwise-depthwise after assign-layout)")
    pointwise, depthwise = op.stages()
    g = geometry(depthwise)
    if not (supports_nhwc(pointwise) and supports_nhwc(depthwise) and g.depthwise
            and all(isinstance(d, int) for d in (g.n, g.h, g.w)) and g.dh == 1
            and 1 <= g.sh <= g.kh):
        raise LoweringError(f"{op.name}: no kernel (needs static f32 sizes, constant "
                            "weights, an undilated window of stride at most its height)")
    return pointwise, depthwise


def fused_constants(op: graph.PointwiseDepthwiseOp,
                    target: Target) -> list[DenseIntOrFPElementsAttr]:
    """The 1x1 conv's packed weights, the depthwise conv's tap-major ones."""
    pointwise, depthwise = checked_stages(op)
    return [packed_weights(pointwise, target), tap_major_weights(depthwise)]


def fused_scratch(op: graph.PointwiseDepthwiseOp, target: Target) -> list[MemRefType]:
    """Every strip's ring of kh expanded rows."""
    g = geometry(checked_stages(op)[1])
    assert isinstance(g.n, int) and isinstance(g.w, int)
    return [MemRefType(f32, [g.n * strips(g)[0] * g.kh * g.w, g.c])]


class _ExpandedRow(ConvGemm):
    """The 1x1 conv of one input row (W pixels) into the ring rows from `row0`: ConvGemm's
    loops and epilogue on a one-row geometry; GEMM row i reads the input from element
    `a0 + i * C` (`a0`: the input row's first element, less row0 * C)."""

    def __init__(self, op: Operation, kb: KernelBuilder, g: ConvGeometry, x: SSAValue,
                 bias: SSAValue, packed: SSAValue, ring: SSAValue, rows: int):
        self.setup(op, kb, g, ring, packed, bias, None)
        self.x = x
        self.a0: Index = 0
        self.rows = rows

    def repeats(self) -> int:
        return self.rows

    def row_context(self, i0: Index, mr: int) -> list[Index]:
        kb = self.kb
        return [kb.iadd(self.a0, kb.imul(kb.iadd(i0, r), self.geo.c)) for r in range(mr)]


def fused_kernel(op: graph.PointwiseDepthwiseOp, kb: KernelBuilder, ins, outs) -> None:
    """ins: x, the two weights and biases (the weights unused), the packed 1x1 weights, the
    tap-major depthwise weights, the rings."""
    pointwise, depthwise = checked_stages(op)
    g = geometry(depthwise)
    assert isinstance(g.h, int) and isinstance(g.w, int) and isinstance(g.n, int)
    cin = geometry(pointwise).c
    per_image, strip_rows = strips(g)
    ring_rows = g.n * per_image * g.kh * g.w
    row_geometry = ConvGeometry(1, cin, 1, g.w, g.c, 1, g.w, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1)
    expand = _ExpandedRow(pointwise, kb, row_geometry, kb.view(ins[0], [g.n * g.h * g.w * cin]),
                          ins[2], ins[5], kb.view(ins[7], [ring_rows, g.c]), g.n * g.h)
    rows = DepthwiseRows(depthwise, kb, g, kb.view(ins[7], [ring_rows * g.c]),
                         kb.view(outs[0], [g.pixels * g.c]), ins[6], ins[4], None, True)
    lift = g.kh * -(-g.pt // g.kh)  # ih + lift >= 0 for every row a window reads

    def strip(i: Index) -> None:
        n = kb.idiv(i, per_image)
        first_oh = kb.imul(kb.isub(i, kb.imul(n, per_image)), strip_rows)
        ring0 = kb.imul(i, g.kh)  # the strip's first ring slot

        def slot(ih: Index) -> Index:
            v = kb.iadd(ih, lift)
            return kb.iadd(ring0, kb.isub(v, kb.imul(kb.idiv(v, g.kh), g.kh)))

        def expand_row(ih: Index) -> None:
            expand.row0 = kb.imul(slot(ih), g.w)
            expand.a0 = kb.isub(kb.imul(kb.iadd(kb.imul(n, g.h), ih), g.w * cin),
                                kb.imul(expand.row0, cin))
            expand.build()

        def out_row(oh: Index) -> None:
            ih0 = kb.isub(kb.imul(oh, g.sh), g.pt)
            starts = kb.insert(arith.CmpiOp(kb.idx(oh), kb.idx(first_oh), "eq"))
            new = kb.select(starts, kb.idx(ih0), kb.idx(kb.iadd(ih0, g.kh - g.sh)))
            kb.for_(new, kb.iadd(ih0, g.kh),
                    lambda ih: when(kb, rows.row_inside(ih), lambda: expand_row(ih)))
            kernel_rows = [(kb.imul(slot(kb.iadd(ih0, th)), g.w), 0) for th in range(g.kh)]
            rows.row_or_border(kernel_rows, kb.imul(kb.iadd(kb.imul(n, g.oh), oh), g.ow), ih0)

        kb.for_(first_oh, kb.imin(kb.iadd(first_oh, strip_rows), g.oh), out_row)

    kb.parallel_for(0, g.n * per_image, strip)


RULES = rules((graph.PointwiseDepthwiseOp,), fused_kernel, constants=fused_constants,
              scratch=fused_scratch, early=True, strength_reduction=False, weight=4)
"""early, no strength reduction: like the conv kernels it is made of (conv.RULES); weight
4: a 1x1 GEMM and a depthwise kernel."""
