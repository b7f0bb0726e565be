"""`assign-layout`: decide each activation's memory layout (NCHW or NHWC) for the host.

On a SIMD host, convolutions run as implicit GEMMs over channels-last data (the vector runs
along C), so every rank-4 f32 `graph.conv` / `graph.conv_add` gets NHWC on its input, its
residual and its output (a rank-3 one is first made a 2-D conv over a height of 1:
passes/conv1d_as_2d.py) (weights stay plain: the conv kernel packs them at compile time).
So does a transpose back to channels-first of a channels-last tensor (a view:
`_channels_first_view`). NHWC then flows forward through every op whose kernel is correct
on NHWC operands (the traits ElementwiseMap, BroadcastingElementwise and NHWCKernel the ops
declare, dialects/graph_traits.py): an op runs in NHWC when one of its activation operands
is NHWC. Everything else (Flatten, Reshape, other Transposes, Gemm, model inputs and
outputs, ops without an NHWC kernel) sees plain tensors; fold-layout-converts then makes
a transpose of a conversion a view where the layouts allow (ConvNeXt's channels-last
permute of a conv's output).

Conversions are placed only at those boundaries, one per (value, layout): the conversion sits
right before the value's first user that needs it, and later users share it. Constants are
never converted at run time: an NHWC user gets a new constant stored in NHWC (a rank < 4
constant operand of a broadcasting op is first given leading 1s, so [C, 1, 1] becomes an
NHWC [1, C, 1, 1], physically [1, 1, 1, C]). Conversions that move no bytes (NHWC [N, C, 1, 1]
-> plain) become views (`graph.reshape`). Run fold-layout-converts afterwards to clean up
conversions that were already in the input.

    %y = graph.conv(%x, %w) ...  : (tensor<1x3x8x8xf32>, ...) -> tensor<1x4x8x8xf32>
    %z = graph.relu(%y)          : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    func.return %z
becomes
    %0 = layout.convert %x : tensor<1x3x8x8xf32> -> tensor<1x3x8x8xf32, #layout.spec<"NHWC">>
    %y = graph.conv(%0, %w) ... -> tensor<1x4x8x8xf32, #layout.spec<"NHWC">>
    %z = graph.relu(%y) ... -> tensor<1x4x8x8xf32, #layout.spec<"NHWC">>
    %1 = layout.convert %z : ... #layout.spec<"NHWC">> -> tensor<1x4x8x8xf32>
    func.return %1
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, ModuleOp, TensorType
from xdsl.ir import Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from onnxc.dialects import graph
from onnxc.dialects.graph_base import ints_of, is_symbolic
from onnxc.dialects.graph_qlinear import QLINEAR_CONV_OPS, QLinearConvAddOp, is_byte_type
from onnxc.dialects.graph_traits import BroadcastingElementwise, ElementwiseMap, NHWCKernel
from onnxc.dialects.layout import ConvertOp, layout_of, transpose_moves_no_data, with_layout
from onnxc.passes.conv1d_as_2d import convs_as_2d
from onnxc.passes.layout_fold import constant_value, laid_out_dense, moves_no_data

NHWC = "NHWC"

MIN_VECTOR_BITS = 128
"""Narrower (or no) SIMD: channels-last buys nothing, every tensor stays plain."""

CONVS = (graph.ConvOp, graph.ConvAddOp)
"""The ops whose NHWC is decided here, not by their operands: they start NHWC."""


def _maps_elements(op: Operation) -> bool:
    """One operand mapped element by element: any layout (ElementwiseMap)."""
    return op.has_trait(ElementwiseMap)


def _broadcasts(op: Operation) -> bool:
    """Broadcasting elementwise: right when every operand is rank 4 in one layout."""
    return op.has_trait(BroadcastingElementwise)


def _in_layout(t: TensorType, spec: str | None) -> TensorType:
    """`t` in layout `spec` (plain for None; a symbolic type keeps its sizes)."""
    return with_layout(t, spec)


def _is_nchw_f32(t) -> bool:
    """A rank-4 f32 tensor; or f16/bf16, which only casts and elementwise kernels (layout
    agnostic) see once widen-half-precision ran, so fp16 models' casts stay in NHWC."""
    return (
        isinstance(t, TensorType) and len(t.get_shape()) == 4
        and isinstance(t.get_element_type(), Float32Type | Float16Type | BFloat16Type)
    )


def activation_operands(op: Operation) -> list[SSAValue]:
    """The operands that share the op's layout (a conv's weight and bias do not)."""
    if isinstance(op, graph.ConvAddOp):
        return [op.input, op.addend]
    if isinstance(op, QLinearConvAddOp):
        return [op.input, op.addend]
    if isinstance(op, (graph.ConvOp, *QLINEAR_CONV_OPS)):
        return [op.input]
    return list(op.operands)


