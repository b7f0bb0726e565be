"""onnxc's own thread pool: a parallel region ends when its chunks are done, not when its
threads have shown up.

Compiled models run a parallel loop by calling `onnxc.parallel_launch` (lowering/to_llvm/launch_ir.py;
lowering/to_llvm/launch.py emits the calls), which splits it into chunks and calls

    void onnxc_pool_run(void (*chunk)(i8* ctx, i64 c), i8* ctx, i64 chunks, i64 threads)

which returns once `chunk(ctx, c)` has run for every c in 0..chunks, on up to `threads`
threads: the caller and `threads - 1` helpers. runtime/pool_ir.py generates both as LLVM IR
(llvmlite), with the pool's protocol; this module JIT-compiles them once per process and
exports the launcher to model code with `llvm.add_symbol`.

Why not libgomp's `GOMP_parallel`: an OpenMP region ends at a barrier every team thread must
reach, even one that found no chunk left. On a machine where other processes keep the cores
busy, a worker the kernel has not scheduled holds every region up, often by a whole
scheduler tick: beside two CPU hogs or a torch job, onnxc on libgomp took 2.1x
onnxruntime's mean time per call, on this pool 0.85x (benchmarks/contention.py; the table
is in docs/robustness.md). Here the caller publishes a job, works through the chunks
itself, and waits only for chunks a helper has actually claimed; a helper that wakes late
finds nothing left.

fork(): helpers do not survive it. In a child forked after the pool was loaded
(os.register_at_fork), `onnxc_serial_after_fork` is set and every region runs serially on
the calling thread (the launcher checks it before calling the pool, and so does the pool).
Start child processes with multiprocessing's "spawn" or "forkserver" to get threads there.
"""

from __future__ import annotations

import ctypes
import functools
import os
import platform
import sys
import threading

from onnxc.lowering.to_llvm.launch_ir import LAUNCH
from onnxc.runtime.pool_ir import (
    DEFAULT_SPIN_NS,
    FORK_FLAG,
    FUTEX_SYSCALLS,
    MAX_HELPERS,
    PARALLEL_RUN,
    pool_ir,
    supported,
)

__all__ = ["DEFAULT_SPIN_NS", "LAUNCH", "MAX_HELPERS", "PARALLEL_RUN", "helper_count", "load",
           "pool_ir", "preload", "set_spin_us", "supported"]

_serial_after_fork = ctypes.c_int32(0)
"""`onnxc_serial_after_fork`: set in a child forked after the pool was loaded."""


def _after_fork_in_child() -> None:
    _serial_after_fork.value = 1


def _spin_ns_from_env() -> int:
    text = os.environ.get("ONNXC_SPIN_US", "").strip()
    if not text:
        return DEFAULT_SPIN_NS
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 10_000_000:
        from onnxc.errors import InvalidArgumentError

        raise InvalidArgumentError(
            f"ONNXC_SPIN_US must be microseconds from 0 to 1e7, got {text!r}")
    return round(value * 1000)


_load_lock = threading.Lock()


def load():
    """JIT-compile the pool (once per process) and export `onnxc.parallel_launch` and
    `onnxc_serial_after_fork` to code compiled after this; the pool's NativeModule.
    RuntimeError on a platform without the pool (`supported()` is False)."""
    with _load_lock:  # `preload`'s thread may be compiling it
        return _load()


def preload() -> None:
    """Start `load` in a thread, if the platform has the pool: a compile calls it first
    thing, so that the pool's LLVM compile (about 0.05 s, once per process) runs on a core
    the compile's imports and graph passes leave idle (LLVM releases the GIL), instead of
    at the link, when the compile waits for it. An error is `load`'s again when the link
    calls it."""
    if supported() and _load.cache_info().currsize == 0:
        threading.Thread(target=_load_quietly, name="onnxc-pool-load", daemon=True).start()


def _load_quietly() -> None:
    try:
        load()
    except Exception:  # noqa: BLE001, S110 - raised again by the link's own load()
        pass


@functools.cache
def _load():
    import llvmlite.binding as llvm

    from onnxc.runtime.jit import NativeModule

    if not supported():
        raise RuntimeError(f"onnxc's thread pool needs Linux on {', '.join(FUTEX_SYSCALLS)}, "
                           f"not {sys.platform} on {platform.machine()}; use num_threads=1")
    spin_ns = _spin_ns_from_env()
    llvm.add_symbol(FORK_FLAG, ctypes.addressof(_serial_after_fork))
    native = NativeModule.from_llvm_ir(pool_ir(), runtimes=False)
    native.ctypes_function("onnxc_pool_set_spin_ns", None, ctypes.c_int64)(spin_ns)
    llvm.add_symbol(LAUNCH, native.function_address(LAUNCH))  # what model code calls
    os.register_at_fork(after_in_child=_after_fork_in_child)
    return native


def helper_count() -> int:
    """Helper threads the pool has started in this process (0 before the first region)."""
    import ctypes as c

    return load().ctypes_function("onnxc_pool_helpers", c.c_int64)()


def set_spin_us(microseconds: float) -> None:
    """How long idle helpers spin before they sleep, from now on (default $ONNXC_SPIN_US,
    else DEFAULT_SPIN_NS)."""
    load().ctypes_function("onnxc_pool_set_spin_ns", None, ctypes.c_int64)(
        round(microseconds * 1000))
