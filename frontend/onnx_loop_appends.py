"""Loop-carried tensors that grow: torch's `res = torch.cat([res, row])` in a loop.

ONNX lets a Loop's carried value change shape from one iteration to the next; onnxc's
`graph.loop` carries values of one type. A carried value that the body only appends to
(the next value is a Concat of the carried one, first, and pieces of a size every iteration
shares, along one axis; the carried value read nowhere else) is a scan output in disguise:
the loop stacks the pieces, one slice per iteration, and after it the result is the
initial value concatenated with the stacked pieces merged into that axis. That also turns
ONNX's copy of the whole value each iteration (quadratic in the rows) into one write of
each piece. Its length is the loop's count (a size, or the run's `trip_symbol`), so its
buffer comes from that bound, or from a capacity the runtime grows.

The body is imported twice: first as ONNX gives it, which shows which carried values change
type, then with each changing dimension of those a fresh symbol (so that no rule folds
the empty first value away), which shows how the next value is made of the carried one.
"""

from __future__ import annotations

import re

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, SSAValue

from onnxc.dialects import graph
from onnxc.dialects.graph import int_of
from onnxc.dialects.graph_shapes import normalize_axis
from onnxc.dialects.size_facts import require_equal
from onnxc.dialects.symbolic_dims import Dim, SymDim, symbol_name
from onnxc.frontend import onnx_types as types
from onnxc.frontend.onnx_context import NodeContext, Tensor, materialize


def growing_type(ctx: NodeContext, k: int, before: TensorType, after: TensorType) -> TensorType:
    """The type carried value `k` is imported with the second time: `before` with each
    dimension that differs in `after` a fresh symbol."""
    if before.get_element_type() != after.get_element_type() or len(
            before.get_shape()) != len(after.get_shape()):
        raise ctx.unsupported(f"loop-carried value {k} changes from {before} to {after} "
                              f"across iterations (element type or rank)")
    dims: list[Dim] = []
    for axis, (x, y) in enumerate(zip(graph.shape_of(before), graph.shape_of(after))):
        dims.append(x if x == y else SymDim.symbol(_carried_symbol(ctx, k, axis)))
    return types.tensor_type(dims, before.get_element_type())


def _carried_symbol(ctx: NodeContext, k: int, axis: int) -> str:
    base = re.sub(r"[^A-Za-z0-9_]", "_", ctx.label).strip("_") or "loop"
    return symbol_name(f"{base}_carried{k}_dim{axis}")


def appended_piece(ctx: NodeContext, block: Block, k: int, arg: SSAValue, yielded: object,
                   change: str) -> tuple[SSAValue, int]:
    """What the body appends to carried value `k` (block argument `arg`) each iteration,
    and along which axis; the Concat that appended it is removed from the body (the
    argument too is left without uses). Refused unless the next value is exactly the
    carried one with pieces appended (`change`: how its type changes, for the error)."""
    name = ctx.node.input[2 + k]
    if not isinstance(yielded, Tensor):
        raise ctx.unsupported(f"loop-carried value '{name}' {change} and the body yields a "
                              f"sequence for it")
    value = materialize(block, yielded)
    chain = []
    while isinstance(value.owner, graph.IdentityOp):
        chain.append(value.owner)
        value = value.owner.input
    concat = value.owner
    rank = len(graph.shape_of(arg))
    fresh = {_carried_symbol(ctx, k, a) for a in range(rank)}
    grown = [a for a in range(rank) if _symbols(arg, a) & fresh]
    if not (isinstance(concat, graph.ConcatOp) and len(concat.inputs) > 1
            and concat.inputs[0] is arg and arg.has_one_use() and len(grown) == 1
            and normalize_axis(int_of(concat.axis), rank) == grown[0]
            and materialize(block, yielded).first_use is None
            and all(op.results[0].has_one_use() for op in [*chain, concat][1:])):
        raise ctx.unsupported(
            f"loop-carried value '{name}' {change}; onnxc supports that when the body only "
            f"appends to it (Concat(carried, pieces) along one axis, the carried value read "
            f"nowhere else)")
    axis = grown[0]
    pieces = list(concat.inputs[1:])
    if any(_all_symbols(p) & fresh for p in pieces):
        raise ctx.unsupported(f"loop-carried value '{name}' grows by pieces whose size "
                              f"depends on its own")
    if len(pieces) == 1:
        piece = pieces[0]
    else:
        shapes = [graph.shape_of(p) for p in pieces]
        dims = list(shapes[0])
        dims[axis] = sum((s[axis] for s in shapes[1:]), shapes[0][axis])
        join = graph.ConcatOp(operands=[pieces], result_types=[types.tensor_type(
            dims, arg.type.get_element_type())], properties={"axis": types.i64_attr(axis)})
        block.insert_op_before(join, concat)
        piece = join.output
    for op in [*chain, concat]:
        op.detach()
        op.erase()
    return _invariant(ctx, block, name, piece, arg, axis), axis


