"""Convolutions and pools over images of symbolic size, compiled once.

A ResNet-like stem (7x7 stride-2 conv, 3x3 stride-2 max pool, stride-2 convs after it, so
the sizes nest three floor divisions deep), a depthwise-separable block and a global pool
run in NHWC on the same kernels as static shapes (the implicit GEMM reads the run's sizes);
a 1-D strided conv stack (wav2vec2's feature encoder: 2-D convs over a height of 1 on the
NHWC kernels, passes/conv1d_as_2d.py) and pools with ceil_mode on the plain kernels. Each model compiles once and runs at several sizes, odd ones included, against
onnxruntime: rtol/atol 1e-4 (f32 sums over up to 147 taps in another order). Transposed
convolutions (a UNet decoder, SAME and 1-D ones) likewise; QOperator int8 convs exactly.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxc
from tests.single_op import graph_model

RTOL = ATOL = 1e-4


def _weights(rng, shapes: dict[str, tuple[int, ...]]) -> list[onnx.TensorProto]:
    return [numpy_helper.from_array((rng.standard_normal(s) * 0.2).astype(np.float32), n)
            for n, s in shapes.items()]


def _model(nodes, inputs, output: str, inits) -> onnx.ModelProto:
    return graph_model(nodes, inputs, {output: (np.float32, None)}, initializers=list(inits),
                       opset=17, ir_version=8)


def resnet_like() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    node = helper.make_node
    nodes = [
        node("Conv", ["x", "w1", "b1"], ["c1"], pads=[3, 3, 3, 3], strides=[2, 2]),
        node("Relu", ["c1"], ["r1"]),
        node("MaxPool", ["r1"], ["p1"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        node("Conv", ["p1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
        node("Relu", ["c2"], ["r2"]),
        node("Conv", ["r2", "w3", "b3"], ["c3"], pads=[1, 1, 1, 1]),
        node("Add", ["c3", "p1"], ["a3"]),
        node("Relu", ["a3"], ["r3"]),
        node("Conv", ["r3", "wd", "bd"], ["dw"], pads=[1, 1, 1, 1], group=16, strides=[2, 2]),
        node("Conv", ["dw", "w4", "b4"], ["c4"], pads=[1, 1, 1, 1], strides=[2, 2]),
        node("GlobalAveragePool", ["c4"], ["g"]),
        node("Flatten", ["g"], ["f"]),
        node("Gemm", ["f", "wf", "bf"], ["y"], transB=1),
    ]
    inits = _weights(rng, {"w1": (16, 3, 7, 7), "b1": (16,), "w2": (16, 16, 3, 3),
                           "b2": (16,), "w3": (16, 16, 3, 3), "b3": (16,), "wd": (16, 1, 3, 3),
                           "bd": (16,), "w4": (32, 16, 3, 3), "b4": (32,), "wf": (10, 32),
                           "bf": (10,)})
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])
    return _model(nodes, [x], "y", inits)


def feature_encoder() -> onnx.ModelProto:
    """wav2vec2's first layers: 1-D convs of stride 5 and 2 over a run-time length."""
    rng = np.random.default_rng(1)
    node = helper.make_node
    nodes = [
        node("Conv", ["x", "w1"], ["c1"], strides=[5]),
        node("Relu", ["c1"], ["r1"]),
        node("Conv", ["r1", "w2"], ["c2"], strides=[2]),
        node("AveragePool", ["c2"], ["y"], kernel_shape=[3], strides=[2], ceil_mode=1),
    ]
    inits = _weights(rng, {"w1": (8, 1, 10), "w2": (8, 8, 3)})
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, "samples"])
    return _model(nodes, [x], "y", inits)


