"""`onnxc.load(DIR)`: a CompiledModel from an ahead-of-time artifact, without compiling.

The artifact's library (runtime/artifact.py) is opened with the dynamic loader; the model
runs through its raw entry, `<prefix>_entry(argv)`, behind the same Python layer as a JIT
compile (CompiledModel: every input checked before native code sees it, arenas per
concurrent run, run-time check failures as InvalidInputError). The constants are views of
the weights embedded in the library, which the loader maps from the file: loading copies
nothing and compiles nothing.

What is refused, with ModelLoadError saying why: a directory without a readable manifest, a
manifest this onnxc does not understand or whose description does not hold together (sizes,
offsets, dtypes, check sites: checked before anything is built from them), and an artifact
built for another architecture or for features this CPU lacks (its code would die of an
illegal instruction).
"""

from __future__ import annotations

import ctypes
import json
import math
import os
from pathlib import Path

import numpy as np

from onnxc.errors import ModelLoadError
from onnxc.runtime.compiled_model import CompiledModel
from onnxc.runtime.model_abi import BadEntry, ModelABI, parse_size, parse_spec
from onnxc.target import Target, host_target

MANIFEST = "manifest.json"
FORMAT = "onnxc-artifact"
FORMAT_VERSION = 1
"""What a manifest must say it is (runtime/artifact.py writes it)."""


def _manifest(directory: Path) -> dict:
    path = directory / MANIFEST
    try:
        manifest = json.loads(path.read_text())
    except FileNotFoundError:
        raise ModelLoadError(f"{directory} is not an onnxc artifact: no {MANIFEST}") from None
    except (OSError, ValueError) as error:
        raise ModelLoadError(f"cannot read {path}: {error}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ModelLoadError(f"{path} is not an onnxc artifact manifest")
    if manifest.get("version") != FORMAT_VERSION:
        raise ModelLoadError(f"{path}: artifact format {manifest.get('version')!r}, this onnxc "
                             f"reads format {FORMAT_VERSION}: rebuild it")
    return manifest


def _runs_here(target: Target, path: Path) -> None:
    reason = target.why_it_cannot_run_on(host_target())
    if reason is not None:
        raise ModelLoadError(
            f"{path} was built for {target.name} ({target.cpu}) and cannot run here: {reason}")


def _arrays(rows, buffer, weights_bytes: int, what: str) -> list[tuple[str, np.ndarray]]:
    """Read-only views of the weights, one per layout row (checked against the blob)."""
    if not isinstance(rows, list):
        raise BadEntry(f"'{what}' is not a list")
    out = []
    for row in rows:
        if not isinstance(row, dict):
            raise BadEntry(f"bad {what} description")
        name, shape, dtype = parse_spec([row.get("name"), row.get("shape"), row.get("dtype")])
        offset, nbytes = parse_size(row, "offset"), parse_size(row, "nbytes")
        if offset % 64 or offset + nbytes > weights_bytes \
                or nbytes != math.prod(shape) * dtype.itemsize:
            raise BadEntry(f"{what} '{name}' does not fit the weights")
        if nbytes:
            array = np.frombuffer(buffer, dtype, nbytes // dtype.itemsize, offset)
        else:
            array = np.zeros(0, dtype)
        array = array.reshape(shape)
        array.flags.writeable = False  # mapped read-only from the library
        out.append((name, array))
    return out


def load(directory: str | os.PathLike) -> CompiledModel:
    """The model of the artifact in `directory` (built by `onnxc.compile_artifact` or
    `onnxc compile`) as a CompiledModel, for this machine; ModelLoadError if it cannot be."""
    directory = Path(directory)
    manifest = _manifest(directory)
    path = directory / MANIFEST
    try:
        abi = ModelABI.from_json(manifest)
    except BadEntry as error:
        raise ModelLoadError(f"{path}: {error}") from None
    _runs_here(abi.target, path)
    prefix = manifest.get("prefix")
    library = directory / str((manifest.get("files") or {}).get("library", ""))
    if not isinstance(prefix, str) or not prefix.isidentifier() or not library.is_file():
        raise ModelLoadError(f"{path}: bad prefix or missing library")
    try:
        weights_bytes = parse_size(manifest, "weights_bytes")
        try:
            lib = ctypes.CDLL(str(library.resolve()))
            entry = ctypes.cast(getattr(lib, f"{prefix}_entry"), ctypes.c_void_p).value
            base = ctypes.addressof(ctypes.c_ubyte.in_dll(lib, f"{prefix}_weights"))
        except (OSError, AttributeError, ValueError) as error:
            raise ModelLoadError(f"cannot load {library}: {error}") from None
        buffer = (ctypes.c_ubyte * max(weights_bytes, 1)).from_address(base)
        constants = [a for _, a in _arrays(manifest.get("constants"), buffer, weights_bytes,
                                           "constants")]
        defaults = dict(_arrays(manifest.get("defaults"), buffer, weights_bytes, "defaults"))
    except BadEntry as error:
        raise ModelLoadError(f"{path}: {error}") from None
    return CompiledModel(lib, entry, abi, constants, defaults)

__all__ = ["load"]
