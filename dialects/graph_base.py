"""The base of every graph-dialect op: its syntax, shape verification and property helpers.

All graph ops print as `%r = graph.<op>(%a, %b) {props} : (types) -> types`; `GraphOp.verify_`
checks result element types and compares result shapes with `infer_shapes` (rules in
`graph_shapes`). The op families live in graph_math, graph_nn and graph_tensor; `graph`
assembles the dialect.
"""

from __future__ import annotations

import abc
import functools
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, ParametrizedAttribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_attr_definition,
    operand_def,
    result_def,
    traits_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from onnxc.dialects.size_text import parse_dim
from onnxc.dialects.symbolic_dims import Dim, SymbolicDimError, SymDim

_FORMAT = "`(` operands `)` attr-dict `:` functional-type(operands, results)"


def _canonical_text(text: str) -> str:
    """A size as its canonical text (`ceildiv(h, 2)` is `floordiv(h+1, 2)`): types that
    name the same size are then the same type. Text that is no size stays, for verify()."""
    try:
        return str(parse_dim(text))
    except SymbolicDimError:
        return text


def _parse_sizes(parser: AttrParser) -> ArrayAttr[StringAttr]:
    """`["seq", "floordiv(h+1, 2)"]`, each canonical."""
    values = parser.parse_comma_separated_list(parser.Delimiter.SQUARE,
                                               parser.parse_str_literal)
    return ArrayAttr([StringAttr(_canonical_text(v)) for v in values])


@irdl_attr_definition
class SymbolicDimsAttr(ParametrizedAttribute):
    """`#graph.dims<["seq", "past+seq"]>`: the sizes of a tensor type's `?` dimensions, in
    order, as size expressions over size symbols (dialects/symbolic_dims.py), and the
    tensor's layout when it is not plain: `#graph.dims<["h", "w"], "NHWC">` (what
    `#layout.spec` says of static types, dialects/layout.py).

    It is the encoding of a tensor with symbolic dimensions, `tensor<1x?x768xf32,
    #graph.dims<["seq"]>>`: two values whose dimensions name the same size are known to
    have the same size at run time, which is what lets shape rules and kernels relate them.
    The sizes are kept in canonical form, so types that name one size are one type.
    """

    name = "graph.dims"

    dims: ArrayAttr[StringAttr]
    layout: StringAttr
    """"" for plain (row-major in logical order)"""

    def __init__(self, dims: Sequence[Dim] | ArrayAttr[StringAttr], layout: str = ""):
        if not isinstance(dims, ArrayAttr):
            dims = ArrayAttr([StringAttr(str(d)) for d in dims])
        else:
            dims = ArrayAttr([StringAttr(_canonical_text(d.data)) for d in dims.data])
        super().__init__(dims, StringAttr(layout))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        parser.parse_punctuation("<")
        dims = _parse_sizes(parser)
        layout = parser.parse_str_literal() if parser.parse_optional_punctuation(",") else ""
        parser.parse_punctuation(">")
        return [dims, StringAttr(layout)]

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        printer.print_attribute(self.dims)
        if self.layout.data:
            printer.print_string(", ")
            printer.print_string_literal(self.layout.data)
        printer.print_string(">")

    def verify(self) -> None:
        for d in self.dims.data:
            try:
                value = parse_dim(d.data)
            except SymbolicDimError as err:
                raise VerifyException(f"#graph.dims: {err}") from err
            if not isinstance(value, SymDim):
                raise VerifyException(f"#graph.dims: '{d.data}' is a constant, not symbolic")

    def values(self) -> list[SymDim]:
        return [parse_dim(d.data) for d in self.dims.data]  # type: ignore[misc]


