"""The disk compile cache: a compiled model keyed by everything that decides its machine code.

An entry is one file, `<root>/v1/<key[:2]>/<key>.onnxc`, holding a JSON header (signature,
constant layout, arena size, entry symbol, digest of the code), the relocatable object MCJIT
produced and the constants (the weights are entry arguments, not part of the object code),
each 64-byte aligned so a hit memory-maps them instead of reading them. Entries are written to
a temporary file and `os.replace`d into place, so processes sharing a cache never see a torn
entry; anything unreadable is a miss, and the recompiled model overwrites it.

The key hashes the serialized model, the options that change code (`opt_level`,
`pass_pipeline`, `num_threads`: parallel loops compile the thread count in), onnxc's version
and source, the xDSL and llvmlite versions and the host (triple, CPU name, feature string).
Location: the `cache_dir` argument, else `$ONNXC_CACHE_DIR`, else `$XDG_CACHE_HOME/onnxc`
(`~/.cache/onnxc`); `cache_dir=False` or `ONNXC_CACHE=0` turns it off. The cache keeps at
most `$ONNXC_CACHE_MAX_MB` megabytes (default 2048): after each store the least recently used
entries (by access time, which a hit refreshes) are deleted until it fits.
"""

from __future__ import annotations

import functools
import hashlib
import json
import mmap
import os
import struct
import tempfile
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

import numpy as np
import onnx

from onnxc.runtime.compiled_model import CompiledModel, TensorSpec

FORMAT_VERSION = 1
_MAGIC = b"ONNXC-CACHE\x00v1\x00\x00"  # 16 bytes
_HEADER_LEN = struct.Struct("<Q")
_ALIGN = 64
DEFAULT_MAX_MB = 2048


def cache_root(cache_dir: str | os.PathLike | bool | None = None) -> Path | None:
    """The cache directory to use, or None when caching is off."""
    if cache_dir is False or os.environ.get("ONNXC_CACHE", "1").strip().lower() in (
        "0", "false", "no", "off",
    ):
        return None
    if cache_dir is not None and cache_dir is not True:
        return Path(cache_dir)
    if os.environ.get("ONNXC_CACHE_DIR"):
        return Path(os.environ["ONNXC_CACHE_DIR"])
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(xdg) / "onnxc"


def model_bytes(model) -> bytes:
    """The serialized model, with external data inlined so that changing it changes the key."""
    if isinstance(model, onnx.ModelProto):
        return model.SerializeToString()
    if isinstance(model, bytes | bytearray | memoryview):
        return bytes(model)
    data = Path(model).read_bytes()
    proto = onnx.ModelProto()
    proto.ParseFromString(data)
    if _uses_external_data(proto.graph):
        return onnx.load(os.fspath(model)).SerializeToString()
    return data


def _uses_external_data(graph: onnx.GraphProto) -> bool:
    if any(t.data_location == onnx.TensorProto.EXTERNAL for t in graph.initializer):
        return True
    for node in graph.node:
        for attr in node.attribute:
            tensors = [attr.t] if attr.HasField("t") else list(attr.tensors)
            if any(t.data_location == onnx.TensorProto.EXTERNAL for t in tensors):
                return True
            subgraphs = [attr.g] if attr.HasField("g") else list(attr.graphs)
            if any(_uses_external_data(g) for g in subgraphs):
                return True
    return False


@functools.cache
def _toolchain_fingerprint() -> str:
    """Versions of onnxc (and a digest of its source: editable installs keep one version
    number while the code changes), xDSL, llvmlite, and the host the code targets."""
    from onnxc.runtime.jit import host_target

    digest = hashlib.sha256()
    import onnxc

    for package in ("onnxc", "onnxc.dialects", "onnxc.frontend", "onnxc.passes",
                    "onnxc.lowering", "onnxc.runtime"):
        root = Path(__import__(package, fromlist=["_"]).__file__).parent
        for source in sorted(root.rglob("*.py")):
            digest.update(str(source.relative_to(root)).encode() + b"\0")
            digest.update(source.read_bytes())
    target = host_target()
    return json.dumps([
        FORMAT_VERSION, onnxc.__version__, digest.hexdigest(), metadata.version("xdsl"),
        metadata.version("llvmlite"), target.triple, target.cpu, target.features,
    ])


def cache_key(
    model, opt_level: int, pass_pipeline: str | Sequence[str] | None, num_threads: int = 1
) -> str | None:
    """The hex sha256 naming the entry of `model` compiled with these options on this host;
    None when the model cannot be read (the importer then reports why)."""
    pipeline = pass_pipeline if pass_pipeline is None or isinstance(pass_pipeline, str) \
        else list(pass_pipeline)
    try:
        digest = hashlib.sha256(model_bytes(model))
    except Exception:  # noqa: BLE001 - unreadable, unparsable or not a model: no key
        return None
    digest.update(b"\0" + json.dumps([opt_level, pipeline, num_threads]).encode())
    digest.update(b"\0" + _toolchain_fingerprint().encode())
    return digest.hexdigest()


def _entry_path(root: Path, key: str) -> Path:
    return root / f"v{FORMAT_VERSION}" / key[:2] / f"{key}.onnxc"


