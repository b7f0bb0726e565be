"""Kernels of the ops whose result sizes are data (dialects/graph_dynamic.py).

Such a kernel gets, after its results, one `memref<1xi64>` cell per size it defines, and
writes the size there; its result buffers were allocated for the size's capacity (its
bound, or what the caller gave), which is the symbol's value the kernel receives. It
writes its results laid out for the size it found (row-major [rank, count] for NonZero),
and writes none at all when that size is past the capacity: the entry's capacity check
after the call then stops the run, and the caller runs it again with room (lowering pass_
`define_size`, runtime compiled_model).
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, i64
from xdsl.ir import SSAValue

from onnxc.dialects import graph
from onnxc.dialects.graph import shape_of
from onnxc.dialects.symbolic_dims import num_elements
from onnxc.lowering.graph_to_loops.branches import when
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder, is_float, unflatten


def _nonzero(kb: KernelBuilder, value: SSAValue) -> SSAValue:
    """value != 0 (NaN counts as nonzero, as numpy and onnxruntime say)."""
    zero = kb.constant(0, value.type)
    if is_float(value.type):
        return kb.insert(arith.CmpfOp(value, zero, "une"))
    return kb.insert(arith.CmpiOp(value, zero, "ne"))


def nonzero_kernel(op: graph.NonZeroOp, kb: KernelBuilder, ins, outs) -> None:
    """Count the nonzero elements, then (when they fit) write their coordinates: row r
    of the result holds axis r's coordinate of each, in row-major order."""
    shape = shape_of(op.input)
    n = num_elements(shape)
    flat = kb.view(ins[0], [n])
    (count_symbol,) = op.defined()
    capacity = kb.dim(count_symbol)  # the symbol's value in this kernel: the room it has
    y, cell = outs[0], outs[1]
    out = kb.view(y, [kb.imul(len(shape), capacity)])
    one, zero = kb.constant(1, i64), kb.constant(0, i64)
    (count,) = kb.reduce(0, n, [zero], lambda i, acc: [
        kb.add(acc, kb.select(_nonzero(kb, kb.load(flat, [i])), one, zero))])
    kb.store(count, cell, [0])
    fits = kb.insert(arith.CmpiOp(count, kb.insert(arith.IndexCastOp(kb.idx(capacity), i64)),
                                  "sle"))
    columns = kb.insert(arith.IndexCastOp(count, IndexType()))

    def write() -> None:
        def element(i: Index, j: SSAValue) -> list[SSAValue]:
            hit = _nonzero(kb, kb.load(flat, [i]))

            def store() -> None:
                at = kb.insert(arith.IndexCastOp(j, IndexType()))
                for r, coordinate in enumerate(unflatten(kb, i, [kb.index(d) for d in shape])):
                    value = kb.insert(arith.IndexCastOp(kb.idx(coordinate), i64))
                    kb.store(value, out, [kb.iadd(kb.imul(r, columns), at)])

            when(kb, hit, store)
            return [kb.add(j, kb.select(hit, one, zero))]

        kb.reduce(0, n, [zero], element)

    when(kb, fits, write)


KERNELS = {graph.NonZeroOp: nonzero_kernel}

SYMBOLIC = set(KERNELS)
"""Their inputs' sizes may be symbolic too."""
