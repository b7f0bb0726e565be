"""The N-D convolution kernel (groups, depthwise, strides, explicit pads, dilations, bias).

This is the plain-layout (NCHW) kernel for whatever the layout pass leaves plain (3-D,
integer types, non-constant weights; 1-D convs with a constant weight become 2-D ones,
passes/conv1d_as_2d.py). A 2-D conv whose types carry the NHWC layout runs on
the fast kernels instead: conv_nhwc.py (implicit GEMM), conv_winograd.py (3x3 stride 1)
and depthwise.py; `conv_kernel`, `conv_constants` and `conv_scratch` dispatch on the input's
layout.

Loop order: image n, group g, output channel m of the group; the output plane is set to
the bias, then for each input channel c of the group and each kernel offset, one weight
scales the valid part of the input plane into the output plane. The valid output range
of an offset is computed before its loops (`window_range`), so the innermost loop (the
last spatial dimension) is a branch-free, contiguous multiply-accumulate.
"""

from __future__ import annotations

import math as pymath
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    IntegerType,
    MemRefType,
    i8,
)

from onnxc.dialects import graph
from onnxc.dialects.dense_data import from_numpy
from onnxc.dialects.graph import int_of, ints_of, shape_of
from onnxc.dialects.layout import layout_of
from onnxc.errors import LoweringError
from onnxc.lowering.graph_to_loops import (
    conv_border_taps,
    conv_nhwc,
    conv_winograd,
    depthwise,
)
from onnxc.lowering.graph_to_loops.buffer_types import RunTimeScratch
from onnxc.lowering.graph_to_loops.epilogue import activate_in_place
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder, window_range
from onnxc.lowering.graph_to_loops.rules import rules
from onnxc.target import Target


@dataclass
class _Dim:
    """One spatial dimension of a convolution window."""

    kernel: int
    stride: int
    dilation: int
    pad_begin: int
    pad_end: int
    size_in: int
    size_out: int


def merge_pointwise_dims(dims: list[_Dim]) -> list[_Dim]:
    """Fold each trailing dimension the window does not touch (kernel 1, stride 1, no pads)
    into the previous stride-1 one: rows then follow each other in input and output alike,
    so a 1x1 convolution runs one long contiguous loop over the whole plane instead of short
    rows (which LLVM fully unrolls and then vectorizes across rows with gathers).
    """
    dims = list(dims)
    while len(dims) > 1:
        last, prev = dims[-1], dims[-2]
        if not (last.kernel == 1 and last.stride == 1 and last.pad_begin == last.pad_end == 0
                and prev.stride == 1):
            break
        width = last.size_in
        dims[-2:] = [_Dim(prev.kernel, 1, prev.dilation * width, prev.pad_begin * width,
                          prev.pad_end * width, prev.size_in * width, prev.size_out * width)]
    return dims


FLAT_ROWS_MAX_WIDTH = 48
"""Rows up to this width use the masked flat-plane loop (see `conv_constants`)."""


def _conv_dims(op: graph.ConvOp) -> list[_Dim]:
    x_shape, w_shape, y_shape = shape_of(op.input), shape_of(op.weight), shape_of(op.output)
    spatial = len(x_shape) - 2
    pads, strides, dilations = ints_of(op.pads), ints_of(op.strides), ints_of(op.dilations)
    return merge_pointwise_dims([
        _Dim(w_shape[2 + d], strides[d], dilations[d], pads[d], pads[spatial + d],
             x_shape[2 + d], y_shape[2 + d])
        for d in range(spatial)
    ])


def _flat_rows(dims: list[_Dim]) -> bool:
    """Short rows of a stride-1 2-D window with equal input and output row lengths."""
    if len(dims) != 2 or any(d.stride != 1 for d in dims):
        return False
    row = dims[1]
    return isinstance(row.size_out, int) and row.size_in == row.size_out \
        <= FLAT_ROWS_MAX_WIDTH and row.kernel > 1


