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

from onnxc.dialects.graph_epilogue import epilogue_of
from onnxc.errors import LoweringError
from onnxc.lowering.graph_to_loops.fused import gelu_scalar
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder, is_float


def activate(kb: KernelBuilder, op: Operation, x: SSAValue) -> SSAValue:
    """`op`'s epilogue applied to the scalar `x` (x itself when there is none)."""
    epilogue = epilogue_of(op)
    if epilogue is None:
        return x
    act, alpha, beta = epilogue
    t = x.type
    if act != "relu" and act != "clip" and not is_float(t):
        raise LoweringError(f"{op.name}: activation '{act}' needs a float element type")

    def c(v: float) -> SSAValue:
        return kb.constant(v if is_float(t) else int(v), t)

    if act == "relu":
        return kb.max(x, c(0))
    if act == "clip":
        if alpha is not None:
            x = kb.max(x, c(alpha))
        if beta is not None:
            x = kb.min(x, c(beta))
        return x
    if act == "leaky_relu":
        return kb.select(kb.less_than(x, c(0.0)), kb.mul(x, c(alpha)), x)
    if act == "sigmoid":
        e = kb.insert(math.ExpOp(kb.insert(arith.NegfOp(x))))
        return kb.div(c(1.0), kb.add(c(1.0), e))
    if act == "tanh":
        return kb.insert(math.TanhOp(x))
    if act == "hard_swish":
        gate = kb.min(kb.max(kb.muladd(c(alpha), x, c(beta)), c(0.0)), c(1.0))
        return kb.mul(x, gate)
    if act in ("gelu", "gelu_tanh"):
        return gelu_scalar(kb, x, "tanh" if act == "gelu_tanh" else "none")
    raise LoweringError(f"{op.name}: no lowering for activation '{act}'")


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


def clamp_vectors(kb: KernelBuilder, op: Operation, values: list[SSAValue],
                  vtype: VectorType) -> list[SSAValue]:
    """`op`'s relu or clip epilogue on float vectors of type `vtype` (`values` unchanged for
    other activations, which the kernels apply per element)."""
    epilogue = epilogue_of(op)
    if epilogue is None or epilogue[0] not in ("relu", "clip"):
        return values
    _, lo, hi = epilogue
    if epilogue[0] == "relu":
        lo, hi = 0.0, None
    element = vtype.get_element_type()
    if lo is not None:
        low = kb.vsplat(kb.constant(lo, element), vtype)
        values = [kb.float_op(arith.MaximumfOp, a, low) for a in values]
    if hi is not None:
        high = kb.vsplat(kb.constant(hi, element), vtype)
        values = [kb.float_op(arith.MinimumfOp, a, high) for a in values]
    return values
