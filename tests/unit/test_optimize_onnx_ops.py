"""Every graph op has an ONNX exporter or a declared reason not to (onnx_export.NOT_EXPORTED),
and each exporter of the op families in frontend/onnx_export_{indexed,quant,vision,
recurrent,control}.py round-trips: a real ONNX model that imports to the op is exported
(at -O0, so the op itself is what is written) and run by onnxruntime against onnxruntime
on the original (tests/onnx_export_checks.check_round_trip), exactly for data movement,
integer and quantized ops, within rtol / atol 1e-5 for float arithmetic. Where onnxruntime
runs neither form (ConvTranspose with an output_padding of a stride or more, LSTM with
layout 1) or lacks the exported opset's kernel (RoiAlign-22), onnx.reference or onnxc's
numpy evaluator stands in, as each case says.
"""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxc
from onnxc.dialects import graph, graph_gather_scatter, graph_resize, graph_rnn, graph_vision
from onnxc.errors import UnsupportedOpError
from onnxc.frontend.onnx_export import export_onnx
from onnxc.passes.evaluator import evaluate
from tests.ir_helpers import parse_graph
from tests.onnx_export_checks import check_round_trip, session
from tests.single_op import graph_model, single_op_model

RNG = np.random.default_rng(0)
FLOAT = {"rtol": 1e-5, "atol": 1e-5}


