"""What a graph pipeline did: node counts by op type before and after, and pattern fires.

`onnxc-opt --stats` prints it to stderr and `onnxc.optimize(..., stats=True)` returns it;
benchmarks/node_counts.py uses `compute_nodes` to compare with onnxruntime.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.traits import IsTerminator

CONSTANT_OPS = frozenset({"graph.constant", "graph.constant_of_shape"})
"""Ops that hold data rather than compute (ONNX initializers and Constant nodes)."""


def op_counts(module: ModuleOp) -> Counter[str]:
    """How many ops of each type the module's functions hold (terminators excluded, and the
    scalar ops of fused bodies: they are the fused op's meaning, not nodes)."""
    counts: Counter[str] = Counter()
    for func in module.walk():
        if not isinstance(func, FuncOp):
            continue
        for op in func.walk():
            parent = op.parent_op()
            if (op is not func and not op.has_trait(IsTerminator)
                    and (parent is None or parent.name != "graph.fused_elementwise")):
                counts[op.name] += 1
    return counts


def compute_nodes(counts: Counter[str]) -> int:
    """Nodes that compute something: every op but the constants."""
    return sum(n for name, n in counts.items() if name not in CONSTANT_OPS)


@dataclass
class OptimizationStats:
    """Node counts before and after a pipeline and how often each pattern fired."""

    before: Counter[str]
    after: Counter[str]
    fired: dict[tuple[str, str], int] = field(default_factory=dict)

    def __str__(self) -> str:
        lines = [(f"===  graph statistics: {compute_nodes(self.before)} -> "
                  f"{compute_nodes(self.after)} compute nodes "
                  f"({sum(self.before.values())} -> {sum(self.after.values())} ops)  ===")]
        width = max((len(n) for n in self.before | self.after), default=10)
        lines.append(f"  {'op':<{width}} {'before':>7} {'after':>7}")
        for name in sorted(self.before | self.after):
            lines.append(f"  {name:<{width}} {self.before[name]:>7} {self.after[name]:>7}")
        lines.append("===  pattern fires  ===")
        if not self.fired:
            lines.append("  (none)")
        for (pass_name, pattern), n in sorted(self.fired.items()):
            lines.append(f"  {pass_name}: {pattern} x{n}")
        return "\n".join(lines)
