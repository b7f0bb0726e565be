"""Graph ops that move data: reshapes, transposes, concat/split, slice, gather, pad, shape."""

from __future__ import annotations

import abc
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    UnitAttr,
    i32,
    i64,
)
from xdsl.ir import SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.utils.exceptions import VerifyException

from onnxc.dialects import graph_shapes as shapes
from onnxc.dialects.graph_base import (
    GraphOp,
    SizesAttr,
    UnaryFields,
    dims_of_attr,
    int_of,
    ints_of,
    shape_of,
)
from onnxc.dialects.graph_traits import AnyElementKernel, NHWCKernel
from onnxc.dialects.layout import transpose_moves_no_data
from onnxc.dialects.size_facts import require_equal
from onnxc.dialects.size_text import parse_dim
from onnxc.dialects.symbolic_dims import (
    Dim,
    SymbolicDimError,
    SymDim,
    is_static,
    num_elements,
)

# --------------------------------------------------------------------------- data movement


class ReshapeLikeOp(GraphOp, UnaryFields, abc.ABC):
    """Same data, new shape: the result type carries the shape."""

    def __init__(self, *, operands=None, **kwargs):
        # `operands=[x]` builds the usual form even where an optional shape/axes operand
        # exists (IRDL otherwise wants one entry per operand definition)
        defs = len(type(self).get_irdl_definition().operands)
        if operands is not None and len(operands) < defs:
            operands = [*operands, *([[]] * (defs - len(operands)))]
        super().__init__(operands=operands, **kwargs)

    def same_element_type_operands(self) -> Sequence[SSAValue]:
        return (self.input,)  # a shape/axes operand is i64 whatever the data is

    def verify_(self) -> None:
        super().verify_()
        # compared as sizes: a symbolic `?` counts as its #graph.dims size, not -1; counts
        # that agree only for some sizes are a guard (recorded when the importer verifies)
        try:
            require_equal(num_elements(shape_of(self.input)),
                          num_elements(shape_of(self.output)), "the element count")
        except ValueError:
            raise VerifyException(
                f"{self.name}: element counts of input and result differ") from None


@irdl_op_definition
class ReshapeOp(ReshapeLikeOp):
    """`shape` is present only when the importer could not read ONNX's shape input as a
    constant; the result type (ONNX's inferred shape) decides, and fold-axes-inputs drops
    the operand once folding made it constant."""

    name = "graph.reshape"
    traits = traits_def(AnyElementKernel())
    input = operand_def(TensorType)  # redeclared so that it stays operand 0
    shape = opt_operand_def(TensorType)


@irdl_op_definition
class FlattenOp(ReshapeLikeOp):
    """ONNX Flatten: a 2-D reshape to (prod(dims[:axis]), prod(dims[axis:]));
    `axis` is normalized to [0, rank] on import."""

    name = "graph.flatten"
    traits = traits_def(AnyElementKernel())
    axis = prop_def(IntegerAttr)

    def infer_shapes(self):
        return [shapes.flatten_shape(shape_of(self.input), int_of(self.axis))]


@irdl_op_definition
class SqueezeOp(ReshapeLikeOp):
    """`axes_input` as for graph.reshape's `shape`; `axes` is then read off the shapes."""

    name = "graph.squeeze"
    traits = traits_def(AnyElementKernel())
    input = operand_def(TensorType)  # redeclared so that it stays operand 0
    axes = prop_def(DenseArrayBase)
    axes_input = opt_operand_def(TensorType)

    def infer_shapes(self):
        return [shapes.squeeze_shape(shape_of(self.input), ints_of(self.axes))]


@irdl_op_definition
class UnsqueezeOp(ReshapeLikeOp):
    """`axes_input` as for graph.reshape's `shape`; `axes` is then read off the shapes."""

    name = "graph.unsqueeze"
    traits = traits_def(AnyElementKernel())
    input = operand_def(TensorType)  # redeclared so that it stays operand 0
    axes = prop_def(DenseArrayBase)
    axes_input = opt_operand_def(TensorType)

    def infer_shapes(self):
        return [shapes.unsqueeze_shape(shape_of(self.input), ints_of(self.axes))]


