"""pass_manager/census.py: graph passes with nothing to match are left out of a pipeline run,
and the result is the module every pass would have made."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from onnxc.dialects import graph
from onnxc.errors import InternalCompilerError
from onnxc.pipeline import make_context
from onnxc.passes.base import GraphPatternPass
from onnxc.pass_manager.census import OpCensus
from tests.ir_helpers import module, tensor

T = tensor((4,))


def _adds(dead: bool = False):
    body = [f"  %0 = graph.add(%x, %x) : ({T}, {T}) -> {T}"]
    if dead:
        body.append(f"  %1 = graph.add(%0, %x) : ({T}, {T}) -> {T}")
    return module({"x": (4,)}, body, [("0", (4,))])


def _names(m) -> list[str]:
    return [op.name for op in m.walk() if op.name.startswith("graph.")]


def _same_operands_same_result(op: Operation, new_class) -> Operation:
    return new_class(operands=list(op.operands), result_types=[op.results[0].type])


class _AddToMul(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.AddOp, rewriter: PatternRewriter) -> None:
        rewriter.replace(op, _same_operands_same_result(op, graph.MulOp))


class _MulToSub(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.MulOp, rewriter: PatternRewriter) -> None:
        rewriter.replace(op, _same_operands_same_result(op, graph.SubOp))


class _ConvToConv(RewritePattern):
    """Written for an op the test modules do not hold."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ConvOp, rewriter: PatternRewriter) -> None:
        raise AssertionError("never called: no graph.conv here")


class _MulBehindTheRewriter(RewritePattern):
    """Adds a graph.mul after each graph.add without telling the rewriter: a bug."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.AddOp, rewriter: PatternRewriter) -> None:
        following = op.next_op
        if not isinstance(following, graph.MulOp):
            op.parent_block().insert_op_after(
                _same_operands_same_result(op, graph.MulOp), op)


def _pass(name: str, *patterns: type[RewritePattern]) -> GraphPatternPass:
    cls = dataclass(frozen=True)(type(f"P_{name}", (GraphPatternPass,),
                                      {"name": name, "patterns": patterns}))
    return cls()


def _run(m, passes, checked: bool = True) -> OpCensus:
    census = OpCensus(m, checked=checked)
    ctx = make_context()
    for p in passes:
        census.apply(ctx, p)
    return census


def test_a_pass_with_nothing_to_match_is_not_walked():
    m = _adds()
    census = _run(m, [_pass("conv", _ConvToConv)])
    assert census.skipped == 1
    assert _names(m) == ["graph.add"]


def test_a_change_is_seen_by_the_passes_after_it():
    """The census is taken at the first (skipped) pass; the rewrite to graph.mul must make
    the next pass walk the module."""
    m = _adds()
    census = _run(m, [_pass("conv", _ConvToConv), _pass("add-to-mul", _AddToMul),
                      _pass("mul-to-sub", _MulToSub), _pass("conv-again", _ConvToConv)])
    assert _names(m) == ["graph.sub"]
    assert census.skipped == 2


def test_a_trivially_dead_op_makes_the_pass_walk():
    """The greedy driver erases dead ops whatever its patterns: so must the census."""
    m = _adds(dead=True)
    census = _run(m, [_pass("conv", _ConvToConv)])
    assert census.skipped == 0
    assert _names(m) == ["graph.add"]


def test_a_pattern_that_changes_ops_behind_the_rewriter_is_an_internal_error():
    m = _adds()
    passes = [_pass("conv", _ConvToConv), _pass("sneaky", _MulBehindTheRewriter),
              _pass("conv-again", _ConvToConv)]
    with pytest.raises(InternalCompilerError, match="after pass 'sneaky'"):
        _run(m, passes, checked=True)


def test_the_pipeline_runner_skips_through_the_census(monkeypatch):
    """run_passes (onnxc.compile, onnxc-opt) applies passes through the census: graph
    passes with no op to match are not walked."""
    from onnxc.pipeline import run_passes

    walked: list[str] = []
    rewrite = GraphPatternPass.rewrite

    def counting(self, op, patterns=None):
        walked.append(self.name)
        return rewrite(self, op, patterns)

    monkeypatch.setattr(GraphPatternPass, "rewrite", counting)
    m = _adds()
    run_passes(make_context(), m, "fuse-conv-bn,fuse-attention,algebraic-identities")
    assert "fuse-conv-bn" not in walked and "fuse-attention" not in walked
    assert _names(m) == ["graph.add"]
