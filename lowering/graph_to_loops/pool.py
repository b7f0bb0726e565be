"""Pooling kernels: MaxPool, AveragePool (N-D, pads, strides, ceil_mode) and the global pools.

Plain (NCHW) windowed pools use the convolution's loop structure: per (n, c) plane,
initialise the output, then for each window offset fold the valid part of the input plane
into it (bounds from `window_range`, so no padding test runs per element). AveragePool then
divides each output by its window's element count, computed with branch-free min/max
from the output index (with or without the padding, per count_include_pad).

NHWC pools (2-D, from assign-layout) vectorise along C, the contiguous dimension: per
output pixel, a group of channel vectors is folded over the window's valid rows and columns
in registers and stored once (`pool_nhwc`). Global pools reduce over the pixels the same way
in NHWC; a pooled [N, C, 1, 1] is the same memory in either layout.
"""

from __future__ import annotations

import math as pymath

from onnxc.dialects import graph
from onnxc.dialects.graph import int_of, ints_of, shape_of
from onnxc.dialects.layout import layout_of
from onnxc.errors import LoweringError
from onnxc.lowering.graph_to_loops.element_types import is_float, min_value
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder, unflatten, window_range
from onnxc.lowering.graph_to_loops.normalization import reassoc_add
from onnxc.lowering.graph_to_loops.pool_nhwc import global_pool_nhwc, pool_nhwc, window_count
from onnxc.lowering.graph_to_loops.rules import KernelRule


def _pool_kernel(op: graph.PoolOp, kb: KernelBuilder, ins, outs, average: bool):
    x, y = ins[0], outs[0]
    x_shape, y_shape = shape_of(op.input), shape_of(op.output)
    spatial = len(x_shape) - 2
    kernel, strides = ints_of(op.kernel_shape), ints_of(op.strides)
    pads = ints_of(op.pads)
    dilations = op.window_dilations()
    in_sizes, out_sizes = x_shape[2:], y_shape[2:]
    element = y.type.get_element_type()
    if average and not is_float(element):
        raise LoweringError(f"{op.name}: element type {element} is not a float")
    init = kb.constant(0 if average else min_value(element), element)
    fold = kb.add if average else kb.max

    def per_plane(ivs: list[Index]) -> None:
        n, c = ivs
        kb.nest(out_sizes, lambda o: kb.store(init, y, [n, c, *o]))

        def per_offset(ks: list[Index]) -> None:
            ranges, offsets = [], []
            for d in range(spatial):
                lo, hi, off = window_range(
                    kb, ks[d], dilations[d], pads[d], strides[d], in_sizes[d], out_sizes[d]
                )
                ranges.append((lo, hi))
                offsets.append(off)

            def accumulate(os: list[Index]) -> None:
                xi = [kb.iadd(kb.imul(o, s), off) for o, s, off in zip(os, strides, offsets)]
                acc = kb.load(y, [n, c, *os])
                kb.store(fold(acc, kb.load(x, [n, c, *xi])), y, [n, c, *os])

            kb.nest(ranges, accumulate)

        kb.nest(kernel, per_offset)
        if average:
            include_pad = int_of(op.count_include_pad) != 0  # type: ignore[attr-defined]

            def divide(os: list[Index]) -> None:
                count: Index = 1
                for d, o in enumerate(os):
                    start = kb.isub(kb.imul(o, strides[d]), pads[d])
                    low, high = (-pads[d], in_sizes[d] + pads[d + spatial]) if include_pad \
                        else (0, in_sizes[d])
                    size = window_count(kb, start, kernel[d], dilations[d], low, high)
                    count = kb.imul(count, size)
                total = kb.load(y, [n, c, *os])
                kb.store(kb.div(total, kb.to_float(count, element)), y, [n, c, *os])

            kb.nest(out_sizes, divide)

    kb.nest([x_shape[0], x_shape[1]], per_plane)


def _is_nhwc(op) -> bool:
    layouts = {layout_of(op.input.type), layout_of(op.output.type)}
    if layouts == {None}:
        return False
    if layouts != {"NHWC"}:
        raise LoweringError(f"{op.name}: no kernel for layouts {sorted(map(str, layouts))}")
    return True


def max_pool_kernel(op: graph.MaxPoolOp, kb: KernelBuilder, ins, outs):
    if _is_nhwc(op):
        pool_nhwc(op, kb, ins, outs, average=False)
    else:
        _pool_kernel(op, kb, ins, outs, average=False)


def average_pool_kernel(op: graph.AveragePoolOp, kb: KernelBuilder, ins, outs):
    if _is_nhwc(op):
        pool_nhwc(op, kb, ins, outs, average=True)
    else:
        _pool_kernel(op, kb, ins, outs, average=True)


def _global_pool_kernel(op: graph.GlobalPoolOp, kb: KernelBuilder, ins, outs, average: bool):
    """Per (n, c), the planes split between threads: a reduction over the flattened spatial
    plane in iter_args; a float sum reassociable, so that LLVM keeps vector partial sums
    (T5's RMS norms, ReduceMean over 512 floats as a global pool: 68 -> 8 us; a scalar
    chain waits an add's latency per element)."""
    if layout_of(op.input.type) is not None:
        if layout_of(op.input.type) != "NHWC":
            raise LoweringError(f"{op.name}: no kernel for layout {layout_of(op.input.type)}")
        global_pool_nhwc(op, kb, ins, outs, average)
        return
    x_shape = shape_of(op.input)
    n, c = x_shape[0], x_shape[1]
    size = pymath.prod(x_shape[2:])
    element = outs[0].type.get_element_type()
    if average and not is_float(element):
        raise LoweringError(f"{op.name}: element type {element} is not a float")
    x = kb.view(ins[0], [n, c, size])
    y = kb.view(outs[0], [n, c])
    init = kb.constant(0 if average else min_value(element), element)
    fold = (lambda acc, v: reassoc_add(kb, acc, v)) if average else kb.max

    planes = [kb.dim(n), kb.dim(c)]

    def per_plane(plane: Index) -> None:
        ivs = unflatten(kb, plane, planes)
        (acc,) = kb.reduce(0, size, [init], lambda s, acc: [fold(acc, kb.load(x, [*ivs, s]))])
        if average:
            acc = kb.div(acc, kb.to_float(kb.index(size), element))
        kb.store(acc, y, ivs)

    kb.parallel_for(0, kb.imul(*planes), per_plane)


def global_average_pool_kernel(op, kb: KernelBuilder, ins, outs):
    _global_pool_kernel(op, kb, ins, outs, average=True)


def global_max_pool_kernel(op, kb: KernelBuilder, ins, outs):
    _global_pool_kernel(op, kb, ins, outs, average=False)


RULES = (
    KernelRule(graph.MaxPoolOp, max_pool_kernel, symbolic=True),
    KernelRule(graph.AveragePoolOp, average_pool_kernel, symbolic=True),
    KernelRule(graph.GlobalAveragePoolOp, global_average_pool_kernel, symbolic=True),
    KernelRule(graph.GlobalMaxPoolOp, global_max_pool_kernel, symbolic=True),
)
"""symbolic: batch and spatial sizes may be symbolic (run-time window bounds and counts), in
NCHW and in NHWC."""
