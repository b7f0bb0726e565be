"""com.microsoft quantization ops (frontend/onnx_ops_microsoft_quant.py) against onnxruntime
1.32's CPU kernels: one-node models (tests/single_op.py, com.microsoft opset 1) per op, every
attribute, and a model onnxruntime's `quantize_static` writes in QOperator format.

onnxc imports each op as DequantizeLinear -> the float op -> QuantizeLinear (round half to
even, saturate). Tolerances, in quantization steps of the output (what the cases showed
when written, onnxruntime 1.32 on x86-64 without VNNI, in brackets):
- exact: QLinearLeakyRelu (onnxruntime's lookup table is built by the same dequantize, float
  op, quantize), QLinearConcat and QLinearWhere (a copy, or a requantization table built
  the same way);
- 1 step: QLinearAdd / QLinearMul (onnxruntime folds the scales into one float multiplier
  per operand, another float32 rounding that can move a value at a rounding tie) [Add 0,
  Mul 1], QLinearSigmoid (its table from MlasComputeLogistic, a polynomial approximation)
  [0 on all 256 inputs], QLinearGlobalAveragePool / QLinearAveragePool (an integer sum
  scaled by one float multiplier) [0 / 1], QLinearSoftmax (a float table of exp, shifted by
  the row maximum, and y_scale read as 1 / floor(1 / y_scale)) [0], QGemm (the int32
  product scaled once; here the float product of dequantized operands) [0];
- float results (QGemm without y_scale, DynamicQuantizeMatMul, MatMulIntegerToFloat): rtol
  1e-5, atol 1e-5 of the largest magnitude (float32 sums in another order).
int8 weights of the uint8 x int8 products are kept in [-64, 63] (`weight`).
"""

from __future__ import annotations

import numpy as np
import pytest

import onnxc
from onnxc.errors import ModelLoadError, UnsupportedOpError
from tests.single_op import reference_run, single_op_model

MS = {"": 17, "com.microsoft": 1}


def ms_model(op, inputs, initializers, attrs=None, node_inputs=None, outputs=("y",)):
    specs = {k: (v.dtype, list(v.shape)) for k, v in inputs.items()}
    return single_op_model(op, specs, outputs, attrs=attrs, initializers=initializers,
                           node_inputs=node_inputs, domain="com.microsoft", opset=MS,
                           ir_version=8, node_name="n")


def compare(model, feeds, steps=0, rtol=None, atol=None):
    """onnxc against onnxruntime: integer results within `steps`, float ones rtol/atol."""
    expected = reference_run(model, feeds)
    got = onnxc.compile(model).run(None, dict(feeds))
    for g, e in zip(got, expected):
        assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, e.shape, g.dtype, e.dtype)
        if rtol is not None:
            np.testing.assert_allclose(g, e, rtol=rtol, atol=atol * np.abs(e).max(initial=0))
        else:
            diff = np.abs(g.astype(np.int32) - e.astype(np.int32))
            assert diff.max(initial=0) <= steps, (diff.max(), np.argwhere(diff > steps)[:5])
    return got, expected


def q(rng, dtype, *shape):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, shape).astype(dtype)


def weight(rng, dtype, *shape):
    """A weight as onnxruntime's x86 kernels need it: an int8 one in [-64, 63] (the uint8 x
    int8 product without VNNI sums pairs in int16, which saturates beyond 7 bits: onnxc is
    exact there, onnxruntime is not; quantize_static's reduce_range exists for this)."""
    if dtype == np.int8:
        return rng.integers(-64, 64, shape).astype(dtype)
    return q(rng, dtype, *shape)


def s(v):
    return np.array(v, np.float32)


def z(v, dtype):
    return np.array(v, dtype)


ZP = {np.uint8: 128, np.int8: 0}


