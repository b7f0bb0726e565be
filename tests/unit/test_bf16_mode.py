"""`onnxc.compile(..., precision="bf16")`: bf16 products, f32 accumulation (gemm_bf16.py).

Numerics: each case is one ONNX MatMul / Gemm / Conv compiled natively with
precision="bf16" and compared with a reference that rounds both factors to bf16
(ml_dtypes.bfloat16, round to nearest even) and sums the products in f64 (numpy; the conv
as an im2col einsum checked against ONNX's Conv by the f32 run): the products are then exact, so the only
difference is the kernel's f32 accumulation in another order, bounded here by
1e-5 * sum_k |a_k * b_k| + 1e-6 per element. The same cases also differ from the plain f32
result by more than that bound somewhere, so the bf16 path really ran. Shapes hit the edge
tiles: M not a multiple of MR, N not a multiple of the vector width, odd K (a zero pair
half), K over several k-blocks, an odd channel count, groups.

The option: validated before any work; on a CPU without AVX512-BF16 it is an
InvalidArgumentError (never a silent f32 run); part of the cache key; restored by a hit.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxc
from onnxc import pipeline
from onnxc.compile_options import CompileOptions
from onnxc.errors import InvalidArgumentError, LoweringError
from onnxc.frontend import import_onnx
from onnxc.lowering.graph_to_loops import gemm_bf16
from onnxc.runtime import cache
from onnxc.target import host_target
from onnxc.zoo import REFERENCE_IR_VERSION
from tests.single_op import graph_model

RNG = np.random.default_rng(17)
needs_bf16 = pytest.mark.skipif(not gemm_bf16.supports_bf16(host_target()),
                                reason="the CPU has no AVX512-BF16")


def bf16(x: np.ndarray) -> np.ndarray:
    """x rounded to bf16 (round to nearest even), back in f32: exact products later."""
    return np.asarray(x, np.float32).astype(ml_dtypes.bfloat16).astype(np.float32)


def _model(nodes, inputs, outputs, initializers, opset: int = 17) -> onnx.ModelProto:
    return graph_model(nodes, inputs, outputs, initializers=list(initializers), opset=opset,
                       ir_version=REFERENCE_IR_VERSION)


def _info(name: str, shape) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))


def _check(got: np.ndarray, ref: np.ndarray, magnitude: np.ndarray, f32: np.ndarray) -> None:
    """got == ref up to f32 accumulation; and the f32 result is not within that bound."""
    bound = 1e-5 * magnitude + 1e-6
    assert np.all(np.abs(got - ref) <= bound), np.max(np.abs(got - ref) - bound)
    assert np.any(np.abs(f32 - ref) > bound), "the bf16 result equals the f32 one"


# ----------------------------------------------------------------------------- GEMM


@needs_bf16
@pytest.mark.parametrize(("m", "k", "n"), [(5, 7, 3), (9, 33, 16), (37, 300, 70),
                                           (16, 600, 130)])
def test_matmul_by_constant(m, k, n):
    x = RNG.standard_normal((m, k)).astype(np.float32)
    w = RNG.standard_normal((k, n)).astype(np.float32)
    model = _model([helper.make_node("MatMul", ["x", "w"], ["y"])], [_info("x", (m, k))],
                   [_info("y", (m, n))], [numpy_helper.from_array(w, "w")])
    compiled = onnxc.compile(model, precision="bf16", cache_dir=False)
    assert compiled.precision == "bf16"
    (got,) = compiled(x)
    ref = bf16(x).astype(np.float64) @ bf16(w).astype(np.float64)
    magnitude = np.abs(bf16(x)).astype(np.float64) @ np.abs(bf16(w)).astype(np.float64)
    _check(got, ref, magnitude, x @ w)


@needs_bf16
def test_matmul_with_leading_batch_dims():
    x = RNG.standard_normal((2, 11, 64)).astype(np.float32)
    w = RNG.standard_normal((64, 48)).astype(np.float32)
    model = _model([helper.make_node("MatMul", ["x", "w"], ["y"])], [_info("x", x.shape)],
                   [_info("y", (2, 11, 48))], [numpy_helper.from_array(w, "w")])
    (got,) = onnxc.compile(model, precision="bf16", cache_dir=False)(x)
    ref = bf16(x).astype(np.float64) @ bf16(w).astype(np.float64)
    magnitude = np.abs(bf16(x)).astype(np.float64) @ np.abs(bf16(w)).astype(np.float64)
    _check(got, ref, magnitude, x @ w)


@needs_bf16
@pytest.mark.parametrize(("trans_a", "trans_b"), [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_gemm_alpha_beta_bias_relu(trans_a, trans_b):
    """alpha is folded into B before rounding; C, beta and the Relu stay f32."""
    m, k, n, alpha, beta = 13, 45, 40, 0.75, 1.5
    a = RNG.standard_normal((k, m) if trans_a else (m, k)).astype(np.float32)
    b = RNG.standard_normal((n, k) if trans_b else (k, n)).astype(np.float32)
    c = RNG.standard_normal((n,)).astype(np.float32)
    nodes = [helper.make_node("Gemm", ["a", "b", "c"], ["t"], alpha=alpha, beta=beta,
                              transA=trans_a, transB=trans_b),
             helper.make_node("Relu", ["t"], ["y"])]
    model = _model(nodes, [_info("a", a.shape)], [_info("y", (m, n))],
                   [numpy_helper.from_array(b, "b"), numpy_helper.from_array(c, "c")])
    (got,) = onnxc.compile(model, precision="bf16", cache_dir=False)(a)
    a2 = (a.T if trans_a else a).astype(np.float64)
    b2 = (b.T if trans_b else b) * np.float32(alpha)
    ref = np.maximum(bf16(a2).astype(np.float64) @ bf16(b2) + beta * c, 0)
    magnitude = np.abs(bf16(a2)).astype(np.float64) @ np.abs(bf16(b2)) + beta * np.abs(c)
    f32 = np.maximum(alpha * (a2 @ (b.T if trans_b else b)) + beta * c, 0)
    _check(got, ref, magnitude, f32)


# ----------------------------------------------------------------------------- conv


def _conv_model(x_shape, w, bias, *, strides, pads, group, relu, residual, dilation=1):
    n, _, h, wd = x_shape
    cout, _, kh, kw = w.shape
    oh = (h + pads[0] + pads[2] - dilation * (kh - 1) - 1) // strides[0] + 1
    ow = (wd + pads[1] + pads[3] - dilation * (kw - 1) - 1) // strides[1] + 1
    y_shape = (n, cout, oh, ow)
    inits = [numpy_helper.from_array(w, "w")]
    ins = ["x", "w"]
    if bias is not None:
        inits.append(numpy_helper.from_array(bias, "bias"))
        ins.append("bias")
    nodes = [helper.make_node("Conv", ins, ["c"], strides=strides, pads=pads, group=group,
                              dilations=[dilation, dilation])]
    last, inputs = "c", [_info("x", x_shape)]
    if residual:
        nodes.append(helper.make_node("Add", ["c", "z"], ["s"]))
        inputs.append(_info("z", y_shape))
        last = "s"
    if relu:
        nodes.append(helper.make_node("Relu", [last], ["r"]))
        last = "r"
    nodes.append(helper.make_node("Identity", [last], ["y"]))
    return _model(nodes, inputs, [_info("y", y_shape)], inits), y_shape


def _conv(x: np.ndarray, w: np.ndarray, strides, pads, group: int, d: int) -> np.ndarray:
    """ONNX Conv (NCHW, dilation d) in numpy, f64: the sum of exact bf16 products."""
    _, _, h, wd = x.shape
    cout, cg, kh, kw = w.shape
    (sh, sw), (pt, pl, pb, pr) = strides, pads
    oh, ow = (h + pt + pb - d * (kh - 1) - 1) // sh + 1, (wd + pl + pr - d * (kw - 1) - 1) // sw + 1
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    cols = np.stack([np.stack([xp[:, :, d * i:d * i + sh * (oh - 1) + 1:sh,
                                  d * j:d * j + sw * (ow - 1) + 1:sw]
                               for j in range(kw)], 2) for i in range(kh)], 2)
    mg = cout // group
    return np.concatenate([
        np.einsum("ncijhw,mcij->nmhw", cols[:, g * cg:(g + 1) * cg], w[g * mg:(g + 1) * mg])
        for g in range(group)], 1)


CONVS = {
    # name: (x shape, w shape, strides, pads, group, bias, relu, residual)
    "first_layer_odd_channels": ((1, 3, 17, 19), (20, 3, 7, 7), [2, 2], [3, 3, 3, 3], 1,
                                 True, True, False),
    "3x3_padded": ((1, 16, 9, 10), (24, 16, 3, 3), [1, 1], [1, 1, 1, 1], 1, True, True,
                   False),
    "1x1_pointwise_residual": ((1, 64, 7, 9), (40, 64, 1, 1), [1, 1], [0, 0, 0, 0], 1, True,
                               True, True),
    "1x1_strided": ((1, 32, 9, 9), (48, 32, 1, 1), [2, 2], [0, 0, 0, 0], 1, False, False,
                    False),
    "deep_k_several_blocks": ((1, 600, 5, 5), (17, 600, 1, 1), [1, 1], [0, 0, 0, 0], 1,
                              True, False, False),
    "3x3_wide_channels": ((1, 200, 5, 5), (33, 200, 3, 3), [1, 1], [1, 1, 1, 1], 1, True,
                          False, False),
    "grouped": ((1, 8, 8, 8), (12, 4, 3, 3), [1, 1], [1, 1, 1, 1], 2, True, True, False),
    "dilated": ((1, 10, 9, 11), (16, 10, 3, 3), [1, 1], [2, 2, 2, 2], 1, True, False, False,
                2),
}


@needs_bf16
@pytest.mark.parametrize("case", sorted(CONVS))
def test_conv_nhwc(case):
    x_shape, w_shape, strides, pads, group, has_bias, relu, residual, *dilation = CONVS[case]
    d = dilation[0] if dilation else 1
    x = RNG.random(x_shape, dtype=np.float32) - 0.25
    w = RNG.standard_normal(w_shape).astype(np.float32)
    bias = RNG.standard_normal(w_shape[0]).astype(np.float32) if has_bias else None
    model, y_shape = _conv_model(x_shape, w, bias, strides=strides, pads=pads, group=group,
                                 relu=relu, residual=residual, dilation=d)
    feeds = {"x": x}
    if residual:
        feeds["z"] = RNG.standard_normal(y_shape).astype(np.float32)
    compiled = onnxc.compile(model, precision="bf16", cache_dir=False)
    (got,) = compiled.run(None, feeds)
    z = feeds.get("z")

    def reference(xv: np.ndarray, wv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The conv with its epilogue, and the magnitude of its sum of products."""
        y = _conv(xv, wv, strides, pads, group, d)
        magnitude = _conv(np.abs(xv), np.abs(wv), strides, pads, group, d)
        if bias is not None:
            y, magnitude = y + bias[:, None, None], magnitude + np.abs(bias)[:, None, None]
        if z is not None:
            y, magnitude = y + z, magnitude + np.abs(z)
        return (np.maximum(y, 0) if relu else y), magnitude

    ref, magnitude = reference(bf16(x).astype(np.float64), bf16(w).astype(np.float64))
    f32 = onnxc.compile(model, cache_dir=False).run(None, feeds)[0]
    plain, plain_magnitude = reference(x.astype(np.float64), w.astype(np.float64))
    assert np.all(np.abs(f32 - plain) <= 1e-5 * plain_magnitude + 1e-6)  # the numpy conv
    _check(got, ref, magnitude, f32)


