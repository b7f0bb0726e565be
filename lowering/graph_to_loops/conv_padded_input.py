"""The zero-padded copy of a conv's NHWC input that the implicit GEMM (conv_nhwc.py), the
Winograd conv and the depthwise kernel read, so that no tap needs a bounds test: its
scratch (`padded_scratch`) and the copy (`pad_input`), as one NHWC image or, for a grouped
conv's implicit GEMM, one plane per group (`ConvGeometry.group_planes`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects.builtin import MemRefType, f32
from xdsl.ir import SSAValue

from onnxc.dialects.symbolic_dims import Dim, is_static, num_elements
from onnxc.lowering.graph_to_loops.buffer_types import RunTimeScratch
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder
from onnxc.lowering.graph_to_loops.runs import copy_run, zero_run

if TYPE_CHECKING:
    from onnxc.lowering.graph_to_loops.conv_nhwc import ConvGeometry


def padded_scratch(g: ConvGeometry) -> list[MemRefType | RunTimeScratch]:
    """The zero-padded copy of the input (NHWC, or a plane per group: `group_planes`),
    when there are pads (and taps are not tested in the run: `reads_in_place`,
    `depthwise_in_place`)."""
    copied = g.padded and not g.reads_in_place and not g.depthwise_in_place
    if not copied:
        return []
    if g.group_planes:
        return [scratch_of(f32, [g.groups, g.n, g.hp, g.wp, g.cg])]
    return [scratch_of(f32, [g.n, g.hp, g.wp, g.c])]


def scratch_of(element, shape: list[Dim]) -> MemRefType | RunTimeScratch:
    """A scratch of `shape`: static, or flat in the dynamic arena for symbolic sizes."""
    if is_static(shape):
        return MemRefType(element, shape)
    return RunTimeScratch(element, num_elements(shape))


def pad_input(kb: KernelBuilder, g: ConvGeometry, x: SSAValue, xpad: SSAValue) -> SSAValue:
    """Copies the NHWC input into the zero-bordered scratch; returns the scratch, flat."""
    if g.group_planes:
        return _pad_group_planes(kb, g, x, xpad)
    src = kb.view(x, [g.n * g.h * g.w * g.c])
    dst = kb.view(xpad, [g.n * g.hp * g.wp * g.c])
    row = g.wp * g.c

    def image(n: Index) -> None:
        base = kb.imul(n, g.hp * row)
        if g.pt:
            zero_run(kb, dst, base, g.pt * row)

        def inner(h: Index) -> None:
            at = kb.iadd(base, kb.imul(kb.iadd(h, g.pt), row))
            if g.pl:
                zero_run(kb, dst, at, g.pl * g.c)
            copy_run(kb, src, kb.imul(kb.iadd(kb.imul(n, g.h), h), g.w * g.c),
                     dst, kb.iadd(at, g.pl * g.c), g.w * g.c)
            if g.pr:
                zero_run(kb, dst, kb.iadd(at, (g.pl + g.w) * g.c), g.pr * g.c)

        kb.parallel_for(0, g.h, inner)
        if g.pb:
            zero_run(kb, dst, kb.iadd(base, (g.pt + g.h) * row), g.pb * row)

    kb.for_(0, g.n, image)
    return dst


def _pad_group_planes(kb: KernelBuilder, g: ConvGeometry, x: SSAValue,
                      xpad: SSAValue) -> SSAValue:
    """`pad_input` into one zero-bordered plane per group (`group_planes`); threads split
    the input rows, each copying its row's pixels group by group (one region per conv)."""
    src = kb.view(x, [g.n * g.h * g.w * g.c])
    dst = kb.view(xpad, [g.groups * g.plane])
    cg, row = g.cg, g.wp * g.cg

    def image(n: Index) -> None:
        def plane(grp: Index) -> Index:
            return kb.iadd(kb.imul(grp, g.plane), kb.imul(n, g.hp * row))

        def borders(grp: Index) -> None:
            if g.pt:
                zero_run(kb, dst, plane(grp), g.pt * row)
            if g.pb:
                zero_run(kb, dst, kb.iadd(plane(grp), (g.pt + g.h) * row), g.pb * row)

        kb.for_(0, g.groups, borders)

        def inner(h: Index) -> None:
            first = kb.imul(kb.iadd(kb.imul(n, g.h), h), g.w * g.c)

            def group(grp: Index) -> None:
                at = kb.iadd(plane(grp), kb.imul(kb.iadd(h, g.pt), row))
                if g.pl:
                    zero_run(kb, dst, at, g.pl * cg)
                kb.for_(0, g.w, lambda w: copy_run(
                    kb, src, kb.iadd(first, kb.iadd(kb.imul(w, g.c), kb.imul(grp, cg))),
                    dst, kb.iadd(at, kb.imul(kb.iadd(w, g.pl), cg)), cg))
                if g.pr:
                    zero_run(kb, dst, kb.iadd(at, (g.pl + g.w) * cg), g.pr * cg)

            kb.for_(0, g.groups, group)

        kb.parallel_for(0, g.h, inner)

    kb.for_(0, g.n, image)
    return dst
