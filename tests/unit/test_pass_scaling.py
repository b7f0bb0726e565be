"""The graph passes stay linear in the size of the graph (issue: -O3 on 5,000 chained Adds
took 150 s, quadratic in the chain's length).

No timings: the work is counted. `python_calls` counts every Python function call a pipeline
makes (sys.setprofile), which is deterministic; a graph four times larger must cost about
four times as many calls, where a pattern doing O(n) work per op (re-reading a growing fused
program, walking the whole block per op) costs 16 times as many. benchmarks/compile_scaling.py
measures the times.
"""

from __future__ import annotations

import sys
from collections import Counter

import numpy as np
import pytest

import onnxc
from onnxc.dialects import graph
from onnxc.frontend import import_onnx
from onnxc import pipeline
from onnxc.passes import base
from onnxc.passes.levels import LEVELS
from onnxc.passes.verify_numerics import check_pass_equivalence
from onnxc.zoo_scaling import add_chain, wide_graph
from tests.ir_helpers import const, module, rand, tensor

LINEAR = 4.6
"""Largest allowed cost ratio for a 4x larger graph (linear: 4; quadratic: 16)."""


def python_calls(model, passes) -> int:
    """Python function calls made by running `passes` on the imported `model`."""
    imported = import_onnx(model)
    ctx = pipeline.make_context()
    pipeline.run_passes(ctx, import_onnx(add_chain(2)), passes)  # imports, registry, caches
    calls = 0

    def count(frame, event, arg):
        nonlocal calls
        calls += event == "call"

    sys.setprofile(count)
    try:
        pipeline.run_passes(ctx, imported, passes)
    finally:
        sys.setprofile(None)
    return calls


def test_o3_pipeline_cost_is_linear_in_the_length_of_a_chain():
    small, large = (python_calls(add_chain(n), LEVELS[3]) for n in (100, 400))
    assert large / small < LINEAR, (small, large)  # 8.2 before the fix, 3.6 after


def test_pattern_invocations_per_op_are_bounded_on_a_chain(monkeypatch):
    """The greedy driver visits each op a bounded number of times per pass: about one visit,
    one more after a change, and the ops a rewrite creates."""
    invocations = Counter()
    original = base._CountingPattern.match_and_rewrite

    def counted(self, op, rewriter):
        invocations[self.pass_name] += 1
        return original(self, op, rewriter)

    monkeypatch.setattr(base._CountingPattern, "match_and_rewrite", counted)
    n = 300
    onnxc.optimize(add_chain(n), opt_level=3)
    runs = Counter(spec.split("{")[0] for spec in LEVELS[3])
    visits = {name: count / (runs[name] * n) for name, count in invocations.items()}
    assert max(visits.values()) <= 4, visits  # 3.05 at most (drop-no-op's six patterns)


def test_a_chain_deeper_than_the_recursion_limit_fuses_into_one_op():
    n = sys.getrecursionlimit() + 200
    optimized = onnxc.optimize(add_chain(n), opt_level=3)
    ops = [op for op in optimized.walk() if op.name.startswith("graph.")]
    assert [op.name for op in ops] == ["graph.fused_elementwise", "graph.yield"]
    assert [o.name for o in ops[0].body_ops()] == ["arith.addf"] * n
    x = np.linspace(-1, 1, 16, dtype=np.float32)
    (y,) = onnxc.compile(add_chain(n), cache_dir=False, num_threads=1).run(None, {"x": x})
    expected = x.copy()
    for _ in range(n):  # the chain's own order of float32 additions
        expected += x
    np.testing.assert_allclose(y, expected, rtol=1e-6)


