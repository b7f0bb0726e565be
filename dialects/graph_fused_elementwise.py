"""`graph.fused_elementwise`: a tree of elementwise ops run as one loop nest over broadcast
tensors, its meaning a region of scalar ops (like `linalg.generic`).

    %r = graph.fused_elementwise(%x, %b) : (tensor<1x4x3x3xf32>, tensor<1x1x3xf32>)
           -> tensor<1x4x3x3xf32> {
    ^0(%a : f32, %c : f32):
      %s = arith.addf %a, %c : f32
      %lo = arith.constant 0.000000e+00 : f32
      %r = arith.maximumf %s, %lo : f32
      graph.yield %r : f32
    }

is relu(x + b). The block takes one element of each operand (its element type), in order;
the body computes one element of the result with pure scalar `arith` / `math` ops
(BODY_OPS) and yields it. One IR for the meaning means one place to read it: the fusion
pass builds bodies from each fused op's scalar meaning (passes/fusion_scalar.py), the kernel
clones them into its loop nest, the evaluator runs them on arrays, the ONNX exporter writes
one node per body op.

QDQ chains fuse too: a Dequantize reads a ui8/i8 element (`arith.uitofp` / `arith.sitofp`,
then `(a - z) * s`), a Quantize ends in `arith.fptoui` / `arith.fptosi` of a clamped,
rounded value, so operands and result may be 8-bit integers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import AnyFloat, FloatAttr, IntegerType, TensorType
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import IsolatedFromAbove, Pure
from xdsl.utils.exceptions import VerifyException

from onnxc.dialects import graph_shapes as shapes
from onnxc.dialects.graph_base import GraphOp, shape_of
from onnxc.dialects.graph_traits import BroadcastingElementwise, HalfKernel

BODY_OPS: tuple[type[Operation], ...] = (
    arith.ConstantOp,
    arith.AddfOp, arith.SubfOp, arith.MulfOp, arith.DivfOp, arith.NegfOp,
    arith.MaximumfOp, arith.MinimumfOp, arith.CmpfOp, arith.SelectOp,
    arith.UIToFPOp, arith.SIToFPOp, arith.FPToUIOp, arith.FPToSIOp,
    math.ExpOp, math.LogOp, math.SqrtOp, math.TanhOp, math.AbsFOp, math.PowFOp,
    math.RoundEvenOp,
)
"""The scalar ops a body may hold: pure, no memory, no control flow. Every consumer of
bodies (kernel, evaluator, exporter, show) handles each of them; adding one means adding it
there too (tests/unit/test_fused_body.py checks that they agree)."""


def is_scalar(t) -> bool:
    return isinstance(t, AnyFloat | IntegerType)


@irdl_op_definition
class FusedElementwiseOp(GraphOp):
    """A tree of elementwise ops over broadcast inputs, run as one loop nest; its region
    computes one result element from one element of each input."""

    name = "graph.fused_elementwise"
    inputs = var_operand_def(TensorType)
    output = result_def(TensorType)
    body = region_def("single_block")
    traits = traits_def(Pure(), IsolatedFromAbove(), HalfKernel(), BroadcastingElementwise())
    assembly_format = ("`(` operands `)` attr-dict `:` functional-type(operands, results) "
                       "$body")

    def __init__(self, inputs, result_type, body: Block):
        super().__init__(operands=[list(inputs)], result_types=[result_type],
                         regions=[Region(body)])

    @property
    def block(self) -> Block:
        return self.body.block

    def yielded(self) -> SSAValue:
        """The body's result element (the operand of its graph.yield)."""
        return self.block.last_op.operands[0]  # type: ignore[union-attr]

    def body_ops(self) -> list[Operation]:
        """The body's scalar ops, without the terminator."""
        return list(self.block.ops)[:-1]

    def retyped(self, inputs: Sequence[SSAValue], result_type: Attribute) -> FusedElementwiseOp:
        """This op on `inputs` with result type `result_type` whose element types may differ
        (widen-half-graph: f16 -> f32): the body is cloned with each changed element type
        replaced, so it computes the same in the new types."""
        old = [v.type.get_element_type() for v in (*self.inputs, self.output)]
        new = [t.get_element_type() for t in (*(v.type for v in inputs), result_type)]
        types: dict[Attribute, Attribute] = {}
        for a, b in zip(old, new, strict=True):
            if types.setdefault(a, b) != b:
                raise ValueError(f"{self.name}: {a} cannot become both {types[a]} and {b}")
        block = Block(arg_types=[types.get(a.type, a.type) for a in self.block.args])
        mapping: dict[SSAValue, SSAValue] = dict(zip(self.block.args, block.args))
        for o in self.block.ops:
            props = dict(o.properties)
            if isinstance(o, arith.ConstantOp) and o.result.type in types:
                props["value"] = FloatAttr(o.value.value.data, types[o.result.type])
            clone = type(o).create(
                operands=[mapping[v] for v in o.operands],
                result_types=[types.get(t, t) for t in o.result_types],
                properties=props, attributes=dict(o.attributes))
            block.add_op(clone)
            mapping.update(zip(o.results, clone.results))
        retyped = FusedElementwiseOp(inputs, result_type, block)
        retyped.attributes.update(self.attributes)
        return retyped

    def infer_shapes(self):
        if not self.inputs:
            raise ValueError("needs at least one input")
        return [shapes.broadcast_shapes(*(shape_of(v) for v in self.inputs))]

    def verify_element_types(self) -> None:
        """Operand and result element types are the body's argument and yield types
        (verify_), which the body's ops relate."""

    def verify_(self) -> None:
        super().verify_()
        from onnxc.dialects.graph_control import YieldOp  # it names this op as a parent

        block = self.block
        elements = [v.type.get_element_type() for v in self.inputs]
        args = [a.type for a in block.args]
        if args != elements:
            raise VerifyException(
                f"{self.name}: the body takes ({', '.join(map(str, args))}), expected the "
                f"operands' element types ({', '.join(map(str, elements))})")
        terminator = block.last_op
        if not isinstance(terminator, YieldOp):
            raise VerifyException(f"{self.name}: the body must end in graph.yield")
        result = self.output.type.get_element_type()
        yielded = [v.type for v in terminator.values]
        if yielded != [result]:
            raise VerifyException(
                f"{self.name}: the body yields ({', '.join(map(str, yielded))}), expected one "
                f"{result} (the result's element type)")
        for op in self.body_ops():
            if not isinstance(op, BODY_OPS) or op.regions:
                raise VerifyException(
                    f"{self.name}: '{op.name}' is not allowed in the body (pure scalar "
                    "arith/math ops only)")
            for value in (*op.operands, *op.results):
                if not is_scalar(value.type):
                    raise VerifyException(
                        f"{self.name}: '{op.name}' in the body has a {value.type} value "
                        "(only scalars)")


