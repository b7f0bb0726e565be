"""fuse-pointwise-depthwise and the depth-first kernel of graph.pointwise_depthwise.

A MobileNet block's 1x1 expansion and depthwise conv, written as torchvision exports them
(Conv -> Clip(0, 6) -> grouped Conv -> Clip), compiled by onnxc.compile as users do. The
fused kernel is checked against onnxruntime (rtol 1e-4, atol 1e-5 * sqrt(taps + C): the
NHWC conv tests' bound, for the two sums in a row), against the unfused kernels bit for bit
(it computes the same sums in the same order), at one and two threads, cold and warm.
"""

from __future__ import annotations

import json

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.parser import Parser

import onnxc
from onnxc.errors import LoweringError
from onnxc.frontend.onnx_export import export_onnx
from onnxc.passes import depthwise_fusion
from onnxc.passes.evaluator import evaluate
from onnxc.passes.levels import level_passes
from onnxc.pipeline import graph_to_loops, import_onnx, make_context, run_passes
from onnxc.target import parse_target, set_module_target

RNG = np.random.default_rng(36)


def block(cin: int, c1: int, hw: tuple[int, int], *, k: int = 3, stride: int = 1,
          pads: int | None = None, n: int = 1, act: str | None = "Clip"):
    """x -> Conv 1x1 (c1) -> act -> depthwise Conv k x k -> act -> y, seeded weights."""
    pads = k // 2 if pads is None else pads
    w1 = (RNG.standard_normal((c1, cin, 1, 1)) / np.sqrt(cin)).astype(np.float32)
    w2 = (RNG.standard_normal((c1, 1, k, k)) / k).astype(np.float32)
    inits = [numpy_helper.from_array(a, name) for a, name in [
        (w1, "w1"), (RNG.standard_normal(c1).astype(np.float32), "b1"),
        (w2, "w2"), (RNG.standard_normal(c1).astype(np.float32), "b2"),
        (np.array(0, np.float32), "lo"), (np.array(6, np.float32), "hi")]]

    def activation(x: str, y: str) -> list:
        if act is None:
            return [helper.make_node("Identity", [x], [y])]
        extra = ["lo", "hi"] if act == "Clip" else []
        return [helper.make_node(act, [x, *extra], [y])]

    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["e"]), *activation("e", "r"),
             helper.make_node("Conv", ["r", "w2", "b2"], ["d"], group=c1, kernel_shape=[k, k],
                              strides=[stride, stride], pads=[pads] * 4),
             *activation("d", "y")]
    graph = helper.make_graph(
        nodes, "block", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                       [n, cin, *hw])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def onnxruntime_result(model, x: np.ndarray) -> np.ndarray:
    session = onnxruntime.InferenceSession(model.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


def compiled_ops(model, **options) -> tuple[onnxc.CompiledModel, set[str]]:
    compiled = onnxc.compile(model, profile=True, **options)
    return compiled, {row.op for row in compiled.profile().rows}


def input_of(model) -> np.ndarray:
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    return RNG.standard_normal(shape).astype(np.float32)


CASES = {
    # MobileNetV2's stride-2 block (112 -> 56 at full size), its stride-1 block
    "stride2": {"cin": 16, "c1": 96, "hw": (56, 56), "stride": 2},
    "stride1": {"cin": 24, "c1": 144, "hw": (40, 40)},
    # odd sizes (border pixels on both sides of both strides' rows), a 5x5 window
    # (MnasNet, EfficientNet), no pads, batch 2, no activations, Relu
    "odd_sizes": {"cin": 16, "c1": 96, "hw": (57, 53), "stride": 2},
    "kernel5": {"cin": 20, "c1": 120, "hw": (36, 34), "k": 5},
    "unpadded": {"cin": 16, "c1": 96, "hw": (54, 54), "pads": 0},
    "batch2": {"cin": 32, "c1": 160, "hw": (30, 30), "n": 2},
    "no_activation": {"cin": 24, "c1": 144, "hw": (40, 40), "act": None},
    "relu_stride2": {"cin": 24, "c1": 144, "hw": (41, 41), "stride": 2, "act": "Relu"},
    # MnasNet's 72 expanded channels: 4 vectors and a half with AVX-512
    "channel_tail": {"cin": 24, "c1": 72, "hw": (56, 56)},
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_fused_block_matches_onnxruntime(case):
    model = block(**CASES[case])
    x = input_of(model)
    compiled, ops = compiled_ops(model, cache_dir=False)
    assert "graph.pointwise_depthwise" in ops and "graph.conv" not in ops
    k = CASES[case].get("k", 3)
    np.testing.assert_allclose(compiled.run(None, {"x": x})[0], onnxruntime_result(model, x),
                               rtol=1e-4, atol=1e-5 * np.sqrt(k * k + CASES[case]["cin"]))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", ["stride2", "odd_sizes", "batch2"])
def test_fused_equals_unfused_bit_for_bit(case, threads, monkeypatch):
    model = block(**CASES[case])
    x = input_of(model)
    fused = onnxc.compile(model, num_threads=threads, cache_dir=False)
    monkeypatch.setattr(depthwise_fusion.FusePointwiseDepthwisePass, "rewrite_patterns",
                        lambda self: [])
    unfused_model, ops = compiled_ops(model, num_threads=threads, cache_dir=False)
    assert "graph.pointwise_depthwise" not in ops
    np.testing.assert_array_equal(fused.run(None, {"x": x})[0],
                                  unfused_model.run(None, {"x": x})[0])


def test_a_second_compile_is_a_cache_hit_with_the_same_results(tmp_path):
    model = block(**CASES["stride1"])
    x = input_of(model)
    cold = onnxc.compile(model, cache_dir=tmp_path)
    warm = onnxc.compile(model, cache_dir=tmp_path)
    assert not cold.from_cache and warm.from_cache
    np.testing.assert_array_equal(warm.run(None, {"x": x})[0], cold.run(None, {"x": x})[0])
    np.testing.assert_allclose(warm.run(None, {"x": x})[0], onnxruntime_result(model, x),
                               rtol=1e-4, atol=1e-5 * np.sqrt(9 + 24))


def test_an_expansion_that_fits_the_cache_is_not_fused():
    """28 x 28 x 64 floats (196 KiB) is below MIN_BYTES: the two convs stay."""
    _, ops = compiled_ops(block(cin=16, c1=64, hw=(28, 28)), cache_dir=False)
    assert "graph.pointwise_depthwise" not in ops and "graph.conv" in ops


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_bf16_convs_are_not_fused(precision):
    """precision="bf16" marks the 1x1 conv for the bf16 implicit GEMM first (the passes
    before convert-graph-to-loops, on any host)."""
    module = import_onnx(block(**CASES["stride1"]))
    set_module_target(module, parse_target("x86_64-unknown-linux-gnu:sapphirerapids"))
    passes = [*level_passes(3), *graph_to_loops(precision)]
    run_passes(make_context(), module, passes[:passes.index("convert-graph-to-loops")])
    fused = [o.name for o in module.walk() if o.name == "graph.pointwise_depthwise"]
    assert fused == ([] if precision == "bf16" else ["graph.pointwise_depthwise"])


def _dense(a: np.ndarray) -> str:
    return f"dense<{json.dumps(np.round(a, 3).tolist())}> : tensor<{'x'.join(map(str, a.shape))}xf32>"


def _plain_fused_module():
    """A plain-layout graph.pointwise_depthwise with seeded constants, and the arrays."""
    w1, b1 = RNG.standard_normal((8, 4, 1, 1)), RNG.standard_normal(8)
    w2, b2 = RNG.standard_normal((8, 1, 3, 3)), RNG.standard_normal(8)
    arrays = {name: np.round(a, 3).astype(np.float32)
              for name, a in [("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2)]}
    constants = "\n".join(f"  %{name} = graph.constant {{value = {_dense(a)}}} : "
                          f"tensor<{'x'.join(map(str, a.shape))}xf32>"
                          for name, a in arrays.items())
    text = f"""func.func @main(%x: tensor<1x4x9x7xf32>) -> tensor<1x8x5x4xf32> {{
{constants}
  %y = graph.pointwise_depthwise(%x, %w1, %b1, %w2, %b2) {{strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, activation = "relu", pointwise_activation = "clip", pointwise_activation_alpha = 0.0 : f32, pointwise_activation_beta = 6.0 : f32}} : (tensor<1x4x9x7xf32>, tensor<8x4x1x1xf32>, tensor<8xf32>, tensor<8x1x3x3xf32>, tensor<8xf32>) -> tensor<1x8x5x4xf32>
  func.return %y : tensor<1x8x5x4xf32>
}}"""
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module, arrays


def test_a_plain_layout_fused_op_is_refused_by_name():
    """Its kernel takes NHWC only (fuse-pointwise-depthwise runs after assign-layout): a
    hand-written plain one is a LoweringError naming the op, not a wrong result."""
    module, _ = _plain_fused_module()
    with pytest.raises(LoweringError, match="graph.pointwise_depthwise: its kernel takes NHWC"):
        run_passes(make_context(), module, "convert-graph-to-loops")


def test_evaluator_and_exporter_give_the_two_convs():
    """The numpy reference (passes/composite_reference.py) and the ONNX export (a local
    function of two Convs) of a plain-layout graph.pointwise_depthwise agree with
    onnxruntime on the unfused block."""
    module, arrays = _plain_fused_module()
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["e"]),
             helper.make_node("Clip", ["e", "lo", "hi"], ["r"]),
             helper.make_node("Conv", ["r", "w2", "b2"], ["d"], group=8, kernel_shape=[3, 3],
                              strides=[2, 2], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["d"], ["y"])]
    inits = [numpy_helper.from_array(a, name) for name, a in arrays.items()] + [
        numpy_helper.from_array(np.array(0, np.float32), "lo"),
        numpy_helper.from_array(np.array(6, np.float32), "hi")]
    reference_model = helper.make_model(helper.make_graph(
        nodes, "block", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 9, 7])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits),
        opset_imports=[helper.make_opsetid("", 17)])
    x = RNG.standard_normal((1, 4, 9, 7)).astype(np.float32)
    expected = onnxruntime_result(reference_model, x)
    np.testing.assert_allclose(evaluate(module, [x])[0], expected, rtol=1e-5, atol=1e-5)
    exported = export_onnx(module)
    assert any(f.name.startswith("PointwiseDepthwise") for f in exported.functions)
    np.testing.assert_allclose(onnxruntime_result(exported, x), expected, rtol=1e-5,
                               atol=1e-5)


@pytest.mark.parametrize("threads", [1, 2])
def test_torchvision_mobilenet_v3_export_at_a_fixed_size(threads, tmp_path):
    """torchvision's mobilenet_v3_large as torch.onnx (TorchScript) exports it with dynamic
    batch, height and width (tests/models/real_exports, seeded weights), compiled for
    1x3x224x224 as a user fixing its size would: its 112x112 expansions run fused, cold
    and then warm (a cache hit), and the logits match onnxruntime's."""
    from tests.models.real_exports import corpus

    model = corpus.load("mobilenet_v3_large_ts")
    feeds = corpus.feeds("mobilenet_v3_large_ts", "224x224")
    session = onnxruntime.InferenceSession(model.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    expected = session.run(None, feeds)[0]
    shapes = {"input": [1, 3, 224, 224]}
    for warm in (False, True):
        compiled, ops = compiled_ops(model, input_shapes=shapes, num_threads=threads,
                                     cache_dir=tmp_path)
        assert compiled.from_cache == warm
        assert "graph.pointwise_depthwise" in ops
        np.testing.assert_allclose(compiled.run(None, feeds)[0], expected, rtol=1e-4,
                                   atol=1e-4)
