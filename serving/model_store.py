"""Loaded models and their versions: load, reload, unload, warmup, canary weights, drain.

A model's versions live in one dict that a load replaces whole (never edited in place), so
a request routed to a version keeps that LoadedVersion even when a reload or an unload
takes it out of the dict: it holds a count on it (`acquire`/`release`), and a version is
closed only once that count is back to zero. That is how requests in flight finish on the
version they started on.

Compiles run one at a time on a loader thread (the event loop keeps answering meanwhile:
health, metadata and other models' requests); each version then gets its own executor of
instance_group[0].count threads. One CompiledModel is run from all of them at once: it
keeps an arena per concurrent run and ctypes drops the GIL for the native call
(runtime/compiled_model.py), so the threads really run in parallel.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import gc
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import onnxc  # lazy: the compiler's parts are imported when a model first loads
from onnxc.errors import ModelLoadError, OnnxcError
from onnxc.serving import repository
from onnxc.serving.errors import ServingError
from onnxc.serving.messages import DATATYPES

log = logging.getLogger("onnxc.serving")

def load_payload(payload: Path, config) -> object:
    """The CompiledModel of one version folder: model.onnx through onnxc.compile (and its
    cache), an artifact directory through onnxc.load."""
    if payload.is_dir():
        return onnxc.load(payload)
    threads = repository.parameter(config, "num_threads")
    options = {}
    if threads:
        try:
            options["num_threads"] = int(threads)
        except ValueError:
            raise ModelLoadError(f"parameter num_threads {threads!r} is not an integer") from None
    return onnxc.compile(payload, quiet=True, **options)


def per_sample(model, config) -> Callable[[list[dict]], list[dict]]:
    """The batcher's `execute` for a model whose batch dimension is fixed at 1: each
    request alone, each of its samples in turn (batch_execution concatenates only a
    separable symbolic batch)."""
    return lambda requests: [run_request(model, config, inputs, None) for inputs in requests]


def run_request(model, config, inputs: dict[str, np.ndarray],
                outputs: list[str] | None) -> dict[str, np.ndarray]:
    """One request on the model, outputs by name. A model whose batch dimension is fixed
    at 1 (max_batch_size > 0 in its config) runs once per sample."""
    names = outputs if outputs is not None else model.output_names
    lead = model.inputs[0].shape[0] if model.inputs and model.inputs[0].shape else None
    batch = next(iter(inputs.values())).shape[0] if inputs else 1
    if config.max_batch_size > 0 and isinstance(lead, int) and batch != lead:
        pieces = [model.run(names, {k: v[i:i + 1] for k, v in inputs.items()})
                  for i in range(batch)]
        return {name: np.concatenate([p[j] for p in pieces])
                for j, name in enumerate(names)}
    return dict(zip(names, model.run(names, inputs)))


class LoadedVersion:
    """One version being served: its model, completed config, threads and in-flight count."""

    def __init__(self, name: str, version: int, model, config, source, folder: Path,
                 config_key: bytes | None = None):
        self.name, self.version, self.model, self.config = name, version, model, config
        self.source = source
        """the VersionSource it was loaded from (poll mode compares signatures)"""
        self.folder = folder
        """the model's folder (warmup files are relative to it)"""
        self.config_key = config_key
        """the given config it was loaded with, serialized (a reload compares it)"""
        self.executor = concurrent.futures.ThreadPoolExecutor(
            repository.instance_count(config), thread_name_prefix=f"onnxc-{name}-{version}")
        self.inflight = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self.warmed = False
        self.closed = False
        self.batcher = None
        """a DynamicBatcher when the config asks for dynamic batching (serving/batcher.py)"""

    @property
    def label(self) -> str:
        return str(self.version)

    def acquire(self) -> None:
        self.inflight += 1
        self._idle.clear()

    def release(self) -> None:
        self.inflight -= 1
        if self.inflight == 0:
            self._idle.set()

    async def run(self, inputs: dict[str, np.ndarray],
                  outputs: list[str] | None) -> dict[str, np.ndarray]:
        """Run one checked request: through the batcher when there is one, else alone on
        this version's threads."""
        if self.batcher is None:
            return await self.run_alone(inputs, outputs)
        batch = 1
        if self.config.max_batch_size > 0 and inputs:
            batch = next(iter(inputs.values())).shape[0]
        results = await self.batcher.submit(inputs, batch)
        return results if outputs is None else {name: results[name] for name in outputs}

    async def run_alone(self, inputs: dict[str, np.ndarray],
                        outputs: list[str] | None) -> dict[str, np.ndarray]:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, run_request, self.model,
                                          self.config, inputs, outputs)

    async def warmup(self) -> None:
        """Triton's model_warmup samples, or one zero-filled run when none is configured;
        a configured sample that fails fails the load."""
        samples = warmup_samples(self.config, self.folder)
        for inputs, count, configured in samples:
            for _ in range(count):
                try:
                    await self.run_alone(inputs, None)  # not counted in statistics
                except OnnxcError as error:
                    if configured:
                        raise ModelLoadError(f"model '{self.name}' version {self.version}: "
                                             f"warmup failed: {error}") from None
                    # zeros the model's own run-time checks refuse: the code still ran
                    log.info("model %s version %s: zero warmup refused: %s",
                             self.name, self.version, error)
        self.warmed = True

    async def close(self, timeout_s: float | None = None) -> None:
        """Wait for the requests in flight (at most `timeout_s`), then stop the threads."""
        if self.closed:
            return
        drained = True
        try:
            if self.inflight:
                await asyncio.wait_for(self._idle.wait(), timeout_s)
        except TimeoutError:
            drained = False  # what is still queued is refused (UNAVAILABLE), not run
            log.warning("model %s version %s: closed with %d request(s) in flight",
                        self.name, self.version, self.inflight)
        self.closed = True
        if self.batcher is not None:
            await self.batcher.close(drain=drained)
        self.executor.shutdown(wait=False)


