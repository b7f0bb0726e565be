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


ON_VECTORS = frozenset({"relu", "clip", "sigmoid", "silu", "gelu", "gelu_tanh"})
"""Epilogue activations the GEMM and depthwise kernels apply to their vector registers before
the store (`clamp_vectors`): relu and clip (a max / min against constants, nearly free),
sigmoid, silu and GELU (their formulas, vector by vector, on `_VectorsOps`: exp, tanh and
erf become inline polynomials on vectors, lowering/to_llvm/polynomial.py). Run per element
after the store, LLVM left the depthwise kernel's loop scalar and EfficientNet-B0 took 17.8
ms against 15.6 on vectors (Zen 3, T=1), and ConvNeXt-T's GELUs after its Linears took
35 ms more than as the separate kernel (on vectors: 4.6 ms less than it). hard_swish
(MobileNetV3) runs per element after the store (`activate`), in a loop over the tile that
LLVM vectorizes, level with vectors."""


def on_vectors(activation: str | None) -> bool:
    """Whether the epilogue activation named `activation` runs on vector registers."""
    return activation in ON_VECTORS


CLAMPS = frozenset({"relu", "clip"})
"""Applied op by op to the whole tile (each a max / min per register). The other formulas
run vector by vector: op by op over a 6 x 16 tile, exp's steps kept 12 to 24 vectors live
and spilled on AVX2's 16 registers (EfficientNet's stem conv with silu: 788 -> 587 us,
Zen 3)."""

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
    """The ops of an activation's formula over a list of float vectors of type `vtype`, each
    constant splatted once."""

    def __init__(self, kb: KernelBuilder, vtype: VectorType):
        self.kb, self.vtype = kb, vtype
        self.splats: dict[float, SSAValue] = {}

    def constant(self, value: float, like: Vectors) -> SSAValue:
        if value not in self.splats:
            self.splats[value] = self.kb.vsplat(
                self.kb.constant(value, self.vtype.get_element_type()), self.vtype)
        return self.splats[value]

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
    formula, ops = ACTIVATIONS[act].formula, _VectorsOps(kb, vtype)
    if act in CLAMPS:
        return formula(ops, list(values), alpha, beta)
    return [formula(ops, [v], alpha, beta)[0] for v in values]
