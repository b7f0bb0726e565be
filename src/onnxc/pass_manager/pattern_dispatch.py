"""A greedy pattern applier that tries on an op only the patterns written for its type.

xDSL's `GreedyRewritePatternApplier` calls every pattern on every op, and a pattern declared
with `@op_type_rewrite_pattern` only then checks `isinstance(op, ...)`. The LLVM conversion
has ~40 patterns and ResNet-50's loops ~120k op visits: 1.7 million calls that do nothing but
that check. `OpTypeDispatchApplier` reads the op types each pattern declares (its decorated
method's annotation), and keeps per concrete op class the ordered list of patterns that can
match it; a pattern it cannot read (a plain `match_and_rewrite`) is tried on every op. The
first pattern that changes the IR wins, as in the greedy applier, so results are identical.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from types import UnionType
from typing import Union, get_args, get_origin

from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.transforms.dead_code_elimination import is_trivially_dead


def op_types_of(pattern: RewritePattern) -> tuple[type[Operation], ...] | None:
    """The op classes `pattern` can match, or None when it may match any op.

    A pattern that wraps another (e.g. to count its fires) says so with an `op_types()`
    method. Otherwise the types come from the closure `@op_type_rewrite_pattern` builds around
    the decorated method (its `expected_type`, from the op argument's annotation)."""
    declared = getattr(pattern, "op_types", None)
    if callable(declared):
        return declared()
    method = type(pattern).match_and_rewrite
    code, closure = getattr(method, "__code__", None), getattr(method, "__closure__", None)
    if code is None or closure is None:
        return None
    cells = dict(zip(code.co_freevars, closure))
    if "expected_type" not in cells or "func" not in cells:
        return None
    expected = cells["expected_type"].cell_contents
    types = get_args(expected) if get_origin(expected) in (Union, UnionType) else (expected,)
    if all(isinstance(t, type) and issubclass(t, Operation) for t in types):
        return tuple(types)
    return None


@dataclass(eq=False)
class OpTypeDispatchApplier(RewritePattern):
    """Applies the first of `patterns` (in order) that rewrites the op, trying only those
    whose declared op types include the op's class; trivially dead ops are erased first
    when `dce_enabled`."""

    patterns: Sequence[RewritePattern]
    dce_enabled: bool = True
    _declared: list[tuple[RewritePattern, tuple[type[Operation], ...] | None]] = field(
        init=False, repr=False)
    _by_class: dict[type[Operation], tuple[RewritePattern, ...]] = field(
        init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        self._declared = [(p, op_types_of(p)) for p in self.patterns]

    def candidates(self, op_class: type[Operation]) -> tuple[RewritePattern, ...]:
        """The patterns that can match an op of `op_class`, in their given order."""
        found = self._by_class.get(op_class)
        if found is None:
            found = tuple(p for p, types in self._declared
                          if types is None or issubclass(op_class, types))
            self._by_class[op_class] = found
        return found

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if self.dce_enabled and is_trivially_dead(op):
            rewriter.erase(op)
            return
        for pattern in self.candidates(type(op)):
            pattern.match_and_rewrite(op, rewriter)
            if rewriter.has_done_action:
                return
