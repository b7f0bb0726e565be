"""Strings at the compiled entry's boundary (docs/strings.md, "Strings").

Native code sees a string tensor as `{u8* ptr, u64 len}` pairs (dialects/graph_strings.py).
A run turns each string input (a numpy array of str, of UTF-8 bytes, or of objects holding
either) into such pairs over one blob of its UTF-8 bytes, validated here: native code never
meets invalid UTF-8. The pairs a run writes to a string output point into those blobs (or
into memory the run owns); each is checked to lie inside one before its bytes are read, and
the output comes back as a numpy object array of Python str, as onnxruntime gives it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from onnxc.dialects.string_dtype import HIDDEN_PREFIX, STRING_DTYPE
from onnxc.errors import InvalidArgumentError, InvalidInputError, OnnxcError

_TEXT_KINDS = "OUS"

def is_hidden(name: str) -> bool:
    return name.startswith(HIDDEN_PREFIX)


class StringBlob:
    """The UTF-8 bytes of one string input, which its pairs point into while a run lasts."""

    def __init__(self, data: bytes):
        self.buffer = np.frombuffer(data, np.uint8) if data else np.zeros(1, np.uint8)
        self.start = self.buffer.ctypes.data
        self.end = self.start + len(data)


def _utf8(name: str, index: int, item) -> bytes:
    """One element's UTF-8 bytes, or InvalidInputError naming the input and the element."""
    if isinstance(item, str):
        try:
            return item.encode("utf-8")
        except UnicodeEncodeError as err:  # a lone surrogate
            raise InvalidInputError(
                f"input '{name}' element {index} is not valid Unicode text: {err.reason}"
            ) from None
    if isinstance(item, bytes | np.bytes_):
        try:
            bytes(item).decode("utf-8")
        except UnicodeDecodeError as err:
            raise InvalidInputError(
                f"input '{name}' element {index} is not valid UTF-8 (byte {err.start})"
            ) from None
        return bytes(item)
    raise InvalidInputError(
        f"input '{name}' element {index} is a {type(item).__name__}, expected str or bytes")


def string_pairs(name: str, value) -> tuple[np.ndarray, StringBlob]:
    """The native pairs of string input `name` and the blob they point into (kept alive by
    the caller for the run). `value`: a numpy array of str (`<U`), bytes (`S`) or objects."""
    if isinstance(value, str | bytes):
        value = np.array(value, dtype=object)
    if not isinstance(value, np.ndarray | np.generic) or np.asarray(value).dtype.kind \
            not in _TEXT_KINDS:
        got = (f"dtype {value.dtype}" if isinstance(value, np.ndarray | np.generic)
               else type(value).__name__)
        raise InvalidInputError(
            f"input '{name}' is a string tensor: give a numpy array of str (or object), "
            f"got {got}")
    value = np.asarray(value)
    flat = value.ravel(order="C")
    if value.dtype.kind == "S":  # numpy strips trailing NULs of fixed-width bytes
        parts = [_utf8(name, i, bytes(item)) for i, item in enumerate(flat)]
    else:
        items = flat.tolist()
        parts = None
        if all(type(item) is str for item in items):  # the common case, at C speed
            try:
                parts = list(map(str.encode, items))
            except UnicodeEncodeError:
                parts = None  # a lone surrogate: the loop below names the element
        if parts is None:
            parts = [_utf8(name, i, item) for i, item in enumerate(items)]
    blob = StringBlob(b"".join(parts))
    lengths = np.fromiter(map(len, parts), np.uint64, len(parts))
    pairs = np.empty(value.shape, STRING_DTYPE)
    flat_pairs = pairs.reshape(-1)
    flat_pairs["len"] = lengths
    if len(parts):
        offsets = np.cumsum(lengths) - lengths
        flat_pairs["ptr"] = np.uint64(blob.start) + offsets
    return pairs, blob


def strings_of(name: str, pairs: np.ndarray, regions: Sequence[np.ndarray]) -> np.ndarray:
    """Output `name`'s pairs as a numpy object array of str. Every non-empty pair must lie
    inside one of `regions` (the C-contiguous arrays the run may point into: input blobs,
    constants, hidden byte outputs), and its bytes are read from that array, never from a
    raw address; bytes outside them or not UTF-8 mean the compiled code is wrong, and
    OnnxcError says so."""
    flat = pairs.reshape(-1)
    ptr = flat["ptr"].astype(np.uint64)
    length = flat["len"].astype(np.uint64)
    result = np.empty(pairs.shape, dtype=object)
    out = result.reshape(-1)
    out[:] = ""
    used = np.flatnonzero(length)
    if not used.size:
        return result
    arrays = sorted((a for a in regions if a.nbytes), key=lambda a: a.ctypes.data)
    starts = np.array([a.ctypes.data for a in arrays], np.uint64)
    ends = starts + np.array([a.nbytes for a in arrays], np.uint64)
    p, n = ptr[used], length[used]
    which = np.searchsorted(starts, p, side="right") - 1
    inside = (which >= 0) & (n <= np.uint64(1) << np.uint64(48))
    which = np.maximum(which, 0)
    inside &= (p + n <= ends[which]) if arrays else False
    if not np.all(inside):
        bad = int(used[np.argmax(~inside)])
        raise OnnxcError(f"output '{name}' element {bad} points outside the memory of the "
                         f"run (a bug of the compiled code)")
    offsets, sizes = (p - starts[which]).tolist(), n.tolist()
    referenced = np.unique(which).tolist()
    # each referenced array's bytes once: an ASCII one decoded whole and sliced as text
    # (a fifth of the time of decoding every slice), any other sliced and decoded
    text = {}
    for w in referenced:
        raw = arrays[w].reshape(-1).view(np.uint8).tobytes()
        text[w] = raw.decode("ascii") if raw.isascii() else raw
    try:
        if len(referenced) == 1 and isinstance(only := text[referenced[0]], str):
            out[used] = [only[o:o + k] for o, k in zip(offsets, sizes)]
        else:
            out[used] = [t[o:o + k] if isinstance(t := text[w], str)
                         else str(t[o:o + k], "utf-8")
                         for w, o, k in zip(which.tolist(), offsets, sizes)]
    except UnicodeDecodeError:
        raise OnnxcError(f"output '{name}' holds bytes that are not UTF-8 (a bug of the "
                         f"compiled code)") from None
    return result


def run_with_strings(model, values: Sequence, wanted: list[int], out) -> list[np.ndarray]:
    """`model`'s run (a CompiledModel) with string inputs or outputs: each string input as
    pairs over its UTF-8 blob, each string output read back as str, checked to point into
    the inputs' blobs, the model's constants or the run's hidden byte outputs."""
    string_in, string_out, hidden = model._string_io
    if out is not None and (string_out or hidden):
        raise InvalidArgumentError("out= cannot be used: the model has string outputs")
    values, blobs = list(values), []
    for i in string_in:
        values[i], blob = string_pairs(model._entry_inputs[i].name, values[i])
        blobs.append(blob)
    results = model._invoke_arrays(values, list(range(len(model._entry_outputs))), out)
    regions = [b.buffer for b in blobs] + list(model._constants)
    regions += [results[i] for i in hidden]
    for i in string_out:
        results[i] = strings_of(model._entry_outputs[i].name, results[i], regions)
    return [results[i] for i in wanted]


__all__ = ["HIDDEN_PREFIX", "StringBlob", "is_hidden", "run_with_strings", "string_pairs",
           "strings_of"]
