"""How `onnxc bench` times a runtime: rounds of back-to-back calls, medians per call.

A fast model is repeated within a round until the round lasts `min_round_seconds`, so the
clock's resolution and the loop's overhead vanish; the median over rounds discards the
rounds another process on this shared machine disturbed. The first call doubles as the
warm-up (page faults, lazy initialisation, waking the thread pool).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence

MIN_ROUND_SECONDS = 0.02
"""Default least duration of one timed round."""

SETTLE_SECONDS = 0.05
"""Pause before each round in interleaved mode: an engine's idle workers spin for a while
after a call (onnxc's pool ~0.2 ms, onnxruntime's longer); on 2 cores they would steal the
next engine's time."""


def calls_per_round(fn: Callable[[], object], min_round_seconds: float = MIN_ROUND_SECONDS
                    ) -> int:
    """How many calls of `fn` make a round of `min_round_seconds`. The first call is the
    warm-up and is not what a call costs (a 38 us decode step's first call takes ~1 ms), so
    the count comes from warm calls, doubled until they last a tenth of a round: counting
    from the first call gave rounds of ~20 calls, timing mostly the cold start after the
    pause that precedes each interleaved round."""
    fn()
    calls, seconds = 1, 0.0
    while True:
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        seconds = time.perf_counter() - start
        if seconds >= min_round_seconds / 10 or calls >= 1 << 20:
            break
        calls *= 2
    return max(1, math.ceil(min_round_seconds * calls / max(seconds, 1e-9)))


def timed_round(fn: Callable[[], object], calls: int) -> float:
    """Seconds per call over `calls` back-to-back calls."""
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls


def round_samples(fn: Callable[[], object], repeat: int,
                  min_round_seconds: float = MIN_ROUND_SECONDS) -> list[float]:
    """Seconds per call of `repeat` rounds of `fn`, after a warm-up call: one runtime alone
    in its process."""
    calls = calls_per_round(fn, min_round_seconds)
    return [timed_round(fn, calls) for _ in range(repeat)]


def interleaved_samples(fns: Sequence[Callable[[], object]], repeat: int,
                        min_round_seconds: float = MIN_ROUND_SECONDS) -> list[list[float]]:
    """Seconds per call of each fn, in rounds alternating which goes first, after a warm-up:
    fair between engines in one process only while they use one thread each."""
    calls = [calls_per_round(fn, min_round_seconds) for fn in fns]  # doubles as the warm-up
    samples: list[list[float]] = [[] for _ in fns]
    for r in range(repeat):
        order = range(len(fns)) if r % 2 == 0 else reversed(range(len(fns)))
        for i in order:
            time.sleep(SETTLE_SECONDS)  # the other engine's thread pool stops spinning
            fns[i]()  # wakes this engine's workers, untimed
            samples[i].append(timed_round(fns[i], calls[i]))
    return samples


def interleaved_medians(fns: Sequence[Callable[[], object]], repeat: int,
                        min_round_seconds: float = MIN_ROUND_SECONDS) -> list[float]:
    """Median seconds per call of each fn of `interleaved_samples`."""
    return [statistics.median(s) for s in interleaved_samples(fns, repeat, min_round_seconds)]