def inline_body(
    op: FusedElementwiseOp,
    args: Sequence[SSAValue],
    constant: Callable[[float | int, Attribute], SSAValue],
    insert: Callable[[Operation], object],
) -> SSAValue:
    """`op`'s body cloned on `args` (one value per block argument) through `insert`, its
    constants made by `constant` (so a kernel can hoist and share them): the value the body
    yields. The kernel clones it into its loop nest, the fusion into a larger body."""
    mapping: dict[SSAValue, SSAValue] = dict(zip(op.block.args, args, strict=True))
    for o in op.body_ops():
        if isinstance(o, arith.ConstantOp):
            mapping[o.result] = constant(o.value.value.data, o.result.type)
            continue
        clone = o.clone(value_mapper=mapping)
        insert(clone)
        mapping.update(zip(o.results, clone.results))
    return mapping[op.yielded()]


def body_key(op: FusedElementwiseOp) -> tuple:
    """A structural print of the body: each op's name, operand positions, properties and
    result types, blind to SSA names. Equal keys compute the same, so the ops share one
    kernel (and one exported ONNX function)."""
    position: dict[SSAValue, int] = {a: i for i, a in enumerate(op.block.args)}
    rows: list[tuple] = [tuple(str(a.type) for a in op.block.args)]
    for o in op.block.ops:
        rows.append((
            o.name,
            tuple(position[v] for v in o.operands),
            tuple(sorted((k, str(v)) for k, v in o.properties.items())),
            tuple(str(t) for t in o.result_types),
        ))
        for r in o.results:
            position[r] = len(position)
    return tuple(rows)


CMPF_PREDICATES = ("false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord",
                   "ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true")
"""arith.cmpf's predicate numbers, by name (xDSL stores the number)."""


def cmpf_predicate(op: arith.CmpfOp) -> str:
    return CMPF_PREDICATES[op.predicate.value.data]