def _is_rank4(t) -> bool:
    return isinstance(t, TensorType) and len(t.get_shape()) == 4


def _is_rank4_bytes(t) -> bool:
    """A rank-4 ui8 / i8 tensor: elementwise kernels (the fused DQ -> Add -> Relu -> Q of a
    quantized residual) map its bytes in any layout."""
    return _is_rank4(t) and is_byte_type(t.get_element_type())


def _quantized_nhwc(op: Operation) -> bool | None:
    """The int8 side: a rank-4 qlinear_conv with a constant weight runs NHWC (the packed
    VNNI kernel needs it, the generic one reads any permutation); per-tensor Quantize /
    DequantizeLinear map elements whatever the layout, so NHWC flows through the DQ -> Add
    -> Q chains between them; a ui8 / i8 MaxPool has an NHWC kernel. None: not one of
    these ops."""
    if isinstance(op, QLINEAR_CONV_OPS):
        return (_is_rank4(op.input.type) and _is_rank4(op.output.type)
                and isinstance(op.weight.owner, graph.ConstantOp))
    if isinstance(op, graph.QuantizeLinearOp | graph.DequantizeLinearOp):
        return op.is_per_tensor() and _is_rank4(op.input.type) and _is_rank4(op.output.type)
    if isinstance(op, graph.MaxPoolOp) and _is_rank4_bytes(op.output.type):
        return _is_rank4(op.input.type)  # pool_nhwc's integer max (no requantization)
    return None


def _symbolic_nhwc(op: Operation) -> bool:
    """Whether `op`'s NHWC kernel also takes symbolic sizes (a dynamic-resolution CNN: H and
    W; its int8 form, QLinearConv between per-tensor Quantize / DequantizeLinear): its
    NHWCKernel trait says so, and elementwise kernels read every size at run time."""
    nhwc = op.get_trait(NHWCKernel)
    return (nhwc is not None and nhwc.symbolic) or _maps_elements(op) or _broadcasts(op)


def can_run_nhwc(op: Operation) -> bool:
    """Whether `op` has a kernel that is correct with its activations in NHWC (with
    symbolic sizes: those whose NHWC kernel takes them)."""
    if not _symbolic_nhwc(op) and any(
            isinstance(t, TensorType) and is_symbolic(t)
            for t in (*op.operand_types, *op.result_types)):
        return False
    if (quantized := _quantized_nhwc(op)) is not None:
        return quantized
    elementwise = _maps_elements(op) or _broadcasts(op)
    if not op.results or not all(_is_nchw_f32(r.type) or elementwise and _is_rank4_bytes(r.type)
                                 for r in op.results):
        return False
    if isinstance(op, CONVS):
        # the NHWC conv kernels pack the weight at compile time: it must be a constant
        return isinstance(op.weight.owner, graph.ConstantOp) and all(
            isinstance(t, TensorType) and isinstance(t.get_element_type(), Float32Type)
            for t in op.operand_types
        ) and _is_nchw_f32(op.input.type)
    if _maps_elements(op) or op.has_trait(NHWCKernel):
        return all(len(v.type.get_shape()) == 4 for v in op.operands)
    if _broadcasts(op):
        return all(
            len(v.type.get_shape()) == 4 or isinstance(v.owner, graph.ConstantOp)
            for v in op.operands
        )
    return False


def _channels_first_view(op: Operation) -> bool:
    """A static rank-4 f32 transpose of a plain tensor whose NHWC result would be its
    input's buffer as it is (the (0, 3, 1, 2) of a [N, H, W, C] back to channels-first
    after channels-last work: ConvNeXt's blocks), and whose users all have NHWC kernels: it
    becomes a view that starts NHWC (as a conv's output does), and the residual Add and the
    next conv after it need no conversion (two copies of the activation fewer per block)."""
    return (isinstance(op, graph.TransposeOp) and layout_of(op.input.type) is None
            and _is_nchw_f32(op.output.type) and not is_symbolic(op.output)
            and bool(op.output.uses)
            and all(can_run_nhwc(use.operation) for use in op.output.uses)
            and transpose_moves_no_data(op.input.type, _in_layout(op.output.type, NHWC),
                                        ints_of(op.perm)))


def _is_layout_change(op: Operation) -> bool:
    """A conversion, or the view this pass puts where a conversion moves no data."""
    if isinstance(op, ConvertOp):
        return True
    return (
        isinstance(op, graph.ReshapeOp) and op.shape is None and not is_symbolic(op.output)
        and op.input.type.get_shape() == op.output.type.get_shape()
        and moves_no_data(op.input.type, op.output.type)
    )


