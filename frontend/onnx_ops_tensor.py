"""Data movement and constants: Reshape, Squeeze, Slice, Pad, Split, Gather, Constant, ...

These ops take shapes, axes and bounds that ONNX allows to be computed but that are
constant in practice; they become properties here. Before the opsets listed they were
attributes: Reshape shape (5), Pad pads/value (11), Slice starts/ends/axes (10), Split
sizes (13), Squeeze/Unsqueeze axes (13). The `*_params` helpers are shared with folding.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import StringAttr

from onnxc.dialects import graph
from onnxc.dialects import graph_shapes as shapes
from onnxc.dialects.dense_data import element_dtype, from_numpy
from onnxc.dialects.graph_base import sizes_attr
from onnxc.dialects.graph_strings import StringType
from onnxc.dialects.size_facts import require_at_least
from onnxc.dialects.symbolic_dims import (
    Dim,
    SymbolicDimError,
    SymDim,
    ceildiv,
    is_static,
    num_elements,
)
from onnxc.frontend import onnx_types as types
from onnxc.frontend.onnx_context import FOLD_LIMIT, NodeContext, Result, Tensor
from onnxc.frontend.onnx_ops_math import Converter
from onnxc.frontend.onnx_shape_data import dims_of, shape_array


def _axis(ctx: NodeContext, axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise ctx.invalid(f"axis {axis} out of range for rank {rank}")
    return axis % rank


def _ints(array: np.ndarray) -> list[int]:
    return [int(v) for v in np.asarray(array).reshape(-1)]


# ---------------------------------------------------------------------- shared parameters


def _dims(array: np.ndarray) -> list[Dim]:
    """A shape input's values: ints, and SymDims where it is symbolic shape data."""
    return dims_of(array)


def _text(dims) -> str:
    return "[" + ", ".join(str(d) for d in dims) + "]"


def reshape_params(ctx: NodeContext) -> tuple[Dim, ...]:
    """The result shape of Reshape with 0 (copy) and -1 (infer) resolved. Symbolic sizes
    (in the input's shape or the target) solve -1 by exact division: [1, seq, 768] to
    [0, -1, 12, 64] is [1, seq, 12, 64]."""
    x = ctx.shape(0)
    target = ctx.ints("shape") if ctx.opset < 5 else _dims(ctx.constant(1, "shape"))
    if target is None:
        raise ctx.invalid("required attribute 'shape' is missing")
    allow_zero = ctx.attr("allowzero", 0) if ctx.opset >= 14 else 0
    out: list[Dim] = []
    for i, d in enumerate(target):
        if isinstance(d, int) and d == 0 and not allow_zero:
            if i >= len(x):
                raise ctx.invalid(f"shape {_text(target)} copies dimension {i} of rank-{len(x)} "
                                  f"input")
            d = x[i]
        elif d < -1:
            raise ctx.invalid(f"invalid dimension {d} in shape {_text(target)}")
        out.append(d)
    total = num_elements(x)
    if out.count(-1) > 1:
        raise ctx.invalid(f"shape {_text(target)} has more than one -1")
    if -1 in out:
        known = num_elements([d for d in out if d != -1])
        symbolic = isinstance(total, SymDim) or isinstance(known, SymDim)
        if known == 0 or (not symbolic and total % known):
            raise ctx.invalid(f"cannot reshape {_text(x)} to {_text(target)}")
        out[out.index(-1)] = total // known
    try:
        shapes.same_dim(num_elements(out), total,
                 f"cannot reshape {_text(x)} to {_text(target)}: element counts differ")
    except ValueError as err:
        raise ctx.invalid(str(err)) from None
    return tuple(out)


def squeeze_params(ctx: NodeContext) -> list[int]:
    """Normalized, sorted axes to squeeze (absent: every dimension of size 1)."""
    x = ctx.shape(0)
    axes = ctx.ints("axes") if ctx.opset < 13 else ctx.optional_constant(1, "axes")
    if axes is None:
        symbolic = [str(d) for d in x if isinstance(d, SymDim)]
        if symbolic:  # whether they are 1 is known only at run time
            raise SymbolicDimError(f"Squeeze without axes squeezes the dimensions of size 1, "
                                   f"which {', '.join(symbolic)} may be")
        return [i for i, d in enumerate(x) if d == 1]
    return sorted({_axis(ctx, a, len(x)) for a in _ints(axes)})


