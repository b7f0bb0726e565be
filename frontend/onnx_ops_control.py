"""ONNX If, Loop and Scan -> `graph.if` / `graph.loop` with their subgraphs as regions.

An If whose condition is known at compile time imports only the branch taken, straight into
the enclosing graph (the `_expanded` forms of ONNX functions test static facts this way).
Scan becomes a `graph.loop` with a known iteration count: each iteration gathers its slice of
every scan input (index i, or N-1-i in reverse), and the stacked scan outputs are reversed and
transposed into place after the loop. A loop-carried value must keep its type across
iterations, or grow only by what the body appends to it (torch's `res = cat([res, row])`),
which becomes a scan output (frontend/onnx_loop_appends.py). A Loop whose count is known (a trip count known at compile time and a condition
that stays true) stacks its scan outputs to that many rows; one that stops on its data (a
`while` with a `break`) names its count with a fresh size symbol, `<node>_trips`, known once
it ran (graph.LoopOp's `trip_symbol`), and its scan outputs are values of run-time length.

Known includes symbolic: `for t in range(x.size(0))` over a dimension `seq` has the trip
count Gather(Shape(x)), shape data `seq`, so the loop runs `seq` times (`iterations` is the
polynomial, the trip count operand a graph.symbolic_constant) and its scan outputs and
appended sequences stack to [seq, ...]. So does a Scan over a symbolic axis. A count that
may be negative (`seq - 2`) runs max(seq - 2, 0) times, as ONNX says.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import TensorType, i1, i64
from xdsl.ir import Block, Region, SSAValue

from onnxc.dialects import graph
from onnxc.dialects.layout import layout_of
from onnxc.dialects.symbolic_dims import Dim, SymDim, sym_max, symbol_name
from onnxc.frontend import onnx_loop_appends as appends
from onnxc.frontend import onnx_types as types
from onnxc.frontend.onnx_context import NodeContext, Result, Tensor, materialize
from onnxc.frontend.onnx_ops_math import normalized_axis
from onnxc.frontend.onnx_ops_sequence import (
    LoopSequence,
    OptionalValue,
    SequenceValue,
    is_container,
)
from onnxc.frontend.onnx_shape_data import shape_array

_SCALAR_I64 = TensorType(i64, [])
_SCALAR_I1 = TensorType(i1, [])
_INT64_MAX = np.iinfo(np.int64).max
_INT64_MIN = int(np.iinfo(np.int64).min)


def _body(ctx: NodeContext, name: str, block: Block,
          inputs: Sequence[object]) -> tuple[Block, list[SSAValue]]:
    """Import subgraph attribute `name` into `block`, its inputs bound to `inputs`; the
    tensors it yields, materialized in `block` (a sequence is refused)."""
    block, outputs = _raw_body(ctx, name, block, inputs)
    return block, [_yielded(ctx, block, t, k) for k, t in enumerate(outputs)]


def _raw_body(ctx: NodeContext, name: str, block: Block,
              inputs: Sequence[object]) -> tuple[Block, list]:
    assert ctx.import_body is not None
    return ctx.import_body(ctx.attr(name), block, inputs)


def _yielded(ctx: NodeContext, block: Block, value, k: int) -> SSAValue:
    if is_container(value):
        raise ctx.unsupported(f"its subgraph's output {k} is a sequence; only a Loop's carried "
                              f"sequence, appended to once per iteration, is supported")
    return materialize(block, value)


def _stacked(value_type: TensorType, count: Dim) -> TensorType:
    """The type of a scan output that stacks `count` values of `value_type`."""
    return types.tensor_type([count, *graph.shape_of(value_type)],
                             value_type.get_element_type())


def _counted_loop(ctx: NodeContext, count: Dim, initial: Sequence[SSAValue], block: Block,
                  yielded: Sequence[SSAValue]) -> list[SSAValue]:
    """A graph.loop that runs `count` times (Scan's form): `block` yields the condition
    argument, the carried values, then the scan slices. A symbolic count is also the trip
    count operand, as run-time data (graph.symbolic_constant)."""
    block.add_op(graph.YieldOp(block.args[1], *yielded))
    trips = ctx.materialize(_size_data(count))
    always = ctx.materialize(Tensor.of_array(np.array(True)))
    carried = [v.type for v in initial]
    results = [*carried, *(_stacked(v.type, count) for v in yielded[len(initial):])]
    return list(ctx.emit(graph.LoopOp(trips, always, initial, results, Region(block),
                                      count)).results)


def _one_bool(ctx: NodeContext, tensor: Tensor, what: str) -> None:
    if tensor.element_type != i1 or int(np.prod(tensor.shape)) != 1:
        raise ctx.invalid(f"{what} must be a single bool, not {tensor.type}")


def convert_if(ctx: NodeContext) -> list[Result]:
    cond = ctx.tensor(0)
    _one_bool(ctx, cond, "the condition")
    if cond.array is not None:  # known: only the branch taken exists
        taken = "then_branch" if bool(cond.array.reshape(-1)[0]) else "else_branch"
        assert ctx.import_body is not None
        _, outputs = ctx.import_body(ctx.attr(taken), ctx.block, [])
        return list(outputs)
    then_block, then_values = _body(ctx, "then_branch", Block(), [])
    else_block, else_values = _body(ctx, "else_branch", Block(), [])
    then_types = [v.type for v in then_values]
    else_types = [v.type for v in else_values]
    if len(then_types) != len(else_types) or len(then_types) != ctx.num_outputs:
        raise ctx.invalid(f"the branches yield {len(then_types)} and {len(else_types)} "
                          f"values for {ctx.num_outputs} outputs")
    result_types, defines = [], []
    for k, (a, b) in enumerate(zip(then_types, else_types)):
        result_types.append(a if a == b else _joined(ctx, k, a, b, defines))
    then_block.add_op(graph.YieldOp(*then_values))
    else_block.add_op(graph.YieldOp(*else_values))
    op = graph.IfOp(ctx.operand(0), result_types, Region(then_block), Region(else_block),
                    defines)
    return list(ctx.emit(op).results)


def _joined(ctx: NodeContext, k: int, a: TensorType, b: TensorType,
            defines: list[str]) -> TensorType:
    """Output k's type when the branches yield tensors of different sizes: each differing
    dimension a run symbol the If defines (the size of what the branch taken yielded)."""
    if a.get_element_type() != b.get_element_type() or len(a.get_shape()) != len(
            b.get_shape()) or layout_of(a) is not None or layout_of(b) is not None:
        raise ctx.unsupported(f"the branches yield output {k} as {a} and {b}: of different "
                              f"element types or ranks")
    dims: list[Dim] = []
    for axis, (x, y) in enumerate(zip(graph.shape_of(a), graph.shape_of(b))):
        if x == y:
            dims.append(x)
            continue
        name = ctx.run_symbol(f"out{k}_dim{axis}")
        defines.append(name)
        dims.append(SymDim.symbol(name))
    return types.tensor_type(tuple(dims), a.get_element_type())


def _stays_true(value: SSAValue, cond_arg: SSAValue) -> bool:
    """Whether a body's next condition is its current one (or the constant true)."""
    while isinstance(value.owner, graph.IdentityOp):
        value = value.owner.input
    if value is cond_arg:
        return True
    owner = value.owner
    return isinstance(owner, graph.ConstantOp) and bool(
        np.all(np.asarray(owner.value.get_values())))


def _known_iterations(trips: Tensor | None, cond: Tensor | None,
                      stays_true: bool) -> Dim | None:
    """How many times the loop runs, when that is known at compile time: a number, or a
    size (`for t in range(x.size(0))` over a symbolic `seq`; max(seq - 2, 0) for a count
    of seq - 2)."""
    first = None if cond is None or cond.array is None else bool(cond.array.reshape(-1)[0])
    if first is False:
        return 0
    if cond is not None and first is None:
        return None
    if not stays_true or trips is None or trips.array is None:
        return None
    count = trips.array.reshape(-1)[0]
    if not isinstance(count, SymDim):
        return max(0, int(count))
    return sym_max(count, 0)


def convert_loop(ctx: NodeContext) -> list[Result]:
    trips = ctx.tensor(0) if ctx.has_input(0) else None
    cond = ctx.tensor(1) if ctx.has_input(1) else None
    if trips is not None and (trips.element_type != i64 or int(np.prod(trips.shape)) != 1):
        raise ctx.invalid(f"the trip count must be a single int64, not {trips.type}")
    if cond is not None:
        _one_bool(ctx, cond, "the condition")
    initial = [ctx.tensor(i) for i in range(2, ctx.num_inputs)]
    if any(isinstance(t, LoopSequence | OptionalValue) for t in initial):
        raise ctx.unsupported("a loop-carried optional, or a Loop nested in another that "
                              "carries the outer loop's sequence")
    n = len(initial)
    block, bound, outputs = _loop_body(ctx, initial, {})
    if len(outputs) < 1 + n:
        raise ctx.invalid(f"the body yields {len(outputs)} values for {n} "
                          f"loop-carried values and the condition")
    changing = {k: out.type for k, (b, out) in enumerate(zip(bound, outputs[1:1 + n]))
                if not isinstance(b, LoopSequence) and isinstance(out, Tensor)
                and out.type != initial[k].type}
    grown: dict[int, tuple[SSAValue, int]] = {}  # carried value k -> (its piece, axis)
    if changing:  # appended to? Import again with its changing sizes symbols
        block, bound, outputs = _loop_body(ctx, initial, {
            k: appends.growing_type(ctx, k, initial[k].type, t) for k, t in changing.items()})
        for k, after in changing.items():
            if any(o is outputs[1 + k] for j, o in enumerate(outputs) if j != 1 + k):
                raise ctx.unsupported(f"loop-carried value '{ctx.node.input[2 + k]}' changes "
                                      f"shape across iterations and is yielded twice")
            change = f"changes from {initial[k].type} to {after} across iterations"
            grown[k] = appends.appended_piece(ctx, block, k, bound[k], outputs[1 + k], change)
        for k in sorted(grown, reverse=True):
            block.erase_arg(bound[k])
    appended = _appended(ctx, bound, outputs[1:1 + n])
    tensor_slots = [k for k, b in enumerate(bound)
                    if not isinstance(b, LoopSequence) and k not in grown]
    carried = [initial[k].type for k in tensor_slots]
    yielded = [_yielded(ctx, block, outputs[0], 0),
               *(_yielded(ctx, block, outputs[1 + k], 1 + k) for k in tensor_slots),
               *(_yielded(ctx, block, v, k) for k, v in enumerate(outputs[1 + n:], 1 + n)),
               *(materialize(block, t) for t in appended.values()),
               *(piece for piece, _ in grown.values())]
    for t, v, k in zip(carried, yielded[1:], tensor_slots):
        if v.type != t:
            raise ctx.unsupported(
                f"loop-carried value '{ctx.node.input[2 + k]}' changes from {t} to {v.type} "
                f"across iterations; onnxc needs it to keep its type or to grow by appends")
    next_cond = yielded[0].type
    if next_cond.get_element_type() != i1 or int(np.prod(next_cond.get_shape())) != 1:
        raise ctx.invalid(f"the body's condition output must be a single bool, not {next_cond}")
    scans = yielded[1 + len(carried):]
    iterations = _known_iterations(trips, cond, _stays_true(yielded[0], block.args[1]))
    trip_symbol = None
    if scans and iterations is None:  # stacked (or appended) rows: as many as it ran
        trip_symbol = _trip_symbol(ctx)
        iterations = SymDim.symbol(trip_symbol)
    block.add_op(graph.YieldOp(*yielded))
    trip_value = ctx.operand(0) if trips is not None else ctx.materialize(
        Tensor.of_array(np.array(_INT64_MAX, dtype=np.int64)))
    cond_value = ctx.operand(1) if cond is not None else ctx.materialize(
        Tensor.of_array(np.array(True)))
    results = [*carried, *(_stacked(v.type, iterations) for v in scans)]
    op = graph.LoopOp(trip_value, cond_value, [ctx.materialize(initial[k]) for k in tensor_slots],
                      results, Region(block), None if trip_symbol else iterations, trip_symbol)
    loop_results = iter(ctx.emit(op).results)
    carried_results = {k: next(loop_results) for k in tensor_slots}
    own_scans = [next(loop_results) for _ in outputs[1 + n:]]
    stacks = {k: next(loop_results) for k in appended}
    out: list[Result] = []
    for k, b in enumerate(bound):
        if k in grown:
            piece_axis = grown[k][1]
            out.append(appends.grown_result(ctx, initial[k], next(loop_results), piece_axis))
        elif not isinstance(b, LoopSequence):
            out.append(carried_results[k])
        elif k in appended:
            stacked = stacks[k]
            out.append(SequenceValue(b.element, list(b.initial.items),  # type: ignore[arg-type]
                                     Tensor(stacked.type, value=stacked)))  # type: ignore
        else:
            out.append(b.initial)  # type: ignore[arg-type]
    return [*out, *own_scans]


def _loop_body(ctx: NodeContext, initial: list, types: dict[int, TensorType]
               ) -> tuple[Block, list, list]:
    """The Loop's body imported into a new block whose carried tensors have their initial
    types, or `types[k]` for carried value k: the block, what its inputs are bound to (a
    carried sequence is a LoopSequence), what it yields."""
    arg_types = [types.get(k, t.type) for k, t in enumerate(initial) if not is_container(t)]
    block = Block(arg_types=[_SCALAR_I64, _SCALAR_I1, *arg_types])
    args = iter(block.args[2:])
    bound = [LoopSequence(t.element, t) if isinstance(t, SequenceValue) else next(args)
             for t in initial]
    block, outputs = _raw_body(ctx, "body", block, [*block.args[:2], *bound])
    return block, bound, outputs


def _trip_symbol(ctx: NodeContext) -> str:
    """The size symbol of a loop's count when only the run decides it (a data-dependent
    stop): its scan outputs, and the sequences it appends to, have that many rows
    (graph.LoopOp's `trip_symbol`), named after the node."""
    base = re.sub(r"[^A-Za-z0-9_]", "_", ctx.label).strip("_") or "loop"
    return symbol_name(f"{base}_trips")


def _appended(ctx: NodeContext, bound: list, carried_out: list) -> dict[int, Tensor]:
    """For each carried sequence the body appends to: its position -> the appended tensor
    (stacked by the loop as an extra scan output). A carried sequence must come back as it
    came in or with exactly one tensor appended."""
    appended: dict[int, Tensor] = {}
    for k, (b, out) in enumerate(zip(bound, carried_out)):
        if not isinstance(b, LoopSequence):
            continue
        if out is b:
            continue
        if not isinstance(out, LoopSequence) or out.source is not b or out.appended is None:
            raise ctx.unsupported(f"loop-carried sequence {k} is not the carried one with one "
                                  f"tensor appended")
        if b.initial.stacked is not None or (b.initial.items and any(
                t.type != out.appended.type for t in b.initial.items)):
            raise ctx.unsupported(f"loop-carried sequence {k} starts with items of another "
                                  f"shape than those the loop appends")
        appended[k] = out.appended
    return appended


def convert_scan(ctx: NodeContext) -> list[Result]:
    body = ctx.attr("body")
    n_scan_in = int(ctx.attr("num_scan_inputs"))
    first = 1 if ctx.opset < 9 else 0  # Scan-8's first input is sequence_lens
    n_state = ctx.num_inputs - first - n_scan_in
    n_scan_out = len(body.output) - n_state
    if n_scan_in < 1 or n_state < 0 or n_scan_out < 0:
        raise ctx.invalid(f"{ctx.num_inputs} inputs, {n_scan_in} scan inputs and "
                          f"{len(body.output)} body outputs do not match")
    states = [ctx.tensor(i) for i in range(first, first + n_state)]
    scanned = [ctx.tensor(i) for i in range(first + n_state, ctx.num_inputs)]
    if any(is_container(t) for t in [*states, *scanned]):
        raise ctx.unsupported("a sequence among its inputs")
    if ctx.opset < 9:
        return _batched_scan(ctx, states, scanned, n_scan_out)
    in_axes = ctx.ints("scan_input_axes", [0] * n_scan_in)
    in_dirs = ctx.ints("scan_input_directions", [0] * n_scan_in)
    out_axes = ctx.ints("scan_output_axes", [0] * n_scan_out)
    out_dirs = ctx.ints("scan_output_directions", [0] * n_scan_out)
    return list(_scan_loop(ctx, states, scanned, in_axes, in_dirs, out_axes, out_dirs))


def _scan_loop(ctx: NodeContext, states: list[Tensor], scanned: list[Tensor],
               in_axes: list[int], in_dirs: list[int], out_axes: list[int],
               out_dirs: list[int]) -> list[SSAValue]:
    """Scan-9 and later: a counted loop over the scan axis (ops go where `ctx` emits)."""
    n_state = len(states)
    if not (len(in_axes) == len(in_dirs) == len(scanned) and len(out_axes) == len(out_dirs)):
        raise ctx.invalid("scan axes and directions must have one entry per scan value")
    in_axes = [normalized_axis(ctx, a, len(t.shape)) for a, t in zip(in_axes, scanned)]
    lengths = {t.shape[a] for a, t in zip(in_axes, scanned)}
    if len(lengths) != 1:
        raise ctx.invalid(f"the scan inputs have different lengths {sorted(lengths)}")
    (length,) = lengths

    block = Block(arg_types=[_SCALAR_I64, _SCALAR_I1, *(t.type for t in states)])
    slices = [_slice_at(block, t, axis, length, reverse=bool(d))
              for t, axis, d in zip(scanned, in_axes, in_dirs)]
    block, yielded = _body(ctx, "body", block, [*block.args[2:], *slices])
    if len(yielded) - n_state != len(out_axes):
        raise ctx.invalid(f"the body yields {len(yielded)} values for {n_state} states and "
                          f"{len(out_axes)} scan outputs")
    for t, v in zip(states, yielded):
        if v.type != t.type:
            raise ctx.unsupported(
                f"scan state '{t.name}' changes from {t.type} to {v.type} across iterations; "
                f"onnxc needs it to keep its type (static shapes)")
    results = _counted_loop(ctx, length, [ctx.materialize(t) for t in states], block, yielded)
    outputs = results[:n_state]
    for value, axis, direction in zip(results[n_state:], out_axes, out_dirs):
        outputs.append(_place_stacked(ctx, value, axis, bool(direction)))
    return outputs


def _batched_scan(ctx: NodeContext, states: list[Tensor], scanned: list[Tensor],
                  n_scan_out: int) -> list[Result]:
    """Scan-8: every input has a leading batch axis and is scanned along axis 1; each batch
    element runs its own scan, so this is a counted loop over the batch around Scan-9's loop,
    stacking the final states and scan outputs of each element."""
    batches = {t.shape[0] if t.shape else None for t in [*states, *scanned]}
    if len(batches) != 1 or None in batches:
        raise ctx.invalid(f"inputs disagree on the batch size: {sorted(map(str, batches))}")
    (batch,) = batches
    steps = {t.shape[1] if len(t.shape) > 1 else None for t in scanned}
    if len(steps) != 1 or None in steps:
        raise ctx.invalid("the scan inputs differ in length")
    if ctx.has_input(0):
        lens = ctx.constant(0, "sequence_lens")
        if not np.all(np.asarray(lens) == next(iter(steps))):
            raise ctx.unsupported("sequence_lens shorter than the scan inputs (results of "
                                  "run-time length)")
    directions = ctx.ints("directions", [0] * len(scanned))
    outer = Block(arg_types=[_SCALAR_I64, _SCALAR_I1])

    def row(t: Tensor) -> Tensor:
        value = _slice_at(outer, t, 0, batch, reverse=False)
        return Tensor(value.type, value=value, name=t.name)  # type: ignore[arg-type]

    per_batch = _scan_loop(ctx.in_block(outer), [row(t) for t in states],
                           [row(t) for t in scanned], [0] * len(scanned), directions,
                           [0] * n_scan_out, [0] * n_scan_out)
    return list(_counted_loop(ctx, batch, [], outer, per_batch))


def _size_data(size: Dim) -> Tensor:
    """A size as a scalar i64 tensor: a constant, or shape data holding the polynomial."""
    return Tensor.of_array(shape_array(size))


def _slice_at(block: Block, tensor: Tensor, axis: int, length: Dim,
              reverse: bool) -> SSAValue:
    """Iteration i's slice of a scan input: index i (or length-1-i) along `axis`; a
    symbolic length is run-time data (graph.symbolic_constant)."""
    index = block.args[0]
    if reverse:
        last = materialize(block, _size_data(length - 1))
        sub = graph.SubOp(operands=[last, index], result_types=[_SCALAR_I64])
        block.add_op(sub)
        index = sub.results[0]
    data = materialize(block, Tensor(tensor.type, tensor.value, tensor.array, tensor.name))
    shape = [d for k, d in enumerate(tensor.shape) if k != axis]
    gather = graph.GatherOp(operands=[data, index],
                            result_types=[types.tensor_type(shape, tensor.element_type)],
                            properties={"axis": types.i64_attr(axis)})
    block.add_op(gather)
    return gather.results[0]


def _place_stacked(ctx: NodeContext, value: SSAValue, axis: int, reverse: bool) -> SSAValue:
    """A scan output stacked along axis 0 by the loop, reversed if it scans backwards and
    moved to its axis."""
    shape = list(graph.shape_of(value))
    el = value.type.get_element_type()
    if reverse and (isinstance(shape[0], SymDim) or shape[0] > 1):
        # to before the first row: -n-1, or for a symbolic n the lowest bound (clamped)
        end = _INT64_MIN if isinstance(shape[0], SymDim) else -shape[0] - 1
        value = ctx.emit1(graph.SliceOp(
            operands=[value], result_types=[value.type], properties={
                "starts": types.i64_array([-1]), "ends": types.i64_array([end]),
                "axes": types.i64_array([0]), "steps": types.i64_array([-1])}))
    axis = normalized_axis(ctx, axis, len(shape))
    if axis == 0:
        return value
    perm = [*range(1, axis + 1), 0, *range(axis + 1, len(shape))]
    out = [shape[p] for p in perm]
    return ctx.emit1(graph.TransposeOp(operands=[value], result_types=[types.tensor_type(out, el)],
                                       properties={"perm": types.i64_array(perm)}))


CONVERTERS = {"If": convert_if, "Loop": convert_loop, "Scan": convert_scan}