def _aligned(offset: int) -> int:
    return -(-offset // _ALIGN) * _ALIGN


def store(
    root: Path,
    key: str,
    compiled: CompiledModel,
    object_code: bytes,
    constant_names: Sequence[str],
    entry_symbol: str,
) -> Path | None:
    """Write the entry for `key` atomically; None (and no entry) if it cannot be written."""
    constants = [np.ascontiguousarray(c) for c in compiled._constants]
    if len(constants) != len(constant_names) or any(c.dtype.hasobject for c in constants):
        return None
    offset = _aligned(len(object_code))  # offsets count from the data start
    layout = []
    for name, c in zip(constant_names, constants):
        layout.append({"name": name, "dtype": c.dtype.str, "shape": list(c.shape),
                       "offset": offset, "nbytes": c.nbytes})
        offset = _aligned(offset + c.nbytes)
    header = {
        "entry_symbol": entry_symbol,
        "inputs": [[s.name, list(s.shape), np.dtype(s.dtype).str] for s in compiled.inputs],
        "outputs": [[s.name, list(s.shape), np.dtype(s.dtype).str] for s in compiled.outputs],
        "arena_bytes": compiled.arena_bytes,
        "intermediate_bytes": compiled.intermediate_bytes,
        "num_threads": compiled.num_threads,
        "object_bytes": len(object_code),
        "object_sha256": hashlib.sha256(object_code).hexdigest(),
        "constants": layout,
        "data_bytes": offset,
    }
    header_bytes = json.dumps(header).encode()
    data_start = _aligned(len(_MAGIC) + _HEADER_LEN.size + len(header_bytes))
    path = _entry_path(root, key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key[:16]}.", suffix=".tmp")
    except OSError:
        return None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(_MAGIC + _HEADER_LEN.pack(len(header_bytes)) + header_bytes)
            f.seek(data_start)
            f.write(object_code)
            for entry, c in zip(layout, constants):
                f.seek(data_start + entry["offset"])
                f.write(c.reshape(-1).view(np.uint8).data)
            f.truncate(data_start + offset)
        os.replace(tmp, path)
    except OSError:
        Path(tmp).unlink(missing_ok=True)
        return None
    evict(root, keep=path)
    return path


def max_bytes() -> int:
    """The cache's size bound, from `$ONNXC_CACHE_MAX_MB`."""
    try:
        return int(float(os.environ.get("ONNXC_CACHE_MAX_MB", DEFAULT_MAX_MB)) * 2**20)
    except ValueError:
        return DEFAULT_MAX_MB * 2**20


def evict(root: Path, keep: Path | None = None, limit: int | None = None) -> None:
    """Delete least recently used entries until the cache holds at most `limit` bytes."""
    limit = max_bytes() if limit is None else limit
    entries = []
    for entry in (root / f"v{FORMAT_VERSION}").glob("*/*.onnxc"):
        try:
            st = entry.stat()
        except OSError:
            continue  # removed by another process meanwhile
        entries.append((max(st.st_atime, st.st_mtime), st.st_size, entry))
    total = sum(size for _, size, _ in entries)
    for _, size, entry in sorted(entries):
        if total <= limit:
            break
        if entry == keep:
            continue
        entry.unlink(missing_ok=True)
        total -= size


def load(root: Path, key: str) -> CompiledModel | None:
    """The model stored under `key`, or None if there is no usable entry (a miss)."""
    from onnxc.runtime.jit import NativeModule

    path = _entry_path(root, key)
    try:
        with open(path, "rb") as f:
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
        os.utime(path)  # a hit makes the entry the most recently used

    except (OSError, ValueError):  # missing, unreadable or empty
        return None
    try:
        return _decode(mapped, NativeModule)
    except Exception:  # noqa: BLE001 - a corrupt entry of any kind is a miss, never a crash
        return None


def _decode(mapped: mmap.mmap, native_module) -> CompiledModel | None:
    start = len(_MAGIC) + _HEADER_LEN.size
    if len(mapped) < start or mapped[: len(_MAGIC)] != _MAGIC:
        return None
    (header_len,) = _HEADER_LEN.unpack_from(mapped, len(_MAGIC))
    header = json.loads(mapped[start : start + header_len].decode())
    data_start = _aligned(start + header_len)
    if len(mapped) != data_start + header["data_bytes"]:
        return None  # truncated or padded: not what store() wrote
    object_code = mapped[data_start : data_start + header["object_bytes"]]
    if hashlib.sha256(object_code).hexdigest() != header["object_sha256"]:
        return None
    constants = []
    for c in header["constants"]:
        dtype = np.dtype(c["dtype"])
        count = c["nbytes"] // dtype.itemsize if dtype.itemsize else 0
        array = np.frombuffer(mapped, dtype, count, data_start + c["offset"]) if count \
            else np.empty(0, dtype)
        constants.append(array.reshape(c["shape"]))
    native = native_module.from_object(object_code)

    def specs(rows) -> list[TensorSpec]:
        return [TensorSpec(name, tuple(shape), np.dtype(dtype)) for name, shape, dtype in rows]

    compiled = CompiledModel(
        native, native.function_address(header["entry_symbol"]), specs(header["inputs"]),
        specs(header["outputs"]), constants, header["arena_bytes"],
        header["intermediate_bytes"],
    )
    compiled._num_threads = int(header.get("num_threads", 1))
    return compiled
