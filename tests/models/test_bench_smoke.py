"""benchmarks/bench.py end to end on one small model: it times both engines and checks them."""

from __future__ import annotations

import importlib.util
import math
import os
import sys

import pytest

BENCH = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks", "bench.py")


def _load_bench():
    spec = importlib.util.spec_from_file_location("onnxc_bench", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.models
def test_bench_matmul_512(capsys):
    bench = _load_bench()
    (row,) = bench.main(["--models", "matmul_512", "--repeat", "1"])
    assert row.flops == 2 * 512**3
    assert row.matches, f"onnxc differs from onnxruntime by {row.max_diff}"
    assert row.onnxc_s > 0 and row.ort_s > 0 and math.isfinite(row.ratio)
    out = capsys.readouterr().out
    assert "num_threads=T" in out and "geometric mean" in out and "matmul_512" in out
    # the %pk columns' peak is timed, not assumed: one core's FMA loop, between 4 flops per
    # cycle at 1 GHz and 64 at 6 GHz
    peak = float(out.split("peak = ", 1)[1].split(" GFLOP/s", 1)[0])
    assert 4 <= peak <= 64 * 6 and "measured: an FP32 FMA loop" in out
