"""Shared machinery of the graph optimizations: one catalog row = one pass of rewrite patterns.

Each row of the pass catalog (docs/graph-passes.md) is a `GraphPatternPass` subclass whose
`name` is the row's name and whose `patterns` are xDSL `RewritePattern`s. The pass applies
them with xDSL's greedy driver to a fixpoint, with trivial dead-code elimination on (graph ops
are `Pure`, so a producer left without users by a fusion disappears). Every successful
rewrite is counted per pass and pattern in `STATISTICS`, which `onnxc-opt --stats` and
`onnxc.optimize(..., stats=True)` report.
"""

from __future__ import annotations

import abc
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, UnknownLoc
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern
from xdsl.utils.exceptions import VerifyException

from onnxc.dialects.symbolic_dims import SymbolicDimError, SymDim
from onnxc.errors import InternalCompilerError
from onnxc.pass_manager.pattern_dispatch import OpTypeDispatchApplier, op_types_of


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


def _holds_symdim(value: object, depth: int = 2) -> bool:
    """Whether `value` is a SymDim or a shallow container (list, tuple, ArrayAttr, IntAttr)
    of one."""
    if isinstance(value, SymDim):
        return True
    if depth == 0:
        return False
    try:
        data = getattr(value, "data", value)  # ArrayAttr, IntAttr
    except Exception:  # noqa: BLE001 - a property of some other object: not ours
        return False
    if isinstance(data, SymDim):
        return True
    if isinstance(data, (list, tuple)):
        return any(_holds_symdim(v, depth - 1) for v in data[:16])
    return False


def _frames(tb: TracebackType | None) -> Iterator[dict[str, object]]:
    while tb is not None:
        yield tb.tb_frame.f_locals
        tb = tb.tb_next


def symbolic_failure(err: BaseException) -> bool:
    """Whether `err` comes from a symbolic dimension meeting code written for fixed sizes:
    a `SymbolicDimError` (`int(d)`, `range(d)`, an undecidable `<`), or the errors a SymDim
    causes where it is taken for an int without conversion (xDSL refusing it as a
    `TensorType` dimension: VerifyException; `IntegerAttr(d)`: AttributeError; formatting:
    TypeError, which may also name the SymDim type) raised while some frame held a SymDim."""
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, SymbolicDimError):
            return True
        current = current.__cause__ or current.__context__
    if not isinstance(err, (VerifyException, TypeError, AttributeError)):
        return False
    if isinstance(err, TypeError) and "'SymDim'" in str(err):
        return True  # `0.5 * d`: Python names the operand types
    return any(_holds_symdim(v) for f in _frames(err.__traceback__) for v in f.values())


@dataclass
class _CountingPattern(RewritePattern):
    """Runs `inner` and records a fire when it changed the IR.

    It is also the safety net of symbolic shapes: a pattern that meets a symbolic dimension
    where it needs a number (see `symbolic_failure`) does not match. Having already changed
    the IR by then, it would leave the IR half rewritten: that is an internal error naming
    the pattern."""

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
        except Exception as err:
            if not symbolic_failure(err):
                raise
            if rewriter.has_done_action and not before:
                raise self._half_rewritten(op, err) from err
            return  # not written for symbolic shapes: no match
        finally:
            rewriter.operation_insertion_handler.remove(inherit)
        if rewriter.has_done_action and not before:
            STATISTICS.record(self.pass_name, type(self.inner).__name__)

    def _half_rewritten(self, op: Operation, err: Exception) -> InternalCompilerError:
        from onnxc.pass_manager.verifier import origin_of

        try:
            origin = origin_of(op)
        except Exception:  # noqa: BLE001 - the error matters, not where it points
            origin = None
        return InternalCompilerError(
            self.pass_name, op.name, origin,
            f"was half rewritten by pattern {type(self.inner).__name__}, which then failed "
            f"on a symbolic dimension: {err}", op=op)

    def op_types(self) -> tuple[type[Operation], ...] | None:
        return op_types_of(self.inner)


def apply_graph_patterns(
    module: ModuleOp, patterns: Sequence[RewritePattern], pass_name: str
) -> bool:
    """Apply `patterns` greedily to a fixpoint over `module`, counting fires; whether the
    module changed."""
    counted = [_CountingPattern(p, pass_name) for p in patterns]
    walker = PatternRewriteWalker(
        OpTypeDispatchApplier(counted, dce_enabled=True), apply_recursively=True
    )
    return walker.rewrite_module(module)


@dataclass(frozen=True)
class GraphPatternPass(ModulePass, abc.ABC):
    """A catalog row: a named set of rewrite patterns applied to a fixpoint."""

    patterns: ClassVar[tuple[type[RewritePattern], ...]] = ()

    def rewrite_patterns(self) -> Sequence[RewritePattern]:
        """The pattern instances to apply; override when patterns take pass options."""
        return [p() for p in self.patterns]

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        self.rewrite(op)

    @property
    def walks_patterns(self) -> bool:
        """Whether this pass only applies its patterns (its `apply` is this class's): the op
        census (pass_manager/census.py) may then leave it out when none can match."""
        return type(self).apply is GraphPatternPass.apply

    def rewrite(self, op: ModuleOp, patterns: Sequence[RewritePattern] | None = None) -> bool:
        """Apply the patterns (`rewrite_patterns()` unless given); whether the module
        changed (pass_manager/census.py leaves out the passes with nothing to match)."""
        if patterns is None:
            patterns = self.rewrite_patterns()
        return apply_graph_patterns(op, patterns, self.name)
