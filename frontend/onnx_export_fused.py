"""The fused ops of the graph passes as ONNX: standard ops where ONNX has one, else one call
of an `onnxc` local function whose body is the decomposition into standard ops.

- graph.conv / gemm / matmul without an epilogue: Conv / Gemm / MatMul; with one (row
  fuse-activation): a function `Conv<Act>` (`Gemm<Act>`, `MatMul<Act>`) whose body is the op
  followed by the activation, the op's attributes passed by reference, so one function
  serves every layer with that activation;
- graph.conv_add: a function `ConvAdd[<Act>]` (Conv, Add of the residual, activation);
- graph.pointwise_depthwise: a function of its two Convs and their activations;
- graph.layer_normalization, rms_normalization, gelu: the opset-17/23/20 ops;
- graph.attention: opset-23 Attention (inside a function when the mask must first be
  broadcast to [.., Sq, Sk] or a causal offset becomes a mask, as onnxruntime's kernel
  wants; as MatMul/Softmax/MatMul for inputs that are not 4-D);
- graph.fused_elementwise: a function with one node per op of its scalar body (Add for
  arith.addf, Where for arith.select, Cast for arith.fptoui, ...);
- graph.weighted_sum, channel_shuffle: functions whose bodies are their decompositions
  (passes/composite_reference.py gives their numpy meaning).
"""

from __future__ import annotations

import numpy as np
from onnx import AttributeProto
from xdsl.dialects import arith, math
from xdsl.ir import Operation, SSAValue

from onnxc.dialects import graph
from onnxc.dialects.activations import ACTIVATIONS
from onnxc.dialects.dense_data import element_dtype
from onnxc.dialects.graph import float_of, int_of, ints_of, shape_of
from onnxc.dialects.graph_epilogue import epilogue_of
from onnxc.dialects.graph_fused_elementwise import body_key, cmpf_predicate
from onnxc.frontend.onnx_export import (
    FUNCTION_DOMAIN,
    Emitter,
    FunctionBody,
    OnnxWriter,
    Sink,
    numpy_dtype_of,
    unsupported,
)
from onnxc.frontend.onnx_types import onnx_type_of_element

Epilogue = tuple[str, float | None, float | None]

_ACTIVATION_NAMES = {a.name: a.onnx for a in ACTIVATIONS.values()}
"""Epilogue activation -> its ONNX name (dialects/activations.py)."""


def emit_activation(sink: Sink, x: str, epilogue: Epilogue, dtype: np.dtype,
                    out: str | None = None) -> str:
    """The epilogue's activation of `x` (graph_epilogue's meaning); returns its output."""
    act, alpha, beta = epilogue
    out = out or sink.fresh(act)
    if act == "clip":
        bounds = ["" if b is None else sink.const(np.asarray(b, dtype), name)
                  for b, name in ((alpha, "min"), (beta, "max"))]
        while bounds and not bounds[-1]:
            bounds.pop()
        sink.node("Clip", [x, *bounds], [out])
    elif act == "leaky_relu":
        sink.node("LeakyRelu", [x], [out], alpha=alpha)
    elif act == "hard_swish":  # x * clip(alpha * x + beta, 0, 1)
        gate = sink.apply("HardSigmoid", [x], "gate", alpha=alpha, beta=beta)
        sink.node("Mul", [x, gate], [out])
    elif act == "silu":  # x * sigmoid(x): no ONNX op before opset 24's Swish
        sink.node("Mul", [x, sink.apply("Sigmoid", [x], "gate")], [out])
    elif act in ("gelu", "gelu_tanh"):
        sink.node("Gelu", [x], [out], approximate="tanh" if act == "gelu_tanh" else None)
    else:
        sink.node(_ACTIVATION_NAMES[act], [x], [out])
    return out


def _function_suffix(epilogue: Epilogue | None) -> str:
    return "" if epilogue is None else _ACTIVATION_NAMES[epilogue[0]]


_CONV_ATTRS = {"strides": AttributeProto.INTS, "pads": AttributeProto.INTS,
               "dilations": AttributeProto.INTS, "group": AttributeProto.INT}
_GEMM_ATTRS = {"alpha": AttributeProto.FLOAT, "beta": AttributeProto.FLOAT,
               "transA": AttributeProto.INT, "transB": AttributeProto.INT}


