"""Per model version statistics, in Triton's two forms: the statistics extension's JSON
(`GET /v2/models/{m}/versions/{v}/stats`, docs/protocol/extension_statistics.md) and its
Prometheus metrics (docs/user_guide/metrics.md) with labels model and version.

One record per model version holds the numbers; both forms read it, so they always agree.
Who records what (as Triton's InferenceStatsAggregator does):
- `record_batch` (the DynamicBatcher's `on_batch`): per execution, execution_count and
  batch_stats[batch size]; per request it answered, inference_count (its batch size) and
  its queue, compute_input, compute_infer and compute_output (a request in a batch counts
  its whole execution's phases, as in Triton);
- `record_success` / `record_failure`: the core, once per request it answers, with the
  end-to-end duration; a failure's reason is Triton's (REJECTED, CANCELED, BACKEND, OTHER).

The metrics are Triton's cumulative counters (and its pending-request gauge, read from the
batcher's queue when scraped), exposed under Triton's exact sample names
(`nv_inference_request_success{model="m",version="1"} 3`) with Prometheus type untyped:
prometheus_client names every counter family `<name>_total`, so a counter type could not
carry Triton's names, and the names are what dashboards and alerts query.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import Metric

if TYPE_CHECKING:
    from onnxc.serving.batcher import BatchTiming

FAILURE_REASONS = ("REJECTED", "CANCELED", "BACKEND", "OTHER")
"""Triton's reason label of nv_inference_request_failure (2.4x)"""

_PHASES = ("compute_input", "compute_infer", "compute_output")
_INFERENCE_STATS = ("success", "fail", "queue", *_PHASES, "cache_hit", "cache_miss")

_METRICS = {  # name -> (help, the record's counter, microseconds rather than a count)
    "nv_inference_request_success": (
        "Number of successful inference requests, all batch sizes", "success", False),
    "nv_inference_count": (
        "Number of inferences performed (does not include cached requests)",
        "inference_count", False),
    "nv_inference_exec_count": (
        "Number of model executions performed (does not include cached requests)",
        "execution_count", False),
    "nv_inference_request_duration_us": (
        "Cumulative inference request duration in microseconds (includes cached requests)",
        "success", True),
    "nv_inference_queue_duration_us": (
        "Cumulative inference queuing duration in microseconds (includes cached requests)",
        "queue", True),
    "nv_inference_compute_input_duration_us": (
        "Cumulative compute input duration in microseconds", "compute_input", True),
    "nv_inference_compute_infer_duration_us": (
        "Cumulative compute inference duration in microseconds", "compute_infer", True),
    "nv_inference_compute_output_duration_us": (
        "Cumulative inference compute output duration in microseconds", "compute_output",
        True),
}


@dataclass
class _Duration:
    """Triton's $duration_stat."""

    count: int = 0
    ns: int = 0

    def add(self, ns: int) -> None:
        self.count += 1
        self.ns += int(ns)

    def to_dict(self) -> dict:
        return {"count": self.count, "ns": self.ns}


def failure_reason(error: BaseException) -> str:
    """Triton's reason for a failed request: what the batcher marked (BACKEND: the model's
    run failed; REJECTED: the queue refused it), else OTHER (validation, routing)."""
    reason = getattr(error, "failure_reason", None)
    return reason if reason in FAILURE_REASONS else "OTHER"


