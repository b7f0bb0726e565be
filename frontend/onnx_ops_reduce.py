"""Reductions, index and sequence ops: ONNX nodes -> graph ops.

ReduceMax/Min/Prod map to graph reductions; ReduceL1/L2/LogSum/LogSumExp/SumSquare,
LpNormalization and Hardmax are composed from existing graph ops here (no kernel of their
own). Range, EyeLike and the windows are in onnx_ops_generate. Per-opset
rules: reduction axes are an attribute before opset 18 (13 for ReduceSum, handled in
onnx_ops_math) and a constant input after; TopK's k an attribute before 10; ArgMax's
select_last_index exists from 12; Hardmax works on the 2-D coercion of its input before 13.
Einsum lowers to transpose/reshape/matmul/reduce_sum (onnx_ops_einsum).
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import IntegerType, i64
from xdsl.ir import Attribute, SSAValue

from onnxc.dialects import graph
from onnxc.dialects import graph_shapes as shapes
from onnxc.dialects.dense_data import element_dtype
from onnxc.dialects.graph_base import SizesAttr
from onnxc.dialects.graph_reduce import reduce_shape
from onnxc.dialects.size_facts import require_at_least
from onnxc.dialects.symbolic_dims import Dim
from onnxc.frontend import onnx_types as types
from onnxc.frontend.onnx_context import NodeContext, Result, Tensor
from onnxc.frontend.onnx_ops_math import (
    Converter,
    convert_identity,
    normalized_axis,
    reduction_axes,
)

_UNSIGNED = (types.TP.UINT8, types.TP.UINT16, types.TP.UINT32, types.TP.UINT64)


def check_element(ctx: NodeContext, i: int, floats_only: bool = False,
                  allow_bool: bool = False, allow_unsigned: bool = False) -> Attribute:
    """The element type of input `i`: a float or signed integer; bool and unsigned integers
    only where the kernel compares or moves them (`allow_bool`, `allow_unsigned`)."""
    el = ctx.element_type(i)
    if types.is_float(el):
        return el
    unsigned = types.onnx_type_of_element(el) in _UNSIGNED
    if (floats_only or not isinstance(el, IntegerType) or (unsigned and not allow_unsigned)
            or (el.width.data == 1 and not allow_bool)):
        raise ctx.unsupported(f"element type {el}")
    return el


def emit(ctx: NodeContext, op_class, operands, shape, el, props=None) -> SSAValue:
    return ctx.emit1(op_class(operands=list(operands),
                              result_types=[types.tensor_type(tuple(shape), el)],
                              properties=props or {}))


def unary(ctx: NodeContext, op_class, x: SSAValue) -> SSAValue:
    return ctx.emit1(op_class(operands=[x], result_types=[x.type]))


def binary(ctx: NodeContext, op_class, a: SSAValue, b: SSAValue) -> SSAValue:
    out = ctx.infer(shapes.broadcast_shapes, graph.shape_of(a), graph.shape_of(b))
    return emit(ctx, op_class, [a, b], out, a.type.get_element_type())


def reduce(ctx: NodeContext, op_class, x: SSAValue, axes, keepdims: bool) -> SSAValue:
    out = reduce_shape(graph.shape_of(x), axes, keepdims)
    return emit(ctx, op_class, [x], out, x.type.get_element_type(),
                {"axes": types.i64_array(axes), "keepdims": types.i64_attr(int(keepdims))})


def reshape(ctx: NodeContext, x: SSAValue, shape) -> SSAValue:
    if graph.shape_of(x) == tuple(shape):
        return x
    return emit(ctx, graph.ReshapeOp, [x], shape, x.type.get_element_type())


# --------------------------------------------------------------------------- reductions


def _log_sum_exp(ctx: NodeContext, x: SSAValue, axes, keepdims: bool) -> SSAValue:
    """log(sum(exp(x - m))) + m, m the maximum clamped to the finite range: shifting by the
    maximum avoids overflow for large inputs, and clamping keeps inf - inf (= NaN) out of a
    row that is all -inf or holds +inf, which then gives -inf / +inf as log(sum(exp(x)))
    does (and numpy and onnxruntime)."""
    el = x.type.get_element_type()
    finite = float(np.finfo(element_dtype(el)).max)
    peak = reduce(ctx, graph.ReduceMaxOp, x, axes, True)
    peak = ctx.emit1(graph.ClipOp(operands=[peak], result_types=[peak.type], properties={
        "min": types.float_attr(-finite, el), "max": types.float_attr(finite, el)}))
    total = reduce(ctx, graph.ReduceSumOp,
                   unary(ctx, graph.ExpOp, binary(ctx, graph.SubOp, x, peak)), axes, keepdims)
    logged = unary(ctx, graph.LogOp, total)
    return binary(ctx, graph.AddOp, logged, reshape(ctx, peak, graph.shape_of(logged)))


def log_softmax(ctx: NodeContext, x: SSAValue, axis: int) -> SSAValue:
    """(x - m) - log(sum(exp(x - m))) along `axis`, m the maximum, as onnxruntime computes
    it: log(softmax(x)) would round exp(x - m) to 0 for x - m below about -104 (float32)
    and give -inf where the result is finite."""
    peak = reduce(ctx, graph.ReduceMaxOp, x, [axis], True)
    shifted = binary(ctx, graph.SubOp, x, peak)
    total = reduce(ctx, graph.ReduceSumOp, unary(ctx, graph.ExpOp, shifted), [axis], True)
    return binary(ctx, graph.SubOp, shifted, unary(ctx, graph.LogOp, total))


_COMPOSED = {  # op type -> (floats only, build(ctx, x, axes, keepdims))
    "ReduceMax": (False, lambda c, x, a, k: reduce(c, graph.ReduceMaxOp, x, a, k)),
    "ReduceMin": (False, lambda c, x, a, k: reduce(c, graph.ReduceMinOp, x, a, k)),
    "ReduceProd": (False, lambda c, x, a, k: reduce(c, graph.ReduceProdOp, x, a, k)),
    "ReduceL1": (False, lambda c, x, a, k: reduce(c, graph.ReduceSumOp,
                                                  unary(c, graph.AbsOp, x), a, k)),
    "ReduceSumSquare": (False, lambda c, x, a, k: reduce(
        c, graph.ReduceSumOp, binary(c, graph.MulOp, x, x), a, k)),
    "ReduceL2": (True, lambda c, x, a, k: unary(c, graph.SqrtOp, reduce(
        c, graph.ReduceSumOp, binary(c, graph.MulOp, x, x), a, k))),
    "ReduceLogSum": (True, lambda c, x, a, k: unary(
        c, graph.LogOp, reduce(c, graph.ReduceSumOp, x, a, k))),
    "ReduceLogSumExp": (True, _log_sum_exp),
}


def _reduce_nothing(ctx: NodeContext) -> list[Result]:
    """A reduction over no axes: every element is its own group, so only the elementwise
    part remains (|x| for L1/L2, x*x for SumSquare, log x for LogSum; x otherwise)."""
    x = ctx.operand(0)
    if ctx.op_type in ("ReduceL1", "ReduceL2"):
        return [unary(ctx, graph.AbsOp, x)]
    if ctx.op_type == "ReduceSumSquare":
        return [binary(ctx, graph.MulOp, x, x)]
    if ctx.op_type == "ReduceLogSum":
        return [unary(ctx, graph.LogOp, x)]
    return convert_identity(ctx)


def convert_reduce(ctx: NodeContext) -> list[Result]:
    floats_only, build = _COMPOSED[ctx.op_type]
    max_or_min = ctx.op_type in ("ReduceMax", "ReduceMin")
    check_element(ctx, 0, floats_only=floats_only, allow_bool=max_or_min)
    axes = reduction_axes(ctx)
    if axes is None:
        return _reduce_nothing(ctx)
    return [build(ctx, ctx.operand(0), axes, bool(ctx.attr("keepdims", 1)))]


# --------------------------------------------------------------------------- index ops


def convert_arg(ctx: NodeContext) -> list[Result]:
    check_element(ctx, 0, allow_bool=True, allow_unsigned=True)
    axis = normalized_axis(ctx, ctx.attr("axis", 0), ctx.rank(0))
    try:  # a symbolic axis: a run-time guard that it is not empty
        require_at_least(ctx.shape(0)[axis], 1, "ArgMax/ArgMin over an empty axis")
    except ValueError as err:
        raise ctx.invalid(str(err)) from err
    keepdims = int(ctx.attr("keepdims", 1))
    last = int(ctx.attr("select_last_index", 0)) if ctx.opset >= 12 else 0
    op_class = graph.ArgMaxOp if ctx.op_type == "ArgMax" else graph.ArgMinOp
    out = reduce_shape(ctx.shape(0), [axis], bool(keepdims))
    return [emit(ctx, op_class, [ctx.operand(0)], out, i64, {
        "axis": types.i64_attr(axis), "keepdims": types.i64_attr(keepdims),
        "select_last_index": types.i64_attr(last)})]


def convert_top_k(ctx: NodeContext) -> list[Result]:
    """Values and indices are always sorted (also valid for sorted=0)."""
    el = check_element(ctx, 0, allow_unsigned=True)
    if ctx.opset < 10:
        k: Dim = ctx.attr("k")
    else:
        if int(np.prod(ctx.shape(1))) != 1:
            raise ctx.invalid(f"k must hold one value, got shape {list(ctx.shape(1))}")
        (k,) = ctx.sizes(1, "k")  # a size of shape data, or computed in the run
    axis = normalized_axis(ctx, ctx.attr("axis", -1), ctx.rank(0))
    n = ctx.shape(0)[axis]
    if isinstance(k, int) and k < 0:
        raise ctx.invalid(f"k={k} is negative")
    try:
        require_at_least(n, k, f"k={k} outside [0, {n}]")  # a guard where sizes leave it open
    except ValueError as err:
        raise ctx.invalid(str(err)) from err
    largest = int(ctx.attr("largest", 1)) if ctx.opset >= 11 else 1
    out = list(ctx.shape(0))
    out[axis] = k
    op = graph.TopKOp(
        operands=[ctx.operand(0)],
        result_types=[types.tensor_type(tuple(out), el), types.tensor_type(tuple(out), i64)],
        properties={"axis": types.i64_attr(axis),
                    "k": types.i64_attr(k) if isinstance(k, int) else SizesAttr([k]),
                    "largest": types.i64_attr(largest)},
    )
    ctx.emit(op)
    return [op.values, op.indices]


def convert_cumulative(ctx: NodeContext) -> list[Result]:
    el = check_element(ctx, 0)
    axis_array = ctx.constant(1, "axis")
    if axis_array.size != 1:
        raise ctx.invalid(f"axis must be a scalar, got shape {axis_array.shape}")
    axis = normalized_axis(ctx, int(axis_array.reshape(-1)[0]), ctx.rank(0))
    op_class = graph.CumSumOp if ctx.op_type == "CumSum" else graph.CumProdOp
    return [emit(ctx, op_class, [ctx.operand(0)], ctx.shape(0), el, {
        "axis": types.i64_attr(axis),
        "exclusive": types.i64_attr(int(ctx.attr("exclusive", 0))),
        "reverse": types.i64_attr(int(ctx.attr("reverse", 0)))})]


def convert_trilu(ctx: NodeContext) -> list[Result]:
    el = check_element(ctx, 0, allow_bool=True, allow_unsigned=True)
    if ctx.rank(0) < 2:
        raise ctx.invalid("Trilu needs a rank >= 2 input")
    k_array = ctx.optional_constant(1, "k")
    k = 0 if k_array is None else int(k_array.reshape(-1)[0])
    return [emit(ctx, graph.TriluOp, [ctx.operand(0)], ctx.shape(0), el, {
        "upper": types.i64_attr(int(ctx.attr("upper", 1))), "k": types.i64_attr(k)})]


def one_hot(ctx: NodeContext, indices: SSAValue, values: SSAValue, depth: Dim,
            axis: int) -> SSAValue:
    out = list(graph.shape_of(indices))
    out.insert(axis, depth)
    return emit(ctx, graph.OneHotOp, [indices, values], out, values.type.get_element_type(),
                {"depth": types.i64_attr(depth) if isinstance(depth, int)
                 else SizesAttr([depth]), "axis": types.i64_attr(axis)})


def convert_one_hot(ctx: NodeContext) -> list[Result]:
    """A depth known at import is a number or a size over input symbols; one the run
    computes is bound to a run symbol (NodeContext.sizes, checked >= 0) and must be >= 1,
    as onnxruntime requires: a guard checked right after it is bound."""
    check_element(ctx, 0)
    check_element(ctx, 2, allow_bool=True)
    if ctx.tensor(1).shape not in ((), (1,)):
        raise ctx.invalid(f"depth must hold one value, got shape {ctx.tensor(1).shape}")
    if ctx.tensor(1).array is not None and not ctx.tensor(1).symbolic_data:
        depth_array = ctx.constant(1, "depth")
        depth: Dim = int(np.asarray(depth_array).reshape(-1)[0])
    else:
        (depth,) = ctx.sizes(1, "depth")
    if isinstance(depth, int) and depth <= 0:
        raise ctx.invalid(f"depth {depth} is not positive")
    if not isinstance(depth, int):
        require_at_least(depth, 1, "OneHot depth must be positive")
    if ctx.shape(2) != (2,):
        raise ctx.invalid(f"values must have shape (2,), got {ctx.shape(2)}")
    axis = normalized_axis(ctx, ctx.attr("axis", -1), ctx.rank(0) + 1)
    return [one_hot(ctx, ctx.operand(0), ctx.operand(2), depth, axis)]


def _first_maximum(ctx: NodeContext, x: SSAValue, axis: int) -> SSAValue:
    """Hardmax over symbolic sizes without ArgMax/OneHot kernels: 1 where x equals the
    maximum of its slice and no earlier element did (a running count of the maxima along
    the axis is 1 there), 0 elsewhere."""
    shape, el = graph.shape_of(x), x.type.get_element_type()
    boolean, i64_el = types.element_type(types.TP.BOOL), types.element_type(types.TP.INT64)
    top = reduce(ctx, graph.ReduceMaxOp, x, [axis], True)
    at_max = emit(ctx, graph.EqualOp, [x, top], shape, boolean)
    running = emit(ctx, graph.CumSumOp, [emit(ctx, graph.CastOp, [at_max], shape, i64_el)],
                   shape, i64_el, {"axis": types.i64_attr(axis),
                                   "exclusive": types.i64_attr(0),
                                   "reverse": types.i64_attr(0)})
    one = ctx.materialize(Tensor.of_array(np.array(1, np.int64)))
    first = emit(ctx, graph.AndOp, [at_max, emit(ctx, graph.EqualOp, [running, one], shape,
                                                 boolean)], shape, boolean)
    return emit(ctx, graph.CastOp, [first], shape, el)


def convert_hardmax(ctx: NodeContext) -> list[Result]:
    """OneHot(ArgMax(x)) along the axis (of the 2-D coercion before opset 13)."""
    el = check_element(ctx, 0)
    x, shape = ctx.operand(0), ctx.shape(0)
    if ctx.opset < 13:
        axis = normalized_axis(ctx, ctx.attr("axis", 1), len(shape)) if shape else 0
        x = reshape(ctx, x, (math.prod(shape[:axis]), math.prod(shape[axis:])))
        axis = 1
    else:
        axis = normalized_axis(ctx, ctx.attr("axis", -1), len(shape))
    if math.prod(graph.shape_of(x)) == 0:
        raise ctx.unsupported("Hardmax of an empty tensor")
    depth = graph.shape_of(x)[axis]
    if any(not isinstance(d, int) for d in graph.shape_of(x)):
        return [reshape(ctx, _first_maximum(ctx, x, axis), shape)]
    arg = emit(ctx, graph.ArgMaxOp, [x], reduce_shape(graph.shape_of(x), [axis], False), i64, {
        "axis": types.i64_attr(axis), "keepdims": types.i64_attr(0),
        "select_last_index": types.i64_attr(0)})
    values = ctx.materialize(Tensor.of_array(
        np.array([0, 1], dtype=element_dtype(el))))
    return [reshape(ctx, one_hot(ctx, arg, values, depth, axis), shape)]


def convert_lp_normalization(ctx: NodeContext) -> list[Result]:
    """x / ||x||_p along the axis; an all-zero slice stays zero (its norm is raised to the
    smallest normal float, which x = 0 divides to 0), as onnx's reference does."""
    el = check_element(ctx, 0, floats_only=True)
    axis = normalized_axis(ctx, ctx.attr("axis", -1), ctx.rank(0))
    p = int(ctx.attr("p", 2))
    x = ctx.operand(0)
    if p == 1:
        norm = reduce(ctx, graph.ReduceSumOp, unary(ctx, graph.AbsOp, x), [axis], True)
    elif p == 2:
        norm = unary(ctx, graph.SqrtOp, reduce(ctx, graph.ReduceSumOp,
                                               binary(ctx, graph.MulOp, x, x), [axis], True))
    else:
        raise ctx.unsupported(f"p={p} (only 1 and 2)")
    dtype = element_dtype(el)
    tiny = ctx.scalar(float(np.finfo(dtype).tiny), el)
    norm = emit(ctx, graph.MaxOp, [[norm, tiny]], graph.shape_of(norm), el)
    return [binary(ctx, graph.DivOp, x, norm)]


CONVERTERS: dict[str, Converter] = {
    **{name: convert_reduce for name in _COMPOSED},
    "ArgMax": convert_arg,
    "ArgMin": convert_arg,
    "TopK": convert_top_k,
    "CumSum": convert_cumulative,
    "CumProd": convert_cumulative,
    "Trilu": convert_trilu,
    "OneHot": convert_one_hot,
    "Hardmax": convert_hardmax,
    "LpNormalization": convert_lp_normalization,
}
