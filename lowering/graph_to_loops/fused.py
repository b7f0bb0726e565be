"""Kernels of the ops the Extended fusions create: Erf, Gelu, PRelu, WeightedSum, LayerNorm
(and RMSNorm, imported from ONNX, which shares its kernel).

Each replaces a chain of elementwise/reduction kernels by one pass (two for LayerNorm's
statistics) over memory; Attention has its own module.
"""

from __future__ import annotations

from xdsl.dialects import math

from onnxc.dialects import graph
from onnxc.dialects.activations import gelu
from onnxc.dialects.graph import float_of, shape_of
from onnxc.dialects.graph_fused import strip_leading_ones
from onnxc.errors import LoweringError
from onnxc.lowering.graph_to_loops.activation_ops import KernelOps
from onnxc.lowering.graph_to_loops.element_types import is_float
from onnxc.lowering.graph_to_loops.elementwise import map_elementwise, require_physical_broadcast
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder, broadcast_indices
from onnxc.lowering.graph_to_loops.normalization import (
    extents,
    is_zero,
    reassoc_add,
    reassoc_muladd,
    sizes,
)
from onnxc.lowering.graph_to_loops.rules import KernelRule


def require_float(op, kb_out) -> None:
    element = kb_out.type.get_element_type()
    if not is_float(element):
        raise LoweringError(f"{op.name}: element type {element} is not a float")


def elementwise_float(op, kb_out) -> None:
    """The checks of an elementwise float kernel: float type, operands in one layout."""
    require_float(op, kb_out)
    require_physical_broadcast(op)


def erf_kernel(op: graph.ErfOp, kb: KernelBuilder, ins, outs):
    elementwise_float(op, outs[0])
    map_elementwise(kb, ins, outs[0], lambda kb, a: kb.insert(math.ErfOp(a[0])))


def gelu_kernel(op: graph.GeluOp, kb: KernelBuilder, ins, outs):
    elementwise_float(op, outs[0])
    approximate = op.approximate.data
    map_elementwise(kb, ins, outs[0], lambda kb, a: gelu(KernelOps(kb), a[0], approximate))


def prelu_kernel(op: graph.PReluOp, kb: KernelBuilder, ins, outs):
    elementwise_float(op, outs[0])

    def prelu(kb: KernelBuilder, a):
        x, slope = a
        negative = kb.less_than(x, kb.constant(0.0, x.type))
        return kb.select(negative, kb.mul(x, slope), x)

    map_elementwise(kb, ins, outs[0], prelu)


def weighted_sum_kernel(op: graph.WeightedSumOp, kb: KernelBuilder, ins, outs):
    elementwise_float(op, outs[0])
    element = outs[0].type.get_element_type()
    coefficients = op.coefficient_values()

    def weighted(kb: KernelBuilder, args):
        acc = kb.mul(args[0], kb.constant(coefficients[0], element))
        for value, c in zip(args[1:], coefficients[1:]):
            acc = kb.muladd(value, kb.constant(c, element), acc)
        return acc

    map_elementwise(kb, ins, outs[0], weighted)


def _parameter_shape(kb: KernelBuilder, value) -> tuple[Index, ...]:
    """The shape a LayerNorm scale or bias is read with: without its leading 1s, at least
    rank 1, so the view and the indices `broadcast_indices` makes for it agree (a symbolic
    size as its run-time value)."""
    return tuple(kb.dim(d) for d in strip_leading_ones(shape_of(value))) or (1,)


def layer_normalization_kernel(op: graph.LayerNormalizationOp, kb: KernelBuilder, ins, outs):
    """Per row of the normalized dimensions: mean, then variance (two-pass, for accuracy),
    then one scaled write; the reductions are reassociable so that they vectorize, and the
    row (a few KiB) stays in L1 across the three passes."""
    _normalize_rows(op, kb, ins, outs, centered=True)


def layer_normalization_stats_kernel(op: graph.LayerNormalizationStatsOp, kb: KernelBuilder,
                                     ins, outs):
    """LayerNorm's kernel that also stores each row's mean and 1 / sqrt(var + eps)."""
    _normalize_rows(op, kb, ins, outs, centered=True)


def rms_normalization_kernel(op: graph.RMSNormalizationOp, kb: KernelBuilder, ins, outs):
    """LayerNorm's kernel without the mean: one pass for mean(x^2), one scaled write."""
    _normalize_rows(op, kb, ins, outs, centered=False)


