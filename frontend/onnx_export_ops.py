"""Graph ops that are one standard ONNX op each: the reverse of the importer's converters.

Properties that ONNX takes as inputs since some opset (Reshape's shape, Squeeze/Unsqueeze
axes, Slice bounds, Pad's pads, Clip bounds, Split sizes, reduction axes) become small
int64 or scalar initializers; the rest are attributes under their ONNX names.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.ir import Operation

from onnxc.dialects import graph, graph_random
from onnxc.dialects.dense_data import as_strided_elements, values_in_shape
from onnxc.dialects.graph import float_of, int_of, ints_of, shape_of
from onnxc.dialects.graph_base import static_ints
from onnxc.frontend.onnx_export import Emitter, OnnxWriter, onnx_element_type, unsupported


def _same(op_type: str, **attrs: Callable[[Operation], object]) -> Emitter:
    """An op that is `op_type` with the same operands (attributes read off the op)."""

    def emit(w: OnnxWriter, op: Operation) -> None:
        w.emit(op, op_type, w.names(op.operands),
               **{name: read(op) for name, read in attrs.items()})

    return emit


def _prop(name: str, read=int_of) -> Callable[[Operation], object]:
    return lambda op: read(op.properties.get(name))


def _ints(name: str) -> Callable[[Operation], object]:
    return lambda op: list(ints_of(op.properties.get(name)))


def _optional_float(name: str) -> Callable[[Operation], object]:
    return lambda op: None if name not in op.properties else float_of(op.properties[name])


_SAME_OPERANDS: dict[type[Operation], Emitter] = {
    graph.ReluOp: _same("Relu"), graph.SigmoidOp: _same("Sigmoid"), graph.TanhOp: _same("Tanh"),
    graph.ExpOp: _same("Exp"), graph.LogOp: _same("Log"), graph.SqrtOp: _same("Sqrt"),
    graph.NegOp: _same("Neg"), graph.AbsOp: _same("Abs"),
    graph.ReciprocalOp: _same("Reciprocal"), graph.ErfOp: _same("Erf"),
    graph.IdentityOp: _same("Identity"), graph.DropoutOp: _same("Identity"),
    graph.LeakyReluOp: _same("LeakyRelu", alpha=_prop("alpha", float_of)),
    graph.AddOp: _same("Add"), graph.SubOp: _same("Sub"), graph.MulOp: _same("Mul"),
    graph.DivOp: _same("Div"), graph.PowOp: _same("Pow"),
    graph.SumOp: _same("Sum"), graph.MaxOp: _same("Max"), graph.MinOp: _same("Min"),
    graph.PReluOp: _same("PRelu"),
    graph.CeilOp: _same("Ceil"), graph.FloorOp: _same("Floor"), graph.RoundOp: _same("Round"),
    graph.SignOp: _same("Sign"), graph.SinOp: _same("Sin"), graph.CosOp: _same("Cos"),
    graph.TanOp: _same("Tan"), graph.AsinOp: _same("Asin"), graph.AcosOp: _same("Acos"),
    graph.AtanOp: _same("Atan"), graph.SinhOp: _same("Sinh"), graph.CoshOp: _same("Cosh"),
    graph.AsinhOp: _same("Asinh"), graph.AcoshOp: _same("Acosh"),
    graph.AtanhOp: _same("Atanh"), graph.SoftplusOp: _same("Softplus"),
    graph.MishOp: _same("Mish"),
    graph.ThresholdedReluOp: _same("ThresholdedRelu", alpha=_prop("alpha", float_of)),
    graph.ShrinkOp: _same("Shrink", bias=_prop("bias", float_of),
                          lambd=_prop("lambd", float_of)),
    graph.EqualOp: _same("Equal"), graph.LessOp: _same("Less"),
    graph.LessOrEqualOp: _same("LessOrEqual"), graph.GreaterOp: _same("Greater"),
    graph.GreaterOrEqualOp: _same("GreaterOrEqual"),
    graph.AndOp: _same("And"), graph.OrOp: _same("Or"), graph.XorOp: _same("Xor"),
    graph.NotOp: _same("Not"), graph.BitwiseAndOp: _same("BitwiseAnd"),
    graph.BitwiseOrOp: _same("BitwiseOr"), graph.BitwiseXorOp: _same("BitwiseXor"),
    graph.BitwiseNotOp: _same("BitwiseNot"),
    graph.BitShiftOp: _same("BitShift", direction=lambda op: op.direction.data.upper()),
    graph.ModOp: _same("Mod", fmod=_prop("fmod")),
    graph.WhereOp: _same("Where"), graph.IsNaNOp: _same("IsNaN"),
    graph.IsInfOp: _same("IsInf", detect_positive=_prop("detect_positive"),
                         detect_negative=_prop("detect_negative")),
    graph.GlobalAveragePoolOp: _same("GlobalAveragePool"),
    graph.GlobalMaxPoolOp: _same("GlobalMaxPool"),
    graph.SoftmaxOp: _same("Softmax", axis=_prop("axis")),
    graph.LRNOp: _same("LRN", size=_prop("size"), alpha=_prop("alpha", float_of),
                       beta=_prop("beta", float_of), bias=_prop("bias", float_of)),
    graph.BatchNormalizationOp: _same("BatchNormalization",
                                      epsilon=_prop("epsilon", float_of)),
    graph.FlattenOp: _same("Flatten", axis=_prop("axis")),
    graph.TransposeOp: _same("Transpose", perm=_ints("perm")),
    graph.ConcatOp: _same("Concat", axis=_prop("axis")),
    graph.GatherOp: _same("Gather", axis=_prop("axis")),
    graph.ShapeOp: _same("Shape", start=_prop("start"), end=_prop("end")),
    graph.ArgMaxOp: _same("ArgMax", axis=_prop("axis"), keepdims=_prop("keepdims"),
                          select_last_index=_prop("select_last_index")),
    graph.ArgMinOp: _same("ArgMin", axis=_prop("axis"), keepdims=_prop("keepdims"),
                          select_last_index=_prop("select_last_index")),
    graph.MaxPoolOp: _same("MaxPool", kernel_shape=_ints("kernel_shape"),
                           strides=_ints("strides"), pads=_ints("pads"),
                           dilations=_ints("dilations"), ceil_mode=_prop("ceil_mode")),
    # Conv, Gemm and MatMul (which may carry an epilogue): onnx_export_fused
}


def _average_pool(w: OnnxWriter, op: graph.AveragePoolOp) -> None:
    dilations = None if op.dilations is None else list(ints_of(op.dilations))
    w.emit(op, "AveragePool", [w.name(op.input)], kernel_shape=list(ints_of(op.kernel_shape)),
           strides=list(ints_of(op.strides)), pads=list(ints_of(op.pads)),
           ceil_mode=int_of(op.ceil_mode), count_include_pad=int_of(op.count_include_pad),
           dilations=dilations)


def _constant(w: OnnxWriter, op: graph.ConstantOp) -> None:
    """A weight: an initializer under the constant's name."""
    array = values_in_shape(op.value, shape_of(op.output))
    w.value_names[op.output] = w.const(array, op.output.name_hint or "const")