def atrous() -> onnx.ModelProto:
    """DeepLab's atrous convs (conv_border_taps.py: taps tested in the run): dilations 2 to
    12 with pads equal to them, on maps smaller than the dilation too; a strided and a
    grouped one, asymmetric dilation and pads, a residual add, and 300 channels (taps split
    into channel chunks)."""
    rng = np.random.default_rng(3)
    node = helper.make_node
    nodes = [
        node("Conv", ["x", "w1", "b1"], ["c1"], pads=[2, 2, 2, 2], dilations=[2, 2]),
        node("Relu", ["c1"], ["r1"]),
        node("Conv", ["r1", "w2"], ["c2"], pads=[12, 12, 12, 12], dilations=[12, 12]),
        node("Add", ["c2", "r1"], ["a2"]),
        node("Conv", ["a2", "w3", "b3"], ["c3"], pads=[3, 3, 3, 3], dilations=[3, 3],
             strides=[2, 2], group=2),
        node("Conv", ["c3", "w4"], ["c4"], pads=[0, 4, 1, 3], dilations=[1, 4],
             kernel_shape=[2, 3]),
        node("Conv", ["c4", "w5", "b5"], ["y"], pads=[6, 6, 6, 6], dilations=[6, 6]),
    ]
    inits = _weights(rng, {"w1": (300, 5, 3, 3), "b1": (300,), "w2": (300, 300, 3, 3),
                           "w3": (16, 150, 3, 3), "b3": (16,), "w4": (16, 16, 2, 3),
                           "w5": (8, 16, 3, 3), "b5": (8,)})
    for w in inits:  # unit variance through the layers: errors relative to O(1) values
        if len(w.dims) == 4:
            fan_in = float(np.prod(w.dims[1:]))
            scaled = numpy_helper.to_array(w) * np.float32(5 / np.sqrt(fan_in))
            w.CopyFrom(numpy_helper.from_array(scaled, w.name))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 5, "H", "W"])
    return _model(nodes, [x], "y", inits)


def grouped() -> onnx.ModelProto:
    """RegNet's and ResNeXt's grouped convs, whose padded copy is one plane per group
    (ConvGeometry.group_planes) of run-time size: groups of 16 channels at stride 2, of 4
    at stride 1, and a 5x3 kernel over groups of 12 with asymmetric pads."""
    rng = np.random.default_rng(5)
    node = helper.make_node
    nodes = [
        node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], strides=[2, 2], group=2),
        node("Relu", ["c1"], ["r1"]),
        node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1], group=8),
        node("Conv", ["c2", "w3", "b3"], ["y"], pads=[2, 1, 1, 2], group=4),
    ]
    inits = _weights(rng, {"w1": (32, 16, 3, 3), "b1": (32,), "w2": (48, 4, 3, 3),
                           "w3": (24, 12, 5, 3), "b3": (24,)})
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 32, "H", "W"])
    return _model(nodes, [x], "y", inits)


def same_auto_pad(count_include_pad: int = 1) -> onnx.ModelProto:
    """TensorFlow's SAME padding with strides over symbolic sizes: the pads depend on the
    size (stride 2, kernel 3: 1 for an even size, 2 for an odd one), so the input is padded
    by a graph.pad of symbolic pads first (0 for Conv and AveragePool, the lowest value for
    MaxPool); an average that must not count them is divided by that of a padded plane of
    ones."""
    rng = np.random.default_rng(4)
    node = helper.make_node
    nodes = [
        node("Conv", ["x", "w"], ["c"], auto_pad="SAME_UPPER", strides=[2, 2]),
        node("MaxPool", ["c"], ["m"], auto_pad="SAME_LOWER", strides=[2, 3],
             kernel_shape=[3, 2]),
        node("AveragePool", ["m"], ["y"], auto_pad="SAME_UPPER", strides=[2, 2],
             kernel_shape=[3, 3], count_include_pad=count_include_pad),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])
    return _model(nodes, [x], "y", _weights(rng, {"w": (4, 3, 3, 3)}))


