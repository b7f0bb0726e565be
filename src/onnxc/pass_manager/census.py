"""Graph passes with nothing to match are not walked.

A `GraphPatternPass` runs xDSL's greedy driver, which visits every op of the module even
when none is of a type the pass's patterns are written for. The -O3 pipeline runs 128
passes; measured on ResNet-50, 60 of them had no such op, and walking them cost 140 ms
(BERT-2: 44 passes, 52 ms; MobileNetV2-like: 57 passes, 40 ms), all before any code is
generated, while the second core waits.

Such a pass changes nothing when every pattern declares its op types
(`pattern_dispatch.op_types_of`), the module holds no op of those types, and no op is
trivially dead (the driver would erase it): every visit does nothing, and the driver stops
after one sweep. `OpCensus` applies the passes of one pipeline run and leaves such a pass
out. It knows the module's op classes from one walk, taken again only after a pass that
changed the module (a graph pass reports it: `GraphPatternPass.rewrite`; any other pass is
taken to have changed it), so the results are identical to walking every pass.

The census trusts the rewriter to see every change a pattern makes, as xDSL's driver does
to reach its fixpoint. With ONNXC_VERIFY_IR=1 (the test suite; `run_verified` passes
`checked`) each skip is checked against a fresh walk, and a pattern that changed op
classes behind the rewriter's back is an InternalCompilerError naming the pass that ran
before.
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.transforms.dead_code_elimination import is_trivially_dead

from onnxc.errors import InternalCompilerError
from onnxc.pass_manager.pattern_dispatch import op_types_of


def _walks_patterns(p: ModulePass) -> bool:
    """Whether `p` is a graph pass applied by `GraphPatternPass.rewrite` (not a subclass
    with its own `apply`): it says so with `walks_patterns` (the pass manager sits below
    the passes, so it asks rather than imports their base class)."""
    return bool(getattr(p, "walks_patterns", False))


def _take_census(module: ModuleOp) -> tuple[frozenset[type[Operation]], bool]:
    """The classes of the ops the greedy driver would visit, and whether any of them is
    trivially dead."""
    classes: set[type[Operation]] = set()
    any_dead = False
    for op in module.body.walk():
        classes.add(type(op))
        if not any_dead and is_trivially_dead(op):
            any_dead = True
    return frozenset(classes), any_dead


class OpCensus:
    """Applies the passes of one pipeline run to `module`, leaving out the graph passes
    that have nothing to match in it."""

    def __init__(self, module: ModuleOp, checked: bool = False):
        self.module = module
        self.checked = checked
        """each skip checked against a fresh census (run_verified: with ONNXC_VERIFY_IR)"""
        self._census: tuple[frozenset[type[Operation]], bool] | None = None
        self._last_run: str | None = None
        self.skipped = 0

    def apply(self, ctx: Context, p: ModulePass) -> None:
        """Apply `p`, unless it is a graph pass that could not change the module."""
        if not _walks_patterns(p):
            p.apply(ctx, self.module)
            self._last_run, self._census = p.name, None  # taken to have changed it
            return
        patterns = p.rewrite_patterns()  # type: ignore[attr-defined]
        if self._nothing_to_match(patterns):
            self.skipped += 1
            return
        changed = p.rewrite(self.module, patterns)  # type: ignore[attr-defined]
        self._last_run = p.name
        if changed:
            self._census = None

    def _nothing_to_match(self, patterns) -> bool:
        declared = [op_types_of(pattern) for pattern in patterns]
        if any(types is None for types in declared):
            return False  # a pattern that may match any op
        if self._census is None:
            self._census = _take_census(self.module)
        elif self.checked and _take_census(self.module) != self._census:
            raise InternalCompilerError(
                self._last_run, "builtin.module", None,
                "changed the module's ops without telling the rewriter (the op census "
                "of graph passes no longer matches the module)")
        classes, any_dead = self._census
        if any_dead:
            return False
        return not any(issubclass(c, types) for c in classes for types in declared)


__all__ = ["OpCensus"]
