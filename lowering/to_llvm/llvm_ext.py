"""`llvmx`: the LLVM instructions xDSL 0.74's `llvm` dialect lacks and our lowering needs.

Upstream MLIR has `llvm.fptosi`, `llvm.fptoui` and `llvm.uitofp`; xDSL 0.74 does not, and
defining ops under xDSL's `llvm` name would mean patching its dialect. These ops mirror the
upstream ones (same operands, same syntax) under our own prefix; `translate.py` emits the
matching LLVM instruction for each.

    %i = llvmx.fptosi %x : f32 to i32
"""

from __future__ import annotations

from xdsl.dialects.llvm import GenericCastOp
from xdsl.ir import Dialect
from xdsl.irdl import irdl_op_definition


@irdl_op_definition
class FPToSIOp(GenericCastOp):
    """Float to signed integer, rounding toward zero (out-of-range values give poison)."""

    name = "llvmx.fptosi"


@irdl_op_definition
class FPToUIOp(GenericCastOp):
    """Float to unsigned integer, rounding toward zero (out-of-range values give poison)."""

    name = "llvmx.fptoui"


@irdl_op_definition
class UIToFPOp(GenericCastOp):
    """Unsigned integer to float, rounding to nearest."""

    name = "llvmx.uitofp"


LLVMX = Dialect("llvmx", [FPToSIOp, FPToUIOp, UIToFPOp])
