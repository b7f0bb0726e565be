"""The implicit-GEMM conv over symbolic H/W for dilated convs: taps tested in the run.

An atrous conv on a small map reads mostly padding: DeepLabV3's ASPP convs (3x3, dilation
12/24/36, pads equal to the dilation) on a 14x14 map have, at 224x224, 18%, 11% and 11% of
their tap-pixels on real input. With static sizes `drop-padding-taps` and
`split-conv-live-regions` cut the dead taps at compile time; over symbolic sizes which taps
are dead depends on H and W, so conv_nhwc.py would copy the input into a zero-padded scratch
(for dilation 36, 86x86 pixels holding a 14x14 map) and multiply every tap everywhere (2.5x
the fixed-shape time for the whole net).

Here the input is read in place. Per row block (MR output pixels) and tap, the run tests
each row's input pixel against H and W: a tap live for every row runs the plain channel
loop; one live for none is skipped; one live for some (the map's borders) loads the live
rows' values and takes zero for the others. No padded copy is made, and the products are
the same as through the zero-padded copy (the skipped ones are products with zero).
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import f32
from xdsl.ir import Operation, SSAValue

from onnxc.dialects import graph
from onnxc.lowering.graph_to_loops import gemm_bf16
from onnxc.lowering.graph_to_loops.branches import choose
from onnxc.lowering.graph_to_loops.conv_nhwc import ConvGemm, geometry, supports_nhwc
from onnxc.lowering.graph_to_loops.loops import Index


def applies(op: Operation) -> bool:
    """An f32 NHWC conv whose geometry reads its input in place."""
    return (supports_nhwc(op) and not gemm_bf16.requested(op)
            and geometry(op).reads_in_place)


class _BorderTapsGemm(ConvGemm):
    """`ConvGemm` addressing the unpadded input; the row context is, per row of the
    block, its first tap's offset and its input pixel (ih, iw) before the tap's shift."""

    def input_of(self, x: SSAValue, scratch: SSAValue | None) -> SSAValue:
        g = self.geo
        return self.kb.view(x, [g.n * g.h * g.w * g.c])

    def row_context(self, i0: Index, mr: int) -> list[tuple[Index, Index, Index]]:
        kb, g = self.kb, self.geo
        rows = []
        for r in range(mr):
            p = kb.iadd(i0, r)
            n = 0 if g.n == 1 else kb.idiv(p, g.oh * g.ow)
            rem = kb.isub(p, kb.imul(n, g.oh * g.ow))
            oh = kb.idiv(rem, g.ow)
            ow = kb.isub(rem, kb.imul(oh, g.ow))
            ih = kb.isub(kb.imul(oh, g.sh), g.pt)
            iw = kb.isub(kb.imul(ow, g.sw), g.pl)
            pixel = kb.iadd(kb.imul(kb.iadd(kb.imul(n, g.h), ih), g.w), iw)
            rows.append((kb.iadd(kb.imul(pixel, g.c), self.c0), ih, iw))
        return rows

    def k_loop(self, blk, ctx, i0, mr, init, step):
        """Per tap of the block: all rows live, some, or none (see the module doc)."""
        kb, g = self.kb, self.geo
        t0, ntaps, c0, clen = blk.extra
        assert self.plan.run == 1
        height, width = kb.idx(kb.index(g.h)), kb.idx(kb.index(g.w))

        def inside(at: Index, extent: SSAValue) -> SSAValue:
            return kb.insert(arith.CmpiOp(kb.idx(at), extent, "ult"))

        def every(flags: list[SSAValue], cls) -> SSAValue:
            out = flags[0]
            for f in flags[1:]:
                out = kb.insert(cls(out, f))
            return out

        def tap(ti: Index, *acc: SSAValue):
            t = kb.iadd(t0, ti)
            th = kb.idiv(t, g.kw)
            tw = kb.isub(t, kb.imul(th, g.kw))
            dy, dx = kb.imul(th, g.dh), kb.imul(tw, g.dw)
            off = kb.iadd(kb.imul(kb.iadd(kb.imul(dy, g.w), dx), g.c), c0)
            live = [kb.insert(arith.AndIOp(inside(kb.iadd(ih, dy), height),
                                           inside(kb.iadd(iw, dx), width)))
                    for _, ih, iw in ctx]
            starts = [kb.iadd(base, off) for base, _, _ in ctx]

            def channels(values) -> list[SSAValue]:
                k0 = kb.imul(ti, clen)  # the tap's first row of the packed block
                return list(kb.unrolled_for(
                    clen, lambda c, *a: step(kb.iadd(k0, c), values(c), *a), self.unroll(mr),
                    list(acc)))

            def plain() -> list[SSAValue]:
                return channels(lambda c: [kb.load(self.x, [kb.iadd(s, c)]) for s in starts])

            def masked() -> list[SSAValue]:
                zero = kb.constant(0.0, f32)
                safe = [kb.select(ok, kb.idx(s), kb.idx(0)) for ok, s in zip(live, starts)]
                return channels(lambda c: [
                    kb.select(ok, kb.load(self.x, [kb.iadd(s, c)]), zero)
                    for ok, s in zip(live, safe)])

            return choose(kb, every(live, arith.AndIOp), plain, lambda: choose(
                kb, every(live, arith.OrIOp), masked, lambda: list(acc)))

        return kb.for_(0, ntaps, tap, iter_args=init)


def kernel(op: Operation, kb, ins, outs) -> None:
    """ins: x, weight (unused), [bias], [residual], packed B (no input scratch)."""
    assert isinstance(op, graph.ConvOp | graph.ConvAddOp)
    _BorderTapsGemm(op, kb, ins, outs).build()
