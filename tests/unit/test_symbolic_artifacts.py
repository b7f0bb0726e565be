"""Ahead-of-time artifacts of models with symbolic dimensions (runtime/artifact_sizes.py):
built once, run at several shapes from C (`<prefix>_output_shapes`, `<prefix>_run_shaped`)
and from Python (`onnxc.load`), bit-identical to the JIT compile of the same model (the same
code), and onnxruntime within rtol 1e-4 / atol 1e-5 (f32 sums in another order); shapes that
break the model are an error status with a message, never a run."""

from __future__ import annotations

import subprocess
import textwrap

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxc
from onnxc.errors import InvalidArgumentError, InvalidInputError
from onnxc.runtime import artifact
from onnxc.runtime.target import host_target

ort = pytest.importorskip("onnxruntime")


def _model(nodes, inputs, outputs, inits=()) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def conv_model() -> onnx.ModelProto:
    """A strided conv over a symbolic batch and image (sizes with floor division)."""
    w = numpy_helper.from_array((np.random.default_rng(0).standard_normal((4, 3, 3, 3)) * 0.3)
                                .astype(np.float32), "w")
    return _model([helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1],
                                    strides=[2, 2]),
                   helper.make_node("Relu", ["c"], ["y"])],
                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])


def nms_model() -> onnx.ModelProto:
    """NonMaxSuppression: its output length is decided by the data (bounded by the boxes)."""
    consts = [numpy_helper.from_array(np.array([5], np.int64), "k"),
              numpy_helper.from_array(np.array([0.5], np.float32), "iou")]
    return _model([helper.make_node("NonMaxSuppression", ["boxes", "scores", "k", "iou"],
                                    ["sel"])],
                  [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [1, "n", 4]),
                   helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 1, "n"])],
                  [helper.make_tensor_value_info("sel", TensorProto.INT64, None)], consts)


def _boxes(rng, n: int):
    corner = rng.random((1, n, 2)).astype(np.float32) * 10
    return {"boxes": np.concatenate([corner, corner + 1 + rng.random((1, n, 2))
                                     .astype(np.float32)], axis=2),
            "scores": rng.random((1, 1, n)).astype(np.float32)}


def test_one_artifact_runs_every_shape_from_python(tmp_path):
    model = conv_model()
    onnxc.compile_artifact(model, tmp_path / "conv", prefix="conv", quiet=True)
    loaded = onnxc.load(tmp_path / "conv")
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    for shape in [(1, 3, 8, 8), (2, 3, 9, 5), (1, 3, 1, 30)]:
        x = rng.standard_normal(shape).astype(np.float32)
        (ours,), (theirs,) = loaded(x), session.run(None, {"x": x})
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)
    with pytest.raises(InvalidInputError, match="dimension 1 is fixed at 3"):
        loaded(np.zeros((1, 4, 8, 8), np.float32))


def test_data_dependent_sizes_from_python(tmp_path):
    model = nms_model()
    onnxc.compile_artifact(model, tmp_path / "nms", prefix="nms", quiet=True)
    loaded = onnxc.load(tmp_path / "nms")
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(2)
    for n in (3, 12, 40):
        feeds = _boxes(rng, n)
        np.testing.assert_array_equal(loaded.run(None, feeds)[0], session.run(None, feeds)[0])


C_PROGRAM = """
#include <stdio.h>
#include <string.h>
#include "conv/conv.h"
#include "nms/nms.h"
static float x[2 * 3 * 9 * 5], y[2 * 4 * 5 * 3], boxes[40 * 4], scores[40];
static long long sel[40 * 3];
int main(void) {
    FILE *f = fopen("x.bin", "rb");
    if (fread(x, sizeof x, 1, f) != 1) return 10;
    fclose(f);
    int64_t xs[4] = {2, 3, 9, 5}, ys[4];
    const int64_t *in_shapes[] = {xs}; int64_t *out_shapes[] = {ys};
    if (conv_output_shapes(in_shapes, out_shapes) != 0) return 11;
    printf("room %lld %lld %lld %lld\\n", (long long)ys[0], (long long)ys[1], (long long)ys[2],
           (long long)ys[3]);
    const void *in[] = {x}; void *out[] = {y};
    if (conv_run_shaped(in, in_shapes, out, out_shapes) != 0) return 12;
    f = fopen("y.bin", "wb"); fwrite(y, sizeof y, 1, f); fclose(f);
    int64_t bad[4] = {2, 4, 9, 5};
    const int64_t *bad_shapes[] = {bad};
    int status = conv_run_shaped(in, bad_shapes, out, out_shapes);
    printf("bad %d %s\\n", status, conv_error(status));
    if (conv_run(in, out) == 0) return 13;  /* a symbolic model needs its shapes */
    f = fopen("boxes.bin", "rb");
    if (fread(boxes, sizeof boxes, 1, f) != 1) return 14;
    fclose(f);
    f = fopen("scores.bin", "rb");
    if (fread(scores, sizeof scores, 1, f) != 1) return 15;
    fclose(f);
    int64_t bs[3] = {1, 40, 4}, ss[3] = {1, 1, 40}, sels[2];
    const int64_t *nms_in[] = {bs, ss}; int64_t *nms_out[] = {sels};
    if (nms_output_shapes(nms_in, nms_out) != 0) return 16;
    printf("nms room %lld\\n", (long long)sels[0]);
    const void *nin[] = {boxes, scores}; void *nout[] = {sel};
    if (nms_run_shaped(nin, nms_in, nout, nms_out) != 0) return 17;
    printf("nms %lld %lld\\n", (long long)sels[0], (long long)sels[1]);
    f = fopen("sel.bin", "wb"); fwrite(sel, 8, (size_t)(sels[0] * 3), f); fclose(f);
    return 0;
}
"""


