"""Small integer tensors computed at run time, known element by element as `root[i] + c`.

torch exports `x[t:t+1]` in a loop body as `Slice(x, Unsqueeze(t), Unsqueeze(Add(t, 1)))`:
the bounds are run-time values, but they differ by the constant 1, so the result has a static
shape. For integer tensors of a few elements the importer records each element as a constant
or as an element of a run-time value plus a constant (a `Term`), through the ops that build
such bounds (Add/Sub of constants, reshapes, Concat, constant Gather/Slice, integer Casts).
`dynamic_slice` then reads the lengths from them: such a Slice becomes a Gather of
`start + arange(length)` (onnx_ops_tensor.convert_slice).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import IntegerType, TensorType, UnitAttr, i1, i64
from xdsl.ir import SSAValue

from onnxc.dialects import graph
from onnxc.dialects import graph_shapes as shapes
from onnxc.dialects.graph_base import sizes_attr
from onnxc.dialects.size_facts import require_at_least
from onnxc.dialects.symbolic_dims import SymDim, is_static
from onnxc.frontend import onnx_types as types
from onnxc.frontend.onnx_context import NodeContext, Tensor

MAX_ELEMENTS = 8
"""Tensors with more elements are not followed (bounds have one element per sliced axis)."""


@dataclass(frozen=True)
class Term:
    """One element: `root`'s flat element `index` plus `offset`, or the constant `offset`
    when `root` is None (a size of shape data, `seq`, is a constant of the run)."""

    root: SSAValue | None
    index: int
    offset: int | SymDim

    def plus(self, c: int) -> Term:
        return Term(self.root, self.index, self.offset + c)


def _integer(t: Tensor) -> bool:
    el = t.element_type
    return isinstance(el, IntegerType) and el.width.data > 1


def _size(t: Tensor) -> int | None:
    """The element count of `t`, None when its shape is symbolic."""
    shape = t.shape
    return None if not is_static(shape) else int(np.prod(shape))


def terms_of(t: Tensor) -> list[Term] | None:
    """Each element of `t` as a Term, if `t` is a small integer tensor."""
    size = _size(t)
    if not _integer(t) or size is None or size > MAX_ELEMENTS:
        return None
    if t.array is not None:  # shape data's sizes are constants of the run (ctx.sizes)
        return [Term(None, 0, v if isinstance(v, SymDim) else int(v))
                for v in t.array.reshape(-1)]
    if t.symbolic_data:
        return None
    if t.terms is not None:
        return list(t.terms)
    if t.value is not None:
        return [Term(t.value, i, 0) for i in range(int(np.prod(t.shape)))]
    return None


def _same_elements(ctx: NodeContext) -> list[Term] | None:
    return terms_of(ctx.tensor(0))


def _add_sub(sign: int):
    def rule(ctx: NodeContext) -> list[Term] | None:
        a, b = terms_of(ctx.tensor(0)), terms_of(ctx.tensor(1))
        if a is None or b is None:
            return None
        n = max(len(a), len(b))
        if {len(a), len(b)} - {1, n}:
            return None
        a, b = a * (n // len(a)), b * (n // len(b))
        out = []
        for x, y in zip(a, b):
            if y.root is None:
                out.append(x.plus(sign * y.offset))
            elif x.root is None and sign > 0:
                out.append(y.plus(x.offset))
            else:
                return None
        return out
    return rule


def _concat(ctx: NodeContext) -> list[Term] | None:
    if any(len(t.shape) > 1 for t in ctx.tensors()):
        return None
    out: list[Term] = []
    for t in ctx.tensors():
        terms = terms_of(t)
        if terms is None:
            return None
        out += terms
    return out


def _array(ctx: NodeContext, i: int = 0) -> np.ndarray | None:
    """Input i's Terms in its shape (an object array), for the ops that move elements."""
    terms = terms_of(ctx.tensor(i))
    if terms is None:
        return None
    array = np.empty(len(terms), dtype=object)
    array[:] = terms
    return array.reshape(ctx.shape(i))


def _gather(ctx: NodeContext) -> list[Term] | None:
    data, indices = _array(ctx), ctx.known(1)
    if data is None or indices is None or indices.dtype == object:
        return None
    try:
        picked = np.take(data, indices.astype(np.int64), axis=ctx.attr("axis", 0))
    except IndexError:
        return None
    return list(np.asarray(picked).reshape(-1))