@irdl_op_definition
class TransposeOp(GraphOp, UnaryFields):
    """ONNX Transpose: permute the dimensions by `perm` (the importer spells out ONNX's
    default, the reversed order)."""

    name = "graph.transpose"
    traits = traits_def(AnyElementKernel())
    perm = prop_def(DenseArrayBase)

    def infer_shapes(self):
        return [shapes.transpose_shape(shape_of(self.input), ints_of(self.perm))]

    def is_view(self) -> bool:
        """Whether the result's buffer holds the input's bytes as they are: `perm` moves
        only dimensions of size 1, or the two layouts undo it (an NHWC tensor seen as the
        plain [N, H, W, C] of ConvNeXt's `permute(0, 2, 3, 1)`; fold-layout-converts makes
        those). The lowering then makes the result a view, as for a reshape."""
        return transpose_moves_no_data(self.input.type, self.output.type, ints_of(self.perm))


@irdl_op_definition
class AsStridedOp(GraphOp, UnaryFields):
    """result[i_0, .., i_n] = flat(input)[offset + i_0 * strides[0] + .. + i_n * strides[n]],
    flat(input) being the input's elements in row-major order (torch.as_strided). Static
    shapes only. attention-operand-views makes it from the transposes, splits, reshapes and
    constant-index gathers between a projection and an attention; the lowering passes it as
    a view (a strided memref of the input's buffer, no copy) to kernels that read strided
    operands (`KernelRule.strided_operands`), and copies it for any other reader."""

    name = "graph.as_strided"
    traits = traits_def(AnyElementKernel())
    offset = prop_def(IntegerAttr)
    strides = prop_def(DenseArrayBase)

    def verify_(self) -> None:
        super().verify_()
        x, y = shape_of(self.input), shape_of(self.output)
        if not is_static(x) or not is_static(y):
            raise VerifyException(f"{self.name}: needs static shapes, got {x} -> {y}")
        strides, offset = ints_of(self.strides), int_of(self.offset)
        if len(strides) != len(y):
            raise VerifyException(
                f"{self.name}: {len(strides)} strides for a rank-{len(y)} result")
        if offset < 0 or any(s < 0 for s in strides):
            raise VerifyException(f"{self.name}: negative offset or stride ({offset}, "
                                  f"{list(strides)})")
        if num_elements(y) and offset + sum((n - 1) * s for n, s in zip(y, strides)) >= \
                num_elements(x):
            raise VerifyException(f"{self.name}: offset {offset} and strides {list(strides)}"
                                  f" reach past the input's {num_elements(x)} elements")


@irdl_op_definition
class ConcatOp(GraphOp):
    """ONNX Concat: join one or more inputs along `axis`; the other dimensions must agree."""

    name = "graph.concat"
    traits = traits_def(AnyElementKernel(), NHWCKernel(symbolic=True))
    inputs = var_operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(IntegerAttr)

    def infer_shapes(self):
        if not self.inputs:
            raise ValueError("needs at least one input")
        return [shapes.concat_shape([shape_of(v) for v in self.inputs], int_of(self.axis))]


@irdl_op_definition
class SplitOp(GraphOp):
    """Split along `axis`; the result types give the part sizes."""

    name = "graph.split"
    traits = traits_def(AnyElementKernel(), NHWCKernel())
    input = operand_def(TensorType)
    outputs = var_result_def(TensorType)
    axis = prop_def(IntegerAttr)

    def infer_shapes(self):
        x = shape_of(self.input)
        axis = shapes.normalize_axis(int_of(self.axis), len(x))
        parts = [shape_of(r) for r in self.outputs]
        if not parts:
            raise ValueError("needs at least one result")
        require_equal(sum(p[axis] for p in parts), x[axis],  # a guard, where open
                      f"part sizes do not add up to dimension {x[axis]}")
        return [x[:axis] + (p[axis],) + x[axis + 1 :] for p in parts]


@irdl_op_definition
class SliceOp(GraphOp, UnaryFields):
    """ONNX Slice with constant axes/steps and starts/ends known at import (unclamped, as
    in the model): integers, or size expressions from shape data (`#graph.sizes`,
    `x[:, past:past+seq]`)."""

    name = "graph.slice"
    traits = traits_def(AnyElementKernel(), NHWCKernel())
    starts = prop_def(DenseArrayBase | SizesAttr)
    ends = prop_def(DenseArrayBase | SizesAttr)
    axes = prop_def(DenseArrayBase)
    steps = prop_def(DenseArrayBase)

    def bounds(self) -> tuple[tuple[Dim, ...], tuple[Dim, ...]]:
        """(starts, ends) as ints and SymDims."""
        return dims_of_attr(self.starts), dims_of_attr(self.ends)

    def infer_shapes(self):
        starts, ends = self.bounds()
        return [shapes.slice_shape(
            shape_of(self.input), starts, ends, ints_of(self.axes), ints_of(self.steps),
        )]