def _f32(*shape, scale=1.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def _model(op_type, inputs, initializers=None, *, opset, outputs=("y",), **kwargs):
    """One node at IR version 10 (11 from opset 24), its output types inferred."""
    return single_op_model(op_type, inputs, list(outputs), initializers=initializers,
                           opset=opset, ir_version=10 if opset < 24 else 11,
                           infer_shapes=True, **kwargs)


# ------------------------------------------------------------------ structure


def _nll_loss():
    return _model("NegativeLogLikelihoodLoss", {"x": (np.float32, [2, 3]),
                                                "t": (np.int64, [2])}, opset=13)


@pytest.mark.parametrize("build, op, reason", [
    (lambda: _model("NonZero", {"x": (np.float32, [2, 3])}, opset=13), "graph.nonzero",
     "length is a size the run defines"),
    (lambda: _model("BitCast", {"x": (np.float32, [3])}, opset=26, attrs={
        "to": TensorProto.INT32}), "graph.bit_cast", "opset 26"),
    (_nll_loss, "graph.check_indices", "run-time check"),
    (lambda: _model("Unique", {"x": (np.float32, [3, 4])}, opset=13, attrs={"axis": 1},
                    outputs=["y", "i", "v", "c"]), "graph.lex_order", "Unique along an axis"),
])
def test_declared_ops_are_refused_with_their_reason(build, op, reason):
    model = build()
    model.graph.node[0].name = "the_node"
    with pytest.raises(UnsupportedOpError, match=f"'{op}' \\(node 'the_node'.*{reason}"):
        onnxc.optimize(model, opt_level=0, as_onnx=True)


# ------------------------------------------------------------------ indices and axes


def test_gather_and_scatter_elements():
    x, i, u = _f32(3, 4), RNG.integers(-4, 4, (3, 4)), _f32(3, 4)
    check_round_trip(_model("GatherElements", {"x": x, "i": i}, opset=13, attrs={"axis": 1}),
                     {"x": x, "i": i}, graph_gather_scatter.GatherElementsOp, exact=True)
    i = np.abs(i) % 4
    for reduction in ("none", "add", "mul", "max", "min"):
        model = _model("ScatterElements", {"x": x, "i": i, "u": u}, opset=18,
                       attrs={"axis": 1, "reduction": reduction})
        check_round_trip(model, {"x": x, "i": i, "u": u},
                         graph_gather_scatter.ScatterElementsOp, exact=True)


def test_gather_and_scatter_nd():
    data = _f32(2, 3, 4)
    indices = np.array([[[0, 1], [2, 3]], [[1, 0], [0, 2]]], np.int64)
    check_round_trip(_model("GatherND", {"x": data, "i": indices}, opset=13,
                            attrs={"batch_dims": 1}),
                     {"x": data, "i": indices}, graph_gather_scatter.GatherNDOp, exact=True)
    rows, updates = np.array([[0], [2], [0]], np.int64), _f32(3, 4)
    for reduction in ("none", "add", "mul"):
        reduced = rows if reduction != "none" else rows[:2]
        feeds = {"x": _f32(3, 4), "i": reduced, "u": updates[:len(reduced)]}
        check_round_trip(_model("ScatterND", feeds, opset=18, attrs={"reduction": reduction}),
                         feeds, graph_gather_scatter.ScatterNDOp, exact=True)


def test_tile_and_reverse_sequence():
    x = _f32(3, 4)
    check_round_trip(_model("Tile", {"x": x}, {"r": np.array([2, 3], np.int64)}, opset=13),
                     {"x": x}, graph_gather_scatter.TileOp, exact=True)
    seq, lens = _f32(4, 3, 2), np.array([4, 1, 3], np.int64)
    for batch_axis, time_axis, data in ((1, 0, seq), (0, 1, seq.transpose(1, 0, 2).copy())):
        check_round_trip(_model("ReverseSequence", {"x": data, "l": lens}, opset=10,
                                attrs={"batch_axis": batch_axis, "time_axis": time_axis}),
                         {"x": data, "l": lens}, graph_gather_scatter.ReverseSequenceOp,
                         exact=True)


@pytest.mark.parametrize("mode, axis, indexed", [
    ("linear", -2, True), ("circular", 2, True), ("linear", 1, False)])
def test_tensor_scatter(mode, axis, indexed):
    """TensorScatter (opset 24) as a function of opset-23 ops: exact writes."""
    past, update = _f32(2, 3, 6, 4), _f32(2, 3, 2, 4) if axis != 1 else _f32(2, 2, 6, 4)
    feeds = {"p": past, "u": update}
    if indexed:
        feeds["w"] = np.array([1, 5] if mode == "circular" else [1, 4], np.int64)
    exported = check_round_trip(_model("TensorScatter", feeds, opset=24,
                                       attrs={"mode": mode, "axis": axis}),
                                feeds, graph_gather_scatter.TensorScatterOp, exact=True)
    assert [f.name for f in exported.functions] == ["TensorScatter"]


@pytest.mark.parametrize("axis, exclusive, reverse, dtype", [
    (0, 0, 0, np.float32), (1, 1, 0, np.float32), (1, 0, 1, np.float32),
    (0, 1, 1, np.float64), (1, 0, 1, np.int32), (0, 1, 0, np.int64)])
def test_cum_prod(axis, exclusive, reverse, dtype):
    """CumProd (opset 26) as a Loop over the axis in a function: the products in the same
    order, so exact for floats too."""
    x = (RNG.integers(-3, 4, (3, 4)) if np.issubdtype(dtype, np.integer)
         else RNG.standard_normal((3, 4))).astype(dtype)
    model = _model("CumProd", {"x": x}, {"a": np.array(axis, np.int64)}, opset=26,
                   attrs={"exclusive": exclusive, "reverse": reverse})
    exported = check_round_trip(model, {"x": x}, graph.CumProdOp, exact=True)
    (function,) = exported.functions
    assert "Loop" in {n.op_type for n in function.node}


# ------------------------------------------------------------------ quantization


def test_quantize_and_dequantize_linear():
    x, q = _f32(2, 3, 4, scale=3.0), RNG.integers(0, 256, (2, 3, 4)).astype(np.uint8)
    cases = [
        ("QuantizeLinear", x, {"s": np.array(0.05, np.float32),
                               "z": np.array(128, np.uint8)}, {}, 21),
        ("QuantizeLinear", x, {"s": np.array([0.05, 0.1, 0.2], np.float32),
                               "z": np.array([1, -2, 3], np.int8)}, {"axis": 1}, 21),
        ("QuantizeLinear", x, {"s": np.array(0.05, np.float16),  # divides in f32
                               "z": np.array(3, np.uint8)}, {"precision": TensorProto.FLOAT},
         23),
        ("QuantizeLinear", x * 100, {"s": np.array(0.5, np.float32), "z": helper.make_tensor(
            "z", TensorProto.FLOAT8E4M3FN, [], [0])}, {"saturate": 0}, 21),
        ("DequantizeLinear", q, {"s": np.array([0.05, 0.1, 0.2], np.float32),
                                 "z": np.array([1, 2, 3], np.uint8)}, {"axis": 1}, 21),
        ("DequantizeLinear", q.astype(np.int32), {"s": np.array(0.05, np.float32),
                                                  "z": np.array(0, np.int32)}, {}, 21),
        ("DequantizeLinear", q, {"s": np.array(0.05, np.float32),
                                 "z": np.array(3, np.uint8)}, {"output_dtype": TensorProto.FLOAT16},
         23),
    ]
    for op_type, data, initializers, attrs, opset in cases:
        model = _model(op_type, {"x": data}, initializers, opset=opset, attrs=attrs)
        op = graph.QuantizeLinearOp if op_type == "QuantizeLinear" else graph.DequantizeLinearOp
        check_round_trip(model, {"x": data}, op, exact=True)


def test_blocked_int4_quantize_then_dequantize():
    """int4 has no numpy form in onnxruntime's outputs: Q -> DQ, both exported."""
    x = _f32(2, 3, 4, scale=3.0)
    scale = numpy_helper.from_array(np.abs(_f32(2, 3, 2)) + 0.1, "s")
    zero = helper.make_tensor("z", TensorProto.INT4, [2, 3, 2],
                              RNG.integers(-3, 3, 12).tolist())
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=2, block_size=2),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=2, block_size=2)]
    model = graph_model(nodes, {"x": x}, {"y": (np.float32, [2, 3, 4])},
                        initializers=[scale, zero], opset=21, ir_version=10)
    exported = check_round_trip(model, {"x": x}, graph.QuantizeLinearOp, exact=True)
    assert [n.op_type for n in exported.graph.node] == ["QuantizeLinear", "DequantizeLinear"]