def _conv_attrs(op) -> dict[str, object]:
    return {"strides": list(ints_of(op.strides)), "pads": list(ints_of(op.pads)),
            "dilations": list(ints_of(op.dilations)), "group": int_of(op.group)}


def _with_epilogue(w: OnnxWriter, op: Operation, kernel: str, operands: list[SSAValue | None],
                   formal: list[str], refs: dict[str, int], attrs: dict[str, object],
                   addend: SSAValue | None = None) -> None:
    """`kernel` (then + addend, then the epilogue) as one node: the plain op when there is
    nothing after it, else a call of the function computing the whole chain."""
    epilogue = epilogue_of(op)
    present = [(v, f) for v, f in zip(operands, formal) if v is not None]
    if epilogue is None and addend is None:
        w.emit(op, kernel, [w.name(v) for v, _ in present], **attrs)
        return
    inputs = [f for _, f in present] + (["Z"] if addend is not None else [])
    dtype = numpy_dtype_of(op.results[0])

    def build(body: FunctionBody) -> None:
        y = "Y" if epilogue is None and addend is None else body.fresh(kernel.lower())
        body.node_with_refs(kernel, [f for _, f in present], [y], refs)
        if addend is not None:
            total = "Y" if epilogue is None else body.fresh("sum")
            body.node("Add", [y, "Z"], [total])
            y = total
        if epilogue is not None:
            emit_activation(body, y, epilogue, dtype, out="Y")

    name = ("Add" if addend is not None else "") + _function_suffix(epilogue)
    key = (kernel, tuple(inputs), addend is not None, epilogue, dtype.name)
    fn = w.function(key, kernel + name, inputs, ["Y"], build, attributes=list(refs))
    operand_names = [w.name(v) for v, _ in present]
    if addend is not None:
        operand_names.append(w.name(addend))
    w.emit(op, fn, operand_names, domain=FUNCTION_DOMAIN, **attrs)


def _conv(w: OnnxWriter, op: graph.ConvOp) -> None:
    _with_epilogue(w, op, "Conv", [op.input, op.weight, op.bias], ["X", "W", "B"],
                   _CONV_ATTRS, _conv_attrs(op))


def _conv_add(w: OnnxWriter, op: graph.ConvAddOp) -> None:
    _with_epilogue(w, op, "Conv", [op.input, op.weight, op.bias], ["X", "W", "B"],
                   _CONV_ATTRS, _conv_attrs(op), addend=op.addend)


def _pointwise_depthwise(w: OnnxWriter, op: graph.PointwiseDepthwiseOp) -> None:
    """A function `PointwiseDepthwise[<Act1>][<Act2>]`: the 1x1 Conv, its activation, the
    depthwise Conv (its attributes by reference), its activation."""
    pointwise, depthwise = op.stages()
    first, second = epilogue_of(pointwise), epilogue_of(depthwise)
    dtype = numpy_dtype_of(op.output)

    def build(body: FunctionBody) -> None:
        e = body.fresh("expanded")
        body.node("Conv", ["X", "W1", "B1"], [e])
        if first is not None:
            e = emit_activation(body, e, first, dtype)
        y = "Y" if second is None else body.fresh("conv")
        body.node_with_refs("Conv", [e, "W2", "B2"], [y], _CONV_ATTRS)
        if second is not None:
            emit_activation(body, y, second, dtype, out="Y")

    inputs = ["X", "W1", "B1", "W2", "B2"]
    name = "PointwiseDepthwise" + _function_suffix(first) + _function_suffix(second)
    fn = w.function(("PointwiseDepthwise", first, second, dtype.name), name, inputs, ["Y"],
                    build, attributes=list(_CONV_ATTRS))
    w.emit(op, fn, w.names(op.operands), domain=FUNCTION_DOMAIN, **_conv_attrs(depthwise))


def _gemm(w: OnnxWriter, op: graph.GemmOp) -> None:
    attrs = {"alpha": float_of(op.alpha), "beta": float_of(op.beta),
             "transA": int_of(op.trans_a), "transB": int_of(op.trans_b)}
    _with_epilogue(w, op, "Gemm", [op.a, op.b, op.c], ["A", "B", "C"], _GEMM_ATTRS, attrs)


def _matmul(w: OnnxWriter, op: graph.MatMulOp) -> None:
    _with_epilogue(w, op, "MatMul", [op.lhs, op.rhs], ["A", "B"], {}, {})


