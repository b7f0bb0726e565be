"""OpTypeDispatchApplier (pass_manager/pattern_dispatch.py) tries on an op only the patterns that
declare its type, and rewrites exactly as xDSL's greedy applier does."""

from __future__ import annotations

from xdsl.dialects import arith, test
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i32
from xdsl.ir import Operation
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from onnxc.lowering.to_llvm.arith import ARITH_TO_LLVM_PATTERNS
from onnxc.lowering.to_llvm.cf import CF_TO_LLVM_PATTERNS
from onnxc.lowering.to_llvm.func import FUNC_TO_LLVM_PATTERNS
from onnxc.lowering.to_llvm.math import MATH_TO_LLVM_PATTERNS, ExpandPolynomial
from onnxc.lowering.to_llvm.memref import MEMREF_TO_LLVM_PATTERNS
from onnxc.lowering.to_llvm.vector import VECTOR_TO_LLVM_PATTERNS
from onnxc.pass_manager.pattern_dispatch import OpTypeDispatchApplier, op_types_of


class AddToSub(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.AddiOp, rewriter: PatternRewriter, /) -> None:
        rewriter.replace(op, arith.SubiOp(op.lhs, op.rhs))


class MulOrSubToAnd(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.MuliOp | arith.SubiOp, rewriter: PatternRewriter,
                          /) -> None:
        rewriter.replace(op, arith.AndIOp(op.lhs, op.rhs))


class CountsEveryOp(RewritePattern):
    """Undeclared: must be tried on every op."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        self.seen.append(op.name)


def test_declared_types_are_read_from_the_decorated_method() -> None:
    assert op_types_of(AddToSub()) == (arith.AddiOp,)
    assert op_types_of(MulOrSubToAnd()) == (arith.MuliOp, arith.SubiOp)
    assert op_types_of(CountsEveryOp()) is None


def test_every_llvm_conversion_pattern_declares_its_op_types() -> None:
    """An undeclared pattern would be tried on all ~100k ops of a large model."""
    patterns = (*ARITH_TO_LLVM_PATTERNS, ExpandPolynomial(), *MATH_TO_LLVM_PATTERNS,
                *VECTOR_TO_LLVM_PATTERNS, *MEMREF_TO_LLVM_PATTERNS, *CF_TO_LLVM_PATTERNS,
                *FUNC_TO_LLVM_PATTERNS)
    assert [type(p).__name__ for p in patterns if op_types_of(p) is None] == []


def _module() -> ModuleOp:
    one = arith.ConstantOp(IntegerAttr(1, i32))
    add = arith.AddiOp(one, one)
    mul = arith.MuliOp(add, one)
    use = test.TestOp([mul.result])
    return ModuleOp([one, add, mul, use])


def _rewritten(applier: RewritePattern) -> str:
    module = _module()
    PatternRewriteWalker(applier, apply_recursively=True).rewrite_module(module)
    return str(module)


def test_rewrites_match_the_greedy_applier_and_undeclared_patterns_see_every_op() -> None:
    counter = CountsEveryOp()
    dispatched = _rewritten(OpTypeDispatchApplier([counter, AddToSub(), MulOrSubToAnd()]))
    greedy = _rewritten(GreedyRewritePatternApplier([AddToSub(), MulOrSubToAnd()]))
    assert dispatched == greedy
    assert "arith.addi" not in dispatched and "arith.muli" not in dispatched
    assert dispatched.count("arith.andi") == 2  # the add became a sub, then an and
    assert {"arith.constant", "arith.addi", "arith.muli", "test.op"} <= set(counter.seen)


def test_first_declared_pattern_wins_in_list_order() -> None:
    text = _rewritten(OpTypeDispatchApplier([MulOrSubToAnd(), AddToSub()]))
    assert text == _rewritten(GreedyRewritePatternApplier([MulOrSubToAnd(), AddToSub()]))


def test_dead_ops_are_erased_only_with_dce() -> None:
    module = ModuleOp([arith.ConstantOp(IntegerAttr(7, i32))])
    PatternRewriteWalker(OpTypeDispatchApplier([], dce_enabled=False)).rewrite_module(module)
    assert "arith.constant" in str(module)
    PatternRewriteWalker(OpTypeDispatchApplier([], dce_enabled=True)).rewrite_module(module)
    assert "arith.constant" not in str(module)
