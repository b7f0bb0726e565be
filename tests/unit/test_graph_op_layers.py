"""Every graph op has every layer: the check a new graph op meets (CONTRIBUTING.md, "Add an
op").

A graph op's rules are registered per layer, keyed by its class, as JAX registers a
primitive's rules per interpreter: its definition and shape rule (the op class and its
verifier, dialects/graph_*.py, with the traits the passes decide by), its kernel rule
(lowering/graph_to_loops, `KernelRule`), its numpy reference (passes/evaluator*.py
`EVALUATORS`), its ONNX exporter (frontend/onnx_export*.py) and its custom-syntax round trip
(tests/lit/dialects/graph/ops.mlir). The layers cannot share one record: a pass may not
import the lowering (tests/unit/test_layers.py). This test joins them and names, per op,
what is missing."""

from __future__ import annotations

import re
from pathlib import Path

from onnxc.dialects import graph
from onnxc.frontend.onnx_export import NOT_EXPORTED, all_emitters
from onnxc.lowering.graph_to_loops.kernels import RULES
from onnxc.passes.evaluator import EVALUATORS
from onnxc.tools.op_reference import op_doc

OPS_MLIR = Path(__file__).parents[1] / "lit" / "dialects" / "graph" / "ops.mlir"

LOWERED_WITHOUT_KERNEL = {*graph.VIEW_OPS, *graph.CONTROL_OPS, graph.ConstantOp, graph.ShapeOp}
"""views of their operand's buffer, regions inlined into loops, constants and shapes bound
to buffers by convert-graph-to-loops itself"""


def missing_layers(op: type) -> list[str]:
    """The layers `op` lacks, by name."""
    round_trips = set(re.findall(r"\bgraph\.(\w+)[( ]", OPS_MLIR.read_text()))
    missing = []
    if not op_doc(op):
        missing.append("docstring")
    if op not in RULES and op not in LOWERED_WITHOUT_KERNEL:
        missing.append("kernel rule")
    if op not in EVALUATORS and op not in graph.CONTROL_OPS:  # regions: evaluate_region_op
        missing.append("evaluator")
    if op not in all_emitters() and op not in NOT_EXPORTED:
        missing.append("exporter (or a NOT_EXPORTED reason)")
    if op.name.split(".", 1)[1] not in round_trips:
        missing.append("ops.mlir round trip")
    return missing


def test_every_graph_op_has_every_layer():
    gaps = {op.name: m for op in graph.Graph.operations if (m := missing_layers(op))}
    assert not gaps, "graph ops missing layers:\n" + "\n".join(
        f"  {name}: {', '.join(m)}" for name, m in sorted(gaps.items()))


def test_an_op_declared_without_a_layer_is_not_also_given_one():
    emitters = all_emitters()
    assert not emitters.keys() & NOT_EXPORTED.keys()
    assert all(NOT_EXPORTED.values())


def test_a_new_op_without_layers_is_named_with_what_it_lacks():
    from xdsl.irdl import irdl_op_definition

    @irdl_op_definition
    class _NewOp(graph.UnaryElementwiseOp):
        name = "graph.brand_new"

    assert missing_layers(_NewOp) == ["docstring", "kernel rule", "evaluator",
                                      "exporter (or a NOT_EXPORTED reason)",
                                      "ops.mlir round trip"]
