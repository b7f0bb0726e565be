"""The QDQ passes (fuse-qdq-linear, move-quant-dequant, quantize steps of fuse-elementwise,
opt-in cancel-quant-dequant) on small QDQ models: the ops they make, and results against
onnxruntime, which runs the same QDQ models through its own QDQ fusions (on the models'
u8-weight twins, which it computes exactly on any host: tests/exact_int8_reference.py).

Tolerance: onnxruntime's QLinearConv/QLinearMatMul and ours requantize the same exact
integer accumulator with the same f32 output scale, so the 8-bit results agree except where
the f32 product lands within rounding of a tie: at most one quantum, and nearly every
element equal.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxc
from onnxc.passes import levels
from onnxc.passes.verify_numerics import (
    MemoEvaluator,
    check_pass_equivalence,
    random_inputs,
)
from onnxc.passes.verify_numerics import _apply as apply_pipeline
from tests.exact_int8_reference import ort_exact
from tests.ir_helpers import parse_graph, split_lit_cases

RNG = np.random.default_rng(7)


def _init(name: str, array: np.ndarray):
    return numpy_helper.from_array(np.asarray(array), name)


class Builder:
    """A QDQ graph in quantize_static's form: u8 activations per tensor, s8 weights per
    output channel, i32 biases in the accumulator's scale."""

    def __init__(self) -> None:
        self.nodes, self.inits, self.n = [], [], 0

    def name(self, base: str) -> str:
        self.n += 1
        return f"{base}{self.n}"

    def qdq(self, x: str, scale: float, zero: int, dtype=np.uint8) -> str:
        s, z = self.name("s"), self.name("z")
        self.inits += [_init(s, np.float32(scale)), _init(z, dtype(zero))]
        q, d = self.name("q"), self.name("d")
        self.nodes += [helper.make_node("QuantizeLinear", [x, s, z], [q]),
                       helper.make_node("DequantizeLinear", [q, s, z], [d])]
        return d

    def weight(self, w: np.ndarray, axis: int, x_scale: float, bias: np.ndarray | None):
        """(DQ(w), DQ(bias)) with per-channel scales along `axis`."""
        channels = w.shape[axis]
        w_scale = (np.abs(w).max(axis=tuple(i for i in range(w.ndim) if i != axis)) / 127
                   ).astype(np.float32)
        shape = [1] * w.ndim
        shape[axis] = channels
        wq = np.clip(np.rint(w / w_scale.reshape(shape)), -127, 127).astype(np.int8)
        names = [self.name(p) for p in ("wq", "ws", "wz", "w")]
        self.inits += [_init(names[0], wq), _init(names[1], w_scale),
                       _init(names[2], np.zeros(channels, np.int8))]
        self.nodes.append(helper.make_node("DequantizeLinear", names[:3], [names[3]], axis=axis))
        if bias is None:
            return names[3], None
        b_scale = (np.float32(x_scale) * w_scale).astype(np.float32)
        bq = np.rint(bias / b_scale).astype(np.int32)
        bn = [self.name(p) for p in ("bq", "bs", "bz", "b")]
        self.inits += [_init(bn[0], bq), _init(bn[1], b_scale),
                       _init(bn[2], np.zeros(channels, np.int32))]
        self.nodes.append(helper.make_node("DequantizeLinear", bn[:3], [bn[3]], axis=0))
        return names[3], bn[3]

    def activation(self, x: str, kind: str | None, clip: tuple[float, float]) -> str:
        """`x` through a Relu, a Clip to `clip` or nothing (`kind` None)."""
        if kind is None:
            return x
        out = self.name("act")
        if kind == "Relu":
            self.nodes.append(helper.make_node("Relu", [x], [out]))
            return out
        lo, hi = self.name("lo"), self.name("hi")
        self.inits += [_init(lo, np.float32(clip[0])), _init(hi, np.float32(clip[1]))]
        self.nodes.append(helper.make_node("Clip", [x, lo, hi], [out]))
        return out

    def model(self, inputs, outputs):
        g = helper.make_graph(self.nodes, "qdq", inputs, outputs, self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        return m


def conv_model():
    """Q/DQ -> Conv -> Relu -> Q/DQ -> MaxPool -> Q/DQ, plus a residual Add + Relu (on the
    second conv's result)."""
    b = Builder()
    x = b.qdq("x", 0.02, 128)
    w, bias = b.weight(RNG.standard_normal((8, 4, 3, 3)).astype(np.float32), 0, 0.02,
                       RNG.standard_normal(8).astype(np.float32) * 0.1)
    b.nodes += [helper.make_node("Conv", [x, w, bias], ["c"], pads=[1, 1, 1, 1]),
                helper.make_node("Relu", ["c"], ["r"])]
    r = b.qdq("r", 0.05, 0)
    b.nodes.append(helper.make_node("MaxPool", [r], ["p"], kernel_shape=[2, 2], strides=[2, 2]))
    p = b.qdq("p", 0.05, 0)
    w2, bias2 = b.weight(RNG.standard_normal((8, 8, 1, 1)).astype(np.float32), 0, 0.05,
                         RNG.standard_normal(8).astype(np.float32) * 0.1)
    b.nodes.append(helper.make_node("Conv", [p, w2, bias2], ["c2"]))
    c2 = b.qdq("c2", 0.08, 120)
    b.nodes += [helper.make_node("Add", [c2, p], ["a"]), helper.make_node("Relu", ["a"], ["ar"])]
    out = b.qdq("ar", 0.06, 0)
    b.nodes.append(helper.make_node("Identity", [out], ["y"]))
    return b.model([helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 4, 4])])