def unet_decoder() -> onnx.ModelProto:
    """A UNet / FCN decoder: stride-2 ConvTransposes (2x2, and 3x3 with pads 1 and
    output_padding 1 as torchvision's heads export it: GEMM + Col2Im), the skip connection
    concatenated, then a grouped, dilated one with asymmetric pads and stride 3."""
    rng = np.random.default_rng(5)
    node = helper.make_node
    nodes = [
        node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], strides=[2, 2]),
        node("Relu", ["c1"], ["r1"]),
        node("ConvTranspose", ["r1", "wt1", "bt1"], ["u1"], strides=[2, 2],
             pads=[1, 1, 1, 1], output_padding=[1, 1], kernel_shape=[3, 3]),
        node("Shape", ["x"], ["xs"]),
        node("Slice", ["xs", "two", "four"], ["hw"]),
        node("Concat", ["n_c", "hw"], ["target"], axis=0),
        node("Resize", ["u1", "", "", "target"], ["u1r"], mode="nearest"),
        node("Concat", ["u1r", "x"], ["cat"], axis=1),
        node("ConvTranspose", ["cat", "wt2"], ["u2"], strides=[2, 2]),
        node("ConvTranspose", ["u2", "wt3", "bt3"], ["y"], strides=[3, 2], group=2,
             dilations=[2, 1], pads=[0, 1, 2, 0], output_padding=[1, 0]),
    ]
    inits = _weights(rng, {"w1": (8, 3, 3, 3), "b1": (8,), "wt1": (8, 6, 3, 3), "bt1": (6,),
                           "wt2": (9, 4, 2, 2), "wt3": (4, 3, 3, 2), "bt3": (6,)})
    inits += [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in
              {"two": [2], "four": [4], "n_c": [1, 6]}.items()]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "H", "W"])
    return _model(nodes, [x], "y", inits)


def conv_transpose_same_1d() -> onnx.ModelProto:
    """auto_pad SAME_UPPER (the pads split the excess over size * stride) and a 1-D
    ConvTranspose of stride 4 over a run-time length (a vocoder's upsampler)."""
    rng = np.random.default_rng(6)
    node = helper.make_node
    nodes = [node("ConvTranspose", ["x", "w1", "b1"], ["c1"], strides=[4], auto_pad="SAME_UPPER"),
             node("Relu", ["c1"], ["r1"]),
             node("ConvTranspose", ["r1", "w2"], ["y"], strides=[3], pads=[1, 2])]
    inits = _weights(rng, {"w1": (2, 4, 7), "b1": (4,), "w2": (4, 3, 5)})
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2, "samples"])
    return _model(nodes, [x], "y", inits)