def _constant_of_shape(w: OnnxWriter, op: graph.ConstantOfShapeOp) -> None:
    from onnx import numpy_helper

    fill = values_in_shape(op.value, (1,))
    w.emit(op, "ConstantOfShape", [w.ints(shape_of(op.output), "shape")],
           value=numpy_helper.from_array(np.array(fill)))


def _cast(w: OnnxWriter, op: graph.CastOp) -> None:
    if op.round_mode is not None:
        raise unsupported(op, "Cast with a round_mode (E8M0 results) is not exported")
    saturate = None if op.saturate is None else int_of(op.saturate)
    w.emit(op, "Cast", [w.name(op.input)], to=onnx_element_type(op.output), saturate=saturate)


def _clip(w: OnnxWriter, op: graph.ClipOp) -> None:
    bounds = ["" if b is None else w.scalar(float_of(b), op.input, name)
              for b, name in ((op.min, "min"), (op.max, "max"))]
    while bounds and not bounds[-1]:
        bounds.pop()
    w.emit(op, "Clip", [w.name(op.input), *bounds])


def _scalar_binary(op_type: str) -> Emitter:
    """graph.<op>_scalar: the binary op with a 0-d initializer of the input's type."""

    def emit(w: OnnxWriter, op: graph.ScalarBinaryOp) -> None:
        w.emit(op, op_type, [w.name(op.input), w.scalar(float_of(op.scalar), op.input,
                                                        "scalar")])

    return emit


