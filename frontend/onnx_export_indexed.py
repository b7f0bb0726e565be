"""Graph ops that move data by indices, or along one axis, as ONNX.

- graph.gather_elements / gather_nd / scatter_elements / scatter_nd, tile and
  reverse_sequence: the ONNX op of the same name (GatherND, ScatterND and ReverseSequence
  take int64 indices only: i32 ones are cast first; Tile's repeats an int64 initializer).
- graph.tensor_scatter (ONNX TensorScatter is opset 24): a `TensorScatter` function whose
  body is a ScatterElements along the axis, at positions write_indices[b] + s (modulo the
  cache length when circular) broadcast to the update's shape. Exact: the same writes.
- graph.cum_prod (ONNX CumProd is opset 26): a `CumProd` function whose body is a Loop
  over the axis carrying the running product and stacking each step's (or, exclusive, the
  previous step's) value, reversed after the loop when it runs from the end, then moved
  back to the axis. Exact: the products are taken in the same order as the kernel's.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects.builtin import IntegerType
from xdsl.ir import Operation, SSAValue

from onnxc.dialects import graph, graph_gather_scatter
from onnxc.dialects.graph import int_of, shape_of
from onnxc.frontend.onnx_export import (
    FUNCTION_DOMAIN,
    Emitter,
    FunctionBody,
    OnnxWriter,
    numpy_dtype_of,
    onnx_element_type,
    unsupported,
)

_INT64_MIN = int(np.iinfo(np.int64).min)


def _int64(w: OnnxWriter, value: SSAValue) -> str:
    """`value`'s name, cast to int64 first when it is another integer type."""
    el = value.type.get_element_type()
    if isinstance(el, IntegerType) and el.width.data == 64:
        return w.name(value)
    return w.apply("Cast", [w.name(value)], f"{w.name(value)}_i64", to=TensorProto.INT64)


def _gather_elements(w: OnnxWriter, op: graph_gather_scatter.GatherElementsOp) -> None:
    w.emit(op, "GatherElements", w.names([op.data, op.indices]), axis=int_of(op.axis))


def _gather_nd(w: OnnxWriter, op: graph_gather_scatter.GatherNDOp) -> None:
    w.emit(op, "GatherND", [w.name(op.data), _int64(w, op.indices)],
           batch_dims=int_of(op.batch_dims))


def _scatter_elements(w: OnnxWriter, op: graph_gather_scatter.ScatterElementsOp) -> None:
    w.emit(op, "ScatterElements", w.names([op.data, op.indices, op.updates]),
           axis=int_of(op.axis), reduction=op.reduction.data)


def _scatter_nd(w: OnnxWriter, op: graph_gather_scatter.ScatterNDOp) -> None:
    w.emit(op, "ScatterND", [w.name(op.data), _int64(w, op.indices), w.name(op.updates)],
           reduction=op.reduction.data)


def _tile(w: OnnxWriter, op: graph_gather_scatter.TileOp) -> None:
    repeats = op.repeat_counts()
    if not all(isinstance(r, int) for r in repeats):
        raise unsupported(op, f"repeats {list(map(str, repeats))} are sizes, no ONNX constant")
    w.emit(op, "Tile", [w.name(op.input), w.ints(repeats, "repeats")])


def _reverse_sequence(w: OnnxWriter, op: graph_gather_scatter.ReverseSequenceOp) -> None:
    w.emit(op, "ReverseSequence", [w.name(op.input), _int64(w, op.seq_lens)],
           batch_axis=int_of(op.batch_axis), time_axis=int_of(op.time_axis))


def _tensor_scatter(w: OnnxWriter, op: graph_gather_scatter.TensorScatterOp) -> None:
    """ScatterElements of the update at write_indices[b] + s along the axis (mod L)."""
    past, update = shape_of(op.past), shape_of(op.update)
    axis, circular = int_of(op.axis), int_of(op.circular)
    rank = len(past)
    along = [1] * rank
    along[axis] = update[axis]
    indexed = op.write_indices is not None
    formal = ["past_cache", "update"] + (["write_indices"] if indexed else [])

    def build(body: FunctionBody) -> None:
        steps = np.arange(update[axis], dtype=np.int64).reshape(along)
        at = body.const(steps, "steps")
        if indexed:
            start = "write_indices"
            if numpy_dtype_of(op.write_indices) != np.int64:
                start = body.apply("Cast", [start], "start", to=TensorProto.INT64)
            batch = body.const(np.asarray([past[0]] + [1] * (rank - 1), np.int64), "shape")
            at = body.apply("Add", [body.apply("Reshape", [start, batch], "start"), at],
                            "positions")
        if circular:
            at = body.apply("Mod", [at, body.const(np.asarray(past[axis], np.int64), "length")],
                            "wrapped")
        at = body.apply("Expand", [at, body.const(np.asarray(update, np.int64), "shape")],
                        "indices")
        body.node("ScatterElements", ["past_cache", at, "update"], ["present_cache"], axis=axis)

    key = ("tensor_scatter", past, update, axis, circular,
           numpy_dtype_of(op.write_indices).name if indexed else None)
    fn = w.function(key, "TensorScatter", formal, ["present_cache"], build)
    operands = [op.past, op.update] + ([op.write_indices] if indexed else [])
    w.emit(op, fn, w.names(operands), domain=FUNCTION_DOMAIN)


