"""One compile-cache entry: the file format, its authentication, and the CompiledModel in it.

Layout (little-endian; every blob 64-byte aligned so that a hit maps the weights instead of
reading them):

    magic (16 bytes) | header length (u64) | header (JSON) | zero padding to 64
    data: object code, constants, input defaults (offsets relative to the data start)
    MAC (32 bytes): HMAC-SHA256(secret, DOMAIN | key | every byte before the MAC)

The MAC is keyed by the cache's per-user secret (runtime/cache.py) and covers the entry's
cache key, so an entry is only ever accepted under the key it was written for: a forged,
edited, truncated or swapped file fails it. `read` checks the MAC first, from the file size
alone, before any other byte is interpreted; only then is the header parsed, and every
value in it is still checked against the buffer (offsets and sizes in range, dtypes from a
fixed table, sizes that agree with shapes) before anything is built from it.

The header holds the model's `ModelABI` (runtime/model_abi.py: specs, batch rows, arena,
checks, threads, precision, target, symbols; the artifact manifest stores the same record),
the entry symbol, and the layout of the object code, the constants and the overridable
inputs' defaults.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np

from onnxc.runtime.compiled_model import CompiledModel, TensorSpec
from onnxc.runtime.model_abi import (
    BadEntry,
    ModelABI,
    parse_list,
    parse_object,
    parse_size,
    parse_spec,
    spec_row,
)

FORMAT_VERSION = 3
MAGIC = b"ONNXC-CACHE\x00v3\x00\x00"  # 16 bytes
_LENGTH = struct.Struct("<Q")
_PREFIX = len(MAGIC) + _LENGTH.size
_ALIGN = 64
MAC_BYTES = 32
_DOMAIN = b"onnxc compile cache entry v3\0"


@dataclass
class Entry:
    """The content of an entry: a CompiledModel's ABI, its weights, and the code it runs."""

    entry_symbol: str
    object_code: bytes
    abi: ModelABI
    constants: list[np.ndarray]
    constant_names: list[str]
    input_defaults: dict[str, np.ndarray]

    @classmethod
    def of(cls, compiled: CompiledModel, object_code: bytes, constant_names: Sequence[str],
           entry_symbol: str) -> Entry:
        """What a freshly compiled model is made of."""
        return cls(entry_symbol, bytes(object_code), compiled.abi, list(compiled._constants),
                   list(constant_names), dict(compiled.input_defaults))

    def compiled_model(self) -> CompiledModel:
        """Load the code and build the model (call only on an entry `read` accepted)."""
        from onnxc.runtime.jit import NativeModule

        native = NativeModule.from_object(self.object_code)
        return CompiledModel(native, native.function_address(self.entry_symbol), self.abi,
                             self.constants, self.input_defaults)


