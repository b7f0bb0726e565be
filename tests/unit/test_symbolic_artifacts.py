"""Ahead-of-time artifacts of models with symbolic dimensions (runtime/artifact_sizes.py,
runtime/c/onnxc_model.c): each built once, then run at three shapes from C (the `run`
program: `_output_shapes`, then `_run_shaped`) and from Python (`onnxc.load`), against
onnxruntime (rtol 1e-4 / atol 1e-5 for f32: sums in another order; integers exactly).
The models cover symbols two inputs share, strided convs (floor division), sizes the data
decides with a bound (NonZero, NonMaxSuppression) and without one (ConstantOfShape and
Expand of run-time shapes, a loop's collected outputs: the library grows their room), a
model compiled for one sample, and a real export. Shapes that break the model are an error
status with a message, never a run (tests/unit/test_symbolic_artifacts_c.py: from C)."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxc
from onnxc.errors import InvalidInputError
from tests.artifact_runner import run_artifact
from tests.single_op import graph_model

ort = pytest.importorskip("onnxruntime")
F, I64 = TensorProto.FLOAT, TensorProto.INT64


def _model(nodes, inputs, outputs, inits=()) -> onnx.ModelProto:
    return graph_model(nodes, inputs, outputs, initializers=list(inits), opset=17,
                       ir_version=8)


def _io(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def mm_model() -> onnx.ModelProto:
    """x @ w + b + m: `batch` and `seq` shared by both inputs."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((8, 6)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(6).astype(np.float32), "b")
    return _model([helper.make_node("MatMul", ["x", "w"], ["p"]),
                   helper.make_node("Add", ["p", "b"], ["q"]),
                   helper.make_node("Add", ["q", "m"], ["y"])],
                  [_io("x", F, ["batch", "seq", 8]), _io("m", F, ["batch", "seq", 6])],
                  [_io("y", F, None)], [w, b])


def conv_model() -> onnx.ModelProto:
    """A strided conv over a symbolic batch and image (sizes with floor division)."""
    w = numpy_helper.from_array((np.random.default_rng(0).standard_normal((4, 3, 3, 3)) * 0.3)
                                .astype(np.float32), "w")
    return _model([helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1],
                                    strides=[2, 2]),
                   helper.make_node("Relu", ["c"], ["y"])],
                  [_io("x", F, ["N", 3, "H", "W"])], [_io("y", F, None)], [w])


def nonzero_model() -> onnx.ModelProto:
    """NonZero: as many columns as positive elements (at most all of them)."""
    zero = numpy_helper.from_array(np.array(0, np.float32), "zero")
    return _model([helper.make_node("Greater", ["x", "zero"], ["g"]),
                   helper.make_node("NonZero", ["g"], ["y"])],
                  [_io("x", F, ["n", "m"])], [_io("y", I64, None)], [zero])


def nms_model() -> onnx.ModelProto:
    """NonMaxSuppression: its output length is decided by the data (bounded by the boxes)."""
    consts = [numpy_helper.from_array(np.array([5], np.int64), "k"),
              numpy_helper.from_array(np.array([0.5], np.float32), "iou")]
    return _model([helper.make_node("NonMaxSuppression", ["boxes", "scores", "k", "iou"],
                                    ["sel"])],
                  [_io("boxes", F, [1, "n", 4]), _io("scores", F, [1, 1, "n"])],
                  [_io("sel", I64, None)], consts)


def shapes_model() -> onnx.ModelProto:
    """Shapes from data, without a bound: ConstantOfShape's and Expand's."""
    return _model([helper.make_node("ConstantOfShape", ["s"], ["z"],
                                    value=helper.make_tensor("v", F, [1], [2.5])),
                   helper.make_node("Expand", ["x", "s2"], ["e"], name="expand"),
                   helper.make_node("Add", ["e", "e"], ["y"])],
                  [_io("x", F, [3, 1]), _io("s", I64, [2]), _io("s2", I64, [2])],
                  [helper.make_empty_tensor_value_info(o) for o in ("z", "y")])


def loop_model() -> onnx.ModelProto:
    """A while loop's collected outputs: their length is the loop's count, unbounded."""
    body = helper.make_graph(
        [helper.make_node("Add", ["v", "one"], ["v2"]),
         helper.make_node("Less", ["v2", "lim"], ["go"]),
         helper.make_node("Identity", ["v2"], ["scan"])], "body",
        [_io("it", I64, []), _io("cond", TensorProto.BOOL, []), _io("v", I64, [])],
        [_io("go", TensorProto.BOOL, []), _io("v2", I64, []), _io("scan", I64, [])],
        [numpy_helper.from_array(np.array(1, np.int64), "one")])
    return _model([helper.make_node("Loop", ["", "t", "v0"], ["vf", "all"], body=body)],
                  [_io("lim", I64, []), _io("t", TensorProto.BOOL, []), _io("v0", I64, [])],
                  [_io("vf", I64, None), _io("all", I64, None)])