CASES = {
    "resnet_like": (resnet_like, [(1, 3, 224, 224), (1, 3, 160, 200), (2, 3, 65, 33),
                                  (1, 3, 31, 17)]),
    "feature_encoder": (feature_encoder, [(1, 1, 400), (2, 1, 1001), (1, 1, 37)]),
    "same_auto_pad": (same_auto_pad, [(1, 3, 16, 16), (2, 3, 17, 9), (1, 3, 5, 2),
                                      (1, 3, 1, 1)]),
    "same_auto_pad_uncounted": (lambda: same_auto_pad(count_include_pad=0),
                                [(1, 3, 16, 16), (2, 3, 17, 9), (1, 3, 5, 2), (1, 3, 1, 1)]),
    "atrous": (atrous, [(1, 5, 14, 14), (2, 5, 29, 17), (1, 5, 3, 40), (1, 5, 2, 3)]),
    "grouped": (grouped, [(1, 32, 14, 14), (2, 32, 9, 17), (1, 32, 4, 1), (1, 32, 3, 2)]),
    "unet_decoder": (unet_decoder, [(1, 3, 16, 16), (1, 3, 9, 14), (1, 3, 1, 1),
                                    (1, 3, 5, 2)]),
    "conv_transpose_same_1d": (conv_transpose_same_1d, [(1, 2, 16), (2, 2, 7), (1, 2, 1)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_one_compile_serves_every_image_size(name):
    build, shapes = CASES[name]
    model = build()
    compiled = onnxc.compile(model, cache_dir=False, quiet=True)
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(2)
    for shape in shapes:
        x = rng.standard_normal(shape).astype(np.float32)
        (ours,), (theirs,) = compiled(x), session.run(None, {"x": x})
        assert ours.shape == theirs.shape, shape
        np.testing.assert_allclose(ours, theirs, rtol=RTOL, atol=ATOL, err_msg=str(shape))


def test_the_convolutions_run_in_nhwc():
    """The layout pass gives symbolic convs NHWC (the fast kernels), not a plain fallback."""
    from xdsl.context import Context

    from onnxc.dialects.graph import ConvOp
    from onnxc.dialects.layout import layout_of
    from onnxc.passes.layout_assign import AssignLayoutPass

    module = onnxc.optimize(resnet_like(), opt_level=3)
    AssignLayoutPass(vector_bits=256).apply(Context(), module)
    convs = [op for op in module.walk() if isinstance(op, ConvOp)]
    assert convs and all(layout_of(op.output.type) == "NHWC" for op in convs)


def test_an_image_too_small_for_the_window_is_refused_before_running():
    compiled = onnxc.compile(feature_encoder(), cache_dir=False, quiet=True)
    with pytest.raises(onnxc.errors.InvalidInputError, match="Conv"):
        compiled(np.zeros((1, 1, 4), np.float32))  # shorter than the 10-tap window


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER"])
@pytest.mark.parametrize(("op", "attrs"), [
    ("Conv", {}), ("MaxPool", {"kernel_shape": [3, 2]}),
    ("AveragePool", {"kernel_shape": [3, 2], "count_include_pad": 0}),
    ("AveragePool", {"kernel_shape": [3, 2], "count_include_pad": 1})])
def test_same_auto_pad_with_strides_over_symbolic_sizes(op, attrs, auto_pad):
    """pads = max(0, (ceildiv(H, s) - 1) * s + k - H), split by auto_pad, a size expression
    of H (strides 2 and 3: a pad of -1 clamped to 0 when 3 divides W for a 2-tap window).
    One compile, three image sizes, against onnxruntime and the numpy evaluator (widths
    that 3 divides are left out: onnxruntime refuses the pools' negative pad there)."""
    from onnxc.frontend.onnx_importer import import_onnx
    from onnxc.passes.evaluator import evaluate

    rng = np.random.default_rng(7)
    inputs = ["x", "w"] if op == "Conv" else ["x"]
    node = helper.make_node(op, inputs, ["y"], auto_pad=auto_pad, strides=[2, 3], **attrs)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "H", "W"])
    model = _model([node], [x], "y", _weights(rng, {"w": (4, 3, 3, 2)}) if op == "Conv" else [])
    compiled = onnxc.compile(model, cache_dir=False, quiet=True)
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    for shape in [(1, 3, 7, 8), (1, 3, 8, 11), (1, 3, 1, 1)]:
        feeds = {"x": rng.standard_normal(shape).astype(np.float32)}
        (theirs,) = session.run(None, feeds)
        for ours in (compiled.run(None, feeds)[0], evaluate(import_onnx(model), feeds)[0]):
            assert ours.shape == theirs.shape, shape
            np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5, err_msg=str(shape))