@needs_bf16
def test_only_gemms_and_convs_are_marked():
    """Depthwise convs, products by a non-constant B and elementwise ops stay f32."""
    from onnxc.lowering.graph_to_loops.gemm_bf16 import PRECISION_ATTR

    w = RNG.standard_normal((8, 1, 3, 3)).astype(np.float32)
    p = RNG.standard_normal((16, 8, 1, 1)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["d"], group=8, pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["d", "p"], ["c"]),
             helper.make_node("Relu", ["c"], ["y"]),
             helper.make_node("MatMul", ["a", "b"], ["m"])]
    model = _model(nodes, [_info("x", (1, 8, 6, 6)), _info("a", (20, 9)), _info("b", (9, 4))],
                   [_info("y", (1, 16, 6, 6)), _info("m", (20, 4))],
                   [numpy_helper.from_array(w, "w"), numpy_helper.from_array(p, "p")])
    module = import_onnx(model)
    ctx = pipeline.make_context()
    passes = pipeline.graph_to_loops("bf16")
    pipeline.run_passes(ctx, module, passes[:passes.index("convert-graph-to-loops")])
    marked = sorted(o.name for o in module.walk() if PRECISION_ATTR in o.attributes)
    assert marked == ["graph.conv"], marked
    convs = [o for o in module.walk() if o.name == "graph.conv"]
    assert [PRECISION_ATTR in o.attributes for o in convs] == [False, True]
    assert pipeline.graph_to_loops("fp32") == pipeline.GRAPH_TO_LOOPS