# ---------------------------------------------------------------------------- elementwise


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
def test_qlinear_add_mul_broadcasting(op, dtype):
    rng = np.random.default_rng(0)
    a, b = q(rng, dtype, 2, 3, 8), q(rng, dtype, 3, 1)
    zp = ZP[dtype]
    consts = {"as": s(0.05), "az": z(zp - 3, dtype), "bs": s(0.02), "bz": z(zp + 5, dtype),
              "cs": s(0.09 if op == "QLinearAdd" else 0.2), "cz": z(zp - 1, dtype)}
    model = ms_model(op, {"a": a, "b": b}, consts,
                     node_inputs=["a", "as", "az", "b", "bs", "bz", "cs", "cz"])
    compare(model, {"a": a, "b": b}, steps=1)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_qlinear_sigmoid_and_leaky_relu(dtype):
    x = np.arange(np.iinfo(dtype).min, np.iinfo(dtype).max + 1).astype(dtype).reshape(4, 64)
    zp = ZP[dtype]
    consts = {"xs": s(0.07), "xz": z(zp + 10, dtype), "ys": s(1 / 256 if dtype == np.uint8
                                                               else 1 / 128),
              "yz": z(0 if dtype == np.uint8 else -128, dtype)}
    model = ms_model("QLinearSigmoid", {"x": x}, consts)
    compare(model, {"x": x}, steps=1)
    for alpha in (None, 0.2, 1.7):
        consts = {"xs": s(0.03), "xz": z(zp - 7, dtype), "ys": s(0.02), "yz": z(zp + 3, dtype)}
        attrs = {} if alpha is None else {"alpha": alpha}
        model = ms_model("QLinearLeakyRelu", {"x": x}, consts, attrs=attrs)
        compare(model, {"x": x}, steps=0)


@pytest.mark.parametrize("axis", [1, -1, 0])
def test_qlinear_concat(axis):
    rng = np.random.default_rng(3)
    xs = [q(rng, np.uint8, 2, 3, 4) for _ in range(3)]
    consts = {"ys": s(0.1), "yz": z(120, np.uint8)}
    node_inputs = ["ys", "yz"]
    for i, scale in enumerate((0.1, 0.05, 0.3)):
        consts |= {f"s{i}": s(scale), f"z{i}": z(120 if i == 0 else 100 + i, np.uint8)}
        node_inputs += [f"x{i}", f"s{i}", f"z{i}"]
    feeds = {f"x{i}": x for i, x in enumerate(xs)}
    model = ms_model("QLinearConcat", feeds, consts, attrs={"axis": axis},
                     node_inputs=node_inputs)
    compare(model, feeds, steps=0)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_qlinear_where(dtype):
    rng = np.random.default_rng(4)
    cond = rng.random((3, 4)) > 0.5
    x, w = q(rng, dtype, 3, 4), q(rng, dtype, 1, 4)
    zp = ZP[dtype]
    consts = {"xs": s(0.1), "xz": z(zp, dtype), "ys": s(0.04), "yz": z(zp + 9, dtype),
              "zs": s(0.1), "zz": z(zp, dtype)}
    feeds = {"c": cond, "x": x, "w": w}
    model = ms_model("QLinearWhere", feeds, consts,
                     node_inputs=["c", "x", "xs", "xz", "w", "ys", "yz", "zs", "zz"])
    compare(model, feeds, steps=0)


# ---------------------------------------------------------------------------- pools, softmax


@pytest.mark.parametrize("channels_last", [0, 1])
@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_qlinear_global_average_pool(dtype, channels_last):
    rng = np.random.default_rng(5)
    x = q(rng, dtype, 2, 5, 6, 7)
    zp = ZP[dtype]
    consts = {"xs": s(0.05), "xz": z(zp + 2, dtype), "ys": s(0.01), "yz": z(zp - 4, dtype)}
    model = ms_model("QLinearGlobalAveragePool", {"x": x}, consts,
                     attrs={"channels_last": channels_last})
    compare(model, {"x": x}, steps=1)