def _invariant(ctx: NodeContext, block: Block, name: str, piece: SSAValue, arg: SSAValue,
               axis: int) -> SSAValue:
    """`piece` typed with the carried value's sizes on every other axis (Concat needs them
    equal: a guard the body checks each iteration where its own run sizes are in them);
    its size along `axis` must be one every iteration shares."""
    local = {n for op in block.walk() for n in graph.defined_sizes(op)}
    shape = list(graph.shape_of(piece))
    if _symbols(piece, axis) & local:
        raise ctx.unsupported(f"loop-carried value '{name}' grows by a different size each "
                              f"iteration ({shape[axis]})")
    want = list(graph.shape_of(arg))
    want[axis] = shape[axis]
    if want == shape:
        return piece
    for a, (d, w) in enumerate(zip(shape, want)):
        if d != w:
            require_equal(d, w, f"the Concat appending to loop-carried '{name}', axis {a}")
    cast = graph.ReshapeOp(operands=[piece], result_types=[types.tensor_type(
        want, piece.type.get_element_type())])
    block.add_op(cast)
    return cast.output


def _symbols(value: SSAValue, axis: int) -> set[str]:
    d = graph.shape_of(value)[axis]
    return d.symbols() if isinstance(d, SymDim) else set()


def _all_symbols(value: SSAValue) -> set[str]:
    return {s for a in range(len(graph.shape_of(value))) for s in _symbols(value, a)}


def grown_result(ctx: NodeContext, initial: Tensor, stacked: SSAValue, axis: int) -> SSAValue:
    """The loop's final value of a carried value it appended to: `initial`, then the
    stacked pieces (`[count, *piece]`) merged into `axis`."""
    shape = list(graph.shape_of(stacked))
    count, piece = shape[0], shape[1:]
    el = stacked.type.get_element_type()
    if axis:  # the count next to the axis: [*piece[:axis], count, *piece[axis:]]
        perm = [*range(1, axis + 1), 0, *range(axis + 1, len(shape))]
        stacked = ctx.emit1(graph.TransposeOp(
            operands=[stacked], result_types=[types.tensor_type([shape[p] for p in perm], el)],
            properties={"perm": types.i64_array(perm)}))
    merged = [*piece[:axis], count * piece[axis], *piece[axis + 1:]]
    rows = ctx.emit1(graph.ReshapeOp(operands=[stacked],
                                     result_types=[types.tensor_type(merged, el)]))
    if graph.shape_of(initial.type)[axis] == 0:
        return rows
    dims = list(merged)
    dims[axis] = graph.shape_of(initial.type)[axis] + merged[axis]
    return ctx.emit1(graph.ConcatOp(operands=[[ctx.materialize(initial), rows]],
                                    result_types=[types.tensor_type(dims, el)],
                                    properties={"axis": types.i64_attr(axis)}))
