"""What a run of a CompiledModel is given, checked before native code sees it: each input
array (dtype, shape, C-contiguous and aligned, or a copy that is), the caller's `out=`
arrays (writable, of the outputs' shapes, overlapping no input or other output), and the
addresses native code gets for them. Called for every run: kept cheap (see `address_of`,
`check_disjoint`)."""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from onnxc.errors import InvalidInputError

if TYPE_CHECKING:
    from onnxc.runtime.compiled_model import TensorSpec


def address_of(array: np.ndarray) -> int:
    """The address of `array`'s first byte; the ctypes buffer route is 3x faster than
    `.ctypes.data` but needs a writable, non-empty buffer of a builtin dtype (not ml_dtypes'
    bfloat16 / float8 / int4). Asking forgiveness: testing those three first cost a quarter
    of the call (0.17 of 0.65 us, Zen 3), paid for every input and output of every run."""
    try:
        return ctypes.addressof(ctypes.c_char.from_buffer(array))
    except (TypeError, ValueError, BufferError):
        return array.ctypes.data


def check_disjoint(out: Sequence[int], inputs: Sequence[int],
                    arrays: Sequence[np.ndarray]) -> None:
    """InvalidInputError when an output's bytes overlap an input's or another output's
    (inputs may share memory with each other). `out`, `inputs`: the addresses of the
    first len(out) and the other `arrays`. Every array here is C-contiguous (inputs were
    copied if not), so each is one byte interval and one sweep over them sorted by start is
    exact; np.may_share_memory per pair took 30 us of a 35 us decode step (5 outputs, 7
    inputs, Zen 3)."""
    starts = [*out, *inputs]
    ends = [start + a.nbytes for start, a in zip(starts, arrays)]
    reach, out_reach, owner = 0, 0, -1  # furthest end so far; of an output, and which
    for start, end, i in sorted(zip(starts, ends, range(len(starts)))):
        if start == end:  # empty: no bytes to share
            continue
        if i < len(out) and start < reach:
            raise InvalidInputError(f"out[{i}] overlaps an input or another output")
        if start < out_reach:
            raise InvalidInputError(f"out[{owner}] overlaps an input or another output")
        reach = max(reach, end)
        if i < len(out) and end > out_reach:
            out_reach, owner = end, i


def checked_input(spec: TensorSpec, value, batch_rows: int = 0,
             symbolic: bool = False) -> np.ndarray:
    """The array native code may read for `spec`, or InvalidInputError saying why not
    (`batch_rows`: the spec's leading dimension is any multiple of it; `symbolic`: the
    shape is checked by SymbolicSignature.bind instead)."""
    if not isinstance(value, np.ndarray):
        if isinstance(value, np.generic):
            value = np.asarray(value)
        else:
            raise InvalidInputError(
                f"input '{spec.name}' must be a numpy array, got {type(value).__name__}"
            )
    if value.dtype != spec.dtype:
        raise InvalidInputError(
            f"input '{spec.name}' has dtype {value.dtype}, expected {spec.dtype}"
        )
    shape = tuple(value.shape)
    if batch_rows:
        if len(shape) != len(spec.shape) or shape[1:] != spec.shape[1:] \
                or shape[0] % batch_rows:
            raise InvalidInputError(
                f"input '{spec.name}' has shape {list(shape)}, expected "
                f"[{batch_rows} x N, {', '.join(map(str, spec.shape[1:]))}]")
    elif shape != spec.shape and not symbolic:
        raise InvalidInputError(
            f"input '{spec.name}' has shape {list(value.shape)}, expected {list(spec.shape)}"
        )
    if not value.flags.c_contiguous or value.ctypes.data % value.dtype.alignment:
        value = np.ascontiguousarray(value).copy()
    return value


def checked_outputs(out: Sequence[np.ndarray], shapes, inputs: Sequence[np.ndarray],
                     input_addresses: Sequence[int]) -> list[int]:
    """The addresses of the caller's output arrays, if native code may write them
    (else InvalidInputError)."""
    if not isinstance(out, Sequence) or len(out) != len(shapes):
        raise InvalidInputError(
            f"out must be a sequence of {len(shapes)} array(s), one per model output")
    addresses = []
    for i, (array, (shape, dtype)) in enumerate(zip(out, shapes)):
        if not isinstance(array, np.ndarray) or array.dtype != dtype \
                or array.shape != tuple(shape):
            got = (f"{array.dtype}{list(array.shape)}" if isinstance(array, np.ndarray)
                   else type(array).__name__)
            raise InvalidInputError(
                f"out[{i}] must be a {dtype}{list(shape)} array, got {got}")
        flags = array.flags
        address = address_of(array)
        if not flags.c_contiguous or not flags.writeable or address % dtype.alignment:
            raise InvalidInputError(
                f"out[{i}] must be writable, C-contiguous and aligned for {dtype}")
        addresses.append(address)
    check_disjoint(addresses, input_addresses, [*out, *inputs])
    return addresses