def test_rounding_is_round_to_nearest_even():
    x = np.array([1.0, 1 + 2 ** -8, 1 + 3 * 2 ** -8, -(1 + 2 ** -8), 3.4e38, np.inf, -0.0,
                  1e-40], np.float32)
    x = np.concatenate([x, RNG.standard_normal(1000).astype(np.float32)])
    expected = x.astype(ml_dtypes.bfloat16).view(np.uint16)
    assert np.array_equal(gemm_bf16.bf16_bits(x), expected)
    nan = gemm_bf16.bf16_bits(np.array([np.nan], np.float32)).view(ml_dtypes.bfloat16)
    assert np.isnan(nan.astype(np.float32)).all()
    pairs = gemm_bf16.pairs(np.arange(6, dtype=np.float32).reshape(3, 2))
    assert pairs.shape == (2, 2) and pairs[1, 0] == gemm_bf16.bf16_bits(np.float32(4.0))


# ----------------------------------------------------------------------------- the option


def _small_model() -> onnx.ModelProto:
    w = np.arange(12, dtype=np.float32).reshape(4, 3)
    return _model([helper.make_node("MatMul", ["x", "w"], ["y"])], [_info("x", (2, 4))],
                  [_info("y", (2, 3))], [numpy_helper.from_array(w, "w")])


