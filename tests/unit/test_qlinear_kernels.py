"""Kernels of graph.qlinear_conv / graph.qlinear_matmul compiled natively.

Each case builds a one-op graph module directly (weights and bias as graph.constant, the
input as the argument), compiles it through the normal lowering and JIT, and compares with
(a) numpy evaluating the contract of dialects/graph_qlinear.py, exactly for i32 results and
bit for bit for ui8 / i8 (the rounding is computed in f32 the same way), f32 within 1 ulp,
and (b) onnxruntime's QLinearConv / QLinearMatMul / ConvInteger / MatMulInteger on the
same data (on the model's u8-weight twin, which it computes exactly on any host:
tests/exact_int8_reference.py): i32 results exactly, ui8 / i8 results within 1 (MLAS's own rounding path may
differ by one on a tie) with at most 1% of the elements off (in practice they are equal).

The compile pipeline's assign-layout puts every rank-4 conv with a constant weight in NHWC,
so those run on the packed int8 kernel (int8_gemm.py) where it applies (the "vnni_*" shapes:
weights whose centred values fit s8) and on the generic kernel (qlinear.py) otherwise;
1-D / 3-D convs and grouped ones always run the generic kernel. `without_vnni` builds the
packed kernel's portable form, as a host without AVX512-VNNI would.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    Signedness,
    TensorType,
    f16,
    f32,
    i32,
    i64,
)
from xdsl.ir import Block, Region

import onnxc
import onnxc.pipeline
from onnxc.dialects import graph
from onnxc.dialects.graph_base import ints_of
from onnxc.dialects.graph_qlinear import QLinearConvOp, QLinearMatMulOp
from onnxc.dialects.layout import ConvertOp, with_layout
from onnxc.lowering.graph_to_loops import int8_gemm, int8_layout
from onnxc.lowering.graph_to_loops.int8_requantize import FLOAT_CLAMP, Clamp, output_clamp
from onnxc.target import PRESETS, host_target, parse_target
from tests.exact_int8_reference import ort_exact

RNG = np.random.default_rng(5)
ui8 = IntegerType(8, Signedness.UNSIGNED)
si8 = IntegerType(8, Signedness.SIGNED)
ELEMENT = {np.uint8: ui8, np.int8: si8, np.int32: i32, np.float32: f32, np.float16: f16}
ONNX_TYPE = {np.uint8: TensorProto.UINT8, np.int8: TensorProto.INT8,
             np.int32: TensorProto.INT32, np.float32: TensorProto.FLOAT}


def _constant(array: np.ndarray):
    t = TensorType(ELEMENT[array.dtype.type], array.shape)
    data = BytesAttr(np.ascontiguousarray(array).tobytes())
    return graph.ConstantOp.create(properties={"value": DenseIntOrFPElementsAttr(t, data)},
                                   result_types=[t])


@contextmanager
def graph_compiler():
    """onnxc.compile of a ready graph module (the ONNX model passed only names the run)."""
    original = onnxc.pipeline.import_onnx
    holder: dict[str, ModuleOp] = {}
    onnxc.pipeline.import_onnx = lambda model: holder["module"]

    def compile_module(module: ModuleOp, threads: int = 1, target: str = "host"):
        module.verify()
        holder["module"] = module
        dummy = helper.make_model(helper.make_graph([], "g", [], []))
        return onnxc.compile(dummy, pass_pipeline="", cache_dir=False, num_threads=threads,
                             target=target)

    try:
        yield compile_module
    finally:
        onnxc.pipeline.import_onnx = original


def _properties(x_zp, w_zp, out_dtype, out_scale, out_zp, out_range):
    props = {"input_zero_point": IntegerAttr(int(x_zp), i64),
             "weight_zero_point": DenseArrayBase.from_list(i64, [int(z) for z in w_zp])}
    if out_dtype is not np.int32:
        props["output_scale"] = DenseArrayBase.from_list(f32, [float(s) for s in out_scale])
    if out_dtype in (np.uint8, np.int8):
        props["output_zero_point"] = IntegerAttr(int(out_zp), i64)
        if out_range is not None:
            props["output_min"] = IntegerAttr(out_range[0], i64)
            props["output_max"] = IntegerAttr(out_range[1], i64)
    return props


def build_module(op_class, x, w, bias, out_shape, out_dtype, props, extra=None,
                 layout=None, bias_argument=False) -> ModuleOp:
    """func @main(x[, bias]) -> y with y = op(x, const w[, bias]); the bias is a constant
    unless `bias_argument`; `layout` puts the conv's input and output in that layout (with
    layout.convert around it)."""
    x_type = TensorType(ELEMENT[x.dtype.type], x.shape)
    y_type = TensorType(ELEMENT[out_dtype], out_shape)
    arg_types = [x_type] + ([TensorType(i32, bias.shape)] if bias_argument else [])
    block = Block(arg_types=arg_types)
    ops = [_constant(w)]
    operands = [block.args[0], ops[0].results[0]]
    if bias_argument:
        operands.append(block.args[1])
    elif bias is not None:
        ops.append(_constant(bias))
        operands.append(ops[-1].results[0])
    if layout is not None:
        cvt = ConvertOp(block.args[0], with_layout(x_type, layout))
        ops.append(cvt)
        operands[0] = cvt.output
    op = op_class.create(
        operands=operands,
        result_types=[with_layout(y_type, layout) if layout else y_type],
        properties={**props, **(extra or {})})
    ops.append(op)
    result = op.results[0]
    if layout is not None:
        back = ConvertOp(result, y_type)
        ops.append(back)
        result = back.output
    ops.append(func.ReturnOp(result))
    block.add_ops(ops)
    f = func.FuncOp("main", (arg_types, [y_type]), Region(block))
    return ModuleOp([f])


# --------------------------------------------------------------------------- references


def requantize_reference(acc: np.ndarray, scale: np.ndarray, out_dtype, out_zp, out_range):
    """The contract's output rule in numpy, f32 like the kernel."""
    if out_dtype is np.int32:
        return acc.astype(np.int32)
    real = acc.astype(np.float32) * scale.astype(np.float32)
    if out_dtype in (np.float32, np.float16):
        return real.astype(out_dtype)
    info = np.iinfo(out_dtype)
    lo, hi = out_range if out_range is not None else (info.min, info.max)
    q = np.rint(real) + np.float32(out_zp)
    return np.clip(q, lo, hi).astype(out_dtype)