def _reshape(w: OnnxWriter, op: graph.ReshapeLikeOp) -> None:
    """Reshape / Squeeze / Unsqueeze by the static result shape (the result type decides)."""
    out = shape_of(op.output)
    w.emit(op, "Reshape", [w.name(op.input), w.ints(out, "shape")],
           allowzero=1 if 0 in out else None)


def _squeeze_like(op_type: str) -> Emitter:
    def emit(w: OnnxWriter, op: graph.SqueezeOp | graph.UnsqueezeOp) -> None:
        w.emit(op, op_type, [w.name(op.input), w.ints(ints_of(op.axes), "axes")])

    return emit


def _split(w: OnnxWriter, op: graph.SplitOp) -> None:
    axis = int_of(op.axis)
    sizes = [shape_of(r)[axis] for r in op.outputs]
    w.emit(op, "Split", [w.name(op.input), w.ints(sizes, "split")], axis=axis)


def _slice(w: OnnxWriter, op: graph.SliceOp) -> None:
    starts, ends = static_ints(op.starts), static_ints(op.ends)
    if starts is None or ends is None:
        raise unsupported(op, "bounds computed from symbolic sizes are no ONNX constants")
    w.emit(op, "Slice", [w.name(op.input), w.ints(starts, "starts"),
                         w.ints(ends, "ends"), w.ints(ints_of(op.axes), "axes"),
                         w.ints(ints_of(op.steps), "steps")])


def _pad(w: OnnxWriter, op: graph.PadOp) -> None:
    value = [w.scalar(float_of(op.value), op.input, "pad_value")] \
        if op.mode.data == "constant" else []
    pads = static_ints(op.pads)
    if pads is None:
        raise unsupported(op, "pads computed in the run are no ONNX constants")
    w.emit(op, "Pad", [w.name(op.input), w.ints(pads, "pads"), *value], mode=op.mode.data)


def _reduce(op_type: str) -> Emitter:
    """Reductions take axes as an input from opset 18; the graph's empty axes reduce nothing
    (the importer made ONNX's noop_with_empty_axes explicit)."""

    def emit(w: OnnxWriter, op: graph.ReduceOp) -> None:
        axes = ints_of(op.axes)
        w.emit(op, op_type, [w.name(op.input), w.ints(axes, "axes")],
               keepdims=int_of(op.keepdims), noop_with_empty_axes=None if axes else 1)

    return emit


def _top_k(w: OnnxWriter, op: graph.TopKOp) -> None:
    k = op.count()
    if not isinstance(k, int):
        raise unsupported(op, f"k = {k} is a size, no ONNX constant")
    w.emit(op, "TopK", [w.name(op.input), w.ints([k], "k")], axis=int_of(op.axis),
           largest=int_of(op.largest), sorted=1)


def _cumulative(op_type: str) -> Emitter:
    def emit(w: OnnxWriter, op: graph.CumulativeOp) -> None:
        axis = w.const(np.asarray(int_of(op.axis), dtype=np.int64), "axis")
        w.emit(op, op_type, [w.name(op.input), axis], exclusive=int_of(op.exclusive),
               reverse=int_of(op.reverse))

    return emit


def _inverse(w: OnnxWriter, op: graph.InverseOp) -> None:
    w.emit(op, "Inverse", [w.name(op.input)], domain="com.microsoft")


def _trilu(w: OnnxWriter, op: graph.TriluOp) -> None:
    k = w.const(np.asarray(int_of(op.k), dtype=np.int64), "k")
    w.emit(op, "Trilu", [w.name(op.input), k], upper=int_of(op.upper))


