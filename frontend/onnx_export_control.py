"""Control flow as ONNX: graph.if -> If, graph.loop -> Loop, their regions as subgraphs.

The importer's regions are ONNX's subgraphs (frontend/onnx_ops_control.py), so the export
is their reverse: each region becomes a GraphProto written by the same emitters
(`onnx_export.region_graph`), using values of the enclosing graph by their names (ONNX's
outer scope), its constants initializers of the main graph.

- graph.if: If with then_branch / else_branch, no inputs, the regions' yields as outputs.
- graph.loop: Loop(max_trips, condition, *carried) whose body takes (iteration number,
  condition, *carried) and yields (condition, *carried, *scan slices): ONNX Loop's own
  contract, scan outputs stacked along a new first axis as ONNX does. Scan, which the
  importer makes a counted graph.loop gathering each step's slice, comes back as such a
  Loop (slices by Gather, stacks moved into place by Transpose), not as Scan.
- graph.yield: the subgraph's outputs. A yielded value computed by an op of the region
  is an output under its own name; one that is a region argument, an outer value, a
  constant, or yielded twice is copied by an Identity first (onnxruntime refuses a
  subgraph output that is an outer-scope value).

A loop whose count only the run decides (`trip_symbol`) or a symbolic count, and an If
whose branches yield different sizes (`defines`), have symbolic dimensions: they are
refused with every other symbolic value (onnx_export._check_plain).
"""

from __future__ import annotations

from onnx import TensorProto, helper
from xdsl.ir import Operation, SSAValue

from onnxc.dialects import graph
from onnxc.frontend.onnx_export import Emitter, OnnxWriter, region_graph, value_info


def _if(w: OnnxWriter, op: graph.IfOp) -> None:
    hint = w.node_name(op)
    branches = {attr: region_graph(w, op, region.block, w.fresh(f"{hint}_{attr}"))
                for attr, region in (("then_branch", op.then_region),
                                     ("else_branch", op.else_region))}
    w.node("If", [w.name(op.cond)], [w.name(r) for r in op.outputs], name=hint, **branches)


def _loop(w: OnnxWriter, op: graph.LoopOp) -> None:
    block = op.body.block
    names = [w.fresh(a.name_hint or hint) for a, hint in
             zip(block.args, ["iteration", "condition"] + ["carried"] * op.carried)]
    inputs = [helper.make_tensor_value_info(names[0], TensorProto.INT64, []),
              helper.make_tensor_value_info(names[1], TensorProto.BOOL, []),
              *(value_info(n, a) for n, a in zip(names[2:], block.args[2:]))]
    hint = w.node_name(op)
    body = region_graph(w, op, block, w.fresh(f"{hint}_body"), inputs)
    w.node("Loop", w.names([op.max_trips, op.condition, *op.initial]),
           [w.name(r) for r in op.outputs], name=hint, body=body)


def _yield(w: OnnxWriter, op: graph.YieldOp) -> None:
    """The region's outputs (onnx_export.region_graph reads them from `w.outputs`)."""
    block = op.parent_block()
    taken: set[SSAValue] = set()
    for value in op.values:
        owner = value.owner
        direct = (isinstance(owner, Operation) and owner.parent_block() is block
                  and not isinstance(owner, graph.ConstantOp) and value not in taken)
        name = w.name(value)
        if not direct:
            copy = w.fresh(f"{name}_out")
            w.node("Identity", [name], [copy], name=w.fresh(f"{copy}_identity"))
            name = copy
        taken.add(value)
        w.outputs.append(value_info(name, value))


CONTROL_EMITTERS: dict[type[Operation], Emitter] = {
    graph.IfOp: _if,
    graph.LoopOp: _loop,
    graph.YieldOp: _yield,
}
