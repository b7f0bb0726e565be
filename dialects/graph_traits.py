"""What a graph op's kernel can do that a pass decides by: op traits, declared on the op.

A pass may not import the lowering (the import layers of pyproject.toml), yet some of its
decisions depend on what an op's kernel takes: whether widen-half-precision leaves an f16
op as it is, which ops assign-layout lets NHWC flow through, which ops make a
batch-separable model compile per sample. Those facts are declared where the op is, as xDSL
op traits in its `traits = traits_def(...)` (MLIR's way: `Pure`, `ConstantLike`), and every
table is derived from `op.has_trait(...)`. tests/unit/test_op_traits.py ties each trait to
the kernel that makes it true (the kernel rules of graph_to_loops, and one compile per op).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.traits import OpTrait


class HalfKernel(OpTrait):
    """Its kernel computes on f16 operands and results as they are (elementwise arithmetic,
    tests and select: LLVM computes each half op in f32 and rounds once; a fused chain runs
    the same scalar code per step). widen-half-precision leaves it in f16; bf16 is widened."""


class AnyElementKernel(OpTrait):
    """Its kernel converts, views or copies elements without arithmetic, so it takes any
    element type, f16 and bf16 too: widen-half-precision leaves it alone. (Pad is not one:
    its fill constant is a float, which bf16's i16 storage cannot take.)"""


class QuantizationKernel(OpTrait):
    """A quantization op: its kernel reads half scales itself; widen-half-precision leaves
    it alone."""


class ElementwiseMap(OpTrait):
    """A one-operand op whose kernel maps the buffer element by element: correct in any
    layout and with symbolic sizes, so assign-layout lets NHWC flow through it. (Identity
    and Dropout are not: they lower to views shaped by the logical shape.)"""


class BroadcastingElementwise(OpTrait):
    """A broadcasting elementwise op: its kernel broadcasts the buffers' physical shapes,
    which is right when every operand is rank 4 in one layout (assign-layout's NHWC), with
    symbolic sizes too."""


@dataclass(frozen=True)
class NHWCKernel(OpTrait):
    """It has a kernel of its own for rank-4 activations in NHWC (assign-layout: convs
    start NHWC, pools, concat, split and channel shuffle let it flow)."""

    symbolic: bool = False
    """that kernel also takes symbolic sizes (a dynamic-resolution CNN's H and W)"""


class StaticSizesKernel(OpTrait):
    """Its kernel is built for static sizes (register tiles of image sizes, a recurrence's
    scratch sized by its batch): a batch-separable model with it compiles for one sample and
    runs once per sample, not with its batch symbolic (onnxc/compilation.py)."""


__all__ = ["AnyElementKernel", "BroadcastingElementwise", "ElementwiseMap", "HalfKernel",
           "NHWCKernel", "QuantizationKernel", "StaticSizesKernel"]