def _slice(ctx: NodeContext) -> list[Term] | None:
    from onnxc.frontend.onnx_ops_tensor import slice_params

    data = _array(ctx)
    if data is None or (ctx.opset >= 10 and (ctx.known(1) is None or ctx.known(2) is None)):
        return None  # bounds known only at run time: not followed
    starts, ends, axes, steps = slice_params(ctx)
    if not all(isinstance(v, int) for v in (*starts, *ends)):
        return None
    index = [slice(None)] * data.ndim
    for start, end, axis, step in zip(starts, ends, axes, steps):
        index[axis] = slice(start, end, step)  # ONNX clamps as Python does
    return list(data[tuple(index)].reshape(-1))


def _transpose(ctx: NodeContext) -> list[Term] | None:
    from onnxc.frontend.onnx_ops_tensor import transpose_perm

    data = _array(ctx)
    return None if data is None else list(np.transpose(data, transpose_perm(ctx)).reshape(-1))


RULES = {
    "Identity": _same_elements, "Unsqueeze": _same_elements, "Squeeze": _same_elements,
    "Reshape": _same_elements, "Flatten": _same_elements, "Cast": _same_elements,
    "CastLike": _same_elements, "Add": _add_sub(1), "Sub": _add_sub(-1), "Concat": _concat,
    "Gather": _gather, "Slice": _slice, "Transpose": _transpose,
}
"""Per op type: its single output's Terms from its inputs' (the output is an integer tensor
of at most MAX_ELEMENTS elements, checked by the caller)."""


def output_terms(ctx: NodeContext, result: Tensor) -> list[Term] | None:
    """The Terms of a node's (single, run-time) output, when its op is followed."""
    rule = RULES.get(ctx.op_type)
    size = _size(result)
    if rule is None or ctx.num_outputs != 1 or not _integer(result) or size is None \
            or size > MAX_ELEMENTS:
        return None
    if ctx.op_type in ("Cast", "CastLike") and not all(_integer(t) for t in ctx.tensors()[:1]):
        return None
    if any(_size(t) is None for t in ctx.tensors()):
        return None
    terms = rule(ctx)
    return terms if terms is not None and len(terms) == size else None


__all__ = ["MAX_ELEMENTS", "Term", "output_terms", "terms_of"]


# ------------------------------------------------------------------------ run-time slices


def _element(ctx: NodeContext, root: SSAValue, index: int) -> SSAValue:
    """Element `index` of the run-time integer tensor `root`, as a tensor<1xi64>."""
    t = root.type
    size = int(np.prod(t.get_shape()))
    el = t.get_element_type()
    value = root
    if size == 1:
        if tuple(t.get_shape()) != (1,):
            value = ctx.emit1(graph.ReshapeOp(operands=[value], result_types=[
                TensorType(el, [1])]))
    else:
        if len(t.get_shape()) != 1:
            value = ctx.emit1(graph.ReshapeOp(operands=[value], result_types=[
                TensorType(el, [size])]))
        value = ctx.emit1(graph.SliceOp(operands=[value], result_types=[TensorType(el, [1])],
                                        properties={
                                            "starts": types.i64_array([index]),
                                            "ends": types.i64_array([index + 1]),
                                            "axes": types.i64_array([0]),
                                            "steps": types.i64_array([1])}))
    if el != i64:
        value = ctx.emit1(graph.CastOp(operands=[value], result_types=[TensorType(i64, [1])]))
    return value


