"""ONNX sequences and optionals at import: compile-time values, never run-time ones.

onnxc compiles static shapes, so a sequence is known when the model is compiled: a Python list
of tensors (`SequenceValue.items`), followed by the rows of a stacked tensor when a counted
Loop appended to it (`SequenceValue.stacked`, [iterations, *shape]). The sequence ops become
ordinary graph ops on those tensors (SequenceAt picks one, ConcatFromSequence concatenates or
stacks them, SplitToSequence splits), and nothing of the sequence is left at run time.

This is what torch's exporter writes for `outs = []; for t in ...: outs.append(h)` followed by
`torch.stack(outs)`: SequenceEmpty, a Loop carrying the sequence and SequenceInsert-ing one
tensor per iteration, then ConcatFromSequence. frontend/onnx_ops_control.py turns the
appended tensor into a scan output of the loop (`LoopSequence`). Sequences as graph inputs or
outputs, a sequence a loop does more with than append to, and positions known only at run
time are refused with UnsupportedOpError.

An optional is known the same way (`OptionalValue`): Optional wraps a tensor or a sequence
(or nothing), OptionalHasElement is a constant, OptionalGetElement unwraps it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from xdsl.ir import Attribute, SSAValue

from onnxc.dialects import graph
from onnxc.dialects import graph_shapes as shapes
from onnxc.dialects.symbolic_dims import Dim, SymDim
from onnxc.frontend import onnx_types as types
from onnxc.frontend.onnx_context import NodeContext, Result, Tensor
from onnxc.frontend.onnx_ops_math import normalized_axis
from onnxc.frontend.onnx_shape_data import shape_array


@dataclass(eq=False)
class SequenceValue:
    """A sequence known at compile time: `items`, then the rows of `stacked`."""

    element: Attribute
    items: list[Tensor] = field(default_factory=list)
    stacked: Tensor | None = None
    name: str = ""

    def length(self) -> Dim:
        """The number of tensors: a size polynomial when a Loop of symbolic count appended."""
        return len(self.items) + (self.stacked.shape[0] if self.stacked is not None else 0)

    def __len__(self) -> int:
        return int(self.length())  # SymbolicDimError for a symbolic length

    def copied(self) -> SequenceValue:
        """The same sequence with its own Tensor objects (for a subgraph's scope: a constant
        materialized there must not be reused outside)."""
        return SequenceValue(self.element, [Tensor(t.type, t.value, t.array, t.name)
                                            for t in self.items],
                             None if self.stacked is None else Tensor(
                                 self.stacked.type, self.stacked.value, self.stacked.array,
                                 self.stacked.name), self.name)


@dataclass(eq=False)
class LoopSequence:
    """A sequence carried by a Loop, inside its body: it may only be appended to (then the
    loop stacks what each iteration appends, as a scan output) or passed on unchanged."""

    element: Attribute
    initial: SequenceValue
    appended: Tensor | None = None
    source: LoopSequence | None = None
    """for the result of SequenceInsert(carried, t): the carried sequence and `appended` = t"""
    name: str = ""


@dataclass(eq=False)
class OptionalValue:
    """An optional known at compile time: `value`, or None when it is empty."""

    value: Tensor | SequenceValue | None
    name: str = ""


def scope_copy(value):
    """`value` for a subgraph's scope, with Tensor objects of its own: a constant the
    subgraph materializes in its block must not be reused outside it."""
    if isinstance(value, SequenceValue):
        return value.copied()
    if isinstance(value, OptionalValue):
        return OptionalValue(None if value.value is None else scope_copy(value.value), value.name)
    if isinstance(value, LoopSequence):
        return value
    return Tensor(value.type, value.value, value.array, value.name, value.terms)


def is_container(value: object) -> bool:
    """A value that is not a tensor: a sequence (known, or a loop's carried one) or an
    optional."""
    return isinstance(value, SequenceValue | LoopSequence | OptionalValue)


def _sequence(ctx: NodeContext, i: int) -> SequenceValue:
    value = ctx.tensor(i)
    if isinstance(value, LoopSequence):
        raise ctx.unsupported("a sequence carried by a Loop is only appended to (SequenceInsert "
                              "at the end) or passed on; anything else needs its run-time length")
    if not isinstance(value, SequenceValue):
        raise ctx.invalid(f"input {i} must be a sequence")
    return value


def _position(ctx: NodeContext, i: int, length: int, inserting: bool) -> int:
    """A constant position; absent = the end (or the last item, when not inserting)."""
    if not ctx.has_input(i):
        return length if inserting else length - 1
    pos = int(np.asarray(ctx.constant(i, "position")).reshape(-1)[0])
    limit = length + 1 if inserting else length
    if not -limit + (1 if inserting else 0) <= pos < limit:
        raise ctx.invalid(f"position {pos} is out of range for a sequence of {length}")
    return pos + length + (1 if inserting else 0) if pos < 0 else pos


def _item(ctx: NodeContext, seq: SequenceValue, pos: int) -> Tensor | SSAValue:
    """Item `pos`: a listed tensor, or a row of `stacked` (a gather)."""
    if pos < len(seq.items):
        return seq.items[pos]
    assert seq.stacked is not None
    index = ctx.materialize(Tensor.of_array(np.array(pos - len(seq.items), np.int64)))
    row = types.tensor_type(list(seq.stacked.shape[1:]), seq.element)
    return ctx.emit1(graph.GatherOp(operands=[ctx.materialize(seq.stacked), index],
                                    result_types=[row], properties={"axis": types.i64_attr(0)}))


def convert_sequence_empty(ctx: NodeContext) -> list[Result]:
    dtype = ctx.attr("dtype", 1)
    if not types.is_supported(dtype):
        raise ctx.unsupported(f"element type {types.type_name(dtype)}")
    return [SequenceValue(types.element_type(dtype))]  # type: ignore[list-item]


def convert_sequence_construct(ctx: NodeContext) -> list[Result]:
    items = ctx.tensors()
    if any(is_container(t) for t in items) or not items:
        raise ctx.invalid("takes one or more tensors")
    if len({t.element_type for t in items}) != 1:
        raise ctx.invalid("the tensors differ in element type")
    return [SequenceValue(items[0].element_type, list(items))]  # type: ignore[list-item]


def convert_sequence_insert(ctx: NodeContext) -> list[Result]:
    value = ctx.tensor(0)
    tensor = ctx.tensor(1)
    if is_container(tensor):
        raise ctx.invalid("input 1 must be a tensor")
    if isinstance(value, LoopSequence):
        if ctx.has_input(2) or value.appended is not None:
            raise ctx.unsupported("a Loop may append one tensor per iteration to the sequence "
                                  "it carries, at the end")
        return [LoopSequence(value.element, value.initial, tensor, value)]  # type: ignore
    seq = _sequence(ctx, 0)
    if tensor.element_type != seq.element:
        raise ctx.invalid(f"inserts {tensor.element_type} into a sequence of {seq.element}")
    if seq.stacked is not None:
        raise ctx.unsupported("inserting into a sequence a Loop appended to")
    items = list(seq.items)
    items.insert(_position(ctx, 2, len(items), inserting=True), tensor)
    return [SequenceValue(seq.element, items)]  # type: ignore[list-item]


def convert_sequence_erase(ctx: NodeContext) -> list[Result]:
    seq = _sequence(ctx, 0)
    if seq.stacked is not None:
        raise ctx.unsupported("erasing from a sequence a Loop appended to")
    items = list(seq.items)
    del items[_position(ctx, 1, len(items), inserting=False)]
    return [SequenceValue(seq.element, items)]  # type: ignore[list-item]


def convert_sequence_at(ctx: NodeContext) -> list[Result]:
    seq = _sequence(ctx, 0)
    if not ctx.has_input(1):
        raise ctx.invalid("input 1 (position) is required")
    return [_item(ctx, seq, _position(ctx, 1, len(seq), inserting=False))]


def convert_sequence_length(ctx: NodeContext) -> list[Result]:
    length = _sequence(ctx, 0).length()
    if isinstance(length, SymDim):  # shape data, as Shape of a symbolic dimension
        return [Tensor.of_array(shape_array(length))]
    return [np.array(length, np.int64)]


def convert_concat_from_sequence(ctx: NodeContext) -> list[Result]:
    seq = _sequence(ctx, 0)
    new_axis = bool(ctx.attr("new_axis", 0))
    if seq.length() == 0:
        raise ctx.invalid("concatenates an empty sequence")
    if seq.stacked is not None and not seq.items:
        return [_from_stacked(ctx, seq.stacked, int(ctx.attr("axis")), new_axis)]
    parts = [p if isinstance(p, SSAValue) else ctx.materialize(p)
             for p in (_item(ctx, seq, k) for k in range(len(seq)))]
    rank = len(graph.shape_of(parts[0]))
    axis = normalized_axis(ctx, int(ctx.attr("axis")), rank + int(new_axis))
    if new_axis:
        parts = [ctx.emit1(graph.UnsqueezeOp(
            operands=[p], result_types=[types.tensor_type(shapes.unsqueeze_shape(
                graph.shape_of(p), [axis]), seq.element)],
            properties={"axes": types.i64_array([axis])})) for p in parts]
    if len(parts) == 1:
        return [parts[0]]
    out = ctx.infer(shapes.concat_shape, [graph.shape_of(p) for p in parts], axis)
    return [ctx.emit1(graph.ConcatOp(operands=[parts], result_types=[
        types.tensor_type(out, seq.element)], properties={"axis": types.i64_attr(axis)}))]


def _from_stacked(ctx: NodeContext, stacked: Tensor, axis: int, new_axis: bool) -> SSAValue:
    """ConcatFromSequence of the rows of `stacked` ([n, *shape]) without splitting it: a
    transpose bringing the row axis next to `axis`, and for concatenation a reshape merging
    the two."""
    n, *shape = stacked.shape
    value = ctx.materialize(stacked)
    axis = normalized_axis(ctx, axis, len(shape) + int(new_axis))
    perm = [*range(1, axis + 1), 0, *range(axis + 1, len(shape) + 1)]
    if perm != sorted(perm):
        moved = [stacked.shape[p] for p in perm]
        value = ctx.emit1(graph.TransposeOp(operands=[value], result_types=[
            types.tensor_type(moved, stacked.element_type)],
            properties={"perm": types.i64_array(perm)}))
    if new_axis:
        return value
    merged = [*shape[:axis], n * shape[axis], *shape[axis + 1:]]
    return ctx.emit1(graph.ReshapeOp(operands=[value], result_types=[
        types.tensor_type(merged, stacked.element_type)]))


def convert_split_to_sequence(ctx: NodeContext) -> list[Result]:
    x = ctx.tensor(0)
    axis = normalized_axis(ctx, int(ctx.attr("axis", 0)), len(x.shape))
    dim = x.shape[axis]
    if ctx.has_input(1):
        split = np.asarray(ctx.constant(1, "split")).astype(np.int64)
        sizes = [int(split)] * (dim // int(split)) + ([dim % int(split)] if dim % int(split)
                                                      else []) if split.ndim == 0 \
            else [int(s) for s in split]
        squeeze = False
    else:
        sizes, squeeze = [1] * dim, not ctx.attr("keepdims", 1)
    if sum(sizes) != dim or any(s <= 0 for s in sizes):
        raise ctx.invalid(f"split sizes {sizes} do not divide dimension {dim}")
    parts = [list(x.shape[:axis]) + [s] + list(x.shape[axis + 1:]) for s in sizes]
    op = ctx.emit(graph.SplitOp(operands=[ctx.materialize(x)], result_types=[
        [types.tensor_type(p, x.element_type) for p in parts]],
        properties={"axis": types.i64_attr(axis)}))
    items: list[Tensor] = []
    for r in op.results:
        value = r
        if squeeze:
            value = ctx.emit1(graph.SqueezeOp(operands=[r], result_types=[types.tensor_type(
                [d for k, d in enumerate(graph.shape_of(r)) if k != axis], x.element_type)],
                properties={"axes": types.i64_array([axis])}))
        items.append(Tensor(value.type, value=value))  # type: ignore[arg-type]
    return [SequenceValue(x.element_type, items)]  # type: ignore[list-item]


def convert_optional(ctx: NodeContext) -> list[Result]:
    return [OptionalValue(ctx.tensor(0) if ctx.has_input(0) else None)]  # type: ignore


def convert_optional_has_element(ctx: NodeContext) -> list[Result]:
    value = ctx.tensor(0) if ctx.has_input(0) else None
    present = value is not None and (not isinstance(value, OptionalValue)
                                     or value.value is not None)
    return [np.array(present)]


def convert_optional_get_element(ctx: NodeContext) -> list[Result]:
    value = ctx.tensor(0)
    if isinstance(value, OptionalValue):
        if value.value is None:
            raise ctx.invalid("the optional is empty")
        return [value.value]  # type: ignore[list-item]
    return [value]  # a tensor or sequence is its own element (opset 18)


SEQUENCE_AWARE = frozenset({
    "SequenceEmpty", "SequenceConstruct", "SequenceInsert", "SequenceErase", "SequenceAt",
    "SequenceLength", "ConcatFromSequence", "SplitToSequence", "Loop", "Optional",
    "OptionalHasElement", "OptionalGetElement"})
"""Op types whose converters take sequence inputs (the importer passes a sequence through
Identity itself); any other op given a sequence is refused before its converter runs."""

CONVERTERS = {
    "SequenceEmpty": convert_sequence_empty,
    "SequenceConstruct": convert_sequence_construct,
    "SequenceInsert": convert_sequence_insert,
    "SequenceErase": convert_sequence_erase,
    "SequenceAt": convert_sequence_at,
    "SequenceLength": convert_sequence_length,
    "ConcatFromSequence": convert_concat_from_sequence,
    "SplitToSequence": convert_split_to_sequence,
    "Optional": convert_optional,
    "OptionalHasElement": convert_optional_has_element,
    "OptionalGetElement": convert_optional_get_element,
}
