"""`onnxc bench`: each runtime timed in its own process, outputs checked, clear errors.

The end-to-end tests run the real workers on a two-node model (MatMul + Relu) with two short
rounds, a few seconds each; the rest check the command's own logic without timing anything.
"""

import importlib.util
import os
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxc.errors import InvalidArgumentError, ToolchainError
from onnxc.tools.bench import (
    Row,
    compare_outputs,
    format_row,
    measure_runtimes,
    parse_input_shapes,
    prepare,
)
from onnxc.tools.bench_worker import (
    Measurement,
    TimingSettings,
    load_feeds,
    run_worker,
    save_feeds,
)
from onnxc.tools.run import main

HAS_ORT = importlib.util.find_spec("onnxruntime") is not None
needs_ort = pytest.mark.skipif(not HAS_ORT, reason="onnxruntime is not installed")
QUICK = ["--repeat", "2", "--min-time", "0.001"]


def _weight() -> np.ndarray:
    return np.random.default_rng(0).standard_normal((16, 4)).astype(np.float32)


def _tiny_model(path, batch: int | str = 8) -> str:
    """y = relu(x @ w): x [batch, 16], w [16, 4] seeded."""
    w = _weight()
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["t"]), helper.make_node("Relu", ["t"], ["y"])],
        "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 4])],
        [numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return str(path)


def _table(out: str) -> dict[tuple[str, int], list[str]]:
    """(runtime, T) -> the row's fields."""
    rows = {}
    for line in out.splitlines():
        fields = line.split()
        if len(fields) == 8 and fields[1].isdigit():
            rows[(fields[0], int(fields[1]))] = fields
    return rows


def _error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("error: ")
    return err[0]


@needs_ort
def test_bench_against_onnxruntime_in_separate_processes(tmp_path, capsys, monkeypatch):
    model = _tiny_model(tmp_path / "tiny.onnx")
    monkeypatch.delitem(sys.modules, "onnxruntime", raising=False)
    assert main(["bench", model, "--compare", "onnxruntime", "--threads", "1", *QUICK]) == 0
    assert "onnxruntime" not in sys.modules  # timed in its worker process only
    out = capsys.readouterr().out
    rows = _table(out)
    assert set(rows) == {("onnxc", 1), ("onnxruntime", 1)}
    ours, theirs = rows[("onnxc", 1)], rows[("onnxruntime", 1)]
    assert float(ours[3]) == 1.0 and ours[-1] == "reference"
    ratio = float(theirs[3])
    assert ratio > 0
    assert ratio == pytest.approx(float(ours[2]) / float(theirs[2]), rel=0.05, abs=0.01)
    flops = 2 * 8 * 16 * 4 + 8 * 4  # MatMul multiply-adds, one per Relu output
    assert float(ours[4]) == pytest.approx(flops / (float(ours[2]) * 1e-3) / 1e9, rel=0.05)
    assert theirs[-1] == "ok" and float(theirs[6]) < 1e-4
    assert "each runtime in its own process" in out and "MISMATCH" not in out


@needs_ort
def test_interleaved_mode_runs_both_in_this_process(tmp_path, capsys):
    model = _tiny_model(tmp_path / "tiny.onnx")
    assert main(["bench", model, "--interleaved", *QUICK]) == 0
    out = capsys.readouterr().out
    assert set(_table(out)) == {("onnxc", 1), ("onnxruntime", 1)}
    assert "interleaved" in out and _table(out)[("onnxruntime", 1)][-1] == "ok"


def test_interleaved_refuses_more_than_one_thread(tmp_path, capsys):
    model = _tiny_model(tmp_path / "tiny.onnx")
    assert main(["bench", model, "--interleaved", "--threads", "1,2"]) == 1
    assert "1 thread only" in _error_line(capsys)


def test_passes_pool_the_rounds_of_each_worker(tmp_path):
    path = _tiny_model(tmp_path / "tiny.onnx")
    _, feeds, _ = prepare(path, None, [])
    (measured,) = measure_runtimes(["onnxc"], path, feeds, 1, TimingSettings(2, 0.001),
                                   str(tmp_path), passes=2)
    assert measured.runtime == "onnxc" and len(measured.samples) == 4
    assert all(s > 0 for s in measured.samples)
    assert np.array_equal(measured.outputs[0], np.maximum(feeds["x"] @ _weight(), 0))


def test_builtin_model_alone(capsys):
    assert main(["bench", "matmul_512", "--compare", "none", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert set(_table(out)) == {("onnxc", 1)}
    assert "0.268 GFLOP" in out  # 2 * 512^3


def test_missing_model_file_is_one_error_line(tmp_path, capsys):
    assert main(["bench", str(tmp_path / "nope.onnx"), "--compare", "none"]) == 1
    line = _error_line(capsys)
    assert "nope.onnx" in line and "No such file" in line


def test_unknown_model_name_lists_the_builtin_ones(capsys):
    assert main(["bench", "resnet5O", "--compare", "none"]) == 1
    line = _error_line(capsys)
    assert "resnet5O" in line and "matmul_512" in line


def test_bad_compare_name_is_one_error_line(tmp_path, capsys):
    model = _tiny_model(tmp_path / "tiny.onnx")
    assert main(["bench", model, "--compare", "onnxruntime,tensorrt"]) == 1
    line = _error_line(capsys)
    assert "'tensorrt'" in line and "onnxruntime, openvino" in line


@pytest.mark.parametrize("runtime", ["onnxruntime", "openvino"])
def test_unavailable_runtime_names_the_extra(tmp_path, capsys, monkeypatch, runtime):
    monkeypatch.setitem(sys.modules, runtime, None)  # what `import runtime` then fails on
    model = _tiny_model(tmp_path / "tiny.onnx")
    assert main(["bench", model, "--compare", runtime]) == 1
    line = _error_line(capsys)
    assert f"{runtime} is not installed" in line and "pip install 'onnxc[bench]'" in line


def test_worker_reports_a_runtime_that_fails_to_import(tmp_path, monkeypatch):
    """A runtime that is found but does not import: the worker's ToolchainError comes back
    through the JSON protocol as the same error in the parent."""
    fake = tmp_path / "fake" / "onnxruntime"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('libonnxruntime.so: cannot open')\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(fake.parent), *filter(None, [os.environ.get("PYTHONPATH")])]))
    model = _tiny_model(tmp_path / "tiny.onnx")
    save_feeds(str(tmp_path / "in.npz"), {"x": np.ones((8, 16), np.float32)})
    with pytest.raises(ToolchainError, match=r"onnxruntime cannot be imported .*libonnxruntime"
                       r".*pip install 'onnxc\[bench\]'"):
        run_worker("onnxruntime", model, str(tmp_path / "in.npz"), str(tmp_path / "out.npz"),
                   1, TimingSettings(repeat=1))


