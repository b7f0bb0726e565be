"""assign-layout and fold-layout-converts: data in a layout, decisions, and numerics.

- to_physical / to_logical invert each other (plain, permuted and blocked layouts);
- every lit case of the two passes keeps its results under the numpy evaluator;
- decisions on imported models (how many conversions a ResNet-style block gets);
- the NHWC kernels (pools, concat, channel_shuffle, broadcasting elementwise with a re-laid
  constant) compiled natively, forced into NHWC with `assign-layout{everywhere=true}`,
  against onnxruntime at rtol 1e-4 / atol 1e-5;
- whole convolutional graphs through the default pipeline against onnxruntime.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from onnx import helper

import onnxc
from onnxc.passes.layout_fold import to_logical, to_physical
from onnxc.passes.verify_numerics import check_pass_equivalence
from onnxc.pipeline import make_context, run_passes
from tests.ir_helpers import parse_graph, split_lit_cases
from tests.single_op import graph_model

RTOL, ATOL = 1e-4, 1e-5
LIT = Path(__file__).parents[1] / "lit" / "passes"
NHWC = '#layout.spec<"NHWC">'
FORCE = "assign-layout{everywhere=true}"
rng = np.random.default_rng(7)


def _model(nodes, inputs, outputs, inits=None, opset=20):
    """float inputs ((name, shape) pairs) and outputs (names), IR version 8."""
    return graph_model(nodes, {n: (np.float32, s) for n, s in inputs},
                       {n: (np.float32, None) for n in outputs}, initializers=inits,
                       opset=opset, ir_version=8)


def _laid_out(model, pass_pipeline=None) -> str:
    """The graph IR after the graph passes and the layout decisions."""
    module = onnxc.optimize(model, pass_pipeline=pass_pipeline)
    run_passes(make_context(), module, "assign-layout,fold-layout-converts")
    return str(module)


def _compare(model, feeds, pass_pipeline=None):
    """Compile `model` (default pipeline, or `pass_pipeline` as the graph passes), compare
    with onnxruntime, and return the laid-out graph IR the kernels were built from."""
    ir = _laid_out(model, pass_pipeline)
    assert NHWC in ir, ir
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, feeds)
    actual = onnxc.compile(model, pass_pipeline=pass_pipeline, cache_dir=False).run(None, feeds)
    for e, a in zip(expected, actual, strict=True):
        np.testing.assert_allclose(a, e, rtol=RTOL, atol=ATOL)
    return ir


# --------------------------------------------------------------------------- data in a layout


@pytest.mark.parametrize("spec", ["NHWC", "NCHW", "NCHW16c", "NHWC8c"])
def test_physical_round_trip(spec):
    a = rng.standard_normal((2, 20, 3, 5)).astype(np.float32)
    p = to_physical(a, spec)
    if spec == "NHWC":
        assert p.shape == (2, 3, 5, 20) and p[1, 2, 4, 19] == a[1, 19, 2, 4]
    if spec == "NCHW16c":
        assert p.shape == (2, 2, 3, 5, 16) and p[0, 1, 2, 3, 3] == a[0, 19, 2, 3]
        assert not p[0, 1, :, :, 4:].any()  # channels 20..31 are zero padding
    np.testing.assert_array_equal(to_logical(p.reshape(-1), a.shape, spec), a)


# --------------------------------------------------------------------------- pass numerics


@pytest.mark.parametrize("row, spec", [
    ("assign-layout", "assign-layout{vector-bits=512}"),
    ("assign-layout", "assign-layout{vector-bits=512 everywhere=true},fold-layout-converts"),
    ("fold-layout-converts", "fold-layout-converts"),
])
def test_lit_cases_keep_their_results(row, spec):
    changed = 0
    for case in split_lit_cases(LIT / f"{row}.mlir"):
        module = parse_graph(case)
        after = check_pass_equivalence(module, spec)
        changed += str(after) != str(module)
    assert changed >= 3


def test_assign_layout_is_idempotent():
    for case in split_lit_cases(LIT / "assign-layout.mlir"):
        once = check_pass_equivalence(parse_graph(case), "assign-layout{vector-bits=512}")
        twice = check_pass_equivalence(once, "assign-layout{vector-bits=512}")
        assert str(twice) == str(once)


# --------------------------------------------------------------------------- decisions


def _resnet_block(pool="MaxPool"):
    c = 8
    inits = {
        "w0": rng.standard_normal((c, 3, 3, 3)).astype(np.float32) * 0.3,
        "b0": rng.standard_normal(c).astype(np.float32) * 0.1,
        "w1": rng.standard_normal((c, c, 3, 3)).astype(np.float32) * 0.2,
        "wg": rng.standard_normal((10, c * 4 * 4 if pool == "MaxPool" else c)).astype(np.float32),
        "bg": rng.standard_normal(10).astype(np.float32),
    }
    pool_node = (helper.make_node("MaxPool", ["r1"], ["p"], kernel_shape=[3, 3], strides=[2, 2],
                                  pads=[1, 1, 1, 1]) if pool == "MaxPool"
                 else helper.make_node("GlobalAveragePool", ["r1"], ["p"]))
    nodes = [
        helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c0"], ["r0"]),
        helper.make_node("Conv", ["r0", "w1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c1", "r0"], ["a"]),
        helper.make_node("Relu", ["a"], ["r1"]),
        pool_node,
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "wg", "bg"], ["y"], transB=1),
    ]
    return _model(nodes, [("x", [1, 3, 8, 8])], ["y"], inits)


@pytest.mark.parametrize("opt_level", [0, 3])
def test_resnet_block_converts_twice(opt_level):
    module = onnxc.optimize(_resnet_block(), opt_level=opt_level)
    run_passes(make_context(), module, "assign-layout{vector-bits=512},fold-layout-converts")
    text = str(module)
    assert text.count("layout.convert") == 2, text
    assert text.count(f"-> tensor<1x8x4x4xf32, {NHWC}>") >= 1  # the pool runs in NHWC


def test_global_pool_leaves_nhwc_for_free():
    module = onnxc.optimize(_resnet_block("GlobalAveragePool"), opt_level=0)
    run_passes(make_context(), module, "assign-layout{vector-bits=512},fold-layout-converts")
    text = str(module)
    assert text.count("layout.convert") == 1, text  # only the input; the way out is a view
    assert f"graph.reshape(%p) : (tensor<1x8x1x1xf32, {NHWC}>) -> tensor<1x8x1x1xf32>" in text


# --------------------------------------------------------------------------- NHWC kernels


POOLS = [
    # op, kernel, strides, pads, extra attributes
    ("MaxPool", [3, 3], [2, 2], [1, 1, 1, 1], {}),
    ("MaxPool", [2, 2], [2, 2], [0, 0, 0, 0], {"ceil_mode": 1}),
    ("MaxPool", [2, 2], [1, 1], [1, 0, 0, 1], {"dilations": [2, 2]}),
    ("AveragePool", [3, 3], [2, 2], [1, 1, 1, 1], {"count_include_pad": 0}),
    ("AveragePool", [3, 3], [1, 1], [1, 0, 1, 1], {"count_include_pad": 1}),
    ("AveragePool", [2, 2], [2, 2], [0, 0, 0, 0], {}),
    ("AveragePool", [3, 3], [2, 2], [1, 1, 1, 1], {"ceil_mode": 1, "count_include_pad": 1}),
    ("AveragePool", [3, 3], [2, 1], [1, 2, 1, 0],
     {"dilations": [2, 3], "ceil_mode": 1, "count_include_pad": 1}),
]


@pytest.mark.parametrize("channels", [5, 83])  # only scalars; 4 + 1 vectors and a tail
@pytest.mark.parametrize("pool", POOLS, ids=lambda p: f"{p[0]}-k{p[1][0]}s{p[2][0]}-{p[4]}")
def test_nhwc_pool(pool, channels):
    op, kernel, strides, pads, extra = pool
    node = helper.make_node(op, ["x"], ["y"], kernel_shape=kernel, strides=strides, pads=pads,
                            **extra)
    x = rng.standard_normal((2, channels, 9, 7)).astype(np.float32)
    ir = _compare(_model([node], [("x", list(x.shape))], ["y"]), {"x": x}, FORCE)
    assert f"{op.lower().replace('pool', '_pool')}" in ir


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
@pytest.mark.parametrize("channels", [7, 100])
def test_nhwc_global_pool(op, channels):
    nodes = [helper.make_node(op, ["x"], ["g"]), helper.make_node("Flatten", ["g"], ["y"])]
    x = rng.standard_normal((2, channels, 5, 6)).astype(np.float32)
    ir = _compare(_model(nodes, [("x", list(x.shape))], ["y"]), {"x": x}, FORCE)
    assert ir.count("layout.convert") == 1  # the result leaves NHWC as a view


def test_nhwc_concat_and_broadcast_constant():
    bias = rng.standard_normal((6, 1, 1)).astype(np.float32)
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Add", ["r", "bias"], ["a"]),
        helper.make_node("Concat", ["a", "z"], ["c"], axis=1),
        helper.make_node("MaxPool", ["c"], ["y"], kernel_shape=[2, 2], strides=[2, 2]),
    ]
    x = rng.standard_normal((1, 6, 4, 6)).astype(np.float32)
    z = rng.standard_normal((1, 21, 4, 6)).astype(np.float32)
    ir = _compare(_model(nodes, [("x", [1, 6, 4, 6]), ("z", [1, 21, 4, 6])], ["y"],
                         {"bias": bias}), {"x": x, "z": z}, FORCE)
    assert f"tensor<1x6x1x1xf32, {NHWC}>" in ir  # the bias, re-laid at compile time
    assert f"-> tensor<1x27x4x6xf32, {NHWC}>" in ir


def test_nhwc_split():
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Split", ["r", "sizes"], ["a", "b"], axis=1),
        helper.make_node("MaxPool", ["a"], ["y"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Sigmoid", ["b"], ["z"]),
    ]
    x = rng.standard_normal((2, 29, 4, 6)).astype(np.float32)
    model = _model(nodes, [("x", [2, 29, 4, 6])], ["y", "z"],
                   {"sizes": np.array([11, 18], np.int64)})
    ir = _compare(model, {"x": x}, "fold-axes-inputs," + FORCE)
    assert f"tensor<2x18x4x6xf32, {NHWC}>)" in ir  # the split's second result


def test_nhwc_slice():
    """A Slice of an NHWC value (steps, a negative start, the channel axis among the axes)
    runs in NHWC: the atrous convs' live regions (split-conv-live-regions) no longer convert
    to plain and back (DeepLabV3's head: 10% of its time)."""
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Slice", ["r", "starts", "ends", "axes", "steps"], ["s"]),
        helper.make_node("MaxPool", ["s"], ["y"], kernel_shape=[2, 2], strides=[1, 1]),
    ]
    inits = {"starts": np.array([1, -6, 1], np.int64), "ends": np.array([9, 7, 12], np.int64),
             "axes": np.array([1, 2, 3], np.int64), "steps": np.array([2, 1, 3], np.int64)}
    x = rng.standard_normal((2, 11, 7, 13)).astype(np.float32)
    ir = _compare(_model(nodes, [("x", [2, 11, 7, 13])], ["y"], inits), {"x": x},
                  "fold-axes-inputs," + FORCE)
    assert f"-> tensor<2x4x6x4xf32, {NHWC}>" in ir  # the slice's result, NHWC
    assert ir.count("layout.convert") == 2, ir