def test_conv_transpose_whose_output_padding_passes_the_stride():
    """output_padding from the stride up to the dilation leaves rows no Col2Im block
    reaches: the direct scatter kernel runs, over symbolic sizes too. onnxruntime and
    onnx.reference refuse such a layer, so the numpy evaluator is the reference."""
    from onnxc.frontend.onnx_importer import import_onnx
    from onnxc.passes.evaluator import evaluate

    rng = np.random.default_rng(7)
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], dilations=[2, 3],
                            output_padding=[1, 2], pads=[1, 0, 0, 1])
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])
    model = _model([node], [x], "y", _weights(rng, {"w": (3, 4, 3, 2), "b": (4,)}))
    compiled = onnxc.compile(model, cache_dir=False, quiet=True)
    imported = import_onnx(model)
    assert any(op.name == "graph.conv_transpose" for op in imported.walk())
    for shape in [(1, 3, 6, 7), (2, 3, 1, 1), (1, 3, 11, 4)]:
        x = rng.standard_normal(shape).astype(np.float32)
        (ours,), (theirs,) = compiled(x), evaluate(imported, {"x": x})
        assert ours.shape == theirs.shape, shape
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5, err_msg=str(shape))


def qoperator_convs(signed: bool) -> onnx.ModelProto:
    """QOperator int8 convs (QuantizeLinear, then QLinearConv only) over symbolic sizes, one
    per kernel family: a strided 3x3 with pads and a 1x1 (the packed int8 GEMM; the 1x1
    reads its input in place when it is ui8), a depthwise 3x3 (its own kernel: interior
    tiles and bordered pixels at run-time bounds) and a grouped, dilated one with asymmetric
    pads (the generic kernel). Weights within +-60 of their zero point: onnxruntime's AVX2
    u8s8 products saturate past that, onnxc's do not."""
    rng = np.random.default_rng(8)
    act = np.int8 if signed else np.uint8
    zero = act(-3) if signed else act(128)
    node = helper.make_node
    inits = [numpy_helper.from_array(np.asarray(v), n) for n, v in
             {"xs": np.float32(0.05), "xz": zero, "ys": np.float32(0.05), "yz": zero}.items()]
    nodes = [node("QuantizeLinear", ["x", "xs", "xz"], ["q0"])]
    layers = [("w1", 16, 3, 3, np.int8, {"pads": [1, 1, 1, 1], "strides": [2, 2]}),
              ("w2", 32, 16, 1, np.int8, {}),
              ("w3", 32, 1, 3, np.int8, {"pads": [1, 1, 1, 1], "group": 32}),
              ("w4", 8, 16, 3, np.int8 if signed else np.uint8,  # no s8 x u8 in onnxruntime
               {"pads": [0, 1, 1, 0], "group": 2, "dilations": [2, 1]})]
    for i, (w, cout, cin, k, dtype, attrs) in enumerate(layers):
        centre = 0 if dtype == np.int8 else 128
        weight = (rng.integers(-60, 61, (cout, cin, k, k)) + centre).astype(dtype)
        inits += [numpy_helper.from_array(weight, w),
                  numpy_helper.from_array(np.float32(0.01), f"{w}s"),
                  numpy_helper.from_array(dtype(centre), f"{w}z"),
                  numpy_helper.from_array(rng.integers(-500, 500, cout).astype(np.int32),
                                          f"{w}b")]
        nodes.append(node("QLinearConv", [f"q{i}", "xs", "xz", w, f"{w}s", f"{w}z", "ys", "yz",
                                          f"{w}b"], [f"q{i + 1}"], **attrs))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])
    y = helper.make_tensor_value_info("q4", TensorProto.INT8 if signed else TensorProto.UINT8,
                                      None)
    graph = helper.make_graph(nodes, "g", [x], [y], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("signed", [False, True], ids=["u8", "s8"])
def test_qlinear_convs_over_symbolic_sizes_are_exact(signed):
    model = qoperator_convs(signed)
    compiled = onnxc.compile(model, cache_dir=False, quiet=True)
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(9)
    for shape in [(1, 3, 16, 16), (2, 3, 9, 7), (1, 3, 7, 3), (1, 3, 8, 37)]:
        x = (rng.standard_normal(shape) * 2).astype(np.float32)
        (ours,), (theirs,) = compiled(x), session.run(None, {"x": x})
        assert ours.shape == theirs.shape and ours.dtype == theirs.dtype, shape
        np.testing.assert_array_equal(ours, theirs, err_msg=str(shape))


def test_symbolic_int8_gemm_at_every_row_count_around_its_tile():
    """The int8 GEMM over a run-time pixel count: MR-row blocks with the last one shifted
    back to end at the last pixel, and fewer pixels than MR (1 to 5: AVX2's and VNNI's MR
    is 6) one row at a time; a 1x1 conv (40 channels: full panels and a tail) and a padded
    3x3, bit-identical to onnxruntime from 1 pixel to several chunks of blocks."""
    rng = np.random.default_rng(11)
    inits = [numpy_helper.from_array(np.asarray(v), n) for n, v in {
        "s": np.float32(0.05), "z": np.uint8(128), "ws": np.float32(0.01), "wz": np.int8(0),
        "w1": rng.integers(-60, 61, (40, 8, 1, 1)).astype(np.int8),
        "w3": rng.integers(-60, 61, (24, 40, 3, 3)).astype(np.int8),
        "b": rng.integers(-500, 500, 40).astype(np.int32)}.items()]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("QLinearConv", ["q", "s", "z", "w1", "ws", "wz", "s", "z", "b"],
                              ["q1"]),
             helper.make_node("QLinearConv", ["q1", "s", "z", "w3", "ws", "wz", "s", "z"],
                              ["y"], pads=[1, 1, 1, 1])]
    _exact_at_each_size(nodes, inits, ["N", 8, "H", "W"], rng, [
        (1, 8, 1, 1), (1, 8, 1, 5), (1, 8, 2, 3), (1, 8, 1, 7), (1, 8, 13, 1), (2, 8, 3, 5),
        (1, 8, 30, 41)])