def test_fused_tree_keeps_the_results():
    """A tree of two chains joined by a consumer, with a broadcast operand and a value that
    has a second user (which ends a tree): one pass, same numbers as before."""
    rng = np.random.default_rng(0)
    t = tensor((2, 3))
    body = [const("b", rand(rng, 3)),
            f"  %a0 = graph.relu(%x) : ({t}) -> {t}",
            f"  %a1 = graph.add(%a0, %b) : ({t}, {tensor((3,))}) -> {t}",
            f"  %b0 = graph.sigmoid(%y) : ({t}) -> {t}",
            f"  %b1 = graph.mul(%b0, %x) : ({t}, {t}) -> {t}",
            f"  %c = graph.sub(%a1, %b1) : ({t}, {t}) -> {t}",
            f"  %d = graph.tanh(%c) : ({t}) -> {t}",
            f"  %e = graph.abs(%d) : ({t}) -> {t}"]
    source = module({"x": (2, 3), "y": (2, 3)}, body, [("e", (2, 3)), ("d", (2, 3))])
    after = check_pass_equivalence(source, "fuse-elementwise")
    fused = [op for op in after.walk() if isinstance(op, graph.FusedElementwiseOp)]
    # %d's tree (relu as max with a constant, sigmoid as four ops); abs(%d) stays alone
    assert [[o.name for o in op.body_ops()] for op in fused] == [[
        "arith.constant", "arith.maximumf", "arith.addf",  # relu(x) + b
        "arith.constant", "arith.negf", "math.exp", "arith.addf", "arith.divf",  # sigmoid(y)
        "arith.mulf", "arith.subf", "math.tanh"]]
    assert any(isinstance(op, graph.AbsOp) for op in after.walk())


def test_horizontal_fusion_cost_is_linear_in_the_number_of_matmuls():
    """Each MatMul by a constant looks for siblings reading its input; only the readers of
    that input may be examined, not the whole block."""
    def matmul_chain(n: int):
        from onnx import TensorProto, helper, numpy_helper

        w = numpy_helper.from_array(np.eye(4, dtype=np.float32), "w")
        nodes = [helper.make_node("MatMul", ["x" if i == 0 else f"h{i - 1}", "w"],
                                  ["y" if i == n - 1 else f"h{i}"]) for i in range(n)]
        g = helper.make_graph(nodes, "mm", [helper.make_tensor_value_info(
            "x", TensorProto.FLOAT, [2, 4])], [helper.make_tensor_value_info(
                "y", TensorProto.FLOAT, [2, 4])], [w])
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])

    small, large = (python_calls(matmul_chain(n), ["horizontal-fusion"]) for n in (200, 800))
    assert large / small < LINEAR, (small, large)


@pytest.mark.slow
def test_every_o3_pass_is_linear_on_a_wide_mixed_graph():
    """Each -O3 pass alone on two branches of mixed ops (MatMul, Add, Relu, Transpose,
    Sigmoid, Sub; Conv, BatchNormalization, residual Add, Reshape) at two sizes."""
    small, large = wide_graph(150, branches=2), wide_graph(600, branches=2)
    slow = {}
    for name in dict.fromkeys(LEVELS[3]):
        ratio = python_calls(large, [name]) / python_calls(small, [name])
        if ratio >= LINEAR:
            slow[name] = round(ratio, 2)
    assert not slow, f"passes whose cost grows faster than the graph: {slow}"


def test_lowered_module_verifies_calls_without_scanning_the_module(monkeypatch):
    """Verifying the loops-level module resolves every func.call from an index of the
    module's symbols; xDSL's scan of the whole module per call made this quadratic (20 s of
    a 5,000-node graph's compile)."""
    from onnxc.pass_manager import verifier as pass_verifier

    scans = Counter()
    scan = pass_verifier._scan_symbols
    monkeypatch.setattr(pass_verifier, "_scan_symbols",
                        lambda op, name: scans.update([str(name)]) or scan(op, name))
    lowered = import_onnx(wide_graph(300))
    pipeline.run_passes(pipeline.make_context(), lowered, [*LEVELS[3],
                                                            *pipeline.GRAPH_TO_LOOPS])
    calls = [op for op in lowered.walk() if op.name == "func.call"]
    assert len(calls) > 50
    assert not scans, scans


def test_indexed_verification_still_finds_a_missing_callee():
    from xdsl.dialects import func
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.utils.exceptions import VerifyException

    from onnxc.pass_manager.verifier import verify_module

    caller = func.FuncOp("caller", ((), ()))
    caller.body.block.add_ops([func.CallOp("nowhere", [], []), func.ReturnOp()])
    with pytest.raises(VerifyException, match="nowhere"):
        verify_module(ModuleOp([caller]))
