"""The disk compile cache: hits skip compilation, keys follow the options, bad entries recompile.

Every test uses its own `tmp_path` cache; tests/conftest.py keeps the rest of the suite in a
session temporary directory, never in ~/.cache.
"""

import os
import re
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxc
import onnxc.compilation
from onnxc.compile_options import CompileOptions, option_specs
from onnxc.errors import InvalidArgumentError
from onnxc.runtime import cache
from onnxc.runtime.compiled_model import TensorSpec
from tests.single_op import graph_model

_W = np.arange(8, dtype=np.float32).reshape(2, 4) / 10 - 0.5
_B = np.array([0.5, -1.0, 0.0, 0.25], np.float32)


def _model() -> onnx.ModelProto:
    """y = relu(x * w + b): weights that must survive the round trip through the cache."""
    nodes = [
        helper.make_node("Mul", ["x", "w"], ["xw"]),
        helper.make_node("Add", ["xw", "b"], ["pre"]),
        helper.make_node("Relu", ["pre"], ["y"]),
    ]
    spec = (TensorProto.FLOAT, [2, 4])
    return graph_model(nodes, {"x": spec}, {"y": spec}, initializers={"w": _W, "b": _B},
                       opset=17, ir_version=8)


def _x() -> np.ndarray:
    return np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)


def _expected() -> np.ndarray:
    return np.maximum(_x() * _W + _B, 0)


def _entries(root: Path) -> list[Path]:
    return sorted(root.rglob("*.onnxc"))


def _was_hit(compiled) -> bool:
    assert compiled.from_cache == (list(compiled.compile_seconds) == ["cache-lookup"])
    return compiled.from_cache


def test_miss_then_hit(tmp_path):
    first = onnxc.compile(_model(), cache_dir=tmp_path)
    assert not _was_hit(first) and len(_entries(tmp_path)) == 1
    second = onnxc.compile(_model(), cache_dir=tmp_path)
    assert _was_hit(second)
    np.testing.assert_allclose(second.run(None, {"x": _x()})[0], _expected(), rtol=1e-6)
    assert len(_entries(tmp_path)) == 1


def test_hit_matches_a_fresh_compile(tmp_path):
    onnxc.compile(_model(), cache_dir=tmp_path)
    cached = onnxc.compile(_model(), cache_dir=tmp_path)
    fresh = onnxc.compile(_model(), cache_dir=False)
    assert _was_hit(cached)
    assert cached.inputs == fresh.inputs and cached.outputs == fresh.outputs
    assert cached.arena_bytes == fresh.arena_bytes
    np.testing.assert_array_equal(cached(_x())[0], fresh(_x())[0])


def test_key_follows_code_changing_options(tmp_path):
    model = _model()
    keys = {cache.cache_key(model, CompileOptions(opt_level=level)) for level in (0, 1, 3)}
    keys.add(cache.cache_key(model, CompileOptions.of(pass_pipeline=["canonicalize"],
                                                      num_threads=1)))
    assert len(keys) == 4
    onnxc.compile(model, opt_level=3, cache_dir=tmp_path)
    other = onnxc.compile(model, opt_level=0, cache_dir=tmp_path)
    assert not _was_hit(other) and len(_entries(tmp_path)) == 2


