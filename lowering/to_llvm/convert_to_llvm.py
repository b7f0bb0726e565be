"""`convert-to-llvm`: every loops-level dialect's conversion to `llvm` in one rewrite walk.

Like MLIR's `convert-to-llvm`, this gathers the per-dialect patterns (arith, math, vector,
memref, cf, func: each also a pass of its own, lit-tested alone) and applies them together.
The output is the same as running the six passes in a row: each pattern set already copes with
neighbours converted or not (unrealized casts at the seams, removed by
`reconcile-unrealized-casts`). One walker instead of six saves re-walking a whole model's
kernels five more times, about a third of this stage's time on ResNet-50.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.pattern_rewriter import RewritePattern

from onnxc.lowering.to_llvm.arith import ARITH_TO_LLVM_PATTERNS
from onnxc.lowering.to_llvm.cf import CF_TO_LLVM_PATTERNS
from onnxc.lowering.to_llvm.func import FUNC_TO_LLVM_PATTERNS
from onnxc.lowering.to_llvm.math import math_patterns
from onnxc.lowering.to_llvm.memref import MEMREF_TO_LLVM_PATTERNS
from onnxc.lowering.to_llvm.type_conversion import ConversionPass
from onnxc.lowering.to_llvm.vector import VECTOR_TO_LLVM_PATTERNS


@dataclass(frozen=True)
class ConvertToLLVMPass(ConversionPass):
    """Lower arith, math, vector, memref, cf and func to `llvm` in one walk."""

    name = "convert-to-llvm"

    polynomials: bool = True
    """As convert-math-to-llvm's option: f32 exp / erf / tanh expanded inline."""

    def rewrite_patterns(self) -> tuple[RewritePattern, ...]:
        return (
            *ARITH_TO_LLVM_PATTERNS, *math_patterns(self.polynomials), *VECTOR_TO_LLVM_PATTERNS,
            *MEMREF_TO_LLVM_PATTERNS, *CF_TO_LLVM_PATTERNS, *FUNC_TO_LLVM_PATTERNS,
        )
