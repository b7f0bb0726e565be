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

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
)
from xdsl.ir import Operation
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import MemoryWriteEffect
from xdsl.utils.exceptions import VerifyException

from onnxc.dialects.graph_base import GraphOp, SizesAttr, UnaryFields, dims_of_attr, shape_of
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
class NonZeroOp(DefinesSizes, UnaryFields):
    """ONNX NonZero: the indices of the input's nonzero elements, [rank, count] in row-major
    order. `count` (the run symbol `defines[0]`) is at most the input's element count."""

    name = "graph.nonzero"

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


@irdl_op_definition
class NonMaxSuppressionOp(DefinesSizes):
    """ONNX NonMaxSuppression: per batch and class, the boxes kept greedily in score order
    (ties to the lower index; a box is dropped when its IoU with a kept one is above
    `iou_threshold`), at most `max_output` per class, as [count, 3] rows (batch, class,
    box). `max_output` (i64) and the thresholds (f32) are one-element tensors; without a
    score threshold (`score_filter` 0) no box is filtered by score. `count` is at most
    batches * classes * boxes."""

    name = "graph.non_max_suppression"
    boxes = operand_def(TensorType)
    scores = operand_def(TensorType)
    max_output = operand_def(TensorType)
    iou_threshold = operand_def(TensorType)
    score_threshold = operand_def(TensorType)
    output = result_def(TensorType)
    center_point_box = prop_def(IntegerAttr)
    score_filter = prop_def(IntegerAttr)

    def verify_element_types(self) -> None:
        if self.boxes.type.get_element_type() != self.scores.type.get_element_type():
            raise VerifyException(f"{self.name}: boxes and scores differ in element type")
        _require_i64(self, self.output)

    def infer_shapes(self):
        boxes, scores = shape_of(self.boxes), shape_of(self.scores)
        if len(boxes) != 3 or boxes[2] != 4 or len(scores) != 3:
            raise ValueError("boxes must be [batches, boxes, 4] and scores "
                             "[batches, classes, boxes]")
        if len(self.defines.data) != 1:
            raise ValueError("defines one count")
        return [(*self.defined(), 3)]

    def defined_sizes(self) -> dict[str, Dim | None]:
        (count,) = _names(self.defines)
        batches, boxes, _ = shape_of(self.boxes)
        return {count: batches * shape_of(self.scores)[1] * boxes}


@irdl_op_definition
class BindSizesOp(DefinesSizes):
    """The elements of a small integer tensor computed in the run, as sizes: the shape an
    Expand or a Resize gets from data (`defines[i]` is element i, which a check before it
    found >= 0). No result: the sizes are what later types name. Not Pure, so that nothing
    removes it while types use its sizes (a write effect: xDSL merges GraphOp's Pure into
    every subclass's traits, and a write outweighs it)."""

    name = "graph.bind_sizes"
    values = operand_def(TensorType)
    bounds = opt_prop_def(DenseArrayBase | SizesAttr)
    """each size's bound where the computation clamps it (a run-time Slice's bounds are at
    most the dimension), so its buffers need no re-run to grow"""
    traits = traits_def(MemoryWriteEffect())
    assembly_format = "`(` operands `)` attr-dict `:` type(operands)"

    def infer_shapes(self):
        el = self.values.type.get_element_type()
        if not isinstance(el, IntegerType) or el.width.data == 1:
            raise ValueError("the sizes must be integers")
        count = shape_of(self.values)
        if not all(isinstance(d, int) for d in count) or num_elements(count) != len(
                self.defines.data):
            raise ValueError("defines one size per element of a tensor of static size")
        if self.bounds is not None and len(dims_of_attr(self.bounds)) != len(self.defines.data):
            raise ValueError("bounds must give one bound per size")
        return []

    def defined_sizes(self) -> dict[str, Dim | None]:
        if self.bounds is None:
            return dict.fromkeys(_names(self.defines))
        return dict(zip(_names(self.defines), dims_of_attr(self.bounds), strict=True))


DYNAMIC_OPS = [NonZeroOp, NonMaxSuppressionOp, BindSizesOp]

__all__ = ["DYNAMIC_OPS", "BindSizesOp", "DefinesSizes", "NonMaxSuppressionOp", "NonZeroOp",
           "defined_sizes"]
