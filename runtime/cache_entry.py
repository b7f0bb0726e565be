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

The header holds everything a `CompiledModel` is made of besides its code: the entry's
input and output specs for one sample, the batch binding (rows per sample), arena and
intermediate sizes, thread count, run-time check sites and the status record's offset, and
the layout of the constants and of the overridable inputs' defaults. Dtypes are stored by
name (`bfloat16`, `float8_e4m3fn`, `int4`, ...), never as `dtype.str`, which is a void
`|V2` for ml_dtypes' types.
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

from onnxc.dialects.check_failures import STATUS_RECORD_BYTES
from onnxc.dialects.size_text import parse_dim
from onnxc.dialects.symbolic_dims import SymbolicDimError, SymDim
from onnxc.precision import PRECISIONS
from onnxc.runtime.compiled_model import CompiledModel, TensorSpec
from onnxc.runtime.dtypes import DTYPES
from onnxc.runtime.symbolic_shapes import SymbolicSignature

FORMAT_VERSION = 2
MAGIC = b"ONNXC-CACHE\x00v2\x00\x00"  # 16 bytes
_LENGTH = struct.Struct("<Q")
_PREFIX = len(MAGIC) + _LENGTH.size
_ALIGN = 64
MAC_BYTES = 32
_DOMAIN = b"onnxc compile cache entry v2\0"
_MAX_DIM = 1 << 48


class BadEntry(Exception):
    """The entry is not one this cache wrote for this key (or not one this onnxc can use)."""





@dataclass
class Entry:
    """The content of an entry: a CompiledModel's state, and the code it runs."""

    entry_symbol: str
    object_code: bytes
    inputs: list[TensorSpec]
    """every input of the native entry, for one sample when the model is batched"""
    outputs: list[TensorSpec]
    batch_rows: tuple[list[int], list[int]] | None
    """rows per sample of each input and output (0: not batched), None: not batched"""
    constants: list[np.ndarray]
    constant_names: list[str]
    input_defaults: dict[str, np.ndarray]
    arena_bytes: int
    intermediate_bytes: int
    num_threads: int
    status_offset: int
    check_sites: list[dict]
    precision: str = "fp32"
    target: str = "host"
    symbolic: SymbolicSignature | None = None
    """the size symbols and dynamic arena slots of a model with symbolic dimensions"""

    @classmethod
    def of(cls, compiled: CompiledModel, object_code: bytes, constant_names: Sequence[str],
           entry_symbol: str) -> Entry:
        """What a freshly compiled model is made of (its specs unbound from the batch)."""
        batch = compiled._batch_rows
        inputs, outputs = list(compiled._entry_inputs), list(compiled.outputs)
        if batch is not None:
            inputs, outputs = list(compiled._sample_inputs), list(compiled._sample_outputs)
            batch = (list(batch[0]), list(batch[1]))
        return cls(entry_symbol, bytes(object_code), inputs, outputs, batch,
                   list(compiled._constants), list(constant_names),
                   dict(compiled.input_defaults), compiled.arena_bytes,
                   compiled.intermediate_bytes, compiled.num_threads, compiled.status_offset,
                   [dict(site) for site in compiled.check_sites], compiled.precision,
                   compiled.target, compiled.symbolic)

    def compiled_model(self) -> CompiledModel:
        """Load the code and build the model (call only on an entry `read` accepted)."""
        from onnxc.runtime.jit import NativeModule

        native = NativeModule.from_object(self.object_code)
        compiled = CompiledModel(
            native, native.function_address(self.entry_symbol), self.inputs, self.outputs,
            self.constants, self.arena_bytes, self.intermediate_bytes, self.check_sites,
            self.status_offset, self.input_defaults, self.symbolic,
            num_threads=self.num_threads, precision=self.precision, target=self.target)
        if self.batch_rows is not None:
            compiled.bind_batch_rows(*self.batch_rows)
        return compiled


