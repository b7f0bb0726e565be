"""How many threads compiled kernels use, and loading the OpenMP runtime that runs them.

Parallel loops run through libgomp's `GOMP_parallel` (see lowering/to_llvm/gomp.py): the
OpenMP runtime GCC uses, kept by the GCC project, present on every glibc Linux that has a C
compiler's runtime (package libgomp1, which Debian/Ubuntu base images and CI runners carry),
with a thread pool that persists across calls, so a parallel region costs ~0.4 us when the
workers are awake. No PyPI package ships it for our use, so it is found on the system (the
dynamic linker's path, then copies that wheels such as scikit-learn or torch bundle); where
there is none, models compile for one thread and say so in `CompiledModel.num_threads`.

Thread count: `onnxc.compile(..., num_threads=N)`, else $ONNXC_NUM_THREADS, else the CPUs
this process may really use: its affinity mask, bounded by the cgroup CPU quota (cgroup v2
`cpu.max`, v1 `cpu.cfs_quota_us / cpu.cfs_period_us`, rounded up) - a container limited to
2 CPUs on a 64-core host gets 2, not 64. OMP_NUM_THREADS is not consulted: the count is
compiled into each parallel loop (and into the cache key).

Idle workers: we keep libgomp's default wait policy (OMP_WAIT_POLICY unset): after a region
its workers spin GOMP_SPINCOUNT = 300k iterations (~10 ms measured here) before sleeping.
Regions back to back, and inference calls in a loop, so find them awake (~0.4 us per region);
only after >= 10 ms idle does a region pay the ~50 us wake-up, under 0.5% of that gap.
Spinning longer (OMP_WAIT_POLICY=active, or a large GOMP_SPINCOUNT) would burn a core for as
long after each call (10M spins = 0.25 s of CPU measured), and when other processes keep the
cores busy a spinning barrier waits out whole scheduler slices (8-16 ms per region measured
with two busy neighbours, against 30-100 us with OMP_WAIT_POLICY=passive): users on busy
machines should set passive, users wanting the lowest latency active, before first use.
On such machines the kernel may also wake a worker on the caller's own core, where the two
take turns per scheduler tick; OMP_PROC_BIND=true prevents that by pinning each thread to
a core (not our default: it pins the caller, here Python's main thread, for good).

fork(): libgomp's workers do not survive it, so in a child forked after libgomp was loaded,
compiled models run their parallel loops serially (multiprocessing's "spawn" or
"forkserver" start methods give children their own threads).
"""

from __future__ import annotations

import ctypes.util
import functools
import glob
import math
import os
import sys
from pathlib import Path


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _quota_v2(directory: Path) -> float | None:
    text = _read(directory / "cpu.max")
    if text is None:
        return None
    quota, _, period = text.partition(" ")
    if quota == "max" or not period:
        return None
    try:
        return int(quota) / int(period)
    except (ValueError, ZeroDivisionError):
        return None


def _quota_v1(directory: Path) -> float | None:
    quota, period = _read(directory / "cpu.cfs_quota_us"), _read(directory / "cpu.cfs_period_us")
    try:
        q, p = int(quota or ""), int(period or "")
    except ValueError:
        return None
    return q / p if q > 0 and p > 0 else None


def _cgroup_dirs(root: Path, proc_cgroup: Path) -> list[tuple[Path, bool]]:
    """(directory, is_v2) candidates holding this process's CPU limits, innermost first:
    its own cgroup and each ancestor (a limit anywhere up the tree applies), and the mount
    root itself (inside a container the namespace root is the container's cgroup)."""
    found: list[tuple[Path, bool]] = []
    for line in (_read(proc_cgroup) or "").splitlines():
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hierarchy == "0" and controllers == "":
            bases = [(root, True)]
        elif "cpu" in controllers.split(","):
            bases = [(root / d, False) for d in ("cpu", "cpu,cpuacct", "cpuacct,cpu")]
        else:
            continue
        for base, is_v2 in bases:
            relative = Path(path.lstrip("/"))
            for parent in [relative, *relative.parents]:
                found.append((base / parent, is_v2))
    if not found:
        found = [(root, True), *((root / d, False) for d in ("cpu", "cpu,cpuacct"))]
    return found


