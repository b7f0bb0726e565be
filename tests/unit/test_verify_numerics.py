"""The numeric-equivalence harness catches a wrong rewrite and names the pass that made it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from onnxc.dialects import graph
from onnxc.pipeline import make_context
from onnxc.passes.base import apply_graph_patterns
from onnxc.passes.verify_numerics import (
    MemoEvaluator,
    bisect_pipeline,
    check_pass_equivalence,
    drifting_outputs,
    random_inputs,
)

MODULE = """
func.func @main(%x: tensor<2x3xf32>, %i: tensor<4xi64>) -> (tensor<2x3xf32>, tensor<4xi64>) {
  %c = graph.constant {value = dense<2.0> : tensor<1xf32>} : tensor<1xf32>
  %a = graph.add(%x, %c) : (tensor<2x3xf32>, tensor<1xf32>) -> tensor<2x3xf32>
  %r = graph.relu(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %id = graph.identity(%r) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %id, %i : tensor<2x3xf32>, tensor<4xi64>
}
"""


def parse(text: str = MODULE) -> ModuleOp:
    return Parser(make_context(), text).parse_module()


class _AddToSub(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.AddOp, rewriter: PatternRewriter) -> None:
        rewriter.replace(op, graph.SubOp(operands=[op.lhs, op.rhs],
                                            result_types=[op.output.type]))


@dataclass(frozen=True)
class BrokenPass(ModulePass):
    """A deliberately wrong rewrite: x + c becomes x - c."""

    name = "broken-add-to-sub"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        apply_graph_patterns(op, [_AddToSub()], self.name)


def test_random_inputs_are_seeded_and_typed():
    module = parse()
    a, b = random_inputs(module, seed=3), random_inputs(module, seed=3)
    assert a[0].dtype == np.float32 and a[1].dtype == np.int64
    assert np.array_equal(a[0], b[0]) and (a[0] >= -1).all() and (a[0] < 1).all()
    assert set(np.unique(a[1])) <= {0, 1, 2}
    assert not np.array_equal(a[0], random_inputs(module, seed=4)[0])


def test_equivalent_pipeline_passes_and_returns_the_rewritten_copy():
    module = parse()
    after = check_pass_equivalence(module, "cse,fold-scalar-binary")
    assert any(isinstance(op, graph.AddScalarOp) for op in after.walk())
    assert any(isinstance(op, graph.AddOp) for op in module.walk()), "input left untouched"


def test_wrong_rewrite_is_reported():
    with pytest.raises(AssertionError, match="output 0: max abs diff"):
        check_pass_equivalence(parse(), [BrokenPass()])


def test_bisect_names_the_first_drifting_pass_and_its_ops():
    report = bisect_pipeline(parse(), ["cse", BrokenPass(), "fold-scalar-binary"])
    assert not report.ok
    assert report.first_drifting.name == "broken-add-to-sub"
    assert report.first_drifting.removed == {"graph.add": 1}
    assert report.first_drifting.added == {"graph.sub": 1}
    assert any("graph.sub" in text for text in report.first_drifting.new_ops)
    assert [s.name for s in report.steps] == ["cse", "broken-add-to-sub"]
    assert "first drifting pass: broken-add-to-sub" in str(report)


def test_bisect_of_a_correct_pipeline_is_ok():
    report = bisect_pipeline(parse(), "fold-scalar-binary,cse")
    assert report.ok and len(report.steps) == 2
    assert "no pass drifts" in str(report)


def test_tolerance_is_relative_to_the_output_scale():
    big = np.array([1000.0, 1e-3], np.float32)
    near = big + np.array([0.05, 0.05], np.float32)  # 5e-5 of the scale, 50x of the small one
    assert not drifting_outputs([big], [near], rtol=1e-4, atol=1e-5)
    assert drifting_outputs([big], [big * 1.01], rtol=1e-4, atol=1e-5)
    nan = np.array([np.nan, 1.0], np.float32)
    assert drifting_outputs([nan], [np.array([1.0, 1.0], np.float32)], rtol=1, atol=1)
    assert drifting_outputs([np.zeros(2, np.int64)], [np.ones(2, np.int64)], rtol=1, atol=1)


def test_memo_evaluator_recomputes_only_changed_ops():
    module = parse()
    evaluator = MemoEvaluator(random_inputs(module))
    first = evaluator.run(module)
    computed = evaluator.computed
    module2 = module.clone()
    assert all(np.array_equal(a, b) for a, b in zip(first, evaluator.run(module2)))
    assert evaluator.computed == computed, "an identical module is served from the cache"
