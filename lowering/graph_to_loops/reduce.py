"""Kernels of ReduceSum, ReduceMean, ReduceMax, ReduceMin and ReduceProd.

The input is viewed with adjacent dimensions of the same kind (kept or reduced) merged, so
a reduction over trailing axes (LayerNorm's last axis, a global pool's H and W) is one
contiguous inner reduction loop carried in registers, written once per output; when the
innermost axis is kept (a reduction over leading or middle axes), whole output rows are
accumulated instead, so the inner loop stays contiguous in both x and y.

Symbolic sizes (kept rows or a reduced axis) are run-time loop bounds; static shapes build
the same code as they always did. A mean over a symbolic axis divides by its run-time size.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence

from onnxc.dialects import graph
from onnxc.dialects.graph import shape_of
from onnxc.dialects.layout import layout_of
from onnxc.dialects.symbolic_dims import Dim, num_elements
from onnxc.errors import LoweringError
from onnxc.lowering.graph_to_loops.element_types import is_bool, is_float, max_value, min_value
from onnxc.lowering.graph_to_loops.elementwise import MIN_PARALLEL_ELEMENTS
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder
from onnxc.lowering.graph_to_loops.normalization import extents, sizes
from onnxc.lowering.graph_to_loops.rules import rules


def reduce_groups(shape: Sequence[Index], axes: tuple[int, ...],
                  mul: Callable[[Index, Index], Index] = operator.mul,
                  ) -> list[tuple[Index, bool]]:
    """(size, reduced) runs of adjacent dimensions; size-1 dimensions are dropped (`mul`
    multiplies sizes: `KernelBuilder.imul` when some are run-time values)."""
    groups: list[tuple[Index, bool]] = []
    for d, size in enumerate(shape):
        if isinstance(size, int) and size == 1:
            continue
        reduced = d in axes
        if groups and groups[-1][1] == reduced:
            groups[-1] = (mul(groups[-1][0], size), reduced)
        else:
            groups.append((size, reduced))
    return groups


def reduce_kernel(op: graph.ReduceOp, kb: KernelBuilder, ins, outs):
    if layout_of(op.input.type) is not None or layout_of(op.output.type) is not None:
        raise LoweringError(f"{op.name}: laid-out operands are not supported")
    x_shape = sizes(kb, op.input)
    work = num_elements(shape_of(op.input))
    axes = op.reduced_axes()
    element = outs[0].type.get_element_type()
    combine, identity = _COMBINE[type(op)]
    if is_bool(element) and not isinstance(op, (graph.ReduceMaxOp, graph.ReduceMinOp)):
        raise LoweringError(f"{op.name}: boolean tensors are not supported")
    mean = isinstance(op, graph.ReduceMeanOp)
    if mean and not is_float(element):
        raise LoweringError(f"{op.name}: element type {element} is not a float")
    groups = reduce_groups(x_shape, axes, kb.imul) or [(1, False)]
    count = kb.product([x_shape[a] for a in axes])
    kept = [size for size, reduced in groups if not reduced]
    x = kb.view(ins[0], [size for size, _ in groups])
    y = kb.view(outs[0], kept or [1])
    zero = kb.constant(identity(element), element)
    scale = None
    if mean and not isinstance(count, int):  # over a symbolic axis: 1 / its run-time size
        scale = kb.div(kb.constant(1.0, element), kb.to_float(count, element))
    elif mean and count > 1:
        scale = kb.constant(1.0 / count, element)

    def x_index(kept_ivs: list[Index], reduced_ivs: list[Index]) -> list[Index]:
        kept_left, reduced_left, it = list(kept_ivs), list(reduced_ivs), []
        for _, reduced in groups:
            it.append((reduced_left if reduced else kept_left).pop(0))
        return it

    reduced_sizes = [size for size, reduced in groups if reduced]
    if not groups[-1][1] and reduced_sizes:
        # The innermost dimension is kept: accumulate whole contiguous rows of the output
        # (a vectorizable load-combine-store loop) instead of striding through x per output.
        row = kept[-1]

        def per_row(outer_ivs: list[Index]) -> None:
            kb.for_(0, row, lambda i: kb.store(zero, y, [*outer_ivs, i]))

            def add_slice(reduced_ivs: list[Index]) -> None:
                def step(i: Index) -> None:
                    at = [*outer_ivs, i]
                    value = kb.load(x, x_index(at, reduced_ivs))
                    kb.store(combine(kb, kb.load(y, at), value), y, at)

                kb.for_(0, row, step)

            kb.nest(extents(reduced_sizes), add_slice)
            if scale is not None:
                kb.for_(0, row, lambda i: kb.store(
                    kb.mul(kb.load(y, [*outer_ivs, i]), scale), y, [*outer_ivs, i]))

        outer_loops(kb, kept[:-1], per_row, work)
        return

    def per_output(kept_ivs: list[Index]) -> None:
        def accumulate(depth: int, it: list[Index], kept_left: list[Index], acc):
            if depth == len(groups):
                return combine(kb, acc, kb.load(x, it))
            size, reduced = groups[depth]
            if not reduced:
                return accumulate(depth + 1, [*it, kept_left[0]], kept_left[1:], acc)
            (total,) = kb.reduce(0, size, [acc], lambda iv, a: [
                accumulate(depth + 1, [*it, iv], kept_left, a)
            ])
            return total

        total = accumulate(0, [], kept_ivs, zero)
        if scale is not None:
            total = kb.mul(total, scale)
        kb.store(total, y, kept_ivs or [0])

    outer_loops(kb, kept, per_output, work)


def outer_loops(kb: KernelBuilder, shape: list[Index], body, work: Dim) -> None:
    """A loop nest over `shape` whose outermost loop runs in parallel when the kernel reads
    enough elements (`work`; a symbolic count is taken to be enough) to pay for waking
    threads."""
    if not shape:
        body([])
        return
    small = isinstance(work, int) and work < MIN_PARALLEL_ELEMENTS
    loop = kb.for_ if small else kb.parallel_for
    loop(0, shape[0], lambda iv: kb.nest(extents(shape[1:]), lambda ivs: body([iv, *ivs])))


_COMBINE = {  # op -> (combine(kb, acc, x), identity of element type)
    graph.ReduceSumOp: (KernelBuilder.add, lambda t: 0),
    graph.ReduceMeanOp: (KernelBuilder.add, lambda t: 0),
    graph.ReduceProdOp: (KernelBuilder.mul, lambda t: 1),
    graph.ReduceMaxOp: (KernelBuilder.max, min_value),
    graph.ReduceMinOp: (KernelBuilder.min, max_value),
}

RULES = rules(_COMBINE, reduce_kernel, symbolic=True)
"""symbolic: the kernels read their sizes from the KernelBuilder (symbolic dims welcome)."""
