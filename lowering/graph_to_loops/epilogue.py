"""Activation epilogues (dialects/graph_epilogue) inside the conv, gemm and matmul kernels.

The producing kernel calls `activate` on each finished output element (or on a row or
plane it has just written, while it is still in cache), so a fused activation costs no
separate kernel and no extra pass over memory.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import VectorType
from xdsl.ir import Operation, SSAValue

from onnxc.dialects.activations import ACTIVATIONS
from onnxc.dialects.graph_epilogue import epilogue_of
from onnxc.errors import LoweringError
from onnxc.lowering.graph_to_loops.activation_ops import emit_activation
from onnxc.lowering.graph_to_loops.element_types import is_float
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder


def activate(kb: KernelBuilder, op: Operation, x: SSAValue) -> SSAValue:
    """`op`'s epilogue applied to the scalar `x` (x itself when there is none): its
    activation's formula (dialects/activations.py)."""
    epilogue = epilogue_of(op)
    if epilogue is None:
        return x
    act, alpha, beta = epilogue
    activation = ACTIVATIONS.get(act)
    if not (activation is not None and activation.integer) and not is_float(x.type):
        raise LoweringError(f"{op.name}: activation '{act}' needs a float element type")
    if activation is None:
        raise LoweringError(f"{op.name}: no lowering for activation '{act}'")
    return emit_activation(kb, activation, x, alpha, beta)


def activate_in_place(
    kb: KernelBuilder,
    op: Operation,
    mem: SSAValue,
    lead: Sequence[Index],
    bounds: Sequence[int | tuple[Index, Index]],
) -> None:
    """mem[*lead, i...] = activate(mem[*lead, i...]) over `bounds`; nothing without epilogue."""
    if epilogue_of(op) is None:
        return

    def body(ivs: list[Index]) -> None:
        at = [*lead, *ivs]
        kb.store(activate(kb, op, kb.load(mem, at)), mem, at)

    kb.nest(bounds, body)


VECTOR_CALLS = frozenset({"max", "min", "add", "sub", "mul", "div", "neg", "muladd", "exp",
                          "tanh", "erf"})
"""The formula ops `_VectorsOps` has: exp, tanh and erf become inline polynomials on vectors
(lowering/to_llvm/polynomial.py); the compares and selects of leaky_relu are not among them."""

ON_VECTORS = frozenset(name for name, a in ACTIVATIONS.items() if a.calls <= VECTOR_CALLS)
"""Epilogue activations the GEMM and depthwise kernels apply to their vector registers before
the store (`clamp_vectors`): relu and clip (a max / min against constants, nearly free),
and the formulas of sigmoid, tanh, hard_swish, silu and gelu. Run per element after the
store instead, LLVM left their loop scalar: an EfficientNet 1x1 conv with a silu epilogue
took 1.8 ms where the conv and a vectorized elementwise kernel took 0.65 + 0.87 (Zen 3).
The others (leaky_relu) run per element after it (`activate`)."""


def on_vectors(activation: str | None) -> bool:
    """Whether the epilogue activation named `activation` runs on vector registers."""
    return activation in ON_VECTORS


Vectors = list[SSAValue] | SSAValue
"""A formula's value over the tile: one vector per register, or one splatted constant."""


def _binary(cls: type[Operation]):
    """A formula's binary op `cls` (an arith float op) over vectors."""
    def apply(self: _VectorsOps, a: Vectors, b: Vectors) -> list[SSAValue]:
        return self.each(lambda x, y: self.kb.float_op(cls, x, y), a, b)
    return apply


def _unary(cls: type[Operation]):
    """A formula's unary op `cls` (arith.negf, math.exp ...) over vectors."""
    def apply(self: _VectorsOps, a: Vectors) -> list[SSAValue]:
        return self.each(lambda x: self.kb.insert(cls(x)), a)
    return apply


class _VectorsOps:
    """The ops of an activation's formula over a list of float vectors of type `vtype`: each
    op applied to every vector before the next op, each constant splatted once."""

    def __init__(self, kb: KernelBuilder, vtype: VectorType):
        self.kb, self.vtype = kb, vtype

    def constant(self, value: float, like: Vectors) -> SSAValue:
        return self.kb.vsplat(self.kb.constant(value, self.vtype.get_element_type()), self.vtype)

    def each(self, fn, *args: Vectors) -> list[SSAValue]:
        """fn over the vectors of the lists, a splat standing for every one."""
        count = max(len(a) for a in args if isinstance(a, list))
        return [fn(*(a[i] if isinstance(a, list) else a for a in args)) for i in range(count)]

    def muladd(self, a: Vectors, b: Vectors, c: Vectors) -> list[SSAValue]:
        return self.each(self.kb.vfma, a, b, c)

    max, min = _binary(arith.MaximumfOp), _binary(arith.MinimumfOp)
    add, sub = _binary(arith.AddfOp), _binary(arith.SubfOp)
    mul, div = _binary(arith.MulfOp), _binary(arith.DivfOp)
    neg, exp = _unary(arith.NegfOp), _unary(math.ExpOp)
    tanh, erf = _unary(math.TanhOp), _unary(math.ErfOp)


def clamp_vectors(kb: KernelBuilder, op: Operation, values: list[SSAValue],
                  vtype: VectorType) -> list[SSAValue]:
    """`op`'s epilogue, when it runs on vectors (ON_VECTORS), on float vectors of type
    `vtype`: its formula (dialects/activations.py) over the list; `values` unchanged for
    other activations, which the kernels apply per element."""
    epilogue = epilogue_of(op)
    if epilogue is None or not on_vectors(epilogue[0]) or not values:
        return values
    act, alpha, beta = epilogue
    return ACTIVATIONS[act].formula(_VectorsOps(kb, vtype), list(values), alpha, beta)