def test_a_c_program_gives_the_shapes_and_reads_back_the_sizes_the_data_decided(tmp_path):
    conv, nms = conv_model(), nms_model()
    onnxc.compile_artifact(conv, tmp_path / "conv", prefix="conv", quiet=True)
    onnxc.compile_artifact(nms, tmp_path / "nms", prefix="nms", quiet=True)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 9, 5)).astype(np.float32)
    x.tofile(tmp_path / "x.bin")
    feeds = _boxes(rng, 40)
    feeds["boxes"].tofile(tmp_path / "boxes.bin")
    feeds["scores"].tofile(tmp_path / "scores.bin")
    (tmp_path / "main.c").write_text(textwrap.dedent(C_PROGRAM))
    cc = artifact.c_compiler(host_target())
    subprocess.run([cc, "-O2", "-I", str(tmp_path), "-o", str(tmp_path / "main"),
                    str(tmp_path / "main.c"), str(tmp_path / "conv" / "conv.so"),
                    str(tmp_path / "nms" / "nms.so"),
                    f"-Wl,-rpath,{tmp_path / 'conv'}:{tmp_path / 'nms'}"], check=True)
    result = subprocess.run([str(tmp_path / "main")], cwd=tmp_path, capture_output=True,
                            text=True, check=False)
    assert result.returncode == 0, (result.returncode, result.stdout, result.stderr)
    assert "room 2 4 5 3" in result.stdout
    assert "bad -3 input 'x' dimension 1 is 4, expected 3" in result.stdout
    jit = onnxc.compile(conv, cache_dir=False, quiet=True)
    np.testing.assert_array_equal(np.fromfile(tmp_path / "y.bin", np.float32)
                                  .reshape(2, 4, 5, 3), jit(x)[0])
    want = ort.InferenceSession(nms.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    assert "nms room 40" in result.stdout
    assert f"nms {len(want)} 3" in result.stdout
    np.testing.assert_array_equal(np.fromfile(tmp_path / "sel.bin", np.int64).reshape(-1, 3),
                                  want)


def test_a_size_without_a_bound_is_refused_for_an_artifact(tmp_path):
    """A while-loop's collected outputs have no bound: the C caller could not allocate."""
    add = helper.make_graph(
        [helper.make_node("Add", ["v", "one"], ["v2"]),
         helper.make_node("Less", ["v2", "lim"], ["go"]),
         helper.make_node("Identity", ["v2"], ["scan"])], "body",
        [helper.make_tensor_value_info("it", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("go", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v2", TensorProto.INT64, []),
         helper.make_tensor_value_info("scan", TensorProto.INT64, [])],
        [numpy_helper.from_array(np.array(1, np.int64), "one")])
    model = _model([helper.make_node("Loop", ["", "t", "v0"], ["vf", "all"], body=add)],
                   [helper.make_tensor_value_info("lim", TensorProto.INT64, []),
                    helper.make_tensor_value_info("t", TensorProto.BOOL, []),
                    helper.make_tensor_value_info("v0", TensorProto.INT64, [])],
                   [helper.make_tensor_value_info("vf", TensorProto.INT64, None),
                    helper.make_tensor_value_info("all", TensorProto.INT64, None)])
    with pytest.raises(InvalidArgumentError, match="need a bound") as info:
        onnxc.compile_artifact(model, tmp_path / "loop", quiet=True)
    assert "Loop" in str(info.value)


def test_run_program_takes_input_shapes_and_prints_the_outputs(tmp_path):
    model = conv_model()
    built = onnxc.compile_artifact(model, tmp_path / "conv", prefix="conv", quiet=True)
    x = np.random.default_rng(4).standard_normal((1, 3, 7, 6)).astype(np.float32)
    x.tofile(tmp_path / "x.bin")
    result = subprocess.run([str(built.run), f"{tmp_path / 'x.bin'}@1x3x7x6",
                             str(tmp_path / "y.bin")], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "y: 1x4x4x3"
    jit = onnxc.compile(model, cache_dir=False, quiet=True)
    np.testing.assert_array_equal(np.fromfile(tmp_path / "y.bin", np.float32)
                                  .reshape(1, 4, 4, 3), jit(x)[0])
    wrong = subprocess.run([str(built.run), f"{tmp_path / 'x.bin'}@1x3x7",
                            str(tmp_path / "y.bin")], capture_output=True, text=True)
    assert wrong.returncode == 2 and "FILE@" in wrong.stderr


def test_a_real_export_as_one_artifact(tmp_path):
    """optimum-onnx's BERT (tests/models/real_exports), one artifact for every batch and
    sequence length, against onnxruntime."""
    from tests.models.real_exports import corpus

    model = corpus.load("bert")
    onnxc.compile_artifact(model, tmp_path / "bert", prefix="bert", quiet=True)
    loaded = onnxc.load(tmp_path / "bert")
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for case in ("seq8", "batch2"):
        feeds = corpus.feeds("bert", case, 5)
        for ours, theirs in zip(loaded.run(None, feeds), session.run(None, feeds),
                                strict=True):
            np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)