def settle_heap() -> None:
    """Take what is loaded out of the cyclic garbage collector's walks, after each load or
    unload: compiled models, the compiler's caches and the protocol's message classes are
    tens of thousands of long-lived objects, and every full collection (one per ~70,000
    allocations, which requests make) walked them all: 20-40 ms with ResNet-50 and BERT-2
    loaded, a pause in some requests' p99. Unfrozen and collected first, so the garbage of
    a dropped version is freed, then frozen (gc.freeze) again."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()


def warmup_samples(config, folder: Path) -> list[tuple[dict[str, np.ndarray], int, bool]]:
    """(inputs, repetitions, configured) per warmup sample."""
    if not len(config.model_warmup):
        inputs = {}
        for entry in config.input:
            if entry.optional:
                continue
            shape = ([1] if config.max_batch_size > 0 else []) + [
                1 if d < 0 else d for d in entry.dims]
            inputs[entry.name] = _filled(entry.data_type, shape, None, folder)
        return [(inputs, 1, False)]
    samples = []
    for warm in config.model_warmup:
        inputs = {}
        for input_name, spec in warm.inputs.items():
            shape = ([max(warm.batch_size, 1)] if config.max_batch_size > 0 else []) + list(
                spec.dims)
            inputs[input_name] = _filled(spec.data_type, shape, spec, folder)
        samples.append((inputs, max(warm.count, 1), True))
    return samples


def _filled(data_type: int, shape: list[int], spec, folder: Path) -> np.ndarray:
    """A warmup tensor: zeros, seeded random data, or a file's raw bytes (Triton's forms)."""
    datatype = repository.protocol_datatype(data_type)
    dtype = DATATYPES[datatype]
    kind = spec.WhichOneof("input_data_type") if spec is not None else "zero_data"
    if datatype == "BYTES":
        return np.full(shape, b"", dtype=object)
    if kind == "random_data":
        rng = np.random.default_rng(0)
        if dtype.kind == "f":
            return rng.standard_normal(shape).astype(dtype)
        if dtype.kind == "b":
            return rng.integers(0, 2, shape).astype(dtype)
        return rng.integers(0, 10, shape).astype(dtype)
    if kind == "input_data_file":
        if not repository.plain_name(spec.input_data_file):
            raise ModelLoadError(f"warmup input_data_file {spec.input_data_file!r} is not a "
                                 f"file name in {folder / 'warmup'}")
        path = folder / "warmup" / spec.input_data_file
        try:
            data = np.frombuffer(path.read_bytes(), dtype=dtype)
        except OSError as error:
            raise ModelLoadError(f"warmup file {path}: {error}") from None
        return data.reshape(shape).copy()
    return np.zeros(shape, dtype)


def _config_key(config) -> bytes | None:
    """What decides whether a version must be reloaded: the given config but its traffic
    parameter (a changed split only changes the weights)."""
    if config is None:
        return None
    copy = type(config).FromString(config.SerializeToString())
    if "traffic" in copy.parameters:
        del copy.parameters["traffic"]
    return copy.SerializeToString(deterministic=True)


def _sync_traffic(completed, given) -> None:
    """Give a kept version's config the traffic parameter of the config now given."""
    text = repository.parameter(given, "traffic")
    if text is None:
        if "traffic" in completed.parameters:
            del completed.parameters["traffic"]
    else:
        completed.parameters["traffic"].string_value = text