@irdl_op_definition
class GatherOp(GraphOp):
    """ONNX Gather: take the slices of `data` along `axis` selected by the integer
    `indices` (result shape: data[:axis] + indices + data[axis+1:]). The importer
    makes constant negative indices non-negative."""

    name = "graph.gather"
    traits = traits_def(AnyElementKernel())
    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    nonnegative = opt_prop_def(UnitAttr)
    """set on a Slice with run-time bounds (frontend/onnx_symbolic.py): indices must lie in
    [0, dim), ONNX's negative ones are an error"""

    def same_element_type_operands(self) -> Sequence[SSAValue]:
        return (self.data,)

    def verify_element_types(self) -> None:
        super().verify_element_types()
        if not isinstance(self.indices.type.get_element_type(), IntegerType):
            raise VerifyException(f"{self.name}: indices must have an integer element type")

    def infer_shapes(self):
        return [shapes.gather_shape(shape_of(self.data), shape_of(self.indices),
                                    int_of(self.axis))]


@irdl_op_definition
class PadOp(GraphOp, UnaryFields):
    """Pad with `pads` ([begin..., end...]; sizes computed in the run too, `#graph.sizes`);
    mode is constant, reflect, edge or wrap."""

    name = "graph.pad"
    pads = prop_def(DenseArrayBase | SizesAttr)
    mode = prop_def(StringAttr)
    value = prop_def(FloatAttr)

    def pad_sizes(self) -> tuple[Dim, ...]:
        return dims_of_attr(self.pads)

    def infer_shapes(self):
        if self.mode.data not in ("constant", "reflect", "edge", "wrap"):
            raise ValueError(f"unknown pad mode '{self.mode.data}'")
        return [shapes.pad_shape(shape_of(self.input), self.pad_sizes())]


@irdl_op_definition
class ShapeOp(GraphOp, UnaryFields):
    """The input's shape (dimensions start..end) as a 1-D i64 tensor."""

    name = "graph.shape"
    start = prop_def(IntegerAttr)
    end = prop_def(IntegerAttr)

    def verify_element_types(self) -> None:
        if self.output.type.get_element_type() != i64:
            raise VerifyException(f"{self.name}: result must be a tensor of i64")

    def infer_shapes(self):
        rank = len(shape_of(self.input))
        start, end = (max(0, min(rank, v + rank if v < 0 else v))
                      for v in (int_of(self.start), int_of(self.end)))
        return [(max(0, end - start),)]


@irdl_op_definition
class SymbolicConstantOp(GraphOp):
    """Integer data computed from symbolic sizes at run time: one size polynomial (or plain
    int) per element, row-major, e.g. `values = ["seq", "1", "past+seq"]`.

    The importer folds shape computations (Shape -> Gather -> Concat ...) at import; when
    such data must exist as a tensor at run time (a Loop's trip count `seq`, a shape cast to
    float, a graph output), it becomes this op. Its result type is static (the element count
    is known), only the values depend on the symbols; the kernel reads them from the entry's
    size arguments (`size_symbols`)."""

    name = "graph.symbolic_constant"
    values = prop_def(ArrayAttr[StringAttr])
    """one size polynomial per element (`parse_dim` syntax)"""
    output = result_def(TensorType)
    assembly_format = "attr-dict `:` type($output)"

    def __init__(self, dims: Sequence[Dim], result_type: TensorType):
        super().__init__(properties={"values": ArrayAttr([StringAttr(str(d)) for d in dims])},
                         result_types=[result_type])

    def dims(self) -> list[Dim]:
        """The elements as ints and SymDims."""
        return [parse_dim(v.data) for v in self.values.data]

    def size_symbols(self) -> set[str]:
        """The symbols the values name: the lowering passes them to the kernel."""
        return {s for d in self.dims() if isinstance(d, SymDim) for s in d.symbols()}

    def verify_(self) -> None:
        t = self.output.type
        if not isinstance(t, TensorType) or t.get_element_type() not in (i64, i32):
            raise VerifyException(f"{self.name}: result must be a tensor of i64 or i32")
        shape = shape_of(t)
        if not is_static(shape):
            raise VerifyException(f"{self.name}: result shape must be static")
        try:
            dims = self.dims()
        except SymbolicDimError as err:
            raise VerifyException(f"{self.name}: {err}") from err
        if len(dims) != num_elements(shape):
            raise VerifyException(f"{self.name}: {len(dims)} values for a result of "
                                  f"{num_elements(shape)} elements")