POOLS = {
    "k3": {"kernel_shape": [3, 3]},
    "k3s2p1": {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
    "include_pad": {"kernel_shape": [3, 2], "pads": [1, 0, 1, 1], "count_include_pad": 1},
    "ceil": {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1},
    "same_upper": {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"},
    "channels_last": {"kernel_shape": [2, 3], "strides": [1, 2], "channels_last": 1},
}


@pytest.mark.parametrize("case", list(POOLS))
def test_qlinear_average_pool(case):
    rng = np.random.default_rng(6)
    x = q(rng, np.uint8, 2, 3, 7, 9)
    consts = {"xs": s(0.05), "xz": z(128, np.uint8), "ys": s(0.03), "yz": z(120, np.uint8)}
    model = ms_model("QLinearAveragePool", {"x": x}, consts, attrs=POOLS[case])
    compare(model, {"x": x}, steps=1)


def test_qlinear_average_pool_int8_1d():
    rng = np.random.default_rng(7)
    x = q(rng, np.int8, 2, 3, 11)
    consts = {"xs": s(0.05), "xz": z(3, np.int8), "ys": s(0.02), "yz": z(-5, np.int8)}
    model = ms_model("QLinearAveragePool", {"x": x}, consts,
                     attrs={"kernel_shape": [4], "strides": [3], "pads": [2, 1]})
    compare(model, {"x": x}, steps=1)


@pytest.mark.parametrize("opset,axis", [(13, None), (13, 1), (11, None), (11, 2), (13, 0)])
def test_qlinear_softmax(opset, axis):
    """y_scale 1/256 (what quantize_static writes; onnxruntime uses floor(1 / y_scale))."""
    rng = np.random.default_rng(8)
    x = rng.integers(0, 40, (2, 3, 10)).astype(np.uint8)
    consts = {"xs": s(0.1), "xz": z(20, np.uint8), "ys": s(1 / 256), "yz": z(0, np.uint8)}
    attrs = {"opset": opset} | ({} if axis is None else {"axis": axis})
    model = ms_model("QLinearSoftmax", {"x": x}, consts, attrs=attrs)
    compare(model, {"x": x}, steps=1)


def test_qlinear_softmax_int8():
    """int8, zero point -128: values whose probability rounds to 256/256 wrap to -128 in
    onnxruntime's kernel (it saturates at 255 only), so the inputs keep every one below."""
    rng = np.random.default_rng(9)
    x = rng.integers(-20, 20, (4, 16)).astype(np.int8)
    consts = {"xs": s(0.1), "xz": z(0, np.int8), "ys": s(1 / 256), "yz": z(-128, np.int8)}
    model = ms_model("QLinearSoftmax", {"x": x}, consts, attrs={"opset": 13})
    compare(model, {"x": x}, steps=1)


# ---------------------------------------------------------------------------- products


def _qgemm_inputs(rng, a_type, b_type, trans_a, trans_b, per_column, m=5, k=12, n=7):
    a = q(rng, a_type, *((k, m) if trans_a else (m, k)))
    b = weight(rng, b_type, *((n, k) if trans_b else (k, n)))
    b_scale = s(rng.uniform(0.01, 0.03, n) if per_column else 0.02)
    b_zero = (np.zeros(n, b_type) if per_column else z(0, b_type)) if b_type == np.int8 \
        else (np.full(n, 130, b_type) if per_column else z(125, b_type))
    return a, b, b_scale, b_zero


@pytest.mark.parametrize("a_type,b_type", [(np.uint8, np.int8), (np.uint8, np.uint8),
                                           (np.int8, np.int8)])
@pytest.mark.parametrize("trans_a,trans_b", [(0, 0), (1, 1), (0, 1)])
@pytest.mark.parametrize("per_column", [False, True])
def test_qgemm_quantized_output(a_type, b_type, trans_a, trans_b, per_column):
    rng = np.random.default_rng(10)
    a, b, b_scale, b_zero = _qgemm_inputs(rng, a_type, b_type, trans_a, trans_b, per_column)
    c = rng.integers(-500, 500, 7).astype(np.int32)
    a_zero = z(ZP[a_type] - 3, a_type)
    consts = {"as": s(0.04), "az": a_zero, "b": b, "bs": b_scale, "bz": b_zero, "c": c,
              "ys": s(0.3), "yz": z(ZP[a_type] + 1, a_type)}
    model = ms_model("QGemm", {"a": a}, consts,
                     attrs={"transA": trans_a, "transB": trans_b, "alpha": 0.5},
                     node_inputs=["a", "as", "az", "b", "bs", "bz", "c", "ys", "yz"])
    compare(model, {"a": a}, steps=1)


@pytest.mark.parametrize("c_shape", [None, (7,), (1, 7), (5, 7), (5, 1)])
@pytest.mark.parametrize("per_column", [False, True])
def test_qgemm_float_output(c_shape, per_column):
    rng = np.random.default_rng(11)
    a, b, b_scale, b_zero = _qgemm_inputs(rng, np.uint8, np.int8, 0, 1, per_column)
    consts = {"as": s(0.04), "az": z(120, np.uint8), "b": b, "bs": b_scale, "bz": b_zero}
    node_inputs = ["a", "as", "az", "b", "bs", "bz"]
    if c_shape is not None:
        consts["c"] = rng.integers(-500, 500, c_shape).astype(np.int32)
        node_inputs.append("c")
    model = ms_model("QGemm", {"a": a}, consts, attrs={"transB": 1, "alpha": 2.0},
                     node_inputs=node_inputs)
    compare(model, {"a": a}, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("b_type", [np.int8, np.uint8])
@pytest.mark.parametrize("per_column,bias", [(False, False), (True, True), (False, True)])
def test_dynamic_quantize_matmul(b_type, per_column, bias):
    rng = np.random.default_rng(12)
    a = rng.standard_normal((2, 3, 16)).astype(np.float32)
    b = weight(rng, b_type, 16, 6)
    consts = {"b": b, "bs": s(rng.uniform(0.01, 0.02, 6) if per_column else 0.015),
              "bz": np.full(6, 3, b_type) if per_column else z(3, b_type)}
    if bias:
        consts["bias"] = rng.standard_normal(6).astype(np.float32)
    model = ms_model("DynamicQuantizeMatMul", {"a": a}, consts)
    compare(model, {"a": a}, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("a_type,b_type", [(np.uint8, np.int8), (np.int8, np.int8),
                                           (np.uint8, np.uint8)])
@pytest.mark.parametrize("per_column", [False, True])
def test_matmul_integer_to_float(a_type, b_type, per_column):
    rng = np.random.default_rng(13)
    a, b = q(rng, a_type, 3, 4, 10), weight(rng, b_type, 10, 5)
    consts = {"b": b, "as": s(0.03), "bs": s(rng.uniform(0.01, 0.02, 5) if per_column
                                             else 0.02),
              "az": z(ZP[a_type] - 2, a_type),
              "bz": np.full(5, 4, b_type) if per_column else z(4, b_type),
              "bias": rng.standard_normal(5).astype(np.float32)}
    model = ms_model("MatMulIntegerToFloat", {"a": a}, consts,
                     node_inputs=["a", "b", "as", "bs", "az", "bz", "bias"])
    compare(model, {"a": a}, rtol=1e-5, atol=1e-5)


def test_matmul_integer_to_float_with_run_time_scale_and_zero_point():
    """onnxruntime's fusion of DynamicQuantizeLinear -> MatMulInteger -> Mul: a_scale and
    a_zero_point computed in the run."""
    from onnx import helper

    from tests.single_op import graph_model

    rng = np.random.default_rng(14)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    b = weight(rng, np.int8, 8, 3)
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
             helper.make_node("MatMulIntegerToFloat", ["xq", "b", "xs", "bs", "xz"], ["y"],
                              domain="com.microsoft", name="n")]
    model = graph_model(nodes, {"x": (np.float32, [4, 8])}, ["y"],
                        initializers={"b": b, "bs": s(0.01)}, opset=MS, ir_version=8)
    compare(model, {"x": x}, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------- refusals


def test_refusals_name_the_attribute_or_input():
    rng = np.random.default_rng(15)
    x = q(rng, np.uint8, 1, 2, 4, 4)
    consts = {"xs": s(0.1), "xz": z(1, np.uint8), "ys": s(0.1), "yz": z(1, np.uint8)}
    with pytest.raises(UnsupportedOpError, match="attribute 'dilations'"):
        onnxc.compile(ms_model("QLinearAveragePool", {"x": x}, consts,
                               attrs={"kernel_shape": [2, 2], "dilations": [2, 2]}))
    with pytest.raises(ModelLoadError, match="channels_last must be 0 or 1"):
        onnxc.compile(ms_model("QLinearGlobalAveragePool", {"x": x}, consts,
                               attrs={"channels_last": 2}))
    with pytest.raises(ModelLoadError, match=r"com\.microsoft\.QLinearSoftmax.*'opset'"):
        onnxc.compile(ms_model("QLinearSoftmax", {"x": x}, consts))
    with pytest.raises(ModelLoadError, match="X's scale must be one value"):
        onnxc.compile(ms_model("QLinearSigmoid", {"x": x},
                               consts | {"xs": np.full(2, 0.1, np.float32)}))
    with pytest.raises(UnsupportedOpError, match="float32 .*only uint8, int8|only uint8"):
        f = rng.standard_normal((2, 2)).astype(np.float32)
        onnxc.compile(ms_model("QLinearLeakyRelu", {"x": f}, consts))
    a = q(rng, np.uint8, 2, 3)
    gemm = {"as": s(0.1), "az": z(1, np.uint8), "b": q(rng, np.int8, 3, 2),
            "bs": s(0.1), "bz": z(0, np.int8), "ys": s(0.1)}
    with pytest.raises(UnsupportedOpError, match="y_scale without y_zero_point"):
        onnxc.compile(ms_model("QGemm", {"a": a}, gemm,
                               node_inputs=["a", "as", "az", "b", "bs", "bz", "", "ys"]))


# ---------------------------------------------------------------------------- a tool's model


def _tiny_cnn(batch=1):
    """A small float CNN whose quantization uses every QOperator contrib op but QLinearWhere:
    a residual Add, LeakyRelu, AveragePool, a Sigmoid gate (Mul), Concat, GlobalAveragePool,
    Gemm, Softmax."""
    from onnx import helper

    from tests.single_op import graph_model

    rng = np.random.default_rng(0)

    def w(*shape):
        return (rng.standard_normal(shape) * 0.3).astype(np.float32)

    inits = {"w1": w(8, 3, 3, 3), "b1": w(8), "w2": w(8, 8, 3, 3), "b2": w(8),
             "w3": w(8, 8, 1, 1), "b3": w(8), "fc": w(10, 16), "fcb": w(10)}
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        n("Relu", ["c1"], ["r1"]),
        n("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
        n("Add", ["c2", "r1"], ["a1"]),
        n("LeakyRelu", ["a1"], ["l1"], alpha=0.1),
        n("AveragePool", ["l1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        n("Conv", ["p1", "w3", "b3"], ["c3"]),
        n("Sigmoid", ["c3"], ["s1"]),
        n("Mul", ["p1", "s1"], ["m1"]),
        n("Concat", ["m1", "p1"], ["cat"], axis=1),
        n("GlobalAveragePool", ["cat"], ["g"]),
        n("Flatten", ["g"], ["f"]),
        n("Gemm", ["f", "fc", "fcb"], ["logits"], transB=1),
        n("Softmax", ["logits"], ["y"], axis=-1),
    ]
    return graph_model(nodes, {"x": (np.float32, [batch, 3, 16, 16])},
                       {"y": (np.float32, [batch, 10])},
                       initializers=inits, opset=17, ir_version=8)


@pytest.mark.parametrize("per_channel,batch", [(False, 1), (True, 1), (False, "n")])
def test_quantize_static_qoperator_model(tmp_path, per_channel, batch):
    """onnxruntime's quantize_static (QOperator, uint8 activations, int8 weights, calibrated
    on four seeded inputs) writes the contrib ops; onnxc runs the model within one step of
    the output's quantization (1/256, the Softmax's) on eight other inputs (equal on all of
    them when written). reduce_range (7-bit weights) as onnxruntime advises on x86 without
    VNNI: its uint8 x int8 kernels saturate otherwise (per channel, 8 steps off the exact
    integer result onnxc computes; see `weight`). A symbolic batch runs at 1 and 3."""
    import onnx
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    class Reader(CalibrationDataReader):
        def __init__(self):
            rng = np.random.default_rng(1)
            self.feeds = iter([{"x": rng.standard_normal((1, 3, 16, 16)).astype(np.float32)}
                               for _ in range(4)])

        def get_next(self):
            return next(self.feeds, None)

    onnx.save(_tiny_cnn(batch), tmp_path / "float.onnx")
    quantize_static(tmp_path / "float.onnx", tmp_path / "q.onnx", Reader(),
                    quant_format=QuantFormat.QOperator, per_channel=per_channel,
                    reduce_range=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    model = onnx.load(tmp_path / "q.onnx")
    contrib = {n.op_type for n in model.graph.node if n.domain == "com.microsoft"}
    assert contrib == {"QLinearAdd", "QLinearLeakyRelu", "QLinearAveragePool",
                       "QLinearSigmoid", "QLinearMul", "QLinearConcat",
                       "QLinearGlobalAveragePool", "QGemm", "QLinearSoftmax"}
    compiled = onnxc.compile(model)
    rng = np.random.default_rng(2)
    for i in range(8):
        n = 3 if batch == "n" and i % 2 else 1
        feeds = {"x": rng.standard_normal((n, 3, 16, 16)).astype(np.float32)}
        (expected,) = reference_run(model, feeds)
        (got,) = compiled.run(None, feeds)
        np.testing.assert_allclose(got, expected, rtol=0, atol=1 / 256 + 1e-7)
