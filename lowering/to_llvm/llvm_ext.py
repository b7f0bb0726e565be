"""`llvmx`: the LLVM instructions xDSL 0.74's `llvm` dialect lacks and our lowering needs.

Upstream MLIR has `llvm.fptosi`, `llvm.fptoui` and `llvm.uitofp`, and its `llvm.fcmp` and
`llvm.select` take vectors; xDSL 0.74 has none of the first three, and its compares, selects
(and arith's) are scalar only. Defining ops under xDSL's `llvm` name would mean patching its
dialect. These ops mirror the upstream ones under our own prefix; `translate.py` emits the
matching LLVM instruction for each (the direct walk translates them the same way).

    %i = llvmx.fptosi %x : f32 to i32
    %m = "llvmx.vfcmp"(%a, %b) <{predicate = "ole"}> : (vector<16xf32>, vector<16xf32>) -> vector<16xi1>
    %v = "llvmx.vselect"(%m, %a, %b) : (vector<16xi1>, vector<16xf32>, vector<16xf32>) -> vector<16xf32>
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import StringAttr, VectorType, i1
from xdsl.dialects.llvm import GenericCastOp
from xdsl.ir import Dialect, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    VarConstraint,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException


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


VECTOR_FCMP_PREDICATES = ("oeq", "ogt", "oge", "olt", "ole", "one", "ord",
                          "ueq", "ugt", "uge", "ult", "ule", "une", "uno")


@irdl_op_definition
class VectorFCmpOp(IRDLOperation):
    """Lane-wise float compare of two vectors, a vector of i1 (LLVM's `fcmp` on vectors)."""

    name = "llvmx.vfcmp"

    T: ClassVar = VarConstraint("T", VectorType.constr())
    lhs = operand_def(T)
    rhs = operand_def(T)
    res = result_def(VectorType)
    predicate = prop_def(StringAttr)
    traits = traits_def(Pure())

    def __init__(self, lhs: SSAValue, rhs: SSAValue, predicate: str):
        t = lhs.type
        assert isinstance(t, VectorType)
        super().__init__(operands=[lhs, rhs], result_types=[VectorType(i1, t.get_shape())],
                         properties={"predicate": StringAttr(predicate)})

    def verify_(self) -> None:
        if self.predicate.data not in VECTOR_FCMP_PREDICATES:
            raise VerifyException(f"llvmx.vfcmp: unknown predicate '{self.predicate.data}'")
        lhs, res = self.lhs.type, self.res.type
        assert isinstance(lhs, VectorType) and isinstance(res, VectorType)
        if res.element_type != i1 or res.get_shape() != lhs.get_shape():
            raise VerifyException(f"llvmx.vfcmp: result must be {lhs.get_shape()} of i1")


@irdl_op_definition
class VectorSelectOp(IRDLOperation):
    """Lane-wise choice between two vectors by a vector of i1 (LLVM's `select`)."""

    name = "llvmx.vselect"

    T: ClassVar = VarConstraint("T", VectorType.constr())
    cond = operand_def(VectorType)
    lhs = operand_def(T)
    rhs = operand_def(T)
    res = result_def(T)
    traits = traits_def(Pure())

    def __init__(self, cond: SSAValue, lhs: SSAValue, rhs: SSAValue):
        super().__init__(operands=[cond, lhs, rhs], result_types=[lhs.type])

    def verify_(self) -> None:
        cond, lhs = self.cond.type, self.lhs.type
        assert isinstance(cond, VectorType) and isinstance(lhs, VectorType)
        if cond.element_type != i1 or cond.get_shape() != lhs.get_shape():
            raise VerifyException(f"llvmx.vselect: condition must be {lhs.get_shape()} of i1")


LLVMX = Dialect("llvmx", [FPToSIOp, FPToUIOp, UIToFPOp, VectorFCmpOp, VectorSelectOp])
