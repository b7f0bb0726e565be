"""Kernels of graph.max_pool_indices (MaxPool with its Indices output) and graph.max_unpool.

MaxPool with indices keeps, per output element, the running maximum and its flat input
index in loop-carried values over the window's taps (one flattened tap loop; taps in the
padding are skipped by a select, ties keep the first tap as onnx.reference does). MaxUnpool
zeroes its result and scatters each input element to the flat position its index names.

Both take symbolic batch, channel and spatial sizes: the sizes are run-time values (shape
rules' SymDims go through the KernelBuilder), static ones fold to the code they always had.
"""

from __future__ import annotations

import math as pymath

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerType

from onnxc.dialects.graph import int_of, ints_of, shape_of
from onnxc.dialects.graph_vision import MaxPoolIndicesOp, MaxUnpoolOp
from onnxc.dialects.symbolic_dims import SymDim
from onnxc.errors import LoweringError
from onnxc.lowering.graph_to_loops.checks import clamped_index
from onnxc.lowering.graph_to_loops.element_types import is_float, min_value
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder
from onnxc.lowering.graph_to_loops.rules import KernelRule


def max_pool_indices_kernel(op: MaxPoolIndicesOp, kb: KernelBuilder, ins, outs):
    element = outs[0].type.get_element_type()
    if not is_float(element):
        raise LoweringError(f"{op.name}: only float tensors are supported")
    x_shape, y_shape = shape_of(op.input), shape_of(op.output)
    if 0 in y_shape or 0 in x_shape:
        return
    sizes, out_sizes = x_shape[2:], y_shape[2:]
    kernel, strides = ints_of(op.kernel_shape), ints_of(op.strides)
    pads, dilations = ints_of(op.pads), ints_of(op.dilations)
    column_major = int_of(op.storage_order) == 1
    # the flat index of spatial position p: sum p[d] * place[d]
    order = list(reversed(range(len(sizes)))) if not column_major else list(range(len(sizes)))
    place, acc = [0] * len(sizes), 1
    for d in order:
        place[d], acc = acc, acc * sizes[d]
    plane = pymath.prod(sizes)
    taps: Index = pymath.prod(kernel)
    if not isinstance(plane, int):  # an empty input plane in the run: no tap reads it
        taps = kb.imul(taps, kb.imin(plane, 1))
    i64 = IntegerType(64)
    x, y, idx = ins[0], outs[0], outs[1]

    def per_output(n: Index, c: Index, o: list[Index]) -> None:
        def tap(t: Index, best, best_at):
            rest, pos, valid = t, [], None
            for d in reversed(range(len(kernel))):
                k = kb.isub(rest, kb.imul(kb.idiv(rest, kernel[d]), kernel[d]))
                rest = kb.idiv(rest, kernel[d])
                p = kb.iadd(kb.isub(kb.imul(o[d], strides[d]), pads[d]), kb.imul(k, dilations[d]))
                inside = kb.insert(arith.AndIOp(
                    kb.insert(arith.CmpiOp(kb.idx(p), kb.idx(0), "sge")),
                    kb.insert(arith.CmpiOp(kb.idx(p), kb.idx(sizes[d]), "slt"))))
                valid = inside if valid is None else kb.insert(arith.AndIOp(valid, inside))
                pos.insert(0, kb.imin(kb.imax(p, 0), sizes[d] - 1))
            value = kb.load(x, [n, c, *pos])
            flat = kb.linear([(p, s) for p, s in zip(pos, place)])
            better = kb.insert(arith.AndIOp(valid, kb.insert(arith.CmpfOp(value, best, "ogt"))))
            return [kb.select(better, value, best), kb.select(better, kb.idx(flat), best_at)]

        best, best_at = kb.reduce(0, taps, [kb.constant(min_value(element), element),
                                            kb.idx(0)], tap)
        base = kb.imul(kb.iadd(kb.imul(n, x_shape[1]), c), plane)
        flat_index = kb.insert(arith.IndexCastOp(kb.idx(kb.iadd(base, best_at)), i64))
        kb.store(best, y, [n, c, *o])
        kb.store(flat_index, idx, [n, c, *o])

    def per_plane(nc: Index) -> None:
        n = kb.idiv(nc, x_shape[1])
        c = kb.isub(nc, kb.imul(n, x_shape[1]))
        kb.nest(list(out_sizes), lambda o: per_output(n, c, o))

    kb.parallel_for(0, x_shape[0] * x_shape[1], per_plane)


def max_unpool_kernel(op: MaxUnpoolOp, kb: KernelBuilder, ins, outs):
    element = outs[0].type.get_element_type()
    total = pymath.prod(shape_of(op.output))
    count = pymath.prod(shape_of(op.input))
    if total == 0:
        return
    writes: Index = count  # none into a result that the run makes empty
    if not isinstance(total, int):
        writes = kb.imul(count, kb.imin(total, 1))
    y = kb.view(outs[0], [total])
    zero = kb.constant(0.0 if is_float(element) else 0, element)
    kb.for_(0, total, lambda i: kb.store(zero, y, [i]))
    x, idx = kb.view(ins[0], [count]), kb.view(ins[1], [count])

    unpooled = op.unpooled_shape()
    y_full = outs[0]
    extent: Index = pymath.prod(unpooled)
    if isinstance(extent, SymDim) and extent.lower_bound() is None:
        extent = kb.imax(extent, 0)  # pads wider than the window leave it negative in a run

    def scatter(i: Index) -> None:
        # refused by the indices check before the kernel runs; clamped anyway
        at = clamped_index(kb, kb.load(idx, [i]), extent, negative=False)
        if tuple(unpooled) == shape_of(op.output):
            kb.store(kb.load(x, [i]), y, [at])
            return
        position = []
        for d in reversed(range(len(unpooled))):  # the flat index in the unpooled shape
            position.insert(0, kb.isub(at, kb.imul(kb.idiv(at, unpooled[d]), unpooled[d])))
            at = kb.idiv(at, unpooled[d])
        kb.store(kb.load(x, [i]), y_full, position)

    kb.for_(0, writes, scatter)


RULES = (
    KernelRule(MaxPoolIndicesOp, max_pool_indices_kernel, symbolic=True),
    KernelRule(MaxUnpoolOp, max_unpool_kernel, symbolic=True),
)
"""symbolic: the kernels read their sizes from the KernelBuilder (symbolic dims welcome)."""