def test_symbolic_qlinear_convs_take_the_int8_kernels():
    """In NHWC, on the packed GEMM and the depthwise kernel (not all on the generic one)."""
    from xdsl.context import Context

    from onnxc.dialects.graph_qlinear import QLinearConvOp
    from onnxc.dialects.layout import layout_of
    from onnxc.lowering.graph_to_loops.qlinear_dispatch import family_of
    from onnxc.passes.layout_assign import AssignLayoutPass
    from onnxc.target import target_of

    module = onnxc.optimize(qoperator_convs(False), opt_level=3)
    AssignLayoutPass(vector_bits=256).apply(Context(), module)
    convs = [op for op in module.walk() if isinstance(op, QLinearConvOp)]
    assert all(layout_of(op.output.type) == "NHWC" for op in convs)
    families = [getattr(family_of(op, target_of(module)), "name", "generic") for op in convs]
    assert families == ["int8_gemm", "int8_gemm", "int8_depthwise", "generic"]


def test_a_1d_qlinear_conv_over_a_symbolic_length_is_exact():
    """Not rank 4: the generic kernel in the plain layout, strided and padded."""
    rng = np.random.default_rng(10)
    inits = [numpy_helper.from_array(np.asarray(v), n) for n, v in {
        "s": np.float32(0.05), "z": np.uint8(128), "ws": np.float32(0.01), "wz": np.int8(0),
        "w": rng.integers(-60, 61, (6, 4, 3)).astype(np.int8)}.items()]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("QLinearConv", ["q", "s", "z", "w", "ws", "wz", "s", "z"], ["y"],
                              pads=[1, 2], strides=[2])]
    _exact_at_each_size(nodes, inits, ["N", 4, "L"], rng, [(1, 4, 9), (3, 4, 1), (2, 4, 40)])


def _exact_at_each_size(nodes, inits, x_shape, rng, shapes) -> None:
    """f32 input `x` of symbolic `x_shape`, u8 output `y`: one compile, bit-identical to
    onnxruntime at each of `shapes`."""
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    compiled = onnxc.compile(model, cache_dir=False, quiet=True)
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    for shape in shapes:
        x = (rng.standard_normal(shape) * 2).astype(np.float32)
        np.testing.assert_array_equal(compiled(x)[0], session.run(None, {"x": x})[0],
                                      err_msg=str(shape))


