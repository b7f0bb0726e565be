"""exp, erf and tanh on f32 as inline LLVM arithmetic that the loop vectorizer can widen.

`llvm.exp.f32`, `llvm.tanh.f32` and `erff` end up as calls to libm's scalar `expf`,
`tanhf`, `erff`: LLVM has no vector library configured here, so a loop containing one stays
scalar. convert-math-to-llvm instead expands `math.exp/erf/tanh` on f32 (scalars or 1-D
vectors) into the multiplies, FMAs, selects and integer bit operations below, as MLIR's
`math-polynomial-approximation` does, and the loop around them vectorizes.

Accuracy against float64 `math.exp/erf/tanh` on f32 inputs (tests/unit/test_polynomial.py):
- exp: Cephes expf: n = round(x log2 e), r = x - n ln 2 (ln 2 in two parts), degree-6
  polynomial; 2^n as two exact power-of-two factors, so subnormal results and results up to
  FLT_MAX are right. Max rel error 2e-7 where the result is normal; inf above 88.72,
  0 below -103.97, NaN kept.
- erf: Eigen/XLA's odd rational x P(x^2) / Q(x^2) on [-4, 4] (+-1 in f32 outside);
  max rel error 4.3e-7.
- tanh: Eigen/XLA's odd rational x P(x^2) / Q(x^2) on [-7.905, 7.905] (+-1 outside);
  max rel error 3.5e-7.
"""

from __future__ import annotations

from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float32Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    VectorType,
    i32,
)
from xdsl.ir import Attribute, Operation, SSAValue

from onnxc.lowering.to_llvm import llvm_ext
from onnxc.lowering.to_llvm.type_conversion import call_intrinsic


def is_f32(t: Attribute) -> bool:
    """Whether `t` is f32 or a 1-D vector of f32 (what the expansions handle)."""
    if isinstance(t, VectorType):
        return len(t.get_shape()) == 1 and isinstance(t.element_type, Float32Type)
    return isinstance(t, Float32Type)


class _Emitter:
    """Collects the LLVM ops of one expansion, for values of float type `t`.

    Only ops that take vectors in xDSL's `llvm` dialect are used (no fcmp / select, whose
    xDSL forms are scalar-only): clamping uses the NaN-propagating `llvm.maximum/minimum`,
    so a NaN input flows through the arithmetic to a NaN result.
    """

    def __init__(self, t: Attribute):
        self.t = t
        self.lanes = t.get_shape()[0] if isinstance(t, VectorType) else None
        self.it: Attribute = VectorType(i32, [self.lanes]) if self.lanes else i32
        self.ops: list[Operation] = []

    def emit(self, op: Operation) -> SSAValue:
        self.ops.append(op)
        return op.results[0]

    def _const(self, value: float, t: Attribute, scalar: Attribute) -> SSAValue:
        if self.lanes:
            attr = DenseIntOrFPElementsAttr.from_list(t, [value] * self.lanes)  # type: ignore[arg-type]
        elif isinstance(scalar, IntegerType):
            attr = IntegerAttr(int(value), scalar)
        else:
            attr = FloatAttr(float(value), scalar)  # type: ignore[arg-type]
        return self.emit(llvm.ConstantOp(attr, t))

    def c(self, value: float) -> SSAValue:
        scalar = self.t.element_type if isinstance(self.t, VectorType) else self.t
        return self._const(float(value), self.t, scalar)

    def ic(self, value: int) -> SSAValue:
        return self._const(int(value), self.it, i32)

    def mul(self, a, b):
        return self.emit(llvm.FMulOp(a, b))

    def add(self, a, b):
        return self.emit(llvm.FAddOp(a, b))

    def div(self, a, b):
        return self.emit(llvm.FDivOp(a, b))

    def fma(self, a, b, c):
        return self.emit(llvm.FMAOp(a, b, c))

    def intrinsic(self, name: str, *args: SSAValue) -> SSAValue:
        return self.emit(call_intrinsic(name, list(args), self.t))

    def poly(self, x, coefficients: list[float]) -> SSAValue:
        """Horner's scheme, coefficients from the highest power down."""
        acc = self.c(coefficients[0])
        for value in coefficients[1:]:
            acc = self.fma(acc, x, self.c(value))
        return acc

    def odd_rational(self, x, bound: float, numerator: list[float], denominator: list[float]):
        """x P(x^2) / Q(x^2) on x clamped to [-bound, bound]."""
        xc = self.clamp(x, -bound, bound)
        x2 = self.mul(xc, xc)
        return self.div(self.mul(xc, self.poly(x2, numerator)), self.poly(x2, denominator))

    def clamp(self, x, lo: float, hi: float) -> SSAValue:
        return self.intrinsic("llvm.minimum", self.intrinsic("llvm.maximum", x, self.c(lo)),
                              self.c(hi))

    def pow2(self, n) -> SSAValue:
        """2^n for an i32 (vector) n whose result is a normal float."""
        biased = self.emit(llvm.AddOp(n, self.ic(127)))
        return self.emit(llvm.BitcastOp(self.emit(llvm.ShlOp(biased, self.ic(23))), self.t))


def expand_exp(x: SSAValue) -> tuple[list[Operation], SSAValue]:
    b = _Emitter(x.type)
    xc = b.clamp(x, -104.0, 88.8)
    n_float = b.intrinsic("llvm.roundeven", b.mul(xc, b.c(1.4426950408889634)))
    r = b.fma(n_float, b.c(-0.693359375), xc)  # n * ln2_hi is exact
    r = b.fma(n_float, b.c(2.12194440e-4), r)
    p = b.poly(r, [1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
                   1.6666665459e-1, 5.0000001201e-1])
    y = b.fma(p, b.mul(r, r), b.add(r, b.c(1.0)))
    # n is NaN only when x is (y is NaN then); maxnum makes the conversion defined
    n_defined = b.emit(llvm.VectorFMaxOp(n_float, b.c(-150.0)))
    n = b.emit(llvm_ext.FPToSIOp(n_defined, b.it))
    # 2^n = 2^(n >> 1) * 2^(n - (n >> 1)): both factors normal for n in [-150, 129]
    half = b.emit(llvm.AShrOp(n, b.ic(1)))
    rest = b.emit(llvm.SubOp(n, half))
    return b.ops, b.mul(b.mul(y, b.pow2(half)), b.pow2(rest))


def expand_erf(x: SSAValue) -> tuple[list[Operation], SSAValue]:
    b = _Emitter(x.type)
    result = b.odd_rational(
        x, 4.0,
        [-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06,
         -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
         -1.60960333262415e-02],
        [-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
         -7.37332916720468e-03, -1.42647390514189e-02])
    return b.ops, result


def expand_tanh(x: SSAValue) -> tuple[list[Operation], SSAValue]:
    b = _Emitter(x.type)
    result = b.odd_rational(
        x, 7.90531110763549805,
        [-2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11,
         5.12229709037114e-08, 1.48572235717979e-05, 6.37261928875436e-04,
         4.89352455891786e-03],
        [1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03,
         4.89352518554385e-03])
    return b.ops, result