def _boxes(rng, n: int):
    corner = rng.random((1, n, 2)).astype(np.float32) * 10
    return {"boxes": np.concatenate([corner, corner + 1 + rng.random((1, n, 2))
                                     .astype(np.float32)], axis=2),
            "scores": rng.random((1, 1, n)).astype(np.float32)}


def _normal(rng, **shapes):
    return {name: rng.standard_normal(shape).astype(np.float32)
            for name, shape in shapes.items()}


def _shapes(s, s2):
    return {"x": np.arange(3, dtype=np.float32).reshape(3, 1), "s": np.array(s, np.int64),
            "s2": np.array(s2, np.int64)}


def _loop(limit):
    return {"lim": np.array(limit, np.int64), "t": np.array(True), "v0": np.array(0, np.int64)}


def loop_sizes_model() -> onnx.ModelProto:
    """Run sizes defined in a loop body (a Resize per row of `sizes`), several outgrowing
    their room in one run (tests/unit/test_loop_sizes.py)."""
    from tests.unit.test_loop_sizes import _resize_per_iteration_model
    return _resize_per_iteration_model(carried=False)


def appends_model() -> onnx.ModelProto:
    """A loop-carried value grown by a row per iteration (tests/unit/test_loop_sizes.py)."""
    from tests.unit.test_loop_sizes import _append_model
    return _append_model(axis=0, with_initial=False)


MODELS = {"mm": mm_model, "conv": conv_model, "nonzero": nonzero_model, "nms": nms_model,
          "shapes": shapes_model, "loop": loop_model, "loop_sizes": loop_sizes_model,
          "appends": appends_model}

