"""Triton's statistics and metrics of a model version (serving/statistics.py).

The arithmetic is checked on hand-made BatchTimings with known durations, against what
Triton's docs/protocol/extension_statistics.md and docs/user_guide/metrics.md define; one
test feeds the recorder from a real DynamicBatcher. Exposition is checked on the text
prometheus_client.generate_latest writes for the registry.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading

import numpy as np
import pytest
from prometheus_client import CollectorRegistry, generate_latest

from onnxc.serving.batch_execution import ExecutionTiming
from onnxc.serving.batcher import BatchTiming, DynamicBatcher
from onnxc.serving.errors import ServingError
from onnxc.serving.statistics import FAILURE_REASONS, ServingStatistics


def _timing() -> BatchTiming:
    """Three requests of 1, 4 and 2 rows; the 4-row one failed. Runs: requests 0 and 1
    concatenated (which then failed: not an execution), so re-run alone: 0 alone, 2 alone."""
    return BatchTiming(
        batch_sizes=(1, 4, 2), queue_ns=(1_000, 2_000, 3_000),
        errors=(None, ServingError.invalid("bad"), None),
        executions=(ExecutionTiming((0,), 10, 100, 1_000),
                    ExecutionTiming((2,), 20, 200, 2_000)))


def test_batch_statistics_arithmetic():
    stats = ServingStatistics()
    record = stats.model("m", "2")
    record.record_batch(_timing())
    record.record_batch(BatchTiming((3, 2), (5_000, 6_000), (None, None),
                                    (ExecutionTiming((0, 1), 30, 300, 3_000),)))
    record.record_success(50_000)
    record.record_failure(7_000, "BACKEND")
    (model,) = stats.to_dict()["model_stats"]
    assert model["name"] == "m" and model["version"] == "2"
    assert model["inference_count"] == 1 + 2 + 3 + 2  # the failed request's 4 rows excluded
    assert model["execution_count"] == 3
    inference = model["inference_stats"]
    assert inference["success"] == {"count": 1, "ns": 50_000}
    assert inference["fail"] == {"count": 1, "ns": 7_000}
    assert inference["queue"] == {"count": 4, "ns": 1_000 + 3_000 + 5_000 + 6_000}
    # each request counts its whole execution's phases (the batch of 5 twice)
    assert inference["compute_input"] == {"count": 4, "ns": 10 + 20 + 30 * 2}
    assert inference["compute_infer"] == {"count": 4, "ns": 100 + 200 + 300 * 2}
    assert inference["compute_output"] == {"count": 4, "ns": 1_000 + 2_000 + 3_000 * 2}
    assert inference["cache_hit"] == inference["cache_miss"] == {"count": 0, "ns": 0}
    assert model["batch_stats"] == [
        {"batch_size": 1, "compute_input": {"count": 1, "ns": 10},
         "compute_infer": {"count": 1, "ns": 100}, "compute_output": {"count": 1, "ns": 1_000}},
        {"batch_size": 2, "compute_input": {"count": 1, "ns": 20},
         "compute_infer": {"count": 1, "ns": 200}, "compute_output": {"count": 1, "ns": 2_000}},
        {"batch_size": 5, "compute_input": {"count": 1, "ns": 30},
         "compute_infer": {"count": 1, "ns": 300}, "compute_output": {"count": 1, "ns": 3_000}},
    ]
    assert model["last_inference"] > 1.7e12  # ms since the epoch, set by the last request


def test_statistics_select_by_name_and_version_in_order():
    stats = ServingStatistics()
    for name, version in (("b", "1"), ("a", "10"), ("a", "2")):
        stats.model(name, version).record_success(1)
    assert [(m["name"], m["version"]) for m in stats.to_dict()["model_stats"]] == [
        ("a", "2"), ("a", "10"), ("b", "1")]
    assert [m["version"] for m in stats.to_dict("a")["model_stats"]] == ["2", "10"]
    assert [m["version"] for m in stats.to_dict("a", "10")["model_stats"]] == ["10"]
    assert stats.to_dict("c") == {"model_stats": []}
    stats.remove("a", "2")
    assert [m["version"] for m in stats.to_dict("a")["model_stats"]] == ["10"]
    with pytest.raises(ValueError, match="failure reason"):
        stats.model("a", "10").record_failure(1, "TIMEOUT")


def test_metrics_exposition_has_tritons_names_labels_and_values():
    registry = CollectorRegistry()
    stats = ServingStatistics(registry)
    record = stats.model("mlp", "1")
    record.record_batch(_timing())
    record.record_request(12_345_678)
    record.record_request(1_000, ServingError.invalid("no such input"))  # validation: OTHER
    stats.model("mlp", "2")
    record.pending = lambda: 7  # the batcher's queue length, read when scraped
    text = generate_latest(registry).decode()
    lines = set(text.splitlines())
    v1 = 'model="mlp",version="1"'
    for line in (
            f"nv_inference_request_success{{{v1}}} 1.0",
            f"nv_inference_count{{{v1}}} 3.0",
            f"nv_inference_exec_count{{{v1}}} 2.0",
            f"nv_inference_request_duration_us{{{v1}}} 12345.0",
            f"nv_inference_queue_duration_us{{{v1}}} 4.0",
            f"nv_inference_compute_input_duration_us{{{v1}}} 0.0",
            f"nv_inference_compute_infer_duration_us{{{v1}}} 0.0",
            f"nv_inference_compute_output_duration_us{{{v1}}} 3.0",
            'nv_inference_request_failure{model="mlp",reason="OTHER",version="1"} 1.0',
            'nv_inference_request_failure{model="mlp",reason="BACKEND",version="1"} 0.0',
            'nv_inference_request_success{model="mlp",version="2"} 0.0',
            f"nv_inference_pending_request_count{{{v1}}} 7.0",
            'nv_inference_pending_request_count{model="mlp",version="2"} 0.0',
            "# TYPE nv_inference_pending_request_count gauge",
            "# TYPE nv_inference_request_success untyped"):
        assert line in lines, f"{line!r} not in:\n{text}"
    for reason in FAILURE_REASONS:
        assert f'reason="{reason}",version="2"' in text
    stats.remove("mlp", "2")
    assert 'version="2"' not in generate_latest(registry).decode()


def test_recording_from_threads_loses_nothing():
    stats = ServingStatistics()
    record = stats.model("m", "1")

    def hammer():
        for _ in range(2_000):
            record.record_success(3)
            record.record_batch(BatchTiming((2,), (1,), (None,), (ExecutionTiming((0,), 1, 1, 1),)))

    threads = [threading.Thread(target=hammer) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    model = stats.to_dict()["model_stats"][0]
    assert model["inference_stats"]["success"] == {"count": 16_000, "ns": 48_000}
    assert model["inference_count"] == 32_000 and model["execution_count"] == 16_000


def test_a_batcher_feeds_the_statistics():
    """Four requests of one row, max_batch_size 4: one execution of batch size 4; a full
    queue's refusal is counted REJECTED by the caller's record_request."""
    registry = CollectorRegistry()
    record = ServingStatistics(registry).model("m", "1")
    executor = concurrent.futures.ThreadPoolExecutor(1)
    batcher = DynamicBatcher(lambda rs: [{"y": r["x"]} for r in rs], max_batch_size=4,
                             max_queue_delay_us=10_000_000, max_queue_size=4,
                             executor=executor, on_batch=record.record_batch)

    async def main():
        requests = [batcher.submit({"x": np.ones((1, 2), np.float32)}, 1) for _ in range(4)]
        tasks = [asyncio.ensure_future(r) for r in requests]
        await asyncio.sleep(0)  # all four queued; the scheduler has not run yet
        try:
            await batcher.submit({"x": np.ones((1, 2), np.float32)}, 1)
        except ServingError as error:
            record.record_request(10, error)
        for task in tasks:
            await task
            record.record_request(20)
        await batcher.close()

    asyncio.run(asyncio.wait_for(main(), 20))
    text = generate_latest(registry).decode()
    assert 'nv_inference_request_failure{model="m",reason="REJECTED",version="1"} 1.0' in text
    assert 'nv_inference_exec_count{model="m",version="1"} 1.0' in text
    assert 'nv_inference_count{model="m",version="1"} 4.0' in text
    assert 'nv_inference_request_success{model="m",version="1"} 4.0' in text
    stats = record.to_dict()
    assert [b["batch_size"] for b in stats["batch_stats"]] == [4]
    assert stats["inference_stats"]["queue"]["count"] == 4