def test_dynamic_quantize_linear():
    x = _f32(3, 5)
    check_round_trip(_model("DynamicQuantizeLinear", {"x": x}, opset=11,
                            outputs=["y", "s", "z"]),
                     {"x": x}, graph.DynamicQuantizeLinearOp, exact=True)


# 7-bit weights: onnxruntime's u8s8 kernels on x86 without VNNI saturate pairs of
# products in 16 bits (quantize_static's reduce_range), which would make its QLinearConv
# inexact, not the export
_X_U8 = RNG.integers(0, 256, (1, 2, 5, 5)).astype(np.uint8)
_W_S8 = RNG.integers(-64, 64, (3, 2, 3, 3)).astype(np.int8)
_BIAS = RNG.integers(-500, 500, (3,)).astype(np.int32)


def test_qlinear_conv_and_conv_integer():
    initializers = {
        "xs": np.array(0.02, np.float32), "xz": np.array(3, np.uint8), "w": _W_S8,
        "ws": np.array([0.01, 0.02, 0.03], np.float32), "wz": np.zeros(3, np.int8),
        "ys": np.array(0.5, np.float32), "yz": np.array(7, np.uint8), "b": _BIAS}
    model = _model("QLinearConv", {"x": _X_U8}, initializers, opset=10,
                   attrs={"pads": [1, 1, 1, 1]})
    exported = check_round_trip(model, {"x": _X_U8}, graph.QLinearConvOp, exact=True)
    assert [n.op_type for n in exported.graph.node] == ["QLinearConv"]
    model = _model("ConvInteger", {"x": _X_U8}, {"w": _W_S8, "xz": np.array(3, np.uint8),
                                                 "wz": np.array(2, np.int8)},
                   opset=10, attrs={"strides": [2, 2]})
    exported = check_round_trip(model, {"x": _X_U8}, graph.QLinearConvOp, exact=True)
    assert [n.op_type for n in exported.graph.node] == ["ConvInteger"]


def test_qlinear_matmul_and_matmul_integer():
    a = RNG.integers(0, 256, (2, 4, 5)).astype(np.uint8)
    b = RNG.integers(-64, 64, (5, 3)).astype(np.int8)
    initializers = {
        "as": np.array(0.02, np.float32), "az": np.array(3, np.uint8), "b": b,
        "bs": np.array([0.01, 0.02, 0.03], np.float32), "bz": np.array([1, 2, 3], np.int8),
        "ys": np.array(0.5, np.float32), "yz": np.array(7, np.uint8)}
    exported = check_round_trip(_model("QLinearMatMul", {"a": a}, initializers, opset=21),
                                {"a": a}, graph.QLinearMatMulOp, exact=True)
    assert [n.op_type for n in exported.graph.node] == ["QLinearMatMul"]
    model = _model("MatMulInteger", {"a": a}, {"b": b, "az": np.array(3, np.uint8),
                                               "bz": np.array([1, 2, 3], np.int8)}, opset=10)
    check_round_trip(model, {"a": a}, graph.QLinearMatMulOp, exact=True)
    # a run-time zero point: the importer's correction is the product's i32 bias
    x = _f32(4, 5)
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["q", "s", "z"]),
             helper.make_node("MatMulInteger", ["q", "b", "z"], ["y"])]
    model = graph_model(nodes, {"x": x}, {"y": (np.int32, [4, 3])},
                        initializers={"b": b.astype(np.uint8)}, opset=11, ir_version=10)
    exported = check_round_trip(model, {"x": x}, graph.QLinearMatMulOp, exact=True)
    assert [f.name for f in exported.functions] == ["MatMulIntegerBias"]