def gemm_model():
    """Q/DQ -> Gemm(transB, bias) -> Q/DQ -> MatMul (3-D lhs, per-column weight): the last
    product has no Q after it, so it is the float form."""
    b = Builder()
    x = b.qdq("x", 0.03, 100)
    w, bias = b.weight(RNG.standard_normal((6, 5)).astype(np.float32), 0, 0.03,
                       RNG.standard_normal(6).astype(np.float32) * 0.1)
    b.nodes.append(helper.make_node("Gemm", [x, w, bias], ["g"], transB=1))
    g = b.qdq("g", 0.04, 128)
    b.nodes.append(helper.make_node("Reshape", [g, "shape"], ["gr"]))
    b.inits.append(_init("shape", np.array([1, 2, 6], np.int64)))
    gr = b.qdq("gr", 0.04, 128)
    w2, _ = b.weight(RNG.standard_normal((6, 3)).astype(np.float32), 1, 0.04, None)
    b.nodes.append(helper.make_node("MatMul", [gr, w2], ["y"]))
    return b.model([helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 3])])


def _ort(model, feeds):
    return ort_exact(model, feeds)


def op_counts(module) -> dict[str, int]:
    counts: dict[str, int] = {}
    for op in module.walk():
        counts[op.name] = counts.get(op.name, 0) + 1
    return counts


def test_conv_chain_becomes_integer_ops():
    counts = op_counts(onnxc.optimize(conv_model(), opt_level=3))
    # the second conv takes the residual DQ + DQ -> add -> relu -> Q into its epilogue
    assert counts.get("graph.qlinear_conv") == 1 and counts.get("graph.qlinear_conv_add") == 1
    assert "graph.conv" not in counts and "graph.max_pool" in counts
    # the input's Q and the output's DQ stay; nothing else quantizes or dequantizes
    assert counts.get("graph.quantize_linear", 0) + counts.get("graph.dequantize_linear", 0) <= 2
    assert "graph.fused_elementwise" not in counts and "graph.add" not in counts


def test_gemm_and_matmul_become_qlinear_matmul():
    module = onnxc.optimize(gemm_model(), opt_level=3)
    products = [op for op in module.walk() if op.name == "graph.qlinear_matmul"]
    assert len(products) == 2
    assert [str(p.results[0].type.get_element_type()) for p in products] == ["ui8", "f32"]
    assert "graph.gemm" not in op_counts(module) and "graph.matmul" not in op_counts(module)


@pytest.mark.parametrize("build, shape", [(conv_model, (1, 4, 8, 8)), (gemm_model, (2, 5))])
def test_qdq_models_match_onnxruntime(build, shape):
    model = build()
    x = (RNG.standard_normal(shape) * 1.5).astype(np.float32)
    (expected,) = _ort(model, {"x": x})
    (actual,) = onnxc.compile(model, opt_level=3, cache_dir=False)(x)
    # within one output quantum of onnxruntime (the largest output scale is 0.06), and
    # nearly every element equal
    assert np.abs(actual - expected).max() <= 0.061
    assert np.mean(actual == expected) > 0.95


