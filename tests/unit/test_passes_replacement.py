"""Numeric equivalence of the operator-replacement rows (passes/replacement.py).

Each case runs one catalog row on a small graph with random constants, checks that it fired
and that the numpy evaluation is unchanged. The channel-shuffle kernel is also compiled
natively and compared with the Reshape + Transpose + Reshape it replaces.
"""

from __future__ import annotations

import numpy as np
import pytest

from onnxc.passes.verify_numerics import check_pass_equivalence
from tests.ir_helpers import const, conv_props, module, rand, tensor


def case_bn_to_scale(rng):
    xs, p = (2, 3, 4, 4), tensor((3,))
    body = [const("gamma", rand(rng, 3)), const("beta", rand(rng, 3)), const("mean", rand(rng, 3)),
            const("var", rand(rng, 3, low=0.5, high=2.0)),
            (f"  %y = graph.batch_normalization(%x, %gamma, %beta, %mean, %var) "
            f"{{epsilon = 1.0e-03 : f32}} : ({tensor(xs)}, {p}, {p}, {p}, {p}) -> {tensor(xs)}")]
    return module({"x": xs}, body, [("y", xs)]), "graph.batch_normalization"


def case_prelu(rng):
    t = tensor((2, 3, 4))
    s = float(rng.uniform(0.05, 0.5))
    body = [const("s", np.full((3, 1), s, np.float32)), const("z", np.float32(0.0)),
            f"  %0 = graph.prelu(%x, %s) : ({t}, {tensor((3, 1))}) -> {t}",
            f"  %r = graph.relu(%x) : ({t}) -> {t}",
            f"  %n = graph.min(%z, %x) : (tensor<f32>, {t}) -> {t}",
            f"  %m = graph.mul(%s, %n) : ({tensor((3, 1))}, {t}) -> {t}",
            f"  %1 = graph.add(%m, %r) : ({t}, {t}) -> {t}"]
    return module({"x": (2, 3, 4)}, body, [("0", (2, 3, 4)), ("1", (2, 3, 4))]), "graph.min"


def case_pool_conv(rng):
    xs, ps, ws, ys = (2, 6, 5, 5), (2, 6, 1, 1), (4, 6, 1, 1), (2, 4, 1, 1)
    body = [const("w", rand(rng, *ws)), const("b", rand(rng, 4)),
            f"  %p = graph.global_average_pool(%x) : ({tensor(xs)}) -> {tensor(ps)}",
            (f"  %y = graph.conv(%p, %w, %b) {conv_props()} : ({tensor(ps)}, {tensor(ws)}, "
            f"{tensor((4,))}) -> {tensor(ys)}")]
    return module({"x": xs}, body, [("y", ys)]), "graph.conv"


