"""Random generators: RandomUniform, RandomNormal and their *Like forms as graph.random
(dialects/graph_random.py: which generator, seeded or per run), and the ops built on a
uniform draw: Bernoulli (draw < p), Multinomial (the first class whose cumulative
probability passes draw * total) and training-mode Dropout (keep where draw >= ratio, scale
by 1 / (1 - ratio)).

Numbers cannot match onnxruntime's (another generator); a seed gives the same numbers every
run and every compile. None of these is folded at import or by the graph passes.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import StringAttr, f64
from xdsl.ir import SSAValue

from onnxc.dialects.graph_random import RandomOp
from onnxc.dialects.symbolic_dims import Dim
from onnxc.frontend import onnx_types as types
from onnxc.frontend.onnx_context import NodeContext, Result
from onnxc.frontend.onnx_ops_math import Converter
from onnxc.frontend.onnx_ops_microsoft import onnx_node

FLOATS = (types.TP.FLOAT16, types.TP.FLOAT, types.TP.DOUBLE)
"""Element types the generator writes (bf16 has no kernel)."""


def _float_type(ctx: NodeContext, code: int | None, like: int | None = None):
    """The draw's element type: the `dtype` attribute, else input `like`'s."""
    if code is None:
        if like is None:
            code = types.TP.FLOAT
        else:
            el = ctx.element_type(like)
            if not types.is_float(el) or str(el) == "bf16":
                raise ctx.invalid(f"no dtype given and the input's type {el} is not float16, "
                                  "float or double")
            return el
    if code not in FLOATS:
        raise ctx.unsupported(f"dtype {types.type_name(code)} (float16, float or double)")
    return types.element_type(code)


def draw(ctx: NodeContext, distribution: str, a: float, b: float, el,
         shape: tuple[Dim, ...], like: SSAValue | None = None) -> SSAValue:
    """A graph.random of `shape` (that of `like` when given), seeded by the node's seed."""
    seed = ctx.attr("seed", None)
    props = {"distribution": StringAttr(distribution), "a": types.float_attr(a, f64),
             "b": types.float_attr(b, f64)}
    if seed is not None:
        props["seed"] = types.float_attr(float(seed), f64)
    return ctx.emit1(RandomOp(operands=[like], result_types=[types.tensor_type(shape, el)],
                              properties=props))


def _generator(distribution: str, like: bool) -> Converter:
    first, second = (("low", 0.0), ("high", 1.0)) if distribution == "uniform" else \
        (("mean", 0.0), ("scale", 1.0))

    def convert(ctx: NodeContext) -> list[Result]:
        a, b = float(ctx.attr(first[0], first[1])), float(ctx.attr(second[0], second[1]))
        if not (np.isfinite(a) and np.isfinite(b)) or (distribution == "uniform" and b < a) \
                or (distribution == "normal" and b < 0):
            raise ctx.invalid(f"{first[0]} {a} / {second[0]} {b}")
        if like:
            el = _float_type(ctx, ctx.attr("dtype", None), like=0)
            return [draw(ctx, distribution, a, b, el, ctx.shape(0), ctx.operand(0))]
        shape = ctx.ints("shape")
        if shape is None or any(d < 0 for d in shape):
            raise ctx.invalid(f"shape {shape} (required, non-negative)")
        ctx.check_size(shape, 8, "its result")
        el = _float_type(ctx, ctx.attr("dtype", types.TP.FLOAT))
        return [draw(ctx, distribution, a, b, el, tuple(shape))]

    return convert


def _uniform_like(ctx: NodeContext, i: int) -> SSAValue:
    el = ctx.element_type(i)
    if not types.is_float(el) or str(el) == "bf16":
        raise ctx.unsupported(f"input type {el} (float16, float or double)")
    return draw(ctx, "uniform", 0.0, 1.0, el, ctx.shape(i), ctx.operand(i))


def convert_bernoulli(ctx: NodeContext) -> list[Result]:
    """1 where a uniform draw in [0, 1) is below the input's probability, else 0."""
    u = _uniform_like(ctx, 0)
    hit = onnx_node(ctx, "Less", [u, ctx.tensor(0)])[0]
    code = ctx.attr("dtype", None)
    if code is not None and not types.is_supported(code):
        raise ctx.unsupported(f"dtype {types.type_name(code)}")
    to = code if code is not None else types.onnx_type_of_element(ctx.element_type(0))
    return onnx_node(ctx, "Cast", [hit], {"to": int(to)})