def _layer_norm(w: OnnxWriter, op: graph.LayerNormalizationOp) -> None:
    w.emit(op, "LayerNormalization", w.names([op.input, op.scale, op.bias]),
           axis=int_of(op.axis), epsilon=float_of(op.epsilon))


def _rms_norm(w: OnnxWriter, op: graph.RMSNormalizationOp) -> None:
    w.emit(op, "RMSNormalization", w.names([op.input, op.scale]), axis=int_of(op.axis),
           epsilon=float_of(op.epsilon))


def _gelu(w: OnnxWriter, op: graph.GeluOp) -> None:
    w.emit(op, "Gelu", [w.name(op.input)], approximate=op.approximate.data)


# ------------------------------------------------------------------ fused elementwise

_ONNX_OPS: dict[type[Operation], str] = {
    arith.AddfOp: "Add", arith.SubfOp: "Sub", arith.MulfOp: "Mul", arith.DivfOp: "Div",
    arith.NegfOp: "Neg", arith.MaximumfOp: "Max", arith.MinimumfOp: "Min",
    arith.SelectOp: "Where",
    math.ExpOp: "Exp", math.LogOp: "Log", math.SqrtOp: "Sqrt", math.TanhOp: "Tanh",
    math.AbsFOp: "Abs", math.PowFOp: "Pow", math.RoundEvenOp: "Round",  # half to even
}
"""Body ops that are one ONNX op (numpy's meaning in composite_reference)."""

_ONNX_COMPARISONS = {"oeq": "Equal", "ogt": "Greater", "oge": "GreaterOrEqual",
                     "olt": "Less", "ole": "LessOrEqual"}
"""ONNX comparisons are false when a side is NaN: arith.cmpf's ordered predicates."""

_CONVERSIONS = (arith.UIToFPOp, arith.SIToFPOp, arith.FPToUIOp, arith.FPToSIOp)


def _emit_body_op(body: FunctionBody, fused: Operation, o: Operation, args: list[str]) -> str:
    """One ONNX node computing body op `o` on the arrays named `args`."""
    hint = o.name.split(".")[-1]
    if isinstance(o, arith.ConstantOp):
        dtype = element_dtype(o.result.type)
        return body.const(np.asarray(o.value.value.data, dtype), "c")
    if isinstance(o, arith.CmpfOp):
        predicate = cmpf_predicate(o)
        if predicate not in _ONNX_COMPARISONS:
            raise unsupported(fused, f"arith.cmpf {predicate} in its body")
        return body.apply(_ONNX_COMPARISONS[predicate], args, predicate)
    if isinstance(o, _CONVERSIONS):  # of integral values in range: exact
        return body.apply("Cast", args, hint, to=onnx_type_of_element(o.results[0].type))
    if type(o) in _ONNX_OPS:
        return body.apply(_ONNX_OPS[type(o)], args, hint)
    raise unsupported(fused, f"'{o.name}' in its body")


def _yield_shape(op: graph.FusedElementwiseOp) -> tuple[int, ...]:
    """The shape the yielded array has in the exported body: inputs broadcast only where
    ops combine them, so it may lack dimensions of an input it does not depend on."""
    shapes: dict[SSAValue, tuple[int, ...]] = {
        a: shape_of(v) for a, v in zip(op.block.args, op.inputs, strict=True)}
    for o in op.body_ops():
        shapes[o.results[0]] = tuple(np.broadcast_shapes(*(shapes[v] for v in o.operands)))
    return shapes[op.yielded()]


def _fused_elementwise(w: OnnxWriter, op: graph.FusedElementwiseOp) -> None:
    """A function with one node per body op, the yielded array broadcast to the result's
    shape at the end when the body does not combine every input."""
    dtypes = [numpy_dtype_of(v) for v in op.inputs]
    expand = _yield_shape(op) != shape_of(op.output)
    formal = [f"X{i}" for i in range(len(op.inputs))]

    def build(body: FunctionBody) -> None:
        names: dict[SSAValue, str] = dict(zip(op.block.args, formal, strict=True))
        for o in op.body_ops():
            names[o.results[0]] = _emit_body_op(body, op, o, [names[v] for v in o.operands])
        y = names[op.yielded()]
        if expand:
            for x in formal:
                y = body.apply("Expand", [y, body.apply("Shape", [x], "shape")], "expanded")
        body.node("Identity", [y], ["Y"])

    key = ("fused_elementwise", body_key(op), tuple(d.name for d in dtypes),
           numpy_dtype_of(op.output).name, expand)
    computing = [o for o in op.body_ops() if not isinstance(o, arith.ConstantOp)]
    name = "Fused" + "".join(o.name.split(".")[-1].title() for o in computing[:4])
    fn = w.function(key, name, formal, ["Y"], build)
    w.emit(op, fn, w.names(op.inputs), domain=FUNCTION_DOMAIN)