def test_quantize_dequantize_pairs_stay_at_O3():
    """-O3 no longer drops Quantize -> Dequantize (it changes results); the opt-in does."""
    assert not any("allow-rounding-change" in p for lvl in levels.LEVELS.values() for p in lvl)
    b = Builder()
    y = b.qdq("x", 0.05, 128)
    b.nodes.append(helper.make_node("Identity", [y], ["y"]))
    model = b.model([helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
                    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 16])])
    x = (RNG.standard_normal((4, 16)) * 4).astype(np.float32)
    (expected,) = _ort(model, {"x": x})
    (actual,) = onnxc.compile(model, opt_level=3, cache_dir=False)(x)
    np.testing.assert_array_equal(actual, expected)
    opt_in = levels.graph_pipeline(3).replace(
        "cancel-quant-dequant", "cancel-quant-dequant{allow-rounding-change=true}")
    module = onnxc.optimize(model, pass_pipeline=opt_in)
    assert not any(op.name.endswith("quantize_linear") for op in module.walk())


# ----------------------------------------------------------------------------- lit cases

LIT = Path(__file__).parents[1] / "lit" / "passes"


def _evaluate(module, inputs) -> list[np.ndarray]:
    return MemoEvaluator(inputs).run(module)


def _cases(row: str) -> list[str]:
    return split_lit_cases(LIT / f"quant_{row}.mlir")


@pytest.mark.parametrize("row", ["move-quant-dequant", "fuse-elementwise"])
def test_exact_lit_cases_keep_their_results(row):
    """Moving Q/DQ through data movement and fusing Q/DQ steps changes no bit."""
    changed = 0
    for case in _cases(row):
        module = parse_graph(case)
        after = check_pass_equivalence(module, row, rtol=0.0, atol=0.0)
        changed += str(after) != str(module)
    assert changed >= 1


def test_fuse_qdq_linear_lit_cases_within_one_quantum():
    """The integer ops (passes/quant_reference) give the float QDQ graph's results up to
    float rounding: the same 8-bit value except at ties (one step), the same float up to f32
    rounding."""
    rewritten = 0
    for case in _cases("fuse-qdq-linear"):
        module = parse_graph(case)
        after = module.clone()
        apply_pipeline(after, "fuse-qdq-linear")
        rewritten += str(after) != str(module)
        inputs = random_inputs(module, seed=3)
        for e, a in zip(_evaluate(module, inputs), _evaluate(after, inputs)):
            assert e.dtype == a.dtype
            if e.dtype.kind in "iu":
                assert np.abs(e.astype(np.int32) - a).max() <= 1
            else:
                np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-5)
    assert rewritten >= 4


def test_fused_quantize_steps_match_the_separate_kernels():
    """i8 Q/DQ with saturation and ties to even, fused into one loop at -O3, give exactly
    the bits of the unfused -O0 kernels."""
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"]),
             helper.make_node("DequantizeLinear", ["b", "s2", "z2"], ["e"]),
             helper.make_node("Add", ["d", "e"], ["a"]),
             helper.make_node("Relu", ["a"], ["r"]),
             helper.make_node("QuantizeLinear", ["r", "s3", "z"], ["y"])]
    g = helper.make_graph(
        nodes, "fused",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 40]),
         helper.make_tensor_value_info("b", TensorProto.INT8, [3, 40])],
        [helper.make_tensor_value_info("y", TensorProto.INT8, [3, 40])],
        [_init("s", np.float32(0.05)), _init("z", np.int8(-3)), _init("s2", np.float32(0.1)),
         _init("z2", np.int8(7)), _init("s3", np.float32(0.0625))])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    x = (RNG.standard_normal((3, 40)) * 4).astype(np.float32)
    x[0, :6] = [0.025, 0.075, -0.025, -0.125, 100.0, -100.0]  # ties to even, saturation
    b = RNG.integers(-128, 128, (3, 40), dtype=np.int8)
    module = onnxc.optimize(model, opt_level=3)
    assert [op.name for op in module.walk() if op.name.startswith("graph.")] == [
        "graph.fused_elementwise", "graph.yield"]  # the yield ends its body
    (fused,) = onnxc.compile(model, opt_level=3, cache_dir=False)(x, b)
    (plain,) = onnxc.compile(model, opt_level=0, cache_dir=False)(x, b)
    assert fused.dtype == np.int8
    np.testing.assert_array_equal(fused, plain)


