"""How benchmarks count calls per round (onnxc.tools.bench_timing)."""

import time
from types import SimpleNamespace

from onnxc.tools.bench_timing import calls_per_round


def test_a_slow_first_call_does_not_set_the_round(monkeypatch):
    """The first call is the warm-up: a 20 ms first call of a 0.1 ms function must not make
    rounds of one call (that timed mostly cold starts). On a clock the calls advance: a
    real 0.1 ms sleep took 3 ms on a loaded 2-core CI machine, and the count then fell
    below the bound for that reason alone."""
    from onnxc.tools import bench_timing

    now, calls = [0.0], []

    def fn():
        now[0] += 0.02 if not calls else 0.0001
        calls.append(1)

    monkeypatch.setattr(bench_timing, "time", SimpleNamespace(perf_counter=lambda: now[0]))
    count = calls_per_round(fn, min_round_seconds=0.02)
    assert 200 <= count <= 201  # ceil(0.02 s / 0.1 ms) in floats; 1 counting the cold call


def test_a_call_longer_than_a_round_is_one_call():
    assert calls_per_round(lambda: time.sleep(0.005), min_round_seconds=0.002) == 1