def dynamic_slice(ctx: NodeContext, axes: list[int], steps: list[int]) -> SSAValue:
    """A Slice whose bounds are known only at run time but differ by constants: a Gather of
    `start + arange(length)` per such axis. Its indices are checked to lie in [0, dim) at run
    time (`nonnegative`), so a start that ONNX would clamp or count from the end stops the
    run with an error instead of giving another slice."""
    starts, ends = terms_of(ctx.tensor(1)), terms_of(ctx.tensor(2))
    if starts is None or ends is None:
        return run_time_slice(ctx, axes, steps)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ctx.invalid("starts, ends, axes and steps differ in length")
    shape = list(ctx.shape(0))
    static: list[tuple[int, int, int, int]] = []
    dynamic: list[tuple[Term, int, int]] = []
    if any(isinstance(t.offset, SymDim) for t in (*starts, *ends)):
        return run_time_slice(ctx, axes, steps)
    for s, e, axis, step in zip(starts, ends, axes, steps):
        if s.root is None and e.root is None:
            static.append((s.offset, e.offset, axis, step))
        elif s.root is e.root and s.index == e.index and step == 1:
            length = e.offset - s.offset
            if length < 1 or (isinstance(shape[axis], int) and length > shape[axis]):
                raise ctx.unsupported(
                    f"run-time slice bounds on axis {axis} a constant {length} apart, outside "
                    f"[1, {shape[axis]}]")
            if isinstance(shape[axis], SymDim):  # x[t:t+1] of a seq axis needs seq >= 1
                require_at_least(shape[axis], length, f"a slice of {length} on axis {axis}")
            dynamic.append((s, axis, length))
        else:  # the length is known only in the run: bounds bound as run sizes
            return run_time_slice(ctx, axes, steps)
    value = ctx.operand(0)
    if static:
        s_starts, s_ends, s_axes, s_steps = (list(c) for c in zip(*static))
        shape = list(ctx.infer(shapes.slice_shape, shape, s_starts, s_ends, s_axes, s_steps))
        value = ctx.emit1(graph.SliceOp(
            operands=[value], result_types=[types.tensor_type(shape, ctx.element_type(0))],
            properties={"starts": types.i64_array(s_starts), "ends": types.i64_array(s_ends),
                        "axes": types.i64_array(s_axes), "steps": types.i64_array(s_steps)}))
    for s, axis, length in dynamic:
        assert s.root is not None
        indices = _element(ctx, s.root, s.index)
        if (length, s.offset) != (1, 0):
            offsets = Tensor.of_array(np.arange(s.offset, s.offset + length, dtype=np.int64))
            indices = ctx.emit1(graph.AddOp(operands=[indices, ctx.materialize(offsets)],
                                            result_types=[TensorType(i64, [length])]))
        shape[axis] = length
        value = ctx.emit1(graph.GatherOp(
            operands=[value, indices],
            result_types=[types.tensor_type(shape, ctx.element_type(0))],
            properties={"axis": types.i64_attr(axis), "nonnegative": UnitAttr()}))
    return value


def run_time_slice(ctx: NodeContext, axes: list[int], steps: list[int]) -> SSAValue:
    """A Slice whose bounds the run computes (torchvision's paste of a mask into the image,
    `mask[y0 - by0 : y1 - by0]` from box coordinates): the bounds are normalized in the run
    as ONNX says (negative ones count from the end, then clamp to [0, dim]) and bound to run
    symbols, so the result's size is a size expression over them. Positive steps only."""
    if any(step <= 0 for step in steps):
        which = 1 if ctx.tensor(1).array is None else 2
        ctx.constant(which, f"{('starts', 'ends')[which - 1]}; with a negative step the "
                            f"bounds")  # raises, naming the value
    shape = list(ctx.shape(0))
    count = len(axes)
    vector = TensorType(i64, [count])
    dims = ctx.materialize(Tensor.of_array(np.array([shape[a] for a in axes], dtype=object)))
    zeros = ctx.materialize(Tensor.of_array(np.zeros(count, np.int64)))
    bounds: list[list] = []
    for which in (1, 2):
        if ctx.rank(which) != 1 or ctx.shape(which) != (count,) \
                or not isinstance(ctx.element_type(which), IntegerType):
            raise ctx.invalid(f"input {which} must hold one integer per sliced axis")
        value = ctx.operand(which)
        if ctx.element_type(which) != i64:
            value = ctx.emit1(graph.CastOp(operands=[value], result_types=[vector]))
        negative = ctx.emit1(graph.LessOp(operands=[value, zeros], result_types=[
            TensorType(i1, [count])]))
        from_end = ctx.emit1(graph.AddOp(operands=[value, dims], result_types=[vector]))
        value = ctx.emit1(graph.WhereOp(operands=[negative, from_end, value],
                                        result_types=[vector]))
        value = ctx.emit1(graph.MaxOp(operands=[[value, zeros]], result_types=[vector]))
        value = ctx.emit1(graph.MinOp(operands=[[value, dims]], result_types=[vector]))
        what = ("start", "end")[which - 1]
        bounds.append(ctx.bind_sizes(value, what, [f"{what}{a}" for a in axes],
                                     [shape[a] for a in axes]))
    starts, ends = bounds
    out = ctx.infer(shapes.slice_shape, tuple(shape), starts, ends, axes, steps)
    return ctx.emit1(graph.SliceOp(
        operands=[ctx.operand(0)], result_types=[types.tensor_type(out, ctx.element_type(0))],
        properties={"starts": sizes_attr(starts), "ends": sizes_attr(ends),
                    "axes": types.i64_array(axes), "steps": types.i64_array(steps)}))
