"""Common subexpressions and algebra: `cse`, and the algebraic rewrites of the catalog.

`cse` merges two ops of the same kind, properties and operands into one, which also merges
identical constants (their dense bytes compare equal). It is xDSL's CSE driver, counted in the
pattern statistics like every other graph pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.transforms.common_subexpression_elimination import cse

from onnxc.passes.base import STATISTICS


@dataclass(frozen=True)
class CsePass(ModulePass):
    """Merge ops with equal name, properties and operands (also identical constants)."""

    name = "cse"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        before = sum(1 for _ in op.walk())
        cse(op)
        for _ in range(before - sum(1 for _ in op.walk())):
            STATISTICS.record(self.name, "MergeEquivalentOps")