def test_feeds_file_keeps_any_input_name(tmp_path):
    feeds = {"file": np.arange(3, dtype=np.int64), "a/b:0": np.ones((2, 2), np.float16)}
    save_feeds(str(tmp_path / "f.npz"), feeds)
    loaded = load_feeds(str(tmp_path / "f.npz"))
    assert list(loaded) == list(feeds)
    assert all(np.array_equal(loaded[k], v) and loaded[k].dtype == v.dtype
               for k, v in feeds.items())


def test_symbolic_dims_ask_for_input_shapes(tmp_path, capsys):
    model = _tiny_model(tmp_path / "dyn.onnx", batch="N")
    assert main(["bench", model, "--compare", "none"]) == 1
    line = _error_line(capsys)
    assert "input 'x' has symbolic dimensions [N, 16]" in line
    assert "--input-shapes x=1x16" in line


def test_input_shapes_and_npz_inputs_fix_symbolic_dims(tmp_path):
    path = _tiny_model(tmp_path / "dyn.onnx", batch="N")
    model, feeds, rewritten = prepare(path, None, ["x=3x16"])
    assert rewritten and feeds["x"].shape == (3, 16) and feeds["x"].dtype == np.float32
    assert [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim] == [3, 16]
    given = np.arange(5 * 16, dtype=np.float32).reshape(5, 16)
    np.savez(tmp_path / "x.npz", x=given)
    model, feeds, _ = prepare(path, str(tmp_path / "x.npz"), [])
    assert np.array_equal(feeds["x"], given)
    assert [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim] == [5, 16]
    with pytest.raises(InvalidArgumentError, match="rank 1"):
        prepare(path, None, ["x=16"])


def test_static_model_file_is_used_as_is(tmp_path):
    path = _tiny_model(tmp_path / "tiny.onnx")
    _, feeds, rewritten = prepare(path, None, [])
    assert not rewritten and feeds["x"].shape == (8, 16)


def test_parse_input_shapes():
    assert parse_input_shapes(["a=1x3x8x8,b=2", "c=4"]) == {"a": (1, 3, 8, 8), "b": (2,),
                                                            "c": (4,)}
    for bad in ("a", "a=1x0", "=3", "a=1xq"):
        with pytest.raises(InvalidArgumentError, match="NAME=D1xD2"):
            parse_input_shapes([bad])


def _measurement(runtime: str, outputs, seconds: float) -> Measurement:
    return Measurement(runtime, 1, [seconds, seconds * 3, seconds], 0.1, "x", outputs)


def test_mismatching_outputs_are_marked():
    ref = _measurement("onnxc", [np.array([1.0, 2.0], np.float32)], 0.002)
    close = _measurement("onnxruntime", [np.array([1.0, 2.0005], np.float32)], 0.004)
    off = _measurement("openvino", [np.array([1.0, 2.1], np.float32)], 0.001)
    assert format_row(Row("m", ref, ref, 0)).split()[-1] == "reference"
    fields = format_row(Row("m", close, ref, 4_000_000)).split()
    assert fields[-1] == "ok" and fields[3] == "0.50" and fields[4] == "1.000"
    fields = format_row(Row("m", off, ref, 0)).split()
    assert fields[-1] == "MISMATCH" and fields[3] == "2.00" and fields[4] == "-"
    assert compare_outputs(ref.outputs, [np.zeros(3, np.float32)]) == (float("inf"), False)
    assert compare_outputs(ref.outputs, []) == (float("inf"), False)


def test_png_without_matplotlib_fails_before_timing(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    model = _tiny_model(tmp_path / "tiny.onnx")
    assert main(["bench", model, "--compare", "none", "--png", str(tmp_path / "b.png")]) == 1
    captured = capsys.readouterr()
    assert captured.err.startswith("error: --png needs matplotlib") and not captured.out


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None,
                    reason="matplotlib is not installed")
def test_png_chart(tmp_path, capsys):
    model = _tiny_model(tmp_path / "tiny.onnx")
    png = tmp_path / "b.png"
    assert main(["bench", model, "--compare", "none", *QUICK, "--png", str(png)]) == 0
    assert png.read_bytes().startswith(b"\x89PNG")
