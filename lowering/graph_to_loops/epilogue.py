"""Activation epilogues (dialects/graph_epilogue) inside the conv, gemm and matmul kernels.

The producing kernel calls `activate` on each finished output element (or on a row or
plane it has just written, while it is still in cache), so a fused activation costs no
separate kernel and no extra pass over memory.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith
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


ON_VECTORS = frozenset({"relu", "clip"})
"""Epilogue activations the GEMM and depthwise kernels apply to their vector registers before
the store (`clamp_vectors`: a max / min against constants, exact and nearly free there); the
others run per element after it (`activate`)."""


def on_vectors(activation: str | None) -> bool:
    """Whether the epilogue activation named `activation` runs on vector registers."""
    return activation in ON_VECTORS


class _VectorsOps:
    """The ops of a clamp's formula over a list of float vectors of type `vtype`: each op
    applied to every vector before the next op, each constant splatted once."""

    def __init__(self, kb: KernelBuilder, vtype: VectorType):
        self.kb, self.vtype = kb, vtype

    def constant(self, value: float, like: list[SSAValue]) -> SSAValue:
        return self.kb.vsplat(self.kb.constant(value, self.vtype.get_element_type()), self.vtype)

    def max(self, values: list[SSAValue], bound: SSAValue) -> list[SSAValue]:
        return [self.kb.float_op(arith.MaximumfOp, a, bound) for a in values]

    def min(self, values: list[SSAValue], bound: SSAValue) -> list[SSAValue]:
        return [self.kb.float_op(arith.MinimumfOp, a, bound) for a in values]


def clamp_vectors(kb: KernelBuilder, op: Operation, values: list[SSAValue],
                  vtype: VectorType) -> list[SSAValue]:
    """`op`'s relu or clip epilogue (ON_VECTORS) on float vectors of type `vtype`: its
    formula (dialects/activations.py) over the list; `values` unchanged for other
    activations, which the kernels apply per element."""
    epilogue = epilogue_of(op)
    if epilogue is None or not on_vectors(epilogue[0]):
        return values
    act, alpha, beta = epilogue
    return ACTIVATIONS[act].formula(_VectorsOps(kb, vtype), list(values), alpha, beta)
