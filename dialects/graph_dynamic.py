"""Graph ops whose result sizes are data: they define *run symbols*.

NonZero's result has as many columns as its input has nonzero elements; NonMaxSuppression
keeps the boxes it keeps. Such a size is a size symbol of its own, named by the op that
defines it (`defines`), whose value the op's kernel writes during the run; every later
op computes with it like with any symbolic size (dialects/symbolic_dims.py), and its
kernel receives the value the run wrote.

Each run symbol has a bound where one exists (`defined_sizes`: NonZero's count is at most
its input's element count): buffers are allocated for the bound. Without one, the caller
allocates a capacity, which a run that needs more reports, and the run is repeated with
enough room (runtime/symbolic_shapes.py). The kernel never writes past either: native
code does not trust the data.
"""

from __future__ import annotations

from collections.abc import Mapping

from xdsl.dialects.builtin import ArrayAttr, IntegerType, StringAttr, TensorType
from xdsl.ir import Operation
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def
from xdsl.utils.exceptions import VerifyException

from onnxc.dialects.graph_base import GraphOp, shape_of
from onnxc.dialects.symbolic_dims import Dim, SymDim, num_elements


def defined_sizes(op: Operation) -> Mapping[str, Dim | None]:
    """The run symbols `op` defines, each with its bound (None: a capacity)."""
    sizes = getattr(op, "defined_sizes", None)
    return sizes() if sizes is not None else {}


def _names(attr: ArrayAttr) -> list[str]:
    return [a.data for a in attr.data]  # type: ignore[attr-defined]


def _require_i64(op: GraphOp, value) -> None:
    el = value.type.get_element_type()
    if not (isinstance(el, IntegerType) and el.width.data == 64):
        raise VerifyException(f"{op.name}: index result must be i64, got {el}")


class DefinesSizes(GraphOp):
    """An op defining run symbols, `defines` (their names, in the order of its results'
    use of them)."""

    defines = prop_def(ArrayAttr[StringAttr])

    def defined(self) -> list[SymDim]:
        return [SymDim.symbol(n) for n in _names(self.defines)]

    def defined_sizes(self) -> dict[str, Dim | None]:
        raise NotImplementedError

    def verify_(self) -> None:
        for name in _names(self.defines):
            SymDim.symbol(name)  # a symbol name
        super().verify_()


@irdl_op_definition
class NonZeroOp(DefinesSizes):
    """ONNX NonZero: the indices of the input's nonzero elements, [rank, count] in row-major
    order. `count` (the run symbol `defines[0]`) is at most the input's element count."""

    name = "graph.nonzero"
    input = operand_def(TensorType)
    output = result_def(TensorType)

    def same_element_type_operands(self):
        return []

    def verify_element_types(self) -> None:
        _require_i64(self, self.output)

    def infer_shapes(self):
        x = shape_of(self.input)
        if not x:
            raise ValueError("the input must have rank >= 1")
        if len(self.defines.data) != 1:
            raise ValueError("defines one count")
        return [(len(x), *self.defined())]

    def defined_sizes(self) -> dict[str, Dim | None]:
        (count,) = _names(self.defines)
        return {count: num_elements(shape_of(self.input))}


DYNAMIC_OPS = [NonZeroOp]

__all__ = ["DYNAMIC_OPS", "DefinesSizes", "NonZeroOp", "defined_sizes"]