def shuffle_body(n=1, c=6, g=3, h=2, w=3):
    xs, split, perm = (n, c, h, w), (n, g, c // g, h, w), (n, c // g, g, h, w)
    return xs, [
        f"  %0 = graph.reshape(%x) : ({tensor(xs)}) -> {tensor(split)}",
        (f"  %1 = graph.transpose(%0) {{perm = array<i64: 0, 2, 1, 3, 4>}} : ({tensor(split)}) -> "
        f"{tensor(perm)}"),
        f"  %2 = graph.reshape(%1) : ({tensor(perm)}) -> {tensor(xs)}"]


def case_shuffle(rng):
    xs, body = shuffle_body()
    return module({"x": xs}, body, [("2", xs)]), "graph.transpose"


def case_padding_taps(rng):
    xs, ws = (1, 2, 6, 6), (3, 2, 3, 3)
    body = [const("w", rand(rng, *ws)),
            (f"  %y = graph.conv(%x, %w) {{strides = array<i64: 1, 1>, pads = array<i64: 8, 8, "
             f"8, 8>, dilations = array<i64: 8, 8>, group = 1 : i64}} : ({tensor(xs)}, "
             f"{tensor(ws)}) -> {tensor((1, 3, 6, 6))}")]
    return module({"x": xs}, body, [("y", (1, 3, 6, 6))]), "tensor<3x2x3x3xf32>"


def case_live_regions(rng):
    xs, ws = (1, 2, 6, 6), (3, 2, 3, 3)
    body = [const("w", rand(rng, *ws)),
            (f"  %y = graph.conv(%x, %w) {{strides = array<i64: 1, 1>, pads = array<i64: 4, 4, "
             f"4, 4>, dilations = array<i64: 4, 4>, group = 1 : i64}} : ({tensor(xs)}, "
             f"{tensor(ws)}) -> {tensor((1, 3, 6, 6))}")]
    return module({"x": xs}, body, [("y", (1, 3, 6, 6))]), "tensor<3x2x3x3xf32>"


def case_pad(rng):
    xs, ps, ws, ys = (1, 2, 5, 5), (1, 2, 7, 6), (3, 2, 3, 3), (1, 3, 5, 6)
    body = [const("w", rand(rng, *ws)),
            (f"  %p = graph.pad(%x) {{pads = array<i64: 0, 0, 1, 0, 0, 0, 1, 1>, mode = \"constant\","
            f" value = 0.0 : f32}} : ({tensor(xs)}) -> {tensor(ps)}"),
            (f"  %y = graph.conv(%p, %w) {conv_props(pads=(0, 1, 0, 1))} : ({tensor(ps)}, "
            f"{tensor(ws)}) -> {tensor(ys)}")]
    return module({"x": xs}, body, [("y", ys)]), "graph.pad"


CASES = {
    "bn-to-scale": case_bn_to_scale,
    "prelu-to-leakyrelu": case_prelu,
    "conv-after-global-pool-to-gemm": case_pool_conv,
    "shuffle-channel": case_shuffle,
    "pad-to-input": case_pad,
    "drop-padding-taps": case_padding_taps,
    "split-conv-live-regions": case_live_regions,
}


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("row", sorted(CASES))
def test_replacement_preserves_numerics(row: str, seed: int):
    module_, gone = CASES[row](np.random.default_rng(seed))
    after = check_pass_equivalence(module_, row, seed=seed)
    assert gone not in str(after), f"{row} did not fire:\n{after}"


def test_channel_shuffle_kernel_matches_numpy():
    """The native channel_shuffle kernel against numpy's reshape/transpose."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    import onnxc

    n, c, g, h, w = 1, 12, 3, 4, 5
    nodes = [
        helper.make_node("Reshape", ["x", "s1"], ["r"]),
        helper.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 1, 3, 4]),
        helper.make_node("Reshape", ["t", "s2"], ["y"]),
    ]
    inits = [numpy_helper.from_array(np.array([n, g, c // g, h, w], np.int64), "s1"),
             numpy_helper.from_array(np.array([n, c, h, w], np.int64), "s2")]
    graph_ = helper.make_graph(
        nodes, "shuffle", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, c, h, w])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, c, h, w])], inits)
    model = helper.make_model(graph_, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    optimized = onnxc.optimize(model, pass_pipeline="shuffle-channel")
    assert "graph.channel_shuffle" in str(optimized)
    compiled = onnxc.compile(model, pass_pipeline="shuffle-channel")
    x = np.random.default_rng(0).standard_normal((n, c, h, w)).astype(np.float32)
    expected = x.reshape(n, g, c // g, h, w).transpose(0, 2, 1, 3, 4).reshape(n, c, h, w)
    np.testing.assert_array_equal(compiled(x)[0], expected)


REGIONS_AT_12 = [(2, 2), (2, 1), (2, 2), (1, 2), (1, 1), (1, 2), (2, 2), (2, 1), (2, 2)]
"""Dilation 12 on 14 rows: rows 0-1 read kernel rows 1-2, rows 2-11 row 1, rows 12-13 rows
0-1 (the same for columns): nine region convs (split-conv-live-regions)."""


@pytest.mark.parametrize("dilation, kept", [(24, [(1, 1)]), (36, [(1, 1)]), (12, REGIONS_AT_12)])
def test_dilated_conv_on_a_small_map_keeps_only_live_taps(dilation, kept, tmp_path):
    """DeepLabV3's ASPP branches (3x3, dilation 12/24/36, 14x14 map), compiled, against
    onnxruntime (rtol 1e-4 / atol 1e-5), cold and then warm from the compile cache: at 24 and
    36 only the center tap reads the input (drop-padding-taps); at 12 each region of the
    output computes only its live taps (split-conv-live-regions)."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    import onnxc

    rng = np.random.default_rng(dilation)
    weight = numpy_helper.from_array((rng.standard_normal((8, 8, 3, 3)) * 0.1).astype(np.float32),
                                     "w")
    node = helper.make_node("Conv", ["x", "w"], ["y"], dilations=[dilation] * 2,
                            pads=[dilation] * 4, kernel_shape=[3, 3])
    graph_ = helper.make_graph(
        [node], "aspp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 14, 14])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 14, 14])], [weight])
    model = helper.make_model(graph_, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    convs = [op for op in onnxc.optimize(model, opt_level=1).walk() if op.name == "graph.conv"]
    assert [tuple(op.weight.type.get_shape()[2:]) for op in convs] == kept
    x = rng.standard_normal((1, 8, 14, 14)).astype(np.float32)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, {"x": x})[0]
    cold = onnxc.compile(model, cache_dir=tmp_path)
    np.testing.assert_allclose(cold(x)[0], expected, rtol=1e-4, atol=1e-5)
    warm = onnxc.compile(model, cache_dir=tmp_path)
    assert warm.from_cache
    np.testing.assert_array_equal(warm(x)[0], cold(x)[0])


def test_a_region_reading_the_whole_input_leaves_no_stray_slice():
    """A region whose taps read the whole input takes it unsliced, and no slice built for it
    is left out of the IR still using the input: fusing the input's producers afterwards
    (which revisits every user of their results) crashed on such a slice in DeepLabV3."""
    from onnxc.pipeline import make_context, run_passes
    from tests.ir_helpers import parse_graph

    text = """func.func @main(%a: tensor<1x1x5x2xf32>) -> tensor<1x1x5x2xf32> {
  %one = graph.constant {value = dense<1.0> : tensor<1x1x5x2xf32>} : tensor<1x1x5x2xf32>
  %s = graph.add(%a, %one) : (tensor<1x1x5x2xf32>, tensor<1x1x5x2xf32>) -> tensor<1x1x5x2xf32>
  %x = graph.relu(%s) : (tensor<1x1x5x2xf32>) -> tensor<1x1x5x2xf32>
  %w = graph.constant {value = dense<[[[[1.0], [2.0], [3.0]]]]> : tensor<1x1x3x1xf32>} : tensor<1x1x3x1xf32>
  %y = graph.conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 4, 0, 4, 0>, dilations = array<i64: 4, 1>, group = 1 : i64} : (tensor<1x1x5x2xf32>, tensor<1x1x3x1xf32>) -> tensor<1x1x5x2xf32>
  func.return %y : tensor<1x1x5x2xf32>
}
"""
    module = parse_graph(text)
    run_passes(make_context(), module, "split-conv-live-regions,fuse-elementwise")
    x = next(op for op in module.walk() if op.name == "graph.fused_elementwise").results[0]
    users = [use.operation for use in x.uses]
    assert all(user.parent is not None for user in users)
    assert sorted(user.name for user in users) == ["graph.conv", "graph.conv", "graph.slice"]
