"""Micro-benchmark: onnxc's NHWC conv kernels against onnxruntime's Conv, one layer at a time.

For each layer shape (the main ResNet-50 ones and MobileNetV2 depthwise ones), one model
x -> Conv(w, b) -> Relu -> y is run by
  - onnxruntime (ORT_ENABLE_ALL, preallocated output through IOBinding; its NCHWc reorders
    at the model boundary are included, as they are in a one-conv model),
  - onnxc with the conv in NHWC and the model's input and output in NHWC too ("kernel": the
    conv kernel alone, plus its padded-input copy),
  - onnxc with NCHW input and output ("+convert": layout.convert on both sides).
Timings are interleaved (ORT, kernel, +convert per round) and the medians reported, with
GFLOP/s (2 * MACs) and the ratio of onnxc's kernel GFLOP/s to onnxruntime's.

Usage: python benchmarks/conv_bench.py [--threads 1] [--repeat 7] [--only res2_3x3_64,...]
With one thread, times are process CPU time (time.process_time): on a machine shared with
other jobs, wall time mostly measures the neighbours. With more threads, wall time.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

LAYERS = {
    # name: (x shape, w shape, attrs)
    "conv1_7x7s2": ((1, 3, 224, 224), (64, 3, 7, 7), {"strides": [2, 2], "pads": [3, 3, 3, 3]}),
    "res2_1x1_64": ((1, 64, 56, 56), (64, 64, 1, 1), {}),
    "res2_3x3_64": ((1, 64, 56, 56), (64, 64, 3, 3), {"pads": [1, 1, 1, 1]}),
    "res2_1x1_64-256": ((1, 64, 56, 56), (256, 64, 1, 1), {}),
    "res2_1x1_256-64": ((1, 256, 56, 56), (64, 256, 1, 1), {}),
    "res3_1x1s2_256-512": ((1, 256, 56, 56), (512, 256, 1, 1), {"strides": [2, 2]}),
    "res3_3x3_128": ((1, 128, 28, 28), (128, 128, 3, 3), {"pads": [1, 1, 1, 1]}),
    "res3_1x1_512-128": ((1, 512, 28, 28), (128, 512, 1, 1), {}),
    "res4_3x3_256": ((1, 256, 14, 14), (256, 256, 3, 3), {"pads": [1, 1, 1, 1]}),
    "res4_1x1_1024-256": ((1, 1024, 14, 14), (256, 1024, 1, 1), {}),
    "res5_3x3_512": ((1, 512, 7, 7), (512, 512, 3, 3), {"pads": [1, 1, 1, 1]}),
    "res5_1x1_2048-512": ((1, 2048, 7, 7), (512, 2048, 1, 1), {}),
    "sqz_conv1_7x7s2": ((1, 3, 224, 224), (96, 3, 7, 7), {"strides": [2, 2]}),
    "sqz_fire2_squeeze": ((1, 96, 55, 55), (16, 96, 1, 1), {}),
    "sqz_fire2_e1x1": ((1, 16, 55, 55), (64, 16, 1, 1), {}),
    "sqz_fire2_e3x3": ((1, 16, 55, 55), (64, 16, 3, 3), {"pads": [1, 1, 1, 1]}),
    "sqz_conv10": ((1, 512, 13, 13), (1000, 512, 1, 1), {}),
    "shuffle_1x1_g3": ((1, 240, 28, 28), (60, 80, 1, 1), {"group": 3}),
    "mbv2_stem_3x3s2": ((1, 3, 224, 224), (32, 3, 3, 3), {"strides": [2, 2], "pads": [1, 1, 1, 1]}),
    "mbv2_expand_112": ((1, 16, 112, 112), (96, 16, 1, 1), {}),
    "regnet_g4_3x3s2": ((1, 64, 112, 112), (64, 16, 3, 3),
                        {"group": 4, "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    "regnet_g20_3x3": ((1, 320, 14, 14), (320, 16, 3, 3), {"group": 20, "pads": [1, 1, 1, 1]}),
    "mbv2_dw_144_s1": ((1, 144, 56, 56), (144, 1, 3, 3), {"group": 144, "pads": [1, 1, 1, 1]}),
    "mbv2_dw_96_s2": ((1, 96, 112, 112), (96, 1, 3, 3),
                      {"group": 96, "pads": [1, 1, 1, 1], "strides": [2, 2]}),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=7, help="interleaved rounds")
    parser.add_argument("--only", default="", help="comma-separated layer names")
    args = parser.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    os.environ["ONNXC_NUM_THREADS"] = str(args.threads)
    clock = time.process_time if args.threads == 1 else time.perf_counter

    import onnxruntime
    from xdsl.dialects.builtin import FunctionType
    from xdsl.dialects.func import FuncOp, ReturnOp
    from xdsl.rewriter import Rewriter

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "unit"))
    from test_conv_nhwc import RNG, conv_model, nhwc_compiler, to_nhwc

    import onnxc.pipeline
    from onnxc.dialects.layout import ConvertOp

    def nhwc_boundary(module) -> None:
        """Drop the layout.converts at the function's boundary: NHWC arguments/results."""
        f = next(o for o in module.walk() if isinstance(o, FuncOp))
        block = f.body.block
        for cvt in [o for o in block.ops if isinstance(o, ConvertOp)]:
            if cvt.input in block.args:
                arg = cvt.input
                new = block.insert_arg(cvt.output.type, arg.index)
                new.name_hint = arg.name_hint
                cvt.output.replace_all_uses_with(new)
                Rewriter.erase_op(cvt)
                block.erase_arg(arg)
        ret = block.last_op
        assert isinstance(ret, ReturnOp)
        for cvt in [o for o in block.ops if isinstance(o, ConvertOp)]:
            if all(u.operation is ret for u in cvt.output.uses):
                cvt.output.replace_all_uses_with(cvt.input)
                Rewriter.erase_op(cvt)
        f.function_type = FunctionType.from_lists([a.type for a in block.args],
                                                   [v.type for v in ret.arguments])

    def compile_nhwc_io(model):
        original = onnxc.pipeline.import_onnx

        def importer(m):
            from onnxc.frontend import import_onnx
            from onnxc.pass_manager import make_context, run_passes
            from onnxc.passes.levels import graph_pipeline

            module = import_onnx(m)
            run_passes(make_context(), module, graph_pipeline(3))
            assert to_nhwc(module) == 1
            nhwc_boundary(module)
            module.verify()
            return module

        onnxc.pipeline.import_onnx = importer
        try:
            return onnxc.compile(model, pass_pipeline="", cache_dir=False)
        finally:
            onnxc.pipeline.import_onnx = original

    def timed(fn, seconds=0.15) -> float:
        fn()
        n, start = 0, clock()
        while True:
            fn()
            n += 1
            elapsed = clock() - start
            if elapsed > seconds:
                return elapsed / n

    names = [n for n in LAYERS if not args.only or n in args.only.split(",")]
    print(f"threads={args.threads} repeat={args.repeat}  (ms medians of {clock.__name__}; "
          "GFLOP/s = 2*MACs)")
    print(f"{'layer':22} {'GFLOP':>6} {'ort ms':>8} {'kern ms':>8} {'+cvt ms':>8} "
          f"{'ort GF/s':>9} {'kern GF/s':>9} {'ratio':>6}")
    for name in names:
        x_shape, w_shape, attrs = LAYERS[name]
        model = conv_model(x_shape, w_shape, act="Relu", **attrs)
        x = RNG.standard_normal(x_shape).astype(np.float32)
        so = onnxruntime.SessionOptions()
        so.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.intra_op_num_threads = args.threads
        session = onnxruntime.InferenceSession(model.SerializeToString(), so,
                                               providers=["CPUExecutionProvider"])
        expected = session.run(None, {"x": x})[0]
        binding = session.io_binding()
        binding.bind_cpu_input("x", x)
        y_ort = np.empty_like(expected)
        binding.bind_output("y", "cpu", 0, y_ort.dtype, y_ort.shape, y_ort.ctypes.data)

        kernel = compile_nhwc_io(model)
        x_nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).reshape(x.shape)
        y_k = kernel.run(None, {"x": x_nhwc})[0]
        n, c, h, w = expected.shape
        y_k = y_k.reshape(n, h, w, c).transpose(0, 3, 1, 2)
        with nhwc_compiler() as compile_nhwc:
            converted = compile_nhwc(model)
        y_c = converted.run(None, {"x": x})[0]
        k = np.prod(w_shape[1:])
        for y in (y_k, y_c):
            np.testing.assert_allclose(y, expected, rtol=1e-3, atol=1e-4 * np.sqrt(k))

        rounds = {"ort": [], "kern": [], "cvt": []}
        for _ in range(args.repeat):
            rounds["ort"].append(timed(lambda s=session, b=binding: s.run_with_iobinding(b)))
            rounds["kern"].append(timed(lambda m=kernel, a=x_nhwc: m.run(None, {"x": a})))
            rounds["cvt"].append(timed(lambda m=converted, a=x: m.run(None, {"x": a})))
        ms = {key: float(np.median(v)) * 1e3 for key, v in rounds.items()}
        gflop = 2.0 * expected.size * k / 1e9
        ort_gf, kern_gf = gflop / ms["ort"] * 1e3, gflop / ms["kern"] * 1e3
        print(f"{name:22} {gflop:6.3f} {ms['ort']:8.3f} {ms['kern']:8.3f} {ms['cvt']:8.3f} "
              f"{ort_gf:9.1f} {kern_gf:9.1f} {kern_gf / ort_gf:6.2f}", flush=True)


if __name__ == "__main__":
    import results_file

    with results_file.recording():
        main()
