"""Control-flow simplification: `fold-constant-if` and `hoist-loop-invariants`.

The importer already inlines an If whose condition is a constant in the model; these catch
the ones that become constant or invariant only after other passes (folding, CSE) ran.

- fold-constant-if: `graph.if` on a `graph.constant` condition is replaced by the ops of the
  branch taken.
- hoist-loop-invariants: a graph op in a `graph.loop` body whose operands all come from
  outside the loop computes the same value every iteration; it moves in front of the loop
  (loop-invariant code motion, as MLIR's LICM). Only out of loops known to run at least once,
  so a hoisted op never runs (and never fails a run-time check) where the model would not
  have run it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.ir import Block, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from onnxc.dialects import graph
from onnxc.passes.base import GraphPatternPass


class FoldConstantIf(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.IfOp, rewriter: PatternRewriter) -> None:
        cond = op.cond.owner
        if not isinstance(cond, graph.ConstantOp):
            return
        taken = op.then_region if bool(np.asarray(cond.value.get_values()).reshape(-1)[0]) \
            else op.else_region
        block = taken.block
        terminator = block.last_op
        assert isinstance(terminator, graph.YieldOp)
        values = list(terminator.values)
        rewriter.erase_op(terminator)
        rewriter.inline_block(block, InsertPoint.before(op))
        rewriter.replace_op(op, [], values)


@dataclass(frozen=True)
class FoldConstantIfPass(GraphPatternPass):
    """Replace an If on a constant condition by the branch it takes."""

    name = "fold-constant-if"
    patterns = (FoldConstantIf,)


def _defined_outside(value: SSAValue, loop: graph.LoopOp) -> bool:
    owner = value.owner
    op = owner.parent_op() if isinstance(owner, Block) else owner
    return op is not None and op is not loop and not loop.is_ancestor(op)


class HoistLoopInvariants(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.LoopOp, rewriter: PatternRewriter) -> None:
        count = op.iteration_count()
        if count is None or count < 1:
            return
        # one op per match: the greedy driver comes back for what it fed
        inner = next((o for o in op.body.block.ops if isinstance(o, graph.GraphOp)
                      and not o.regions and all(_defined_outside(v, op) for v in o.operands)),
                     None)
        if inner is not None:
            inner.detach()
            rewriter.insert(inner, InsertPoint.before(op))


@dataclass(frozen=True)
class HoistLoopInvariantsPass(GraphPatternPass):
    """Move loop-invariant graph ops out of loops that run at least once."""

    name = "hoist-loop-invariants"
    patterns = (HoistLoopInvariants,)


__all__ = ["FoldConstantIfPass", "HoistLoopInvariantsPass"]
