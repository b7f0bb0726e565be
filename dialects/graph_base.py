"""The base of every graph-dialect op: its syntax, shape verification and property helpers.

All graph ops print as `%r = graph.<op>(%a, %b) {props} : (types) -> types`; `GraphOp.verify_`
checks result element types and compares result shapes with `infer_shapes` (rules in
`graph_shapes`). The op families live in graph_math, graph_nn and graph_tensor; `graph`
assembles the dialect.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    TensorType,
)
from xdsl.ir import SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

_FORMAT = "`(` operands `)` attr-dict `:` functional-type(operands, results)"


def shape_of(value_or_type) -> tuple[int, ...]:
    """Static shape of a tensor-typed SSA value or of a tensor type."""
    t = value_or_type if isinstance(value_or_type, TensorType) else value_or_type.type
    assert isinstance(t, TensorType)
    return tuple(t.get_shape())


def ints_of(attr: DenseArrayBase | None) -> tuple[int, ...]:
    return () if attr is None else tuple(int(v) for v in attr.get_values())


def int_of(attr: IntegerAttr | None, default: int = 0) -> int:
    return default if attr is None else attr.value.data


def float_of(attr: FloatAttr | None, default: float = 0.0) -> float:
    return default if attr is None else attr.value.data


class GraphOp(IRDLOperation, abc.ABC):
    """Shared syntax and shape verification of all graph ops."""

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = _FORMAT
    traits = traits_def(Pure())

    def infer_shapes(self) -> Sequence[tuple[int, ...]] | None:
        """Result shapes implied by operands and properties; None when the type decides."""
        return None

    def same_element_type_operands(self) -> Sequence[SSAValue]:
        """Operands whose element type every result shares (all of them unless overridden)."""
        return self.operands

    def verify_element_types(self) -> None:
        operand_types = [v.type.get_element_type() for v in self.same_element_type_operands()]
        if any(t != operand_types[0] for t in operand_types[1:]):
            raise VerifyException(f"{self.name}: operand element types differ")
        if not operand_types:
            return
        for r in self.results:
            if r.type.get_element_type() != operand_types[0]:
                raise VerifyException(
                    f"{self.name}: result element type {r.type.get_element_type()} differs "
                    f"from operand element type {operand_types[0]}"
                )

    def verify_(self) -> None:
        for r in self.results:
            if not isinstance(r.type, TensorType):
                raise VerifyException(f"{self.name}: results must be tensors")
        self.verify_element_types()
        try:
            expected = self.infer_shapes()
        except (ValueError, IndexError) as err:
            raise VerifyException(f"{self.name}: {err}") from err
        if expected is None:
            return
        actual = [shape_of(r) for r in self.results]
        if [tuple(s) for s in expected] != actual:
            raise VerifyException(
                f"{self.name}: result shapes {actual} differ from inferred {list(expected)}"
            )
