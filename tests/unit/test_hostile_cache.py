"""A hostile compile cache: tampered, swapped or forged entries, and unsafe directories.

Each case runs in a forked child (`isolated`, tests/unit/isolation.py), so a crash or a
hijacked process fails that case only. A tampered entry must be a miss that is deleted and
never loaded: the child counts calls of `NativeModule.from_object` (loading code) and of
the entry's header parser, and the model it then compiles must give the right outputs. An
unsafe directory or key file must give a CacheWarning naming it, a compile without the
cache, and no file read or written in it. See docs/robustness.md, "The compile cache:
threat model".
"""

from __future__ import annotations

import io
import json
import os
import shutil
import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxc
from onnxc.errors import CacheWarning
from onnxc.runtime import cache, cache_entry
from tests.unit.isolation import isolated

_W = np.arange(8, dtype=np.float32).reshape(2, 4) / 10 - 0.5
_B = np.array([0.5, -1.0, 0.0, 0.25], np.float32)
_X = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)


def _model(scale: float = 1.0) -> onnx.ModelProto:
    """y = relu(x * w * scale + b); two scales are two models with the same signature (and
    the same code: weights are not part of it). Scale 0 is y = relu(x * w - b), other code."""
    op = "Sub" if scale == 0 else "Add"
    scale = scale or 1.0
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "w"], ["xw"]), helper.make_node(op, ["xw", "b"], ["p"]),
         helper.make_node("Relu", ["p"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
        [numpy_helper.from_array(_W * scale, "w"), numpy_helper.from_array(_B, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _expected(scale: float = 1.0) -> np.ndarray:
    if scale == 0:
        return np.maximum(_X * _W - _B, 0)
    return np.maximum(_X * (_W * scale) + _B, 0)


def _was_hit(compiled) -> bool:
    return list(compiled.compile_seconds) == ["cache-lookup"]


def _entries(root: Path) -> list[Path]:
    return sorted(root.rglob("*.onnxc"))


def _compile_one(root: Path, scale: float = 1.0) -> Path:
    """Compile `_model(scale)` into `root`; its entry's path."""
    before = set(_entries(root))
    onnxc.compile(_model(scale), cache_dir=root)
    (new,) = set(_entries(root)) - before
    return new


def _listing(root: Path) -> dict[str, tuple]:
    """Every file and directory below `root` with what a write would change."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns,
                                       p.stat().st_mode)
            for p in sorted(root.rglob("*"))}


class _Spy:
    """Counts, in this (child) process, loads of object code and parses of entry headers."""

    def __init__(self):
        from onnxc.runtime.jit import NativeModule

        self.objects = 0
        self.headers = 0
        load = NativeModule.from_object.__func__

        def from_object(cls, code, **options):
            self.objects += 1
            return load(cls, code, **options)

        NativeModule.from_object = classmethod(from_object)
        parse = json.loads

        def loads(*args, **kwargs):
            self.headers += 1
            return parse(*args, **kwargs)

        cache_entry.json = type("json", (), {"loads": staticmethod(loads),
                                             "dumps": staticmethod(json.dumps)})


def _after_tampering(root: Path, entries: list[Path], scales: list[float]) -> dict:
    """In the child: look the tampered entries up directly, then compile each model twice;
    what happened."""
    spy = _Spy()
    loaded = [cache.load(root, e.stem) is not None for e in entries]
    seen = {"loaded": loaded, "objects": spy.objects, "headers": spy.headers,
            "left": [e.exists() for e in entries], "hits": [], "outputs": []}
    for scale in scales:
        first = onnxc.compile(_model(scale), cache_dir=root)
        again = onnxc.compile(_model(scale), cache_dir=root)
        seen["hits"].append((_was_hit(first), _was_hit(again)))
        seen["outputs"].append((first(_X)[0], again(_X)[0]))
    return seen


def _assert_rejected(seen: dict, scales: list[float]) -> None:
    """Every tampered entry: a miss, deleted, its code and header never read; the models
    then compile, give the right outputs, and the cache works again."""
    assert seen["loaded"] == [False] * len(seen["loaded"])
    assert seen["objects"] == 0 and seen["headers"] == 0, seen
    assert seen["left"] == [False] * len(seen["left"])
    assert seen["hits"] == [(False, True)] * len(scales)
    for scale, (first, again) in zip(scales, seen["outputs"]):
        np.testing.assert_allclose(first, _expected(scale), rtol=1e-6)
        np.testing.assert_array_equal(again, first)


def _secret(root: Path) -> bytes:
    return (root / cache.KEY_FILE).read_bytes()


def _entry(path: Path) -> cache_entry.Entry:
    """The content of a good entry (read with the real secret, as only its owner can)."""
    root = path.parents[2]
    return cache_entry.read(path.read_bytes(), path.stem, _secret(root))


def _write_forged(path: Path, entry: cache_entry.Entry, secret: bytes) -> None:
    out = io.BytesIO()
    cache_entry.write(out, path.stem, secret, entry)
    path.write_bytes(out.getvalue())


def _header_span(data: bytes) -> tuple[int, int]:
    (length,) = np.frombuffer(data, "<u8", 1, 16)
    return 24, 24 + int(length)


def _system_object(marker: Path) -> bytes:
    """Object code whose entry point runs `touch marker` through libc's system()."""
    from onnxc.dialects.entry_abi import WRAPPER_NAME
    from onnxc.runtime.jit import NativeModule

    command = f"touch {marker}".encode() + b"\0"
    escaped = "".join(f"\\{b:02X}" for b in command)
    text = f"""
declare i32 @system(i8*)
@cmd = private constant [{len(command)} x i8] c"{escaped}"
define i32 @{WRAPPER_NAME}(i8* %argv) {{
  %p = getelementptr [{len(command)} x i8], [{len(command)} x i8]* @cmd, i64 0, i64 0
  %r = call i32 @system(i8* %p)
  ret i32 0
}}
"""
    return NativeModule.from_llvm_ir(text, opt_level=0).object_code()


# ------------------------------------------------------------------ tampered entries


def _tamper_object_from_other_entry(root: Path) -> list[Path]:
    a, b = _compile_one(root, 1.0), _compile_one(root, 0.0)
    data, other = bytearray(a.read_bytes()), _entry(b).object_code
    assert other != _entry(a).object_code
    start = -(-_header_span(data)[1] // 64) * 64
    data[start:start + len(other)] = other  # B's (valid) code where A's was, A's MAC kept
    a.write_bytes(bytes(data))
    return [a]


def _tamper_object_calling_system(root: Path) -> list[Path]:
    a = _compile_one(root)
    entry = _entry(a)
    entry.object_code = _system_object(root.parent / "pwned")
    _write_forged(a, entry, os.urandom(32))  # well-formed, but the attacker lacks the secret
    return [a]


def _tamper_weights(root: Path) -> list[Path]:
    a = _compile_one(root)
    data = bytearray(a.read_bytes())
    begin, end = _header_span(data)
    constant = json.loads(data[begin:end])["constants"][0]
    data[-(-end // 64) * 64 + constant["offset"]] ^= 0x40  # one bit of one weight
    a.write_bytes(bytes(data))
    return [a]


def _tamper_header_shapes(root: Path) -> list[Path]:
    a = _compile_one(root)
    data = a.read_bytes()
    begin, end = _header_span(data)
    header = data[begin:end].replace(b'"x",[2,4]', b'"x",[9,9]')  # same length
    assert header != data[begin:end]
    a.write_bytes(data[:begin] + header + data[end:])
    return [a]


def _tamper_truncate(root: Path) -> list[Path]:
    a = _compile_one(root)
    data = a.read_bytes()
    a.write_bytes(data[:len(data) - 100])
    return [a]


def _tamper_swap(root: Path) -> list[Path]:
    a, b = _compile_one(root, 1.0), _compile_one(root, 2.0)
    data_a, data_b = a.read_bytes(), b.read_bytes()
    a.write_bytes(data_b)
    b.write_bytes(data_a)
    return [a, b]


def _tamper_forged_with_other_secret(root: Path) -> list[Path]:
    a, b = _compile_one(root, 1.0), _compile_one(root, 0.0)
    _write_forged(a, _entry(b), os.urandom(32))  # B's model, well-formed, under A's key
    return [a]


def _tamper_key_deleted(root: Path) -> list[Path]:
    a = _compile_one(root)
    (root / cache.KEY_FILE).unlink()
    return [a]


def _tamper_key_replaced(root: Path) -> list[Path]:
    a = _compile_one(root)
    key = root / cache.KEY_FILE
    key.unlink()
    fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, os.urandom(32))
    os.close(fd)
    return [a]


def _tamper_entry_writable_by_others(root: Path) -> list[Path]:
    a = _compile_one(root)
    a.chmod(0o666)  # could change under the mapping after the MAC check
    return [a]


def _tamper_entry_is_a_symlink(root: Path) -> list[Path]:
    a, b = _compile_one(root, 1.0), _compile_one(root, 2.0)
    a.unlink()
    a.symlink_to(b)
    return [a]


_TAMPERING = {
    "object-from-another-entry": (_tamper_object_from_other_entry, [1.0]),
    "object-calling-system": (_tamper_object_calling_system, [1.0]),
    "edited-weights": (_tamper_weights, [1.0]),
    "edited-header-shapes": (_tamper_header_shapes, [1.0]),
    "truncated": (_tamper_truncate, [1.0]),
    "two-entries-swapped": (_tamper_swap, [1.0, 2.0]),
    "forged-with-another-secret": (_tamper_forged_with_other_secret, [1.0]),
    "key-file-deleted": (_tamper_key_deleted, [1.0]),
    "key-file-replaced": (_tamper_key_replaced, [1.0]),
    "entry-writable-by-others": (_tamper_entry_writable_by_others, [1.0]),
    "entry-is-a-symlink": (_tamper_entry_is_a_symlink, [1.0]),
}


@pytest.mark.parametrize("case", sorted(_TAMPERING))
def test_a_tampered_entry_is_a_deleted_miss_and_never_loaded(tmp_path, case):
    tamper, scales = _TAMPERING[case]
    root = tmp_path / "cache"

    def child() -> dict:
        entries = tamper(root)
        return _after_tampering(root, entries, scales)

    seen = isolated(child).returned()
    _assert_rejected(seen, scales)
    assert not (tmp_path / "pwned").exists()


def test_the_system_payload_is_real_when_signed_with_the_secret(tmp_path):
    """Control for the case above: the same forged entry MAC'd with the cache's own secret
    (what only this user can do) is loaded and runs system(); the MAC is what stops it."""
    root = tmp_path / "cache"

    def child() -> bool:
        a = _compile_one(root)
        entry = _entry(a)
        entry.object_code = _system_object(tmp_path / "pwned")
        _write_forged(a, entry, _secret(root))
        model = cache.load(root, a.stem)
        model(_X)
        return model is not None

    assert isolated(child).returned()
    assert (tmp_path / "pwned").exists()


# --------------------------------------------- authentic but inconsistent headers


def _resign(path: Path, edit) -> None:
    """Rewrite the entry at `path` with `edit(header)` applied and a valid MAC: what only
    the secret's owner could do, to test the checks behind the MAC."""
    data = path.read_bytes()
    begin, end = _header_span(data)
    header = json.loads(data[begin:end])
    payload = data[-(-end // 64) * 64:-cache_entry.MAC_BYTES]
    edit(header)
    encoded = json.dumps(header).encode()
    head = cache_entry.MAGIC + len(encoded).to_bytes(8, "little") + encoded
    head += bytes(-len(head) % 64)
    mac = cache_entry._mac(_secret(path.parents[2]), path.stem)
    mac.update(head + payload)
    path.write_bytes(head + payload + mac.digest())


def _first(name):
    return lambda header: header[name][0]


_INCONSISTENT = {
    "constant-past-the-end": lambda h: _first("constants")(h).update(offset=h["data_bytes"]),
    "size-not-shape": lambda h: _first("constants")(h).update(shape=[10**6]),
    "void-dtype": lambda h: _first("constants")(h).update(dtype="V2"),
    "object-dtype": lambda h: h["abi"]["inputs"][0].__setitem__(2, "object"),
    "negative-dim": lambda h: h["abi"]["inputs"][0].__setitem__(1, [-2, 4]),
    "huge-dim": lambda h: h["abi"]["outputs"][0].__setitem__(1, [2**60, 4]),
    "status-past-the-arena": lambda h: h["abi"].update(status_offset=h["abi"]["arena_bytes"]),
    "other-key": lambda h: h.update(key="0" * 64),
    "no-code": lambda h: h["object"].update(nbytes=0),
    "batch-rows-mismatch": lambda h: h["abi"].update(batch_rows=[[3], [1]]),
    "default-of-no-input": lambda h: h.update(defaults=[dict(_first("constants")(h),
                                                             name="nope")]),
    "data-size": lambda h: h.update(data_bytes=h["data_bytes"] + 64),
    "not-json-object": lambda h: h.clear(),
    "abi-not-an-object": lambda h: h.update(abi=[]),
    "bad-precision": lambda h: h["abi"].update(precision="fp8"),
    "bad-target": lambda h: h["abi"].update(target="host"),
}


@pytest.mark.parametrize("case", sorted(_INCONSISTENT))
def test_an_authentic_entry_with_inconsistent_header_is_still_refused(tmp_path, case):
    root = tmp_path / "cache"

    def child() -> dict:
        a = _compile_one(root)
        _resign(a, _INCONSISTENT[case])
        spy = _Spy()
        loaded = cache.load(root, a.stem)
        return {"loaded": loaded is not None, "objects": spy.objects, "left": a.exists()}

    assert isolated(child).returned() == {"loaded": False, "objects": 0, "left": False}


def test_resigning_an_unchanged_header_gives_a_good_entry(tmp_path):
    """Control for the cases above: `_resign` itself makes entries the cache accepts."""
    root = tmp_path / "cache"

    def child() -> np.ndarray:
        a = _compile_one(root)
        _resign(a, lambda header: None)
        return cache.load(root, a.stem)(_X)[0]

    np.testing.assert_allclose(isolated(child).returned(), _expected(), rtol=1e-6)


# -------------------------------------------------------------- unsafe directories


def _world_writable(root: Path) -> Path:
    root.chmod(0o777)
    return root


def _version_dir_group_writable(root: Path) -> Path:
    version = root / f"v{cache.FORMAT_VERSION}"
    version.chmod(0o770)
    return version


def _shard_writable_by_others(root: Path) -> Path:
    (shard,) = (root / f"v{cache.FORMAT_VERSION}").iterdir()
    shard.chmod(0o703)
    return shard


def _owned_by_another_user(root: Path) -> Path:
    os.chown(root, 65534, 65534)
    return root


def _key_file_0644(root: Path) -> Path:
    key = root / cache.KEY_FILE
    key.chmod(0o644)
    return key


def _key_file_of_another_user(root: Path) -> Path:
    key = root / cache.KEY_FILE
    os.chown(key, 65534, 65534)
    return key


def _key_file_is_a_symlink(root: Path) -> Path:
    key = root / cache.KEY_FILE
    elsewhere = root.parent / "elsewhere"
    shutil.move(key, elsewhere)
    key.symlink_to(elsewhere)
    return key


_as_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
_UNSAFE = {
    "world-writable": (_world_writable, "writable by group and others"),
    "version-dir-group-writable": (_version_dir_group_writable, "writable by group"),
    "shard-writable-by-others": (_shard_writable_by_others, "writable by others"),
    "owned-by-another-user": (_owned_by_another_user, "owned by uid 65534"),
    "key-file-0644": (_key_file_0644, "mode 0644"),
    "key-file-of-another-user": (_key_file_of_another_user, "owned by uid 65534"),
    "key-file-is-a-symlink": (_key_file_is_a_symlink, "cannot read the key file"),
}


@pytest.mark.parametrize("case", [
    pytest.param(c, marks=_as_root) if "another-user" in c else c for c in sorted(_UNSAFE)])
def test_an_unsafe_cache_is_refused_with_a_warning(tmp_path, case):
    make_unsafe, reason = _UNSAFE[case]
    root = tmp_path / "cache"

    def child() -> dict:
        _compile_one(root)
        path = make_unsafe(root)
        before = _listing(root)
        spy = _Spy()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            compiled = onnxc.compile(_model(), cache_dir=root)
            again = onnxc.compile(_model(), cache_dir=root)
        return {"path": str(path), "hit": _was_hit(compiled) or _was_hit(again),
                "y": compiled(_X)[0], "y2": again(_X)[0],
                "objects": spy.objects, "headers": spy.headers,
                "warnings": [str(w.message) for w in caught if w.category is CacheWarning],
                "unchanged": _listing(root) == before}

    seen = isolated(child).returned()
    assert len(seen["warnings"]) == 2, seen["warnings"]
    for message in seen["warnings"]:
        assert seen["path"] in message and reason in message, message
    assert not seen["hit"] and seen["objects"] == 0 and seen["headers"] == 0
    assert seen["unchanged"]  # nothing written, nothing deleted
    np.testing.assert_allclose(seen["y"], _expected(), rtol=1e-6)
    np.testing.assert_allclose(seen["y2"], _expected(), rtol=1e-6)


def test_a_missing_parent_is_created_private_and_an_unsafe_one_is_named(tmp_path):
    """onnxc makes missing directories 0700; a root inside a world-writable directory is
    fine (the root itself is checked, and everything below it goes through its fd)."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)

    def child() -> tuple:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            onnxc.compile(_model(), cache_dir=shared / "me" / "cache")
            hit = onnxc.compile(_model(), cache_dir=shared / "me" / "cache")
        return ([str(w.message) for w in caught if w.category is CacheWarning], _was_hit(hit),
                oct((shared / "me").stat().st_mode & 0o777))

    caught, hit, mode = isolated(child).returned()
    assert caught == [] and hit and mode == oct(0o700)
