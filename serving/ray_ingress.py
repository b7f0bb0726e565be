"""The Ray engine's ingress: the local engine's core and front ends over deployment handles.

The ingress is a Ray Serve deployment running the same `InferenceServer` as `onnxc serve`
without Ray, with one difference: its versions are `RemoteVersion`s whose `run` sends the
checked request to the version's deployment (serving/ray_replica.py) instead of running a
compiled model. Everything else (the repository scan and version policy, request checks,
canary routing and rollback, statistics, repository index) is the local engine's code, and
HTTP is http_app's Starlette app served by Ray's proxy; gRPC, when asked for, is
grpc_service's server started in the ingress process (Ray's own gRPC proxy would need
Ray-specific servicers and pickles messages by module name), and so is the Prometheus
exposition of the core's registry (Triton's nv_inference_* metrics).

Batching happens in the replicas (`@serve.batch`), so the ingress attaches no batcher; each
response names the replica that computed it (parameter `onnxc_replica`).
"""

from __future__ import annotations

import contextvars
import logging
from typing import Any

import numpy as np

from onnxc.errors import ModelLoadError
from onnxc.serving.errors import ServingError
from onnxc.serving.messages import InferRequest, InferResponse
from onnxc.serving.model_store import LoadedVersion, ModelStore
from onnxc.serving.protocol_buffers import model_config
from onnxc.serving.server_core import InferenceServer

log = logging.getLogger("onnxc.serving")

REPLICA_PARAMETER = "onnxc_replica"
"""the response parameter naming the replica that computed the outputs"""

_replica: contextvars.ContextVar[str] = contextvars.ContextVar("onnxc_replica", default="")
"""set by RemoteVersion.run within the request's task, read back by RayInferenceServer.infer"""


def version_key(name: str, version: int) -> str:
    """The key of a version's deployment handle in the ingress's handle map."""
    return f"{name}/{version}"


class RemoteVersion(LoadedVersion):
    """A version served by a Ray Serve deployment: `model` is its DeploymentHandle."""

    on_batch = None
    """the statistics' record_batch: each replica batch's timing, as the local batcher's"""

    async def run(self, inputs: dict[str, np.ndarray],
                  outputs: list[str] | None) -> dict[str, np.ndarray]:
        try:
            answer = await self.model.infer.remote(inputs, outputs)
        except Exception as error:  # noqa: BLE001 - Ray's errors: a replica gone, a timeout
            raise ServingError.unavailable(
                f"model '{self.name}' version {self.version}: no replica answered: "
                f"{type(error).__name__}: {error}") from None
        _replica.set(answer.replica_id)
        if answer.batch is not None and self.on_batch is not None:
            self.on_batch(answer.batch)
        if answer.status:
            error = ServingError(answer.status, answer.message)
            if answer.failure_reason:
                error.failure_reason = answer.failure_reason
            raise error
        return answer.outputs

    async def warmup(self) -> None:
        """Nothing to run here: each replica runs the warmup before Ray routes to it."""
        self.warmed = True


class RayModelStore(ModelStore):
    """The local engine's store whose versions are the deployments the driver made."""

    def __init__(self, repository_path, handles: dict[str, Any]):
        super().__init__(repository_path)
        self.handles = handles

    async def _load_version(self, name: str, source, version: int, config,
                            config_key) -> LoadedVersion:
        handle = self.handles.get(version_key(name, version))
        if handle is None:
            raise ModelLoadError(f"model '{name}' version {version} has no Ray deployment "
                                 f"(the repository changed after the engine started: "
                                 f"restart `onnxc serve --engine ray` to serve it)")
        completed, error, _ = await handle.describe.remote()
        if error:
            raise ModelLoadError(error)
        loaded = RemoteVersion(name, version, handle,
                               model_config().ModelConfig.FromString(completed),
                               source.versions[version], source.path, config_key)
        if self.on_version_loaded is not None:
            self.on_version_loaded(loaded)
        await loaded.warmup()
        log.info("model %s version %d on Ray Serve", name, version)
        return loaded


class RayInferenceServer(InferenceServer):
    """InferenceServer whose versions run on Ray Serve deployments (model control: none,
    since the deployments are made when the engine starts)."""

    def __init__(self, repository, handles: dict[str, Any], **options: Any):
        super().__init__(repository, model_control_mode="none", **options)
        self.store = RayModelStore(self.repository, handles)
        self.store.on_version_loaded = self._attach
        self.store.on_version_dropped = lambda v: self.stats.remove(v.name, v.label)

    def _check_control(self, what: str) -> None:
        raise ServingError.unavailable(
            f"explicit model {what} is not available with --engine ray: each version's Ray "
            f"Serve deployment is made when the engine starts (restart it to pick up "
            f"repository changes)")

    def _attach(self, loaded: LoadedVersion) -> None:
        """No batcher here: the replicas batch (`@serve.batch`) and report each batch."""
        loaded.on_batch = self.stats.model(loaded.name, loaded.label).record_batch

    async def infer(self, name: str, version: str | None,
                    request: InferRequest) -> InferResponse:
        _replica.set("")
        response = await super().infer(name, version, request)
        replica = _replica.get()
        if replica:
            response.parameters[REPLICA_PARAMETER] = replica
        return response


class OnnxcIngress:
    """The ingress deployment (wrapped by `serve.ingress()` and `serve.deployment` at build):
    http_app's Starlette app over a RayInferenceServer, and gRPC and metrics listeners when
    their addresses are given."""

    async def __init__(self, repository: str, handles: dict[str, Any],
                       options: dict[str, Any]):
        self.limit = options.get("max_request_bytes", 64 << 20)
        self.drain_timeout_s = options.get("drain_timeout_s", 30.0)
        self.core = RayInferenceServer(repository, handles, max_request_bytes=self.limit)
        await self.core.start()
        self.grpc_server = None
        address = options.get("grpc_address")
        if address:
            from onnxc.serving import grpc_service

            built = grpc_service.build_grpc_server(self.core, address)
            self.grpc_server = built[0] if isinstance(built, tuple) else built
            await self.grpc_server.start()
        self.metrics_server = None
        if options.get("metrics_port") is not None:  # the core's nv_inference_* metrics
            from prometheus_client import start_http_server

            self.metrics_server, _ = start_http_server(
                options["metrics_port"], addr=options["metrics_host"],
                registry=self.core.metrics_registry)

    def __serve_build_asgi_app__(self):
        from onnxc.serving.http_app import build_app

        return build_app(self.core, max_request_bytes=self.limit)

    def check_health(self) -> None:
        """Ray restarts an ingress that stops being live."""
        if not self.core.live():
            raise RuntimeError("the serving core is shut down")

    async def __del__(self):
        """Ray Serve's shutdown hook (awaited): gRPC and the core drain what is in flight."""
        if getattr(self, "grpc_server", None) is not None:
            await self.grpc_server.stop(grace=self.drain_timeout_s)
        if getattr(self, "metrics_server", None) is not None:
            self.metrics_server.shutdown()
            self.metrics_server.server_close()
        if getattr(self, "core", None) is not None:
            await self.core.shutdown(drain_timeout_s=self.drain_timeout_s)
