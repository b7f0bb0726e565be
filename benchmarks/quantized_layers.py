"""ResNet-50's int8 convolutions one at a time: onnxc's qlinear_conv kernel next to onnxruntime.

Each distinct conv shape of ResNet-50 (batch 1, 224x224) becomes an ONNX QLinearConv (u8
input, per-channel s8 weight with zero point 0, i32 bias, u8 output) for onnxruntime and the
same graph.qlinear_conv for onnxc, built directly with NHWC input and output types, so only
the kernel is timed (in a whole model the layout pass keeps activations NHWC between convs).
Both run at one thread, interleaved in one process; the table gives medians, GOPS (2 ops per
multiply-add) and onnxc / onnxruntime, and checks that the outputs agree (max |difference|
and the fraction of elements that differ).

    python benchmarks/quantized_layers.py [--repeat 40] [--only 0,2,19] [--isa avx2]

`--target x86-64-v3` compiles onnxc's kernels for AVX2 without AVX-512 (they run on this
CPU too; onnxruntime keeps the host's own kernels); `--isa portable` builds the portable
int8 form. `--narrow` draws
weights in [-60, 60], where vpmaddubsw cannot saturate (the "maddubs" AVX2 form).
"""

from __future__ import annotations

import argparse
import statistics
import time
from contextlib import contextmanager

import numpy as np
import onnxruntime as ort
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
    f32,
    i32,
    i64,
)
from xdsl.ir import Block, Region

import onnxc
import onnxc.pipeline
from onnxc.dialects import graph
from onnxc.dialects.graph_qlinear import QLinearConvOp
from onnxc.dialects.layout import with_layout
from onnxc.lowering.graph_to_loops import int8_layout

TARGET = ["host"]
"""What onnxc compiles for (--target)."""
WEIGHT_RANGE = 100
"""Weights are drawn from [-WEIGHT_RANGE, WEIGHT_RANGE)."""

SHAPES = (  # input channels, input size, output channels, kernel, stride
    (3, 224, 64, 7, 2), (64, 56, 64, 1, 1), (64, 56, 64, 3, 1), (64, 56, 256, 1, 1),
    (256, 56, 64, 1, 1), (256, 56, 128, 1, 1), (128, 56, 128, 3, 2), (128, 28, 512, 1, 1),
    (256, 56, 512, 1, 2), (512, 28, 128, 1, 1), (128, 28, 128, 3, 1), (512, 28, 256, 1, 1),
    (256, 28, 256, 3, 2), (256, 14, 1024, 1, 1), (512, 28, 1024, 1, 2), (1024, 14, 256, 1, 1),
    (256, 14, 256, 3, 1), (1024, 14, 512, 1, 1), (512, 14, 512, 3, 2), (512, 7, 2048, 1, 1),
    (1024, 14, 2048, 1, 2), (2048, 7, 512, 1, 1), (512, 7, 512, 3, 1),
)
UI8 = IntegerType(8, Signedness.UNSIGNED)
SI8 = IntegerType(8, Signedness.SIGNED)
X_ZP, X_SCALE, Y_SCALE = 120, np.float32(0.02), np.float32(0.1)


def _constant(array: np.ndarray, element) -> graph.ConstantOp:
    t = TensorType(element, array.shape)
    value = DenseIntOrFPElementsAttr(t, BytesAttr(np.ascontiguousarray(array).tobytes()))
    return graph.ConstantOp.create(properties={"value": value}, result_types=[t])


def onnxc_module(w, b, scales, x_shape, y_shape, k, s) -> ModuleOp:
    p = k // 2
    x_type = with_layout(TensorType(UI8, x_shape), "NHWC")
    y_type = with_layout(TensorType(UI8, y_shape), "NHWC")
    block = Block(arg_types=[x_type])
    wc, bc = _constant(w, SI8), _constant(b, i32)
    props = {
        "input_zero_point": IntegerAttr(X_ZP, i64),
        "weight_zero_point": DenseArrayBase.from_list(i64, [0]),
        "output_scale": DenseArrayBase.from_list(f32, [float(v) for v in scales]),
        "output_zero_point": IntegerAttr(0, i64),
        "strides": DenseArrayBase.from_list(i64, [s, s]),
        "pads": DenseArrayBase.from_list(i64, [p] * 4),
        "dilations": DenseArrayBase.from_list(i64, [1, 1]),
        "group": IntegerAttr(1, i64),
    }
    conv = QLinearConvOp.create(operands=[block.args[0], wc.results[0], bc.results[0]],
                                result_types=[y_type], properties=props)
    block.add_ops([wc, bc, conv, func.ReturnOp(conv.results[0])])
    return ModuleOp([func.FuncOp("main", ([x_type], [y_type]), Region(block))])


