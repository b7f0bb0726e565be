"""The disk compile cache: hits skip compilation, keys follow the options, bad entries recompile.

Every test uses its own `tmp_path` cache; tests/conftest.py keeps the rest of the suite in a
session temporary directory, never in ~/.cache.
"""

import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxc
from onnxc.runtime import cache

_W = np.arange(8, dtype=np.float32).reshape(2, 4) / 10 - 0.5
_B = np.array([0.5, -1.0, 0.0, 0.25], np.float32)


def _model() -> onnx.ModelProto:
    """y = relu(x * w + b): weights that must survive the round trip through the cache."""
    nodes = [
        helper.make_node("Mul", ["x", "w"], ["xw"]),
        helper.make_node("Add", ["xw", "b"], ["pre"]),
        helper.make_node("Relu", ["pre"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
        [numpy_helper.from_array(_W, "w"), numpy_helper.from_array(_B, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _x() -> np.ndarray:
    return np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)


def _expected() -> np.ndarray:
    return np.maximum(_x() * _W + _B, 0)


def _entries(root: Path) -> list[Path]:
    return sorted(root.rglob("*.onnxc"))


def _was_hit(compiled) -> bool:
    return list(compiled.compile_seconds) == ["cache-lookup"]


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
    keys = {cache.cache_key(model, level, None) for level in (0, 1, 3)}
    keys.add(cache.cache_key(model, 3, ["canonicalize"]))
    assert len(keys) == 4
    onnxc.compile(model, opt_level=3, cache_dir=tmp_path)
    other = onnxc.compile(model, opt_level=0, cache_dir=tmp_path)
    assert not _was_hit(other) and len(_entries(tmp_path)) == 2


def test_key_follows_the_weights():
    changed = _model()
    changed.graph.initializer[1].CopyFrom(numpy_helper.from_array(_B + 1, "b"))
    assert cache.cache_key(_model(), 3, None) != cache.cache_key(changed, 3, None)
    assert cache.cache_key(_model(), 3, None) == cache.cache_key(
        _model().SerializeToString(), 3, None
    )


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty", "flip-code"])
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
    else:  # one byte of the object code: the header's digest must catch it
        (header_len,) = struct.unpack_from("<Q", data, 16)
        data_start = -(-(24 + header_len) // 64) * 64
        data[data_start + 100] ^= 0xFF
    entry.write_bytes(bytes(data))
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
    import os
    import time

    from onnxc.runtime.cache import evict

    root = tmp_path / "cache"
    shard = root / "v1" / "ab"
    shard.mkdir(parents=True)
    paths = []
    for i in range(4):
        p = shard / f"{i}.onnxc"
        p.write_bytes(b"x" * 1000)
        os.utime(p, (time.time() - 100 + i, time.time() - 100 + i))
        paths.append(p)
    evict(root, keep=paths[0], limit=2500)
    assert [p.exists() for p in paths] == [True, False, False, True]