@dataclass(frozen=True)
class AssignLayoutPass(ModulePass):
    """Give convolutions NHWC activations and let NHWC flow through capable ops."""

    name = "assign-layout"

    vector_bits: int = 0
    """SIMD width the layouts are chosen for; 0: the module's target's (`target_of`)."""

    everywhere: bool = False
    """Run every op that has an NHWC kernel in NHWC, not only those a convolution's
    output reaches (exercises the NHWC kernels in tests without a convolution)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        bits = self.vector_bits
        if bits <= 0:
            from onnxc.target import target_of

            bits = target_of(op).vector_bits
        if bits < MIN_VECTOR_BITS:
            return
        for f in op.ops:
            if isinstance(f, func.FuncOp) and f.body.blocks:
                convs_as_2d(f)  # 1-D convs run on the NHWC kernels as 2-D ones
                _FunctionLayouts(f, self.everywhere).run()


def _definer(v: SSAValue) -> Operation:
    """The op that defines `v`, or the one owning the block whose argument it is."""
    if isinstance(v, OpResult):
        return v.op
    parent = v.owner.parent_op()  # type: ignore[union-attr]
    assert parent is not None
    return parent


class _FunctionLayouts:
    """The decisions for one function, made in one forward walk over its ops."""

    def __init__(self, f: func.FuncOp, everywhere: bool = False):
        self.f = f
        self.everywhere = everywhere
        self.converted: dict[tuple[SSAValue, str | None], SSAValue] = {}
        self.relaid_constants: set[Operation] = set()

    def run(self) -> None:
        block = self.f.body.block
        for op in list(block.ops):
            if _is_layout_change(op):
                continue  # takes its operand in whatever layout it has
            if isinstance(op, func.ReturnOp):
                wanted = [layout_of(t) for t in self.f.function_type.outputs]
                op.operands = [self.as_layout(v, s, op) for v, s in zip(op.operands, wanted)]
                continue
            if _channels_first_view(op):
                Rewriter.replace_value_with_new_type(op.output, _in_layout(op.output.type, NHWC))
                continue
            if self.wants_nhwc(op):
                acts = activation_operands(op)
                op.operands = [
                    self.as_layout(v, NHWC, op) if any(v is a for a in acts) else v
                    for v in op.operands
                ]
                for r in op.results:
                    if layout_of(r.type) != NHWC:
                        Rewriter.replace_value_with_new_type(r, _in_layout(r.type, NHWC))
            else:
                op.operands = [
                    self.as_layout(v, None, op) if layout_of(v.type) is not None else v
                    for v in op.operands
                ]
                if op.regions:
                    self.plain_inside(op)
        for c in self.relaid_constants:
            if not c.results[0].uses:
                Rewriter.erase_op(c)

    def plain_inside(self, op: Operation) -> None:
        """An If or a Loop body reads outer values in the plain layout: laid-out ones are
        converted before the op (bodies are not laid out themselves)."""
        for inner in op.walk():
            if inner is op:
                continue
            for i, v in enumerate(inner.operands):
                if layout_of(v.type) is not None and not op.is_ancestor(_definer(v)):
                    inner.operands[i] = self.as_layout(v, None, op)

    def wants_nhwc(self, op: Operation) -> bool:
        if not can_run_nhwc(op):
            return False
        if isinstance(op, (*CONVS, *QLINEAR_CONV_OPS)) or self.everywhere:
            return True
        return any(layout_of(v.type) == NHWC for v in activation_operands(op))

    def as_layout(self, v: SSAValue, spec: str | None, user: Operation) -> SSAValue:
        """`v` in layout `spec`: itself, a shared conversion, or a re-laid constant."""
        t = v.type
        assert isinstance(t, TensorType)
        if layout_of(t) == spec and (spec is None or len(t.get_shape()) == 4):
            return v
        key = (v, spec)
        if key in self.converted:
            return self.converted[key]
        rank4 = t if len(t.get_shape()) == 4 else TensorType(
            t.get_element_type(), [1] * (4 - len(t.get_shape())) + list(t.get_shape()))
        target = _in_layout(rank4 if spec is not None else t, spec)
        owner = v.owner
        if isinstance(owner, graph.ConstantOp):
            new: Operation = graph.ConstantOp(laid_out_dense(constant_value(owner.value), target))
            self.relaid_constants.add(owner)
        elif moves_no_data(t, target):
            new = graph.ReshapeOp(operands=[v], result_types=[target])
        else:
            new = ConvertOp(v, target)
        Rewriter.insert_op(new, InsertPoint.before(user))
        self.converted[key] = new.results[0]
        return new.results[0]