def _qdq_conv(quantize_result: bool) -> onnx.ModelProto:
    """DQ(x), DQ(w) per channel, DQ(b) -> Conv [-> Relu -> Q]: what fuse-qdq-linear makes a
    graph.qlinear_conv of (narrowed by the Relu / a float result)."""
    xs, ws = np.float32(0.02), np.array([0.01, 0.02, 0.03], np.float32)
    nodes = [helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xf"]),
             helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wf"], axis=0),
             helper.make_node("DequantizeLinear", ["b", "bs", "bz"], ["bf"], axis=0),
             helper.make_node("Conv", ["xf", "wf", "bf"], ["c"], pads=[1, 1, 1, 1])]
    initializers = {"xs": np.array(xs), "xz": np.array(3, np.uint8), "w": _W_S8, "ws": ws,
                    "wz": np.zeros(3, np.int8), "b": _BIAS, "bs": (xs * ws).astype(np.float32),
                    "bz": np.zeros(3, np.int32)}
    out = {"c": (np.float32, [1, 3, 5, 5])}
    if quantize_result:
        nodes += [helper.make_node("Relu", ["c"], ["r"]),
                  helper.make_node("QuantizeLinear", ["r", "ys", "yz"], ["y"])]
        initializers |= {"ys": np.array(0.05, np.float32), "yz": np.array(100, np.uint8)}
        out = {"y": (np.uint8, [1, 3, 5, 5])}
    return graph_model(nodes, {"xq": _X_U8}, out, initializers=initializers, opset=13,
                       ir_version=10)


def test_qdq_gemm_made_qlinear_matmul_with_bias_and_clip():
    """QLinearMatMul takes no bias: MatMulInteger, + bias, scaled, quantized, clipped."""
    xq = RNG.integers(0, 256, (4, 5)).astype(np.uint8)
    xs, ws = np.float32(0.02), np.array([0.01, 0.02, 0.03], np.float32)
    nodes = [helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xf"]),
             helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wf"], axis=0),
             helper.make_node("DequantizeLinear", ["b", "bs", "bz"], ["bf"], axis=0),
             helper.make_node("Gemm", ["xf", "wf", "bf"], ["c"], transB=1),
             helper.make_node("Clip", ["c", "lo", "hi"], ["r"]),
             helper.make_node("QuantizeLinear", ["r", "ys", "yz"], ["y"])]
    initializers = {
        "xs": np.array(xs), "xz": np.array(3, np.uint8),
        "w": RNG.integers(-64, 64, (3, 5)).astype(np.int8), "ws": ws, "wz": np.zeros(3, np.int8), "b": _BIAS, "bs": (xs * ws).astype(np.float32),
        "bz": np.zeros(3, np.int32), "ys": np.array(0.05, np.float32),
        "yz": np.array(100, np.uint8), "lo": np.array(-1.0, np.float32),
        "hi": np.array(2.0, np.float32)}
    model = graph_model(nodes, {"xq": xq}, {"y": (np.uint8, [4, 3])},
                        initializers=initializers, opset=13, ir_version=10)
    exported = check_round_trip(model, {"xq": xq}, graph.QLinearMatMulOp, exact=True,
                                pass_pipeline="fuse-qdq-linear")
    assert [f.name for f in exported.functions] == ["MatMulIntegerRequantized"]


@pytest.mark.parametrize("quantize_result, function, tolerance", [
    (True, "QLinearConvClip", {"exact": True}),
    # onnxruntime's original adds float products, the export the exact integer sum
    (False, "ConvIntegerScaled", FLOAT),
])
def test_qdq_conv_made_qlinear(quantize_result, function, tolerance):
    exported = check_round_trip(_qdq_conv(quantize_result), {"xq": _X_U8}, graph.QLinearConvOp,
                                pass_pipeline="fuse-qdq-linear", **tolerance)
    assert [f.name for f in exported.functions] == [function]


# ------------------------------------------------------------------ vision


@pytest.mark.parametrize("pads, nodes", [([1, 0, 0, 1], ["ConvTransposeGrown"]),
                                         ([1, 1, 1, 1], ["ConvTranspose"])])