@pytest.mark.parametrize("bad", ["fp16", "BF16", "", None, 16, b"bf16"])
def test_bad_precision_is_refused(bad):
    with pytest.raises(InvalidArgumentError, match="precision"):
        onnxc.compile(_small_model(), precision=bad, cache_dir=False)


def test_bf16_without_the_cpu_feature_is_refused(monkeypatch):
    """Not a silent f32 run: the request is refused before any work, and the lowering
    pass (onnxc-opt) refuses it too."""
    monkeypatch.setattr(gemm_bf16, "supports_bf16", lambda target: False)
    with pytest.raises(InvalidArgumentError, match="AVX512-BF16"):
        onnxc.compile(_small_model(), precision="bf16", cache_dir=False)
    module = import_onnx(_small_model())
    with pytest.raises(LoweringError, match="AVX512-BF16"):
        pipeline.run_passes(pipeline.make_context(), module, pipeline.graph_to_loops("bf16"))
    assert onnxc.compile(_small_model(), cache_dir=False).precision == "fp32"


def test_cache_key_differs_between_precisions():
    source = cache.snapshot(_small_model())
    assert source is not None
    keys = {cache.compile_key(source, CompileOptions(precision=p)) for p in ("fp32", "bf16")}
    assert len(keys) == 2
    assert cache.compile_key(source, CompileOptions()) == \
        cache.compile_key(source, CompileOptions(precision="fp32"))


@needs_bf16
def test_cache_hit_keeps_the_precision(tmp_path):
    x = RNG.standard_normal((2, 4)).astype(np.float32)
    first = onnxc.compile(_small_model(), precision="bf16", cache_dir=tmp_path)
    hit = onnxc.compile(_small_model(), precision="bf16", cache_dir=tmp_path)
    assert not first.from_cache and hit.from_cache
    assert hit.precision == "bf16"
    assert np.array_equal(first(x)[0], hit(x)[0])
    other = onnxc.compile(_small_model(), cache_dir=tmp_path)
    assert not other.from_cache and other.precision == "fp32"


@needs_bf16
def test_cli_precision_flag(tmp_path, capsys, monkeypatch):
    from onnxc.tools.run import main

    monkeypatch.setenv("ONNXC_CACHE", "0")
    path = tmp_path / "m.onnx"
    onnx.save(_small_model(), str(path))
    assert main(["run", str(path), "--repeat", "1", "--precision", "bf16"]) == 0
    assert "precision bf16, target host)" in capsys.readouterr().out.splitlines()[1]
    with pytest.raises(SystemExit):  # argparse: not one of the choices
        main(["run", str(path), "--precision", "fp16"])


@needs_bf16
@pytest.mark.slow
@pytest.mark.parametrize("name", ["resnet50", "bert_encoder"])
def test_zoo_net_accuracy_cost(name):
    """The accuracy cost docs/precision.md tables, on a few inputs: top-1 kept, logits (or
    hidden states) within 1% of their range of the f32 compile."""
    from onnxc.zoo import benchmark_models, expose_logits, random_inputs
    from onnxc.zoo_bert import bert_inputs

    model = benchmark_models()[name]()
    if name != "bert_encoder":
        model = expose_logits(model)
    fp32 = onnxc.compile(model, cache_dir=False)
    bf = onnxc.compile(model, cache_dir=False, precision="bf16")
    for seed in range(3):
        feeds = bert_inputs(model, seed) if name == "bert_encoder" else random_inputs(model, seed)
        ref, got = fp32.run(None, feeds)[-1], bf.run(None, feeds)[-1]
        assert np.abs(got - ref).max() <= 0.01 * np.abs(ref).max()
        if name != "bert_encoder":
            assert ref.reshape(len(ref), -1).argmax(-1).tolist() == \
                got.reshape(len(got), -1).argmax(-1).tolist()
