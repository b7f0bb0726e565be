"""convert-cf-to-llvm: `cf.br` / `cf.cond_br` to `llvm.br` / `llvm.cond_br`.

Block arguments are the phis of the CFG that `convert-scf-to-cf` builds from loops (the
induction variable and `iter_args`), so converting a branch also gives its destination blocks'
arguments their LLVM types (`index` -> `i64`); ops not yet converted read them through a cast:

    cf.br ^bb1(%c0 : index)           llvm.br ^bb1(%c0' : i64)
  ^bb1(%i: index):              ->  ^bb1(%i: i64):
                                      %i' = builtin.unrealized_conversion_cast %i : i64 to index
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import cf, llvm
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from onnxc.lowering.to_llvm.type_conversion import (
    ConversionPass,
    convert_block_arguments,
    converted,
)


class LowerBranch(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: cf.BranchOp, rewriter: PatternRewriter, /):
        args = converted(rewriter, op, op.arguments)
        convert_block_arguments(rewriter, op.successor)
        rewriter.replace(op, llvm.BrOp(op.successor, *args))


class LowerCondBranch(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: cf.ConditionalBranchOp, rewriter: PatternRewriter, /):
        (cond,) = converted(rewriter, op, [op.cond])
        then_args = converted(rewriter, op, op.then_arguments)
        else_args = converted(rewriter, op, op.else_arguments)
        convert_block_arguments(rewriter, op.then_block)
        convert_block_arguments(rewriter, op.else_block)
        new = llvm.CondBrOp(cond, op.then_block, then_args, op.else_block, else_args)
        rewriter.replace(op, new)


CF_TO_LLVM_PATTERNS: tuple[RewritePattern, ...] = (LowerBranch(), LowerCondBranch())


@dataclass(frozen=True)
class ConvertCfToLLVMPass(ConversionPass):
    """Lower unstructured control flow to LLVM branches, converting block argument types."""

    name = "convert-cf-to-llvm"
    patterns = CF_TO_LLVM_PATTERNS