def conv_reference(x, w, bias, x_zp, w_zp, strides, pads, dilations, group):
    """acc of the contract: integer conv of the centred operands (padding adds nothing)."""
    spatial = x.ndim - 2
    xc = x.astype(np.int64) - x_zp
    wc = w.astype(np.int64) - np.asarray(w_zp).reshape(-1, *([1] * (w.ndim - 1)))
    xp = np.pad(xc, [(0, 0), (0, 0), *[(pads[d], pads[spatial + d]) for d in range(spatial)]])
    n = x.shape[0]
    m, cg = w.shape[:2]
    ks = w.shape[2:]
    out_sp = [(xp.shape[2 + d] - dilations[d] * (ks[d] - 1) - 1) // strides[d] + 1
              for d in range(spatial)]
    y = np.zeros((n, m, *out_sp), np.int64)
    mg = m // group
    for taps in np.ndindex(*ks):
        window = tuple(slice(taps[d] * dilations[d],
                             taps[d] * dilations[d] + strides[d] * (out_sp[d] - 1) + 1,
                             strides[d]) for d in range(spatial))
        for g in range(group):
            patch = xp[(slice(None), slice(g * cg, (g + 1) * cg), *window)]
            wt = wc[(slice(g * mg, (g + 1) * mg), slice(None), *taps)]
            y[:, g * mg:(g + 1) * mg] += np.einsum("nc...,mc->nm...", patch, wt)
    if bias is not None:
        y += bias.reshape(1, -1, *([1] * spatial))
    assert np.abs(y).max(initial=0) < 2**31
    return y


def _weight_zero_points(dtype, count) -> list[int]:
    low = 120 if dtype is np.uint8 else -5
    return RNG.integers(low, low + 10, count).tolist()


def random_bytes(dtype, shape):
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max + 1, shape).astype(dtype)