def _normalize_rows(op: graph.LayerNormalizationOp | graph.LayerNormalizationStatsOp
                    | graph.RMSNormalizationOp, kb: KernelBuilder, ins, outs,
                    centered: bool) -> None:
    """y = (x - mean) * inv_std * scale (+ bias) per row of [axis, rank), or, not
    `centered`, y = x * inv_rms * scale (RMSNormalization); with three outputs, the rows'
    mean and inv_std are stored too."""
    require_float(op, outs[0])
    x_shape = sizes(kb, op.input)  # symbolic sizes: run-time values (rows or row)
    axis = op.normalized_axis()
    trailing = list(x_shape[axis:])
    outer, size = kb.product(x_shape[:axis]), kb.product(trailing)
    element = outs[0].type.get_element_type()
    statistics = [kb.view(out, [outer]) for out in outs[1:]] if not is_zero(outer) else []
    if is_zero(outer) or is_zero(size):
        if statistics:  # empty rows: their mean and variance are 0 / 0
            nan = kb.constant(float("nan"), element)
            kb.nest(extents([outer]), lambda ivs: [kb.store(nan, s, ivs) for s in statistics])
        return
    flat = kb.view(ins[0], [outer, size])
    x = kb.view(ins[0], [outer, *trailing])
    y = kb.view(outs[0], [outer, *trailing])
    # scale and bias broadcast within the normalized dimensions (leading 1s dropped); one
    # that holds a single value (GroupNorm(1) and InstanceNorm with one channel fold their
    # affine parameters into such) is viewed and indexed as [1], never as rank 0
    scale_shape = _parameter_shape(kb, op.scale)
    scale = kb.view(ins[1], scale_shape)
    has_bias = centered and op.bias is not None
    bias_shape = _parameter_shape(kb, op.bias) if has_bias else ()
    bias = kb.view(ins[2], bias_shape) if has_bias else None
    zero = kb.constant(0.0, element)
    inv_n = (kb.constant(1.0 / size, element) if isinstance(size, int)
             else kb.div(kb.constant(1.0, element), kb.to_float(size, element)))
    eps = kb.constant(float_of(op.epsilon), element)
    one = kb.constant(1.0, element)

    def per_row(r: Index) -> None:
        mean = None
        if centered:
            (total,) = kb.reduce(0, size, [zero],
                                 lambda i, acc: [reassoc_add(kb, acc, kb.load(flat, [r, i]))])
            mean = kb.mul(total, inv_n)

        def square(i: Index, acc):
            d = kb.load(flat, [r, i])
            d = d if mean is None else kb.sub(d, mean)
            return [reassoc_muladd(kb, d, d, acc)]

        (squares,) = kb.reduce(0, size, [zero], square)
        variance = kb.mul(squares, inv_n)
        inv_std = kb.div(one, kb.insert(math.SqrtOp(kb.add(variance, eps))))
        if statistics:
            kb.store(mean, statistics[0], [r])
            kb.store(inv_std, statistics[1], [r])

        def write(ivs: list[Index]) -> None:
            value = kb.load(x, [r, *ivs])
            normalized = kb.mul(value if mean is None else kb.sub(value, mean), inv_std)
            gamma = kb.load(scale, broadcast_indices(ivs, scale_shape))
            if bias is None:
                kb.store(kb.mul(normalized, gamma), y, [r, *ivs])
                return
            beta = kb.load(bias, broadcast_indices(ivs, bias_shape))
            kb.store(kb.muladd(normalized, gamma, beta), y, [r, *ivs])

        kb.nest(extents(trailing), write)

    kb.parallel_for(0, outer, per_row)


RULES = (
    KernelRule(graph.ErfOp, erf_kernel, symbolic=True),
    KernelRule(graph.GeluOp, gelu_kernel, symbolic=True),
    KernelRule(graph.PReluOp, prelu_kernel, symbolic=True),
    KernelRule(graph.WeightedSumOp, weighted_sum_kernel, symbolic=True),
    KernelRule(graph.LayerNormalizationOp, layer_normalization_kernel, symbolic=True),
    KernelRule(graph.LayerNormalizationStatsOp, layer_normalization_stats_kernel,
               symbolic=True),
    KernelRule(graph.RMSNormalizationOp, rms_normalization_kernel, symbolic=True),
)
"""symbolic: the kernels read their sizes from the KernelBuilder (symbolic dims welcome)."""
