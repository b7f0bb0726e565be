"""The loops a kernel emits for an activation: dialects/activations.py's formulas over a
KernelBuilder, shared by the elementwise kernels (Relu ... Clip, Softplus, Mish,
ThresholdedRelu), the conv/gemm/matmul epilogues and GELU's.
"""

from __future__ import annotations

from xdsl.dialects import arith, math
from xdsl.ir import SSAValue

from onnxc.dialects.activations import Activation
from onnxc.lowering.graph_to_loops.element_types import is_float
from onnxc.lowering.graph_to_loops.loops import KernelBuilder


class KernelOps:
    """A formula's ops (dialects/activations.py) as a KernelBuilder's: constants cached at the
    kernel's entry, integer-aware arithmetic where the builder has it."""

    def __init__(self, kb: KernelBuilder):
        self.kb = kb
        self.add, self.sub, self.mul, self.div = kb.add, kb.sub, kb.mul, kb.div
        self.max, self.min, self.muladd = kb.max, kb.min, kb.muladd
        self.less_than, self.select = kb.less_than, kb.select

    def constant(self, value: float, like: SSAValue) -> SSAValue:
        t = like.type
        return self.kb.constant(value if is_float(t) else int(value), t)

    def neg(self, x: SSAValue) -> SSAValue:
        if is_float(x.type):
            return self.kb.insert(arith.NegfOp(x))
        return self.kb.insert(arith.SubiOp(self.kb.constant(0, x.type), x))

    def abs(self, x: SSAValue) -> SSAValue:
        return self.kb.insert(math.AbsFOp(x))

    def exp(self, x: SSAValue) -> SSAValue:
        return self.kb.insert(math.ExpOp(x))

    def log1p(self, x: SSAValue) -> SSAValue:
        return self.kb.insert(math.Log1pOp(x))

    def tanh(self, x: SSAValue) -> SSAValue:
        return self.kb.insert(math.TanhOp(x))

    def erf(self, x: SSAValue) -> SSAValue:
        return self.kb.insert(math.ErfOp(x))


def emit_activation(kb: KernelBuilder, activation: Activation, x: SSAValue,
                    alpha: float | None = None, beta: float | None = None) -> SSAValue:
    """`activation` of the scalar `x`, emitted at the builder's insertion point."""
    return activation.formula(KernelOps(kb), x, alpha, beta)