def test_nhwc_channel_shuffle():
    n, g, k, h, w = 1, 3, 4, 5, 3
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Reshape", ["r", "s1"], ["a"]),
        helper.make_node("Transpose", ["a"], ["t"], perm=[0, 2, 1, 3, 4]),
        helper.make_node("Reshape", ["t", "s2"], ["y"]),
    ]
    inits = {"s1": np.array([n, g, k, h, w], np.int64), "s2": np.array([n, g * k, h, w], np.int64)}
    model = _model(nodes, [("x", [n, g * k, h, w])], ["y"], inits)
    x = rng.standard_normal((n, g * k, h, w)).astype(np.float32)
    ir = _compare(model, {"x": x}, "fold-constant-ops,fold-axes-inputs,shuffle-channel," + FORCE)
    assert "graph.channel_shuffle" in ir and f"-> tensor<1x12x5x3xf32, {NHWC}>" in ir


@pytest.mark.parametrize("shape", [(1, 3, 37, 45), (2, 20, 17, 5), (1, 40, 9, 9)])
def test_layout_converts_on_two_threads(shape):
    """The conversions in and out of NHWC split their outermost loop of more than one trip
    between threads (the batch, the 16-row strips, or, for a 3-channel input, the tiles):
    equal to one thread's bit for bit."""
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("MaxPool", ["r"], ["y"], kernel_shape=[2, 2], strides=[1, 1])]
    model = _model(nodes, [("x", list(shape))], ["y"])
    x = rng.standard_normal(shape).astype(np.float32)
    ir = _compare(model, {"x": x}, FORCE)
    assert ir.count("layout.convert") == 2
    one, two = (onnxc.compile(model, pass_pipeline=FORCE, cache_dir=False, num_threads=t)
                .run(None, {"x": x})[0] for t in (1, 2))
    np.testing.assert_array_equal(one, two)