@pytest.mark.parametrize("attrs", [
    {"strides": [2, 2], "output_shape": [10, 10]},
    {"strides": [2, 2], "output_shape": [10, 9], "auto_pad": "SAME_UPPER"},
    {"strides": [2, 2], "output_shape": [9, 10], "auto_pad": "SAME_LOWER"},
    {"strides": [2, 2], "output_shape": [8, 11], "pads": [2, 2, 1, 1]},  # pads ignored
    {"strides": [3, 2], "output_shape": [12, 11], "output_padding": [1, 1], "group": 2},
])
@pytest.mark.parametrize("symbolic", [False, True])
def test_conv_transpose_to_an_output_shape(attrs, symbolic):
    """output_shape as onnxruntime reads it: total = full - output_shape split over the
    ends (SAME_UPPER: the smaller half first, else the larger; explicit pads ignored), a
    negative total extending the end with zeros plus the bias. Static input sizes whose
    crop is not within the kernels' pads (previously refused) and symbolic H and W, where
    one compile crops at one size and extends at another (onnxruntime refuses sizes more
    than a stride below output_shape; onnxc extends them too)."""
    rng = np.random.default_rng(8)
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **attrs)
    sizes = [(5, 5), (4, 5), (6, 7), (8, 6)]
    dims = ["H", "W"] if symbolic else list(sizes[0])
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, *dims])
    model = _model([node], [x], "y", _weights(rng, {"w": (4, 3, 3, 3), "b": (3 * attrs.get(
        "group", 1),)}))
    compiled = onnxc.compile(model, cache_dir=False, quiet=True)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for hw in sizes if symbolic else sizes[:1]:
        x = rng.standard_normal((1, 4, *hw)).astype(np.float32)
        (ours,), (theirs,) = compiled(x), session.run(None, {"x": x})
        assert ours.shape == theirs.shape, hw
        np.testing.assert_allclose(ours, theirs, rtol=RTOL, atol=ATOL, err_msg=str(hw))