@irdl_attr_definition
class SizesAttr(ParametrizedAttribute):
    """`#graph.sizes<["0", "seq-1"]>`: integer properties that may be size expressions (a
    Slice's bounds taken from shape data). Ops take it where they would take an i64 array;
    the symbols it names reach their kernel as index arguments
    (graph_to_loops.module_kernels.symbols_of_op), and `evaluator_sizes.specialized` gives it
    values."""

    name = "graph.sizes"

    values_: ArrayAttr[StringAttr]

    def __init__(self, values: Sequence[Dim] | ArrayAttr[StringAttr]):
        if not isinstance(values, ArrayAttr):
            values = ArrayAttr([StringAttr(str(v)) for v in values])
        super().__init__(values)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        parser.parse_punctuation("<")
        values = _parse_sizes(parser)
        parser.parse_punctuation(">")
        return [values]

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        printer.print_attribute(self.values_)
        printer.print_string(">")

    def verify(self) -> None:
        for v in self.values_.data:
            try:
                parse_dim(v.data)
            except SymbolicDimError as err:
                raise VerifyException(f"#graph.sizes: {err}") from err

    def values(self) -> list[Dim]:
        return [parse_dim(v.data) for v in self.values_.data]

    def symbols(self) -> set[str]:
        return {s for v in self.values() if isinstance(v, SymDim) for s in v.symbols()}


def sizes_attr(values: Sequence[Dim]) -> DenseArrayBase | SizesAttr:
    """An i64 array property, or a SizesAttr when a value is symbolic."""
    if all(isinstance(v, int) for v in values):
        return DenseArrayBase.from_list(i64, [int(v) for v in values])
    return SizesAttr(values)


def dims_of_attr(attr: DenseArrayBase | SizesAttr | None) -> tuple[Dim, ...]:
    """The values of an i64 array or SizesAttr property."""
    if isinstance(attr, SizesAttr):
        return tuple(attr.values())
    return ints_of(attr)


def static_ints(attr: DenseArrayBase | SizesAttr | None) -> tuple[int, ...] | None:
    """The values of an i64 array property, None when it holds size expressions."""
    return None if isinstance(attr, SizesAttr) else ints_of(attr)


def tensor_type(shape, element: Attribute) -> TensorType:
    """The tensor type of `shape` (ints and SymDims) and `element`."""
    symbolic = [d for d in shape if isinstance(d, SymDim)]
    if not symbolic:
        return _static_tensor_type(tuple(int(d) for d in shape), element)
    dims = [DYNAMIC_INDEX if isinstance(d, SymDim) else int(d) for d in shape]
    return TensorType(element, dims, SymbolicDimsAttr(symbolic))


@functools.lru_cache(maxsize=4096)
def _static_tensor_type(shape: tuple[int, ...], element: Attribute) -> TensorType:
    """One TensorType per static shape and element type: attributes are immutable values, and
    building one (with its verification) was an eighth of importing swin_t's 6,000 nodes."""
    return TensorType(element, shape)


def shape_of(value_or_type) -> tuple[Dim, ...]:
    """Shape of a tensor-typed SSA value or of a tensor type: ints, and a `SymDim` for each
    symbolic dimension (whose arithmetic refuses to become a concrete number)."""
    t = value_or_type if isinstance(value_or_type, TensorType) else value_or_type.type
    assert isinstance(t, TensorType)
    shape = t.get_shape()
    if isinstance(t.encoding, SymbolicDimsAttr):
        values = t.encoding.values()
        if len(values) != sum(d == DYNAMIC_INDEX for d in shape):
            raise VerifyException(f"{t}: one #graph.dims entry is needed per '?' dimension")
        it = iter(values)
        return tuple(next(it) if d == DYNAMIC_INDEX else d for d in shape)
    return tuple(shape)


def is_symbolic(value_or_type) -> bool:
    """Whether a tensor value or type has symbolic dimensions."""
    t = value_or_type.type if isinstance(value_or_type, SSAValue) else value_or_type
    return isinstance(t, TensorType) and isinstance(t.encoding, SymbolicDimsAttr)


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


class UnaryFields:
    """Mixin adding the one tensor operand `input` and the one tensor result `output` to a
    graph op definition (IRDL puts inherited operands after the class's own: an op with more
    operands declares its own)."""

    input = operand_def(TensorType)
    output = result_def(TensorType)

