"""The memory native code reads with vector loads: arenas and constants at 64-byte bounds.

A 64-byte vector load from an address that is not a multiple of 64 touches two cache
lines. The kernels load packed weights by whole vectors, so a weight array at any other
offset splits every load. A cold compile's constants are numpy views of the IR's bytes (at
whatever offset the attribute's buffer has: three in four of QDQ ResNet-50's were not at a
64-byte bound); a cache hit's are mapped at 64-byte offsets (runtime/cache_entry.py).
"""

from __future__ import annotations

import numpy as np

ALIGNMENT = 64


def aligned_empty(nbytes: int, alignment: int = ALIGNMENT) -> np.ndarray:
    """A zeroed uint8 buffer whose first byte is `alignment`-aligned."""
    raw = np.zeros(nbytes + alignment, dtype=np.uint8)
    start = (-raw.ctypes.data) % alignment
    return raw[start : start + nbytes]


def aligned_constant(array: np.ndarray) -> np.ndarray:
    """`array` C-contiguous from a 64-byte bound: itself when it already is, else a copy."""
    array = np.ascontiguousarray(array)
    if array.ctypes.data % ALIGNMENT == 0:
        return array
    copy = aligned_empty(array.nbytes).view(array.dtype).reshape(array.shape)
    copy[...] = array
    return copy