def _weighted_sum(w: OnnxWriter, op: graph.WeightedSumOp) -> None:
    coefficients = op.coefficient_values()
    dtype = numpy_dtype_of(op.output)
    formal = [f"X{i}" for i in range(len(op.inputs))]

    def build(body: FunctionBody) -> None:
        terms = [body.apply("Mul", [x, body.const(np.asarray(c, dtype), "c")], "term")
                 for x, c in zip(formal, coefficients)]
        body.node("Sum", terms, ["Y"])

    fn = w.function(("weighted_sum", coefficients, dtype.name), "WeightedSum", formal, ["Y"],
                    build)
    w.emit(op, fn, w.names(op.inputs), domain=FUNCTION_DOMAIN)


def _channel_shuffle(w: OnnxWriter, op: graph.ChannelShuffleOp) -> None:
    """Reshape (N, g, C/g, ...), swap axes 1 and 2, reshape back: the ShuffleNet form."""
    x, g = shape_of(op.input), int_of(op.group)
    grouped = (x[0], g, x[1] // g, *x[2:])
    perm = [0, 2, 1, *range(3, len(grouped))]

    def build(body: FunctionBody) -> None:
        split = body.apply("Reshape", ["X", body.const(np.asarray(grouped, np.int64), "shape")],
                           "grouped")
        swapped = body.apply("Transpose", [split], "swapped", perm=perm)
        body.node("Reshape", [swapped, body.const(np.asarray(x, np.int64), "shape")], ["Y"])

    fn = w.function(("channel_shuffle", x, g), "ChannelShuffle", ["X"], ["Y"], build)
    w.emit(op, fn, [w.name(op.input)], domain=FUNCTION_DOMAIN)


# ------------------------------------------------------------------ attention

def _attention(w: OnnxWriter, op: graph.AttentionOp) -> None:
    """The product (`_attention_product`), then a Transpose by `output_perm` if any."""
    if op.output_perm is None:
        _attention_product(w, op, None)
        return
    product = w.fresh("attention")
    _attention_product(w, op, [product])
    w.node("Transpose", [product], [w.name(op.output)], perm=list(ints_of(op.output_perm)))


def _attention_product(w: OnnxWriter, op: graph.AttentionOp, out: list[str] | None) -> None:
    """Opset-23 Attention on 4-D inputs: as one node when onnxruntime's kernel takes the
    mask as it is, else one function call that first broadcasts the mask to [.., Sq, Sk]
    (adding the causal frontier as -inf when it is not Attention's is_causal); written to
    `out` (op's result when None)."""
    q, k = shape_of(op.query), shape_of(op.key)
    sq, sk = q[-2], k[-2]
    scale = float_of(op.scale)
    mask = None if op.mask is None else shape_of(op.mask)
    offset = None if op.causal_offset is None else int_of(op.causal_offset)
    if op.causal_from_end is not None:
        offset = sk - sq
    is_causal = offset is not None and offset == 0 and sq == sk
    causal_bias = offset is not None and not is_causal
    operands = [op.query, op.key, op.value] + ([op.mask] if op.mask is not None else [])
    if len(q) != 4 or op.zero_nan_rows is not None:
        if op.kv_groups() != 1:
            raise unsupported(op, f"grouped-query attention on rank-{len(q)} inputs"
                              if len(q) != 4 else "grouped-query attention with zero_nan_rows")
        return _attention_decomposed(w, op, operands, scale, offset, out)
    direct_mask = mask is None or (len(mask) == 4 and mask[-2:] == (sq, sk))
    if direct_mask and not causal_bias:
        w.emit(op, "Attention", w.names(operands), outputs=out, scale=scale,
               is_causal=1 if is_causal else None)
        return
    dtype = numpy_dtype_of(op.query)
    scores = (*q[:-1], sk)
    formal = ["Q", "K", "V"] + (["M"] if mask is not None else [])

    def build(body: FunctionBody) -> None:
        bias = "M" if mask is not None else None
        if causal_bias:
            frontier = body.const(_causal_bias(sq, sk, offset, dtype), "causal")
            bias = frontier if bias is None else body.apply("Add", [bias, frontier], "bias")
        full = body.apply("Expand", [bias, body.const(np.asarray(scores, np.int64), "shape")],
                          "mask")
        body.node("Attention", ["Q", "K", "V", full], ["Y"], scale=scale,
                  is_causal=1 if is_causal else None)

    key = ("attention", mask is not None, scores, offset, scale, dtype.name)
    fn = w.function(key, "Attention", formal, ["Y"], build)
    w.emit(op, fn, w.names(operands), outputs=out, domain=FUNCTION_DOMAIN)


def _causal_bias(sq: int, sk: int, offset: int, dtype: np.dtype) -> np.ndarray:
    """0 where query i may attend key j (j <= i + offset), -inf elsewhere."""
    allowed = np.arange(sk)[None, :] <= np.arange(sq)[:, None] + offset
    return np.where(allowed, 0, -np.inf).astype(dtype)


def _attention_decomposed(w: OnnxWriter, op: graph.AttentionOp, operands, scale: float,
                          offset: int | None, out: list[str] | None) -> None:
    """softmax(scale * Q K^T + mask) V for inputs of a rank other than 4, or with
    `zero_nan_rows` (the probabilities through Where(IsNaN(P), 0, P))."""
    q, k = shape_of(op.query), shape_of(op.key)
    rank, dtype = len(q), numpy_dtype_of(op.query)
    formal = ["Q", "K", "V"] + (["M"] if op.mask is not None else [])

    def build(body: FunctionBody) -> None:
        perm = [*range(rank - 2), rank - 1, rank - 2]
        kt = body.apply("Transpose", ["K"], "kt", perm=perm)
        scores = body.apply("MatMul", ["Q", kt], "qk")
        scores = body.apply("Mul", [scores, body.const(np.asarray(scale, dtype), "scale")],
                            "scaled")
        if op.mask is not None:
            scores = body.apply("Add", [scores, "M"], "masked")
        if offset is not None:
            frontier = body.const(_causal_bias(q[-2], k[-2], offset, dtype), "causal")
            scores = body.apply("Add", [scores, frontier], "causal_masked")
        probs = body.apply("Softmax", [scores], "probs", axis=-1)
        if zero_nan_rows:
            nan = body.apply("IsNaN", [probs], "nan")
            probs = body.apply("Where", [nan, body.const(np.asarray(0, dtype), "zero"), probs],
                               "probs_or_0")
        body.node("MatMul", [probs, "V"], ["Y"])

    zero_nan_rows = op.zero_nan_rows is not None
    key = ("attention_decomposed", rank, op.mask is not None, q[-2], k[-2], offset, scale,
           dtype.name, zero_nan_rows)
    fn = w.function(key, "AttentionDecomposed", formal, ["Y"], build)
    w.emit(op, fn, w.names(operands), outputs=out, domain=FUNCTION_DOMAIN)


def _layer_norm_stats(w: OnnxWriter, op: graph.LayerNormalizationStatsOp) -> None:
    w.emit(op, "LayerNormalization", w.names([op.input, op.scale, op.bias]),
           axis=int_of(op.axis), epsilon=float_of(op.epsilon))


FUSED_EMITTERS: dict[type[Operation], Emitter] = {
    graph.ConvOp: _conv,
    graph.ConvAddOp: _conv_add,
    graph.PointwiseDepthwiseOp: _pointwise_depthwise,
    graph.GemmOp: _gemm,
    graph.MatMulOp: _matmul,
    graph.LayerNormalizationOp: _layer_norm,
    graph.LayerNormalizationStatsOp: _layer_norm_stats,
    graph.RMSNormalizationOp: _rms_norm,
    graph.GeluOp: _gelu,
    graph.FusedElementwiseOp: _fused_elementwise,
    graph.WeightedSumOp: _weighted_sum,
    graph.ChannelShuffleOp: _channel_shuffle,
    graph.AttentionOp: _attention,
}
