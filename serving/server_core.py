"""`InferenceServer`: every decision of `onnxc serve`, behind the protocol front ends.

HTTP (http_app), gRPC (grpc_service) and the Ray engine decode a request into an
InferRequest and call this class; it checks the request against the model's metadata
(names, datatypes, shapes with Triton's batch-dimension rules, requested outputs, size),
routes it to a version (the one asked for, or by the canary weights), runs it on that
version's threads and answers an InferResponse, or raises ServingError with the reason.
Nothing a client sends reaches the compiled model unchecked, so the model's own errors
are only its run-time checks (reported as INVALID_ARGUMENT with onnxc's message).
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

import numpy as np
from prometheus_client import CollectorRegistry

from onnxc.errors import ModelLoadError, OnnxcError
from onnxc.serving import repository
from onnxc.serving.batch_execution import BatchExecutor
from onnxc.serving.batcher import DynamicBatcher
from onnxc.serving.errors import ServingError
from onnxc.serving.messages import DATATYPES, InferRequest, InferResponse
from onnxc.serving.model_store import LoadedVersion, ModelStore, per_sample
from onnxc.serving.statistics import ServingStatistics
from onnxc.version import __version__

log = logging.getLogger("onnxc.serving")

CONTROL_MODES = ("none", "poll", "explicit")
EXTENSIONS = ["model_repository", "model_configuration", "statistics", "onnxc_traffic"]


class InferenceServer:
    """The serving core: repository, versions, canary routing, checked inference."""

    def __init__(self, repository: str | Path, *, model_control_mode: str = "none",
                 poll_interval_s: float = 5.0, startup_models: list[str] | None = None,
                 max_request_bytes: int = 64 << 20, default_max_queue_size: int = 1024):
        if model_control_mode not in CONTROL_MODES:
            raise ValueError(f"model_control_mode must be one of {CONTROL_MODES}, "
                             f"got {model_control_mode!r}")
        self.repository = Path(repository)
        self.mode = model_control_mode
        self.poll_interval_s = poll_interval_s
        self.startup_models = startup_models
        self.max_request_bytes = max_request_bytes
        self.default_max_queue_size = default_max_queue_size
        self.metrics_registry = CollectorRegistry()
        self.stats = ServingStatistics(self.metrics_registry)
        self.store = ModelStore(self.repository)
        self.store.on_version_loaded = self._attach
        self.store.on_version_dropped = lambda v: self.stats.remove(v.name, v.label)
        self._started = False
        self._closing = False
        self._inflight = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._poll_task: asyncio.Task | None = None

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        """Load the startup models (failures recorded in the index, the others go on),
        warm them up, and in poll mode start watching the repository. ModelLoadError
        when the repository is not a directory (nothing could ever be served)."""
        if not self.repository.is_dir():
            raise ModelLoadError(f"model repository {self.repository} is not a directory")
        if self.mode == "explicit":
            names = self.startup_models or []
            if "*" in names:
                names = self.store.model_names()
        else:
            names = self.store.model_names()
        for name in names:
            if repository.model_folder(self.repository, name) is None:
                log.warning("model %s is not in the repository %s", name, self.repository)
                continue
            try:
                await self.store.load(name)
            except ModelLoadError as error:
                log.warning("model %s not loaded: %s", name, error)
        self._started = True
        if self.mode == "poll":
            self._poll_task = asyncio.create_task(self._poll_loop(), name="onnxc-poll")

    async def shutdown(self, drain_timeout_s: float = 30.0) -> None:
        """Refuse new requests (UNAVAILABLE), let those in flight finish (at most
        `drain_timeout_s`), then stop every version's threads."""
        self._closing = True
        if self._poll_task is not None:
            self._poll_task.cancel()
            try:
                await self._poll_task
            except asyncio.CancelledError:
                pass
            self._poll_task = None
        try:
            await asyncio.wait_for(self._idle.wait(), drain_timeout_s)
        except TimeoutError:
            log.warning("shutdown: %d request(s) still in flight after %.1f s",
                        self._inflight, drain_timeout_s)
        await self.store.close(0)

    def _attach(self, loaded: LoadedVersion) -> None:
        """Give a loaded version its request queue: Triton's dynamic batcher when the
        config has dynamic_batching, else one request per run (still queued, bounded and
        counted the same way)."""
        config = loaded.config
        batching = config.HasField("dynamic_batching") and config.max_batch_size > 0
        policy = config.dynamic_batching
        lead = next((s.shape[0] for s in loaded.model.inputs if s.shape), None)
        execute = (per_sample(loaded.model, config)
                   if config.max_batch_size > 0 and isinstance(lead, int)
                   else BatchExecutor(loaded.model))
        loaded.batcher = DynamicBatcher(
            execute, max_batch_size=config.max_batch_size if batching else 0,
            preferred_batch_sizes=list(policy.preferred_batch_size) if batching else (),
            max_queue_delay_us=policy.max_queue_delay_microseconds if batching else 0,
            max_queue_size=(policy.default_queue_policy.max_queue_size
                            or self.default_max_queue_size),
            executor=loaded.executor,
            on_batch=lambda timing: self.stats.model(loaded.name, loaded.label)
            .record_batch(timing),  # looked up per batch: a failed load leaves no record
            name=f"model '{loaded.name}' version {loaded.version}")

    async def _poll_loop(self) -> None:
        while True:
            await asyncio.sleep(self.poll_interval_s)
            try:
                await self.poll_repository()
            except Exception:  # a poll must never stop polling
                log.exception("repository poll failed")

    async def poll_repository(self) -> None:
        """One poll: load new models and versions, reload changed ones, drop removed ones
        (what poll mode does every poll_interval_s; tests call it directly)."""
        for name in self.store.model_names():
            if not self.store.changed(name):
                continue
            try:
                await self.store.load(name)
            except ModelLoadError as error:
                log.warning("model %s not loaded: %s", name, error)

    # -- health and metadata -----------------------------------------------------------

    def live(self) -> bool:
        return not self._closing

    def ready(self) -> bool:
        """Started, not shutting down, and every loaded version has run its warmup."""
        return self._started and not self._closing and all(
            v.warmed for r in self.store.records.values() for v in r.versions.values())

    def server_metadata(self) -> dict:
        return {"name": "onnxc", "version": __version__, "extensions": list(EXTENSIONS)}

    def _version(self, name: str, version: str | None) -> LoadedVersion:
        """The loaded version metadata is asked about (None: the highest)."""
        return self.store.loaded(name, version)

    def model_metadata(self, name: str, version: str | None = None) -> dict:
        """The protocol's model metadata (batched models show the batch dimension as -1)."""
        loaded = self._version(name, version)
        config = loaded.config
        lead = [-1] if config.max_batch_size > 0 else []

        def tensors(entries):
            return [{"name": e.name, "datatype": repository.protocol_datatype(e.data_type),
                     "shape": lead + list(e.dims)} for e in entries]

        return {"name": name,
                "versions": [str(v) for v in sorted(self.store.records[name].versions)],
                "platform": "onnxc",
                "inputs": tensors(config.input), "outputs": tensors(config.output)}

    def model_config(self, name: str, version: str | None = None) -> dict:
        return repository.config_to_dict(self._version(name, version).config)

    def model_config_proto(self, name: str, version: str | None = None):
        return self._version(name, version).config

    def model_ready(self, name: str, version: str | None = None) -> bool:
        try:
            loaded = self._version(name, version)
        except ServingError:
            return False
        return loaded.warmed and not loaded.closed and not self._closing

    # -- inference ---------------------------------------------------------------------

    async def infer(self, name: str, version: str | None,
                    request: InferRequest) -> InferResponse:
        """Check `request`, run it on the version routed to, answer its outputs."""
        if self._closing:
            raise ServingError.unavailable("the server is shutting down")
        start = time.monotonic_ns()
        loaded = self.store.route(name, version)  # acquired: released below
        self._inflight += 1
        self._idle.clear()
        stats = self.stats.model(name, loaded.label)
        try:
            try:
                outputs = self._check(loaded, request)
                results = await loaded.run(request.inputs, outputs)
            except ServingError as error:
                stats.record_request(time.monotonic_ns() - start, error)
                raise
            except OnnxcError as error:  # a run-time check of the model refused the data
                stats.record_failure(time.monotonic_ns() - start, "BACKEND")
                raise ServingError.invalid(f"model '{name}' version {loaded.version}: "
                                           f"{error}") from None
            except Exception as error:  # a bug: INTERNAL, the server stays up
                stats.record_failure(time.monotonic_ns() - start, "BACKEND")
                log.exception("model %s version %s: run failed", name, loaded.version)
                raise ServingError("INTERNAL", f"model '{name}' version {loaded.version}: "
                                   f"internal error: {error}") from None
            stats.record_success(time.monotonic_ns() - start)
            results = {key: _as_bytes(value) for key, value in results.items()}
        finally:
            loaded.release()
            self._inflight -= 1
            if self._inflight == 0:
                self._idle.set()
        return InferResponse(model_name=name, model_version=loaded.label, outputs=results,
                             id=request.id)

    def _check(self, loaded: LoadedVersion, request: InferRequest) -> list[str] | None:
        """ServingError when the request does not fit the model's metadata; the outputs
        to compute (None: all)."""
        config, name = loaded.config, loaded.name
        where = f"model '{name}' version {loaded.version}"
        inputs = request.inputs
        if not isinstance(inputs, dict):
            raise ServingError.invalid(f"{where}: inputs must be a mapping of name to tensor")
        expected = {e.name: e for e in config.input}
        unknown = sorted(set(inputs) - set(expected))
        if unknown:
            raise ServingError.invalid(f"{where}: unknown input(s) {unknown}; the model "
                                       f"takes {sorted(expected)}")
        missing = sorted(n for n, e in expected.items() if n not in inputs and not e.optional)
        if missing:
            raise ServingError.invalid(f"{where}: missing input(s) {missing}")
        total = 0
        batch = None
        for input_name, value in inputs.items():
            entry = expected[input_name]
            tensor = f"{where} input '{input_name}'"
            if not isinstance(value, np.ndarray):
                raise ServingError.invalid(f"{tensor}: not a tensor")
            datatype = repository.protocol_datatype(entry.data_type)
            if value.dtype != DATATYPES[datatype]:
                raise ServingError.invalid(f"{tensor}: datatype {_datatype_name(value)}, "
                                           f"expected {datatype}")
            total += value.nbytes
            dims = list(entry.dims)
            shape = list(value.shape)
            if config.max_batch_size > 0:
                if not shape:
                    raise ServingError.invalid(f"{tensor}: a scalar, expected a batch of "
                                               f"shape [-1, {', '.join(map(str, dims))}]")
                size = shape.pop(0)
                if not 1 <= size <= config.max_batch_size:
                    raise ServingError.invalid(f"{tensor}: batch size {size} outside 1.."
                                               f"{config.max_batch_size} (max_batch_size)")
                if batch is not None and size != batch:
                    raise ServingError.invalid(f"{tensor}: batch size {size}, other inputs "
                                               f"have {batch}")
                batch = size
            if len(shape) != len(dims) or any(d != -1 and d != s for d, s in zip(dims, shape)):
                shown = ([-1] if config.max_batch_size > 0 else []) + dims
                raise ServingError.invalid(f"{tensor}: shape {list(value.shape)}, expected "
                                           f"{shown}")
        if total > self.max_request_bytes:
            raise ServingError.invalid(f"{where}: request tensors hold {total} bytes, more than the "
                               f"limit of {self.max_request_bytes}")
        outputs = request.requested_outputs
        if not outputs:  # none named: every output, as Triton answers
            return None
        known = {e.name for e in config.output}
        unknown = [o for o in outputs if o not in known]
        if unknown:
            raise ServingError.invalid(f"{where}: unknown requested output(s) {unknown}; "
                                       f"the model has {sorted(known)}")
        return list(dict.fromkeys(outputs))

    # -- repository --------------------------------------------------------------------

    def repository_index(self, ready_only: bool = False) -> list[dict]:
        rows = self.store.index()
        return [r for r in rows if r["state"] == "READY"] if ready_only else rows

    def _check_control(self, what: str) -> None:
        if self.mode == "none":
            raise ServingError.unavailable(
                f"explicit model {what} is not allowed: the server runs with "
                f"model_control_mode none (use explicit or poll)")
        if self._closing:
            raise ServingError.unavailable("the server is shutting down")

    async def load_model(self, name: str, config_json: str | None = None) -> None:
        """Load or reload `name` (with `config_json`, Triton's JSON config, instead of
        config.pbtxt when given); INVALID_ARGUMENT with the reason when it fails."""
        self._check_control("load")
        config = None
        if config_json:
            try:
                config = repository.parse_config_json(config_json, f"model '{name}' config")
            except ModelLoadError as error:
                raise ServingError.invalid(str(error)) from None
            if config.default_model_filename and not repository.plain_name(
                    config.default_model_filename):
                raise ServingError.invalid(f"model '{name}' config: default_model_filename "
                                           f"{config.default_model_filename!r} is not a "
                                           f"file name")
        if repository.model_folder(self.repository, name) is None:
            raise ServingError.not_found(f"model '{name}' is not in the repository")
        try:
            await self.store.load(name, config, explicit=True)
        except ModelLoadError as error:
            raise ServingError.invalid(f"failed to load '{name}': {error}") from None
        failed = {v: r for v, r in self.store.records[name].failures.items()}
        if failed:
            raise ServingError.invalid(
                f"failed to load '{name}': " + "; ".join(
                    f"version {v}: {r}" if v else r for v, r in sorted(failed.items())))

    async def unload_model(self, name: str) -> None:
        """Stop serving `name`; returns once the requests it was running finished."""
        self._check_control("unload")
        await self.store.unload(name)

    def set_traffic(self, name: str, weights: dict[str, int]) -> None:
        self.store.set_traffic(name, weights)

    def rollback(self, name: str, version: str | None = None) -> None:
        self.store.rollback(name, version)

    def traffic(self, name: str) -> dict[str, int]:
        """The canary weights in force, by version (an onnxc extra)."""
        if name not in self.store.records:
            raise ServingError.not_found(f"unknown model '{name}'")
        return {str(v): w for v, w in self.store.traffic(name).items()}

    # -- statistics --------------------------------------------------------------------

    def statistics(self, name: str | None = None, version: str | None = None) -> dict:
        """Triton's statistics JSON of every loaded version, of `name`'s, or of one."""
        if name:
            self._version(name, version)  # NOT_FOUND / UNAVAILABLE for unknown ones
        for record in self.store.records.values():  # loaded versions show, zeros or not
            for loaded in record.versions.values():
                self.stats.model(record.name, loaded.label)
        return self.stats.to_dict(name or None, version or None)


def _as_bytes(value: np.ndarray) -> np.ndarray:
    """A string output (onnxc gives Python str) as the protocol's BYTES: UTF-8 bytes."""
    if value.dtype != object:
        return value
    flat = [item.encode() if isinstance(item, str) else item for item in value.ravel()]
    out = np.empty(len(flat), dtype=object)
    out[:] = flat
    return out.reshape(value.shape)


def _datatype_name(value: np.ndarray) -> str:
    for name, dtype in DATATYPES.items():
        if dtype == value.dtype:
            return name
    return str(value.dtype)