def test_conv_transpose(pads, nodes):
    """An output_padding of a stride or more (dilation 2) is what imports to
    graph.conv_transpose; onnxruntime and onnx.reference refuse it, so the original's
    values come from onnxc's numpy evaluator."""
    feeds = {"x": _f32(1, 2, 5, 5), "w": _f32(2, 3, 3, 3), "b": _f32(3)}
    model = _model("ConvTranspose", feeds, opset=11, attrs={
        "strides": [1, 1], "dilations": [2, 2], "output_padding": [1, 1], "pads": pads})
    exported = check_round_trip(model, feeds, graph_vision.ConvTransposeOp,
                                reference="evaluator", **FLOAT)
    assert [n.op_type for n in exported.graph.node] == nodes


def test_col2im_and_grid_sample():
    x = _f32(1, 8, 12)
    check_round_trip(_model("Col2Im", {"x": x}, {"i": np.array([4, 5], np.int64),
                                                 "b": np.array([2, 2], np.int64)}, opset=18),
                     {"x": x}, graph_vision.Col2ImOp, **FLOAT)
    image, grid = _f32(1, 2, 5, 5), RNG.uniform(-1.2, 1.2, (1, 3, 4, 2)).astype(np.float32)
    for mode, padding, align in (("linear", "zeros", 0), ("nearest", "border", 1),
                                 ("cubic", "reflection", 1)):
        model = _model("GridSample", {"x": image, "g": grid}, opset=20, attrs={
            "mode": mode, "padding_mode": padding, "align_corners": align})
        check_round_trip(model, {"x": image, "g": grid}, graph_vision.GridSampleOp, **FLOAT)


@pytest.mark.parametrize("transform", ["half_pixel", "output_half_pixel"])
def test_roi_align(transform):
    """onnxruntime has no RoiAlign-22 kernel (the exported opset): onnx.reference runs the
    export."""
    feeds = {"x": _f32(1, 2, 5, 5), "r": np.array([[0, 0, 3, 3], [1, 1, 4, 2.5]], np.float32),
             "i": np.array([0, 0], np.int64)}
    model = _model("RoiAlign", feeds, opset=16, attrs={
        "output_height": 2, "output_width": 3, "sampling_ratio": 2, "spatial_scale": 0.9,
        "mode": "avg", "coordinate_transformation_mode": transform})
    check_round_trip(model, feeds, graph_vision.RoiAlignOp, exported_by="onnx", **FLOAT)


@pytest.mark.parametrize("storage_order", [0, 1])
def test_max_pool_indices(storage_order):
    x = _f32(1, 2, 5, 5)
    model = _model("MaxPool", {"x": x}, opset=12, outputs=["y", "i"], attrs={
        "kernel_shape": [2, 2], "strides": [2, 2], "pads": [0, 0, 1, 1],
        "storage_order": storage_order})
    check_round_trip(model, {"x": x}, graph_vision.MaxPoolIndicesOp, exact=True)


@pytest.mark.parametrize("output_shape", [None, [1, 2, 5, 6]])
def test_max_unpool(output_shape):
    """A larger output_shape places the unpooled tensor at the start (onnx.reference's
    reading, which onnxc follows; onnxruntime re-indexes into the larger shape): the
    export, MaxUnpool then Pad, runs that in onnxruntime."""
    x = _f32(1, 2, 4, 4)
    pooled = helper.make_node("MaxPool", ["x"], ["p", "i"], kernel_shape=[2, 2], strides=[2, 2])
    unpool = helper.make_node("MaxUnpool", ["p", "i"] + (["s"] if output_shape else []), ["y"],
                              kernel_shape=[2, 2], strides=[2, 2])
    model = graph_model([pooled, unpool], {"x": x}, {"y": None}, initializers={
        "s": None if output_shape is None else np.array(output_shape, np.int64)},
        opset=11, ir_version=10, infer_shapes=True)
    exported = check_round_trip(model, {"x": x}, graph_vision.MaxUnpoolOp, exact=True,
                                reference="onnx" if output_shape else "onnxruntime")
    assert exported.graph.node[-1].op_type == ("MaxUnpoolPadded" if output_shape
                                               else "MaxUnpool")


