"""Graph ops that check run-time data before an op may use it: `graph.check_indices` and
`graph.check_divisor`.

Index operands (Gather, the scatters, RoiAlign's batch indices, ...) and integer divisors come
from the caller or from earlier ops, so compiled code must not trust them: an index past its
axis would read or write outside a buffer, a zero divisor traps the process. The lowering
(`insert-runtime-checks`) puts one of these ops before every op that consumes such data; each
becomes a small vectorized kernel that finds the first bad element, after which the native
entry returns an error status instead of running the consumer (`return-check-status`), and
the runtime raises `InvalidInputError` naming the node, the value and the valid range.

The ops have no results and are not Pure, so dead-code elimination keeps them; their
`node`, `op_type` and `operand` properties only describe where the data is used (for the
error message) and are left out of the kernel key, so equal checks share one kernel.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import (
    DenseArrayBase,
    IntegerAttr,
    IntegerType,
    NameLoc,
    StringAttr,
    TensorType,
)
from xdsl.ir import Operation
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    prop_def,
)
from xdsl.utils.exceptions import VerifyException

from onnxc.dialects.graph_base import int_of, ints_of, shape_of

SITE_PROPERTIES = ("node", "op_type", "operand")
"""Properties that locate a check for its error message; they do not change its kernel."""

NODE_ATTR = "onnx.node"
"""Discardable attribute naming the ONNX node an op came from, for run-time error messages.
The importer sets it only on ops whose data gets run-time checks (CHECKED_OPS, integer
Div/Mod), so that the printed IR of everything else stays as it was."""


def onnx_node_of(op: Operation) -> str | None:
    """The ONNX node `op` came from, as the importer recorded it: its location
    (`loc("conv0")`; ops a rewrite creates inherit it), or NODE_ATTR in hand-written IR."""
    if isinstance(op.location, NameLoc) and op.location.desc.data:
        return op.location.desc.data
    attr = op.attributes.get(NODE_ATTR)
    return attr.data if isinstance(attr, StringAttr) and attr.data else None

CHECKED_OPS = frozenset({
    "graph.gather", "graph.gather_elements", "graph.gather_nd", "graph.scatter_elements",
    "graph.scatter_nd", "graph.roi_align", "graph.max_unpool", "graph.reverse_sequence",
    "graph.tensor_scatter", "graph.lstm_recurrence", "graph.gru_recurrence",
    "graph.rnn_recurrence",
})
"""Ops reading run-time indices (integer graph.div / graph.mod divide by run-time data)."""


class CheckOp(IRDLOperation):
    """A run-time check of one integer tensor; verified, never folded away."""

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "`(` operands `)` attr-dict `:` type(operands)"

    node = prop_def(StringAttr)
    """the ONNX node that consumes the checked data"""
    op_type = prop_def(StringAttr)
    """its ONNX op type (`Gather`)"""
    operand = prop_def(StringAttr)
    """which of its inputs is checked (`indices`)"""

    def checked(self):
        return self.operands[0]

    def verify_(self) -> None:
        t = self.operands[0].type
        if not isinstance(t, TensorType) or not isinstance(t.get_element_type(), IntegerType):
            raise VerifyException(f"{self.name}: the checked value must be an integer tensor")

    def site(self) -> dict[str, object]:
        """What the runtime needs to describe a failure of this check."""
        return {"kind": self.KIND, "node": self.node.data, "op_type": self.op_type.data,
                "operand": self.operand.data}

    KIND: ClassVar[str] = ""
    """`index` or `divisor`: how the runtime words a failure"""


@irdl_op_definition
class CheckIndicesOp(CheckOp):
    """Every element of `indices`, seen as rows of len(bounds) columns, is a valid index
    into an axis of extent bounds[column]: in [-extent, extent) when `negative` (ONNX's
    wrap-around), else in [0, extent)."""

    name = "graph.check_indices"
    KIND: ClassVar[str] = "index"
    indices = operand_def(TensorType)
    bounds = prop_def(DenseArrayBase)
    negative = prop_def(IntegerAttr)

    def verify_(self) -> None:
        super().verify_()
        bounds = ints_of(self.bounds)
        if not bounds or any(b < 0 for b in bounds):
            raise VerifyException(f"{self.name}: bounds must be non-negative, one or more")
        shape = shape_of(self.indices)
        if len(bounds) > 1 and (not shape or shape[-1] != len(bounds)):
            raise VerifyException(
                f"{self.name}: {len(bounds)} bounds need a last dimension of {len(bounds)}")

    def allowed(self, column: int) -> tuple[int, int]:
        """The inclusive range of valid values in `column`."""
        extent = ints_of(self.bounds)[column]
        return (-extent if int_of(self.negative) else 0), extent - 1

    def site(self) -> dict[str, object]:
        return {**super().site(), "ranges": [list(self.allowed(c))
                                             for c in range(len(ints_of(self.bounds)))]}


@irdl_op_definition
class CheckDivisorOp(CheckOp):
    """No element of the integer `divisor` is zero."""

    name = "graph.check_divisor"
    KIND: ClassVar[str] = "divisor"
    divisor = operand_def(TensorType)


CHECK_OPS = [CheckIndicesOp, CheckDivisorOp]

__all__ = ["CHECKED_OPS", "CHECK_OPS", "NODE_ATTR", "SITE_PROPERTIES", "CheckDivisorOp", "CheckIndicesOp", "CheckOp",
           "onnx_node_of"]