def _version_number(name: str, version: str, what: str) -> int:
    try:
        return int(version)
    except ValueError:
        raise ServingError.invalid(f"model '{name}': {what} {version!r} is not a "
                                   f"number") from None


@dataclass
class ModelRecord:
    """What the store knows of one model: its loaded versions and why others are not."""

    name: str
    versions: dict[int, LoadedVersion] = field(default_factory=dict)
    """replaced whole on every change (see the module docstring)"""
    failures: dict[int, str] = field(default_factory=dict)
    """version -> why it did not load; version 0: the model as a whole (a bad config)"""
    traffic: dict[int, int] | None = None
    """canary weights per version (None: everything to the highest version)"""
    stable: int | None = None
    """the version rollback returns to: the highest weight before the canary"""
    source: repository.ModelSource | None = None
    override: object | None = None
    """the config given with an explicit load (kept over config.pbtxt until the next one)"""
    unloaded: bool = False
    config_traffic: str | None = None
    """the config's traffic parameter when last loaded (a changed one replaces set_traffic)"""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class ModelStore:
    """Every model of the repository the server knows, and the operations on them."""

    def __init__(self, repository_path: str | Path, *, seed: int | None = 0):
        self.path = Path(repository_path)
        self.records: dict[str, ModelRecord] = {}
        self.loader = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="onnxc-load")
        self.rng = random.Random(seed)
        """canary routing draws (seeded: a server's split is reproducible)"""
        self.on_version_loaded: Callable[[LoadedVersion], None] | None = None
        """called for each version once loaded, before warmup (the core attaches its
        batcher and statistics there)"""
        self.on_version_dropped: Callable[[LoadedVersion], None] | None = None
        """called for each version no longer served under its number (its statistics go)"""

    def record(self, name: str) -> ModelRecord:
        return self.records.setdefault(name, ModelRecord(name))

    def model_names(self) -> list[str]:
        """Models in the repository folder now, and those loaded from it before."""
        try:
            names = set(repository.scan(self.path))
        except ModelLoadError:
            names = set()
        return sorted(names | set(self.records))

    async def load(self, name: str, config_override=None, *, explicit: bool = False) -> None:
        """Load (or reload) a model's versions by its policy; versions whose source and
        config did not change stay as they are. Failures are recorded; ModelLoadError
        when nothing of the model could be loaded."""
        record = self.record(name)
        async with record.lock:
            await self._load_locked(record, config_override, explicit)

    async def _load_locked(self, record: ModelRecord, config_override, explicit: bool) -> None:
        name = record.name
        folder = repository.model_folder(self.path, name)
        if explicit:
            record.override = config_override
        if folder is None:  # removed from the repository: unloaded and forgotten
            await self._replace(record, {})
            self.records.pop(name, None)
            return
        source = repository.scan_model(folder, record.override)
        record.source, record.unloaded = source, False
        config = record.override if record.override is not None else source.config
        failures: dict[int, str] = {}
        if source.error and record.override is None:
            failures[0] = source.error
            record.failures = failures
            raise ModelLoadError(source.error)
        selected = repository.select_versions(config, list(source.versions))
        if not selected:
            failures[0] = (f"model '{name}' has no version folder its version policy selects "
                           f"(found {sorted(source.versions) or 'none'})")
        versions: dict[int, LoadedVersion] = {}
        config_key = _config_key(config)
        for version in selected:
            current = record.versions.get(version)
            if (current is not None and current.source.signature
                    == source.versions[version].signature and current.config_key == config_key):
                _sync_traffic(current.config, config)  # a new split needs no reload
                versions[version] = current
                continue
            try:
                versions[version] = await self._load_version(name, source, version, config,
                                                             config_key)
            except Exception as error:  # noqa: BLE001 - any failure is this version's reason
                failures[version] = (str(error) if isinstance(error, (OnnxcError, OSError))
                                     else f"{type(error).__name__}: {error}")
                log.warning("model %s version %d failed to load: %s", name, version, error)
                if current is not None:
                    versions[version] = current  # a failed reload keeps the one serving
        record.failures = failures
        await self._replace(record, versions)
        self._apply_config_traffic(record, config)
        if not versions:
            raise ModelLoadError("; ".join(failures.values()) or f"model '{name}' not loaded")

    async def _load_version(self, name: str, source, version: int, config,
                            config_key) -> LoadedVersion:
        loop = asyncio.get_running_loop()
        payload = source.versions[version].payload
        model = await loop.run_in_executor(self.loader, load_payload, payload, config)
        completed = repository.complete_config(config, name, model)
        loaded = LoadedVersion(name, version, model, completed, source.versions[version],
                               source.path, config_key)
        try:
            if self.on_version_loaded is not None:
                self.on_version_loaded(loaded)
            await loaded.warmup()
        except BaseException:
            await loaded.close(0)
            raise
        log.info("model %s version %d loaded (%s)", name, version, source.versions[version]
                 .payload)
        return loaded

    async def _replace(self, record: ModelRecord, versions: dict[int, LoadedVersion]) -> None:
        """Serve `versions` from now on; close the ones dropped once their requests end."""
        old = record.versions
        record.versions = versions
        if record.traffic is not None:
            record.traffic = {v: w for v, w in record.traffic.items() if v in versions} or None
        if record.stable is not None and record.stable not in versions:
            record.stable = None
        dropped = [v for k, v in old.items() if versions.get(k) is not v]
        if self.on_version_dropped is not None:
            for loaded in dropped:
                if loaded.version not in versions:
                    self.on_version_dropped(loaded)
        await asyncio.gather(*(v.close() for v in dropped))
        settle_heap()

    def _apply_config_traffic(self, record: ModelRecord, config) -> None:
        text = repository.parameter(config, "traffic")
        if text == record.config_traffic:
            return  # unchanged: set_traffic/rollback made since stay
        record.config_traffic = text
        if text is None:
            return
        try:
            self.set_traffic(record.name, repository.parse_traffic(text, record.name))
        except (ServingError, ModelLoadError) as error:  # the versions serve; reported
            record.failures[0] = f"traffic parameter: {error}"

    async def unload(self, name: str) -> None:
        """Stop serving every version of `name`; returns once their requests finished."""
        record = self.records.get(name)
        if record is None:
            raise ServingError.not_found(f"unknown model '{name}'")
        async with record.lock:
            record.unloaded, record.failures = True, {}
            record.traffic = record.stable = record.config_traffic = None
            await self._replace(record, {})

    def set_traffic(self, name: str, weights: dict) -> None:
        """Canary weights per version; every version named must be loaded."""
        record = self.records.get(name)
        if record is None or not record.versions:
            raise ServingError.not_found(f"model '{name}' is not loaded")
        parsed: dict[int, int] = {}
        for version, weight in weights.items():
            try:
                v, w = int(version), int(weight)
            except (TypeError, ValueError):
                raise ServingError.invalid(f"model '{name}': traffic {version!r}: {weight!r} "
                                           f"is not version: percent") from None
            if v not in record.versions:
                raise ServingError.invalid(f"model '{name}': traffic names version {v}, "
                                           f"which is not loaded ({sorted(record.versions)})")
            if w < 0:
                raise ServingError.invalid(f"model '{name}': traffic weight {w} of version "
                                           f"{v} is negative")
            parsed[v] = w
        if sum(parsed.values()) <= 0:
            raise ServingError.invalid(f"model '{name}': traffic gives no version a weight")
        # rollback's target: the majority before this change when weights were set, else
        # (the first split: routing went to the newest version) the majority of this one
        before = record.traffic or parsed  # a tie: the older version is the stable one
        record.stable = max(before, key=lambda v: (before[v], -v))
        record.traffic = parsed

    def rollback(self, name: str, version: str | None = None) -> None:
        """All traffic to `version` at once (default: the stable one)."""
        record = self.records.get(name)
        if record is None or not record.versions:
            raise ServingError.not_found(f"model '{name}' is not loaded")
        if version is None:
            target = record.stable if record.stable is not None else max(record.versions)
        else:
            target = _version_number(name, version, "rollback version")
            if target not in record.versions:
                raise ServingError.invalid(f"model '{name}': rollback to version {target}, "
                                           f"which is not loaded ({sorted(record.versions)})")
        record.traffic = {target: 100}
        record.stable = target

    def traffic(self, name: str) -> dict[int, int]:
        """The weights in force: the canary's, else all to the highest version."""
        record = self.records[name]
        if record.traffic:
            return dict(record.traffic)
        return {max(record.versions): 100} if record.versions else {}

    def loaded(self, name: str, version: str | None,
               default: Callable[[ModelRecord], int] | None = None) -> LoadedVersion:
        """Version `version` of model `name` (None or "": `default(record)`, else the
        highest), or the refusal that says why not: NOT_FOUND for a model the repository
        does not have or a version not loaded, UNAVAILABLE for a model not loaded now."""
        record = self.records.get(name)
        if record is None or not record.versions:
            if record is None and repository.model_folder(self.path, name) is None:
                raise ServingError.not_found(f"unknown model '{name}'")
            raise ServingError.unavailable(f"model '{name}' is not loaded")
        versions = record.versions
        if version is None or version == "":
            return versions[default(record) if default is not None else max(versions)]
        chosen = _version_number(name, version, "version")
        if chosen not in versions:
            raise ServingError.not_found(
                f"model '{name}' version {chosen} is not loaded (loaded: "
                f"{', '.join(map(str, sorted(versions)))})")
        return versions[chosen]

    def _by_traffic(self, record: ModelRecord) -> int:
        weights = record.traffic
        if not weights:
            return max(record.versions)
        return self.rng.choices(list(weights), list(weights.values()))[0]

    def route(self, name: str, version: str | None) -> LoadedVersion:
        """The version a request goes to, acquired (the caller releases it)."""
        loaded = self.loaded(name, version, self._by_traffic)
        loaded.acquire()
        return loaded

    def index(self) -> list[dict]:
        """Triton's repository index rows: every model folder, loaded or not."""
        rows = []
        for name in self.model_names():
            record = self.records.get(name)
            if record is None:
                rows.append({"name": name, "version": "", "state": "", "reason": ""})
                continue
            if record.unloaded:
                rows.append({"name": name, "version": "", "state": "UNAVAILABLE",
                             "reason": "unloaded"})
                continue
            seen = set()
            for version, loaded in sorted(record.versions.items()):
                seen.add(version)
                ready = loaded.warmed and not loaded.closed
                rows.append({"name": name, "version": str(version),
                             "state": "READY" if ready else "LOADING",
                             "reason": record.failures.get(version, "")})
            for version, reason in sorted(record.failures.items()):
                if version not in seen:
                    rows.append({"name": name, "version": str(version) if version else "",
                                 "state": "UNAVAILABLE", "reason": reason})
        return rows

    def changed(self, name: str) -> bool:
        """Whether the model's folder differs from what was loaded (poll mode)."""
        record = self.records.get(name)
        folder = repository.model_folder(self.path, name)
        if record is None:
            return folder is not None
        if record.unloaded:
            return False
        if folder is None:
            return True  # removed: the load forgets it
        source = repository.scan_model(folder, record.override)
        before = record.source
        if before is None:
            return True
        return (source.config_signature != before.config_signature
                or {v: s.signature for v, s in source.versions.items()}
                != {v: s.signature for v, s in before.versions.items()})

    async def close(self, timeout_s: float | None) -> None:
        """Close every version (waiting at most `timeout_s` for its requests)."""
        versions = [v for r in self.records.values() for v in r.versions.values()]
        await asyncio.gather(*(v.close(timeout_s) for v in versions))
        self.loader.shutdown(wait=False)