@pytest.mark.parametrize("masked", [True, False])
def test_deform_conv_columns(masked):
    feeds = {"x": _f32(1, 4, 5, 5), "w": _f32(6, 2, 3, 3),
             "o": RNG.uniform(-1, 1, (1, 2 * 9 * 2, 3, 3)).astype(np.float32), "b": _f32(6)}
    if masked:
        feeds["m"] = RNG.uniform(0, 1, (1, 2 * 9, 3, 3)).astype(np.float32)
    model = _model("DeformConv", feeds, opset=19, attrs={"offset_group": 2, "group": 2})
    exported = check_round_trip(model, feeds, graph_vision.DeformColumnsOp, **FLOAT)
    (function,) = exported.functions
    assert function.name == "DeformColumns"
    assert "DeformConv" in {n.op_type for n in function.node}


_X_RESIZE = _f32(1, 2, 4, 6)


@pytest.mark.parametrize("initializers, node_inputs, attrs, request_input", [
    ({"s": np.array([1, 1, 2, 1.5], np.float32)}, ["x", "", "s"], {"mode": "linear"}, "sizes"),
    ({"s": np.array([1, 1, 0.6, 0.7], np.float32)}, ["x", "", "s"],
     {"mode": "cubic", "antialias": 1, "exclude_outside": 1, "cubic_coeff_a": -0.5}, "scales"),
    ({"z": np.array([1, 2, 7, 5], np.int64)}, ["x", "", "", "z"],
     {"mode": "nearest", "coordinate_transformation_mode": "align_corners",
      "nearest_mode": "ceil"}, "sizes"),
    ({"z": np.array([7, 9], np.int64)}, ["x", "", "", "z"],
     {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel",
      "axes": [2, 3]}, "sizes"),
    ({"z": np.array([8, 8], np.int64)}, ["x", "", "", "z"],
     {"mode": "linear", "keep_aspect_ratio_policy": "not_larger", "axes": [2, 3]}, "sizes"),
    ({"z": np.array([7, 7], np.int64)}, ["x", "", "", "z"],
     {"mode": "linear", "keep_aspect_ratio_policy": "not_smaller", "axes": [2, 3]}, "sizes"),
    ({"r": np.array([0, 0, 0.1, 0.2, 1, 1, 0.8, 0.9], np.float32),
      "z": np.array([1, 2, 5, 5], np.int64)}, ["x", "r", "", "z"],
     {"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize",
      "extrapolation_value": -1.0}, "sizes"),
])
def test_resize(initializers, node_inputs, attrs, request_input):
    model = _model("Resize", {"x": _X_RESIZE}, initializers, opset=19, node_inputs=node_inputs,
                   attrs=attrs)
    exported = check_round_trip(model, {"x": _X_RESIZE}, graph_resize.ResizeOp, **FLOAT)
    (node,) = exported.graph.node
    assert node.input[2 if request_input == "scales" else 3]


def test_resize_with_a_run_time_roi_and_upsample():
    roi = np.array([0.1, -0.2, 0.8, 1.3], np.float32)
    model = _model("Resize", {"x": _X_RESIZE, "r": roi}, {"z": np.array([5, 5], np.int64)},
                   opset=19, node_inputs=["x", "r", "", "z"],
                   attrs={"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize",
                          "axes": [2, 3]})
    exported = check_round_trip(model, {"x": _X_RESIZE, "r": roi}, graph_resize.ResizeOp,
                                **FLOAT)
    assert [n.op_type for n in exported.graph.node] == ["Concat", "Gather", "Resize"]
    model = _model("Upsample", {"x": _X_RESIZE}, {"s": np.array([1, 1, 2, 3], np.float32)},
                   opset=9, attrs={"mode": "nearest"})
    check_round_trip(model, {"x": _X_RESIZE}, graph_resize.ResizeOp, exact=True)


# ------------------------------------------------------------------ recurrences

_STEPS, _BATCH, _INPUT, _HIDDEN = 5, 2, 3, 4
_RNN_OPS = {"LSTM": graph_rnn.LSTMRecurrenceOp, "GRU": graph_rnn.GRURecurrenceOp,
            "RNN": graph_rnn.RNNRecurrenceOp}


