"""Negative quantization scales, as ONNX defines them and onnxruntime runs them:
y = saturate(round_half_even(x / scale) + zero_point), x = (q - zero_point) * scale, whatever
the scale's sign (onnxruntime's symmetric int4 quantizer writes negative ones). A zero or
non-finite scale stays a typed error.

References: onnx.reference and onnxruntime without graph optimizations (ONNX semantics).
Bit-exact: every step is one f32 division or product, then an integer rounding, computed
alike on each side. onnxruntime's extended optimizations are not a reference here: on the
chain below with a negative activation scale they fuse Gemm -> Clip -> Q into QGemm and
drop the Clip as if Q were increasing (measured: 3.375 from onnx.reference).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import onnxc
from onnxc.errors import ModelLoadError
from onnxc.frontend import import_onnx
from onnxc.passes.evaluator import evaluate
from tests.single_op import graph_model


def _ort(model: onnx.ModelProto, feeds, outputs=None) -> list[np.ndarray]:
    """onnxruntime without graph optimizations: the ONNX semantics of each node."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    return session.run(outputs, feeds)


def _bits(a: np.ndarray) -> np.ndarray:
    """An array compared bit for bit (int4 / uint4 as their bytes)."""
    a = np.asarray(a)
    return a.view(np.uint8) if a.dtype.itemsize == 1 else a


def _assert_equal(actual, expected, what: str) -> None:
    for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
        a, e = np.asarray(a), np.asarray(e)
        assert a.dtype == e.dtype and a.shape == e.shape, f"{what} output {i}"
        np.testing.assert_array_equal(_bits(a), _bits(e), err_msg=f"{what} output {i}")


# --------------------------------------------------------------------------- Q / DQ


_FORMS = {"tensor": (1, 0), "axis": (1, 0), "block": (-1, 8)}
"""(axis, block_size): per tensor, per axis, blocked along the last axis (ragged block)."""

_TYPES = [TensorProto.INT8, TensorProto.UINT8, TensorProto.INT4, TensorProto.UINT4]