@pytest.mark.parametrize("body, types, error", [
    # an i8 element read by float arithmetic (only a dequantize's conversion may read it)
    (('%s = "arith.addf"(%a, %a) <{fastmath = #arith.fastmath<none>}> : (i8, i8) -> i8\n'
      "    %f = arith.sitofp %s : i8 to f32\n    graph.yield %f : f32"),
     "(tensor<4xi8>) -> tensor<4xf32>", "operand 'lhs' at position 0 does not verify"),
    # an i8 result computed without a last quantize's conversion
    ("%f = arith.sitofp %a : i8 to f32\n    graph.yield %f : f32",
     "(tensor<4xi8>) -> tensor<4xi8>", "expected one i8"),
])
def test_fused_integer_operands_are_verified(body, types, error):
    text = f"""
func.func @main(%x: tensor<4xi8>) -> {types.split(" -> ")[1]} {{
  %0 = graph.fused_elementwise(%x) : {types} {{
  ^bb0(%a: i8):
    {body}
  }}
  func.return %0 : {types.split(" -> ")[1]}
}}"""
    with pytest.raises(Exception, match=error):
        parse_graph(text).verify()


def _random_conv_model(rng: np.random.Generator, group: int, stride: int, pad: int,
                       activation: str | None, y_scale: float | None):
    """A QDQ conv (float result when `y_scale` is None) with an optional Relu/Clip."""
    b = Builder()
    cin, cout = 2 * group, 3 * group
    x = b.qdq("x", float(rng.uniform(0.01, 0.05)), int(rng.integers(0, 256)))
    w, _ = b.weight(rng.standard_normal((cout, 2, 3, 3)).astype(np.float32), 0, 0.0, None)
    b.nodes.append(helper.make_node("Conv", [x, w], ["c"], group=group,
                                    strides=[stride, stride], pads=[pad] * 4))
    y = b.activation("c", activation, (-0.5, 1.5))
    if y_scale is not None:
        y = b.qdq(y, y_scale, int(rng.integers(0, 256)))
    b.nodes.append(helper.make_node("Identity", [y], ["y"]))
    size = (7 + 2 * pad - 3) // stride + 1
    return b.model([helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin, 7, 7])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                                  [1, cout, size, size])])


@pytest.mark.parametrize("seed", range(6))
def test_random_qdq_convs_keep_their_results(seed):
    """Groups, strides, pads, Relu/Clip and the float form on random parameters: the
    recognised integer conv gives the float QDQ graph's values within one output quantum
    (f32 rounding for the float form)."""
    rng = np.random.default_rng(seed)
    group = 1 + seed % 2
    y_scale = float(rng.uniform(0.02, 0.1)) if seed < 4 else None
    activation = [None, "Relu", "Clip"][seed % 3] if y_scale is not None else None
    model = _random_conv_model(rng, group, stride=1 + seed % 2, pad=seed % 2,
                               activation=activation, y_scale=y_scale)
    module = onnxc.import_onnx(model)
    after = module.clone()
    apply_pipeline(after, "fuse-qdq-linear")
    counts = op_counts(after)
    assert "graph.qlinear_conv" in counts and "graph.conv" not in counts
    if y_scale is not None:  # the activation became the op's output bounds
        assert "graph.relu" not in counts and "graph.clip" not in counts
    x = (rng.standard_normal((1, 2 * group, 7, 7)) * 2).astype(np.float32)
    (expected,) = _evaluate(module, [x])
    (actual,) = _evaluate(after, [x])
    if y_scale is None:
        np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5)
    else:
        assert np.abs(actual - expected).max() <= np.float32(y_scale) * 1.001
        assert np.mean(actual == expected) > 0.9