def _recurrent_model(kind: str, direction: str, layout: int, lens: bool, attrs: dict):
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[kind]
    d = 2 if direction == "bidirectional" else 1
    s, b, h = _STEPS, _BATCH, _HIDDEN
    feeds = {"x": _f32(*((b, s, _INPUT) if layout else (s, b, _INPUT))),
             "h0": _f32(*((b, d, h) if layout else (d, b, h)))}
    if lens:
        feeds["lens"] = np.array([s, 2], np.int32)
    initializers = {"W": _f32(d, gates * h, _INPUT, scale=0.5),
                    "R": _f32(d, gates * h, h, scale=0.5), "B": _f32(d, 2 * gates * h, scale=0.5)}
    node_inputs = ["x", "W", "R", "B", "lens" if lens else "", "h0"]
    outputs = ["y", "yh"]
    if kind == "LSTM":
        feeds["c0"] = _f32(*feeds["h0"].shape)
        initializers["P"] = _f32(d, 3 * h)
        node_inputs += ["c0", "P"]
        outputs.append("yc")
    inputs = {n: feeds[n] for n in ("x", "lens", "h0", "c0") if n in feeds}
    model = _model(kind, inputs, initializers, opset=14, node_inputs=node_inputs,
                   outputs=outputs, attrs={"hidden_size": h, "direction": direction,
                                           "layout": layout, **attrs})
    return model, feeds


@pytest.mark.parametrize("kind, direction, layout, lens, attrs", [
    ("LSTM", "forward", 0, False, {}),
    ("LSTM", "bidirectional", 0, True, {"clip": 2.0, "input_forget": 1}),
    ("LSTM", "bidirectional", 1, True, {"clip": 2.0}),  # layout 1: onnx.reference
    ("GRU", "reverse", 0, False, {"linear_before_reset": 1}),
    ("GRU", "bidirectional", 0, False, {
        "activations": ["HardSigmoid", "LeakyRelu", "Sigmoid", "ScaledTanh"],
        "activation_alpha": [0.3, 0.1, 1.5], "activation_beta": [0.4, 0.7]}),
    ("RNN", "bidirectional", 0, True, {"activations": ["Affine", "Elu"],
                                       "activation_alpha": [0.5, 0.8],
                                       "activation_beta": [0.2]}),
])
def test_recurrences_come_back_as_one_node(kind, direction, layout, lens, attrs):
    """The projection GEMM and the recurrence become the ONNX op again, on X and W."""
    model, feeds = _recurrent_model(kind, direction, layout, lens, attrs)
    by = "onnx" if layout else "onnxruntime"  # onnxruntime runs no layout 1
    exported = check_round_trip(model, feeds, _RNN_OPS[kind], reference=by, exported_by=by,
                                **FLOAT)
    assert [n.op_type for n in exported.graph.node] == [f"{kind}Recurrence"]
    (function,) = exported.functions
    assert kind in {n.op_type for n in function.node}


def test_recurrence_on_gates_it_did_not_project():
    """Gates from elsewhere (here graph inputs): the ONNX op on the gates, with a W that
    picks each direction's block, against onnxc's numpy evaluator."""
    s, b, h = 3, 2, 2
    t = {"g": f"tensor<{s}x{b}x2x{3 * h}xf32>", "r": f"tensor<2x{3 * h}x{h}xf32>",
         "rb": f"tensor<2x{h}xf32>", "h0": f"tensor<2x{b}x{h}xf32>", "lens": f"tensor<{b}xi64>",
         "y": f"tensor<{s}x2x{b}x{h}xf32>"}
    module = parse_graph(f"""
func.func @main(%g: {t['g']}, %r: {t['r']}, %rb: {t['rb']}, %h0: {t['h0']}, %lens: {t['lens']}) -> ({t['y']}, {t['h0']}) {{
  %y, %yh = graph.gru_recurrence(%g, %r) recurrence_bias %rb : {t['rb']} sequence_lens %lens : {t['lens']} initial_h %h0 : {t['h0']} {{direction = "bidirectional", activations = ["Sigmoid", "Tanh", "Sigmoid", "Tanh"], activation_alpha = array<f64: 0.0, 0.0, 0.0, 0.0>, activation_beta = array<f64: 0.0, 0.0, 0.0, 0.0>, layout = 0 : i64, linear_before_reset = 1 : i64}} : {t['g']}, {t['r']} -> {t['y']}, {t['h0']}
  func.return %y, %yh : {t['y']}, {t['h0']}
}}""")
    feeds = {"g": _f32(s, b, 2, 3 * h), "r": _f32(2, 3 * h, h), "rb": _f32(2, h),
             "h0": _f32(2, b, h), "lens": np.array([3, 1], np.int64)}
    expected = evaluate(module, list(feeds.values()))
    exported = export_onnx(module)
    onnx.checker.check_model(exported, full_check=True)
    for want, got in zip(expected, session(exported).run(None, feeds), strict=True):
        np.testing.assert_allclose(got, want, **FLOAT)
    (function,) = exported.functions
    weights = [n for n in function.node if n.op_type == "Constant" and n.output[0].startswith("W")]
    pick = numpy_helper.to_array(weights[0].attribute[0].t)
    assert pick.shape == (2, 3 * h, 2 * 3 * h) and pick.sum() == 2 * 3 * h


