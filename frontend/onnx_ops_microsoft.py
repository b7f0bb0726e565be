"""com.microsoft contrib ops as onnxruntime's tools write them: activations, normalizations,
FusedMatMul / FusedConv / FusedGemm (the attention family: onnx_ops_microsoft_attention.py).

onnxruntime's transformer optimizer (`onnxruntime.transformers.optimizer.optimize_model`) and
its session optimizer rewrite exported models into these fused ops. Each is an ONNX-standard
op onnxc converts already (Gelu, LayerNormalization, RMSNormalization, MatMul, Gemm, Conv,
an activation) plus what the contrib op adds around it (a bias, a skip sum, a transpose, an
activation after it, an embedding lookup). A converter here builds that part and hands the
standard part to the standard op's own converter (`onnx_node`: a node of its own, on a
NodeContext of its own, whose errors are reported as this node's), so the math exists once.

Semantics are onnxruntime's CPU kernels' (checked against onnxruntime 1.32 in
tests/unit/ops/test_microsoft_transformer.py), including their choices the spec text leaves
open: SkipSimplifiedLayerNormalization's `mean` output is zeros, FusedGemm requires an
activation and the parameters it takes, FusedMatMul's transBatch flags need two operands of
one rank >= 3, EmbedLayerNormalization's ids index its tables as ONNX Gather does (see `check_ids`).
Attributes and optional inputs are honoured or refused with a located error, never ignored.

SimplifiedLayerNormalization is a contrib op onnxruntime registers in the default domain
(as it writes it): it is in ONNX_DOMAIN_CONVERTERS, merged into the default table.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
from xdsl.dialects.builtin import i32, i64
from xdsl.ir import SSAValue

from onnxc.dialects import graph
from onnxc.dialects.dense_data import from_numpy
from onnxc.errors import ModelLoadError, UnsupportedOpError
from onnxc.frontend import onnx_types as types
from onnxc.frontend.onnx_context import NodeContext, Result, Tensor
from onnxc.frontend.onnx_graph_builder import GraphBuilder, Value, shape
from onnxc.frontend.onnx_ops_math import Converter

ONNX_OPSET = 23
"""The default domain's opset of the standard nodes the converters hand on (RMSNormalization,
RotaryEmbedding and Attention exist from 23)."""


# ---------------------------------------------------------------------------- the standard op


def _as_tensor(value: Value | Tensor) -> Tensor:
    if isinstance(value, Tensor):
        return value
    if isinstance(value, np.ndarray):
        return Tensor.of_array(value)
    return Tensor(value.type, value=value)


def onnx_node(ctx: NodeContext, op_type: str, inputs: Sequence[Value | Tensor | None],
              attrs: dict | None = None, *, outputs: int = 1,
              used: Sequence[int] | None = None, opset: int = ONNX_OPSET,
              domain: str = "") -> list[Result]:
    """The results of `domain`'s `op_type` (the default domain's unless said) on `inputs`
    (None: an omitted input), by its own converter, its ops emitted where `ctx`'s go;
    `used`: the outputs something reads (all by default). Its errors name this node, its op
    and its opset."""
    from onnxc.frontend.onnx_converters import converter_for  # which imports this module

    tensors: dict[str, Tensor] = {}
    names = []
    for i, value in enumerate(inputs):
        names.append("" if value is None else f"{op_type}.input{i}")
        if value is not None:
            tensors[names[-1]] = _as_tensor(value)
    out_names = [f"{op_type}.output{i}" for i in range(outputs)]
    wanted = {out_names[i] for i in (range(outputs) if used is None else used)}
    node = onnx.helper.make_node(op_type, names, out_names, name=ctx.label,
                                 domain=domain or None, **(attrs or {}))
    inner = NodeContext(node, ctx.label, opset, tensors, ctx.block, wanted.__contains__)
    try:
        return converter_for(domain, op_type)(inner)
    except UnsupportedOpError as err:
        raise ctx.unsupported(f"(as ONNX {op_type}) {err.detail}") from err
    except ModelLoadError as err:
        text = str(err).removeprefix(f"node '{ctx.label}' ({op_type}, opset {opset}): ")
        raised = ctx.invalid(f"(as ONNX {op_type}) {text}")
        if getattr(err, "decided", False):
            raised.decided = True  # type: ignore[attr-defined]
        raise raised from err


def float_builder(ctx: NodeContext, *inputs: int) -> GraphBuilder:
    """A GraphBuilder in input 0's element type, which must be a float one, as must that of
    every other input in `inputs` (the same type)."""
    el = ctx.element_type(0)
    if not types.is_float(el):
        raise ctx.unsupported(f"element type {el} (float types only)")
    for i in inputs:
        if ctx.has_input(i) and ctx.element_type(i) != el:
            raise ctx.invalid(f"input {i} has element type {ctx.element_type(i)}, input 0 {el}")
    return GraphBuilder(ctx, el)


def row_vector(ctx: NodeContext, b: GraphBuilder, i: int, what: str, width) -> Value:
    """Input `i`, which must be 1-D of `width` elements (a bias or scale per channel)."""
    value = b.input(i)
    if shape(value) != (width,):
        raise ctx.invalid(f"{what} {list(shape(value))} must be 1-D of {width} elements (the "
                          f"input's last dimension)")
    return value


def arange(b: GraphBuilder, n, el=i64) -> Value:
    """[0, 1, ..., n - 1] of integer type `el`: an array for a static n, else computed in the
    run (an exclusive cumulative sum of ones)."""
    if isinstance(n, int):
        return np.arange(n, dtype=np.int64 if el == i64 else np.int32)
    one = np.ones((1,), np.int64 if el == i64 else np.int32)
    ones = b.ctx.emit1(graph.ConstantOfShapeOp(properties={"value": from_numpy(one)},
                                               result_types=[types.tensor_type((n,), el)]))
    return b.emit(graph.CumSumOp, [ones], axis=types.i64_attr(0), exclusive=types.i64_attr(1),
                  reverse=types.i64_attr(0))


def check_ids(ctx: NodeContext, ids: Value, bound: int, what: str) -> None:
    """Constant `ids` must be in [0, bound), as onnxruntime requires. Ids computed in the
    run are checked by the Gather they index (insert-runtime-checks): one outside
    [-bound, bound) stops the run; a negative one counts from the end, as in ONNX Gather,
    where onnxruntime's contrib kernels refuse it (an explicit check here would be a graph
    op that `onnxc optimize` cannot write back as ONNX)."""
    if isinstance(ids, np.ndarray) and ids.size and (ids.min() < 0 or ids.max() >= bound):
        raise ctx.invalid(f"{what} out of range [0, {bound})")


# ---------------------------------------------------------------------------- activations


def convert_gelu(ctx: NodeContext) -> list[Result]:
    """Gelu: x * Phi(x), the erf form."""
    float_builder(ctx)
    return onnx_node(ctx, "Gelu", [ctx.tensor(0)], {"approximate": "none"})


def _with_bias(ctx: NodeContext, b: GraphBuilder) -> Value:
    x = b.input(0)
    if not ctx.has_input(1):
        return x
    return b.add(x, row_vector(ctx, b, 1, "bias", shape(x)[-1]))


def convert_fast_gelu(ctx: NodeContext) -> list[Result]:
    """FastGelu: the tanh approximation of GELU of x (+ a 1-D bias)."""
    b = float_builder(ctx, 1)
    return onnx_node(ctx, "Gelu", [_with_bias(ctx, b)], {"approximate": "tanh"})


def convert_bias_gelu(ctx: NodeContext) -> list[Result]:
    """BiasGelu: GELU (erf form) of A + B, B 1-D."""
    b = float_builder(ctx, 1)
    if not ctx.has_input(1):
        raise ctx.invalid("input 1 (the bias) is required")
    return onnx_node(ctx, "Gelu", [_with_bias(ctx, b)], {"approximate": "none"})


def convert_quick_gelu(ctx: NodeContext) -> list[Result]:
    """QuickGelu: x * sigmoid(alpha * x) (ONNX Swish)."""
    float_builder(ctx)
    return onnx_node(ctx, "Swish", [ctx.tensor(0)], {"alpha": float(ctx.attr("alpha", 1.702))})


def convert_bias_add(ctx: NodeContext) -> list[Result]:
    """BiasAdd: X + bias + skip, X and skip [N, S, C], bias [C]. (onnxruntime has no CPU
    kernel for it.)"""
    b = float_builder(ctx, 1, 2)
    x, skip = b.input(0), b.input(2)
    if len(shape(x)) != 3 or shape(skip) != shape(x):
        raise ctx.invalid(f"X {list(shape(x))} must be 3-D and skip {list(shape(skip))} "
                          f"of its shape")
    return [b.value(b.add(b.add(x, row_vector(ctx, b, 1, "bias", shape(x)[2])), skip))]


# ---------------------------------------------------------------------------- normalizations


def _skip_sum(ctx: NodeContext, b: GraphBuilder, bias_input: int) -> Value:
    """input + skip (+ bias), as onnxruntime sums them; skip of the input's shape or one it
    broadcasts to over the batch ([1, S, H], [S, H])."""
    x, skip = b.input(0), b.input(1)
    dims = shape(x)
    if len(dims) not in (2, 3):
        raise ctx.invalid(f"input {list(dims)} must be 2-D or 3-D")
    if shape(skip) not in (dims, dims[1:], (1, *dims[1:])) or len(shape(skip)) < 2:
        raise ctx.invalid(f"skip {list(shape(skip))} must be {list(dims)} or broadcast to it "
                          f"over the batch")
    total = b.add(x, skip)
    if ctx.has_input(bias_input):
        total = b.add(total, row_vector(ctx, b, bias_input, "bias", dims[-1]))
    return total


def _gamma(ctx: NodeContext, b: GraphBuilder, i: int, what: str, width) -> Value:
    if not ctx.has_input(i):
        raise ctx.invalid(f"input {i} ({what}) is required")
    return row_vector(ctx, b, i, what, width)


def _inv_std_rms(b: GraphBuilder, x: Value, axis: int, epsilon: float) -> Value:
    """1 / sqrt(mean(x^2 over [axis, rank)) + epsilon), kept dims (RMS normalization's
    inv_std_var), in float32."""
    rank = len(shape(x))
    x32 = x if b.el == types.element_type(types.TP.FLOAT) else \
        b.emit(graph.CastOp, [x], types.element_type(types.TP.FLOAT))
    square = b.mul(x32, x32)
    mean = b.emit(graph.ReduceMeanOp, [square], axes=types.i64_array(range(axis, rank)),
                  keepdims=types.i64_attr(1))
    std = b.emit(graph.SqrtOp, [b.add(mean, np.array(epsilon, np.float32))])
    return b.emit(graph.ReciprocalOp, [std])


def convert_skip_layer_normalization(ctx: NodeContext) -> list[Result]:
    """SkipLayerNormalization: LayerNormalization (last axis) of input + skip (+ bias), with
    its statistics (mean, inv_std_var: [..., 1], float32) and the sum as optional outputs."""
    b = float_builder(ctx, 1, 2, 3, 4)
    total = _skip_sum(ctx, b, 4)
    width = shape(total)[-1]
    gamma = _gamma(ctx, b, 2, "gamma", width)
    beta = row_vector(ctx, b, 3, "beta", width) if ctx.has_input(3) else None
    stats = ctx.output_used(1) or ctx.output_used(2)
    results = onnx_node(ctx, "LayerNormalization", [total, gamma, beta],
                        {"axis": -1, "epsilon": float(ctx.attr("epsilon", 1e-12))},
                        outputs=3, used=(0, 1, 2) if stats else (0,))
    y, mean, inv_std = (list(results) + [None, None])[:3]
    return [y, mean, inv_std, b.value(total) if ctx.output_used(3) else None]


def convert_skip_simplified_layer_normalization(ctx: NodeContext) -> list[Result]:
    """SkipSimplifiedLayerNormalization: RMSNormalization (last axis) of input + skip
    (+ bias); its `mean` output is zeros (onnxruntime's: an RMS norm has none), inv_std_var
    and the sum are optional outputs."""
    b = float_builder(ctx, 1, 2, 3)
    total = _skip_sum(ctx, b, 3)
    width = shape(total)[-1]
    gamma = _gamma(ctx, b, 2, "gamma", width)
    epsilon = float(ctx.attr("epsilon", 1e-12))
    (y,) = onnx_node(ctx, "RMSNormalization", [total, gamma],
                     {"axis": -1, "epsilon": epsilon})
    stats = (*shape(total)[:-1], 1)
    f32 = types.element_type(types.TP.FLOAT)
    mean = None
    if ctx.output_used(1):
        mean = ctx.emit1(graph.ConstantOfShapeOp(
            properties={"value": from_numpy(np.zeros((1,), np.float32))},
            result_types=[types.tensor_type(stats, f32)]))
    inv_std = _inv_std_rms(b, total, len(shape(total)) - 1, epsilon) \
        if ctx.output_used(2) else None
    return [y, mean, b.value(inv_std) if inv_std is not None else None,
            b.value(total) if ctx.output_used(3) else None]


def convert_simplified_layer_normalization(ctx: NodeContext) -> list[Result]:
    """SimplifiedLayerNormalization (onnxruntime's, in the default domain): RMSNormalization
    over [axis, rank) with its inv_std_var ([..., 1, ...] in stash_type) as optional output."""
    axis, epsilon = ctx.attr("axis", -1), float(ctx.attr("epsilon", 1e-5))
    stash = ctx.attr("stash_type", types.TP.FLOAT)
    (y,) = onnx_node(ctx, "RMSNormalization", [ctx.tensor(0), ctx.tensor(1)],
                     {"axis": axis, "epsilon": epsilon, "stash_type": stash})
    if not ctx.output_used(1):
        return [y, None]
    if stash != types.TP.FLOAT:
        raise ctx.unsupported(f"the inv_std_var output with stash_type {stash} (float only)")
    b = GraphBuilder(ctx, ctx.element_type(0))
    x = b.input(0)
    axis = axis % len(shape(x)) if -len(shape(x)) <= axis < len(shape(x)) else axis
    return [y, b.value(_inv_std_rms(b, x, axis, epsilon))]


def convert_embed_layer_normalization(ctx: NodeContext) -> list[Result]:
    """EmbedLayerNormalization: LayerNormalization of word_embedding[input_ids] +
    position_embedding[position_ids, or 0..S-1] (+ segment_embedding[segment_ids]); outputs
    the mask_index (per batch entry the number of 1s of mask, zeros without one, int32) and
    the sum before the normalization."""
    el = ctx.element_type(2)
    if not types.is_float(el):
        raise ctx.unsupported(f"embedding element type {el} (float types only)")
    b = GraphBuilder(ctx, el)
    ids = b.input(0)
    if len(shape(ids)) != 2 or ctx.element_type(0) != i32:
        raise ctx.invalid(f"input_ids must be int32 [batch, sequence], not "
                          f"{ctx.element_type(0)} {list(shape(ids))}")
    batch, seq = shape(ids)
    words = b.input(2)
    if len(shape(words)) != 2:
        raise ctx.invalid(f"word_embedding {list(shape(words))} must be 2-D")
    hidden = shape(words)[1]

    def lookup(table_input: int, what: str, indices: Value, index_what: str) -> Value:
        table = b.input(table_input)
        if len(shape(table)) != 2 or shape(table)[1] != hidden or \
                ctx.element_type(table_input) != el:
            raise ctx.invalid(f"{what} {list(shape(table))} must be 2-D of {hidden} columns "
                              f"and {el}")
        check_ids(ctx, indices, shape(table)[0], index_what)
        return b.gather0(table, indices)

    total = b.add(lookup(2, "word_embedding", ids, "input_ids"),
                  lookup(3, "position_embedding", _positions(ctx, b, batch, seq),
                         "position_ids"))
    if ctx.has_input(1) != ctx.has_input(4):
        raise ctx.invalid("segment_ids and segment_embedding go together")
    if ctx.has_input(1):
        segments = b.input(1)
        if shape(segments) != (batch, seq) or ctx.element_type(1) != i32:
            raise ctx.invalid(f"segment_ids must be int32 [{batch}, {seq}]")
        total = b.add(total, lookup(4, "segment_embedding", segments, "segment_ids"))
    gamma = _gamma(ctx, b, 5, "gamma", hidden)
    beta = _gamma(ctx, b, 6, "beta", hidden)
    (y,) = onnx_node(ctx, "LayerNormalization", [total, gamma, beta],
                     {"axis": -1, "epsilon": float(ctx.attr("epsilon", 1e-12))})
    mask_type = ctx.attr("mask_index_type", 1)
    if mask_type not in (0, 1):
        raise ctx.invalid(f"mask_index_type must be 0 or 1, not {mask_type}")
    mask_index = _mask_index(ctx, b, batch, seq) if ctx.output_used(1) else None
    return [y, mask_index, b.value(total) if ctx.output_used(2) else None]


def _positions(ctx: NodeContext, b: GraphBuilder, batch, seq) -> Value:
    if not ctx.has_input(8):
        return arange(b, seq, i32)
    positions = b.input(8)
    if shape(positions) not in ((batch, seq), (1, seq)) or ctx.element_type(8) != i32:
        raise ctx.invalid(f"position_ids must be int32 [{batch}, {seq}] or [1, {seq}], not "
                          f"{ctx.element_type(8)} {list(shape(positions))}")
    return positions


def _mask_index(ctx: NodeContext, b: GraphBuilder, batch, seq) -> SSAValue:
    """Per batch entry, how many elements of mask are 1 (int32 [batch]); zeros without it."""
    if not ctx.has_input(7):
        return ctx.emit1(graph.ConstantOfShapeOp(
            properties={"value": from_numpy(np.zeros((1,), np.int32))},
            result_types=[types.tensor_type((batch,), i32)]))
    mask = b.input(7)
    if shape(mask) != (batch, seq) or ctx.element_type(7) != i32:
        raise ctx.invalid(f"mask must be int32 [{batch}, {seq}], not {ctx.element_type(7)} "
                          f"{list(shape(mask))}")
    ones = b.emit(graph.EqualOp, [mask, np.ones((), np.int32)], types.element_type(types.TP.BOOL))
    counts = b.emit(graph.CastOp, [ones], i32)
    return b.emit(graph.ReduceSumOp, [counts], axes=types.i64_array([1]),
                  keepdims=types.i64_attr(0))


# ---------------------------------------------------------------------------- fused ops

_GEMM_ACTIVATIONS = {  # FusedGemm's activations: the attributes each requires
    "Relu": (), "Sigmoid": (), "Tanh": (), "Softsign": (), "Softplus": (),
    "LeakyRelu": ("alpha",), "Elu": ("alpha",), "Celu": ("alpha",),
    "ThresholdedRelu": ("alpha",), "HardSigmoid": ("alpha", "beta"),
    "Selu": ("alpha", "gamma"), "ParametricSoftplus": ("alpha", "beta"),
    "ScaledTanh": ("alpha", "beta"),
}
_CONV_ACTIVATIONS = {  # FusedConv's activations: their activation_params
    "Relu": (), "Tanh": (), "Sigmoid": (), "Silu": (), "LeakyRelu": ("alpha",),
    "Clip": ("min", "max"), "HardSigmoid": ("alpha", "beta"),
}


def activation(ctx: NodeContext, b: GraphBuilder, x: Value, kind: str,
               params: dict[str, float]) -> Value:
    """`kind` (an ONNX activation, or onnxruntime's Silu, ParametricSoftplus: alpha *
    softplus(beta x), ScaledTanh: alpha * tanh(beta x)) of `x` with `params`."""
    if kind == "Silu":
        return onnx_node(ctx, "Swish", [x], {"alpha": 1.0})[0]
    if kind == "Clip":
        bounds = [np.array(params[k], b.dtype) for k in ("min", "max")]
        return onnx_node(ctx, "Clip", [x, *bounds])[0]
    if kind in ("ParametricSoftplus", "ScaledTanh"):
        inner = "Softplus" if kind == "ParametricSoftplus" else "Tanh"
        (y,) = onnx_node(ctx, inner, [b.mul(x, b.floats(params["beta"]))])
        return b.mul(y, b.floats(params["alpha"]))
    return onnx_node(ctx, kind, [x], params)[0]


def _conv_activation(ctx: NodeContext) -> tuple[str, dict[str, float]] | None:
    kind = ctx.attr("activation", None)
    if kind is None:
        return None
    if kind not in _CONV_ACTIVATIONS:
        raise ctx.unsupported(f"activation '{kind}' (onnxruntime's FusedConv takes "
                              f"{', '.join(_CONV_ACTIVATIONS)})")
    names = _CONV_ACTIVATIONS[kind]
    values = [float(v) for v in ctx.attr("activation_params", [])]
    if names and len(values) != len(names):
        raise ctx.invalid(f"activation {kind} takes activation_params {list(names)}, got "
                          f"{values}")
    return kind, dict(zip(names, values))


def convert_fused_conv(ctx: NodeContext) -> list[Result]:
    """FusedConv: activation(Conv(X, W, B) + Z), Z (the sum) optional."""
    b = float_builder(ctx, 1, 2, 3)
    act = _conv_activation(ctx)
    conv_attrs = {k: ctx.attr(k) for k in ("auto_pad", "dilations", "group", "kernel_shape",
                                           "pads", "strides") if ctx.has_attr(k)}
    inputs = [ctx.tensor(0), ctx.tensor(1), ctx.tensor(2) if ctx.has_input(2) else None]
    (y,) = onnx_node(ctx, "Conv", inputs, conv_attrs)
    if ctx.has_input(3):
        z = b.input(3)
        if shape(z) != shape(y):
            raise ctx.invalid(f"Z {list(shape(z))} must have the output's shape "
                              f"{list(shape(y))}")
        y = b.add(y, z)
    return [b.value(y if act is None else activation(ctx, b, y, *act))]


def convert_fused_gemm(ctx: NodeContext) -> list[Result]:
    """FusedGemm: activation(Gemm(A, B, C)); the activation and its activation_alpha /
    _beta / _gamma are required, as onnxruntime's kernel requires them."""
    b = float_builder(ctx, 1, 2)
    kind = ctx.attr("activation", None)
    if kind not in _GEMM_ACTIVATIONS:
        raise ctx.unsupported(f"activation {kind!r} (onnxruntime's FusedGemm takes "
                              f"{', '.join(_GEMM_ACTIVATIONS)})")
    params = {}
    for name in _GEMM_ACTIVATIONS[kind]:
        if not ctx.has_attr(f"activation_{name}"):
            raise ctx.invalid(f"activation {kind} requires attribute activation_{name}")
        params[name] = float(ctx.attr(f"activation_{name}"))
    gemm_attrs = {k: ctx.attr(k) for k in ("alpha", "beta", "transA", "transB")
                  if ctx.has_attr(k)}
    inputs = [ctx.tensor(0), ctx.tensor(1), ctx.tensor(2) if ctx.has_input(2) else None]
    (y,) = onnx_node(ctx, "Gemm", inputs, gemm_attrs)
    return [b.value(activation(ctx, b, y, kind, params))]


def _batch_first(b: GraphBuilder, x: Value) -> Value:
    """transBatch: [d0, d1, ..., d(r-2), d(r-1)] -> [d1, ..., d(r-2), d0, d(r-1)]."""
    rank = len(shape(x))
    return b.transpose(x, [*range(1, rank - 1), 0, rank - 1])


def convert_fused_matmul(ctx: NodeContext) -> list[Result]:
    """FusedMatMul: alpha * op(A) @ op(B), numpy's matmul; op transposes the batch axes
    (transBatch: the first axis moved after the other batch axes, both operands of one rank
    >= 3, as onnxruntime requires) then the last two (trans)."""
    b = float_builder(ctx, 1)
    a, w = b.input(0), b.input(1)
    trans = [bool(ctx.attr(n, 0)) for n in ("transA", "transB", "transBatchA", "transBatchB")]
    trans_a, trans_b, batch_a, batch_b = trans
    if (batch_a or batch_b) and not (len(shape(a)) == len(shape(w)) >= 3):
        raise ctx.invalid(f"transBatchA / transBatchB need two operands of one rank >= 3, not "
                          f"{list(shape(a))} and {list(shape(w))}")
    alpha = float(ctx.attr("alpha", 1.0))
    if len(shape(a)) == len(shape(w)) == 2:
        (y,) = onnx_node(ctx, "Gemm", [ctx.tensor(0), ctx.tensor(1)],
                         {"alpha": alpha, "transA": int(trans_a), "transB": int(trans_b)})
        return [y]
    for flag, name, operand in ((trans_a, "transA", a), (trans_b, "transB", w)):
        if flag and len(shape(operand)) < 2:
            raise ctx.invalid(f"{name} on the 1-D operand {list(shape(operand))}")
    if batch_a:
        a = _batch_first(b, a)
    if batch_b:
        w = _batch_first(b, w)
    if trans_a:
        a = b.transpose(a, [*range(len(shape(a)) - 2), len(shape(a)) - 1, len(shape(a)) - 2])
    if trans_b:
        w = b.transpose(w, [*range(len(shape(w)) - 2), len(shape(w)) - 1, len(shape(w)) - 2])
    (y,) = onnx_node(ctx, "MatMul", [a, w])
    return [b.value(y if alpha == 1.0 else b.mul(y, b.floats(alpha)))]


CONVERTERS: dict[str, Converter] = {
    "Gelu": convert_gelu,
    "FastGelu": convert_fast_gelu,
    "BiasGelu": convert_bias_gelu,
    "QuickGelu": convert_quick_gelu,
    "BiasAdd": convert_bias_add,
    "SkipLayerNormalization": convert_skip_layer_normalization,
    "SkipSimplifiedLayerNormalization": convert_skip_simplified_layer_normalization,
    "EmbedLayerNormalization": convert_embed_layer_normalization,
    "FusedMatMul": convert_fused_matmul,
    "FusedConv": convert_fused_conv,
    "FusedGemm": convert_fused_gemm,
}
"""com.microsoft converters by op type (the attention family's: onnx_ops_microsoft_attention)."""

ONNX_DOMAIN_CONVERTERS: dict[str, Converter] = {
    "SimplifiedLayerNormalization": convert_simplified_layer_normalization,
}
"""Contrib ops onnxruntime registers (and its optimizer writes) in the default domain."""