def _one_hot(w: OnnxWriter, op: graph.OneHotOp) -> None:
    depth = op.size()
    if not isinstance(depth, int):
        raise unsupported(op, f"depth = {depth} is a size, no ONNX constant")
    depth = w.const(np.asarray(depth, dtype=np.int64), "depth")
    w.emit(op, "OneHot", [w.name(op.indices), depth, w.name(op.values)], axis=int_of(op.axis))


def _range(w: OnnxWriter, op: graph.RangeOp) -> None:
    """Range's limit is start + n * delta for the declared length n (an Add and a Mul)."""
    n = w.scalar(shape_of(op.output)[0], op.start, "length")
    span = w.apply("Mul", [n, w.name(op.delta)], "span")
    limit = w.apply("Add", [w.name(op.start), span], "limit")
    w.emit(op, "Range", [w.name(op.start), limit, w.name(op.delta)])


def _random(w: OnnxWriter, op: graph_random.RandomOp) -> None:
    """RandomUniform / RandomNormal, or their *Like form on the operand that gives the
    shape; the seed when the op has one."""
    kind = "Uniform" if op.distribution.data == "uniform" else "Normal"
    a, b = ("low", "high") if kind == "Uniform" else ("mean", "scale")
    attrs = {a: float_of(op.a), b: float_of(op.b),
             "dtype": onnx_element_type(op.output)}
    if op.seed is not None:
        attrs["seed"] = float_of(op.seed)
    if op.like is not None:
        w.emit(op, f"Random{kind}Like", [w.name(op.like)], **attrs)
    else:
        shape = shape_of(op.output)
        if not all(isinstance(d, int) for d in shape):
            raise unsupported(op, "a symbolic shape without a tensor to take it from")
        w.emit(op, f"Random{kind}", [], shape=list(shape), **attrs)


def _as_strided(w: OnnxWriter, op: graph.AsStridedOp) -> None:
    """Gather from the flattened input at the view's element indices (a constant)."""
    count = int(np.prod(shape_of(op.input)))
    index = as_strided_elements(np.arange(count, dtype=np.int64), int_of(op.offset),
                                shape_of(op.output), ints_of(op.strides))
    flat = w.apply("Reshape", [w.name(op.input), w.ints([-1], "flat")], "flat")
    w.emit(op, "Gather", [flat, w.const(index, "indices")], axis=0)


EMITTERS: dict[type[Operation], Emitter] = {
    **_SAME_OPERANDS,
    graph.ConstantOp: _constant,
    graph.ConstantOfShapeOp: _constant_of_shape,
    graph.AveragePoolOp: _average_pool,
    graph.CastOp: _cast,
    graph.ClipOp: _clip,
    graph.AddScalarOp: _scalar_binary("Add"), graph.SubScalarOp: _scalar_binary("Sub"),
    graph.MulScalarOp: _scalar_binary("Mul"), graph.DivScalarOp: _scalar_binary("Div"),
    graph.PowScalarOp: _scalar_binary("Pow"),
    graph.ReshapeOp: _reshape,
    graph.SqueezeOp: _squeeze_like("Squeeze"), graph.UnsqueezeOp: _squeeze_like("Unsqueeze"),
    graph.SplitOp: _split,
    graph.AsStridedOp: _as_strided,
    graph.SliceOp: _slice,
    graph.PadOp: _pad,
    graph.ReduceMeanOp: _reduce("ReduceMean"), graph.ReduceSumOp: _reduce("ReduceSum"),
    graph.ReduceMaxOp: _reduce("ReduceMax"), graph.ReduceMinOp: _reduce("ReduceMin"),
    graph.ReduceProdOp: _reduce("ReduceProd"),
    graph.TopKOp: _top_k,
    graph.CumSumOp: _cumulative("CumSum"),  # CumProd is opset 26
    graph.TriluOp: _trilu,
    graph.OneHotOp: _one_hot,
    graph.RangeOp: _range,
    graph_random.RandomOp: _random,
    graph.DetOp: _same("Det"),
    graph.InverseOp: _inverse,
}