class ModelStatistics:
    """The cumulative statistics of one model version; every method is thread-safe."""

    def __init__(self, name: str, version: str):
        self.name, self.version = name, str(version)
        self._lock = threading.Lock()
        self.inference_count = 0
        self.execution_count = 0
        self.last_inference_ms = 0
        self._stats = {key: _Duration() for key in _INFERENCE_STATS}
        self._failures = dict.fromkeys(FAILURE_REASONS, 0)
        self._batches: dict[int, dict[str, _Duration]] = {}
        self.pending: Callable[[], int] | None = None
        """what nv_inference_pending_request_count reports: the core sets it to its
        batcher's `queued` (requests waiting for a batch); 0 while unset"""

    def record_success(self, duration_ns: int) -> None:
        """One request answered, `duration_ns` from its arrival to its answer."""
        with self._lock:
            self._stats["success"].add(duration_ns)
            self.last_inference_ms = time.time_ns() // 1_000_000

    def record_failure(self, duration_ns: int, reason: str = "OTHER") -> None:
        """One request refused or failed after `duration_ns`, for Triton's `reason`."""
        if reason not in FAILURE_REASONS:
            raise ValueError(f"failure reason {reason!r} is not one of {FAILURE_REASONS}")
        with self._lock:
            self._stats["fail"].add(duration_ns)
            self._failures[reason] += 1
            self.last_inference_ms = time.time_ns() // 1_000_000

    def record_request(self, duration_ns: int, error: BaseException | None = None) -> None:
        """`record_success`, or `record_failure` with the error's reason."""
        if error is None:
            self.record_success(duration_ns)
        else:
            self.record_failure(duration_ns, failure_reason(error))

    def record_batch(self, timing: BatchTiming) -> None:
        """What one dispatched batch did (see the module docstring)."""
        with self._lock:
            for execution in timing.executions:
                self.execution_count += 1
                size = sum(timing.batch_sizes[i] for i in execution.requests)
                phases = self._batches.setdefault(size, {p: _Duration() for p in _PHASES})
                for phase in _PHASES:
                    phases[phase].add(getattr(execution, f"{phase}_ns"))
                for i in execution.requests:
                    if timing.errors[i] is not None:
                        continue
                    self.inference_count += timing.batch_sizes[i]
                    self._stats["queue"].add(timing.queue_ns[i])
                    for phase in _PHASES:
                        self._stats[phase].add(getattr(execution, f"{phase}_ns"))

    def to_dict(self) -> dict:
        """Triton's $model_stat (the HTTP JSON form: numbers, not strings)."""
        with self._lock:
            return {
                "name": self.name,
                "version": self.version,
                "last_inference": self.last_inference_ms,
                "inference_count": self.inference_count,
                "execution_count": self.execution_count,
                "inference_stats": {k: d.to_dict() for k, d in self._stats.items()},
                "response_stats": {},
                "batch_stats": [
                    {"batch_size": size, **{p: d.to_dict() for p, d in phases.items()}}
                    for size, phases in sorted(self._batches.items())],
                "memory_usage": [],
            }

    def _samples(self) -> tuple[dict[str, int], dict[str, int]]:
        """(metric name -> value, failure reason -> count), read under the lock."""
        with self._lock:
            values = {}
            for metric, (_, key, micro) in _METRICS.items():
                if key in self._stats:
                    stat = self._stats[key]
                    values[metric] = stat.ns // 1000 if micro else stat.count
                else:
                    values[metric] = getattr(self, key)
            return values, dict(self._failures)


class ServingStatistics:
    """Every loaded model version's statistics, and the collector that exposes them as
    Triton's metrics in the core's `registry`."""

    def __init__(self, registry: CollectorRegistry | None = None):
        self._lock = threading.Lock()
        self._models: dict[tuple[str, str], ModelStatistics] = {}
        if registry is not None:
            registry.register(self)

    def model(self, name: str, version: str) -> ModelStatistics:
        """The record of `name` version `version`, made on first use."""
        key = (name, str(version))
        with self._lock:
            record = self._models.get(key)
            if record is None:
                record = self._models[key] = ModelStatistics(name, str(version))
            return record

    def remove(self, name: str, version: str) -> None:
        """Forget an unloaded version (Triton reports loaded versions only)."""
        with self._lock:
            self._models.pop((name, str(version)), None)

    def to_dict(self, name: str | None = None, version: str | None = None) -> dict:
        """Triton's $stats_model_response: every version of every model, of `name`, or of
        `name` version `version`, by name then version number."""
        with self._lock:
            records = [r for (n, v), r in self._models.items()
                       if (name is None or n == name) and (version is None or v == str(version))]
        records.sort(key=lambda r: (r.name, int(r.version) if r.version.isdigit() else 0,
                                    r.version))
        return {"model_stats": [record.to_dict() for record in records]}

    def collect(self) -> Iterator[Metric]:
        """Triton's metric families, one sample per model version (prometheus_client
        Collector protocol)."""
        with self._lock:
            records = sorted(self._models.values(), key=lambda r: (r.name, r.version))
        samples = [(r, *r._samples()) for r in records]
        failure = Metric("nv_inference_request_failure",
                         "Number of failed inference requests, all batch sizes", "unknown")
        for record, _, failures in samples:
            for reason, count in failures.items():
                failure.add_sample("nv_inference_request_failure",
                                   {"model": record.name, "reason": reason,
                                    "version": record.version}, count)
        families = [Metric(name, help_text, "unknown")
                    for name, (help_text, _, _) in _METRICS.items()]
        for family in families:
            for record, values, _ in samples:
                family.add_sample(family.name, {"model": record.name,
                                                "version": record.version},
                                  values[family.name])
        pending = Metric("nv_inference_pending_request_count",
                         "Instantaneous number of pending requests awaiting execution per-model.",
                         "gauge")
        for record, _, _ in samples:
            source = record.pending
            pending.add_sample("nv_inference_pending_request_count",
                               {"model": record.name, "version": record.version},
                               source() if source is not None else 0)
        yield families[0]
        yield failure
        yield from families[1:]
        yield pending

    def describe(self) -> list[Metric]:
        """No families up front: registering reads nothing (prometheus_client calls
        describe, else collect, to check names)."""
        return []