def _q_dq_model(qtype: int, shape=(3, 6, 20)) -> onnx.ModelProto:
    """x -> QuantizeLinear -> DequantizeLinear in each form, scales of both signs (per
    tensor: negative), random zero points of the type."""
    rng = np.random.default_rng(4)
    info = ml_dtypes.iinfo(helper.tensor_dtype_to_np_dtype(qtype))
    nodes, outputs, inits = [], {}, {}
    for form, (axis, block) in _FORMS.items():
        if form == "tensor":
            pshape = ()
        elif block == 0:
            pshape = (shape[axis],)
        else:
            pshape = shape[:-1] + (-(-shape[-1] // block),)
        magnitude = rng.uniform(0.05, 2.0, pshape)
        sign = -1.0 if form == "tensor" else rng.choice([-1.0, 1.0], pshape)
        attrs = {"axis": axis, **({"block_size": block} if block else {})}
        s, z, q, y = (f"{name}_{form}" for name in ("s", "z", "q", "y"))
        nodes += [helper.make_node("QuantizeLinear", ["x", s, z], [q], **attrs),
                  helper.make_node("DequantizeLinear", [q, s, z], [y], **attrs)]
        outputs[q] = (qtype, None)
        outputs[y] = (TensorProto.FLOAT, None)
        inits[s] = (magnitude * sign).astype(np.float32)
        inits[z] = rng.integers(int(info.min), int(info.max) + 1, pshape).astype(
            helper.tensor_dtype_to_np_dtype(qtype))
    return graph_model(nodes, {"x": (TensorProto.FLOAT, list(shape))}, outputs,
                       initializers=inits, opset=21, ir_version=10)


def _data(shape, seed=0) -> np.ndarray:
    x = (np.random.default_rng(seed).standard_normal(shape) * 6).astype(np.float32)
    x.reshape(-1)[:8] = [0.5, 1.5, 2.5, -0.5, -2.5, 1e6, -1e6, 0.0]  # ties, saturation
    return x


@pytest.mark.parametrize("qtype", _TYPES, ids=lambda t: helper.tensor_dtype_to_string(t))
def test_negative_scales_quantize_and_dequantize_as_references(qtype):
    """Per tensor, per axis and blocked, each element's scale of either sign: onnxc (the
    kernels), its numpy evaluator (constant folding) and onnxruntime give onnx.reference's
    bits (onnxruntime's dequantized outputs only for 4-bit types: its Python API returns
    no int4 / uint4 array)."""
    model = _q_dq_model(qtype)
    feeds = {"x": _data((3, 6, 20))}
    expected = ReferenceEvaluator(model).run(None, feeds)
    assert any(np.asarray(e).min() < 0 for e in expected[1::2])
    actual = onnxc.compile(model, opt_level=0, cache_dir=False).run(None, feeds)
    _assert_equal(actual, expected, "onnxc")
    evaluated = evaluate(import_onnx(model), feeds)
    _assert_equal([np.asarray(v).astype(np.asarray(e).dtype) for v, e in
                   zip(evaluated, expected, strict=True)], expected, "evaluator")
    if qtype in (TensorProto.INT4, TensorProto.UINT4):
        names = [o.name for o in model.graph.output][1::2]
        _assert_equal(_ort(model, feeds, names), expected[1::2], "onnxruntime")
    else:
        _assert_equal(_ort(model, feeds), expected, "onnxruntime")


@pytest.mark.parametrize("scale, what", [(0.0, "zero"), (np.inf, "inf"), (np.nan, "NaN")])
def test_zero_and_non_finite_scales_are_typed_errors(scale, what):
    """onnxruntime does not check (its DequantizeLinear multiplies by the scale, its
    QuantizeLinear divides by it); onnxc refuses the model, naming the node."""
    model = graph_model([helper.make_node("DequantizeLinear", ["q", "s"], ["y"], name="dq")],
                        {"q": (TensorProto.INT8, [4])}, {"y": (TensorProto.FLOAT, None)},
                        initializers={"s": np.float32(scale)}, opset=21, ir_version=10)
    with pytest.raises(ModelLoadError, match=r"node 'dq' \(DequantizeLinear, opset 21\): "
                                             r"scale must be finite and nonzero"):
        import_onnx(model)


# --------------------------------------------------------------------------- a QDQ chain


def _init(name: str, array) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(array), name)


class _Chain:
    """quantize_static's QDQ form with the signs chosen: u8 activations per tensor, s8
    weights per output channel, i32 biases in the accumulator's scale."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng, self.nodes, self.inits = rng, [], []

    def qdq(self, x: str, scale: float, zero: int) -> str:
        s, z = f"{x}_s", f"{x}_z"
        self.inits += [_init(s, np.float32(scale)), _init(z, np.uint8(zero))]
        self.nodes += [helper.make_node("QuantizeLinear", [x, s, z], [f"{x}_q"]),
                       helper.make_node("DequantizeLinear", [f"{x}_q", s, z], [f"{x}_dq"])]
        return f"{x}_dq"

    def weight(self, name: str, shape, x_scale: float, signs: np.ndarray) -> tuple[str, str]:
        w = self.rng.standard_normal(shape).astype(np.float32)
        bias = self.rng.standard_normal(shape[0]).astype(np.float32) * 0.1
        scale = (np.abs(w).reshape(shape[0], -1).max(axis=1) / 127
                 * np.resize(signs, shape[0])).astype(np.float32)
        wq = np.clip(np.rint(w / scale.reshape((-1,) + (1,) * (w.ndim - 1))), -127, 127)
        b_scale = (np.float32(x_scale) * scale).astype(np.float32)
        zeros = np.zeros(shape[0], np.int8)
        self.inits += [_init(f"{name}_q", wq.astype(np.int8)), _init(f"{name}_s", scale),
                       _init(f"{name}_z", zeros),
                       _init(f"{name}_bq", np.rint(bias / b_scale).astype(np.int32)),
                       _init(f"{name}_bs", b_scale), _init(f"{name}_bz", zeros.astype(np.int32))]
        self.nodes += [
            helper.make_node("DequantizeLinear", [f"{name}_q", f"{name}_s", f"{name}_z"],
                             [name], axis=0),
            helper.make_node("DequantizeLinear", [f"{name}_bq", f"{name}_bs", f"{name}_bz"],
                             [f"{name}_b"], axis=0)]
        return name, f"{name}_b"


def chain_model(x_scale: float, act_scale: float, weight_signs) -> onnx.ModelProto:
    """Q/DQ -> Conv -> Relu -> Q/DQ -> depthwise Conv -> Relu -> Q/DQ -> MaxPool -> Q/DQ ->
    Flatten -> Q/DQ -> Gemm(transB) -> Clip -> Q/DQ: each pass's sign handling
    (fuse-qdq-linear's Relu and Clip bounds, move-quant-dequant's MaxPool and Flatten) and
    the int8 kernels' requantization (GEMM, depthwise) on one graph."""
    b = _Chain(np.random.default_rng(0))
    signs = np.asarray(weight_signs, np.float32)
    x = b.qdq("x", x_scale, 128)
    w, bias = b.weight("w1", (16, 4, 3, 3), x_scale, signs)
    b.nodes += [helper.make_node("Conv", [x, w, bias], ["conv"], pads=[1, 1, 1, 1]),
                helper.make_node("Relu", ["conv"], ["relu"])]
    relu = b.qdq("relu", act_scale, 20)
    w, bias = b.weight("w_dw", (16, 1, 3, 3), act_scale, signs)
    b.nodes += [helper.make_node("Conv", [relu, w, bias], ["dw"], pads=[1, 1, 1, 1], group=16),
                helper.make_node("Relu", ["dw"], ["dw_relu"])]
    relu = b.qdq("dw_relu", act_scale, 20)
    b.nodes.append(helper.make_node("MaxPool", [relu], ["pool"], kernel_shape=[2, 2],
                                    strides=[2, 2]))
    pool = b.qdq("pool", act_scale, 20)
    b.nodes.append(helper.make_node("Flatten", [pool], ["flat"]))
    flat = b.qdq("flat", act_scale, 20)
    w2, bias2 = b.weight("w2", (10, 256), act_scale, signs)
    b.inits += [_init("lo", np.float32(-0.5)), _init("hi", np.float32(1.0))]
    b.nodes += [helper.make_node("Gemm", [flat, w2, bias2], ["gemm"], transB=1),
                helper.make_node("Clip", ["gemm", "lo", "hi"], ["clip"])]
    out = b.qdq("clip", act_scale / 2, 100)
    b.nodes.append(helper.make_node("Identity", [out], ["y"]))
    return graph_model(b.nodes, {"x": (TensorProto.FLOAT, [1, 4, 8, 8])},
                       {"y": (TensorProto.FLOAT, [1, 10])}, initializers=b.inits,
                       opset=21, ir_version=10)


CHAINS = {
    "negative_weight_scale": (0.02, 0.05, [1, -1]),
    "negative_activation_scale": (-0.02, -0.05, [1]),
    "both": (-0.02, -0.05, [-1, 1, 1]),
}


@pytest.mark.parametrize("opt_level", [0, 3])
@pytest.mark.parametrize("case", sorted(CHAINS))
def test_qdq_chain_with_negative_scales_matches_onnxruntime(case, opt_level):
    """Bit-identical to onnxruntime (no graph optimizations) and onnx.reference at -O0 and
    -O3: the integer products are exact and requantize with the same f32 scale. At -O3 the
    conv and the gemm become integer ops; MaxPool runs on the integers only under a
    positive scale."""
    x_scale, act_scale, signs = CHAINS[case]
    model = chain_model(x_scale, act_scale, signs)
    rng = np.random.default_rng(1)
    for _ in range(3):
        feeds = {"x": (rng.standard_normal((1, 4, 8, 8)) * 1.5).astype(np.float32)}
        expected = _ort(model, feeds)
        _assert_equal(ReferenceEvaluator(model).run(None, feeds), expected, "onnx.reference")
        actual = onnxc.compile(model, opt_level=opt_level, cache_dir=False).run(None, feeds)
        _assert_equal(actual, expected, f"onnxc -O{opt_level}")
    if opt_level == 3:
        ops = [(op.name, str(op.results[0].type.get_element_type()) if op.results else "")
               for op in onnxc.optimize(model, opt_level=3).walk()]
        names = [name for name, _ in ops]
        assert names.count("graph.qlinear_conv") == 2 and names.count("graph.qlinear_matmul") == 1
        assert "graph.relu" not in names and "graph.clip" not in names
        pool = next(el for name, el in ops if name == "graph.max_pool")
        assert pool == ("ui8" if act_scale > 0 else "f32")


@pytest.mark.parametrize("case", sorted(CHAINS))
def test_optimized_chain_exported_with_negative_scales_runs_in_onnxruntime(case):
    """`onnxc optimize` writes the -O3 graph back as ONNX (the qlinear ops as QLinearConv /
    MatMulInteger functions whose scale is the negative output scale): onnxruntime runs it
    to the original's bits."""
    from onnxc.frontend.onnx_export import export_onnx

    model = chain_model(*CHAINS[case])
    exported = export_onnx(onnxc.optimize(model, opt_level=3))
    assert "Conv" not in {n.op_type for n in exported.graph.node}
    feeds = {"x": (np.random.default_rng(2).standard_normal((1, 4, 8, 8)) * 1.5
                   ).astype(np.float32)}
    session = ort.InferenceSession(exported.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    _assert_equal(session.run(None, feeds), _ort(model, feeds), "exported")