def unsqueeze_params(ctx: NodeContext) -> list[int]:
    """Normalized, sorted axes of the result that Unsqueeze inserts."""
    axes = ctx.ints("axes") if ctx.opset < 13 else _ints(ctx.constant(1, "axes"))
    if axes is None:
        raise ctx.invalid("required attribute 'axes' is missing")
    rank = ctx.rank(0) + len(axes)
    norm = sorted(_axis(ctx, a, rank) for a in axes)
    if len(set(norm)) != len(norm):
        raise ctx.invalid(f"repeated axes {axes}")
    return norm


def slice_params(ctx: NodeContext) -> tuple[list[Dim], list[Dim], list[int], list[int]]:
    """(starts, ends, axes, steps) with absent axes/steps filled and axes normalized;
    starts and ends are sizes where they are symbolic shape data."""
    rank = ctx.rank(0)
    if ctx.opset < 10:
        starts, ends = ctx.ints("starts"), ctx.ints("ends")
        if starts is None or ends is None:
            raise ctx.invalid("attributes 'starts' and 'ends' are required")
        axes, steps = ctx.ints("axes"), None
    else:
        starts, ends = _dims(ctx.constant(1, "starts")), _dims(ctx.constant(2, "ends"))
        axes_array = ctx.optional_constant(3, "axes")
        steps_array = ctx.optional_constant(4, "steps")
        axes = None if axes_array is None else _ints(axes_array)
        steps = None if steps_array is None else _ints(steps_array)
    axes = list(range(len(starts))) if axes is None else [_axis(ctx, a, rank) for a in axes]
    steps = [1] * len(starts) if steps is None else steps
    _check_slice_params(ctx, starts, ends, axes, steps)
    return starts, ends, axes, steps


def _slice_axes_steps(ctx: NodeContext, count: int) -> tuple[list[int], list[int]]:
    """A Slice's axes and steps (constants even when its bounds are not), for `count` bounds."""
    axes_array = ctx.optional_constant(3, "axes")
    steps_array = ctx.optional_constant(4, "steps")
    axes = list(range(count)) if axes_array is None else [
        _axis(ctx, a, ctx.rank(0)) for a in _ints(axes_array)]
    steps = [1] * count if steps_array is None else _ints(steps_array)
    _check_slice_params(ctx, [0] * count, [0] * count, axes, steps)
    return axes, steps


def _check_slice_params(ctx: NodeContext, starts, ends, axes, steps) -> None:
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ctx.invalid("starts, ends, axes and steps differ in length")
    if len(set(axes)) != len(axes):
        raise ctx.invalid(f"repeated axes {axes}")
    if 0 in steps:
        raise ctx.invalid("slice step must not be 0")


def concat_axis(ctx: NodeContext) -> int:
    axis = ctx.attr("axis", 1) if ctx.opset < 4 else ctx.attr("axis")
    return _axis(ctx, axis, ctx.rank(0))


def transpose_perm(ctx: NodeContext) -> list[int]:
    rank = ctx.rank(0)
    return ctx.ints("perm") or list(reversed(range(rank)))


# ---------------------------------------------------------------------- converters


def _with_shape(ctx: NodeContext, shape: tuple[int, ...]):
    return types.tensor_type(shape, ctx.element_type(0))


def convert_constant(ctx: NodeContext) -> list[Result]:
    for name in ("value", "value_float", "value_floats", "value_int", "value_ints",
                 "value_string", "value_strings"):
        if ctx.has_attr(name):
            value = ctx.attr(name)
            break
    else:
        present = [a.name for a in ctx.node.attribute]
        if present:
            raise ctx.unsupported(f"Constant with attribute '{present[0]}'")
        raise ctx.invalid("Constant needs a value attribute")
    if name in ("value_float", "value_floats"):
        value = np.array(value, dtype=np.float32)
    elif name in ("value_int", "value_ints"):
        value = np.array(value, dtype=np.int64)
    elif name in ("value_string", "value_strings"):
        value = np.array(value, dtype=object)
    return [value]


