"""Neural-network layers: Conv, pooling, BatchNormalization, LRN, Softmax, Dropout.

The graph dialect wants every window attribute explicit, so auto_pad is turned into pads
and absent strides/dilations/pads become their defaults here. Opset differences handled:
Softmax/LogSoftmax before 13 (2-D coercion at `axis`), BatchNormalization before 7
(`spatial`, `is_test`) and since 14 (`training_mode`), pooling `ceil_mode`/`dilations`
(opset 10+) and Dropout's ratio/training_mode becoming inputs in opset 12.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import StringAttr
from xdsl.ir import SSAValue

from onnxc.dialects import graph
from onnxc.dialects import graph_shapes as shapes
from onnxc.dialects.dense_data import element_dtype, from_numpy
from onnxc.dialects.graph_base import sizes_attr
from onnxc.dialects.symbolic_dims import SymbolicDimError, ceildiv, sym_max
from onnxc.frontend import onnx_types as types
from onnxc.frontend.batch_axes import sample_wise
from onnxc.frontend.onnx_context import NodeContext, Result
from onnxc.frontend.onnx_ops_math import Converter, same_type
from onnxc.frontend.onnx_ops_normalization import layer_normalization_with_statistics
from onnxc.frontend.onnx_ops_reduce import log_softmax


def _window(ctx: NodeContext, kernel: list[int], symbolic_pads: bool = False
            ) -> tuple[list[int], list, list[int]]:
    """Explicit (strides, pads, dilations) of a Conv/pool node, resolving auto_pad. SAME
    pads over a symbolic size may depend on it: only a converter that pads the input first
    (`symbolic_pads`, `_padded_input`) takes them, any other refuses them."""
    x = ctx.shape(0)
    n = len(x) - 2
    if n < 1:
        raise ctx.invalid(f"input must have rank >= 3, got {len(x)}")
    strides = ctx.ints("strides") or [1] * n
    dilations = ctx.ints("dilations") or [1] * n
    pads = ctx.ints("pads") or [0] * (2 * n)
    if len(kernel) != n or len(strides) != n or len(dilations) != n or len(pads) != 2 * n:
        raise ctx.invalid(
            f"kernel {kernel}, strides {strides}, dilations {dilations} or pads {pads} "
            f"do not fit {n} spatial dimensions"
        )
    auto_pad = ctx.attr("auto_pad", "NOTSET")
    if auto_pad == "VALID":
        pads = [0] * (2 * n)
    elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        pads = [0] * (2 * n)
        for i in range(n):
            out = ceildiv(x[2 + i], strides[i])
            effective = dilations[i] * (kernel[i] - 1) + 1
            total = sym_max(0, (out - 1) * strides[i] + effective - x[2 + i])
            small, large = total // 2, total - total // 2
            if not symbolic_pads and not (isinstance(small, int) and isinstance(large, int)):
                raise SymbolicDimError(
                    f"auto_pad {auto_pad} pads axis {2 + i} of size {x[2 + i]} by {small} "
                    f"and {large}: the kernels take constant pads")
            pads[i], pads[i + n] = (small, large) if auto_pad == "SAME_UPPER" else (large, small)
    elif auto_pad != "NOTSET":
        raise ctx.invalid(f"unknown auto_pad '{auto_pad}'")
    return strides, pads, dilations


def _padded_input(ctx: NodeContext, pads: list, fill: float
                  ) -> tuple[Result | SSAValue, tuple, list[int]]:
    """(input, its shape, the op's pads). The kernels take constant pads; SAME auto_pad
    over a symbolic size pads by an amount that depends on it (stride 2, kernel 3: 1 for an
    even size, 2 for an odd one), so the input is padded by a graph.pad of symbolic pads
    (with `fill`: 0 for Conv and AveragePool, the lowest value for MaxPool) and the op gets
    none."""
    if all(isinstance(p, int) for p in pads):
        return ctx.operand(0), ctx.shape(0), pads
    value, shape = _pad(ctx, ctx.operand(0), ctx.shape(0), pads, fill)
    return value, shape, [0] * len(pads)


def _pad(ctx: NodeContext, value: SSAValue, x: tuple, pads: list, fill: float
         ) -> tuple[SSAValue, tuple]:
    n = len(x) - 2
    full = [0, 0, *pads[:n], 0, 0, *pads[n:]]
    shape = ctx.infer(shapes.pad_shape, x, full)
    el = value.type.get_element_type()
    op = graph.PadOp(
        operands=[value],
        result_types=[types.tensor_type(shape, el)],
        properties={"pads": sizes_attr(full), "mode": StringAttr("constant"),
                    "value": types.float_attr(fill, el)},
    )
    return ctx.emit1(op), shape


def _lowest(ctx: NodeContext) -> float:
    dtype = element_dtype(ctx.element_type(0))
    return float(np.iinfo(dtype).min) if dtype.kind in "iu" else -np.inf


def convert_conv(ctx: NodeContext) -> list[Result]:
    w = ctx.shape(1)
    kernel = list(w[2:])
    if ctx.has_attr("kernel_shape") and ctx.ints("kernel_shape") != kernel:
        raise ctx.invalid(f"kernel_shape {ctx.ints('kernel_shape')} differs from weight {w}")
    strides, pads, dilations = _window(ctx, kernel, symbolic_pads=True)
    x, x_shape, pads = _padded_input(ctx, pads, 0.0)
    group = ctx.attr("group", 1)
    out = ctx.infer(shapes.conv_output_shape, x_shape, w, strides, pads, dilations, group)
    bias = ctx.operand(2) if ctx.has_input(2) else None
    op = graph.ConvOp(
        operands=[x, ctx.operand(1), bias],
        result_types=[types.tensor_type(out, ctx.element_type(0))],
        properties={
            "strides": types.i64_array(strides),
            "pads": types.i64_array(pads),
            "dilations": types.i64_array(dilations),
            "group": types.i64_attr(group),
        },
    )
    return [ctx.emit1(op)]


def convert_max_pool(ctx: NodeContext) -> list[Result]:
    if ctx.output_used(1):
        # storage_order only affects Indices, so it matters only when they are used.
        raise ctx.unsupported("the Indices output of MaxPool")
    kernel = ctx.ints("kernel_shape")
    if kernel is None:
        raise ctx.invalid("required attribute 'kernel_shape' is missing")
    strides, pads, dilations = _window(ctx, kernel, symbolic_pads=True)
    x, x_shape, pads = _padded_input(ctx, pads, _lowest(ctx))
    ceil_mode = ctx.attr("ceil_mode", 0)
    out = ctx.infer(shapes.pool_output_shape, x_shape, kernel, strides, pads, dilations,
                    bool(ceil_mode))
    op = graph.MaxPoolOp(
        operands=[x],
        result_types=[types.tensor_type(out, ctx.element_type(0))],
        properties={
            "kernel_shape": types.i64_array(kernel),
            "strides": types.i64_array(strides),
            "pads": types.i64_array(pads),
            "dilations": types.i64_array(dilations),
            "ceil_mode": types.i64_attr(ceil_mode),
        },
    )
    return [ctx.emit1(op), None]


def convert_average_pool(ctx: NodeContext) -> list[Result]:
    """AveragePool; with pads that depend on a symbolic size (SAME auto_pad) the input is
    zero-padded first, and when the pads must not count (count_include_pad 0) the average
    is divided by that of a padded all-ones plane (the share of real elements per window)."""
    kernel = ctx.ints("kernel_shape")
    if kernel is None:
        raise ctx.invalid("required attribute 'kernel_shape' is missing")
    strides, pads, dilations = _window(ctx, kernel, symbolic_pads=True)
    include = ctx.attr("count_include_pad", 0)
    symbolic_pads = not all(isinstance(p, int) for p in pads)
    x, x_shape, op_pads = _padded_input(ctx, pads, 0.0)
    ceil_mode = ctx.attr("ceil_mode", 0)
    out = ctx.infer(shapes.pool_output_shape, x_shape, kernel, strides, op_pads, dilations,
                    bool(ceil_mode))
    el = ctx.element_type(0)

    def pool(value: SSAValue, shape: tuple) -> SSAValue:
        return ctx.emit1(graph.AveragePoolOp(
            operands=[value],
            result_types=[types.tensor_type(shape, el)],
            properties={
                "kernel_shape": types.i64_array(kernel),
                "strides": types.i64_array(strides),
                "pads": types.i64_array(op_pads),
                "ceil_mode": types.i64_attr(ceil_mode),
                "count_include_pad": types.i64_attr(int(bool(include or symbolic_pads))),
                **({"dilations": types.i64_array(dilations)} if any(d != 1 for d in dilations)
                   else {}),
            },
        ))

    y = pool(x, out)
    if symbolic_pads and not include:
        plane = (1, 1, *ctx.shape(0)[2:])
        ones = ctx.emit1(graph.ConstantOfShapeOp(
            properties={"value": from_numpy(np.ones(1, element_dtype(el)))},
            result_types=[types.tensor_type(plane, el)]))
        share = pool(_pad(ctx, ones, plane, pads, 0.0)[0], (1, 1, *out[2:]))
        y = ctx.emit1(graph.DivOp(operands=[y, share], result_types=[y.type]))
    return [y]


def _global_pool(op_class: type[graph.GlobalPoolOp]) -> Converter:
    def convert(ctx: NodeContext) -> list[Result]:
        x = ctx.shape(0)
        if len(x) < 3:
            raise ctx.invalid(f"input must have rank >= 3, got {len(x)}")
        result = types.tensor_type(x[:2] + (1,) * (len(x) - 2), ctx.element_type(0))
        return [ctx.emit1(op_class(operands=[ctx.operand(0)], result_types=[result]))]

    return convert


def convert_batch_norm(ctx: NodeContext) -> list[Result]:
    """Inference BatchNormalization; training mode (opset 14+): `_training_batch_norm`."""
    if ctx.attr("training_mode", 0):
        return _training_batch_norm(ctx)
    if any(ctx.output_used(i) for i in range(1, ctx.num_outputs)):
        raise ctx.unsupported("the running mean/variance outputs (training only)")
    # Before opset 7, is_test=0 asked for training; with only Y used that equals inference.
    epsilon = float(ctx.attr("epsilon", 1e-5))
    if ctx.opset < 9 and ctx.attr("spatial", 1) == 0:
        return [_per_activation_batch_norm(ctx, epsilon)]
    op = graph.BatchNormalizationOp(
        operands=[ctx.operand(i) for i in range(5)],
        result_types=[same_type(ctx, 0)],
        properties={"epsilon": types.float_attr(epsilon)},
    )
    return [ctx.emit1(op)]


def _training_batch_norm(ctx: NodeContext) -> list[Result]:
    """training_mode=1: normalized by the batch's own mean and (population) variance per
    channel, and the running statistics updated as input * momentum + batch * (1 -
    momentum), as ONNX defines them (composed of standard ops)."""
    from onnxc.frontend.onnx_ops_microsoft import onnx_node  # which imports this module

    rank = ctx.rank(0)
    if rank < 2 or not types.is_float(ctx.element_type(0)):
        raise ctx.invalid(f"input {ctx.shape(0)} of {ctx.element_type(0)}: a float tensor "
                          "of rank 2 or more")
    dtype = element_dtype(ctx.element_type(0))
    epsilon, momentum = float(ctx.attr("epsilon", 1e-5)), float(ctx.attr("momentum", 0.9))
    axes = np.array([0, *range(2, rank)], np.int64)
    spread = np.arange(1, rank - 1, dtype=np.int64)  # [C] -> [C, 1, ...]

    def node(op_type: str, *inputs, **attrs) -> SSAValue:
        return onnx_node(ctx, op_type, list(inputs), attrs, opset=18)[0]

    def per_channel(v) -> SSAValue:
        return node("Unsqueeze", v, spread) if len(spread) else v

    mean = node("ReduceMean", ctx.tensor(0), axes, keepdims=0)
    centered = node("Sub", ctx.tensor(0), per_channel(mean))
    var = node("ReduceMean", node("Mul", centered, centered), axes, keepdims=0)
    std = node("Sqrt", node("Add", per_channel(var), np.array(epsilon, dtype)))
    y = node("Add", node("Mul", node("Div", centered, std), per_channel(ctx.tensor(1))),
             per_channel(ctx.tensor(2)))

    def running(i: int, batch: SSAValue) -> SSAValue:
        return node("Add", node("Mul", ctx.tensor(i), np.array(momentum, dtype)),
                    node("Mul", batch, np.array(1 - momentum, dtype)))

    return [y, *(running(3 + i, stat) if ctx.output_used(1 + i) else None
                 for i, stat in enumerate((mean, var)) if 1 + i < ctx.num_outputs)]


def _per_activation_batch_norm(ctx: NodeContext, epsilon: float) -> SSAValue:
    """spatial=0: statistics per (C, D1, ...) element, which broadcast over N directly."""
    x, scale, bias, mean, var = (ctx.operand(i) for i in range(5))
    el = ctx.element_type(0)

    def binary(op_class, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        out = ctx.infer(shapes.broadcast_shapes, graph.shape_of(lhs), graph.shape_of(rhs))
        return ctx.emit1(op_class(operands=[lhs, rhs], result_types=[types.tensor_type(out, el)]))

    std = binary(graph.AddOp, var, ctx.scalar(epsilon, el))
    std = ctx.emit1(graph.SqrtOp(operands=[std], result_types=[std.type]))
    y = binary(graph.DivOp, binary(graph.SubOp, x, mean), std)
    y = binary(graph.AddOp, binary(graph.MulOp, y, scale), bias)
    if graph.shape_of(y) != ctx.shape(0):
        raise ctx.invalid(f"per-activation statistics do not broadcast to {ctx.shape(0)}")
    return y


def convert_lrn(ctx: NodeContext) -> list[Result]:
    op = graph.LRNOp(
        operands=[ctx.operand(0)],
        result_types=[same_type(ctx, 0)],
        properties={
            "size": types.i64_attr(ctx.attr("size")),
            "alpha": types.float_attr(ctx.attr("alpha", 1e-4)),
            "beta": types.float_attr(ctx.attr("beta", 0.75)),
            "bias": types.float_attr(ctx.attr("bias", 1.0)),
        },
    )
    return [ctx.emit1(op)]


def _softmax(ctx: NodeContext, take_log: bool) -> list[Result]:
    """Softmax/LogSoftmax with opset-13 semantics (LogSoftmax composed from the max-shifted
    input: `log_softmax`).

    Before opset 13 the input is coerced to 2-D at `axis`: flatten, softmax over axis 1,
    reshape back. When `axis` is the last axis that is just a softmax over it.
    """
    x = ctx.shape(0)
    rank = len(x)
    axis = ctx.attr("axis", -1 if ctx.opset >= 13 else 1)
    if not -rank <= axis < rank:
        raise ctx.invalid(f"axis {axis} out of range for rank {rank}")
    axis %= rank
    value, ttype = ctx.operand(0), same_type(ctx, 0)
    coerce = ctx.opset < 13 and axis != rank - 1
    if coerce:
        flat = types.tensor_type(shapes.flatten_shape(x, axis), ctx.element_type(0))
        value = ctx.emit1(graph.FlattenOp(operands=[value], result_types=[flat],
                                          properties={"axis": types.i64_attr(axis)}))
        ttype, axis = flat, 1
    if take_log:
        value = log_softmax(ctx, value, axis)
    else:
        value = ctx.emit1(graph.SoftmaxOp(operands=[value], result_types=[ttype],
                                          properties={"axis": types.i64_attr(axis)}))
    if coerce:
        value = ctx.emit1(graph.ReshapeOp(operands=[value], result_types=[same_type(ctx, 0)]))
    return [value]


def convert_softmax(ctx: NodeContext) -> list[Result]:
    return _softmax(ctx, take_log=False)


def convert_log_softmax(ctx: NodeContext) -> list[Result]:
    return _softmax(ctx, take_log=True)


def convert_dropout(ctx: NodeContext) -> list[Result]:
    """Inference Dropout is the identity; its mask, if used, is all ones. Training mode
    (opset 12+) drops at random: onnx_ops_random.dropout_training."""
    if ctx.opset >= 12:
        training = ctx.optional_constant(2, "training_mode")
        if training is not None and bool(training.reshape(-1)[0]):
            from onnxc.frontend.onnx_ops_random import dropout_training

            ratio = ctx.optional_constant(1, "ratio")
            return dropout_training(ctx, 0.5 if ratio is None else float(ratio.reshape(-1)[0]))
        # The ratio does not matter for inference: keep it only when it is known.
        ratio_array = ctx.tensor(1).array if ctx.has_input(1) else None
        ratio = None if ratio_array is None else float(ratio_array.reshape(-1)[0])
    else:
        ratio = ctx.attr("ratio", 0.5)
    props = {} if ratio is None else {"ratio": types.float_attr(ratio)}
    out = ctx.emit1(graph.DropoutOp(operands=[ctx.operand(0)], result_types=[same_type(ctx, 0)],
                                    properties=props))
    if not ctx.output_used(1):
        return [out, None]
    # The mask is bool since opset 10 and has the input's type before.
    mask_el = types.element_type(types.TP.BOOL) if ctx.opset >= 10 else ctx.element_type(0)
    one = np.ones((1,), dtype=element_dtype(mask_el))
    mask = ctx.emit1(graph.ConstantOfShapeOp(
        properties={"value": from_numpy(one)},
        result_types=[types.tensor_type(ctx.shape(0), mask_el)],
    ))
    return [out, mask]


def convert_layer_normalization(ctx: NodeContext) -> list[Result]:
    """LayerNormalization-17: graph.layer_normalization when only Y is used; the training
    outputs Mean/InvStdDev make it graph.layer_normalization_stats (onnx_ops_normalization)."""
    if ctx.output_used(1) or ctx.output_used(2):
        return layer_normalization_with_statistics(ctx)
    rank = ctx.rank(0)
    axis = ctx.infer(lambda: (shapes.normalize_axis(ctx.attr("axis", -1), rank),))[0]
    bias = ctx.operand(2) if ctx.has_input(2) else None
    op = graph.LayerNormalizationOp(
        operands=[ctx.operand(0), ctx.operand(1), bias],
        result_types=[ctx.tensor(0).type],
        properties={
            "axis": types.i64_attr(axis),
            "epsilon": types.float_attr(ctx.attr("epsilon", 1e-5)),
        },
    )
    return [ctx.emit1(op), None, None][: max(1, ctx.num_outputs)]


CONVERTERS: dict[str, Converter] = {
    "LayerNormalization": convert_layer_normalization,
    "Conv": sample_wise(convert_conv),
    "MaxPool": sample_wise(convert_max_pool),
    "AveragePool": sample_wise(convert_average_pool),
    "GlobalAveragePool": sample_wise(_global_pool(graph.GlobalAveragePoolOp)),
    "GlobalMaxPool": sample_wise(_global_pool(graph.GlobalMaxPoolOp)),
    "BatchNormalization": sample_wise(convert_batch_norm),
    "LRN": sample_wise(convert_lrn),
    "Softmax": convert_softmax,
    "LogSoftmax": convert_log_softmax,
    "Dropout": sample_wise(convert_dropout),
}
