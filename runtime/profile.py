"""Per-kernel times of a model compiled with `profile=True`: `CompiledModel.profile()`.

The entry adds the ticks of every kernel call, and counts the calls, in counters at
`ModelABI.profile_offset` of the arena (lowering/profile_calls.py); the entry's own ticks
are the last pair. Each arena (one per concurrent run, compiled_model.py) has its own, so
runs from several threads never write the same counter; a profile sums all of them.

Ticks become seconds at the counter's rate, measured once per process against
`time.perf_counter_ns` over MEASURE_SECONDS (the counters tick at a constant rate: x86's
invariant TSC, AArch64's generic timer). The counter is read with the intrinsic the model
reads, JIT-compiled into a two-instruction function.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from onnxc.errors import InvalidArgumentError

if TYPE_CHECKING:
    from onnxc.runtime.model_abi import ModelABI

MEASURE_SECONDS = 0.02
"""How long the counter's rate is measured for: 1 us of timer error in 20 ms is 5e-5."""


@dataclass(frozen=True)
class ProfileRow:
    """One kernel call site of the entry, with its totals over the profiled runs."""

    site: int
    """its position among the entry's calls"""
    kernel: str
    """the kernel function (`conv_3`): ops with the same key share it"""
    op: str
    """the op it computes (`graph.conv`, `layout.convert`, ...)"""
    node: str
    """the ONNX node it came from ("" for what a lowering added: layout conversions)"""
    inputs: str
    outputs: str
    """their types, `1x64x56x56xf32, ...`"""
    calls: int
    seconds: float
    """its total time over all calls"""
    share: float
    """its fraction of the entry's time"""

    @property
    def mean_seconds(self) -> float:
        return self.seconds / self.calls if self.calls else 0.0


@dataclass(frozen=True)
class KernelProfile:
    """The rows of a profile, in call order, and the entry's own totals."""

    rows: tuple[ProfileRow, ...]
    runs: int
    """native entry calls (a run of a model compiled per sample calls it per sample)"""
    seconds: float
    """the entry's total time: its kernels plus what runs between them"""

    @property
    def kernel_seconds(self) -> float:
        return sum(r.seconds for r in self.rows)

    def by_time(self) -> list[ProfileRow]:
        """The rows, longest total first."""
        return sorted(self.rows, key=lambda r: (-r.seconds, r.site))

    def table(self, top: int = 30, wall_seconds: float | None = None) -> str:
        """The `top` longest sites as a text table, the rest summed on one line, then the
        totals per run against the entry's time and, given, the caller's `wall_seconds`
        for one run."""
        runs = max(self.runs, 1)
        ordered = self.by_time()
        shown = ordered[:top]
        k, o, n = (max([len(title), *(len(getattr(r, title) or "-") for r in shown)]) + 1
                   for title in ("kernel", "op", "node"))
        lines = [f"{'%':>6} {'total ms':>9} {'calls':>6} {'mean us':>9}  "
                 f"{'kernel':<{k}}{'op':<{o}}{'node':<{n}}inputs -> outputs"]
        for r in shown:
            lines.append(f"{100 * r.share:6.2f} {r.seconds * 1e3:9.3f} {r.calls:6d} "
                         f"{r.mean_seconds * 1e6:9.1f}  {r.kernel:<{k}}{r.op:<{o}}"
                         f"{r.node or '-':<{n}}{r.inputs} -> {r.outputs}")
        rest = ordered[top:]
        if rest:
            seconds = sum(r.seconds for r in rest)
            share = sum(r.share for r in rest)
            lines.append(f"{100 * share:6.2f} {seconds * 1e3:9.3f} "
                         f"{sum(r.calls for r in rest):6d} {'':9}  ({len(rest)} more sites)")
        kernels = self.kernel_seconds / runs
        entry = self.seconds / runs
        lines.append(f"per run: kernels {kernels * 1e3:.3f} ms, entry {entry * 1e3:.3f} ms "
                     f"({self.runs} run(s); between kernels {(entry - kernels) * 1e6:.1f} us)")
        if wall_seconds is not None:
            lines.append(f"wall time per run {wall_seconds * 1e3:.3f} ms: kernels "
                         f"{100 * kernels / wall_seconds:.1f}%, outside the entry (Python, "
                         f"checks, allocation) {(wall_seconds - entry) * 1e6:.1f} us")
        return "\n".join(lines)


def counters(abi: ModelABI, arena: np.ndarray) -> np.ndarray:
    """The (sites + 1, 2) int64 view of one arena's counters: (ticks, calls) per site, the
    entry's last."""
    rows = len(abi.profile_sites) + 1
    start = abi.profile_offset
    return arena[start:start + rows * 16].view(np.int64).reshape(rows, 2)


def kernel_profile(abi: ModelABI, arenas: Sequence[np.ndarray]) -> KernelProfile:
    """The profile of every run on `arenas` since they were made or `reset`."""
    _check_profiled(abi)
    total = sum((counters(abi, a).copy() for a in arenas),
                np.zeros((len(abi.profile_sites) + 1, 2), np.int64))
    from onnxc.lowering.profile_calls import counter_intrinsic  # (not for loading: xDSL)

    rate = ticks_per_second(counter_intrinsic(abi.target.arch))
    entry_ticks, runs = int(total[-1, 0]), int(total[-1, 1])
    rows = tuple(
        ProfileRow(i, site["kernel"], site["op"], site["node"], site["inputs"],
                   site["outputs"], int(calls), ticks / rate,
                   ticks / entry_ticks if entry_ticks else 0.0)
        for i, (site, (ticks, calls)) in enumerate(zip(abi.profile_sites, total[:-1])))
    return KernelProfile(rows, runs, entry_ticks / rate)


def reset(abi: ModelABI, arenas: Sequence[np.ndarray]) -> None:
    """Zero the counters of `arenas`."""
    _check_profiled(abi)
    for arena in arenas:
        counters(abi, arena)[:] = 0


def _check_profiled(abi: ModelABI) -> None:
    if abi.profile_offset < 0:
        raise InvalidArgumentError("this model was compiled without profile=True: compile "
                                   "it with onnxc.compile(..., profile=True) to profile it")


@functools.cache
def ticks_per_second(intrinsic: str) -> float:
    """The rate of the counter `intrinsic` reads, measured over MEASURE_SECONDS."""
    read = _reader(intrinsic)
    clock = time.perf_counter_ns
    start_ns, start = clock(), read()
    while clock() - start_ns < MEASURE_SECONDS * 1e9:
        pass
    end_ns, end = clock(), read()
    return (end - start) / ((end_ns - start_ns) * 1e-9)


@functools.cache
def _reader(intrinsic: str):
    """A ctypes function returning the counter's value now."""
    import ctypes

    from onnxc.runtime.jit import NativeModule

    native = NativeModule.from_llvm_ir(
        f"declare i64 @{intrinsic}()\n"
        f"define i64 @onnxc_ticks() {{\n  %t = call i64 @{intrinsic}()\n  ret i64 %t\n}}\n",
        runtimes=False)
    return native.ctypes_function("onnxc_ticks", ctypes.c_int64)


__all__ = ["KernelProfile", "ProfileRow", "kernel_profile", "reset", "ticks_per_second"]
