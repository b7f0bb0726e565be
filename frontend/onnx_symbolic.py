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
from xdsl.dialects.builtin import IntegerType, TensorType, UnitAttr, i64
from xdsl.ir import SSAValue

from onnxc.dialects import graph
from onnxc.dialects import graph_shapes as shapes
from onnxc.dialects.size_facts import require_at_least
from onnxc.dialects.symbolic_dims import SymDim, is_static
from onnxc.frontend import onnx_types as types
from onnxc.frontend.onnx_context import NodeContext, Tensor

MAX_ELEMENTS = 8
"""Tensors with more elements are not followed (bounds have one element per sliced axis)."""


@dataclass(frozen=True)
class Term:
    """One element: `root`'s flat element `index` plus `offset`, or the constant `offset`
    when `root` is None."""

    root: SSAValue | None
    index: int
    offset: int

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
    """Each element of `t` as a Term, if `t` is a small integer tensor (shape data with
    symbolic elements is not followed: its sizes are not constants)."""
    size = _size(t)
    if not _integer(t) or size is None or size > MAX_ELEMENTS or t.symbolic_data:
        return None
    if t.array is not None:
        return [Term(None, 0, int(v)) for v in t.array.reshape(-1)]
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


def _pick(ctx: NodeContext, picked) -> list[Term] | None:
    data = terms_of(ctx.tensor(0))
    if data is None or len(ctx.shape(0)) != 1:
        return None
    try:
        return [data[int(i)] for i in np.asarray(picked).reshape(-1)]
    except IndexError:
        return None


def _gather(ctx: NodeContext) -> list[Term] | None:
    indices = ctx.known(1)
    return None if indices is None else _pick(ctx, indices)


def _slice(ctx: NodeContext) -> list[Term] | None:
    from onnxc.frontend.onnx_ops_tensor import slice_params

    if len(ctx.shape(0)) != 1 or (ctx.opset >= 10 and (ctx.known(1) is None
                                                        or ctx.known(2) is None)):
        return None  # bounds known only at run time: not followed
    starts, ends, _, steps = slice_params(ctx)
    return _pick(ctx, np.arange(ctx.shape(0)[0])[slice(starts[0], ends[0], steps[0])])


RULES = {
    "Identity": _same_elements, "Unsqueeze": _same_elements, "Squeeze": _same_elements,
    "Reshape": _same_elements, "Flatten": _same_elements, "Cast": _same_elements,
    "CastLike": _same_elements, "Add": _add_sub(1), "Sub": _add_sub(-1), "Concat": _concat,
    "Gather": _gather, "Slice": _slice,
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
    if starts is None:
        ctx.constant(1, "starts")  # raises, naming the value
    if ends is None:
        ctx.constant(2, "ends")
    assert starts is not None and ends is not None
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ctx.invalid("starts, ends, axes and steps differ in length")
    shape = list(ctx.shape(0))
    static: list[tuple[int, int, int, int]] = []
    dynamic: list[tuple[Term, int, int]] = []
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
        else:  # the shape would be known only at run time: the usual error, naming the value
            which = 1 if s.root is not None else 2
            ctx.constant(which, f"{('starts', 'ends')[which - 1]}; its distance to the other "
                                f"bound on axis {axis} is not a constant")
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
