"""Shared machinery of the graph optimizations: one catalog row = one pass of rewrite patterns.

Each row of the pass catalog (README, "Graph optimizations") is a `GraphPatternPass` subclass whose
`name` is the row's name and whose `patterns` are xDSL `RewritePattern`s. The pass applies
them with xDSL's greedy driver to a fixpoint, with trivial dead-code elimination on (graph ops
are `Pure`, so a producer left without users by a fusion disappears). Every successful
rewrite is counted per pass and pattern in `STATISTICS`, which `onnxc-opt --stats` and
`onnxc.optimize(..., stats=True)` report.
"""

from __future__ import annotations

import abc
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, UnknownLoc
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern

from onnxc.passes.pattern_dispatch import OpTypeDispatchApplier, op_types_of


class PatternStatistics:
    """How often each pattern fired, keyed by (pass name, pattern class name)."""

    def __init__(self) -> None:
        self.fired: Counter[tuple[str, str]] = Counter()

    def record(self, pass_name: str, pattern_name: str) -> None:
        self.fired[(pass_name, pattern_name)] += 1

    def reset(self) -> None:
        self.fired.clear()

    def snapshot(self) -> dict[tuple[str, str], int]:
        return dict(self.fired)


STATISTICS = PatternStatistics()
"""Process-wide fire counts; reset it before the run you want to report."""


@dataclass
class _CountingPattern(RewritePattern):
    """Runs `inner` and records a fire when it changed the IR."""

    inner: RewritePattern
    pass_name: str

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        before = rewriter.has_done_action
        location = op.location

        def inherit(new: Operation) -> None:
            if isinstance(new.location, UnknownLoc):
                new.location = location

        # the ops a rewrite creates keep the ONNX node of the op they replace (its location),
        # for --mlir-print-debuginfo and for error and run-time check messages naming it
        rewriter.operation_insertion_handler.append(inherit)
        try:
            self.inner.match_and_rewrite(op, rewriter)
        finally:
            rewriter.operation_insertion_handler.remove(inherit)
        if rewriter.has_done_action and not before:
            STATISTICS.record(self.pass_name, type(self.inner).__name__)

    def op_types(self) -> tuple[type[Operation], ...] | None:
        return op_types_of(self.inner)


def apply_graph_patterns(
    module: ModuleOp, patterns: Sequence[RewritePattern], pass_name: str
) -> None:
    """Apply `patterns` greedily to a fixpoint over `module`, counting fires."""
    counted = [_CountingPattern(p, pass_name) for p in patterns]
    walker = PatternRewriteWalker(
        OpTypeDispatchApplier(counted, dce_enabled=True), apply_recursively=True
    )
    walker.rewrite_module(module)


@dataclass(frozen=True)
class GraphPatternPass(ModulePass, abc.ABC):
    """A catalog row: a named set of rewrite patterns applied to a fixpoint."""

    patterns: ClassVar[tuple[type[RewritePattern], ...]] = ()

    def rewrite_patterns(self) -> Sequence[RewritePattern]:
        """The pattern instances to apply; override when patterns take pass options."""
        return [p() for p in self.patterns]

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        apply_graph_patterns(op, self.rewrite_patterns(), self.name)
