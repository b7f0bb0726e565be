"""Graph ops that check run-time data before an op may use it: `graph.check_indices`,
`graph.check_divisor`, and `graph.check_sizes` for the sizes themselves.

Index operands (Gather, the scatters, RoiAlign's batch indices, ...) and integer divisors come
from the caller or from earlier ops, so compiled code must not trust them: an index past its
axis would read or write outside a buffer, a zero divisor traps the process. The lowering
(`insert-runtime-checks`) puts one of these ops before every op that consumes such data; each
becomes a small vectorized kernel that finds the first bad element, after which the native
entry returns an error status instead of running the consumer (`return-check-status`), and
the runtime raises `InvalidInputError` naming the node, the value and the valid range.

A model with symbolic sizes is valid only where its shape rules' conditions hold (the inner
dimensions of a MatMul agree, a convolution's input is at least its window): the importer
records each such guard (dialects/size_facts.py), and a `graph.check_sizes` evaluates it for
the run's sizes before anything that assumed it runs.

The ops have no results and are not Pure, so dead-code elimination keeps them; their
`node`, `op_type` and `operand` properties only describe where the data is used (for the
error message) and are left out of the kernel key, so equal checks share one kernel.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
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
    opt_prop_def,
    prop_def,
)
from xdsl.utils.exceptions import VerifyException

from onnxc.dialects.graph_base import SymbolicDimsAttr, int_of, ints_of, shape_of
from onnxc.dialects.onnxc_attributes import GUARDS_ATTR
from onnxc.dialects.size_facts import Guard
from onnxc.dialects.symbolic_dims import Dim, SymDim

SITE_PROPERTIES = ("node", "op_type", "operand", "reason")
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


SYMBOLIC_BOUND = -1
"""The `bounds` entry of a column whose extent is symbolic (its polynomial is in
`symbolic_bounds`), as `?` (-1) stands for such a dimension in a tensor type."""


@irdl_op_definition
class CheckIndicesOp(CheckOp):
    """Every element of `indices`, seen as rows of len(bounds) columns, is a valid index
    into an axis of extent bounds[column]: in [-extent, extent) when `negative` (ONNX's
    wrap-around), else in [0, extent).

    An axis of symbolic size (`x[t:t+1]` of a `seq` axis) has the bound SYMBOLIC_BOUND in
    `bounds` and its polynomial in `symbolic_bounds` (one per such column, in order, as a
    tensor type's `?` dimensions take theirs from `#graph.dims`):
    `bounds = array<i64: -1, 8>, symbolic_bounds = #graph.dims<["seq"]>`. The kernel then
    takes the symbols as index arguments (`size_symbols`) and checks against the run's
    sizes; the static form's text is unchanged."""

    name = "graph.check_indices"
    KIND: ClassVar[str] = "index"
    indices = operand_def(TensorType)
    bounds = prop_def(DenseArrayBase)
    negative = prop_def(IntegerAttr)
    symbolic_bounds = opt_prop_def(SymbolicDimsAttr)
    """the extents of the columns bounded by -1 (axes of symbolic size), in order"""

    def verify_(self) -> None:
        super().verify_()
        bounds = ints_of(self.bounds)
        symbolic = self.symbolic_bounds.values() if self.symbolic_bounds is not None else []
        if not bounds or any(b < 0 and b != SYMBOLIC_BOUND for b in bounds):
            raise VerifyException(f"{self.name}: bounds must be non-negative, one or more")
        if bounds.count(SYMBOLIC_BOUND) != len(symbolic) or (
                self.symbolic_bounds is not None and not symbolic):
            raise VerifyException(
                f"{self.name}: symbolic_bounds needs one polynomial per bound of "
                f"{SYMBOLIC_BOUND}")
        shape = shape_of(self.indices)
        if len(bounds) > 1 and (not shape or shape[-1] != len(bounds)):
            raise VerifyException(
                f"{self.name}: {len(bounds)} bounds need a last dimension of {len(bounds)}")

    def extents(self) -> list[Dim]:
        """The extent of each column's axis: an int, or a SymDim for a symbolic bound."""
        symbolic = iter(self.symbolic_bounds.values() if self.symbolic_bounds else [])
        return [next(symbolic) if b == SYMBOLIC_BOUND else b for b in ints_of(self.bounds)]

    def size_symbols(self) -> set[str]:
        """The symbols the bounds name: the kernel takes their values as index arguments
        (graph_to_loops.module_kernels.symbols_of_op)."""
        return {s for e in self.extents() if isinstance(e, SymDim) for s in e.symbols()}

    def allowed(self, column: int,
                sizes: Mapping[str, int] | None = None) -> tuple[Dim, Dim]:
        """The inclusive range of valid values in `column`: ints, or for a symbolic bound
        polynomials (ints when `sizes` gives the symbols' values of a run)."""
        extent = self.extents()[column]
        if isinstance(extent, SymDim) and sizes is not None:
            extent = extent.evaluate(sizes)
        return (-extent if int_of(self.negative) else 0), extent - 1

    def site(self) -> dict[str, object]:
        columns = range(len(ints_of(self.bounds)))
        if not self.size_symbols():
            return {**super().site(), "ranges": [list(self.allowed(c)) for c in columns]}
        return {**super().site(), "symbolic_ranges": symbolic_ranges_text(
            [self.allowed(c) for c in columns])}


def symbolic_ranges_text(ranges: Sequence[tuple[Dim, Dim]]) -> str:
    """A check site's `symbolic_ranges`: `low,high` per column, `;` between columns, each a
    polynomial as text (`-seq,seq-1;0,7`): a string, as site values other than `ranges`
    are, so the cache and the artifact manifests keep it as they are. The runtime reads it
    back for a run's symbol values (dialects/check_failures.py)."""
    return ";".join(f"{low},{high}" for low, high in ranges)


@irdl_op_definition
class CheckDivisorOp(CheckOp):
    """No element of the integer `divisor` is zero."""

    name = "graph.check_divisor"
    KIND: ClassVar[str] = "divisor"
    divisor = operand_def(TensorType)


@irdl_op_definition
class CheckSizesOp(CheckOp):
    """The run's sizes satisfy `guard` (`size >= 0` or `size == 0`, the size an expression
    in the symbols, size_facts.Guard): a condition a shape rule of node `node` needed
    (`reason` says which). No operand: the kernel takes the symbols' values."""

    name = "graph.check_sizes"
    KIND: ClassVar[str] = "size"
    guard = prop_def(StringAttr)
    reason = prop_def(StringAttr)

    assembly_format = "attr-dict"

    def checked(self):
        return None

    def verify_(self) -> None:
        try:
            self.parsed()
        except ValueError as err:
            raise VerifyException(f"{self.name}: {err}") from err

    def parsed(self) -> Guard:
        return Guard.parse(self.guard.data, self.reason.data)

    def size_symbols(self) -> set[str]:
        size = self.parsed().size
        return size.symbols() if isinstance(size, SymDim) else set()

    def site(self) -> dict[str, object]:
        return {**super().site(), "guard": self.guard.data, "reason": self.reason.data}


CHECK_OPS = [CheckIndicesOp, CheckDivisorOp, CheckSizesOp]


def guards_attribute(records: Sequence[tuple[Guard, str, str]]) -> ArrayAttr:
    """(guard, node, op_type) records as the GUARDS_ATTR value."""
    return ArrayAttr([DictionaryAttr({
        "guard": StringAttr(guard.text()), "reason": StringAttr(guard.reason),
        "node": StringAttr(node), "op_type": StringAttr(op_type)})
        for guard, node, op_type in records])


def guard_checks(function: Operation) -> list[CheckSizesOp]:
    """A graph.check_sizes for each guard of `function`'s GUARDS_ATTR."""
    attr = function.attributes.get(GUARDS_ATTR)
    if not isinstance(attr, ArrayAttr):
        return []
    checks = []
    for record in attr.data:
        assert isinstance(record, DictionaryAttr)
        checks.append(CheckSizesOp(properties={
            "guard": record.data["guard"], "reason": record.data["reason"],
            "node": record.data["node"], "op_type": record.data["op_type"],
            "operand": StringAttr("sizes")}))
    return checks

__all__ = [
    "CHECKED_OPS",
    "CHECK_OPS",
    "GUARDS_ATTR",
    "NODE_ATTR",
    "SITE_PROPERTIES",
    "SYMBOLIC_BOUND",
    "CheckDivisorOp",
    "CheckIndicesOp",
    "CheckOp",
    "CheckSizesOp",
    "guard_checks",
    "guards_attribute",
    "onnx_node_of",
    "symbolic_ranges_text",
]