def conv_constants(op: graph.ConvOp, target: Target) -> list[DenseIntOrFPElementsAttr]:
    """Extra constant operands of the conv kernel: for short rows, a column mask (NHWC:
    the depthwise kernel's tap-major weights, the implicit GEMM's packed for `target`).

    Rows of 7 to 48 outputs are too short to vectorize on their own (LLVM fully unrolls
    them and vectorizes across rows with gathers). When input and output rows have equal
    length and strides are 1, a kernel offset shifts the whole output plane by a constant,
    so its valid part is one contiguous flat range; mask[kw][f] says whether column
    f % width is inside the input for kernel column kw, and masked elements keep their value.
    """
    if conv_nhwc.is_nhwc(op):
        _check_nhwc(op)
        if conv_nhwc.geometry(op).depthwise:
            return [depthwise.tap_major_weights(op)]
        if conv_winograd.applies(op, target):
            return [conv_winograd.transformed_weights(op, target)]
        return [conv_nhwc.packed_weights(op, target)]
    dims = _conv_dims(op)
    if not _flat_rows(dims):
        return []
    rows, cols = dims
    columns = np.arange(cols.size_out)
    mask = np.stack([
        np.tile((0 <= columns + kw * cols.dilation - cols.pad_begin)
                & (columns + kw * cols.dilation - cols.pad_begin < cols.size_in), rows.size_out)
        for kw in range(cols.kernel)
    ]).astype(np.int8)
    return [from_numpy(mask, i8)]


def _check_nhwc(op: graph.ConvOp) -> None:
    if not conv_nhwc.supports_nhwc(op):
        raise LoweringError(f"{op.name}: no NHWC kernel (needs a 2-D f32 conv with a "
                            "constant weight)")
    plain = [op.weight] + ([op.bias] if op.bias is not None else [])
    nhwc = [op.addend] if isinstance(op, graph.ConvAddOp) else []
    if any(layout_of(v.type) is not None for v in plain) or any(
            layout_of(v.type) != conv_nhwc.NHWC for v in nhwc):
        raise LoweringError(f"{op.name}: the NHWC kernels take a plain weight and bias and "
                            "an NHWC residual")


def conv_scratch(op: graph.ConvOp, target: Target) -> list[MemRefType | RunTimeScratch]:
    """The NHWC kernels' zero-padded input copy (none for plain convs); Winograd's buffers."""
    if not conv_nhwc.is_nhwc(op):
        return []
    _check_nhwc(op)
    if conv_winograd.applies(op, target):
        return conv_winograd.scratch(op, target)
    return conv_nhwc.input_scratch(op)


