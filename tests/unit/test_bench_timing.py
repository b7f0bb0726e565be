"""How benchmarks count calls per round (onnxc.tools.bench_timing)."""

import time

from onnxc.tools.bench_timing import calls_per_round


def test_a_slow_first_call_does_not_set_the_round():
    """The first call is the warm-up: a 20 ms first call of a 0.1 ms function must not make
    rounds of one call (that timed mostly cold starts)."""
    calls = []

    def fn():
        time.sleep(0.02 if not calls else 0.0001)
        calls.append(1)

    count = calls_per_round(fn, min_round_seconds=0.02)
    assert count >= 20  # ~0.02 s / (0.1 ms + the sleep's overhead); 1 if counted cold


def test_a_call_longer_than_a_round_is_one_call():
    assert calls_per_round(lambda: time.sleep(0.005), min_round_seconds=0.002) == 1