@contextmanager
def _module_importer(module: ModuleOp):
    """onnxc.compile with `module` standing in for the imported model."""
    original = onnxc.pipeline.import_onnx
    onnxc.pipeline.import_onnx = lambda model: module
    try:
        yield
    finally:
        onnxc.pipeline.import_onnx = original


def ort_session(x, w, b, ws, k, s) -> ort.InferenceSession:
    p = k // 2
    inits = {"xs": np.array(X_SCALE), "xz": np.array(np.uint8(X_ZP)), "w": w, "ws": ws,
             "wz": np.zeros(len(ws), np.int8), "ys": np.array(Y_SCALE),
             "yz": np.array(np.uint8(0)), "b": b}
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"],
                            ["y"], pads=[p] * 4, strides=[s, s])
    g = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, None)],
        [numpy_helper.from_array(v, n) for n, v in inits.items()])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])


def layer(c, h, cout, k, s, repeat: int, rng) -> tuple[int, float, float, int, float]:
    oh = (h + 2 * (k // 2) - k) // s + 1
    x = rng.integers(0, 256, (1, c, h, h)).astype(np.uint8)
    w = rng.integers(-WEIGHT_RANGE, WEIGHT_RANGE, (cout, c, k, k)).astype(np.int8)
    b = rng.integers(-1000, 1000, cout).astype(np.int32)
    ws = rng.uniform(0.002, 0.01, cout).astype(np.float32)
    session = ort_session(x, w, b, ws, k, s)
    scales = (X_SCALE * ws / Y_SCALE).astype(np.float32)  # onnxruntime's order, in f32
    module = onnxc_module(w, b, scales, x.shape, (1, cout, oh, oh), k, s)
    with _module_importer(module):
        dummy = helper.make_model(helper.make_graph([], "g", [], []))
        compiled = onnxc.compile(dummy, pass_pipeline="", cache_dir=False, num_threads=1,
                                 target=TARGET[0])
    x_nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).reshape(x.shape)  # NHWC bytes
    got = compiled(x_nhwc)[0].reshape(1, oh, oh, cout).transpose(0, 3, 1, 2)
    want = session.run(None, {"x": x})[0]
    diff = np.abs(got.astype(np.int32) - want.astype(np.int32))
    mine, theirs = [], []
    for i in range(repeat + 3):
        start = time.perf_counter()
        compiled(x_nhwc)
        middle = time.perf_counter()
        session.run(None, {"x": x})
        if i >= 3:
            mine.append(middle - start)
            theirs.append(time.perf_counter() - middle)
    macs = oh * oh * cout * c * k * k
    return (macs, statistics.median(mine), statistics.median(theirs), int(diff.max()),
            float(np.count_nonzero(diff)) / diff.size)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=40)
    parser.add_argument("--only", default="")
    parser.add_argument("--isa", choices=("target", "portable"), default="target")
    parser.add_argument("--target", default="host")
    parser.add_argument("--narrow", action="store_true")
    args = parser.parse_args(argv)
    if args.isa == "portable":
        int8_layout.target_int8_isa = lambda target: "portable"
    TARGET[0] = args.target
    global WEIGHT_RANGE
    WEIGHT_RANGE = 60 if args.narrow else 100
    only = {int(i) for i in args.only.split(",") if i}
    rng = np.random.default_rng(0)
    print(f"{'#':>2} {'C':>5} {'H':>4} {'Cout':>5} {'k':>2} {'s':>2} {'onnxc ms':>9} "
          f"{'GOPS':>6} {'ort ms':>8} {'GOPS':>6} {'ratio':>6} {'maxdiff':>7} {'differ':>7}")
    totals = [0.0, 0.0]
    for i, shape in enumerate(SHAPES):
        if only and i not in only:
            continue
        macs, mine, theirs, dmax, dfrac = layer(*shape, args.repeat, rng)
        totals[0] += mine
        totals[1] += theirs
        print(f"{i:>2} {shape[0]:>5} {shape[1]:>4} {shape[2]:>5} {shape[3]:>2} {shape[4]:>2} "
              f"{mine * 1e3:>9.3f} {2 * macs / mine / 1e9:>6.0f} {theirs * 1e3:>8.3f} "
              f"{2 * macs / theirs / 1e9:>6.0f} {mine / theirs:>6.2f} {dmax:>7} {dfrac:>7.4f}",
              flush=True)
    print(f"sum of the distinct shapes: onnxc {totals[0] * 1e3:.2f} ms, "
          f"onnxruntime {totals[1] * 1e3:.2f} ms")


if __name__ == "__main__":
    import results_file

    with results_file.recording():
        main()
