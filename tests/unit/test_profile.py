"""`compile(profile=True)`: per-kernel-call counters in the arena, `CompiledModel.profile()`
and `onnxc run --profile` (lowering/profile_calls.py, runtime/profile.py)."""

import time

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onnxc
from onnxc.compilation import Compilation
from onnxc.compile_options import CompileOptions
from onnxc.errors import InvalidArgumentError
from onnxc.runtime.model_abi import BadEntry, ModelABI
from onnxc.tools.run import main
from tests.artifact_runner import skip_unless_runnable
from tests.single_op import graph_model

RUNS = 5


def _model() -> onnx.ModelProto:
    """conv -> relu -> matmul, named nodes."""
    rng = np.random.default_rng(0)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv0", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="relu0"),
             helper.make_node("MatMul", ["r", "m"], ["y"], name="matmul0")]
    return graph_model(
        nodes, {"x": (TensorProto.FLOAT, [1, 3, 16, 16])},
        {"y": (TensorProto.FLOAT, [1, 8, 16, 10])},
        initializers={"w": rng.standard_normal((8, 3, 3, 3)).astype(np.float32),
                      "b": rng.standard_normal(8).astype(np.float32),
                      "m": rng.standard_normal((16, 10)).astype(np.float32)},
        opset=17, ir_version=8)


def _x() -> np.ndarray:
    return np.random.default_rng(1).random((1, 3, 16, 16), dtype=np.float32)


@pytest.fixture(scope="module")
def profiled():
    return onnxc.compile(_model(), profile=True, num_threads=1, cache_dir=False)


def test_a_row_per_kernel_call_with_its_calls_and_time(profiled):
    x = _x()
    profiled(x)  # warm-up, then reset: only the timed runs count
    profiled.reset_profile()
    assert all(r.calls == 0 and r.seconds == 0 for r in profiled.profile().rows)
    started = time.perf_counter()
    for _ in range(RUNS):
        profiled(x)
    wall = time.perf_counter() - started
    profile = profiled.profile()
    ops = [r.op for r in profile.rows]
    assert "graph.conv" in ops and "graph.matmul" in ops
    assert [r.site for r in profile.rows] == list(range(len(profile.rows)))
    assert all(r.calls == RUNS and r.seconds > 0 and r.mean_seconds > 0
               for r in profile.rows)
    assert profile.runs == RUNS
    assert profile.kernel_seconds <= profile.seconds <= wall
    assert sum(r.share for r in profile.rows) <= 1
    matmul = next(r for r in profile.rows if r.op == "graph.matmul")
    assert matmul.node == "matmul0" and matmul.kernel.startswith("matmul")
    assert matmul.outputs == "1x8x16x10xf32"
    assert matmul.inputs.startswith("1x8x16x16xf32")
    conv = next(r for r in profile.rows if r.op == "graph.conv")
    assert conv.node in ("conv0", "relu0")  # the relu is fused into it
    assert profile.by_time()[0].seconds == max(r.seconds for r in profile.rows)


def test_outputs_identical_to_an_unprofiled_compile(profiled):
    plain = onnxc.compile(_model(), num_threads=1, cache_dir=False)
    x = _x()
    np.testing.assert_array_equal(profiled(x)[0], plain(x)[0])


def test_off_by_default_the_llvm_ir_has_no_counters():
    def ir(**options) -> str:
        lowered = Compilation(CompileOptions.of(num_threads=1, **options)).lower_to_llvm(
            _model())
        return str(lowered.llvm_module)

    default, off, on = ir(), ir(profile=False), ir(profile=True)
    assert default == off
    assert "counter" not in default
    assert "llvm.readcyclecounter" in on or "llvm.readsteadycounter" in on
    # the same kernels: profiling adds calls of an intrinsic, not functions
    assert on.count("define ") == default.count("define ")


def test_an_unprofiled_model_says_how_to_profile():
    plain = onnxc.compile(_model(), num_threads=1, cache_dir=False)
    with pytest.raises(InvalidArgumentError, match="profile=True"):
        plain.profile()
    with pytest.raises(InvalidArgumentError, match="profile=True"):
        plain.reset_profile()


def test_the_option_is_in_the_cache_key(tmp_path):
    """A profile=True compile is never served the profile=False entry, and its own entry
    keeps the call sites."""
    plain = onnxc.compile(_model(), num_threads=1, cache_dir=tmp_path)
    assert not plain.abi.profile_sites
    first = onnxc.compile(_model(), num_threads=1, profile=True, cache_dir=tmp_path)
    assert not first.from_cache and first.abi.profile_sites
    again = onnxc.compile(_model(), num_threads=1, profile=True, cache_dir=tmp_path)
    assert again.from_cache and again.abi == first.abi
    again(_x())
    assert all(r.calls == 1 for r in again.profile().rows)


def test_a_bad_stored_profile_record_is_refused(profiled):
    row = profiled.abi.to_json()
    assert ModelABI.from_json(row) == profiled.abi
    row["profile"] = dict(row["profile"], offset=profiled.abi.arena_bytes)
    with pytest.raises(BadEntry, match="profile"):
        ModelABI.from_json(row)


def test_each_arena_has_its_own_counters(profiled):
    """Runs in flight at once use separate arenas: a profile sums them all."""
    x = _x()
    profiled.reset_profile()
    slot = profiled._free_slots.pop()  # as a concurrent run would hold it
    try:
        profiled(x)  # on a second arena
    finally:
        profiled._free_slots.append(slot)
    profiled(x)
    assert profiled.arena_count >= 2
    assert all(r.calls == 2 for r in profiled.profile().rows)


def test_an_artifact_loaded_in_python_profiles(tmp_path):
    """`onnxc compile --profile`: the manifest keeps the sites, `onnxc.load` reads the
    counters of its arenas (the C API does not)."""
    skip_unless_runnable("host")
    onnxc.compile_artifact(_model(), tmp_path / "art", profile=True, num_threads=1,
                           quiet=True)
    loaded = onnxc.load(tmp_path / "art")
    x = _x()
    loaded(x)
    loaded(x)
    assert loaded.profile().runs == 2
    assert all(r.calls == 2 and r.seconds > 0 for r in loaded.profile().rows)


def test_onnxc_run_prints_the_table(tmp_path, capsys):
    path = tmp_path / "m.onnx"
    onnx.save(_model(), path)
    assert main(["run", str(path), "--profile", "--repeat", "3", "--num-threads", "1"]) == 0
    out = capsys.readouterr().out
    assert "profile of the 3 timed run(s), longest first:" in out
    header = next(line for line in out.splitlines() if "kernel" in line and "calls" in line)
    assert header.split()[:4] == ["%", "total", "ms", "calls"]
    assert any("graph.matmul" in line and "matmul0" in line for line in out.splitlines())
    assert "wall time per run" in out
