"""The NHWC convolution kernels (conv_nhwc.py implicit GEMM, depthwise.py) compiled natively.

Each case is an ONNX Conv (with bias, Relu or a residual Add around it when asked), imported,
optimized at -O3 (so Conv+Relu and Conv+Add+Relu are fused into graph.conv / graph.conv_add),
then every conv is put in NHWC by hand (layout.convert in, NHWC conv, layout.convert back,
which is what the assign-layout pass produces) and the module goes through the normal
lowering and JIT. Results are compared with onnxruntime at rtol 1e-4, atol 1e-5 * sqrt(K)
(f32 sums of K products in another order). Shapes are small but hit the edge tiles: pixel
counts not a multiple of MR, Cout not a multiple of the vector width, K over several k-blocks.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.rewriter import InsertPoint, Rewriter

import onnxc
import onnxc.pipeline
from onnxc import pipeline
from onnxc.dialects import graph
from onnxc.dialects.layout import ConvertOp, layout_of, with_layout
from onnxc.dialects.onnxc_attributes import PARALLEL_ATTR
from onnxc.frontend import import_onnx
from onnxc.lowering.graph_to_loops import conv_nhwc
from onnxc.lowering.graph_to_loops.conv_nhwc import (
    block_plan,
    geometry,
    implicit_gemm_geometry,
    supports_nhwc,
)
from onnxc.lowering.graph_to_loops.conv_padded_input import padded_scratch
from onnxc.passes.levels import level_passes

RNG = np.random.default_rng(11)


def to_nhwc(module: ModuleOp) -> int:
    """Every conv that the NHWC kernels support gets NHWC input, residual and result, with
    layout.convert around it; returns how many were converted."""
    count = 0
    for op in list(module.walk()):
        if not isinstance(op, graph.ConvOp | graph.ConvAddOp) or not supports_nhwc(op):
            continue
        operands = list(op.operands)
        nhwc_operands = [0] + ([len(operands) - 1] if isinstance(op, graph.ConvAddOp) else [])
        for i in nhwc_operands:
            cvt = ConvertOp(operands[i], with_layout(operands[i].type, "NHWC"))
            Rewriter.insert_op(cvt, InsertPoint.before(op))
            operands[i] = cvt.output
        new = type(op).create(
            operands=operands, result_types=[with_layout(op.output.type, "NHWC")],
            properties=dict(op.properties), attributes=dict(op.attributes))
        back = ConvertOp(new.output, op.output.type)
        Rewriter.replace_op(op, [new, back], new_results=[back.output])
        count += 1
    return count


@contextmanager
def nhwc_compiler():
    """onnxc.compile, but the imported module is optimized and its convs put in NHWC."""
    original = onnxc.pipeline.import_onnx

    def importer(model):
        module = import_onnx(model)
        # -O3 but for drop-padding-taps, which would turn the padding-heavy cases the kernel
        # must handle (a 3x3 conv on a 1x1 plane) into 1x1 convs
        passes = [p for p in level_passes(3) if p != "drop-padding-taps"]
        pipeline.run_passes(pipeline.make_context(), module, passes)
        assert to_nhwc(module) > 0
        module.verify()
        return module

    onnxc.pipeline.import_onnx = importer
    try:
        yield lambda model: onnxc.compile(model, pass_pipeline="", cache_dir=False)
    finally:
        onnxc.pipeline.import_onnx = original


def conv_model(x_shape, w_shape, *, bias=True, act=None, z_shape=None, **attrs):
    """x -> Conv(w, b) [-> Add(z)] [-> act] -> y with constant weights."""
    w = (RNG.standard_normal(w_shape) / np.sqrt(np.prod(w_shape[1:]))).astype(np.float32)
    inits = [numpy_helper.from_array(w, "w")]
    ins = ["x", "w"]
    if bias:
        inits.append(numpy_helper.from_array(RNG.standard_normal(w_shape[0]).astype(np.float32),
                                             "b"))
        ins.append("b")
    nodes = [helper.make_node("Conv", ins, ["c"], **attrs)]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))]
    last = "c"
    if z_shape is not None:
        nodes.append(helper.make_node("Add", ["c", "z"], ["s"]))
        inputs.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, list(z_shape)))
        last = "s"
    if act is not None:
        nodes.append(helper.make_node(act, [last], ["r"]))
        last = "r"
    nodes.append(helper.make_node("Identity", [last], ["y"]))
    g = helper.make_graph(nodes, "conv", inputs,
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          initializer=inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def reference(model, feeds):
    session = onnxruntime.InferenceSession(model.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]


def check(x_shape, w_shape, *, residual=False, **kwargs):
    feeds = {"x": RNG.standard_normal(x_shape).astype(np.float32)}
    model = conv_model(x_shape, w_shape, **kwargs)
    if residual:
        z_shape = reference(model, feeds).shape
        model = conv_model(x_shape, w_shape, z_shape=z_shape, **kwargs)
        feeds["z"] = RNG.standard_normal(z_shape).astype(np.float32)
    expected = reference(model, feeds)
    with nhwc_compiler() as compile_nhwc:
        actual = compile_nhwc(model).run(None, feeds)[0]
    k = np.prod(w_shape[1:])
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5 * np.sqrt(k))


@pytest.mark.parametrize("x_shape,w_shape,attrs", [
    # ResNet-50 layer kinds, small planes
    ((1, 3, 23, 23), (16, 3, 7, 7), {"strides": [2, 2], "pads": [3, 3, 3, 3]}),
    ((1, 64, 7, 7), (64, 64, 1, 1), {}),
    ((1, 32, 9, 9), (32, 32, 3, 3), {"pads": [1, 1, 1, 1]}),
    ((1, 64, 9, 9), (48, 64, 1, 1), {"strides": [2, 2]}),
    # odd sizes: C=3, Cout=10 (a tail panel), 1x1 planes, 7x7 planes
    ((1, 3, 7, 7), (10, 3, 3, 3), {"pads": [1, 1, 1, 1]}),
    ((1, 5, 1, 1), (10, 5, 3, 3), {"pads": [1, 1, 1, 1]}),  # (a 1x1 one becomes a Gemm)
    ((1, 16, 7, 7), (40, 16, 3, 3), {"pads": [1, 1, 1, 1]}),
    # K over several k-blocks: kernel rows per block (C = 64, 5 rows: first, looped, last),
    # whole taps per block (Cg = 96), and channel chunks (Cg = 300)
    ((1, 64, 5, 5), (16, 64, 5, 3), {"pads": [2, 1, 2, 1]}),
    ((1, 96, 6, 6), (24, 96, 3, 3), {"pads": [1, 1, 1, 1]}),
    ((1, 300, 4, 5), (17, 300, 3, 3), {"pads": [1, 1, 1, 1]}),
    ((1, 512, 3, 3), (32, 512, 1, 1), {}),
    # dilation, asymmetric pads, non-square kernel and stride
    ((1, 8, 11, 11), (16, 8, 3, 3), {"dilations": [2, 2], "pads": [2, 2, 2, 2]}),
    ((1, 8, 10, 9), (12, 8, 3, 2), {"pads": [0, 1, 2, 0], "strides": [2, 1]}),
    # groups: ShuffleNet-style 1x1 with 3 groups (Cg = 8, Mg = 20), and 2 groups 3x3
    ((1, 24, 5, 5), (60, 8, 1, 1), {"group": 3}),
    ((1, 16, 6, 6), (32, 8, 3, 3), {"group": 2, "pads": [1, 1, 1, 1]}),
    # batch 2
    ((2, 16, 5, 5), (24, 16, 3, 3), {"pads": [1, 1, 1, 1], "strides": [2, 2]}),
    # padded grouped convs read one plane per group: RegNet's groups of 16 at stride 2,
    # groups of 4 channels (under a vector) in a batch of 2, a 5x3 kernel, asymmetric pads
    ((1, 64, 15, 15), (64, 16, 3, 3), {"group": 4, "pads": [1, 1, 1, 1], "strides": [2, 2]}),
    ((2, 24, 7, 9), (36, 4, 3, 3), {"group": 6, "pads": [1, 1, 1, 1]}),
    ((1, 40, 9, 8), (20, 8, 5, 3), {"group": 5, "pads": [2, 0, 1, 2], "strides": [1, 2]}),
])
def test_implicit_gemm(x_shape, w_shape, attrs):
    check(x_shape, w_shape, **attrs)


@pytest.mark.parametrize("x_shape,w_shape,attrs", [
    ((1, 64, 7, 7), (64, 64, 1, 1), {}),
    ((1, 16, 7, 7), (40, 16, 3, 3), {"pads": [1, 1, 1, 1]}),
    ((1, 24, 5, 5), (60, 8, 1, 1), {"group": 3}),
])
def test_implicit_gemm_without_bias(x_shape, w_shape, attrs):
    check(x_shape, w_shape, bias=False, **attrs)


@pytest.mark.parametrize("x_shape,w_shape,attrs", [
    ((1, 32, 9, 9), (32, 1, 3, 3), {"group": 32, "pads": [1, 1, 1, 1]}),
    ((1, 48, 10, 10), (48, 1, 3, 3), {"group": 48, "pads": [1, 1, 1, 1], "strides": [2, 2]}),
    ((2, 19, 7, 12), (19, 1, 3, 3), {"group": 19, "pads": [1, 1, 1, 1]}),  # channel tail
    ((1, 16, 11, 11), (16, 1, 5, 5), {"group": 16, "pads": [4, 4, 4, 4], "dilations": [2, 2]}),
    ((1, 16, 6, 6), (16, 1, 3, 3), {"group": 16}),  # no pads: input read in place
    # padded ones read in place too (depthwise_in_place), taps outside the input skipped:
    # asymmetric pads with stride 2 and 5x5, a map smaller than the kernel, pads on W only
    ((1, 48, 15, 15), (48, 1, 5, 5), {"group": 48, "pads": [2, 1, 2, 3], "strides": [2, 2]}),
    ((1, 16, 2, 2), (16, 1, 3, 3), {"group": 16, "pads": [1, 1, 1, 1]}),
    ((1, 24, 8, 9), (24, 1, 3, 3), {"group": 24, "pads": [0, 1, 0, 1]}),
])
def test_depthwise(x_shape, w_shape, attrs):
    check(x_shape, w_shape, act="Relu", **attrs)


def test_depthwise_in_place_equals_the_padded_copy(monkeypatch):
    """Reading in place skips exactly the products with padding, in the same order: the
    outputs are those of the zero-padded copy bit for bit."""
    from onnxc.lowering.graph_to_loops.conv_nhwc import ConvGeometry

    model = conv_model((2, 40, 13, 10), (40, 1, 3, 3), act="Relu", group=40,
                       pads=[1, 1, 1, 1], strides=[2, 1])
    feeds = {"x": RNG.standard_normal((2, 40, 13, 10)).astype(np.float32)}
    with nhwc_compiler() as compile_nhwc:
        in_place = compile_nhwc(model).run(None, feeds)[0]
        monkeypatch.setattr(ConvGeometry, "depthwise_in_place", property(lambda self: False))
        copied = compile_nhwc(model).run(None, feeds)[0]
    np.testing.assert_array_equal(in_place, copied)


@pytest.mark.parametrize("attrs", [{"pads": [1, 1, 1, 1], "strides": [2, 1]},
                                   {"pads": [2, 1, 2, 3], "strides": [2, 2]}])
def test_depthwise_pixel_major_equals_channel_major(monkeypatch, attrs):
    """The two loop orders (AVX2's pixel-major, the 32-register targets' channel-major with
    held weights) sum each output's taps in the same order: bit-identical on any host."""
    from onnxc.lowering.graph_to_loops import depthwise

    kernel = (3, 3) if attrs["strides"] == [2, 1] else (5, 5)
    model = conv_model((2, 43, 13, 10), (43, 1, *kernel), act="Relu", group=43, **attrs)
    feeds = {"x": RNG.standard_normal((2, 43, 13, 10)).astype(np.float32)}
    outputs = []
    with nhwc_compiler() as compile_nhwc:
        for registers in (1000, 0):  # every target pixel-major, then none
            monkeypatch.setattr(depthwise, "HELD_WEIGHT_REGISTERS", registers)
            outputs.append(compile_nhwc(model).run(None, feeds)[0])
    np.testing.assert_array_equal(*outputs)
    np.testing.assert_allclose(outputs[0], reference(model, feeds), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("channels,kernel,strides", [(72, 3, 1), (77, 5, 2), (44, 3, 2)])
def test_depthwise_channel_tail_in_narrower_vectors(monkeypatch, tmp_path, channels, kernel,
                                                    strides):
    """The channels after the last whole vector run as vectors of half and a quarter of its
    lanes, then lane by lane (MnasNet's 72: 64 + 8; 77: 64 + 8 + 4 + 1 with AVX-512): the
    same sums in the same order as all lane by lane, so bit-identical; a cache hit too."""
    from onnxc.lowering.graph_to_loops import depthwise
    from tests.models.cache_passes import compile_warm

    x_shape = (1, channels, 12, 11)
    model = conv_model(x_shape, (channels, 1, kernel, kernel), act="Relu", group=channels,
                       pads=[kernel // 2] * 4, strides=[strides, strides])
    feeds = {"x": RNG.standard_normal(x_shape).astype(np.float32)}
    outputs = []
    with nhwc_compiler() as compile_nhwc:
        for lanes in (depthwise.MIN_LANES, 1000):  # narrower vectors, then none
            monkeypatch.setattr(depthwise, "MIN_LANES", lanes)
            outputs.append(compile_nhwc(model).run(None, feeds)[0])
    np.testing.assert_array_equal(*outputs)
    np.testing.assert_allclose(outputs[0], reference(model, feeds), rtol=1e-4, atol=1e-4)
    monkeypatch.undo()
    warm = compile_warm(model, cache_dir=str(tmp_path)).run(None, feeds)[0]
    np.testing.assert_array_equal(warm, outputs[0])


@pytest.mark.parametrize("x_shape,w_shape,attrs", [
    ((1, 32, 7, 7), (32, 32, 3, 3), {"pads": [1, 1, 1, 1]}),
    ((2, 24, 5, 5), (40, 24, 1, 1), {}),  # a tail panel goes through the scalar epilogue
    ((1, 300, 5, 5), (21, 300, 3, 3), {"pads": [1, 1, 1, 1]}),  # looped k-blocks, tail panel
    ((1, 16, 6, 6), (16, 1, 3, 3), {"group": 16, "pads": [1, 1, 1, 1]}),
])
def test_conv_add_relu(x_shape, w_shape, attrs):
    check(x_shape, w_shape, act="Relu", residual=True, **attrs)


@pytest.mark.parametrize("w_shape", [(20, 8, 3, 3), (8, 1, 3, 3),
                                     (21, 96, 3, 3), (21, 300, 3, 3)])
def test_scalar_activation_epilogue(w_shape):
    """Sigmoid is applied after the vector store (relu/clip on the accumulators), also when
    the k-blocks loop and only the last applies it, tested at run time: blocks of whole
    taps with a shorter last one (C = 96), and equal channel chunks (C = 300), each with
    a tail panel (21 outputs)."""
    group = 8 if w_shape[1] == 1 else 1
    check((1, w_shape[1] * group, 6, 6), w_shape, act="Sigmoid", pads=[1, 1, 1, 1], group=group)


def test_the_convs_really_are_nhwc():
    """Guards the test harness itself: the kernels under test are the NHWC ones."""
    module = import_onnx(conv_model((1, 8, 6, 6), (16, 8, 3, 3), pads=[1, 1, 1, 1]))
    assert to_nhwc(module) == 1
    convs = [op for op in module.walk() if isinstance(op, graph.ConvOp)]
    assert layout_of(convs[0].input.type) == "NHWC" == layout_of(convs[0].output.type)


def test_grouped_conv_is_one_parallel_region():
    """A grouped conv's parallel loop is the chunks of rows, outside the loop over groups:
    one region per conv (not one per group) in which a thread keeps its rows."""
    module = import_onnx(conv_model((1, 16, 14, 14), (16, 4, 1, 1), group=4))
    assert to_nhwc(module) == 1
    pipeline.run_passes(pipeline.make_context(), module, "convert-graph-to-loops")
    (kernel,) = [f for f in module.walk()
                 if isinstance(f, func.FuncOp) and f.sym_name.data.startswith("conv")]
    marked = [op for op in kernel.walk()
              if isinstance(op, scf.ForOp) and PARALLEL_ATTR in op.attributes]
    assert len(marked) == 1

    def loops_around(op) -> int:
        parent, count = op.parent_op(), 0
        while parent is not None:
            count += isinstance(parent, scf.ForOp)
            parent = parent.parent_op()
        return count

    assert loops_around(marked[0]) == 0
    groups = [op for op in marked[0].walk() if isinstance(op, scf.ForOp)
              and isinstance(op.ub.owner, arith.ConstantOp) and op.ub.owner.value.value.data == 4]
    assert groups  # the loop over the four groups runs inside each chunk


def test_a_padded_grouped_conv_reads_one_plane_per_group():
    """The f32 implicit GEMM copies a padded grouped conv's input into one zero-bordered
    plane per group, [groups, n, hp, wp, cg]: a pixel's cg channels follow the previous
    pixel's, so a k-block holds whole kernel rows read as one run. The geometry other
    kernels read (bf16 pairs, int8) keeps NHWC."""
    module = import_onnx(conv_model((1, 64, 14, 14), (64, 16, 3, 3), group=4,
                                    pads=[1, 1, 1, 1], strides=[2, 2]))
    op = next(o for o in module.walk() if isinstance(o, graph.ConvOp))
    g = implicit_gemm_geometry(op)
    assert g.group_planes and g.pixel_stride == 16 and not geometry(op).group_planes
    (scratch,) = padded_scratch(g)
    assert scratch.get_shape() == (4, 1, 16, 16, 16)
    assert block_plan(g, 256).run == 3 and block_plan(geometry(op), 256).run == 1
    unpadded = import_onnx(conv_model((1, 64, 14, 14), (64, 16, 3, 3), group=4))
    op = next(o for o in unpadded.walk() if isinstance(o, graph.ConvOp))
    assert not implicit_gemm_geometry(op).group_planes  # read in place: no copy to lay out


@pytest.mark.parametrize("x_shape,w_shape,attrs", [
    ((1, 48, 14, 14), (48, 16, 3, 3), {"group": 3, "pads": [1, 1, 1, 1]}),  # M clamped on AVX2
    ((2, 40, 9, 7), (20, 8, 3, 3), {"group": 5, "pads": [1, 1, 1, 1], "strides": [2, 2]}),
    ((1, 24, 5, 5), (60, 8, 1, 1), {"group": 3}),  # pointwise: read in place
])
def test_groups_split_between_threads(x_shape, w_shape, attrs, monkeypatch):
    """With every group's rows a parallel iteration of their own (GROUPS_SPLIT_B_BYTES 0):
    the row remainder, clamped or its own tile, in each group's last chunk."""
    monkeypatch.setattr(conv_nhwc, "GROUPS_SPLIT_B_BYTES", 0)
    check(x_shape, w_shape, act="Relu", **attrs)


def test_a_grouped_conv_of_a_large_b_splits_its_groups():
    """regnet_y_800mf's 49 groups of 16 channels (451 KB of packed B) on a 7 x 7 map: the
    parallel loop runs over the groups (one chunk of rows each), with no loop over every
    group inside, which had each chunk of rows read all of B from the L3."""
    module = import_onnx(conv_model((1, 784, 7, 7), (784, 16, 3, 3), group=49,
                                    pads=[1, 1, 1, 1]))
    assert to_nhwc(module) == 1
    pipeline.run_passes(pipeline.make_context(), module, "convert-graph-to-loops")
    (kernel,) = [f for f in module.walk()
                 if isinstance(f, func.FuncOp) and f.sym_name.data.startswith("conv")]
    bounds = {op: op.ub.owner.value.value.data for op in kernel.walk()
              if isinstance(op, scf.ForOp) and isinstance(op.ub.owner, arith.ConstantOp)}
    (gemm,) = [op for op in bounds if PARALLEL_ATTR in op.attributes and bounds[op] == 49]
    assert not [op for op in gemm.walk() if op is not gemm and bounds.get(op) == 49]
    check((1, 784, 7, 7), (784, 16, 3, 3), group=49, pads=[1, 1, 1, 1])


def test_block_plans():
    """Tap-aligned k-blocks cover K exactly, within KC, for the shapes above and ResNet's."""
    for c, kh in [(3, 7), (64, 3), (96, 3), (256, 3), (300, 3), (512, 3), (2048, 1)]:
        module = import_onnx(conv_model((1, c, 8, 8), (8, c, kh, kh)))
        op = next(o for o in module.walk() if isinstance(o, graph.ConvOp))
        g = geometry(op)
        depths = block_plan(g, 256).depths
        assert sum(depths) == g.taps * g.cg and max(depths) <= 256, (c, kh, depths)


def test_original_weight_is_not_bound():
    """The NHWC kernel reads only its packed weight: bind-constants drops the original.
    Stride 2: the implicit GEMM on every host (a stride-1 3x3 conv with 8 channels is
    Winograd where vectors hold 8 floats, AVX2, and its weight then has 36 points)."""
    from onnxc.dialects.entry_abi import CONSTANTS_ATTR, entry_function, string_list

    module = import_onnx(conv_model((1, 8, 6, 6), (16, 8, 3, 3), pads=[1, 1, 1, 1],
                                    strides=[2, 2]))
    to_nhwc(module)
    ctx = pipeline.make_context()
    pipeline.run_passes(ctx, module, pipeline.GRAPH_TO_LOOPS)
    pipeline.run_passes(ctx, module, pipeline.LOOPS_ABI)
    entry = entry_function(module)
    names = string_list(entry, CONSTANTS_ATTR)
    args = entry.body.block.args[2:2 + len(names)]  # after the input and the output
    bound = [a.type.get_shape() for a in args]
    assert sorted(bound) == [(16,), (8 * 9 * 16,)]  # the bias and the packed weight


def test_nhwc_conv_without_constant_weight_is_an_error():
    """The NHWC kernels pack the weight at compile time: given a run-time weight they refuse
    rather than read it in the wrong order."""
    from onnxc.errors import LoweringError
    from tests.ir_helpers import parse_graph

    nhwc = '#layout.spec<"NHWC">'
    module = parse_graph(f"""
func.func @main(%x: tensor<1x4x5x5xf32, {nhwc}>, %w: tensor<8x4x3x3xf32>)
    -> tensor<1x8x3x3xf32, {nhwc}> {{
  %y = graph.conv(%x, %w) {{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>,
      dilations = array<i64: 1, 1>, group = 1 : i64}}
      : (tensor<1x4x5x5xf32, {nhwc}>, tensor<8x4x3x3xf32>) -> tensor<1x8x3x3xf32, {nhwc}>
  func.return %y : tensor<1x8x3x3xf32, {nhwc}>
}}""")
    with pytest.raises(LoweringError, match="NHWC"):  # (assign-layout would keep it plain)
        pipeline.run_passes(pipeline.make_context(), module, "convert-graph-to-loops")