def cgroup_cpu_limit(
    root: str | os.PathLike = "/sys/fs/cgroup", proc_cgroup: str | os.PathLike = "/proc/self/cgroup"
) -> float | None:
    """The CPU quota of this process's cgroups in CPUs (1.5 = 150 ms per 100 ms), or None."""
    limits = []
    for directory, is_v2 in _cgroup_dirs(Path(root), Path(proc_cgroup)):
        limit = _quota_v2(directory) if is_v2 else _quota_v1(directory)
        if limit is not None:
            limits.append(limit)
    return min(limits) if limits else None


def available_cpus(
    root: str | os.PathLike = "/sys/fs/cgroup", proc_cgroup: str | os.PathLike = "/proc/self/cgroup"
) -> int:
    """CPUs this process may run on at once: affinity mask bounded by the cgroup quota."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cpus = os.cpu_count() or 1
    limit = cgroup_cpu_limit(root, proc_cgroup)
    if limit is not None:
        cpus = min(cpus, math.ceil(limit))
    return max(1, cpus)


def default_num_threads() -> int:
    """$ONNXC_NUM_THREADS (a positive integer) if set, else `available_cpus()`."""
    text = os.environ.get("ONNXC_NUM_THREADS", "").strip()
    if text:
        try:
            value = int(text)
        except ValueError:
            value = 0
        if value < 1:
            raise ValueError(f"ONNXC_NUM_THREADS must be a positive integer, got {text!r}")
        return value
    return available_cpus()


def resolve_num_threads(requested: int | None) -> int:
    """The thread count to compile for: `requested` (validated) or the default, and 1
    when no OpenMP runtime can be loaded."""
    if requested is None:
        count = default_num_threads()
    elif isinstance(requested, bool) or not isinstance(requested, int) or requested < 1:
        raise ValueError(f"num_threads must be a positive integer, got {requested!r}")
    else:
        count = requested
    if count > 1 and find_libgomp() is None:
        return 1
    return count


@functools.cache
def find_libgomp() -> str | None:
    """A loadable libgomp (now loaded): the system's, else one bundled in an installed wheel."""
    candidates = [ctypes.util.find_library("gomp"), "libgomp.so.1"]
    for site in sys.path:
        candidates += sorted(glob.glob(os.path.join(site, "*.libs", "libgomp*.so*")))
        candidates += sorted(glob.glob(os.path.join(site, "torch", "lib", "libgomp*.so*")))
    for candidate in candidates:
        if not candidate:
            continue
        try:
            ctypes.CDLL(candidate, mode=ctypes.RTLD_GLOBAL)
        except OSError:
            continue
        return candidate
    return None


_serial_after_fork = ctypes.c_int32(0)
"""Read by every parallel launch (symbol `onnxc_serial_after_fork`, lowering/to_llvm/gomp.py):
nonzero in a child forked after libgomp was loaded, whose thread pool did not survive the
fork (a parallel region there would hang). Such a child runs parallel loops serially."""


def _after_fork_in_child() -> None:
    _serial_after_fork.value = 1


@functools.cache
def load_openmp() -> str:
    """Load libgomp for JIT-linked code (symbols GOMP_parallel, omp_get_thread_num, ...)
    and define `onnxc_serial_after_fork`; libgomp's path. RuntimeError when there is none."""
    import llvmlite.binding as llvm

    path = find_libgomp()
    if path is None:
        raise RuntimeError(
            "compiled code needs the OpenMP runtime libgomp (libgomp.so.1), which is not "
            "installed; install it (apt install libgomp1) or compile with num_threads=1"
        )
    llvm.load_library_permanently(path)
    llvm.add_symbol("onnxc_serial_after_fork", ctypes.addressof(_serial_after_fork))
    os.register_at_fork(after_in_child=_after_fork_in_child)
    return path
