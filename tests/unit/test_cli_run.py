"""`onnxc run`: inputs (seeded or .npz), checksums, timing lines and error reporting.

Most tests stand a small fake in for `onnxc.compile`, to check the command's own logic in
milliseconds; `test_run_real_model` goes through the real compiler on a two-op model.
"""

import os
from dataclasses import dataclass

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import onnxc
from onnxc.errors import InvalidInputError, UnsupportedOpError
from onnxc.tools.run import default_model_path, main, random_inputs


@dataclass(frozen=True)
class Spec:
    name: str
    shape: tuple
    dtype: np.dtype


class FakeCompiled:
    """Doubles its float input; records every run."""

    def __init__(self):
        self.inputs = [Spec("x", (2, 3), np.dtype("float32")), Spec("ids", (4,), np.dtype("int64"))]
        self.output_names = ["y"]
        self.feeds = []
        self.target = "host"

    def run(self, output_names, feeds):
        assert output_names == ["y"]
        self.feeds.append(feeds)
        return [feeds["x"] * 2]


@pytest.fixture
def fake(monkeypatch, tmp_path):
    compiled = FakeCompiled()
    calls = []

    def compile(model, **options):
        calls.append((model, options))
        return compiled

    monkeypatch.setattr(onnxc, "compile", compile, raising=False)
    model = tmp_path / "m.onnx"
    model.write_bytes(b"not read by the fake")
    return compiled, calls, str(model)


def test_random_inputs_are_seeded_uniform_floats_and_zero_ints():
    specs = [Spec("x", (100,), np.dtype("float32")), Spec("i", (3,), np.dtype("int64")),
             ("t", (2,), np.float64)]
    a, b = random_inputs(specs), random_inputs(specs)
    assert a["x"].dtype == np.float32 and np.array_equal(a["x"], b["x"])
    assert 0.0 <= a["x"].min() and a["x"].max() < 1.0 and a["x"].std() > 0.1
    assert a["i"].dtype == np.int64 and not a["i"].any()
    assert a["t"].dtype == np.float64


