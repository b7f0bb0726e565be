"""`convert-scf-to-cf-with-while`: xDSL's `convert-scf-to-cf` plus the `scf.while` lowering
it lacks (xDSL 0.74 lowers only scf.if, scf.for and scf.index_switch).

    %r = scf.while (%a = %init) : (i64) -> i64 {
      ... scf.condition(%go) %a : i64
    } do {
    ^bb0(%a2: i64):
      ... scf.yield %next : i64
    }
  becomes, as in MLIR's SCFToControlFlow:
      cf.br ^before(%init)
    ^before(%a):            // the condition region's blocks
      ... cf.cond_br %go, ^after(%a), ^end(%a)
    ^after(%a2):            // the body region's blocks
      ... cf.br ^before(%next)
    ^end(%r):

graph.loop's run-time-terminated loops (lowering/graph_to_loops/control_flow.py) are
`scf.while` in the entry function. All four patterns run in one walk, so regions nested in
one another lower in any order.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin, cf, scf
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import BlockInsertPoint, InsertPoint
from xdsl.transforms.convert_scf_to_cf import ForLowering, IfLowering, SwitchLowering


class WhileLowering(RewritePattern):
    """`scf.while` -> a condition block and body blocks joined by branches."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: scf.WhileOp, rewriter: PatternRewriter) -> None:
        init_block = op.parent_block()
        if init_block is None:
            return
        end_block = init_block.split_before(op)
        for result in op.res:
            arg = end_block.insert_arg(result.type, len(end_block.args))
            result.replace_all_uses_with(arg)
        before_first = op.before_region.first_block
        after_first = op.after_region.first_block
        assert before_first is not None and after_first is not None
        before_last, after_last = op.before_region.last_block, op.after_region.last_block
        assert before_last is not None and after_last is not None
        condition = before_last.last_op
        yield_ = after_last.last_op
        assert isinstance(condition, scf.ConditionOp) and isinstance(yield_, scf.YieldOp)
        rewriter.inline_region(op.before_region, BlockInsertPoint.before(end_block))
        rewriter.inline_region(op.after_region, BlockInsertPoint.before(end_block))
        rewriter.insert_op(cf.BranchOp(before_first, *op.arguments),
                           InsertPoint.at_end(init_block))
        rewriter.replace_op(condition, cf.ConditionalBranchOp(
            condition.condition, after_first, condition.args, end_block, condition.args))
        rewriter.replace_op(yield_, cf.BranchOp(before_first, *yield_.operands))
        rewriter.erase_op(op)


@dataclass(frozen=True)
class ConvertScfToCfWithWhilePass(ModulePass):
    """Lower scf.if, scf.for, scf.index_switch and scf.while to cf branches."""

    name = "convert-scf-to-cf-with-while"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        PatternRewriteWalker(GreedyRewritePatternApplier(
            [SwitchLowering(), IfLowering(), ForLowering(), WhileLowering()])).rewrite_module(op)


__all__ = ["ConvertScfToCfWithWhilePass", "WhileLowering"]