def convert_constant_of_shape(ctx: NodeContext) -> list[Result]:
    """Float data stays a `graph.constant_of_shape`; small integer data is folded. A
    symbolic shape (shape data, or a shape the run computes: run sizes) gives a
    `graph.constant_of_shape` of symbolic type."""
    shape = tuple(ctx.sizes(0, "shape"))
    if any(isinstance(d, int) and d < 0 for d in shape):
        raise ctx.invalid(f"negative dimension in shape {_text(shape)}")
    value = ctx.attr("value", None)
    value = np.zeros((1,), np.float32) if value is None else np.asarray(value).reshape(-1)
    if value.size != 1:
        raise ctx.invalid(f"value must hold one element, got {value.size}")
    if value.dtype.kind in "biu" and is_static(shape) and math.prod(shape) <= FOLD_LIMIT:
        return [np.full(shape, value[0], dtype=value.dtype)]
    el = Tensor.of_array(value).element_type
    op = graph.ConstantOfShapeOp(properties={"value": from_numpy(value)},
                                 result_types=[types.tensor_type(shape, el)])
    return [ctx.emit1(op)]


def _runtime_input(ctx: NodeContext, i: int, min_opset: int) -> bool:
    """Input `i` (shape/axes) exists but is computed by ops the import-time folder leaves to
    the graph (float arithmetic, large tensors): it becomes an operand that fold-axes-inputs
    turns into a property after fold-constant-ops evaluated it."""
    return ctx.opset >= min_opset and ctx.has_input(i) and ctx.tensor(i).array is None


def _inferred_shape(ctx: NodeContext, what: str) -> tuple[int, ...]:
    shape = ctx.inferred_shape(0)
    if shape is None:
        ctx.constant(1, what)  # raises the usual "must be a constant" error
    return shape


def _axes_between(longer: tuple[int, ...], shorter: tuple[int, ...]) -> list[int]:
    """Positions of `longer` that are the 1-dims missing from `shorter` (a valid choice of
    Squeeze/Unsqueeze axes: any choice moves no data)."""
    axes, i = [], 0
    for j, d in enumerate(longer):  # earliest-match subsequence; skipped dims must be 1
        if i < len(shorter) and d == shorter[i]:
            i += 1
        else:
            axes.append(j)
    if i != len(shorter) or any(longer[a] != 1 for a in axes):
        raise ValueError(f"{list(shorter)} and {list(longer)} differ by more than 1-dims")
    return axes


def convert_reshape(ctx: NodeContext) -> list[Result]:
    if _runtime_input(ctx, 1, 5):
        out = _with_shape(ctx, _inferred_shape(ctx, "shape"))
        op = graph.ReshapeOp(operands=[ctx.operand(0), ctx.operand(1)], result_types=[out])
        return [ctx.emit1(op)]
    out = _with_shape(ctx, reshape_params(ctx))
    return [ctx.emit1(graph.ReshapeOp(operands=[ctx.operand(0)], result_types=[out]))]


def convert_flatten(ctx: NodeContext) -> list[Result]:
    rank = ctx.rank(0)
    axis = ctx.attr("axis", 1)
    if not -rank <= axis <= rank:
        raise ctx.invalid(f"axis {axis} out of range for rank {rank}")
    axis = axis + rank if axis < 0 else axis
    out = _with_shape(ctx, shapes.flatten_shape(ctx.shape(0), axis))
    op = graph.FlattenOp(operands=[ctx.operand(0)], result_types=[out],
                         properties={"axis": types.i64_attr(axis)})
    return [ctx.emit1(op)]


def _squeeze_like(ctx: NodeContext, op_class, axes_of, result_shape, inserts: bool
                  ) -> list[Result]:
    """Squeeze, or Unsqueeze (`inserts`): the axes `axes_of` reads, or with axes computed
    at run time (an operand until fold-axes-inputs), the 1-dims by which the inferred result
    shape and the input's differ."""
    if _runtime_input(ctx, 1, 13):
        shape = _inferred_shape(ctx, "axes")
        longer, shorter = (shape, ctx.shape(0)) if inserts else (ctx.shape(0), shape)
        axes = ctx.infer(_axes_between, longer, shorter)
        out = _with_shape(ctx, shape)
        operands = [ctx.operand(0), ctx.operand(1)]
    else:
        axes = axes_of(ctx)
        out = _with_shape(ctx, ctx.infer(result_shape, ctx.shape(0), axes))
        operands = [ctx.operand(0)]
    op = op_class(operands=operands, result_types=[out],
                  properties={"axes": types.i64_array(axes)})
    return [ctx.emit1(op)]


def convert_squeeze(ctx: NodeContext) -> list[Result]:
    return _squeeze_like(ctx, graph.SqueezeOp, squeeze_params, shapes.squeeze_shape, False)


