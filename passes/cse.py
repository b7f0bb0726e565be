"""`cse`: xDSL's common-subexpression driver, with graph constants merged by a cheaper key.

xDSL's driver merges two ops of the same name, properties and operands; for a constant that
means hashing its dense bytes, all of them, the first time the attribute is hashed. After
the batch-norm folds every conv weight of ResNet-50 is a new 2-25 MB `bytes` object, and
hashing the 100 MB was 0.1 s of the graph passes, for no merge at all. Here a constant is
looked up by its type and `dense_data.lookup_key` (for a large one, its length and a sample
of its bytes); only constants that agree on those are compared in full (`bytes ==`, a
memcmp that stops at the first difference), so the merges are exactly xDSL's and the cost
follows the candidates, not the weights.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.traits import IsolatedFromAbove
from xdsl.transforms.common_subexpression_elimination import CSEDriver

from onnxc.dialects import graph
from onnxc.dialects.dense_data import lookup_key
from onnxc.passes.base import STATISTICS


def _key(op: graph.ConstantOp) -> tuple:
    return op.output.type, lookup_key(op.value.data.data)


def _visible_from(earlier: Operation, op: Operation) -> bool:
    """`earlier`, visited before `op`, is in `op`'s block or in an enclosing one, with no
    op isolated from above in between: the scopes xDSL's driver looks `op` up in."""
    target = earlier.parent_block()
    block = op.parent_block()
    while block is not None:
        if block is target:
            return True
        holder = block.parent_op()
        if holder is None or holder.has_trait(IsolatedFromAbove, value_if_unregistered=True):
            return False
        block = holder.parent_block()
    return False


@dataclass
class _ConstantKeyedDriver(CSEDriver):
    """xDSL's CSE driver; graph.constant ops go through `constants` instead of its table."""

    def __post_init__(self) -> None:
        self.constants: dict[tuple, list[graph.ConstantOp]] = {}

    def _simplify_operation(self, op: Operation) -> None:
        if not isinstance(op, graph.ConstantOp):
            return super()._simplify_operation(op)
        if not op.output.uses:
            self._mark_erasure(op)
            return
        candidates = self.constants.setdefault(_key(op), [])
        for earlier in candidates:
            if (earlier.properties == op.properties and earlier.attributes == op.attributes
                    and _visible_from(earlier, op)):
                self._replace_and_delete(op, earlier)
                return
        candidates.append(op)


@dataclass(frozen=True)
class CsePass(ModulePass):
    """Merge ops with equal name, properties and operands (also identical constants)."""

    name = "cse"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        before = sum(1 for _ in op.walk())
        _ConstantKeyedDriver().simplify(op)
        for _ in range(before - sum(1 for _ in op.walk())):
            STATISTICS.record(self.name, "MergeEquivalentOps")


__all__ = ["CsePass"]
