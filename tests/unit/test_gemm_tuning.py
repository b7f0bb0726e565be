"""The packed GEMM's blocking per CPU (runtime/gemm_tuning.py): `gemm_blocking` values, the
measured search and its record, and code built with other blockings computing the same
products (against onnxruntime at rtol 1e-4, atol 1e-5 * sqrt(K): f32 sums of K products in
another order)."""

from __future__ import annotations

import json

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxc
from onnxc.compile_options import CompileOptions
from onnxc.errors import InvalidArgumentError
from onnxc.runtime import gemm_tuning
from onnxc.target import host_target, parse_target

RNG = np.random.default_rng(5)


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    """A cache directory of this test's, without a record; the records read forgotten."""
    monkeypatch.setenv("ONNXC_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("ONNXC_TUNING_DIR", raising=False)
    monkeypatch.delenv("ONNXC_CACHE", raising=False)
    monkeypatch.setattr(gemm_tuning, "_known", {})
    return tmp_path


def _fake_search(times: dict[str, float], calls: list[int]):
    real = gemm_tuning.search

    def search(target, measure=None):
        calls.append(1)
        return real(target, measure=lambda c: times.get(c, 1.0))

    return search


def test_gemm_blocking_values():
    for bad in ["512", "0x512", "256x100", "8x512", "256x9000", 7, None, "fast"]:
        with pytest.raises(InvalidArgumentError, match="gemm_blocking"):
            CompileOptions.of(gemm_blocking=bad)
    assert CompileOptions.of(gemm_blocking="128x256").target.blocking == "128x256"
    assert CompileOptions.of(gemm_blocking="off").target.blocking == ""
    assert CompileOptions.of(gemm_blocking="1024x512").target.blocking == ""  # the default


def test_auto_measures_once_then_reads_the_record(own_cache, monkeypatch):
    calls: list[int] = []
    monkeypatch.setattr(gemm_tuning, "search", _fake_search({"1024x256": 0.5}, calls))
    assert CompileOptions.of().target.blocking == "1024x256"
    path = gemm_tuning.record_path(host_target())
    assert path.parent == own_cache / "tuning"
    record = json.loads(path.read_text())
    assert record["blocking"] == "1024x256" and set(record["seconds"]) == set(
        gemm_tuning.CANDIDATES)
    assert record["cpu"]["cpu"] == host_target().cpu
    gemm_tuning._known.clear()  # a new process: reads the record, measures nothing
    assert CompileOptions.of(num_threads=1).target.blocking == "1024x256"
    assert calls == [1]
    # another machine than this one, and "off": the defaults, whatever the record says
    assert CompileOptions.of(target="x86-64-v2").target.blocking == ""
    assert CompileOptions.of(runs_here=False).target.blocking == ""
    assert CompileOptions.of(gemm_blocking="off").target.blocking == ""


def test_the_default_stays_unless_clearly_slower():
    target = host_target()
    near = {gemm_tuning.DEFAULT: 1.0, "256x512": 1.0 - gemm_tuning.MARGIN / 2}
    assert gemm_tuning.search(target, measure=lambda c: near.get(c, 1.5))["blocking"] == (
        gemm_tuning.DEFAULT)
    clear = {gemm_tuning.DEFAULT: 1.0, "256x512": 1.0 - 2 * gemm_tuning.MARGIN}
    assert gemm_tuning.search(target, measure=lambda c: clear.get(c, 1.5))["blocking"] == (
        "256x512")


def test_cache_off_measures_nothing_but_reads_a_record(own_cache, monkeypatch):
    calls: list[int] = []
    monkeypatch.setattr(gemm_tuning, "search", _fake_search({"512x512": 0.1}, calls))
    monkeypatch.setenv("ONNXC_CACHE", "0")
    assert CompileOptions.of().target.blocking == ""
    assert calls == [] and not gemm_tuning.record_path(host_target()).exists()
    gemm_tuning.save(gemm_tuning.record_path(host_target()), gemm_tuning.search(
        host_target(), measure=lambda c: 0.1 if c == "512x512" else 1.0))
    assert CompileOptions.of().target.blocking == "512x512"


def test_a_broken_record_is_measured_again(own_cache, monkeypatch):
    path = gemm_tuning.record_path(host_target())
    path.parent.mkdir(parents=True)
    path.write_text('{"version": 1, "blocking": "99999x1"}')
    calls: list[int] = []
    monkeypatch.setattr(gemm_tuning, "search", _fake_search({}, calls))
    assert CompileOptions.of().target.blocking == ""  # the default measured fastest
    assert calls == [1]
    assert json.loads(path.read_text())["blocking"] == gemm_tuning.DEFAULT


def test_search_times_every_candidate_on_this_cpu():
    record = gemm_tuning.search(host_target())
    assert record["blocking"] in gemm_tuning.CANDIDATES
    assert all(0 < s < 1 for s in record["seconds"].values())


def _matmul(m, k, n):
    b = RNG.standard_normal((k, n)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "b"], ["y"])], "mm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])],
        [numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model, {"x": RNG.standard_normal((m, k)).astype(np.float32)}


def _conv(c, hw, cout):
    w = (RNG.standard_normal((cout, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1], strides=[2, 2])],
        "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, hw, hw])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model, {"x": RNG.standard_normal((1, c, hw, hw)).astype(np.float32)}, 9 * c


@pytest.mark.parametrize("blocking", ["128x256", "64x64", "384x1024"])
@pytest.mark.parametrize("threads", [1, 2])
def test_other_blockings_compute_the_same_products(blocking, threads, tmp_path):
    """K over several k-blocks and N over several stripes at each blocking (a MatMul with
    an M remainder and an N tail; a conv of 300 channels, its taps split in channel
    chunks), cold and then a cache hit; another blocking is another cache entry."""
    cases = [(*_matmul(133, 700, 600), 700), _conv(300, 15, 72)]
    for model, feeds, k in cases:
        expected = onnxruntime.InferenceSession(
            model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
        for warm in (False, True):
            compiled = onnxc.compile(model, gemm_blocking=blocking, num_threads=threads,
                                     cache_dir=tmp_path)
            assert compiled.from_cache == warm
            assert compiled.abi.target.blocking == blocking
            np.testing.assert_allclose(compiled.run(None, feeds)[0], expected, rtol=1e-4,
                                       atol=1e-5 * np.sqrt(k))
        other = onnxc.compile(model, gemm_blocking="off", num_threads=threads,
                              cache_dir=tmp_path)
        assert not other.from_cache and other.abi.target.blocking == ""


def test_the_blocking_reaches_the_kernels():
    """The same MatMul built with two blockings is two different machine codes (the k-loop
    and stripe bounds), built with the default spelled out the same code as "off"."""
    model, _ = _matmul(64, 600, 640)

    def code(blocking: str) -> bytes:
        compiled = onnxc.compile(model, gemm_blocking=blocking, cache_dir=False)
        return compiled._native.object_code()

    assert code("128x256") != code("off") == code(gemm_tuning.DEFAULT)


def test_a_blocking_survives_the_module_attribute():
    """The target a module records carries its blocking to the kernels; one recorded
    without it (IR from before) has the defaults."""
    from onnxc.target import module_target, set_module_target
    from tests.ir_helpers import parse_graph

    module = parse_graph("func.func @main() {\n  func.return\n}")
    tuned = parse_target("x86-64-v3")
    for blocking in ["", "128x256"]:
        target = type(tuned)(tuned.name, tuned.triple, tuned.cpu, tuned.features, blocking)
        set_module_target(module, target)
        assert ("blocking" in str(module)) == bool(blocking)
        assert module_target(module) == target
