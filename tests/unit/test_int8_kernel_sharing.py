"""Quantized ResNet-style chains compiled whole: kernel sharing and the ui8 / i8 NHWC MaxPool.

Convs that differ only in values the int8 kernel reads from its tables (output scale, output
zero point and bounds, weights, bias) must share one kernel (int8_gemm.int8_gemm_key),
and a byte MaxPool between convs must stay in NHWC (no layout conversion around it). Outputs
are compared with onnxruntime bit for bit (QLinearConv requantizes in f32 as MLAS does; a
max pool moves bytes).
"""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects import func

import onnxc
from onnxc.dialects import graph
from onnxc.dialects.layout import ConvertOp, layout_of
from onnxc import pipeline

RNG = np.random.default_rng(11)
ONNX_TYPE = {np.uint8: TensorProto.UINT8, np.int8: TensorProto.INT8}
C = 80
"""Channels: one 64-byte vector of the pool and 16 scalar lanes, bytes on both sides of 128."""


def _qconv(name, x, cin, cout, dtype, y_zp, y_scale, inits):
    """A 3x3 pad-1 QLinearConv with per-channel s8 weights and an i32 bias."""
    w = RNG.integers(-60, 60, (cout, cin, 3, 3), dtype=np.int8)
    inits += [
        numpy_helper.from_array(w, f"{name}_w"),
        numpy_helper.from_array(RNG.uniform(0.002, 0.01, cout).astype(np.float32), f"{name}_ws"),
        numpy_helper.from_array(np.zeros(cout, np.int8), f"{name}_wz"),
        numpy_helper.from_array(RNG.integers(-500, 500, cout, dtype=np.int32), f"{name}_b"),
        numpy_helper.from_array(np.array(y_scale, np.float32), f"{name}_ys"),
        numpy_helper.from_array(np.array(y_zp, dtype), f"{name}_yz"),
    ]
    return helper.make_node(
        "QLinearConv", [x, "xs", "xz", f"{name}_w", f"{name}_ws", f"{name}_wz",
                        f"{name}_ys", f"{name}_yz", f"{name}_b"], [name], pads=[1, 1, 1, 1])


def _model(dtype):
    """x -> conv a -> MaxPool 3x3 s2 -> conv b -> conv c: b and c share a shape and
    differ in output scale and zero point, weights and bias (every conv reads its input
    with the scale / zero point xs / xz: the values only need to be consistent for ORT)."""
    c = C
    lo = 0 if dtype is np.uint8 else -128
    inits = [numpy_helper.from_array(np.array(0.05, np.float32), "xs"),
             numpy_helper.from_array(np.array(lo + 3, dtype), "xz")]
    nodes = [
        _qconv("a", "x", c, c, dtype, lo + 3, 0.4, inits),
        helper.make_node("MaxPool", ["a"], ["p"], kernel_shape=[3, 3], strides=[2, 2],
                         pads=[1, 1, 1, 1]),
        _qconv("b", "p", c, c, dtype, lo + 5, 0.2, inits),
        _qconv("c", "b", c, c, dtype, lo + 9, 0.05, inits),
    ]
    t = ONNX_TYPE[dtype]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", t, [1, c, 14, 14])],
                          [helper.make_tensor_value_info("c", t, [1, c, 7, 7])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def _lowered(model):
    module = onnxc.optimize(model)
    pipeline.run_passes(pipeline.make_context(), module, pipeline.graph_to_loops())
    return module


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_matches_onnxruntime(dtype):
    model = _model(dtype)
    x = RNG.integers(0, 256, (1, C, 14, 14)).astype(np.uint8).view(dtype) if dtype is np.int8 \
        else RNG.integers(0, 256, (1, C, 14, 14), dtype=np.uint8)
    compiled = onnxc.compile(model, cache_dir=False, num_threads=1)
    got = np.asarray(compiled(x)[0])
    session = onnxruntime.InferenceSession(model.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    expected = session.run(None, {"x": x})[0]
    np.testing.assert_array_equal(got, expected)


def test_same_shape_convs_share_one_kernel():
    module = _lowered(_model(np.uint8))
    kernels = [f for f in module.ops if isinstance(f, func.FuncOp)
               and "onnxc.kernel" in f.attributes]
    convs = [f for f in kernels if f.attributes["onnxc.kernel"].data == "graph.qlinear_conv"]
    # a (14x14) and b, c (7x7): two shapes, two kernels (b and c share)
    assert len(convs) == 2


def test_byte_max_pool_stays_nhwc():
    module = onnxc.optimize(_model(np.uint8))
    passes = pipeline.graph_to_loops()
    pipeline.run_passes(pipeline.make_context(), module,
                        passes[:passes.index("convert-graph-to-loops")])
    pools = [o for o in module.walk() if isinstance(o, graph.MaxPoolOp)]
    assert [layout_of(p.input.type) for p in pools] == ["NHWC"]
    assert [layout_of(p.output.type) for p in pools] == ["NHWC"]
    # only the model's input and output cross layouts
    assert sum(isinstance(o, ConvertOp) for o in module.walk()) == 2
