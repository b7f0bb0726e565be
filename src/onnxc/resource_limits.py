"""The largest single allocation a model may ask for, checked at compile time.

A tensor's size is a product of dimensions that a model chooses freely: ConstantOfShape,
Tile, Pad, OneHot, Expand or Resize turn a few bytes of input into 2**40 elements or more.
Left alone, that surfaces late and untyped (numpy's MemoryError at the first run, an int64
overflow while lowering, an arena nobody can map). So every place where a tensor becomes
memory checks its byte size first, computed with Python integers (never int64): each node
result and graph input at import (frontend/onnx_context.py, onnx_importer.py), constants
computed at import, the arena of intermediates (lowering/plan_memory.py) and the outputs
and arena of a CompiledModel. Past the bound, ResourceLimitError names the node or value
and the size.

The bound is $ONNXC_MAX_ALLOC_MB when set, else the memory available now: the kernel's
MemAvailable, lowered by a cgroup v2 memory limit, else os.sysconf's available pages. It is
re-read at most once a second (an import checks every node).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from onnxc.errors import InvalidArgumentError, ResourceLimitError

ENV_VAR = "ONNXC_MAX_ALLOC_MB"
NO_BOUND = 2**63 - 1
"""Sizes and offsets are int64 in compiled code: nothing larger is ever addressable."""

_cached: tuple[float, int] | None = None


def _meminfo_available(path: str = "/proc/meminfo") -> int | None:
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _cgroup_available(root: str = "/sys/fs/cgroup") -> int | None:
    """What a cgroup v2 memory limit leaves (memory.max - memory.current), if one is set."""
    try:
        limit = Path(root, "memory.max").read_text().strip()
        if limit == "max":
            return None
        return max(0, int(limit) - int(Path(root, "memory.current").read_text().strip()))
    except (OSError, ValueError):
        return None


def _sysconf_available() -> int | None:
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def available_memory() -> int | None:
    """Bytes this process could still allocate, or None when the system does not say."""
    found = [n for n in (_meminfo_available(), _cgroup_available()) if n is not None]
    if not found and (pages := _sysconf_available()) is not None:
        found.append(pages)
    return min(found) if found else None


def _env_bound() -> int | None:
    text = os.environ.get(ENV_VAR, "").strip()
    if not text:
        return None
    try:
        megabytes = int(text)
    except ValueError:
        megabytes = 0
    if megabytes < 1:
        raise InvalidArgumentError(
            f"{ENV_VAR} must be a positive number of megabytes, got {text!r}")
    return min(megabytes * 2**20, NO_BOUND)


def max_alloc_bytes() -> int:
    """The largest allocation onnxc lets a model make, in bytes."""
    global _cached
    bound = _env_bound()
    if bound is not None:
        return bound
    now = time.monotonic()
    if _cached is None or now - _cached[0] > 1.0:
        available = available_memory()
        _cached = (now, NO_BOUND if available is None else min(available, NO_BOUND))
    return _cached[1]


def format_bytes(n: int) -> str:
    """`n` bytes for people: 4.0 TiB, 512.0 MiB, 12 bytes."""
    for unit, shift in (("EiB", 60), ("PiB", 50), ("TiB", 40), ("GiB", 30), ("MiB", 20),
                        ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.1f} {unit}"
    return f"{n} bytes"


def tensor_bytes(shape: Iterable[int], itemsize: int) -> int:
    """Bytes of a dense tensor, exact (Python integers: 2**32 x 2**32 does not wrap)."""
    return math.prod(int(d) for d in shape) * itemsize


def element_bytes(element_type: object) -> int:
    """Bytes per element of an xDSL element type (i1 is a byte, as numpy's bool)."""
    width = getattr(element_type, "bitwidth", 64)
    return max(1, (int(width) + 7) // 8)


def check_allocation(nbytes: int, what: str) -> None:
    """ResourceLimitError when `what` (e.g. "node 'n' (Tile): a tensor<...>") would need
    more than `max_alloc_bytes()`."""
    bound = max_alloc_bytes()
    if nbytes <= bound:
        return
    source = (f"${ENV_VAR}" if _env_bound() is not None
              else f"the memory available; set ${ENV_VAR} to change it")
    raise ResourceLimitError(
        f"{what} needs {format_bytes(nbytes)} ({nbytes} bytes), more than the "
        f"{format_bytes(bound)} onnxc may allocate ({source})")


def check_tensor(shape: Iterable[int], itemsize: int, what: str | Callable[[], str]) -> None:
    """`check_allocation` of a dense tensor; `what` (or what it returns: called only when
    the tensor is too large, since describing it costs more than checking it) is followed by
    its shape."""
    dims = [int(d) for d in shape]
    nbytes = tensor_bytes(dims, itemsize)
    if nbytes > max_alloc_bytes():
        check_allocation(nbytes, f"{what() if callable(what) else what} of shape {dims}")