def test_run_prints_compile_checksum_and_timing(fake, capsys):
    compiled, calls, model = fake
    assert main(["run", model, "--repeat", "3", "--opt-level", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert calls == [(model, {"opt_level": 2, "verbose": False, "quiet": False})]
    assert len(compiled.feeds) == 1 + 3  # one run for the outputs, then --repeat timed runs
    x = random_inputs(compiled.inputs)["x"].astype(np.float64) * 2
    assert out[0] == f"model: {model}"
    assert out[1].startswith("compile: ") and out[1].endswith(" s (opt-level 2, target host)")
    assert out[2] == (f"output 'y': shape (2, 3) float32  sum {x.sum():.6e}  "
                      f"mean|x| {np.abs(x).mean():.6e}  max {x.max():.6e}")
    assert out[3].startswith("run: median ") and "over 3 run(s)" in out[3]


def test_inputs_from_npz_by_name_and_position(fake, tmp_path, capsys):
    compiled, _, model = fake
    x = np.full((2, 3), -1.5, np.float32)
    ids = np.arange(4, dtype=np.int64)
    np.savez(tmp_path / "named.npz", x=x, ids=ids)
    np.savez(tmp_path / "positional.npz", x, ids)
    for name in ("named.npz", "positional.npz"):
        assert main(["run", model, "--inputs", str(tmp_path / name), "--repeat", "1"]) == 0
        assert np.array_equal(compiled.feeds[-1]["x"], x)
        line = "sum -1.800000e+01  mean|x| 3.000000e+00  max -3.000000e+00"
        assert line in capsys.readouterr().out


def test_npz_not_matching_the_inputs_is_an_error(fake, tmp_path, capsys):
    _, _, model = fake
    np.savez(tmp_path / "bad.npz", x=np.zeros((2, 3), np.float32), typo=np.zeros(4))
    assert main(["run", model, "--inputs", str(tmp_path / "bad.npz")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "missing ['ids']" in err and "unexpected ['typo']" in err


def test_compile_errors_are_one_line(monkeypatch, fake, capsys):
    _, _, model = fake

    def compile(model, **options):
        raise UnsupportedOpError("Foo", "n1", 13, "no lowering")

    monkeypatch.setattr(onnxc, "compile", compile, raising=False)
    assert main(["run", model]) == 1
    assert capsys.readouterr().err == (
        "error: unsupported op 'Foo' (node 'n1', opset 13): no lowering\n"
    )


def test_missing_model_and_bad_repeat(fake, tmp_path, capsys):
    _, _, model = fake
    assert main(["run", str(tmp_path / "nope.onnx")]) == 1
    assert "error: cannot open" in capsys.readouterr().err
    assert main(["run", model, "--repeat", "0"]) == 1
    assert "error: --repeat must be >= 1" in capsys.readouterr().err


def _float_weights(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    return {i.name: numpy_helper.to_array(i) for i in model.graph.initializer
            if i.data_type == onnx.TensorProto.FLOAT}


def test_default_model_is_the_shipped_resnet50_with_seeded_random_weights(fake, capsys):
    _, calls, _ = fake
    path = default_model_path()
    assert os.path.isfile(path) and path.endswith("light_resnet50.onnx")
    assert main(["run", "--repeat", "1"]) == 0
    assert main(["run", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert f"model: {path} (weights: seeded random, seed 0)\n" in out
    first, second = calls[-2][0], calls[-1][0]
    assert isinstance(first, onnx.ModelProto)
    weights, again = _float_weights(first), _float_weights(second)
    # the shipped weights are all 0.02 (a flat softmax); these vary, and the same each run
    big = [w for w in weights.values() if w.size > 1]
    assert len(big) > 100 and all(np.ptp(w) > 0 for w in big)
    assert weights.keys() == again.keys()
    assert all(np.array_equal(weights[k], again[k]) for k in weights)


def test_explicit_model_path_is_compiled_as_given(fake, capsys):
    _, calls, model = fake
    assert main(["run", model, "--repeat", "1"]) == 0
    assert calls[-1][0] == model
    assert f"model: {model}\n" in capsys.readouterr().out


def test_invalid_input_error_from_run(fake, monkeypatch, capsys):
    compiled, _, model = fake

    def run(output_names, feeds):
        raise InvalidInputError("input 'x' has dtype float64, expected float32")

    monkeypatch.setattr(compiled, "run", run)
    assert main(["run", model]) == 1
    assert capsys.readouterr().err == "error: input 'x' has dtype float64, expected float32\n"


def test_run_real_model(tmp_path, capsys):
    model = onnx.parser.parse_model(
        '<ir_version: 8, opset_import: ["" : 17]>\n'
        "agraph (float[2, 3] X, float[3] B) => (float[2, 3] Y) {\n"
        "  S = Add(X, B)\n  Y = Relu(S)\n}\n"
    )
    path = tmp_path / "relu.onnx"
    onnx.save(model, path)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    np.savez(tmp_path / "in.npz", X=x, B=b)
    assert main(["run", str(path), "--inputs", str(tmp_path / "in.npz"), "--repeat", "2"]) == 0
    expected = np.maximum(x + b, 0).astype(np.float64)
    out = capsys.readouterr().out
    assert f"output 'Y': shape (2, 3) float32  sum {expected.sum():.6e}" in out


def test_run_symbolic_model_needs_its_inputs(tmp_path, capsys):
    """A model with a symbolic dimension compiles once; random inputs have no size to take,
    so it runs on --inputs, at whatever size they have."""
    model = onnx.parser.parse_model(
        '<ir_version: 8, opset_import: ["" : 17]>\n'
        "agraph (float[2, seq] X) => (float[2, seq] Y) {\n  Y = Relu(X)\n}\n"
    )
    path = tmp_path / "relu.onnx"
    onnx.save(model, path)
    assert main(["run", str(path)]) == 1
    assert "input 'X' has symbolic dimensions [2, 'seq']: give the inputs with --inputs" in (
        capsys.readouterr().err)
    x = np.linspace(-1, 1, 10, dtype=np.float32).reshape(2, 5)
    np.savez(tmp_path / "in.npz", X=x)
    assert main(["run", str(path), "--inputs", str(tmp_path / "in.npz")]) == 0
    assert "output 'Y': shape (2, 5) float32" in capsys.readouterr().out


def test_timings_print_every_compile_stage(tmp_path, capsys, monkeypatch):
    """`--timings` (also -v) prints each stage's wall time on stderr, cache off."""
    model = onnx.parser.parse_model(
        '<ir_version: 8, opset_import: ["" : 17]>\n'
        "agraph (float[2, 3] X) => (float[2, 3] Y) {\n  Y = Relu(X)\n}\n"
    )
    path = tmp_path / "relu.onnx"
    onnx.save(model, path)
    monkeypatch.setenv("ONNXC_CACHE", "0")
    assert main(["run", str(path), "--repeat", "1", "--timings"]) == 0
    err = capsys.readouterr().err
    for stage in ("import", "graph-opt", "graph-to-loops", "loops-to-llvm", "llvm-jit"):
        assert f"[onnxc] {stage}: " in err
