"""The packed GEMM's blocking, measured once per CPU: `onnxc.compile(gemm_blocking=...)`.

The k-block depth (kc) and N-stripe width (nc) of gemm_microkernel.py decide what stays in
which cache and how often a tile of Y is loaded and stored (once per k-block): an MR x kc
sliver of A in L1, the kc x NR panels of B streamed from L2. The defaults (gemm_tiles.KC x
NC = 1024 x 512) were measured on a Zen 4 with 1 MiB of L2 per core; a Zen 3 has 512 KiB,
an Intel Xeon 2 MiB. With `"auto"` (the
default) the first compile on a CPU times a few blockings on two GEMMs of the shapes the
nets run (ViT-B's MLP, BERT's second MLP product) and keeps the fastest, unless the
default is within MARGIN of it (a shared machine's noise must not move the choice). The
result is a small JSON record in the compile cache's directory (`tuning/<cpu>.json`, or
$ONNXC_TUNING_DIR: the CPU, every candidate's time, the choice), read by every later compile on this CPU without
measuring again: the same record always gives the same code, and the record is a file to
read, copy to another machine of the kind, or delete to measure again.

The blocking is part of the target (`Target.blocking`), so of the compile cache's key and
of an artifact's manifest. `"off"` uses the defaults, `"KCxNC"` a blocking of your own.
A compile for another machine than this one (`target=` a preset, or an artifact) uses the
defaults unless given one: what would be measured here says nothing about it. With the
compile cache off (`ONNXC_CACHE=0`) nothing is measured or written; a record already made
is still used.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from onnxc.lowering.graph_to_loops.gemm_tiles import KC, NC, parse_blocking
from onnxc.target import Target, host_target

DEFAULT = f"{KC}x{NC}"
CANDIDATES = (DEFAULT, "256x512", "512x512", "1024x256", "1024x1024", "2048x256")
"""What the search times: the default, shallower k-blocks (256 was the default before 1024
measured better on Zen 4), half and double its stripe, deeper k-blocks."""
SHAPES = ((196, 768, 1024), (128, 2048, 512))
"""(M, K, N) of the timed MatMuls, B constant: ViT-B/16's MLP rows at a third of its width,
BERT's second MLP product at two thirds of its depth (each a few ms at one thread)."""
MARGIN = 0.03
"""A candidate replaces the default only when it is this much faster: the search's rounds
on a 2-vCPU VM scatter by a few percent (benchmarks/results notes)."""
ROUNDS = 5
RECORD_VERSION = 2

_known: dict[Path, str] = {}
"""Records read in this process: path -> blocking."""


def tuned_target(mode: str, target: Target, runs_here: bool) -> Target:
    """`target` with the blocking `mode` (a `gemm_blocking` value) stands for."""
    if mode == "off":
        return replace(target, blocking="")
    if mode != "auto":
        kc, nc = parse_blocking(mode) or (KC, NC)
        return replace(target, blocking="" if (kc, nc) == (KC, NC) else f"{kc}x{nc}")
    if not runs_here or target != host_target():
        return target
    path = record_path(target)
    blocking = _known.get(path) or _read(path) or _measure_once(path, target)
    if blocking is None:
        return target
    _known[path] = blocking
    return replace(target, blocking="" if blocking == DEFAULT else blocking)


def record_path(target: Target) -> Path:
    """Where this CPU's record lives: `<cpu>.json` in $ONNXC_TUNING_DIR, else in `tuning/`
    of the compile cache's default directory (also with the cache off, to read a record
    made before)."""
    from onnxc.runtime.cache import default_root

    directory = os.environ.get("ONNXC_TUNING_DIR") or default_root() / "tuning"
    return Path(directory) / f"{cpu_name(target)}.json"


def cpu_identity(target: Target) -> dict[str, object]:
    """What the measured blocking depends on: the CPU as LLVM names it, its features, and
    the per-core cache sizes the kernel reports."""
    return {"triple": target.triple, "cpu": target.cpu, "features": target.features,
            "caches": dict(_cache_sizes())}


def cpu_name(target: Target) -> str:
    digest = hashlib.sha256(json.dumps(cpu_identity(target), sort_keys=True).encode())
    return f"{target.cpu}-{digest.hexdigest()[:16]}"


