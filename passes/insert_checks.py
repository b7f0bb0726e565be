"""`insert-runtime-checks`: a check before every op that indexes or divides by run-time data.

Gathers, scatters, RoiAlign's batch indices, MaxUnpool's indices, ReverseSequence's lengths,
TensorScatter's write positions and integer Div/Mod divisors are data, not shapes: the
compiler cannot prove them valid, and compiled kernels would read or write outside their
buffers (or trap on a zero divisor) when they are not. This pass, the first step of lowering
at every -O level, puts a `graph.check_indices` / `graph.check_divisor` before each such op:

    %y = graph.gather(%x, %i) {axis = 0 : i64} : (tensor<4xf32>, tensor<2xi64>) -> ...
  becomes
    graph.check_indices(%i) {bounds = array<i64: 4>, negative = 1 : i64, node = "g",
                             op_type = "Gather", operand = "indices"} : tensor<2xi64>
    %y = graph.gather(%x, %i) ...

The valid ranges follow onnxruntime's checks (a wrapped negative index where ONNX allows one).
An axis of symbolic size (a `seq` axis indexed by `x[t:t+1]`) is checked against its size in
the run: the check carries the polynomial (`bounds = array<i64: -1>, symbolic_bounds =
#graph.dims<["seq"]>`) and its kernel takes the symbols' values, as the consumer's does.
Data that is a compile-time constant is checked here instead, and an invalid constant is a
`ModelLoadError` naming the node: such a model can never run (a constant index into a
symbolic axis that only some sizes admit is left to a run-time check). The consumers'
kernels also clamp what they read into range, so even data changed while a run is in flight
cannot make them leave their buffers; the checks are what turns bad data into an error.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    DenseArrayBase,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from onnxc.dialects import graph, graph_gather_scatter, graph_rnn, graph_shapes, graph_vision
from onnxc.dialects.dense_data import to_numpy
from onnxc.dialects.graph import float_of, int_of, shape_of
from onnxc.dialects.graph_base import SymbolicDimsAttr
from onnxc.dialects.graph_checks import GUARDS_ATTR, SYMBOLIC_BOUND, guard_checks, onnx_node_of
from onnxc.dialects.symbolic_dims import Dim, SymDim
from onnxc.errors import ModelLoadError

UNBOUNDED = 2**63 - 1
"""An extent that only rules out negative values (TensorScatter's circular positions)."""


@dataclass(frozen=True)
class IndexUse:
    """`value` indexes axes of the given extents (one per column of its last dimension, or
    one for every element); `negative`: ONNX's wrap-around indices are allowed."""

    value: SSAValue
    operand: str
    extents: tuple[Dim, ...]
    """ints, or SymDims for axes of symbolic size (checked against the run's size)"""
    negative: bool


def _axis_extent(op, data: SSAValue) -> Dim:
    return shape_of(data)[graph_shapes.normalize_axis(int_of(op.axis), len(shape_of(data)))]


def _gather_nd(op: graph_gather_scatter.GatherNDOp | graph_gather_scatter.ScatterNDOp,
               ) -> tuple[Dim, ...]:
    batch = int_of(op.batch_dims) if isinstance(op, graph_gather_scatter.GatherNDOp) else 0
    q = shape_of(op.indices)[-1]
    return tuple(shape_of(op.data)[batch:batch + q])


def _tensor_scatter(op: graph_gather_scatter.TensorScatterOp) -> Iterator[IndexUse]:
    if op.write_indices is None:
        return
    length = shape_of(op.past)[int_of(op.axis)]
    steps = shape_of(op.update)[int_of(op.axis)]
    extent = UNBOUNDED if int_of(op.circular) else length - steps + 1
    yield IndexUse(op.write_indices, "write_indices", (extent,), False)


INDEX_USES: dict[type[Operation], Callable[[Operation], Iterator[IndexUse]]] = {
    graph.GatherOp: lambda op: iter([  # a Slice with run-time bounds: starts in [0, dim)
        IndexUse(op.indices, "starts", (_axis_extent(op, op.data),), False)
        if op.nonnegative else
        IndexUse(op.indices, "indices", (_axis_extent(op, op.data),), True)]),
    graph_gather_scatter.GatherElementsOp: lambda op: iter([
        IndexUse(op.indices, "indices", (_axis_extent(op, op.data),), True)]),
    graph_gather_scatter.ScatterElementsOp: lambda op: iter([
        IndexUse(op.indices, "indices", (_axis_extent(op, op.data),), True)]),
    graph_gather_scatter.GatherNDOp: lambda op: iter([
        IndexUse(op.indices, "indices", _gather_nd(op), True)]),
    graph_gather_scatter.ScatterNDOp: lambda op: iter([
        IndexUse(op.indices, "indices", _gather_nd(op), True)]),
    graph_vision.RoiAlignOp: lambda op: iter([
        IndexUse(op.batch_indices, "batch_indices", (shape_of(op.input)[0],), False)]),
    graph_vision.MaxRoiPoolOp: lambda op: iter([
        IndexUse(op.batch_indices, "rois' batch index", (shape_of(op.input)[0],), False)]),
    graph_vision.MaxUnpoolOp: lambda op: iter([
        IndexUse(op.indices, "indices", (math.prod(op.unpooled_shape()),), False)]),
    graph_gather_scatter.ReverseSequenceOp: lambda op: iter([
        IndexUse(op.seq_lens, "sequence_lens",
                 (shape_of(op.input)[int_of(op.time_axis)] + 1,), False)]),
    graph_gather_scatter.TensorScatterOp: _tensor_scatter,
    **{op: lambda op: iter([] if op.sequence_lens is None else [IndexUse(
        op.sequence_lens, "sequence_lens", (op.steps_and_batch()[0] + 1,), False)])
       for op in graph_rnn.RNN_OPS},
}
"""Per op type: the run-time index operands it reads and their valid ranges."""

ONNX_OP_TYPES = {
    graph.GatherOp: "Gather", graph_gather_scatter.GatherElementsOp: "GatherElements",
    graph_gather_scatter.ScatterElementsOp: "ScatterElements",
    graph_gather_scatter.GatherNDOp: "GatherND", graph_gather_scatter.ScatterNDOp: "ScatterND",
    graph_vision.RoiAlignOp: "RoiAlign", graph_vision.MaxUnpoolOp: "MaxUnpool",
    graph_vision.MaxRoiPoolOp: "MaxRoiPool",
    graph_gather_scatter.ReverseSequenceOp: "ReverseSequence",
    graph_gather_scatter.TensorScatterOp: "TensorScatter", graph.DivOp: "Div", graph.ModOp: "Mod",
    graph.DivScalarOp: "Div", graph_rnn.LSTMRecurrenceOp: "LSTM",
    graph_rnn.GRURecurrenceOp: "GRU", graph_rnn.RNNRecurrenceOp: "RNN",
}


def node_name(op: Operation) -> str:
    """The ONNX node `op` came from, as the importer recorded it (its `loc("name")`, or an
    `onnx.node` attribute in hand-written IR), else its result's name."""
    hint = op.results[0].name_hint if op.results else None
    return onnx_node_of(op) or hint or ""


def integer_divisor(op: Operation) -> SSAValue | None:
    """The divisor of an integer Div or Mod (None for any other op: float division is IEEE)."""
    if not isinstance(op, graph.DivOp | graph.ModOp):
        return None
    element = op.rhs.type.get_element_type()
    if not isinstance(element, IntegerType) or element.width.data == 1:
        return None
    return op.rhs


def _constant(value: SSAValue) -> np.ndarray | None:
    owner = value.owner
    if isinstance(owner, graph.ConstantOp):
        return to_numpy(owner.value).astype(np.int64, copy=False)
    return None


def onnx_op_type(op: Operation) -> str:
    """The ONNX op a checked graph op came from."""
    if isinstance(op, graph.GatherOp) and op.nonnegative is not None:
        return "Slice"
    return ONNX_OP_TYPES.get(type(op), op.name)


def _describe(op: Operation) -> str:
    name = node_name(op)
    where = f"node '{name}'" if name else "an unnamed node"
    return f"{where} ({onnx_op_type(op)})"


def _check_constant_indices(op: Operation, use: IndexUse, data: np.ndarray) -> bool:
    """Check constant indices now (ModelLoadError when one is out of range); whether a
    run-time check is still needed: a value that is valid at some sizes of a symbolic axis
    but not at all (index 5 of a `seq` axis) is checked against the run's size."""
    columns = data.reshape(-1, len(use.extents)) if data.size else data.reshape(0, 1)
    at_run_time = False
    for column, extent in enumerate(use.extents):
        values = columns[:, column] if len(use.extents) > 1 else columns.reshape(-1)
        if isinstance(extent, SymDim):
            smallest = extent.lower_bound()  # every size is at least this
            if not use.negative and values.size and values.min() < 0:
                bad = int(values[np.flatnonzero(values < 0)[0]])
                raise ModelLoadError(
                    f"{_describe(op)}: constant {use.operand} value {bad} is out of range "
                    f"[0, {extent - 1}] at every size")
            low = -smallest if use.negative and smallest is not None else 0
            at_run_time |= smallest is None or bool(((values < low) | (values >= smallest))
                                                    .any())
            continue
        low = -extent if use.negative else 0
        bad = np.flatnonzero((values < low) | (values >= extent))
        if bad.size:
            raise ModelLoadError(
                f"{_describe(op)}: constant {use.operand} value {int(values[bad[0]])} is out of "
                f"range [{low}, {extent - 1}]")
    return at_run_time


def _bounds(extents: tuple[Dim, ...]) -> dict[str, Attribute]:
    """`bounds` (and `symbolic_bounds`, for axes of symbolic size) of a check_indices."""
    symbolic = [e for e in extents if isinstance(e, SymDim)]
    props: dict[str, Attribute] = {"bounds": DenseArrayBase.from_list(
        i64, [SYMBOLIC_BOUND if isinstance(e, SymDim) else e for e in extents])}
    if symbolic:
        props["symbolic_bounds"] = SymbolicDimsAttr(symbolic)
    return props


def _site(op: Operation, operand: str) -> dict[str, StringAttr]:
    return {"node": StringAttr(node_name(op)),
            "op_type": StringAttr(onnx_op_type(op)),
            "operand": StringAttr(operand)}


def checks_for(op: Operation) -> list[Operation]:
    """The check ops `op` needs before it runs (none for compile-time constants, which are
    checked now: ModelLoadError when one is out of range or a zero divisor)."""
    checks: list[Operation] = []
    for use in INDEX_USES.get(type(op), lambda _: iter(()))(op):
        constant = _constant(use.value)
        if constant is not None and not _check_constant_indices(op, use, constant):
            continue
        checks.append(graph.CheckIndicesOp(operands=[use.value], properties={
            **_bounds(use.extents), "negative": IntegerAttr(int(use.negative), i64),
            **_site(op, use.operand)}))
    if (isinstance(op, graph.DivScalarOp) and float_of(op.scalar) == 0.0
            and isinstance(op.input.type.get_element_type(), IntegerType)):
        raise ModelLoadError(f"{_describe(op)}: integer division by a constant zero")
    divisor = integer_divisor(op)
    if divisor is not None:
        constant = _constant(divisor)
        if constant is None:
            checks.append(graph.CheckDivisorOp(operands=[divisor],
                                               properties=_site(op, "B")))
        elif not constant.all():
            what = "modulo" if isinstance(op, graph.ModOp) else "division"
            raise ModelLoadError(f"{_describe(op)}: integer {what} by a constant zero")
    return checks


def _insert_guards(block: Block, guards: list[graph.CheckSizesOp]) -> None:
    """Each guard where its sizes are known: at the top for the input sizes the import
    assumed things of, after the op defining the last run symbol it names otherwise (in
    the If branch or loop body that defines it: a loop's own sizes are checked each
    iteration)."""
    defined_by: dict[str, Operation] = {}
    for op in block.walk():
        names = set(graph.defined_sizes(op))
        if isinstance(op, graph.LoopOp) and op.trip_symbol is not None:
            names.add(op.trip_symbol.data)
        defined_by.update(dict.fromkeys(names, op))
    order = {op: i for i, op in enumerate(block.walk())}
    first = block.first_op
    assert first is not None
    for guard in guards:
        size = guard.parsed().size
        producers = [defined_by[s] for s in (size.symbols() if isinstance(size, SymDim) else ())
                     if s in defined_by]
        if producers:
            Rewriter.insert_op(guard, InsertPoint.after(max(producers, key=order.__getitem__)))
        else:
            Rewriter.insert_op(guard, InsertPoint.before(first))


@dataclass(frozen=True)
class InsertRuntimeChecksPass(ModulePass):
    """Put a run-time check before every op that indexes or divides by run-time data."""

    name = "insert-runtime-checks"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in op.ops:
            if not isinstance(function, func.FuncOp):
                continue
            guards = guard_checks(function)
            if guards and function.body.blocks and function.body.block.first_op is not None:
                _insert_guards(function.body.block, guards)
                del function.attributes[GUARDS_ATTR]
            for consumer in list(function.walk()):
                if isinstance(consumer, graph.CheckOp):
                    continue
                checks = checks_for(consumer)
                if checks:
                    Rewriter.insert_op(checks, InsertPoint.before(consumer))


__all__ = ["INDEX_USES", "InsertRuntimeChecksPass", "checks_for", "node_name"]