def convert_multinomial(ctx: NodeContext) -> list[Result]:
    """Samples of the classes of each row of unnormalized log-probabilities [batch, C]:
    the count of classes whose cumulative exp(x - max) is at most u * total, for u uniform
    in [0, 1) (at most C - 1: rounding at the top)."""
    x = ctx.shape(0)
    if len(x) != 2:
        raise ctx.invalid(f"input shape {x}: [batch_size, class_size] expected")
    samples = int(ctx.attr("sample_size", 1))
    if samples < 1:
        raise ctx.invalid(f"sample_size {samples}")
    code = ctx.attr("dtype", types.TP.INT32)
    if code not in (types.TP.INT32, types.TP.INT64):
        raise ctx.invalid(f"dtype {types.type_name(code)} (int32 or int64)")
    el = ctx.element_type(0)
    if not types.is_float(el) or str(el) == "bf16":
        raise ctx.unsupported(f"input type {el} (float16, float or double)")
    batch, classes = x
    axis1 = np.array([1], np.int64)
    top = onnx_node(ctx, "ReduceMax", [ctx.tensor(0), axis1], {"keepdims": 1}, opset=18)[0]
    weights = onnx_node(ctx, "Exp", [onnx_node(ctx, "Sub", [ctx.tensor(0), top])[0]])[0]
    cdf = onnx_node(ctx, "CumSum", [weights, np.array(1, np.int64)])[0]
    total = onnx_node(ctx, "ReduceSum", [weights, axis1], {"keepdims": 1})[0]
    u = draw(ctx, "uniform", 0.0, 1.0, el, (batch, samples))
    target = onnx_node(ctx, "Mul", [u, total])[0]  # [batch, samples]
    passed = onnx_node(ctx, "LessOrEqual", [
        onnx_node(ctx, "Unsqueeze", [cdf, axis1])[0],                      # [B, 1, C]
        onnx_node(ctx, "Unsqueeze", [target, np.array([2], np.int64)])[0]])[0]  # [B, S, 1]
    count = onnx_node(ctx, "ReduceSum", [
        onnx_node(ctx, "Cast", [passed], {"to": int(types.TP.INT64)})[0],
        np.array([2], np.int64)], {"keepdims": 0})[0]
    last = np.array(classes - 1, np.int64) if isinstance(classes, int) else None
    if last is None:
        raise ctx.unsupported(f"a symbolic class count {classes}")
    picked = onnx_node(ctx, "Min", [count, last])[0]
    return onnx_node(ctx, "Cast", [picked], {"to": int(code)})


def dropout_training(ctx: NodeContext, ratio: float) -> list[Result]:
    """Training-mode Dropout: x * mask / (1 - ratio) with mask = draw >= ratio (all kept
    for ratio 0); ratio 1 drops everything (output 0, as onnxruntime)."""
    if not 0.0 <= ratio <= 1.0:
        raise ctx.invalid(f"ratio {ratio} outside [0, 1]")
    el = ctx.element_type(0)
    u = _uniform_like(ctx, 0)
    keep = onnx_node(ctx, "GreaterOrEqual", [u, np.array(ratio, types.numpy_dtype(
        types.onnx_type_of_element(el)))])[0]
    scale = 0.0 if ratio == 1.0 else 1.0 / (1.0 - ratio)
    kept = onnx_node(ctx, "Cast", [keep], {"to": int(types.onnx_type_of_element(el))})[0]
    y = onnx_node(ctx, "Mul", [ctx.tensor(0), onnx_node(ctx, "Mul", [
        kept, np.array(scale, types.numpy_dtype(types.onnx_type_of_element(el)))])[0]])[0]
    return [y, keep if ctx.num_outputs > 1 else None]


CONVERTERS: dict[str, Converter] = {
    "RandomUniform": _generator("uniform", like=False),
    "RandomNormal": _generator("normal", like=False),
    "RandomUniformLike": _generator("uniform", like=True),
    "RandomNormalLike": _generator("normal", like=True),
    "Bernoulli": convert_bernoulli,
    "Multinomial": convert_multinomial,
}

__all__ = ["CONVERTERS", "draw", "dropout_training"]