@functools.cache
def _cache_sizes() -> dict[str, str]:
    """cpu0's caches from sysfs (`L1d`, `L2`, `L3`: "32K", ...); empty where there is none.
    Read once per process: every compile names the record by them."""
    sizes = {}
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        with contextlib.suppress(OSError):
            kind = (index / "type").read_text().strip()
            level = (index / "level").read_text().strip()
            if kind in ("Data", "Unified"):
                sizes[f"L{level}" + ("d" if kind == "Data" else "")] = (
                    (index / "size").read_text().strip())
    return sizes


def _read(path: Path) -> str | None:
    """The record's blocking; None when there is none, or it is unreadable, another
    user's, or not a record of this version (then it is measured again)."""
    try:
        if path.stat().st_uid != os.getuid():
            return None
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("version") != RECORD_VERSION:
        return None
    blocking = record.get("blocking")
    return blocking if isinstance(blocking, str) and parse_blocking(blocking) else None


def _measure_once(path: Path, target: Target) -> str | None:
    """Measure and record, one process at a time: another one measuring the same CPU
    holds the lock, and this one then reads its record. None when the directory cannot be
    made ours."""
    from onnxc.runtime.cache import cache_root

    if cache_root(None) is None:  # the cache is off: measure nothing, write nothing
        return None
    try:
        path.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
        if path.parent.stat().st_uid != os.getuid():
            return None
        lock = os.open(path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = _read(path)
        if done is not None:
            return done
        record = search(target)
        save(path, record)
        return record["blocking"]
    finally:
        os.close(lock)


def save(path: Path, record: dict[str, object]) -> None:
    """Write `record` (a `search` result) at `path`, whole or not at all."""
    path.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False,
                                     suffix=".tmp") as out:
        json.dump(record, out, indent=1, sort_keys=True)
    os.replace(out.name, path)


def search(target: Target, measure=None) -> dict[str, object]:
    """Time CANDIDATES on SHAPES (one thread, interleaved, the best of ROUNDS per
    candidate and shape) and choose: the record `tuned_target` writes. `measure(blocking)
    -> seconds` replaces the timing (tests)."""
    seconds = {c: 0.0 for c in CANDIDATES}
    if measure is None:
        runners = {c: _runners(c) for c in CANDIDATES}
        for shape in range(len(SHAPES)):
            best = {c: float("inf") for c in CANDIDATES}
            for _ in range(ROUNDS):
                for c in CANDIDATES:
                    best[c] = min(best[c], _time(runners[c][shape]))
            for c in CANDIDATES:
                seconds[c] += best[c]
    else:
        seconds = {c: float(measure(c)) for c in CANDIDATES}
    fastest = min(CANDIDATES, key=lambda c: seconds[c])
    chosen = fastest if seconds[fastest] < seconds[DEFAULT] * (1 - MARGIN) else DEFAULT
    return {"version": RECORD_VERSION, "cpu": cpu_identity(target), "blocking": chosen,
            "seconds": seconds, "shapes": [list(s) for s in SHAPES], "margin": MARGIN,
            "measured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def _matmul(m: int, k: int, n: int):
    """x[m, k] @ B[k, n], B a seeded constant (the weights' case); the model and its feeds."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    b = numpy_helper.from_array(rng.standard_normal((k, n)).astype(np.float32), "b")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "b"], ["y"])], "gemm_tuning",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])], [b])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model, {"x": rng.standard_normal((m, k)).astype(np.float32)}


def _runners(blocking: str) -> list:
    """Each shape's MatMul compiled with `blocking`, as a function that runs it once."""
    import onnxc

    runs = []
    for m, k, n in SHAPES:
        model, feeds = _matmul(m, k, n)
        compiled = onnxc.compile(model, gemm_blocking=blocking, num_threads=1,
                                 cache_dir=False, quiet=True)
        runs.append(lambda c=compiled, f=feeds: c.run(None, f))
    return runs


def _time(run) -> float:
    """Seconds per run, over at least 30 ms of runs after one warm-up."""
    run()
    count, start = 0, time.perf_counter()
    while True:
        run()
        count += 1
        elapsed = time.perf_counter() - start
        if elapsed > 0.03:
            return elapsed / count


__all__ = ["CANDIDATES", "DEFAULT", "MARGIN", "cpu_identity", "record_path", "save", "search",
           "tuned_target"]