def convert_unsqueeze(ctx: NodeContext) -> list[Result]:
    return _squeeze_like(ctx, graph.UnsqueezeOp, unsqueeze_params, shapes.unsqueeze_shape,
                         True)


def convert_transpose(ctx: NodeContext) -> list[Result]:
    perm = transpose_perm(ctx)
    out = _with_shape(ctx, ctx.infer(shapes.transpose_shape, ctx.shape(0), perm))
    op = graph.TransposeOp(operands=[ctx.operand(0)], result_types=[out],
                           properties={"perm": types.i64_array(perm)})
    return [ctx.emit1(op)]


def convert_concat(ctx: NodeContext) -> list[Result]:
    axis = concat_axis(ctx)
    inputs = ctx.tensors()
    out = _with_shape(ctx, ctx.infer(shapes.concat_shape, [t.shape for t in inputs], axis))
    op = graph.ConcatOp(operands=[ctx.operands()], result_types=[out],
                        properties={"axis": types.i64_attr(axis)})
    return [ctx.emit1(op)]


def _split_sizes(ctx: NodeContext, dim: Dim) -> list[Dim]:
    """Split's part sizes; on a symbolic axis what they need of its size is guarded (an
    equal split of `seq` into 3 needs 3 to divide seq)."""
    if ctx.opset >= 13 or (ctx.opset < 2 and ctx.has_input(1)):
        sizes = ctx.optional_constant(1, "split")
        sizes = None if sizes is None else _dims(sizes)
    else:
        sizes = ctx.ints("split")
    parts = ctx.num_outputs
    message = f"split sizes {sizes} do not divide {dim} into {parts} parts"
    if sizes is not None:
        if len(sizes) != parts:
            raise ctx.invalid(message)
        for size in sizes:
            _require(ctx, size, 0, message, equal=False)
        _require(ctx, sum(sizes), dim, message)
        return sizes
    if ctx.opset >= 18 and ctx.has_attr("num_outputs"):
        parts = ctx.attr("num_outputs")
        if parts != ctx.num_outputs or parts < 1:
            raise ctx.invalid(f"cannot split {dim} into {parts} parts")
        chunk = ceildiv(dim, parts)
        sizes = [chunk] * (parts - 1) + [dim - chunk * (parts - 1)]
        _require(ctx, sizes[-1], 0, f"cannot split {dim} into {parts} parts", equal=False)
        return sizes
    _require(ctx, dim % parts, 0, f"cannot split dimension {dim} into {parts} equal parts")
    return [dim // parts] * parts


def _require(ctx: NodeContext, a: Dim, b: Dim, message: str, equal: bool = True) -> None:
    """a == b (a >= b unless `equal`): an invalid model when never, a guard when the sizes
    decide."""
    try:
        if equal:
            shapes.same_dim(a, b, message)
        elif isinstance(a, int) and isinstance(b, int):
            if a < b:
                raise ValueError(message)
        else:
            require_at_least(a, b, message)
    except ValueError as err:
        raise ctx.invalid(str(err)) from None


def split_params(ctx: NodeContext) -> tuple[int, list[int]]:
    """Split's axis (normalized) and part sizes."""
    x = ctx.shape(0)
    axis = _axis(ctx, ctx.attr("axis", 0), len(x))
    return axis, _split_sizes(ctx, x[axis])


def convert_split(ctx: NodeContext) -> list[Result]:
    x = ctx.shape(0)
    axis, sizes = split_params(ctx)
    results = [_with_shape(ctx, x[:axis] + (s,) + x[axis + 1 :]) for s in sizes]
    op = ctx.emit(graph.SplitOp(operands=[ctx.operand(0)], result_types=[results],
                                properties={"axis": types.i64_attr(axis)}))
    return list(op.results)


def convert_slice(ctx: NodeContext) -> list[Result]:
    if ctx.opset >= 10 and (ctx.tensor(1).array is None or ctx.tensor(2).array is None):
        from onnxc.frontend.onnx_symbolic import dynamic_slice  # it builds on this module

        axes, steps = _slice_axes_steps(ctx, ctx.shape(1)[0] if ctx.rank(1) == 1 else 0)
        return [dynamic_slice(ctx, axes, steps)]
    starts, ends, axes, steps = slice_params(ctx)
    out = _with_shape(ctx, ctx.infer(shapes.slice_shape, ctx.shape(0), starts, ends, axes,
                                     steps))
    op = graph.SliceOp(
        operands=[ctx.operand(0)],
        result_types=[out],
        properties={
            "starts": sizes_attr(starts),
            "ends": sizes_attr(ends),
            "axes": types.i64_array(axes),
            "steps": types.i64_array(steps),
        },
    )
    return [ctx.emit1(op)]


def convert_gather(ctx: NodeContext) -> list[Result]:
    """Gather; constant negative indices are made non-negative here."""
    x = ctx.shape(0)
    axis = _axis(ctx, ctx.attr("axis", 0), len(x))
    indices = ctx.tensor(1)
    known = indices.array
    if known is not None and indices.symbolic_data:
        known = None  # positions computed from the sizes: run-time indices, checked
    if known is not None and known.size == 1 and isinstance(x[axis], SymDim) \
            and int(known.reshape(-1)[0]) < 0:
        return [_gather_from_end(ctx, axis, int(known.reshape(-1)[0]), indices.shape)]
    if known is not None and known.size and isinstance(x[axis], SymDim) and known.min() >= 0:
        pass  # a symbolic axis: checked against its size in the run (insert_checks)
    elif known is not None and known.size and isinstance(x[axis], SymDim):
        known = None  # negative indices into a symbolic axis: wrapped in the run
    elif known is not None and known.size:
        if known.min() < -x[axis] or known.max() >= x[axis]:
            raise ctx.invalid(f"indices out of range for dimension {x[axis]}")
        if known.min() < 0:
            fixed = np.where(known < 0, known + x[axis], known).astype(known.dtype)
            indices = Tensor.of_array(fixed, indices.name)
    out = _with_shape(ctx, ctx.infer(shapes.gather_shape, x, indices.shape, axis))
    op = graph.GatherOp(operands=[ctx.operand(0), ctx.materialize(indices)], result_types=[out],
                        properties={"axis": types.i64_attr(axis)})
    return [ctx.emit1(op)]


_INT64_MAX = 2**63 - 1


def _gather_from_end(ctx: NodeContext, axis: int, index: int, indices_shape) -> Result:
    """Gather of one negative index along a symbolic axis (x[:, -1] of [1, seq, 768]):
    its position seq - 1 is no constant, so it is the Slice [index, index + 1) counted
    from the end, reshaped to Gather's result shape."""
    x = ctx.shape(0)
    end = _INT64_MAX if index == -1 else index + 1
    sliced = ctx.infer(shapes.slice_shape, x, [index], [end], [axis], [1])
    value = ctx.emit1(graph.SliceOp(
        operands=[ctx.operand(0)], result_types=[_with_shape(ctx, sliced)],
        properties={"starts": types.i64_array([index]), "ends": types.i64_array([end]),
                    "axes": types.i64_array([axis]), "steps": types.i64_array([1])}))
    out = ctx.infer(shapes.gather_shape, x, tuple(indices_shape), axis)
    if tuple(out) == tuple(sliced):
        return value
    return ctx.emit1(graph.ReshapeOp(operands=[value], result_types=[_with_shape(ctx, out)]))


def _pads_and_value(ctx: NodeContext) -> tuple[list[Dim], float]:
    rank = ctx.rank(0)
    if ctx.opset < 11:
        pads = ctx.ints("pads" if ctx.opset >= 2 else "paddings")
        if pads is None:
            raise ctx.invalid("required attribute 'pads' is missing")
        return pads, float(ctx.attr("value", 0.0))
    pads = ctx.sizes(1, "pads")  # computed in the run: sizes (>= 0)
    value_array = ctx.optional_constant(2, "constant_value")
    value = 0.0
    if value_array is not None and value_array.size:
        value = float(value_array.reshape(-1)[0])
    axes_array = ctx.optional_constant(3, "axes") if ctx.opset >= 18 else None
    if axes_array is not None:
        axes = [_axis(ctx, a, rank) for a in _ints(axes_array)]
        if len(pads) != 2 * len(axes):
            raise ctx.invalid(f"{len(pads)} pads for {len(axes)} axes")
        full = [0] * (2 * rank)
        for i, a in enumerate(axes):
            full[a], full[a + rank] = pads[i], pads[i + len(axes)]
        pads = full
    return pads, value


def convert_pad(ctx: NodeContext) -> list[Result]:
    mode = ctx.attr("mode", "constant")
    if mode not in ("constant", "reflect", "edge") and not (mode == "wrap" and ctx.opset >= 19):
        raise ctx.unsupported(f"Pad mode '{mode}'")
    pads, value = _pads_and_value(ctx)
    out = _with_shape(ctx, ctx.infer(shapes.pad_shape, ctx.shape(0), pads))
    op = graph.PadOp(
        operands=[ctx.operand(0)],
        result_types=[out],
        properties={
            "pads": sizes_attr(pads),
            "mode": StringAttr(mode),
            "value": types.float_attr(value, ctx.element_type(0)),
        },
    )
    return [ctx.emit1(op)]


def convert_expand(ctx: NodeContext) -> list[Result]:
    """Expand(x, shape) = x * ones(shape) (x AND true for bool): the product broadcasts
    exactly as Expand does (`shape` may be symbolic shape data: the ones are a symbolic
    constant_of_shape; a shape the run computes is bound as run sizes). A symbolic size
    facing another dimension of x than 1 must be 1 or that dimension (a guard) and gives
    way to it: torch writes 1 for the dimensions `expand(-1, ...)` keeps."""
    shape = tuple(ctx.sizes(1, "shape"))
    x = ctx.shape(0)
    offset = len(shape) - len(x)
    for k, d in enumerate(shape):
        facing = x[k - offset] if k >= offset else 1
        if isinstance(d, SymDim) and facing != 1 and d != facing:
            _require(ctx, (d - 1) * (d - facing), 0,
                     f"Expand's shape[{k}] = {d} is neither 1 nor {facing}")
            shape = (*shape[:k], 1, *shape[k + 1:])
    out = ctx.infer(shapes.broadcast_shapes, x, shape)
    el = ctx.element_type(0)
    if out == ctx.shape(0):
        return [ctx.emit1(graph.IdentityOp(operands=[ctx.operand(0)],
                                           result_types=[ctx.tensor(0).type]))]
    if isinstance(el, StringType):  # strings have no product: Where(true of `shape`, x, x)
        true = ctx.emit1(graph.ConstantOfShapeOp(
            properties={"value": from_numpy(np.ones((1,), np.bool_))},
            result_types=[types.tensor_type(shape, types.element_type(types.TP.BOOL))]))
        return [ctx.emit1(graph.WhereOp(operands=[true, ctx.operand(0), ctx.operand(0)],
                                        result_types=[_with_shape(ctx, out)]))]
    one = np.ones((1,), dtype=element_dtype(el))
    ones = ctx.emit1(graph.ConstantOfShapeOp(properties={"value": from_numpy(one)},
                                             result_types=[types.tensor_type(shape, el)]))
    boolean = el == types.element_type(types.TP.BOOL)  # x AND true, as x * 1 for numbers
    op = (graph.AndOp if boolean else graph.MulOp)(operands=[ctx.operand(0), ones],
                                                   result_types=[_with_shape(ctx, out)])
    return [ctx.emit1(op)]


def shape_slice(ctx: NodeContext) -> tuple[int, ...]:
    """The dimensions Shape returns (start/end since opset 15, clamped as the spec says)."""
    x = ctx.shape(0)
    start, end = (ctx.attr("start", 0), ctx.attr("end", len(x))) if ctx.opset >= 15 else (0, len(x))
    start, end = (max(0, min(len(x), v + len(x) if v < 0 else v)) for v in (start, end))
    return x[start:end]


def convert_shape(ctx: NodeContext) -> list[Result]:
    """Shapes are known at import, so Shape is always a constant (shape data with SymDims
    for symbolic dimensions)."""
    return [shape_array(shape_slice(ctx))]


def convert_size(ctx: NodeContext) -> list[Result]:
    return [shape_array(num_elements(ctx.shape(0)))]


CONVERTERS: dict[str, Converter] = {
    "Constant": convert_constant,
    "ConstantOfShape": convert_constant_of_shape,
    "Reshape": convert_reshape,
    "Flatten": convert_flatten,
    "Squeeze": convert_squeeze,
    "Unsqueeze": convert_unsqueeze,
    "Transpose": convert_transpose,
    "Concat": convert_concat,
    "Split": convert_split,
    "Slice": convert_slice,
    "Gather": convert_gather,
    "Pad": convert_pad,
    "Expand": convert_expand,
    "Shape": convert_shape,
    "Size": convert_size,
}