def aligned(offset: int) -> int:
    return -(-offset // _ALIGN) * _ALIGN


def _mac(secret: bytes, key: str):
    mac = hmac.new(secret, digestmod=hashlib.sha256)
    mac.update(_DOMAIN + key.encode("ascii") + b"\0")
    return mac


def spec_row(spec: TensorSpec) -> list:
    dtype = np.dtype(spec.dtype)
    if DTYPES.get(dtype.name) != dtype:
        raise BadEntry(f"dtype {dtype} has no cache encoding")
    return [spec.name, [d if isinstance(d, str) else int(d) for d in spec.shape], dtype.name]


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
        "inputs": [spec_row(s) for s in entry.inputs],
        "outputs": [spec_row(s) for s in entry.outputs],
        "batch_rows": None if entry.batch_rows is None else [list(r) for r in entry.batch_rows],
        "arena_bytes": entry.arena_bytes,
        "intermediate_bytes": entry.intermediate_bytes,
        "num_threads": entry.num_threads,
        "precision": entry.precision,
        "target": entry.target,
        "status_offset": entry.status_offset,
        "check_sites": entry.check_sites,
        "symbolic": symbolic_row(entry.symbolic),
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

    start, nbytes = blob(_dict(header, "object"), "object code")
    constants = [array(row, "constant") for row in _list(header, "constants")]
    defaults = dict(array(row, "default") for row in _list(header, "defaults"))
    symbolic = parse_symbolic(header.get("symbolic"))
    symbols = set(symbolic.symbols) if symbolic is not None else set()
    inputs = [TensorSpec(*parse_spec(row, symbols)) for row in _list(header, "inputs")]
    outputs = [TensorSpec(*parse_spec(row, symbols)) for row in _list(header, "outputs")]
    batch_rows = parse_batch_rows(header.get("batch_rows"), inputs, outputs)
    if symbolic is not None and batch_rows is not None:
        raise BadEntry("a model is batched or symbolic, not both")
    by_name = {s.name: s for s in inputs}
    for name, value in defaults.items():
        spec = by_name.get(name)
        if spec is None or spec.shape != value.shape or spec.dtype != value.dtype:
            raise BadEntry(f"default of '{name}' does not match an input")
    arena_bytes = parse_size(header, "arena_bytes")
    status_offset = header.get("status_offset")
    if type(status_offset) is not int or not (
            status_offset == -1 or 0 <= status_offset <= arena_bytes - STATUS_RECORD_BYTES):
        raise BadEntry("status record outside the arena")
    num_threads = parse_size(header, "num_threads")
    symbol = header.get("entry_symbol")
    precision, target = header.get("precision"), header.get("target")
    if not nbytes or num_threads < 1 or not isinstance(symbol, str) \
            or precision not in PRECISIONS or not isinstance(target, str):
        raise BadEntry("bad code description")
    return Entry(
        symbol, bytes(buffer[start:start + nbytes]), inputs, outputs, batch_rows,
        [c for _, c in constants], [n for n, _ in constants], defaults, arena_bytes,
        parse_size(header, "intermediate_bytes"), num_threads, status_offset,
        parse_check_sites(header.get("check_sites")), precision, target, symbolic)


def parse_size(row, name: str) -> int:
    value = row.get(name) if isinstance(row, dict) else None
    if type(value) is not int or not 0 <= value < 1 << 62:
        raise BadEntry(f"'{name}' is not a size")
    return value


def _list(row: dict, name: str) -> list:
    value = row.get(name)
    if not isinstance(value, list):
        raise BadEntry(f"'{name}' is not a list")
    return value


def _dict(row: dict, name: str) -> dict:
    value = row.get(name)
    if not isinstance(value, dict):
        raise BadEntry(f"'{name}' is not an object")
    return value


def parse_spec(row, symbols: set[str] = frozenset()) -> tuple[str, tuple[int | str, ...], np.dtype]:
    """(name, shape, dtype) of a stored [name, shape, dtype name] row; a dimension may be a
    polynomial in `symbols` (the input and output specs of a symbolic model)."""
    if not isinstance(row, list) or len(row) != 3:
        raise BadEntry("bad tensor description")
    name, shape, dtype = row
    if not isinstance(name, str) or not isinstance(shape, list) or not isinstance(dtype, str) \
            or dtype not in DTYPES:
        raise BadEntry("bad tensor description")
    for d in shape:
        if isinstance(d, str) and symbols:
            if not _symbolic_dim_in(d, symbols):
                raise BadEntry(f"bad symbolic dimension of '{name}'")
        elif type(d) is not int or not 0 <= d < _MAX_DIM:
            raise BadEntry(f"bad shape of '{name}'")
    return name, tuple(shape), DTYPES[dtype]


def _symbolic_dim_in(text: str, symbols: set[str]) -> bool:
    try:
        dim = parse_dim(text)
    except SymbolicDimError:
        return False
    return isinstance(dim, SymDim) and dim.symbols() <= symbols


def symbolic_row(signature: SymbolicSignature | None) -> dict | None:
    """A symbolic signature as stored (parse_symbolic reads it back)."""
    if signature is None:
        return None
    return {"symbols": list(signature.symbols), "slots": list(signature.dynamic_slots),
            "run_symbols": list(signature.run_symbols),
            "run_bounds": list(signature.run_bounds),
            "separable_batch": signature.separable_batch}


def parse_symbolic(row) -> SymbolicSignature | None:
    if row is None:
        return None
    if not isinstance(row, dict):
        raise BadEntry("bad symbolic signature")
    symbols, slots, run = row.get("symbols"), row.get("slots"), row.get("run_symbols", [])
    bounds = row.get("run_bounds", [""] * len(run) if isinstance(run, list) else None)
    batch = row.get("separable_batch")
    if not isinstance(symbols, list) or not symbols or not isinstance(slots, list) \
            or not isinstance(run, list) or not isinstance(bounds, list) \
            or len(bounds) != len(run) \
            or not all(isinstance(s, str) for s in [*symbols, *slots, *run, *bounds]) \
            or (batch is not None and batch not in symbols):
        raise BadEntry("bad symbolic signature")
    try:
        if not all(parse_dim(s) == SymDim.symbol(s) for s in symbols):
            raise BadEntry("bad size symbol")
        return SymbolicSignature(tuple(symbols), tuple(slots), tuple(run), batch,
                                 tuple(bounds))
    except SymbolicDimError as err:
        raise BadEntry(f"bad symbolic signature: {err}") from None


def parse_batch_rows(rows, inputs: list[TensorSpec], outputs: list[TensorSpec]):
    if rows is None:
        return None
    if not isinstance(rows, list) or len(rows) != 2 or not all(
            isinstance(r, list) and len(r) == len(s) for r, s in zip(rows, (inputs, outputs))):
        raise BadEntry("bad batch rows")
    for r, specs in zip(rows, (inputs, outputs)):
        for k, spec in zip(r, specs):
            if type(k) is not int or k < 0 or (k and (not spec.shape or spec.shape[0] != k)):
                raise BadEntry(f"bad batch rows of '{spec.name}'")
    return rows[0], rows[1]


def parse_check_sites(sites) -> list[dict]:
    if not isinstance(sites, list) or not all(isinstance(s, dict) for s in sites):
        raise BadEntry("bad check sites")
    for site in sites:
        for value in site.values():
            if isinstance(value, list):
                if not all(isinstance(r, list) and len(r) == 2
                           and all(type(v) is int for v in r) for r in value):
                    raise BadEntry("bad check site ranges")
            elif not isinstance(value, str):
                raise BadEntry("bad check site")
    return sites