# --------------------------------------------------------------------------- whole graphs


def test_resnet_block_default_pipeline():
    pytest.importorskip("onnxc.lowering.graph_to_loops.conv_nhwc")
    x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
    _compare(_resnet_block(), {"x": x})
    _compare(_resnet_block("GlobalAveragePool"), {"x": x})


def _convnext_blocks(n=2, c=16, hw=6):
    """ConvNeXt's blocks as torchvision exports them: depthwise 7x7 conv, permute to
    channels-last, LayerNorm, Linear (MatMul + Add), Gelu, Linear, layer scale, permute
    back, residual Add; `n` blocks, then a stride-2 conv."""
    inits, nodes, x = {}, [], "x"
    for i in range(n):
        inits.update({
            f"dw{i}": rng.standard_normal((c, 1, 7, 7)).astype(np.float32) * 0.2,
            f"g{i}": rng.standard_normal(c).astype(np.float32),
            f"be{i}": rng.standard_normal(c).astype(np.float32),
            f"w1_{i}": rng.standard_normal((c, 4 * c)).astype(np.float32) * 0.25,
            f"b1_{i}": rng.standard_normal(4 * c).astype(np.float32),
            f"w2_{i}": rng.standard_normal((4 * c, c)).astype(np.float32) * 0.1,
            f"s{i}": rng.standard_normal((1, 1, 1, c)).astype(np.float32),
        })
        nodes += [
            helper.make_node("Conv", [x, f"dw{i}"], [f"d{i}"], pads=[3, 3, 3, 3], group=c),
            helper.make_node("Transpose", [f"d{i}"], [f"t{i}"], perm=[0, 2, 3, 1]),
            helper.make_node("LayerNormalization", [f"t{i}", f"g{i}", f"be{i}"], [f"n{i}"],
                             axis=-1, epsilon=1e-6),
            helper.make_node("MatMul", [f"n{i}", f"w1_{i}"], [f"m{i}"]),
            helper.make_node("Add", [f"m{i}", f"b1_{i}"], [f"a{i}"]),
            helper.make_node("Gelu", [f"a{i}"], [f"e{i}"]),
            helper.make_node("MatMul", [f"e{i}", f"w2_{i}"], [f"o{i}"]),
            helper.make_node("Mul", [f"o{i}", f"s{i}"], [f"l{i}"]),
            helper.make_node("Transpose", [f"l{i}"], [f"u{i}"], perm=[0, 3, 1, 2]),
            helper.make_node("Add", [f"u{i}", x], [f"r{i}"]),
        ]
        x = f"r{i}"
    inits["wd"] = rng.standard_normal((2 * c, c, 2, 2)).astype(np.float32) * 0.2
    nodes.append(helper.make_node("Conv", [x, "wd"], ["y"], strides=[2, 2]))
    return _model(nodes, [("x", [1, c, hw, hw])], ["y"], inits)


def test_convnext_permutes_are_views():
    """ConvNeXt's permutes around its channels-last work read and write no memory: the one
    after each conv is a view of the conv's NHWC output, the one back starts NHWC, and the
    residual Adds and the next convs take it as it is. The only conversions left are the
    model input's and output's; the results match onnxruntime."""
    pytest.importorskip("onnxc.lowering.graph_to_loops.conv_nhwc")
    model = _convnext_blocks()
    x = rng.standard_normal((1, 16, 6, 6)).astype(np.float32)
    ir = _compare(model, {"x": x})
    assert ir.count("layout.convert") == 2, ir
    assert ir.count("= graph.transpose") == 4, ir
    from onnxc.dialects.graph import TransposeOp
    module = onnxc.optimize(model, opt_level=3)
    run_passes(make_context(), module, "assign-layout{vector-bits=512},fold-layout-converts")
    transposes = [op for op in module.walk() if isinstance(op, TransposeOp)]
    assert len(transposes) == 4 and all(op.is_view() for op in transposes)