CASES = {
    "mm": lambda rng: [_normal(rng, x=(b, s, 8), m=(b, s, 6))
                       for b, s in ((1, 1), (2, 5), (3, 17))],
    "conv": lambda rng: [_normal(rng, x=shape)
                         for shape in ((1, 3, 8, 8), (2, 3, 9, 5), (1, 3, 1, 30))],
    "nonzero": lambda rng: [_normal(rng, x=(4, 5)), {"x": -np.ones((1, 3), np.float32)},
                            _normal(rng, x=(9, 7))],
    "nms": lambda rng: [_boxes(rng, n) for n in (3, 12, 40)],
    # past the first room (16) of a size the data decides: the library grows it
    "shapes": lambda rng: [_shapes([2, 3], [3, 4]), _shapes([40, 5], [3, 100]),
                           _shapes([0, 5], [1, 7])],
    "loop": lambda rng: [_loop(3), _loop(40), _loop(100)],
    "loop_sizes": lambda rng: [
        {"img": rng.integers(0, 4, (1, 1, h, w)).astype(np.float32),
         "sizes": np.array(sizes, np.int64).reshape(-1, 2)}
        for h, w, sizes in ((5, 6, [[2, 3], [4, 4]]), (8, 3, [[30, 2], [1, 1], [9, 40]]),
                            (3, 9, [[60, 70], [2, 90], [100, 3]]))],
    "appends": lambda rng: [_normal(rng, x=shape) for shape in ((3, 4), (40, 2), (0, 5))],
}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Every model of MODELS as an artifact (built once for the module)."""
    root = tmp_path_factory.mktemp("symbolic-artifacts")
    for name, make in MODELS.items():
        onnxc.compile_artifact(make(), root / name, prefix=name, quiet=True)
    return root


def _reference(model: onnx.ModelProto, feeds: dict) -> list[np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def _same(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    assert len(got) == len(want)
    for ours, theirs in zip(got, want):
        assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
        if ours.dtype == np.float32:
            np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)
        else:
            np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_one_artifact_runs_three_shapes_from_c_and_from_python(built, name):
    model = MODELS[name]()
    loaded = onnxc.load(built / name)
    for feeds in CASES[name](np.random.default_rng(1)):
        want = _reference(model, feeds)
        _same(run_artifact(built / name, feeds), want)  # the `run` program: the C API
        _same(loaded.run(None, feeds), want)


def test_the_header_and_the_manifest_describe_the_symbols(built):
    header = (built / "mm" / "mm.h").read_text()
    assert "'x' float32[batch, seq, 8]" in header
    assert "'y' float32[batch, seq, 6]" in header
    assert "batch: from 'x'[0], 'm'[0]" in header
    assert "#define mm_ERR_SHAPE (-3)" in header and "#define mm_SYMBOLIC 1" in header
    assert "int32_t mm_run_shaped(" in header and "int32_t mm_run_tensors(" in header
    manifest = json.loads((built / "mm" / "manifest.json").read_text())
    assert {"name": "seq", "kind": "input", "dims": [["x", 1], ["m", 1]]} \
        in manifest["shape_symbols"]
    assert manifest["inputs"][0] == ["x", ["batch", "seq", 8], "float32"]
    nms = json.loads((built / "nms" / "manifest.json").read_text())["shape_symbols"]
    assert {"name": "NonMaxSuppression_0_selected", "kind": "run", "bound": "n"} in nms
    assert "decided by the data, at most n" in (built / "nms" / "nms.h").read_text()
    assert "no bound: the library grows its room" in (built / "loop" / "loop.h").read_text()


def test_python_refuses_shapes_that_break_the_model(built):
    loaded = onnxc.load(built / "mm")
    x, m = np.zeros((2, 5, 8), np.float32), np.zeros((2, 4, 6), np.float32)
    with pytest.raises(InvalidInputError, match="'seq'"):
        loaded(x, m)
    with pytest.raises(InvalidInputError, match="rank 3"):
        loaded(x[0], m[:, :5])
    with pytest.raises(InvalidInputError, match="dimension 1 is fixed at 3"):
        onnxc.load(built / "conv")(np.zeros((1, 4, 8, 8), np.float32))


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), capture_output=True, text=True, check=False)


def test_the_run_program_prints_shapes_and_refuses_wrong_ones(built, tmp_path):
    x = np.random.default_rng(4).standard_normal((1, 3, 7, 6)).astype(np.float32)
    x.tofile(tmp_path / "x.bin")
    run = str(built / "conv" / "run")
    result = _run(run, f"{tmp_path / 'x.bin'}@1x3x7x6", str(tmp_path / "y.bin"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "y: 1x4x4x3"
    jit = onnxc.compile(conv_model(), cache_dir=False, quiet=True)
    np.testing.assert_array_equal(np.fromfile(tmp_path / "y.bin", np.float32)
                                  .reshape(1, 4, 4, 3), jit(x)[0])  # the same code
    wrong = _run(run, f"{tmp_path / 'x.bin'}@1x3x7", str(tmp_path / "y.bin"))
    assert wrong.returncode == 2 and "FILE@" in wrong.stderr
    (tmp_path / "x4.bin").write_bytes(np.zeros((1, 4, 7, 6), np.float32).tobytes())
    refused = _run(run, f"{tmp_path / 'x4.bin'}@1x4x7x6", str(tmp_path / "y.bin"))
    assert refused.returncode == 3
    assert "input 'x' dimension 1 is 4, expected 3" in refused.stderr


def test_onnxc_compile_keeps_the_symbols_or_fixes_them(tmp_path):
    from onnxc.tools.run import main

    model = conv_model()
    (tmp_path / "conv.onnx").write_bytes(model.SerializeToString())
    x = np.random.default_rng(6).standard_normal((2, 3, 9, 5)).astype(np.float32)
    assert main(["compile", str(tmp_path / "conv.onnx"), "-o", str(tmp_path / "any"),
                 "-q"]) == 0
    _same(run_artifact(tmp_path / "any", [x]), _reference(model, {"x": x}))
    assert main(["compile", str(tmp_path / "conv.onnx"), "-o", str(tmp_path / "fixed"), "-q",
                 "--input-shapes", "x=2x3x9x5"]) == 0
    manifest = json.loads((tmp_path / "fixed" / "manifest.json").read_text())
    assert manifest["symbolic"] is None and manifest["inputs"][0][1] == [2, 3, 9, 5]
    _same(run_artifact(tmp_path / "fixed", [x]), _reference(model, {"x": x}))  # `_run`


def test_a_model_compiled_for_one_sample_runs_any_batch(tmp_path):
    """A model whose only symbol is a separable batch is compiled for one sample: `_run`
    runs one (as before), `_run_shaped` (and `run` given shapes) any number, 0 included."""
    w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(4, 3), "w")
    model = _model([helper.make_node("MatMul", ["x", "w"], ["y"])], [_io("x", F, ["N", 4])],
                   [_io("y", F, None)], [w])
    onnxc.compile_artifact(model, tmp_path / "ps", prefix="ps", quiet=True)
    manifest = json.loads((tmp_path / "ps" / "manifest.json").read_text())
    assert manifest["batch_rows"] == [[1], [1]] and manifest["symbolic"] is None
    assert "one sample: _run_shaped takes 1*N rows" in (tmp_path / "ps" / "ps.h").read_text()
    rng = np.random.default_rng(5)
    for n in (1, 3, 0):
        x = rng.standard_normal((n, 4)).astype(np.float32)
        _same(run_artifact(tmp_path / "ps", [x]), _reference(model, {"x": x}))


def test_a_real_export_as_one_artifact(tmp_path):
    """optimum-onnx's BERT (tests/models/real_exports): one artifact for every batch and
    sequence length, from C and from Python, against onnxruntime."""
    from tests.models.real_exports import corpus

    model = corpus.load("bert")
    onnxc.compile_artifact(model, tmp_path / "bert", prefix="bert", quiet=True)
    loaded = onnxc.load(tmp_path / "bert")
    for case in ("seq8", "batch2"):
        feeds = corpus.feeds("bert", case, 5)
        want = _reference(model, feeds)
        _same(run_artifact(tmp_path / "bert", feeds), want)
        _same(loaded.run(None, feeds), want)