def random_weights(dtype, shape, name):
    """Full-range bytes, or for the packed VNNI cases bytes whose difference to the zero
    point fits s8 (the packed kernel's condition)."""
    if not name.startswith("vnni"):
        return random_bytes(dtype, shape)
    if "narrow" in name:  # centred values in [-59, 60]: no weight pair saturates vpmaddubsw
        low = 70 if dtype is np.uint8 else -55
        return RNG.integers(low, low + 111, shape).astype(dtype)
    low = 28 if dtype is np.uint8 else -100
    return RNG.integers(low, low + 201, shape).astype(dtype)


# --------------------------------------------------------------------------- conv cases

CONV_CASES = {
    # name: x shape, w shape, strides, pads, dilations, group
    "3x3_pad": ((1, 5, 9, 7), (6, 5, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    "stride2_asym_pad": ((2, 4, 10, 9), (5, 4, 3, 3), (2, 2), (0, 1, 2, 1), (1, 1), 1),
    "dilated_grouped": ((1, 6, 11, 11), (9, 2, 3, 3), (1, 2), (2, 2, 2, 2), (2, 2), 3),
    "depthwise": ((1, 8, 7, 7), (8, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 8),
    "pointwise": ((1, 16, 5, 5), (7, 16, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    "1d": ((1, 3, 17), (4, 3, 5), (3,), (2, 1), (1,), 1),
    "3d": ((1, 2, 5, 4, 6), (3, 2, 2, 3, 2), (1, 1, 2), (1, 0, 1, 0, 1, 1), (1, 2, 1), 1),
    # shapes of the packed VNNI kernel (NHWC, Cout % 16 == 0): channel tails, a narrow last
    # panel (80 = 64 + 16), pixel counts not a multiple of MR, strides, dilations
    "vnni_3x3": ((1, 20, 9, 7), (80, 20, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    "vnni_stem": ((2, 3, 15, 13), (16, 3, 7, 7), (2, 2), (3, 3, 3, 3), (1, 1), 1),
    "vnni_1x1_stride2": ((1, 64, 8, 8), (32, 64, 1, 1), (2, 2), (0, 0, 0, 0), (1, 1), 1),
    "vnni_dilated": ((1, 8, 10, 10), (16, 8, 3, 3), (1, 1), (2, 1, 2, 1), (2, 3), 1),
    "vnni_cout_tail": ((1, 12, 6, 6), (88, 12, 3, 3), (1, 1), (0, 1, 1, 0), (1, 1), 1),
    "vnni_narrow_3x3": ((1, 20, 9, 7), (32, 20, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
}


def _conv_case(name, x_dtype, w_dtype, out_dtype, per_channel, with_bias, out_range=None,
               layout=None, bias_argument=False, scale_gain=1.0):
    x_shape, w_shape, strides, pads, dilations, group = CONV_CASES[name]
    x, w = random_bytes(x_dtype, x_shape), random_weights(w_dtype, w_shape, name)
    return conv_case(x, w, (strides, pads, dilations, group), out_dtype, per_channel,
                     with_bias, out_range, layout, bias_argument, scale_gain)


def conv_case(x, w, window, out_dtype, per_channel, with_bias, out_range=None, layout=None,
              bias_argument=False, scale_gain=1.0, x_zp=None):
    """(module, x, expected, bias) of a qlinear_conv of `x` by `w` with random zero points
    (the input's `x_zp` when given), scales (times `scale_gain`) and bias; `window` is
    (strides, pads, dilations, group)."""
    strides, pads, dilations, group = window
    m = w.shape[0]
    if x_zp is None:
        x_zp = int(RNG.integers(0, 200)) if x.dtype == np.uint8 else int(RNG.integers(-20, 20))
    w_zp = _weight_zero_points(w.dtype.type, m if per_channel else 1)
    bias = RNG.integers(-5000, 5000, m).astype(np.int32) if with_bias else None
    k = int(np.prod(w.shape[1:]))
    scales = (RNG.uniform(0.5, 2.0, m if per_channel else 1) / (k * 40.0)
              * scale_gain).astype(np.float32)
    out_zp = 0 if out_dtype is np.int32 else (128 if out_dtype is np.uint8 else -3)
    props = _properties(x_zp, w_zp, out_dtype, scales, out_zp, out_range)
    window = {"strides": DenseArrayBase.from_list(i64, list(strides)),
              "pads": DenseArrayBase.from_list(i64, list(pads)),
              "dilations": DenseArrayBase.from_list(i64, list(dilations)),
              "group": IntegerAttr(group, i64)}
    acc = conv_reference(x, w, bias, x_zp, w_zp, strides, pads, dilations, group)
    shape_scale = scales.reshape(1, -1, *([1] * (x.ndim - 2)))
    expected = requantize_reference(acc, shape_scale, out_dtype, out_zp, out_range)
    module = build_module(QLinearConvOp, x, w, bias, expected.shape, out_dtype, props, window,
                          layout=layout, bias_argument=bias_argument)
    return module, x, expected, bias


def _assert_matches(got, expected):
    if np.issubdtype(expected.dtype, np.floating):
        np.testing.assert_allclose(got, expected, rtol=2e-7 if expected.dtype == np.float32
                                   else 1e-3)
    else:
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("name", sorted(n for n in CONV_CASES if not n.startswith("vnni")))
def test_conv_u8s8_requantized(name):
    module, x, expected, _ = _conv_case(name, np.uint8, np.int8, np.uint8, True, True)
    with graph_compiler() as compile_module:
        _assert_matches(compile_module(module)(x)[0], expected)


@pytest.mark.parametrize("x_dtype,w_dtype,out_dtype,per_channel,bias,out_range", [
    (np.uint8, np.uint8, np.int32, False, False, None),
    (np.int8, np.int8, np.int8, False, True, (-128, 100)),
    (np.uint8, np.int8, np.float32, True, True, None),
    (np.uint8, np.int8, np.float16, True, False, None),
    (np.int8, np.uint8, np.uint8, True, True, (128, 255)),
])
def test_conv_types(x_dtype, w_dtype, out_dtype, per_channel, bias, out_range):
    for name, layout in (("stride2_asym_pad", None), ("vnni_3x3", "NHWC")):
        module, x, expected, _ = _conv_case(name, x_dtype, w_dtype, out_dtype, per_channel,
                                            bias, out_range, layout)
        with graph_compiler() as compile_module:
            _assert_matches(compile_module(module)(x)[0], expected)


@pytest.mark.parametrize("name", ["3x3_pad", "depthwise", "vnni_3x3", "vnni_stem",
                                  "vnni_1x1_stride2", "vnni_dilated", "vnni_cout_tail"])
def test_conv_nhwc_layout(name):
    module, x, expected, _ = _conv_case(name, np.uint8, np.int8, np.uint8, True, True,
                                     layout="NHWC")
    with graph_compiler() as compile_module:
        _assert_matches(compile_module(module, threads=2)(x)[0], expected)


@pytest.mark.parametrize("out_dtype,out_range,gain,clamp", [
    (np.uint8, None, 1.0, Clamp(True, False, False)),  # the narrowing saturates alone
    (np.uint8, (128, 255), 1.0, Clamp(True, True, False)),  # a Relu's zero point
    (np.int8, (-100, 90), 1.0, Clamp(True, True, True)),
    (np.uint8, None, 1e9, FLOAT_CLAMP),  # acc * scale past 2^31: bounded before rounding
], ids=["saturate", "low", "both", "float"])
def test_conv_output_clamp(out_dtype, out_range, gain, clamp):
    """int8_requantize.output_clamp: the bounds as integers after rounding where the rounded
    values fit i32 (those of the byte type by the saturating narrowing), else in f32
    before it. Each gives the contract's bits on the packed and the depthwise kernels."""
    for name in ("vnni_3x3", "depthwise"):
        module, x, expected, _ = _conv_case(name, np.uint8, np.int8, out_dtype, True, True,
                                            out_range, "NHWC", scale_gain=gain)
        (op,) = [o for o in module.walk() if isinstance(o, QLinearConvOp)]
        assert output_clamp(op) == clamp
        with graph_compiler() as compile_module:
            _assert_matches(compile_module(module, threads=2)(x)[0], expected)


def test_conv_nhwc_bias_argument():
    """A bias that is not a constant is added at run time (the packed kernel reads it by
    whole vectors: Cout a multiple of 16); unbounded, it keeps the float clamp."""
    module, x, expected, bias = _conv_case("vnni_1x1_stride2", np.uint8, np.int8, np.uint8,
                                           True, True, layout="NHWC", bias_argument=True)
    (op,) = [o for o in module.walk() if isinstance(o, QLinearConvOp)]
    assert output_clamp(op) == FLOAT_CLAMP
    with graph_compiler() as compile_module:
        _assert_matches(compile_module(module, threads=2)(x, bias)[0], expected)


# --------------------------------------------------------------------------- matmul cases

MATMUL_CASES = {
    "2d": ((7, 19), (19, 13)),
    "batched": ((2, 3, 5, 8), (8, 9)),
    "broadcast_batch": ((3, 1, 4, 6), (2, 6, 5)),
    "vector_lhs": ((6,), (6, 4)),
    "vector_rhs": ((3, 6), (6,)),
    "vnni_2d": ((13, 70), (70, 96)),
    "vnni_3d": ((2, 7, 64), (64, 32)),
    "vnni_n_tail": ((5, 48), (48, 1000)),
}


def _matmul_case(name, x_dtype, w_dtype, out_dtype, per_channel, with_bias, out_range=None):
    a_shape, b_shape = MATMUL_CASES[name]
    a, b = random_bytes(x_dtype, a_shape), random_weights(w_dtype, b_shape, name)
    n = b_shape[-1] if len(b_shape) > 1 else 1
    x_zp = int(RNG.integers(0, 200)) if x_dtype is np.uint8 else int(RNG.integers(-20, 20))
    w_zp = _weight_zero_points(w_dtype, n if per_channel else 1)
    bias = RNG.integers(-5000, 5000, n).astype(np.int32) if with_bias else None
    k = a_shape[-1]
    scales = (RNG.uniform(0.5, 2.0, n if per_channel else 1) / (k * 40.0)).astype(np.float32)
    out_zp = 0 if out_dtype is np.int32 else (100 if out_dtype is np.uint8 else 3)
    props = _properties(x_zp, w_zp, out_dtype, scales, out_zp, out_range)
    b2 = b if b.ndim > 1 else b[:, None]
    acc = np.matmul(a.astype(np.int64) - x_zp, b2.astype(np.int64) - np.asarray(w_zp))
    if b.ndim == 1:
        acc = acc[..., 0]
    if bias is not None:
        acc = acc + (bias if b.ndim > 1 else bias[0])
    expected = requantize_reference(acc, scales if b.ndim > 1 else scales[:1], out_dtype,
                                    out_zp, out_range)
    module = build_module(QLinearMatMulOp, a, b, bias, expected.shape, out_dtype, props)
    return module, a, expected


@pytest.mark.parametrize("name", sorted(MATMUL_CASES))
def test_matmul_u8s8_requantized(name):
    # a 1-D rhs is one output column: its per-channel values and bias have one entry
    module, a, expected = _matmul_case(name, np.uint8, np.int8, np.uint8, True, True)
    with graph_compiler() as compile_module:
        _assert_matches(compile_module(module)(a)[0], expected)


@pytest.mark.parametrize("x_dtype,w_dtype,out_dtype,per_channel,bias,out_range", [
    (np.uint8, np.uint8, np.int32, False, False, None),
    (np.int8, np.int8, np.int8, True, True, (0, 127)),
    (np.uint8, np.int8, np.float32, True, False, None),
    (np.int8, np.uint8, np.float16, False, True, None),
])
def test_matmul_types(x_dtype, w_dtype, out_dtype, per_channel, bias, out_range):
    for name in ("batched", "vnni_3d", "vnni_n_tail"):
        _check_matmul_types(name, x_dtype, w_dtype, out_dtype, per_channel, bias, out_range)


def _check_matmul_types(name, x_dtype, w_dtype, out_dtype, per_channel, bias, out_range):
    module, a, expected = _matmul_case(name, x_dtype, w_dtype, out_dtype, per_channel,
                                       bias, out_range)
    with graph_compiler() as compile_module:
        _assert_matches(compile_module(module, threads=2)(a)[0], expected)


# --------------------------------------------------------------------------- without VNNI


@pytest.fixture(params=["avx2", "portable"])
def host_isa(request, monkeypatch):
    """The packed int8 kernel without AVX512-VNNI: compiled for x86-64-v3 (AVX2's
    vpmaddubsw and i16-pair vpmaddwd forms), or in the portable i32 form; both run on this
    CPU."""
    if request.param == "avx2" and PRESETS["x86-64-v3"].missing_on(host_target()):
        pytest.skip("the host cannot run x86-64-v3 code")
    if request.param == "portable":
        monkeypatch.setattr(int8_layout, "target_int8_isa", lambda target: "portable")
    return request.param


def _target_of(isa: str) -> str:
    return "x86-64-v3" if isa == "avx2" else "host"


def _expected_form(isa: str, name: str) -> str:
    if isa == "portable":
        return "portable"
    return "maddubs" if "narrow" in name else "pairs"


@pytest.mark.parametrize("name", ["vnni_3x3", "vnni_stem", "vnni_cout_tail",
                                  "vnni_narrow_3x3"])
def test_conv_int8_kernel_without_vnni(name, host_isa):
    module, x, expected, _ = _conv_case(name, np.int8, np.int8, np.uint8, True, True,
                                        layout="NHWC")
    op = next(o for o in module.walk() if isinstance(o, QLinearConvOp))
    target = parse_target(_target_of(host_isa))
    assert int8_gemm.applies(op, target)
    assert int8_gemm.tiling(op, target).form == _expected_form(host_isa, name)
    with graph_compiler() as compile_module:
        got = compile_module(module, threads=2, target=_target_of(host_isa))(x)[0]
        _assert_matches(got, expected)


def test_maddubs_only_where_no_pair_saturates():
    """One weight pair of -120 and -10 (255 * -130 < -32768) is enough to need the exact
    pairs form (vpmaddwd on i16 pairs)."""
    avx2 = PRESETS["x86-64-v3"]
    module, *_ = _conv_case("vnni_narrow_3x3", np.uint8, np.int8, np.int32, False, False)
    op = next(o for o in module.walk() if isinstance(o, QLinearConvOp))
    assert int8_gemm.tiling(op, avx2).form == "maddubs"
    weight = op.weight.owner.value
    w = np.frombuffer(weight.data.data, np.int8).reshape(32, 20, 3, 3).copy()
    zp = ints_of(op.weight_zero_point)[0]
    w[5, 0, 1, 1], w[5, 1, 1, 1] = zp - 120, zp - 10
    op.weight.owner.properties["value"] = DenseIntOrFPElementsAttr(weight.type,
                                                                   BytesAttr(w.tobytes()))
    assert int8_gemm.tiling(op, avx2).form == "pairs"


def test_matmul_int8_kernel_without_vnni(host_isa):
    for name in ("vnni_3d", "vnni_n_tail"):
        module, a, expected = _matmul_case(name, np.uint8, np.int8, np.float32, True, True)
        with graph_compiler() as compile_module:
            got = compile_module(module, threads=2, target=_target_of(host_isa))(a)[0]
            _assert_matches(got, expected)


# --------------------------------------------------------------------------- onnxruntime


def _run_ort(nodes, inputs, inits, out_name, out_type, out_shape):
    graph_proto = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, ONNX_TYPE[v.dtype.type], v.shape)
         for n, v in inputs.items()],
        [helper.make_tensor_value_info(out_name, out_type, out_shape)],
        [numpy_helper.from_array(v, n) for n, v in inits.items()])
    model = helper.make_model(graph_proto, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return ort_exact(model, inputs)[0]


def _close_bytes(got, expected):
    diff = np.abs(got.astype(np.int32) - expected.astype(np.int32))
    assert diff.max() <= 1
    assert np.count_nonzero(diff) <= max(1, diff.size // 100)


@pytest.mark.parametrize("per_channel", [False, True])
def test_conv_matches_onnxruntime_qlinearconv(per_channel):
    x = random_bytes(np.uint8, (1, 8, 12, 12))
    w = random_bytes(np.int8, (16, 8, 3, 3))
    bias = RNG.integers(-2000, 2000, 16).astype(np.int32)
    x_scale, y_scale = np.float32(0.02), np.float32(0.15)
    w_scale = RNG.uniform(0.002, 0.01, 16 if per_channel else 1).astype(np.float32)
    x_zp, y_zp = np.uint8(120), np.uint8(100)
    w_zp = np.zeros(16 if per_channel else 1, np.int8)
    inits = {"xs": np.array(x_scale), "xz": np.array(x_zp), "w": w,
             "ws": w_scale if per_channel else np.array(w_scale[0]),
             "wz": w_zp if per_channel else np.array(w_zp[0]),
             "ys": np.array(y_scale), "yz": np.array(y_zp), "b": bias}
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"],
                            ["y"], pads=[1, 0, 1, 2], strides=[2, 1])
    want = _run_ort([node], {"x": x}, inits, "y", TensorProto.UINT8, None)
    scales = (x_scale * w_scale / y_scale).astype(np.float32)  # onnxruntime's order, in f32
    props = _properties(x_zp, w_zp, np.uint8, scales, y_zp, None)
    window = {"strides": DenseArrayBase.from_list(i64, [2, 1]),
              "pads": DenseArrayBase.from_list(i64, [1, 0, 1, 2]),
              "dilations": DenseArrayBase.from_list(i64, [1, 1]),
              "group": IntegerAttr(1, i64)}
    module = build_module(QLinearConvOp, x, w, bias, want.shape, np.uint8, props, window)
    with graph_compiler() as compile_module:
        _close_bytes(compile_module(module)(x)[0], want)


def test_conv_matches_onnxruntime_convinteger():
    x = random_bytes(np.uint8, (1, 4, 9, 9))
    w = random_bytes(np.uint8, (6, 2, 3, 3))
    inits = {"w": w, "xz": np.array(np.uint8(7)), "wz": np.array(np.uint8(130))}
    node = helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], pads=[1, 1, 1, 1],
                            group=2)
    want = _run_ort([node], {"x": x}, inits, "y", TensorProto.INT32, None)
    props = _properties(7, [130], np.int32, None, None, None)
    window = {"strides": DenseArrayBase.from_list(i64, [1, 1]),
              "pads": DenseArrayBase.from_list(i64, [1, 1, 1, 1]),
              "dilations": DenseArrayBase.from_list(i64, [1, 1]),
              "group": IntegerAttr(2, i64)}
    module = build_module(QLinearConvOp, x, w, None, want.shape, np.int32, props, window)
    with graph_compiler() as compile_module:
        np.testing.assert_array_equal(compile_module(module)(x)[0], want)


def test_matmul_matches_onnxruntime():
    a = random_bytes(np.uint8, (2, 5, 24))
    b = random_bytes(np.int8, (24, 10))
    inits = {"as": np.array(np.float32(0.03)), "az": np.array(np.uint8(128)), "b": b,
             "bs": np.array(np.float32(0.004)), "bz": np.array(np.int8(0)),
             "ys": np.array(np.float32(0.05)), "yz": np.array(np.uint8(90))}
    node = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"],
                            ["y"])
    want = _run_ort([node], {"a": a}, inits, "y", TensorProto.UINT8, None)
    scale = np.float32(0.03) * np.float32(0.004) / np.float32(0.05)
    props = _properties(128, [0], np.uint8, [scale], 90, None)
    module = build_module(QLinearMatMulOp, a, b, None, want.shape, np.uint8, props)
    with graph_compiler() as compile_module:
        _close_bytes(compile_module(module)(a)[0], want)

    node = helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])
    inits = {"b": b, "az": np.array(np.uint8(128)), "bz": np.array(np.int8(3))}
    want = _run_ort([node], {"a": a}, inits, "y", TensorProto.INT32, None)
    props = _properties(128, [3], np.int32, None, None, None)
    module = build_module(QLinearMatMulOp, a, b, None, want.shape, np.int32, props)
    with graph_compiler() as compile_module:
        np.testing.assert_array_equal(compile_module(module)(a)[0], want)
