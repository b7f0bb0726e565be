"""The compile cache's key: a digest of every byte and option that decides a compiled model.

The key hashes (SHA-256, each part length-prefixed):
- the model as compile() reads it: the serialized model (a path's file bytes, the given
  bytes, or `ModelProto.SerializeToString()`) and the bytes of every tensor stored as
  external data, read where the importer reads them, with onnx's own reader (for a path,
  beside the file, as `onnx.load` does; for bytes and ModelProto, relative to the current
  directory, `numpy_helper.to_array`'s default). Files may change while a model compiles:
  a model whose tensors are all in its own bytes is compiled from the parse of the bytes
  the key hashed (`snapshot_parsed`); external data, which the importer reads again, is
  checked again (`unchanged`) before the entry is stored. A compile of content other than
  what the key hashed is never stored. (Compiling from an inlined copy of external data
  instead would keep a second copy of the weights alive for the whole compile.)
- the options that change code: the fields of `onnxc.compile_options.CompileOptions`
  (`key_text`; `num_threads` is compiled into parallel loops). The batch binding is a
  function of the model bytes (a symbolic `N` and a fixed 1 are different bytes) and of
  `input_shapes`, so it needs no field of its own;
- the toolchain: the entry format version, onnxc's version and a digest of its source
  (editable installs keep one version number while the code changes), the xDSL, llvmlite
  (and its LLVM), onnx, numpy and ml_dtypes versions (import-time shape inference and
  constant folding use them), the Python version, and the host triple, CPU name and feature
  string the code is compiled for.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

import onnx
import onnx.external_data_helper

from onnxc.runtime.cache_entry import FORMAT_VERSION

if TYPE_CHECKING:
    from onnxc.compile_options import CompileOptions

_PACKAGES = ("onnxc", "onnxc.dialects", "onnxc.frontend", "onnxc.passes", "onnxc.lowering",
             "onnxc.runtime")


@dataclass(frozen=True)
class Snapshot:
    """The digest of a model as compile() reads it."""

    digest: bytes
    reads_files: bool
    """whether that includes files (the model's, external data) that may change meanwhile"""


def _part(digest, data) -> None:
    """Add one length-prefixed part, so that no two sequences of parts hash alike."""
    with memoryview(data) as view:
        digest.update(view.nbytes.to_bytes(8, "little"))
        digest.update(view)


def snapshot(model) -> Snapshot | None:
    """The digest of `model` (path, bytes or ModelProto) and of every byte of external data
    the importer would read for it; None when it cannot be read or parsed (the importer
    then reports why)."""
    found = snapshot_parsed(model)
    return None if found is None else found[0]


def snapshot_parsed(model) -> tuple[Snapshot, onnx.ModelProto | None] | None:
    """`snapshot`, with the parse of the very bytes it hashed for a path or bytes whose
    tensors are all inside them (None otherwise): a compile from that parse reads the
    model once, not three times (lookup, compile, the check before the store), and
    compiles exactly what the key hashed, which no later change to the file can falsify."""
    try:
        return _snapshot(model)
    except Exception:  # noqa: BLE001 - unreadable, unparsable, missing data: no key
        return None


def unchanged(model, before: Snapshot) -> bool:
    """Whether the files `model` reads still hold what `before` hashed: checked before a
    compile is stored, so that a file changed while it compiled never gets an entry under
    the key of its old content."""
    return not before.reads_files or snapshot(model) == before


def _snapshot(model) -> tuple[Snapshot, onnx.ModelProto | None]:
    digest = hashlib.sha256(b"onnxc-model\0")
    if isinstance(model, onnx.ModelProto):
        data, proto, base_dir = model.SerializeToString(), model, ""
    elif isinstance(model, bytes | bytearray | memoryview):
        data = bytes(model)
        proto = onnx.ModelProto()
        proto.ParseFromString(data)
        base_dir = ""  # numpy_helper.to_array's default: the current directory
    elif isinstance(model, str | os.PathLike):
        # what onnx.load(path) does: the format from the extension, data beside the file
        path = os.path.abspath(os.fspath(model))
        with open(path, "rb") as f:
            data = f.read()
        fmt = onnx.serialization.registry.get_format_from_file_extension(
            os.path.splitext(path)[1]) or "protobuf"
        proto = onnx.load_from_string(data, format=fmt)
        base_dir = os.path.dirname(path)
    else:
        raise TypeError(f"not a model: {type(model).__name__}")
    _part(digest, data)
    del data
    external = 0
    for tensor in onnx.external_data_helper._get_all_tensors(proto):
        if onnx.external_data_helper.uses_external_data(tensor):
            # onnx's own reader (its path checks included), on a copy: never write into
            # the caller's ModelProto
            copy = onnx.TensorProto()
            copy.CopyFrom(tensor)
            onnx.external_data_helper.load_external_data_for_tensor(copy, base_dir)
            _part(digest, copy.raw_data)
            external += 1
    whole = None if external or isinstance(model, onnx.ModelProto) else proto
    return (Snapshot(digest.digest(), bool(external) or isinstance(model, str | os.PathLike)),
            whole)


@functools.cache
def toolchain_fingerprint() -> str:
    """Everything besides the model and the options that decides the code (see above)."""
    import llvmlite.binding as llvm

    from onnxc.runtime.jit import host_target
    from onnxc.version import __version__

    source = hashlib.sha256()
    for package in _PACKAGES:
        root = Path(__import__(package, fromlist=["_"]).__file__).parent
        for path in sorted(root.rglob("*.py")):
            _part(source, str(path.relative_to(root)).encode())
            _part(source, path.read_bytes())
    target = host_target()
    versions = [metadata.version(p) for p in ("xdsl", "llvmlite", "onnx", "numpy", "ml_dtypes")]
    return json.dumps([
        FORMAT_VERSION, __version__, source.hexdigest(), *versions,
        list(llvm.llvm_version_info), sys.implementation.name, list(sys.version_info[:3]),
        target.triple, target.cpu, target.features,
    ])


def compile_key(source: Snapshot, options: CompileOptions) -> str:
    """The hex SHA-256 naming the entry of `source` compiled with `options` here."""
    digest = hashlib.sha256(b"onnxc-key\0")
    _part(digest, source.digest)
    _part(digest, options.key_text().encode())
    _part(digest, toolchain_fingerprint().encode())
    return digest.hexdigest()


def cache_key(model, options: CompileOptions) -> str | None:
    """The key of `model` (path, bytes or ModelProto) compiled with `options` on this
    host; None when the model cannot be read (the importer then reports why)."""
    source = snapshot(model)
    if source is None:
        return None
    return compile_key(source, options)
