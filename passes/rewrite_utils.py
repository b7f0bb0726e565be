"""Small IR helpers shared by the graph rewrite patterns: rebuilding ops and reading uses.

Patterns that move an op (forwarding, cancelling) rebuild it with new operands and result
types but the same properties; `rebuild` does that generically for any graph op.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import DenseArrayBase, TensorType, i64
from xdsl.dialects.func import ReturnOp
from xdsl.ir import Attribute, Operation, SSAValue

from onnxc.dialects.graph_base import tensor_type
from onnxc.dialects.graph_fused_elementwise import FusedElementwiseOp
from onnxc.dialects.symbolic_dims import Dim


def rebuild(
    op: Operation, operands: Sequence[SSAValue], result_types: Sequence[Attribute]
) -> Operation:
    """A new op of `op`'s class and properties on other operands and result types (its
    regions copied; a fused op's body retyped when its element types change)."""
    if isinstance(op, FusedElementwiseOp):
        return op.retyped(operands, result_types[0])
    return type(op).create(
        operands=list(operands),
        result_types=list(result_types),
        properties=dict(op.properties),
        attributes=dict(op.attributes),
        regions=[r.clone() for r in op.regions],
    )


def with_shape(t: Attribute, shape: Sequence[Dim]) -> TensorType:
    """The tensor type with `t`'s element type and another shape (ints and SymDims: a
    symbolic dimension is written `?` with its `#graph.dims` entry)."""
    assert isinstance(t, TensorType)
    return tensor_type(list(shape), t.get_element_type())


def i64_array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def single_user(value: SSAValue) -> Operation | None:
    """The one op reading `value`, or None when it has zero or several uses."""
    uses = list(value.uses)
    return uses[0].operation if len(uses) == 1 else None


def only_returned(value: SSAValue) -> bool:
    """True when every use of `value` is a func.return (it is a graph output and nothing else)."""
    return bool(value.uses) and all(isinstance(u.operation, ReturnOp) for u in value.uses)


def reshape_to(value: SSAValue, result_type: Attribute) -> Operation:
    """A graph.reshape of `value` to `result_type` (the type carries the shape)."""
    from onnxc.dialects import graph

    return graph.ReshapeOp.create(operands=[value], result_types=[result_type])