def aligned(offset: int) -> int:
    return -(-offset // _ALIGN) * _ALIGN


def _mac(secret: bytes, key: str):
    mac = hmac.new(secret, digestmod=hashlib.sha256)
    mac.update(_DOMAIN + key.encode("ascii") + b"\0")
    return mac


def tensor_layout(constant_names: Sequence[str], constants: Sequence[np.ndarray],
                  input_defaults: Mapping[str, np.ndarray], start: int,
                  ) -> tuple[dict[str, list[dict]], list[np.ndarray], int]:
    """Where the constants, then the inputs' defaults, go in a data block, each at a 64-byte
    boundary from `start` (cache entries and artifacts share this layout): the rows
    ({"constants": [...], "defaults": [...]}, each row name, shape, dtype, offset, nbytes),
    the arrays made C-contiguous in that order, and the aligned end."""
    layout: dict[str, list[dict]] = {"constants": [], "defaults": []}
    arrays: list[np.ndarray] = []
    offset = start
    named = [("constants", n, c) for n, c in zip(constant_names, constants)]
    named += [("defaults", n, c) for n, c in input_defaults.items()]
    for kind, name, array in named:
        array = np.ascontiguousarray(array)
        row = spec_row(TensorSpec(str(name), array.shape, array.dtype))
        layout[kind].append({"name": row[0], "shape": row[1], "dtype": row[2],
                             "offset": offset, "nbytes": array.nbytes})
        arrays.append(array)
        offset = aligned(offset + array.nbytes)
    return layout, arrays, offset


def write(out: BinaryIO, key: str, secret: bytes, entry: Entry) -> None:
    """Write `entry` for `key` to `out`, MAC last; BadEntry if it cannot be encoded."""
    if len(entry.constants) != len(entry.constant_names):
        raise BadEntry("constants and their names disagree")
    layout, arrays, offset = tensor_layout(entry.constant_names, entry.constants,
                                           entry.input_defaults, aligned(len(entry.object_code)))
    blobs = [memoryview(entry.object_code)]
    blobs += [memoryview(array.reshape(-1).view(np.uint8)) for array in arrays]
    header = {
        "key": key,
        "entry_symbol": entry.entry_symbol,
        "abi": entry.abi.to_json(),
        "object": {"offset": 0, "nbytes": len(entry.object_code)},
        **layout,
        "data_bytes": offset,
    }
    try:
        header_bytes = json.dumps(header, separators=(",", ":")).encode()
    except (TypeError, ValueError) as error:
        raise BadEntry(f"the header cannot be encoded: {error}") from None
    mac = _mac(secret, key)
    written = 0

    def emit(chunk) -> None:
        nonlocal written
        out.write(chunk)
        mac.update(chunk)
        written += len(chunk)

    emit(MAGIC + _LENGTH.pack(len(header_bytes)) + header_bytes)
    data_start = aligned(written)
    starts = [0] + [row["offset"] for kind in ("constants", "defaults") for row in layout[kind]]
    for start, blob in zip(starts, blobs):
        emit(bytes(data_start + start - written))
        emit(blob)
    emit(bytes(data_start + offset - written))
    out.write(mac.digest())


def read(buffer, key: str, secret: bytes) -> Entry:
    """The entry in `buffer` (the whole file) if its MAC holds for `key`; else BadEntry.

    Arrays are views of `buffer` (a hit maps the file: no copy of the weights)."""
    size = len(buffer)
    if size < _PREFIX + MAC_BYTES:
        raise BadEntry("shorter than an entry")
    mac = _mac(secret, key)
    with memoryview(buffer) as view:  # one pass over the mapped bytes (hashlib drops the GIL)
        mac.update(view[: size - MAC_BYTES])
        stored = bytes(view[size - MAC_BYTES:])
    if not hmac.compare_digest(mac.digest(), stored):
        raise BadEntry("MAC mismatch: not written by this cache for this key")
    # Authentic from here on; the checks below are defense in depth.
    if bytes(buffer[: len(MAGIC)]) != MAGIC:
        raise BadEntry("bad magic")
    (header_len,) = _LENGTH.unpack_from(buffer, len(MAGIC))
    if header_len > size - _PREFIX - MAC_BYTES:
        raise BadEntry("header runs past the file")
    try:
        header = json.loads(bytes(buffer[_PREFIX:_PREFIX + header_len]))
    except ValueError:
        raise BadEntry("header is not JSON") from None
    data_start = aligned(_PREFIX + header_len)
    data_bytes = parse_size(header, "data_bytes")
    if header.get("key") != key or data_start + data_bytes + MAC_BYTES != size:
        raise BadEntry("header disagrees with the file")

    def blob(row, what: str) -> tuple[int, int]:
        if not isinstance(row, dict):
            raise BadEntry(f"bad {what} description")
        offset, nbytes = parse_size(row, "offset"), parse_size(row, "nbytes")
        if offset % _ALIGN or offset + nbytes > data_bytes:
            raise BadEntry(f"{what} lies outside the data")
        return data_start + offset, nbytes

    def array(row, what: str) -> tuple[str, np.ndarray]:
        start, nbytes = blob(row, what)
        name, shape, dtype = parse_spec([row.get("name"), row.get("shape"), row.get("dtype")])
        if nbytes != math.prod(shape) * dtype.itemsize:
            raise BadEntry(f"{what} '{name}': size does not match its shape")
        if not nbytes:
            return name, np.zeros(shape, dtype)
        return name, np.frombuffer(buffer, dtype, nbytes // dtype.itemsize, start).reshape(shape)

    start, nbytes = blob(parse_object(header, "object"), "object code")
    constants = [array(row, "constant") for row in parse_list(header, "constants")]
    defaults = dict(array(row, "default") for row in parse_list(header, "defaults"))
    abi = ModelABI.from_json(header.get("abi"))
    by_name = {s.name: s for s in abi.inputs}
    for name, value in defaults.items():
        spec = by_name.get(name)
        if spec is None or spec.shape != value.shape or spec.dtype != value.dtype:
            raise BadEntry(f"default of '{name}' does not match an input")
    symbol = header.get("entry_symbol")
    if not nbytes or not isinstance(symbol, str):
        raise BadEntry("bad code description")
    return Entry(symbol, bytes(buffer[start:start + nbytes]), abi, [c for _, c in constants],
                 [n for n, _ in constants], defaults)


