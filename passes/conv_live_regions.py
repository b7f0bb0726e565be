"""`split-conv-live-regions`: a dilated conv on a small map, split by which taps are live.

A tap of a padded conv reads real input for some outputs and only padding for others. When
no tap is dead for every output, `drop-padding-taps` cannot help, yet most of the work may
still be multiplications by padding: DeepLabV3's ASPP conv with dilation 12 on a 14x14 map
(3x3 kernel, pads 12) has, for each output row, one or two of its three kernel rows reading
real rows, so 1764 tap-pixels of which 324 are live (5.4x the work).

Along each spatial axis the outputs fall into bands with one live range of taps: here rows
[0, 2) see kernel rows 1-2, rows [2, 12) only row 1, rows [12, 14) rows 0-1. Every region
(a band per axis) is a conv of its own: the live taps' weights (sliced at compile time) on
the input slice those taps read, with no padding, since a live tap reads only real input
for every output of its band. The regions' outputs are concatenated back along W, then H.
The result is the same convolution: the same products, summed over the same live taps
(in another order, so equal within rounding, not bit for bit).

It applies to a plain graph.conv (any epilogue, any groups but depthwise: the depthwise
kernel reads a padded input in place and skips the taps outside it, so regions save it
nothing and cost calls and concatenations: MnasNet 8.3 -> 9.8 ms when its depthwise convs
on 7x7 and 14x14 maps were split) with a constant 2-D weight when the regions do at most
`MAX_WORK_FRACTION` of the full conv's tap-pixels: splitting costs a
kernel call, an input slice and a concatenation per region, worth it only for a real saving
(an ordinary 3x3 conv with pads 1 saves a few percent and is left alone).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import IntegerAttr, i64
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from onnxc.dialects import graph
from onnxc.dialects.graph import int_of, ints_of, shape_of
from onnxc.dialects.symbolic_dims import is_static
from onnxc.passes.base import GraphPatternPass
from onnxc.passes.constants import constant_value, element_type, insert_constant
from onnxc.passes.rewrite_utils import i64_array, rebuild, with_shape

MAX_WORK_FRACTION = 0.75
"""Split only when the live regions hold at most this share of the conv's tap-pixels. At
0.5, DeepLabV3's (torchvision, 520x520) ASPP conv of dilation 12 on its 33x33 map (57%
live) multiplied all nine taps everywhere: 32% of the net's time; split, the net went from
140 to 127 ms (one thread, Zen 4), the nine region calls and concatenations included."""


@dataclass(frozen=True)
class Band:
    """Outputs [begin, end) along one axis, all of which see kernel taps [first, last]."""

    begin: int
    end: int
    first: int
    last: int

    @property
    def outputs(self) -> int:
        return self.end - self.begin

    @property
    def taps(self) -> int:
        return self.last - self.first + 1


def live_bands(size: int, out: int, kernel: int, stride: int, dilation: int,
               pad_begin: int) -> list[Band] | None:
    """The bands of one axis; None when some output has no live tap (it is the bias alone:
    not a region conv) or a band's live taps are not one range."""
    bands: list[Band] = []
    for o in range(out):
        live = [k for k in range(kernel) if 0 <= o * stride - pad_begin + k * dilation < size]
        if not live or live != list(range(live[0], live[-1] + 1)):
            return None
        if bands and (bands[-1].first, bands[-1].last) == (live[0], live[-1]):
            bands[-1] = Band(bands[-1].begin, o + 1, live[0], live[-1])
        else:
            bands.append(Band(o, o + 1, live[0], live[-1]))
    return bands