def conv_kernel(op: graph.ConvOp, kb: KernelBuilder, ins, outs):
    if conv_nhwc.is_nhwc(op):
        _check_nhwc(op)
        if conv_nhwc.geometry(op).depthwise:
            depthwise.depthwise_kernel(op, kb, ins, outs)
        elif conv_winograd.applies(op, kb.target):
            conv_winograd.kernel(op, kb, ins, outs)
        elif conv_border_taps.applies(op):
            conv_border_taps.kernel(op, kb, ins, outs)
        else:
            conv_nhwc.implicit_gemm_kernel(op, kb, ins, outs)
        return
    x_shape, w_shape, y_shape = shape_of(op.input), shape_of(op.weight), shape_of(op.output)
    dims = _conv_dims(op)
    flat = _flat_rows(dims)
    spatial = len(dims)
    x_plane = [*(d.size_in for d in dims)]
    y_plane = [*(d.size_out for d in dims)]
    if flat:
        x_plane, y_plane = [pymath.prod(x_plane)], [pymath.prod(y_plane)]
    x = kb.view(ins[0], [*x_shape[:2], *x_plane])
    w = kb.view(ins[1], [*w_shape[:2], *(d.kernel for d in dims)])
    y = kb.view(outs[0], [*y_shape[:2], *y_plane])
    bias = ins[2] if op.bias is not None else None
    mask = ins[-1] if flat else None
    # graph.conv_add: each output plane starts from the residual instead of zeros
    residual = (kb.view(ins[2 if bias is None else 3], [*y_shape[:2], *y_plane])
                if isinstance(op, graph.ConvAddOp) else None)
    groups = int_of(op.group, 1)
    c_per_group, m_per_group = w_shape[1], w_shape[0] // groups
    strides, dilations = [d.stride for d in dims], [d.dilation for d in dims]
    pads_begin = [d.pad_begin for d in dims]
    in_sizes, out_sizes = [d.size_in for d in dims], [d.size_out for d in dims]
    kernel = [d.kernel for d in dims]
    element = y.type.get_element_type()

    def per_output_channel(ivs: list[Index]) -> None:
        n, g, m = ivs
        oc = kb.iadd(kb.imul(g, m_per_group), m)
        init = kb.load(bias, [oc]) if bias is not None else kb.constant(0, element)

        def start(o: list[Index]) -> None:
            value = init
            if residual is not None:
                z = kb.load(residual, [n, oc, *o])
                value = z if bias is None else kb.add(z, init)
            kb.store(value, y, [n, oc, *o])

        kb.nest(y_plane, start)

        def per_input_channel(c: Index) -> None:
            ic = kb.iadd(kb.imul(g, c_per_group), c)

            def per_offset(ks: list[Index]) -> None:
                weight = kb.load(w, [oc, c, *ks])
                ranges, offsets = [], []
                for d in range(spatial):
                    lo, hi, off = window_range(
                        kb, ks[d], dilations[d], pads_begin[d], strides[d],
                        in_sizes[d], out_sizes[d],
                    )
                    ranges.append((lo, hi))
                    offsets.append(off)
                if flat:
                    _masked_plane(kb, x, y, mask, weight, [n, ic], [n, oc], ks[1], ranges,
                                  offsets, in_sizes[1], out_sizes[1])
                    return

                def accumulate(os: list[Index]) -> None:
                    xi = [kb.iadd(kb.imul(o, s), off) for o, s, off in zip(os, strides, offsets)]
                    acc = kb.load(y, [n, oc, *os])
                    kb.store(kb.muladd(weight, kb.load(x, [n, ic, *xi]), acc), y, [n, oc, *os])

                kb.nest(ranges, accumulate)

            kb.nest(kernel, per_offset)

        kb.for_(0, c_per_group, per_input_channel)
        activate_in_place(kb, op, y, [n, oc], y_plane)  # while the plane is in cache

    kb.nest([y_shape[0], groups, m_per_group], per_output_channel)


def _masked_plane(kb, x, y, mask, weight, x_lead, y_lead, kw, ranges, offsets, in_w, out_w):
    """y[f] += weight * x[f + shift] over the flat range from the first to the last valid
    output of this offset, keeping y where the column is masked out (a select, no branch).
    Every x index read lies between two valid ones, so it is inside the buffer."""
    (row_lo, row_hi), (col_lo, col_hi) = ranges
    first = kb.iadd(kb.imul(row_lo, out_w), col_lo)
    last = kb.iadd(kb.imul(kb.isub(row_hi, 1), out_w), col_hi)
    if isinstance(col_lo, int) and isinstance(col_hi, int):
        last = last if col_lo < col_hi else first
    else:
        no_columns = kb.insert(arith.CmpiOp(kb.idx(col_hi), kb.idx(col_lo), "sle"))
        last = kb.select(no_columns, kb.idx(first), kb.idx(last))
    shift = kb.iadd(kb.imul(offsets[0], in_w), offsets[1])
    zero = kb.constant(0, IntegerType(8))

    def body(f: Index) -> None:
        acc = kb.load(y, [*y_lead, f])
        updated = kb.muladd(weight, kb.load(x, [*x_lead, kb.iadd(f, shift)]), acc)
        keep = kb.insert(arith.CmpiOp(kb.load(mask, [kw, f]), zero, "ne"))
        kb.store(kb.select(keep, updated, acc), y, [*y_lead, f])

    kb.for_(first, last, body)


RULES = rules((graph.ConvOp, graph.ConvAddOp), conv_kernel, constants=conv_constants,
              scratch=conv_scratch, symbolic=True, early=True, strength_reduction=False,
              weight=3, bf16=True)
"""symbolic: batch and spatial sizes may be symbolic: the NHWC kernels (implicit GEMM,
depthwise) and the plain N-D one read them as run-time values (a dynamic-resolution CNN,
wav2vec2's 1-D convs over a run-time length). early, no strength reduction and weight 3:
the largest kernels of a conv net (early_kernels.py, direct.py UNREDUCED_KERNELS,
onnxc.pipeline KernelForecast)."""
