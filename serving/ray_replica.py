"""One model version as a Ray Serve deployment: the replica that holds the compiled model.

Each replica loads its version as the local engine does (model_store.load_payload: an .onnx
through onnxc's compile cache, so a second replica on the node or a restarted one finds the
code compiled; an artifact through onnxc.load), completes the config from the model
(repository.complete_config) and runs the config's warmup before Ray routes to it. Requests
are batched with `@serve.batch`, counting samples as Triton's max_batch_size does, waiting
at most dynamic_batching's max_queue_delay; a batch runs through batch_execution (one
concatenated call where the model is batch-separable). Every answer names the replica
that computed it, so clients and tests can see requests spread.

A version that fails to load does not fail its deployment (Ray would retry it forever and
`serve.run` would fail every model): the replica keeps the reason, `describe` reports it
and the ingress lists the version UNAVAILABLE with it, as the local engine does.

This module imports without Ray (only `--engine ray` needs Ray installed).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from onnxc.errors import ModelLoadError, OnnxcError
from onnxc.serving import repository
from onnxc.serving.batch_execution import BatchExecutor
from onnxc.serving.batcher import BatchTiming, run_one_by_one, run_timed
from onnxc.serving.errors import ServingError
from onnxc.serving.model_store import load_payload, per_sample, run_request, warmup_samples
from onnxc.serving.protocol_buffers import model_config


@dataclass(frozen=True)
class VersionSpec:
    """What a version's replicas load: the payload, and the given config (serialized)."""

    model_name: str
    version: int
    payload: str
    """model.onnx (or the config's default_model_filename) or an artifact directory"""
    folder: str
    """the model's folder (warmup data files are relative to it)"""
    config: bytes | None
    """config.pbtxt as a serialized ModelConfig; None: derived from the model"""

    @property
    def where(self) -> str:
        return f"model '{self.model_name}' version {self.version}"


@dataclass
class ReplicaAnswer:
    """A replica's answer: the outputs, the replica, or the refusal's status and reason
    (returned, not raised: Ray would wrap the exception in its own type)."""

    outputs: dict[str, np.ndarray]
    replica_id: str
    status: str = ""
    message: str = ""
    failure_reason: str = ""
    """Triton's failure reason of a refusal made running the model (BACKEND)"""
    batch: BatchTiming | None = None
    """what the batch this request ran in did, on one request of each batch"""


def _samples(requests: list) -> int:
    """@serve.batch's batch size in samples: the requests' leading sizes."""
    return sum(_rows(request[0]) for request in requests)


def _rows(inputs: dict[str, np.ndarray]) -> int:
    return next(iter(inputs.values())).shape[0] if inputs else 1


def _serve_batch(method):
    """`@serve.batch` counting samples when Ray is importable; its size and wait are set
    per replica from the model's config (set_max_batch_size, set_batch_wait_timeout_s)."""
    try:
        from ray import serve
    except ImportError:
        return method
    return serve.batch(method, max_batch_size=1, batch_wait_timeout_s=0.0,
                       batch_size_fn=_samples)


class ModelVersionReplica:
    """A Ray Serve replica of one model version (`serve.deployment` wraps it at build)."""

    def __init__(self, spec: VersionSpec):
        self.spec = spec
        self.replica_id = _replica_id()
        self.config = None
        self.error = ""
        # one thread runs the model: the event loop meanwhile takes requests into the next batch
        self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="onnxc-run")
        try:
            self._load()
        except (OnnxcError, OSError) as error:
            self.error = f"{spec.where}: {error}"

    def _load(self) -> None:
        spec = self.spec
        given = None if spec.config is None else model_config().ModelConfig.FromString(
            spec.config)
        self.model = load_payload(Path(spec.payload), given)
        config = repository.complete_config(given, spec.model_name, self.model)
        lead = next((s.shape[0] for s in self.model.inputs if s.shape), None)
        fixed_lead = config.max_batch_size > 0 and isinstance(lead, int)
        self._execute = per_sample(self.model, config) if fixed_lead else BatchExecutor(
            self.model)
        self.batching = config.HasField("dynamic_batching") and config.max_batch_size > 0
        if self.batching:
            delay_us = config.dynamic_batching.max_queue_delay_microseconds
            self._batched.set_max_batch_size(config.max_batch_size)
            self._batched.set_batch_wait_timeout_s(delay_us / 1e6)
        self.config = config
        for inputs, count, configured in warmup_samples(config, Path(spec.folder)):
            for _ in range(count):
                try:
                    run_request(self.model, config, inputs, None)
                except OnnxcError as error:
                    if configured:
                        raise ModelLoadError(f"warmup failed: {error}") from None

    def describe(self) -> tuple[bytes, str, str]:
        """(the completed config serialized, or b"" when the load failed; the failure's
        reason; this replica's id)."""
        config = b"" if self.config is None else self.config.SerializeToString()
        return config, self.error, self.replica_id

    async def infer(self, inputs: dict[str, np.ndarray],
                    outputs: list[str] | None) -> ReplicaAnswer:
        """The outputs asked for (None: all) of one request the ingress has checked."""
        if self.config is None:
            error = ServingError.unavailable(self.error or f"{self.spec.where} not loaded")
            return ReplicaAnswer({}, self.replica_id, error.status, error.message)
        request = (inputs, outputs, time.perf_counter_ns())
        if self.batching:
            result, timing = await self._batched(request)
        else:
            result, timing = (await self._in_thread(self._run_batch, [request]))[0]
        if isinstance(result, ServingError):  # this request's own refusal
            return ReplicaAnswer({}, self.replica_id, result.status, result.message,
                                 getattr(result, "failure_reason", ""), timing)
        return ReplicaAnswer(result, self.replica_id, batch=timing)

    @_serve_batch
    async def _batched(self, requests: list[tuple]) -> list:
        return await self._in_thread(self._run_batch, requests)

    async def _in_thread(self, function, requests: list) -> list:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, function, requests)

    def _run_batch(self, requests: list[tuple]) -> list[tuple]:
        """One batch as the local engine's batcher runs it (batch_execution: one call where
        the model is batch-separable; when the model refuses the batch, each request alone,
        so only the one at fault is refused). Each request's (outputs or ServingError,
        the batch's timing on the first request only: the ingress records it once)."""
        start = time.perf_counter_ns()
        inputs = [request[0] for request in requests]
        try:
            results, executions = run_timed(self._execute, inputs)
        except Exception:  # noqa: BLE001 - run_one_by_one gives each request its own error
            results, executions = run_one_by_one(self._execute, inputs, self.spec.where)
        batched = self.config.max_batch_size > 0
        timing = BatchTiming(
            tuple(_rows(i) if batched else 1 for i in inputs),
            tuple(start - arrived for _, _, arrived in requests),
            tuple(r if isinstance(r, ServingError) else None for r in results),
            tuple(executions))
        return [(r if isinstance(r, ServingError) else _pick(r, outputs),
                 timing if index == 0 else None)
                for index, (r, (_, outputs, _)) in enumerate(zip(results, requests))]


def _pick(results: dict[str, np.ndarray], outputs: list[str] | None) -> dict:
    return results if outputs is None else {name: results[name] for name in outputs}


def _replica_id() -> str:
    try:
        from ray import serve

        return serve.get_replica_context().replica_tag
    except Exception:  # noqa: BLE001 - outside a replica (direct use): no Serve context
        return "local"