def test_key_follows_the_weights():
    changed = _model()
    changed.graph.initializer[1].CopyFrom(numpy_helper.from_array(_B + 1, "b"))
    options = CompileOptions()
    assert cache.cache_key(_model(), options) != cache.cache_key(changed, options)
    assert cache.cache_key(_model(), options) == cache.cache_key(
        _model().SerializeToString(), options)


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty", "flip-code", "flip-mac"])
def test_corrupt_entry_is_a_miss_and_is_rewritten(tmp_path, damage):
    onnxc.compile(_model(), cache_dir=tmp_path)
    (entry,) = _entries(tmp_path)
    data = bytearray(entry.read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "garbage":
        data = bytearray(os.urandom(len(data)))
    elif damage == "empty":
        data = bytearray()
    elif damage == "flip-code":  # one byte of the object code: the MAC must catch it
        (header_len,) = struct.unpack_from("<Q", data, 16)
        data_start = -(-(24 + header_len) // 64) * 64
        data[data_start + 100] ^= 0xFF
    else:
        data[-1] ^= 0x01
    entry.write_bytes(bytes(data))
    assert cache.load(tmp_path, entry.stem) is None
    assert not entry.exists()  # a bad entry is deleted by the lookup that finds it
    recompiled = onnxc.compile(_model(), cache_dir=tmp_path)
    assert not _was_hit(recompiled)
    np.testing.assert_allclose(recompiled(_x())[0], _expected(), rtol=1e-6)
    again = onnxc.compile(_model(), cache_dir=tmp_path)
    assert _was_hit(again)
    np.testing.assert_allclose(again(_x())[0], _expected(), rtol=1e-6)


def test_second_process_loads_from_the_cache(tmp_path):
    path = tmp_path / "model.onnx"
    onnx.save(_model(), path)
    onnxc.compile(path, cache_dir=tmp_path / "cache")
    script = (
        "import sys, numpy as np, onnxc\n"
        "m = onnxc.compile(sys.argv[1], cache_dir=sys.argv[2])\n"
        "x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)\n"
        "print(sorted(m.compile_seconds), m(x)[0].tolist())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(path), str(tmp_path / "cache")],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout
    stages, values = out.strip().split("] ", 1)
    assert stages == "['cache-lookup'"
    np.testing.assert_allclose(np.array(eval(values), np.float32), _expected(), rtol=1e-6)


def test_processes_filling_one_cache_at_once(tmp_path):
    """Concurrent writers of one key: each replaces the entry whole, none sees a torn one."""
    path = tmp_path / "model.onnx"
    onnx.save(_model(), path)
    script = (
        "import sys, numpy as np, onnxc\n"
        "m = onnxc.compile(sys.argv[1], cache_dir=sys.argv[2])\n"
        "x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)\n"
        "print(m(x)[0].tolist())\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(path), str(tmp_path / "cache")],
                         stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    for proc in procs:
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0
        np.testing.assert_allclose(np.array(eval(out), np.float32), _expected(), rtol=1e-6)
    assert len(_entries(tmp_path / "cache")) == 1
    assert not list((tmp_path / "cache").rglob("*.tmp"))
    assert _was_hit(onnxc.compile(path, cache_dir=tmp_path / "cache"))


def test_disabled_by_argument_and_environment(tmp_path, monkeypatch):
    onnxc.compile(_model(), cache_dir=False)
    monkeypatch.setenv("ONNXC_CACHE_DIR", str(tmp_path / "env"))
    monkeypatch.setenv("ONNXC_CACHE", "0")
    onnxc.compile(_model())
    onnxc.compile(_model(), cache_dir=tmp_path / "arg")
    assert not _entries(tmp_path)
    monkeypatch.delenv("ONNXC_CACHE")
    onnxc.compile(_model())
    assert len(_entries(tmp_path / "env")) == 1


def test_location_precedence(tmp_path, monkeypatch):
    monkeypatch.delenv("ONNXC_CACHE", raising=False)
    monkeypatch.setenv("ONNXC_CACHE_DIR", str(tmp_path / "env"))
    assert cache.cache_root(tmp_path / "arg") == tmp_path / "arg"
    assert cache.cache_root() == tmp_path / "env"
    monkeypatch.delenv("ONNXC_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_root() == tmp_path / "xdg" / "onnxc"
    assert cache.cache_root(False) is None


def test_suite_never_uses_the_home_cache():
    root = cache.cache_root()
    home = Path(os.path.expanduser("~")) / ".cache"
    assert root is not None and home not in root.resolve().parents


def test_unreadable_model_still_reports_a_load_error(tmp_path):
    with pytest.raises(onnxc.ModelLoadError):
        onnxc.compile(b"not a model", cache_dir=tmp_path)


def test_cache_is_bounded_least_recently_used_first(tmp_path):
    """Entries beyond ONNXC_CACHE_MAX_MB go, oldest use first; the new entry stays."""
    root = tmp_path / "cache"
    disk = cache.open_cache(root)
    shard = root / f"v{cache.FORMAT_VERSION}" / "ab"
    shard.mkdir(parents=True, mode=0o700)
    paths = []
    for i in range(4):
        p = shard / f"{i}.onnxc"
        p.write_bytes(b"x" * 1000)
        os.utime(p, (time.time() - 100 + i, time.time() - 100 + i))
        paths.append(p)
    disk.evict(keep="0", limit=2500)
    assert [p.exists() for p in paths] == [True, False, False, True]


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "-1", "lots", "1e400"])
def test_a_bad_cache_size_bound_is_an_invalid_argument(tmp_path, monkeypatch, value):
    monkeypatch.setenv("ONNXC_CACHE_MAX_MB", value)
    with pytest.raises(InvalidArgumentError, match=f"ONNXC_CACHE_MAX_MB.*{re.escape(value)}"):
        onnxc.compile(_model(), cache_dir=tmp_path)
    onnxc.compile(_model(), cache_dir=False)  # the bound only matters to the cache


@pytest.mark.parametrize("value, expected", [("", 2048 * 2**20), ("0.5", 2**19), ("0", 0)])
def test_cache_size_bound_values(monkeypatch, value, expected):
    monkeypatch.setenv("ONNXC_CACHE_MAX_MB", value)
    assert cache.max_bytes() == expected


# ------------------------------------------------- a hit is the fresh compile, in full


def _graph_model(nodes, inputs, outputs, initializers=(), opset=21) -> onnx.ModelProto:
    """`inputs` / `outputs` value infos, `initializers` tensors; IR version 10."""
    return graph_model(nodes, {i.name: i for i in inputs}, {o.name: o for o in outputs},
                       initializers=list(initializers), opset=opset, ir_version=10)


def _vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def _ml_dtypes_model() -> onnx.ModelProto:
    """Inputs, outputs, a constant and an overridable default in ml_dtypes' types."""
    import ml_dtypes

    wb = numpy_helper.from_array(np.linspace(-2, 2, 6).astype(ml_dtypes.bfloat16), "wb")
    q = numpy_helper.from_array(np.linspace(-2, 2, 6).astype(ml_dtypes.float8_e4m3fn), "q")
    nodes = [
        helper.make_node("Cast", ["x"], ["y_bf16"], to=TensorProto.BFLOAT16),
        helper.make_node("Cast", ["x"], ["y_f8"], to=TensorProto.FLOAT8E4M3FN),
        helper.make_node("Cast", ["x"], ["y_i4"], to=TensorProto.INT4),
        helper.make_node("Cast", ["b"], ["bf"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["wb"], ["wf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["bf", "wf"], ["z"]),
        helper.make_node("Identity", ["q"], ["qo"]),
    ]
    return _graph_model(
        nodes,
        [_vi("x", TensorProto.FLOAT, [6]), _vi("b", TensorProto.BFLOAT16, [6]),
         _vi("wb", TensorProto.BFLOAT16, [6])],
        [_vi("y_bf16", TensorProto.BFLOAT16, [6]), _vi("y_f8", TensorProto.FLOAT8E4M3FN, [6]),
         _vi("y_i4", TensorProto.INT4, [6]), _vi("z", TensorProto.FLOAT, [6]),
         _vi("qo", TensorProto.FLOAT8E4M3FN, [6])],
        [wb, q])


def _gather_model() -> onnx.ModelProto:
    """Run-time indices: check sites and a status record the hit must keep."""
    table = numpy_helper.from_array(np.arange(20, dtype=np.float32).reshape(5, 4), "table")
    return _graph_model(
        [helper.make_node("Gather", ["table", "i"], ["g"], name="pick"),
         helper.make_node("Relu", ["g"], ["y"])],
        [_vi("i", TensorProto.INT64, [3])], [_vi("y", TensorProto.FLOAT, [3, 4])], [table])


def _overridable_model() -> onnx.ModelProto:
    b = numpy_helper.from_array(np.array([1, 2, 3], np.float32), "b")
    return _graph_model(
        [helper.make_node("Add", ["x", "b"], ["y"])],
        [_vi("x", TensorProto.FLOAT, [3]), _vi("b", TensorProto.FLOAT, [3])],
        [_vi("y", TensorProto.FLOAT, [3])], [b])


def _batch_model(batch="N") -> onnx.ModelProto:
    """y = relu(x * w + b) over a symbolic (or, with an int, fixed) batch."""
    w = numpy_helper.from_array(_W[0], "w")
    b = numpy_helper.from_array(_B, "b")
    return _graph_model(
        [helper.make_node("Mul", ["x", "w"], ["xw"]), helper.make_node("Add", ["xw", "b"], ["p"]),
         helper.make_node("Relu", ["p"], ["y"])],
        [_vi("x", TensorProto.FLOAT, [batch, 4])], [_vi("y", TensorProto.FLOAT, [batch, 4])],
        [w, b])


def _feeds(name: str) -> dict[str, np.ndarray]:
    import ml_dtypes

    x = np.linspace(-3, 3, 6).astype(np.float32)
    return {
        "ml_dtypes": {"x": x, "b": x.astype(ml_dtypes.bfloat16)},
        "gather": {"i": np.array([4, -1, 0], np.int64)},
        "overridable": {"x": np.array([0.5, -1, 2], np.float32)},
        "batch": {"x": np.random.default_rng(3).standard_normal((3, 4)).astype(np.float32)},
        "mlp": {"x": _x()},
    }[name]


_ROUND_TRIP = {"ml_dtypes": _ml_dtypes_model, "gather": _gather_model,
               "overridable": _overridable_model, "batch": _batch_model, "mlp": _model}

_NOT_STATE = {"_native", "_entry", "_slot_lock", "_free_slots", "_slots", "compile_seconds",
              "from_cache"}
"""what differs between any two CompiledModels: the JIT engine and function pointer, the
lock and the arenas (compared by size below), the timings, and where it came from"""


def _assert_same(a, b, where: str) -> None:
    """a and b equal in type and value, recursively; arrays bit for bit, dtypes exactly."""
    assert type(a) is type(b), f"{where}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, f"{where}: {a.dtype}{a.shape} != " \
            f"{b.dtype}{b.shape}"
        assert a.tobytes() == b.tobytes(), f"{where}: different bytes"
    elif isinstance(a, dict):
        assert list(a) == list(b), f"{where}: keys {list(a)} != {list(b)}"
        for k in a:
            _assert_same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, list | tuple):
        assert len(a) == len(b), f"{where}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, TensorSpec):
        _assert_same(a.name, b.name, f"{where}.name")
        _assert_same(a.shape, b.shape, f"{where}.shape")
        _assert_same(np.dtype(a.dtype), np.dtype(b.dtype), f"{where}.dtype")
    elif isinstance(a, np.dtype):
        assert a == b and a.name == b.name and a.str == b.str, f"{where}: {a} != {b}"
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def _assert_same_model(fresh, hit) -> None:
    assert set(vars(fresh)) == set(vars(hit))
    for name in sorted(set(vars(fresh)) - _NOT_STATE):
        _assert_same(getattr(fresh, name), getattr(hit, name), name)
    for name in ("num_threads", "input_names", "output_names", "arena_count", "inputs",
                 "outputs", "overridable_inputs", "input_defaults", "check_sites",
                 "status_offset", "arena_bytes", "intermediate_bytes", "_batch_rows"):
        _assert_same(getattr(fresh, name), getattr(hit, name), name)
    _assert_same([s.arena.nbytes for s in fresh._free_slots],
                 [s.arena.nbytes for s in hit._free_slots], "arenas")


def _thread_counts() -> list[int]:
    from onnxc.runtime import thread_pool

    return [1, 2] if thread_pool.supported() else [1]


@pytest.mark.parametrize("threads", _thread_counts())
@pytest.mark.parametrize("name", sorted(_ROUND_TRIP))
def test_a_hit_is_the_fresh_compile_attribute_by_attribute(tmp_path, name, threads):
    model = _ROUND_TRIP[name]()
    fresh = onnxc.compile(model, cache_dir=False, num_threads=threads)
    stored = onnxc.compile(model, cache_dir=tmp_path, num_threads=threads)
    hit = onnxc.compile(model, cache_dir=tmp_path, num_threads=threads)
    assert not _was_hit(stored) and _was_hit(hit)
    _assert_same_model(fresh, stored)
    _assert_same_model(fresh, hit)
    feeds = _feeds(name)
    _assert_same(fresh.run(None, feeds), hit.run(None, feeds), "outputs")
    _assert_same(fresh(*feeds.values()), hit(*feeds.values()), "positional outputs")


def test_a_hit_still_checks_run_time_indices(tmp_path):
    onnxc.compile(_gather_model(), cache_dir=tmp_path)
    hit = onnxc.compile(_gather_model(), cache_dir=tmp_path)
    assert _was_hit(hit) and hit.check_sites and hit.status_offset >= 0
    with pytest.raises(onnxc.InvalidInputError, match=r"node 'pick' \(Gather\).*value 7"):
        hit.run(None, {"i": np.array([0, 7, 1], np.int64)})
    np.testing.assert_array_equal(hit.run(None, {"i": np.array([4, 0, -5], np.int64)})[0],
                                  np.arange(20, dtype=np.float32).reshape(5, 4)[[4, 0, 0]])


def test_a_hit_keeps_overridable_inputs(tmp_path):
    onnxc.compile(_overridable_model(), cache_dir=tmp_path)
    hit = onnxc.compile(_overridable_model(), cache_dir=tmp_path)
    assert _was_hit(hit) and hit.input_names == ["x"]
    assert [s.name for s in hit.overridable_inputs] == ["b"]
    x = np.zeros(3, np.float32)
    np.testing.assert_array_equal(hit.run(None, {"x": x})[0], [1, 2, 3])
    np.testing.assert_array_equal(hit.run(None, {"x": x, "b": np.full(3, 7, np.float32)})[0],
                                  [7, 7, 7])


@pytest.mark.parametrize("first", ["symbolic", "fixed"])
def test_symbolic_and_fixed_batch_get_their_own_entries(tmp_path, first):
    """A model saved with batch 1 is not the symbolic model compiled at 1: each compiles
    once, each hit runs as its own kind (any batch / exactly 1)."""
    models = {"symbolic": _batch_model("N"), "fixed": _batch_model(1)}
    order = [first, *(k for k in models if k != first)]
    x3 = _feeds("batch")["x"]
    for round_ in range(2):
        for kind in order:
            compiled = onnxc.compile(models[kind], cache_dir=tmp_path)
            assert _was_hit(compiled) == (round_ == 1), (kind, round_)
            if kind == "symbolic":  # no conv: the batch is a symbolic dimension
                assert compiled.inputs[0].shape == ("N", 4)
                np.testing.assert_allclose(compiled(x3)[0], np.maximum(x3 * _W[0] + _B, 0),
                                           rtol=1e-6)
            else:
                assert compiled.inputs[0].shape == (1, 4)
                with pytest.raises(onnxc.InvalidInputError):
                    compiled(x3)
    assert len(_entries(tmp_path)) == 2


# ------------------------------------------------------------------------- the key


def test_key_follows_every_code_changing_option():
    """Every field of CompileOptions but verify_numerics (which compiles the same code) and
    gemm_blocking (through the target it resolves to) is in the key; a field added later is
    too, by construction (key_text reads the fields)."""
    model = _batch_model(2)
    variants = [{}, {"opt_level": 1}, {"pass_pipeline": "fold-constant-ops"},
                {"pass_pipeline": ["fold-constant-ops"]}, {"num_threads": 2},
                {"input_shapes": {"x": [2, 4]}}, {"input_shapes": {"x": [3, 4]}},
                {"target": "x86-64-v3"}, {"profile": True}, {"gemm_blocking": "128x256"}]
    keys = {cache.cache_key(model, CompileOptions.of(**{"num_threads": 1, **v}))
            for v in variants}
    # bf16 is refused on a host without AVX512-BF16 by CompileOptions.of: build it as resolved
    keys.add(cache.cache_key(model, CompileOptions(precision="bf16")))
    assert len(keys) == len(variants) + 1
    keyed = {name for name, spec in option_specs().items() if spec.key}
    assert keyed == {"opt_level", "pass_pipeline", "num_threads", "input_shapes", "precision",
                     "target", "profile"}
    assert cache.cache_key(model, CompileOptions(verify_numerics=True)) == \
        cache.cache_key(model, CompileOptions())
    # numpy integers in input_shapes are the same shape as Python ones
    assert cache.cache_key(model, CompileOptions.of(input_shapes={"x": [2, 4]}, num_threads=1)) \
        == cache.cache_key(model, CompileOptions.of(
            input_shapes={"x": [np.int64(2), np.int64(4)]}, num_threads=1))
    assert cache.cache_key(_batch_model("N"), CompileOptions()) != \
        cache.cache_key(_batch_model(1), CompileOptions())


def test_key_follows_the_toolchain(monkeypatch):
    from onnxc.runtime import cache_key
    from onnxc.runtime.jit import host_target

    fingerprint = cache_key.toolchain_fingerprint()
    target = host_target()
    for part in ("xdsl", "llvmlite", "onnx", "numpy", "ml_dtypes"):
        from importlib import metadata

        assert metadata.version(part) in fingerprint
    assert target.cpu in fingerprint and target.features in fingerprint
    before = cache.cache_key(_model(), CompileOptions())
    monkeypatch.setattr(cache_key, "toolchain_fingerprint", lambda: fingerprint + "x")
    assert cache.cache_key(_model(), CompileOptions()) != before


def _save_with_external_data(directory: Path, weights: np.ndarray) -> Path:
    model = _model()
    model.graph.initializer[0].CopyFrom(numpy_helper.from_array(weights, "w"))
    path = directory / "model.onnx"
    onnx.save(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
              location="weights.bin", size_threshold=0)
    return path


@pytest.mark.parametrize("form", ["path", "bytes", "proto"])
def test_key_follows_external_data_for_every_input_form(tmp_path, monkeypatch, form):
    """The importer reads a path's external data beside the file, and for bytes and
    ModelProto from the current directory: the key hashes exactly those bytes, so new
    weights in the same file are a miss, never the old weights from the cache."""
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    monkeypatch.chdir(model_dir)
    path = _save_with_external_data(model_dir, _W)

    def given():
        if form == "path":
            return path
        if form == "bytes":
            return path.read_bytes()
        return onnx.load(path, load_external_data=False)

    root = tmp_path / "cache"
    first = onnxc.compile(given(), cache_dir=root)
    np.testing.assert_allclose(first(_x())[0], _expected(), rtol=1e-6)
    assert _was_hit(onnxc.compile(given(), cache_dir=root))
    key = cache.cache_key(given(), CompileOptions(num_threads=first.num_threads))
    assert key == _entries(root)[0].stem

    new_w = _W[::-1].copy()  # same size, different bytes, written into the same file
    other = tmp_path / "other"
    other.mkdir()
    monkeypatch.chdir(other)
    _save_with_external_data(other, new_w)
    monkeypatch.chdir(model_dir)
    with open(model_dir / "weights.bin", "r+b") as f:
        f.write((other / "weights.bin").read_bytes())
    assert cache.cache_key(given(), CompileOptions(num_threads=first.num_threads)) != key
    changed = onnxc.compile(given(), cache_dir=root)
    assert not _was_hit(changed)
    np.testing.assert_allclose(changed(_x())[0], np.maximum(_x() * new_w + _B, 0), rtol=1e-6)
    again = onnxc.compile(given(), cache_dir=root)
    assert _was_hit(again)
    np.testing.assert_allclose(again(_x())[0], np.maximum(_x() * new_w + _B, 0), rtol=1e-6)


def test_weights_changed_during_the_compile_are_not_stored_under_the_old_key(tmp_path,
                                                                             monkeypatch):
    """The key hashes the external data before the compile, the importer reads it again: if
    it changed in between, the result is returned but not cached."""
    import onnxc.api

    path = _save_with_external_data(tmp_path, _W)
    new_w = _W[::-1].copy()
    other = tmp_path / "other"
    other.mkdir()
    monkeypatch.chdir(other)
    _save_with_external_data(other, new_w)
    static_model = onnxc.compilation._static_model

    def change_then_compile(model, input_shapes):
        with open(tmp_path / "weights.bin", "r+b") as f:
            f.write((other / "weights.bin").read_bytes())
        return static_model(model, input_shapes)

    monkeypatch.setattr(onnxc.compilation, "_static_model", change_then_compile)
    compiled = onnxc.compile(path, cache_dir=tmp_path / "cache")
    np.testing.assert_allclose(compiled(_x())[0], np.maximum(_x() * new_w + _B, 0), rtol=1e-6)
    assert not _entries(tmp_path / "cache")
    monkeypatch.setattr(onnxc.compilation, "_static_model", static_model)
    onnxc.compile(path, cache_dir=tmp_path / "cache")
    hit = onnxc.compile(path, cache_dir=tmp_path / "cache")
    assert _was_hit(hit)
    np.testing.assert_allclose(hit(_x())[0], np.maximum(_x() * new_w + _B, 0), rtol=1e-6)


def test_a_model_file_rewritten_during_the_compile_is_compiled_as_hashed(tmp_path,
                                                                        monkeypatch):
    """A model file without external data is compiled from the parse of the bytes the key
    hashed, read once: a rewrite of the file during the compile changes neither the
    result nor what is stored under the key, and a compile of the new file is a miss."""
    import onnxc.api

    path = tmp_path / "model.onnx"
    onnx.save(_model(), path)
    new_w = _W[::-1].copy()
    changed = _model()
    changed.graph.initializer[0].CopyFrom(numpy_helper.from_array(new_w, "w"))
    static_model = onnxc.compilation._static_model
    loads = []
    real_load = onnx.load

    def rewrite_then_compile(model, input_shapes):
        onnx.save(changed, path)
        return static_model(model, input_shapes)

    def counting_load(*args, **kwargs):
        loads.append(args[0])
        return real_load(*args, **kwargs)

    monkeypatch.setattr(onnxc.compilation, "_static_model", rewrite_then_compile)
    monkeypatch.setattr(onnx, "load", counting_load)
    compiled = onnxc.compile(path, cache_dir=tmp_path / "cache")
    assert not loads  # the key's snapshot read it; nothing parsed it again
    np.testing.assert_allclose(compiled(_x())[0], _expected(), rtol=1e-6)
    assert len(_entries(tmp_path / "cache")) == 1
    monkeypatch.setattr(onnxc.compilation, "_static_model", static_model)
    fresh = onnxc.compile(path, cache_dir=tmp_path / "cache")  # the new content
    assert not _was_hit(fresh)
    np.testing.assert_allclose(fresh(_x())[0], np.maximum(_x() * new_w + _B, 0), rtol=1e-6)
    onnx.save(_model(), path)
    old = onnxc.compile(path, cache_dir=tmp_path / "cache")
    assert _was_hit(old)
    np.testing.assert_allclose(old(_x())[0], _expected(), rtol=1e-6)


def test_a_symbolic_batch_model_rewritten_during_the_compile_is_compiled_as_hashed(
        tmp_path, monkeypatch):
    """The same for a model compiled with its batch symbolic: the batch check's own parse is
    what the importer gets, so the file is read once and what is stored is what was hashed;
    a compile that did read the file again (ParsedOnce.reread) is checked before the store."""
    import onnxc.api

    def batch_model(w: np.ndarray) -> onnx.ModelProto:
        graph = helper.make_graph(
            [helper.make_node("Mul", ["x", "w"], ["xw"]), helper.make_node("Relu", ["xw"], ["y"])],
            "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])],
            [numpy_helper.from_array(w, "w")])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        return model

    old_w, new_w = np.array([1, -1, 2, 0.5], np.float32), np.array([-3, 1, 1, 2], np.float32)
    path = tmp_path / "model.onnx"
    onnx.save(batch_model(old_w), path)
    static_model = onnxc.compilation._static_model

    def rewrite_then_compile(model, input_shapes):
        onnx.save(batch_model(new_w), path)
        return static_model(model, input_shapes)

    monkeypatch.setattr(onnxc.compilation, "_static_model", rewrite_then_compile)
    compiled = onnxc.compile(path, cache_dir=tmp_path / "cache")
    x = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_allclose(compiled(x)[0], np.maximum(x * old_w, 0), rtol=1e-6)
    assert len(_entries(tmp_path / "cache")) == 1
    monkeypatch.setattr(onnxc.compilation, "_static_model", static_model)
    fresh = onnxc.compile(path, cache_dir=tmp_path / "cache")
    assert not _was_hit(fresh)
    np.testing.assert_allclose(fresh(x)[0], np.maximum(x * new_w, 0), rtol=1e-6)


def test_a_proto_with_external_data_is_not_modified(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = _save_with_external_data(tmp_path, _W)
    proto = onnx.load(path, load_external_data=False)
    before = proto.SerializeToString()
    onnxc.compile(proto, cache_dir=tmp_path / "cache")
    assert proto.SerializeToString() == before


# ------------------------------------------------------------------ files and modes


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o277, 0o000])
def test_directories_are_0700_and_files_0600_whatever_the_umask(tmp_path, umask):
    old = os.umask(umask)
    try:
        onnxc.compile(_model(), cache_dir=tmp_path / "new" / "cache")
    finally:
        os.umask(old)
    root = tmp_path / "new" / "cache"
    dirs = [tmp_path / "new", root, *(p for p in root.rglob("*") if p.is_dir())]
    files = [p for p in root.rglob("*") if p.is_file()]
    assert {oct(p.stat().st_mode & 0o777) for p in dirs} == {oct(0o700)}
    assert {oct(p.stat().st_mode & 0o777) for p in files} == {oct(0o600)}
    assert sorted(p.name for p in files if p.suffix != ".onnxc") == ["key"]
    assert _was_hit(onnxc.compile(_model(), cache_dir=root))


def test_a_hit_that_meets_less_memory_raises_and_keeps_its_entry(tmp_path, monkeypatch):
    """An authentic entry whose arena no longer fits is the user's ResourceLimitError (as a
    compile would be), not a bad entry: it is neither deleted nor recompiled."""
    from onnxc.runtime.compiled_model import CompiledModel

    onnxc.compile(_model(), cache_dir=tmp_path)
    (entry,) = _entries(tmp_path)

    def refuse(self):
        raise onnxc.ResourceLimitError("the arena of intermediate tensors needs too much")

    monkeypatch.setattr(CompiledModel, "_check_allocations", refuse, raising=False)
    with pytest.raises(onnxc.ResourceLimitError):
        cache.load(tmp_path, entry.stem)
    assert entry.exists()