class SplitConvByLiveTaps(RewritePattern):
    """conv(x, W) -> concat_H(concat_W(conv(slice(x), W[live taps]) for each region))."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, conv: graph.ConvOp, rewriter: PatternRewriter):
        weight = constant_value(conv.weight)
        x_shape, out_shape = shape_of(conv.input), shape_of(conv.output)
        if weight is None or len(x_shape) != 4:
            return
        if int_of(conv.group, 1) == x_shape[1] == out_shape[1] > 1:
            return  # depthwise: its kernel skips taps outside the input itself (no saving)
        if not is_static((*x_shape[2:], *out_shape[2:])):
            return  # the bands depend on the image size
        (sh, sw), (dh, dw) = ints_of(conv.strides), ints_of(conv.dilations)
        pt, pl = ints_of(conv.pads)[:2]
        kh, kw = weight.shape[2:]
        rows = live_bands(x_shape[2], out_shape[2], kh, sh, dh, pt)
        cols = live_bands(x_shape[3], out_shape[3], kw, sw, dw, pl)
        if rows is None or cols is None or len(rows) * len(cols) == 1:
            return
        live = sum(r.outputs * r.taps for r in rows) * sum(c.outputs * c.taps for c in cols)
        if live > MAX_WORK_FRACTION * out_shape[2] * out_shape[3] * kh * kw:
            return
        ops: list[Operation] = []
        band_outputs = [_concat([self._region(conv, weight, r, c, ops, rewriter)
                                 for c in cols], 3, ops) for r in rows]
        rewriter.replace(conv, ops, [_concat(band_outputs, 2, ops)])

    @staticmethod
    def _region(conv: graph.ConvOp, weight: np.ndarray, r: Band, c: Band,
                ops: list[Operation], rewriter: PatternRewriter) -> SSAValue:
        """The conv of one region: its live taps over the input they read, unpadded."""
        (sh, sw), (dh, dw) = ints_of(conv.strides), ints_of(conv.dilations)
        pt, pl = ints_of(conv.pads)[:2]
        n, ch = shape_of(conv.input)[:2]
        top = r.begin * sh + r.first * dh - pt
        left = c.begin * sw + c.first * dw - pl
        height = (r.outputs - 1) * sh + (r.taps - 1) * dh + 1
        width = (c.outputs - 1) * sw + (c.taps - 1) * dw + 1
        source = conv.input
        if (top, left, height, width) != (0, 0, *shape_of(conv.input)[2:]):
            # only a slice that is used is built: an op left out of the IR would still hold
            # a use of the input, and a later rewrite of that input would visit it
            window = graph.SliceOp(
                operands=[conv.input],
                result_types=[with_shape(conv.input.type, (n, ch, height, width))],
                properties={"starts": i64_array([top, left]),
                            "ends": i64_array([top + height, left + width]),
                            "axes": i64_array([2, 3]), "steps": i64_array([1, 1])})
            ops.append(window)
            source = window.output
        taps = np.ascontiguousarray(weight[:, :, r.first:r.last + 1, c.first:c.last + 1])
        w = insert_constant(rewriter, taps, element_type(conv.weight), conv)
        operands = [source, w,
                    *([conv.bias] if conv.bias is not None else [])]
        out_type = with_shape(conv.output.type,
                              (*shape_of(conv.output)[:2], r.outputs, c.outputs))
        region = rebuild(conv, operands, [out_type])
        region.properties["pads"] = i64_array([0, 0, 0, 0])
        ops.append(region)
        return region.results[0]


def _concat(values: list[SSAValue], axis: int, ops: list[Operation]) -> SSAValue:
    """`values` concatenated along `axis` (the value itself when it is one), the op
    appended to `ops`."""
    if len(values) == 1:
        return values[0]
    shape = list(shape_of(values[0]))
    shape[axis] = sum(shape_of(v)[axis] for v in values)
    concat = graph.ConcatOp(operands=[values], result_types=[with_shape(values[0].type, shape)],
                            properties={"axis": IntegerAttr(axis, i64)})
    ops.append(concat)
    return concat.output


@dataclass(frozen=True)
class SplitConvLiveRegionsPass(GraphPatternPass):
    """Split a padded conv whose taps are live for few outputs (a dilated conv on a small map)
    into region convs over the taps each region reads, concatenated."""

    name = "split-conv-live-regions"
    patterns = (SplitConvByLiveTaps,)


__all__ = ["MAX_WORK_FRACTION", "SplitConvLiveRegionsPass", "live_bands"]