# ------------------------------------------------------------------ control flow

_IF = """
<ir_version: 10, opset_import: ["" : 17]>
g (bool c, float[3] a, float[3] b) => (float[3] y, float[3] z) {
  k = Constant <value = float[3] {1, 2, 3}> ()
  y, z = If (c) <
    then_branch = t () => (float[3] ya, float[3] za) { s = Add (a, b)  ya = Mul (s, k)  za = Identity (a) },
    else_branch = e () => (float[3] yb, float[3] zb) { yb = Sub (a, b)  zb = Identity (k) }>
}"""

_COUNTED_LOOP = """
<ir_version: 10, opset_import: ["" : 17]>
g (float[2,3] x) => (float[2,3] acc, float[4,2,3] rows) {
  n = Constant <value = int64 {4}> ()
  t = Constant <value = bool {1}> ()
  acc, rows = Loop (n, t, x) <body = b (int64 i, bool cin, float[2,3] s) => (bool cout, float[2,3] s2, float[2,3] r) {
     cout = Identity (cin)
     f = Cast <to = 1> (i)
     s2 = Add (s, f)
     r = Mul (s2, x)
  }>
}"""

_WHILE_LOOP = """
<ir_version: 10, opset_import: ["" : 17]>
g (float[3] x, float lim) => (float[3] y, int64 k) {
  t = Constant <value = bool {1}> ()
  zero = Constant <value = int64 {0}> ()
  y, k = Loop ("", t, x, zero) <body = b (int64 i, bool cin, float[3] s, int64 kk) => (bool cout, float[3] s2, int64 k2) {
     two = Constant <value = float {2}> ()
     one = Constant <value = int64 {1}> ()
     s2 = Mul (s, two)
     k2 = Add (kk, one)
     m = ReduceMax <keepdims = 0> (s2)
     cout = Less (m, lim)
  }>
}"""

_SCAN = """
<ir_version: 10, opset_import: ["" : 17]>
g (float[2] s0, float[5,2] xs) => (float[2] s, float[2,5] ys) {
  s, ys = Scan <num_scan_inputs = 1, scan_output_axes = [1], scan_input_directions = [1], body = b (float[2] st, float[2] xi) => (float[2] st2, float[2] yo) {
     st2 = Add (st, xi)
     yo = Mul (st2, xi)
  }> (s0, xs)
}"""

_IF_IN_LOOP = """
<ir_version: 10, opset_import: ["" : 17]>
g (float[3] x) => (float[3] y) {
  n = Constant <value = int64 {3}> ()
  t = Constant <value = bool {1}> ()
  y = Loop (n, t, x) <body = b (int64 i, bool cin, float[3] s) => (bool cout, float[3] s2) {
     cout = Identity (cin)
     one = Constant <value = int64 {1}> ()
     odd = Equal (i, one)
     s2 = If (odd) <then_branch = tt () => (float[3] p) { p = Neg (s) },
                    else_branch = ee () => (float[3] q) { q = Relu (x) }>
  }>
}"""


@pytest.mark.parametrize("text, feeds, op, top", [
    (_IF, [{"c": np.array(True)}, {"c": np.array(False)}], graph.IfOp, ["If"]),
    (_COUNTED_LOOP, [{}], graph.LoopOp, ["Loop"]),
    (_WHILE_LOOP, [{"lim": np.array(100, np.float32)}, {"lim": np.array(0, np.float32)}],
     graph.LoopOp, ["Loop"]),
    (_SCAN, [{}], graph.LoopOp, ["Loop", "Transpose"]),
    (_IF_IN_LOOP, [{}], graph.IfOp, ["Loop"]),
])
def test_control_flow(text, feeds, op, top):
    """Regions become subgraphs that read outer values by name; what a branch yields
    without computing it (an input, a constant) is copied by an Identity."""
    model = onnx.parser.parse_model(text)
    data = {i.name: np.abs(_f32(*[d.dim_value for d in i.type.tensor_type.shape.dim])) + 0.1
            for i in model.graph.input if i.type.tensor_type.elem_type == TensorProto.FLOAT}
    for extra in feeds:
        exported = check_round_trip(model, {**data, **extra}, op, exact=True)
    assert [n.op_type for n in exported.graph.node] == top
