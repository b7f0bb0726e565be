"""Kernel of graph.deform_columns: the sampled columns of a deformable convolution.

Per tap (kh, kw) and output pixel, the sampling position (pixel grid position plus the
learned offset) and its four bilinear corners and weights (zero outside the image, as
onnx.reference's align_corners GridSample gives) are computed once per offset group; the
channel loop of that group inside only loads, weights and stores. The output rows of each
tap run in parallel. Batch, image and output sizes may be symbolic: the image's last row
and column as floats are then computed once from the run's sizes.
"""

from __future__ import annotations

from xdsl.dialects import arith, math
from xdsl.ir import SSAValue

from onnxc.dialects.graph import int_of, ints_of, shape_of
from onnxc.dialects.graph_vision import DeformColumnsOp
from onnxc.dialects.symbolic_dims import Dim
from onnxc.errors import LoweringError
from onnxc.lowering.graph_to_loops.element_types import is_float
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder
from onnxc.lowering.graph_to_loops.rules import KernelRule


def deform_columns_kernel(op: DeformColumnsOp, kb: KernelBuilder, ins, outs):
    t = outs[0].type.get_element_type()
    if not is_float(t):
        raise LoweringError(f"{op.name}: only float tensors are supported")
    n, c, height, width = shape_of(op.input)
    out_h, out_w = shape_of(op.offset)[2:]
    kh_n, kw_n = ints_of(op.kernel_shape)
    strides, pads, dilations = ints_of(op.strides), ints_of(op.pads), ints_of(op.dilations)
    groups = int_of(op.offset_group)
    per_group = c // groups
    taps = kh_n * kw_n
    if 0 in (n, c, out_h, out_w, taps):
        return
    x, offset = ins[0], ins[1]
    mask = ins[2] if op.mask is not None else None
    cols = kb.view(outs[0], [n, c, kh_n, kw_n, out_h, out_w])

    def c_(v: float):
        return kb.constant(v, t)

    def last_of(size: Dim) -> float | SSAValue:
        """size - 1 as a float: a constant, or computed once from the run's size."""
        if isinstance(size, int):
            return size - 1.0
        return kb.sub(kb.to_float(kb.index(size), t), c_(1.0))

    last_row, last_column = last_of(height), last_of(width)

    def axis(pos, last: float | SSAValue):
        """[(index, valid, weight)] of the two linear taps around `pos`."""
        low = kb.insert(math.FloorOp(pos))
        frac = kb.sub(pos, low)
        result = []
        for p, w in ((low, kb.sub(c_(1.0), frac)), (kb.add(low, c_(1.0)), frac)):
            inside = kb.insert(arith.CmpfOp(p, c_(0.0), "oge"))
            top = last if isinstance(last, SSAValue) else c_(last)
            valid = kb.insert(arith.AndIOp(inside, kb.insert(arith.CmpfOp(p, top, "ole"))))
            index = kb.float_to_index(p, 0.0, last)  # NaN offsets too
            result.append((index, valid, w))
        return result

    def per_tap(b: Index, g: Index, kh: Index, kw: Index) -> None:
        tap = kb.iadd(kb.imul(kh, kw_n), kw)
        dy_channel = kb.imul(kb.iadd(kb.imul(g, taps), tap), 2)

        def per_row(oh: Index) -> None:
            def per_pixel(ow: Index) -> None:
                dy = kb.load(offset, [b, dy_channel, oh, ow])
                dx = kb.load(offset, [b, kb.iadd(dy_channel, 1), oh, ow])
                base_y = kb.iadd(kb.imul(oh, strides[0]), kb.isub(kb.imul(kh, dilations[0]),
                                                                   pads[0]))
                base_x = kb.iadd(kb.imul(ow, strides[1]), kb.isub(kb.imul(kw, dilations[1]),
                                                                   pads[1]))
                ys = axis(kb.add(kb.to_float(base_y, t), dy), last_row)
                xs = axis(kb.add(kb.to_float(base_x, t), dx), last_column)
                scale = None
                if mask is not None:
                    scale = kb.load(mask, [b, kb.iadd(kb.imul(g, taps), tap), oh, ow])
                corners = []
                for yi, yv, yw in ys:
                    for xi, xv, xw in xs:
                        w = kb.mul(yw, xw)
                        w = kb.select(kb.insert(arith.AndIOp(yv, xv)), w, c_(0.0))
                        if scale is not None:
                            w = kb.mul(w, scale)
                        corners.append((yi, xi, w))

                def channel(ci: Index) -> None:
                    ch = kb.iadd(kb.imul(g, per_group), ci)
                    acc = None
                    for yi, xi, w in corners:
                        v = kb.mul(kb.load(x, [b, ch, yi, xi]), w)
                        acc = v if acc is None else kb.add(acc, v)
                    kb.store(acc, cols, [b, ch, kh, kw, oh, ow])

                kb.for_(0, per_group, channel)

            kb.for_(0, out_w, per_pixel)

        kb.parallel_for(0, out_h, per_row)

    kb.nest([n, groups, kh_n, kw_n], lambda ivs: per_tap(*ivs))


RULES = (KernelRule(DeformColumnsOp, deform_columns_kernel, symbolic=True),)
"""symbolic: the kernel reads its sizes from the KernelBuilder (symbolic dims welcome): the
importer guards that a symbolic image is not empty (every tap reads a pixel)."""