def _cum_prod(w: OnnxWriter, op: graph.CumProdOp) -> None:
    """A Loop over the axis (moved first) carrying the running product."""
    x = shape_of(op.input)
    axis, exclusive, reverse = int_of(op.axis), int_of(op.exclusive), int_of(op.reverse)
    n, rest = x[axis], x[:axis] + x[axis + 1:]
    perm = [axis, *(d for d in range(len(x)) if d != axis)]
    dtype = numpy_dtype_of(op.input)
    el = onnx_element_type(op.input)

    def build(body: FunctionBody) -> None:
        first = body.apply("Transpose", ["x"], "axis_first", perm=perm) if axis else "x"
        ones = body.apply("ConstantOfShape", [body.const(np.asarray(rest, np.int64), "shape")],
                          "ones", value=numpy_helper.from_array(np.ones(1, dtype)))
        names = {k: body.fresh(k) for k in ("i", "cond", "product", "cond_out", "next",
                                            "step", "index", "row", "last")}
        index = names["i"]
        step_nodes = []
        if reverse:
            last = body.const(np.asarray(n - 1, np.int64), "last")
            step_nodes.append(helper.make_node("Sub", [last, names["i"]], [names["index"]]))
            index = names["index"]
        step_nodes += [
            helper.make_node("Gather", [first, index], [names["row"]], axis=0),
            helper.make_node("Mul", [names["product"], names["row"]], [names["next"]]),
            helper.make_node("Identity", [names["cond"]], [names["cond_out"]]),
            helper.make_node("Identity", [names["product"] if exclusive else names["next"]],
                             [names["step"]]),
        ]
        loop_body = helper.make_graph(
            step_nodes, body.fresh("cum_prod_step"),
            [helper.make_tensor_value_info(names["i"], TensorProto.INT64, []),
             helper.make_tensor_value_info(names["cond"], TensorProto.BOOL, []),
             helper.make_tensor_value_info(names["product"], el, list(rest))],
            [helper.make_tensor_value_info(names["cond_out"], TensorProto.BOOL, []),
             helper.make_tensor_value_info(names["next"], el, list(rest)),
             helper.make_tensor_value_info(names["step"], el, list(rest))])
        trips = body.const(np.asarray(n, np.int64), "trips")
        always = body.const(np.asarray(True), "always")
        stacked = body.fresh("stacked")
        body.node("Loop", [trips, always, ones], [names["last"], stacked], body=loop_body)
        if reverse:
            stacked = body.apply("Slice", [stacked, *(body.const(np.asarray([v], np.int64), k)
                                                      for k, v in (("starts", -1),
                                                                   ("ends", _INT64_MIN),
                                                                   ("axes", 0), ("steps", -1)))],
                                 "in_order")
        if axis:
            body.node("Transpose", [stacked], ["y"], perm=[int(p) for p in np.argsort(perm)])
        else:
            body.node("Identity", [stacked], ["y"])

    key = ("cum_prod", x, axis, exclusive, reverse, dtype.name)
    fn = w.function(key, "CumProd", ["x"], ["y"], build)
    w.emit(op, fn, [w.name(op.input)], domain=FUNCTION_DOMAIN)


INDEXED_EMITTERS: dict[type[Operation], Emitter] = {
    graph_gather_scatter.GatherElementsOp: _gather_elements,
    graph_gather_scatter.GatherNDOp: _gather_nd,
    graph_gather_scatter.ScatterElementsOp: _scatter_elements,
    graph_gather_scatter.ScatterNDOp: _scatter_nd,
    graph_gather_scatter.TileOp: _tile,
    graph_gather_scatter.ReverseSequenceOp: _reverse_sequence,
    graph_gather_scatter.TensorScatterOp: _tensor_scatter,
    graph.CumProdOp: _cum_prod,
}
