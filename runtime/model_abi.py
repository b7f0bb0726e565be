"""`ModelABI`: what a compiled model's native entry takes and gives, as one record.

The lowering returns it (with the code and the weights beside it); a `CompiledModel` is
built from it; a compile-cache entry and an ahead-of-time artifact's manifest both store it
as `to_json()` and read it back with `from_json`, which checks every value before anything
is built from it (a stored record is data: runtime/cache_entry.py authenticates the cache's,
an artifact's manifest is whatever is on disk). One record, one reader: a field added here
is stored and checked by all three.

Fields: the entry's input and output specs (for one sample when the model is batched), the
rows per sample of each (`batch_rows`), the arena and intermediate sizes, the run-time
check sites and the status record's offset, the threads, precision and target it was
compiled for, and the size symbols of a symbolic model. Dtypes are stored by name
(`bfloat16`, `float8_e4m3fn`, `int4`, ...), never as `dtype.str`, which is a void `|V2` for
ml_dtypes' types.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from onnxc.dialects.check_failures import STATUS_RECORD_BYTES
from onnxc.dialects.size_text import parse_dim
from onnxc.dialects.symbolic_dims import SymbolicDimError, SymDim
from onnxc.precision import PRECISIONS
from onnxc.runtime.compiled_model import TensorSpec
from onnxc.runtime.dtypes import DTYPES, name_of_dtype
from onnxc.runtime.symbolic_shapes import SymbolicSignature
from onnxc.target import OPTIONAL_FIELDS, TARGET_FIELDS, Target

_MAX_DIM = 1 << 48


class BadEntry(Exception):
    """A stored record (cache entry, artifact manifest) is not one this onnxc wrote or can
    use."""


@dataclass(frozen=True, eq=True)
class ModelABI:
    """The calling convention of one compiled model's native entry."""

    inputs: tuple[TensorSpec, ...]
    """every input of the native entry, in its order, for one sample when batched"""
    outputs: tuple[TensorSpec, ...]
    arena_bytes: int
    intermediate_bytes: int
    check_sites: tuple[Mapping[str, object], ...]
    """one description per run-time check (dialects/check_failures.py reads them)"""
    status_offset: int
    """byte offset of the check status record in the arena (-1: no checks)"""
    num_threads: int
    precision: str
    target: Target
    batch_rows: tuple[tuple[int, ...], tuple[int, ...]] | None = None
    """rows per sample of each input and output (0: not batched); None: not batched"""
    symbolic: SymbolicSignature | None = None
    """the size symbols and dynamic arena slots of a model with symbolic dimensions"""
    profile_sites: tuple[Mapping[str, str], ...] = ()
    """a model compiled with `profile=True`: one description per timed kernel call
    (kernel, op, node, inputs, outputs: lowering/profile_calls.py)"""
    profile_offset: int = -1
    """byte offset in the arena of the profile counters (-1: not profiled)"""

    __hash__ = None  # type: ignore[assignment]  (check sites are dicts)

    def to_json(self) -> dict:
        """The record as JSON values (`from_json` reads it back)."""
        target = self.target
        return {
            "inputs": [spec_row(s) for s in self.inputs],
            "outputs": [spec_row(s) for s in self.outputs],
            "batch_rows": None if self.batch_rows is None else [list(r) for r in self.batch_rows],
            "symbolic": symbolic_row(self.symbolic),
            "arena_bytes": self.arena_bytes,
            "intermediate_bytes": self.intermediate_bytes,
            "num_threads": self.num_threads,
            "precision": self.precision,
            "target": {field: getattr(target, field) for field in TARGET_FIELDS},
            "status_offset": self.status_offset,
            "check_sites": [dict(site) for site in self.check_sites],
            "profile": None if self.profile_offset < 0 else {
                "offset": self.profile_offset,
                "sites": [dict(site) for site in self.profile_sites]},
        }

    @classmethod
    def from_json(cls, row: object) -> ModelABI:
        """The record stored as `row`; BadEntry naming the first value that is wrong."""
        if not isinstance(row, dict):
            raise BadEntry("the model description is not an object")
        symbolic = parse_symbolic(row.get("symbolic"))
        symbols = set(symbolic.symbols) if symbolic is not None else set()
        inputs = tuple(TensorSpec(*parse_spec(r, symbols)) for r in parse_list(row, "inputs"))
        outputs = tuple(TensorSpec(*parse_spec(r, symbols)) for r in parse_list(row, "outputs"))
        batch_rows = parse_batch_rows(row.get("batch_rows"), list(inputs), list(outputs))
        if symbolic is not None and batch_rows is not None:
            raise BadEntry("a model is batched or symbolic, not both")
        arena_bytes = parse_size(row, "arena_bytes")
        status_offset = row.get("status_offset")
        if type(status_offset) is not int or not (
                status_offset == -1 or 0 <= status_offset <= arena_bytes - STATUS_RECORD_BYTES):
            raise BadEntry("status record outside the arena")
        num_threads = parse_size(row, "num_threads")
        precision = row.get("precision")
        if num_threads < 1 or precision not in PRECISIONS:
            raise BadEntry("bad threads or precision")
        target = {**OPTIONAL_FIELDS, **parse_object(row, "target")}
        if not all(isinstance(target.get(f), str) for f in TARGET_FIELDS):
            raise BadEntry("bad target description")
        sites, offset = parse_profile(row.get("profile"), arena_bytes)
        return cls(inputs, outputs, arena_bytes, parse_size(row, "intermediate_bytes"),
                   tuple(parse_check_sites(row.get("check_sites"))), status_offset,
                   num_threads, precision, Target(*(target[f] for f in TARGET_FIELDS)),
                   None if batch_rows is None else (tuple(batch_rows[0]), tuple(batch_rows[1])),
                   symbolic, sites, offset)


def spec_row(spec: TensorSpec) -> list:
    dtype = np.dtype(spec.dtype)
    name = name_of_dtype(dtype)
    if name is None:
        raise BadEntry(f"dtype {dtype} has no cache encoding")
    return [spec.name, [d if isinstance(d, str) else int(d) for d in spec.shape], name]


def parse_size(row, name: str) -> int:
    value = row.get(name) if isinstance(row, dict) else None
    if type(value) is not int or not 0 <= value < 1 << 62:
        raise BadEntry(f"'{name}' is not a size")
    return value


def parse_list(row: dict, name: str) -> list:
    value = row.get(name)
    if not isinstance(value, list):
        raise BadEntry(f"'{name}' is not a list")
    return value


def parse_object(row: dict, name: str) -> dict:
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


PROFILE_SITE_KEYS = ("kernel", "op", "node", "inputs", "outputs")


def parse_profile(row, arena_bytes: int) -> tuple[tuple[dict, ...], int]:
    """(sites, offset) of a stored profile record; ((), -1) for None. Its counters, two
    i64 per site and the entry's, must lie in the arena."""
    if row is None:
        return (), -1
    sites = row.get("sites") if isinstance(row, dict) else None
    offset = row.get("offset") if isinstance(row, dict) else None
    if not isinstance(sites, list) or type(offset) is not int or offset < 0 \
            or offset % 8 or offset + 16 * (len(sites) + 1) > arena_bytes:
        raise BadEntry("bad profile record")
    for site in sites:
        if not isinstance(site, dict) or sorted(site) != sorted(PROFILE_SITE_KEYS) \
                or not all(isinstance(v, str) for v in site.values()):
            raise BadEntry("bad profile site")
    return tuple(sites), offset


__all__ = ["BadEntry", "ModelABI", "parse_list", "parse_object", "parse_size", "parse_spec",
           "spec_row"]