def _integer_conv(kind: str, attrs: dict, rng) -> onnx.ModelProto:
    """ConvInteger with a constant or a run-time x zero point (quantize_dynamic's form), or
    QLinearConv, over [n, 3, h, w] uint8."""
    w_shape = (6, 1, 3, 3) if attrs.get("group") else (4, 3, 3, 3)
    inits = [numpy_helper.from_array(rng.integers(0, 255, w_shape).astype(np.uint8), "w")]
    inputs = [helper.make_tensor_value_info("x", TensorProto.UINT8, ["n", 3, "h", "w"])]
    scalar = numpy_helper.from_array
    if kind == "qlinear":
        inits += [scalar(np.array(v, t), n) for n, v, t in (
            ("xs", 0.02, np.float32), ("xz", 120, np.uint8), ("ws", 0.01, np.float32),
            ("wz", 128, np.uint8), ("ys", 0.5, np.float32), ("yz", 3, np.uint8))]
        node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"],
                                ["y"], **attrs)
        out = TensorProto.UINT8
    else:
        if kind == "run-time zero point":
            inputs.append(helper.make_tensor_value_info("xz", TensorProto.UINT8, []))
        else:
            inits.append(scalar(np.array(117, np.uint8), "xz"))
        node = helper.make_node("ConvInteger", ["x", "w", "xz"], ["y"], **attrs)
        out = TensorProto.INT32
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info(
        "y", out, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


_SAME = {"auto_pad": "SAME_UPPER", "strides": [2, 2]}
_GROUPED = {"pads": [0, 2, 1, 0], "dilations": [2, 1], "group": 3}


@pytest.mark.parametrize(("kind", "attrs"), [
    ("constant zero point", _SAME), ("run-time zero point", _SAME), ("qlinear", _SAME),
    ("constant zero point", _GROUPED), ("run-time zero point", _GROUPED),
])
def test_integer_convs_over_symbolic_sizes_are_exact(kind, attrs):
    """SAME pads over symbolic sizes pad the input with its zero point first; a run-time
    zero point's correction (its product with the weight sums over the taps inside the
    input) is a float conv of an image of ones, exact below 2^24. Equal to onnxruntime."""
    rng = np.random.default_rng(9)
    model = _integer_conv(kind, attrs, rng)
    compiled = onnxc.compile(model, cache_dir=False, quiet=True)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for n, hw in [(1, (7, 9)), (2, (8, 8)), (1, (5, 6))]:
        feeds = {"x": rng.integers(0, 255, (n, 3, *hw)).astype(np.uint8)}
        if kind == "run-time zero point":
            feeds["xz"] = np.array(rng.integers(0, 255), np.uint8)
        (ours,), (theirs,) = compiled.run(None, feeds), session.run(None, feeds)
        assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
        np.testing.assert_array_equal(ours, theirs, err_msg=f"{n} {hw}")


@pytest.mark.parametrize("attrs", [
    {"ceil_mode": 1, "strides": [2, 2]},
    {"auto_pad": "SAME_UPPER", "strides": [2, 2]},
    {"auto_pad": "SAME_LOWER", "strides": [2, 3], "p": 3},
])
def test_lp_pool_over_symbolic_sizes(attrs):
    """LpPool's SAME pads and ceil-mode end extension depend on the size: |x|^p is padded
    with zeros by run-time amounts, then summed by an AveragePool. Against onnxruntime."""
    rng = np.random.default_rng(10)
    node = helper.make_node("LpPool", ["x"], ["y"], kernel_shape=[3, 3], **attrs)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "H", "W"])
    model = _model([node], [x], "y", [])
    model.opset_import[0].version = 18
    compiled = onnxc.compile(model, cache_dir=False, quiet=True)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for hw in [(7, 9), (8, 8), (5, 6)]:
        x = rng.standard_normal((1, 3, *hw)).astype(np.float32)
        (ours,), (theirs,) = compiled(x), session.run(None, {"x": x})
        assert ours.shape == theirs.shape, hw
        np.testing.assert_allclose(ours, theirs, rtol=RTOL, atol=ATOL, err_msg=str(hw))


@pytest.mark.parametrize(("attrs", "shapes"), [
    ({"auto_pad": "SAME_UPPER", "strides": [2, 2]}, [(1, 7, 9), (2, 8, 8), (1, 5, 6)]),
    ({"auto_pad": "SAME_LOWER", "strides": [2, 3], "storage_order": 1},
     [(1, 7, 9), (2, 8, 8), (1, 5, 6)]),
])
def test_max_pool_indices_with_same_pads_over_symbolic_sizes(attrs, shapes):
    """SAME pads that depend on the size: the input is padded with the lowest value first
    and the flat indices into the padded input are mapped back to the input's (per
    spatial axis, moved by the begin pad; storage_order 1 column-major). Equal to
    onnxruntime, values and indices. (onnxruntime's SAME with dilations disagrees with its
    own shape inference and with onnx.reference, so no dilation here.)"""
    rng = np.random.default_rng(11)
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[3, 3], **attrs)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])
    graph = helper.make_graph([node], "g", [x], [
        helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
        helper.make_tensor_value_info("i", TensorProto.INT64, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)])
    compiled = onnxc.compile(model, cache_dir=False, quiet=True)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for n, h, w in shapes:
        x = rng.standard_normal((n, 3, h, w)).astype(np.float32)
        (y, i), (y_ref, i_ref) = compiled(x), session.run(None, {"x": x})
        np.testing.assert_array_equal(y, y_ref, err_msg=str((n, h, w)))
        np.testing.assert_array_equal(i, i_ref, err_msg=str((n, h, w)))
