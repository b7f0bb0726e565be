"""Typed scalar math of kernel bodies: one method per operation whatever the element type.

`kb.add(a, b)` is `arith.addf` on floats and `arith.addi` on integers, `kb.max` a maximumf, an
`ori` on i1 or a signed / unsigned max, `kb.div` guards an integer divisor that would trap.
`KernelBuilder` (loops.py) inherits these, so kernels written once serve every element type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import IndexType, IntegerType
from xdsl.ir import Attribute, Operation, SSAValue

from onnxc.lowering.graph_to_loops.element_types import is_bool, is_float, is_unsigned, min_value

if TYPE_CHECKING:
    from onnxc.dialects.symbolic_dims import SymDim
    from onnxc.lowering.graph_to_loops.loops import Index


class ScalarMath:
    """The typed scalar math of `KernelBuilder`, which builds it through its own `insert`,
    `constant` and `index`."""

    if TYPE_CHECKING:
        def insert(self, op: Operation) -> SSAValue: ...

        def constant(self, value: float, t: Attribute) -> SSAValue: ...

        def index(self, v: Index | SymDim) -> Index: ...

    def add(self, a: SSAValue, b: SSAValue) -> SSAValue:
        op = arith.AddfOp if is_float(a.type) else arith.AddiOp
        return self.insert(op(a, b))

    def sub(self, a: SSAValue, b: SSAValue) -> SSAValue:
        op = arith.SubfOp if is_float(a.type) else arith.SubiOp
        return self.insert(op(a, b))

    def mul(self, a: SSAValue, b: SSAValue) -> SSAValue:
        op = arith.MulfOp if is_float(a.type) else arith.MuliOp
        return self.insert(op(a, b))

    def div(self, a: SSAValue, b: SSAValue) -> SSAValue:
        if is_float(a.type):
            return self.insert(arith.DivfOp(a, b))
        divide = arith.DivUIOp if is_unsigned(a.type) else arith.DivSIOp
        return self.insert(divide(a, self.safe_divisor(a, b)))

    def safe_divisor(self, a: SSAValue, b: SSAValue) -> SSAValue:
        """`b`, or 1 where integer a / b would trap: b == 0 (the run-time divisor check has
        refused it before the kernel runs) and signed MIN / -1, whose result is then MIN,
        the wrapped quotient, as the remainder is 0. A constant b folds this away."""
        zero, one = self.constant(0, b.type), self.constant(1, b.type)
        trap = self.insert(arith.CmpiOp(b, zero, "eq"))
        if not is_unsigned(b.type):
            minimum = self.constant(min_value(a.type), a.type)
            overflow = self.insert(arith.AndIOp(
                self.insert(arith.CmpiOp(a, minimum, "eq")),
                self.insert(arith.CmpiOp(b, self.constant(-1, b.type), "eq"))))
            trap = self.insert(arith.OrIOp(trap, overflow))
        return self.select(trap, one, b)

    def max(self, a: SSAValue, b: SSAValue) -> SSAValue:
        if is_float(a.type):
            return self.insert(arith.MaximumfOp(a, b))
        if is_bool(a.type):
            return self.insert(arith.OrIOp(a, b))
        return self.insert((arith.MaxUIOp if is_unsigned(a.type) else arith.MaxSIOp)(a, b))

    def min(self, a: SSAValue, b: SSAValue) -> SSAValue:
        if is_float(a.type):
            return self.insert(arith.MinimumfOp(a, b))
        if is_bool(a.type):
            return self.insert(arith.AndIOp(a, b))
        return self.insert((arith.MinUIOp if is_unsigned(a.type) else arith.MinSIOp)(a, b))

    def muladd(self, a: SSAValue, b: SSAValue, c: SSAValue) -> SSAValue:
        """a * b + c, fused for floats."""
        if is_float(a.type):
            return self.insert(math.FmaOp(a, b, c))
        return self.add(self.mul(a, b), c)

    def less_than(self, a: SSAValue, b: SSAValue) -> SSAValue:
        if is_float(a.type):
            return self.insert(arith.CmpfOp(a, b, "olt"))
        return self.insert(arith.CmpiOp(a, b, "ult" if is_unsigned(a.type) else "slt"))

    def select(self, cond: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.insert(arith.SelectOp(cond, a, b))

    def float_to_index(self, v: SSAValue, low: float, high: float | SSAValue) -> SSAValue:
        """A float position (a sample coordinate, a grid size) as an index in [low, high],
        NaN giving `low`: LLVM's fptosi of NaN or of a value out of i64's range is poison,
        and a poison index may address any memory, so data-derived positions go through
        here before they index a buffer. `high` may be a run-time float (a symbolic size
        minus one, at least `low`)."""
        ordered = self.insert(arith.CmpfOp(v, v, "ord"))
        v = self.select(ordered, v, self.constant(low, v.type))
        top = high if isinstance(high, SSAValue) else self.constant(high, v.type)
        v = self.insert(arith.MinimumfOp(self.insert(arith.MaximumfOp(
            v, self.constant(low, v.type))), top))
        as_int = self.insert(arith.FPToSIOp(v, IntegerType(64)))
        return self.insert(arith.IndexCastOp(as_int, IndexType()))

    def to_float(self, i: Index, t: Attribute) -> SSAValue:
        """An index (e.g. a window size, or a SymDim size) as a float of type `t`."""
        i = self.index(i)
        if isinstance(i, int):
            return self.constant(float(i), t)
        as_int = self.insert(arith.IndexCastOp(i, IntegerType(64)))
        return self.insert(arith.SIToFPOp(as_int, t))
