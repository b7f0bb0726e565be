"""The gRPC front end: `inference.GRPCInferenceService` and `grpc.health.v1.Health` on grpc.aio.

Each RPC decodes its message, calls the InferenceServer and encodes the answer; nothing here
knows about models beyond that interface. A ServingError aborts the call with its status code
and reason; any other exception is a bug, logged with its traceback and answered INTERNAL, so
no client input can stop the server. The stream RPC answers requests as they complete (each
response carries its request's id, as Triton's do) and reports a refused request as the
stream's `error_message` without ending the stream.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import sys
from importlib import resources
from types import ModuleType
from typing import TYPE_CHECKING

import grpc
from google.protobuf import json_format

from onnxc.serving.errors import ServingError
from onnxc.serving.grpc_tensors import decode_request, encode_response
from onnxc.serving.protocol_buffers import grpc_service

if TYPE_CHECKING:
    from onnxc.serving.server_core import InferenceServer

logger = logging.getLogger(__name__)

SERVICE_NAME = "inference.GRPCInferenceService"
_STREAM_IN_FLIGHT = 64
"""requests one stream may have in the core at once; the next waits (gRPC flow control)"""
_SHARED_MEMORY = "shared memory regions: send tensors in the request"
_UNSUPPORTED = {
    "SystemSharedMemoryStatus": _SHARED_MEMORY,
    "SystemSharedMemoryRegister": _SHARED_MEMORY,
    "SystemSharedMemoryUnregister": _SHARED_MEMORY,
    "CudaSharedMemoryStatus": _SHARED_MEMORY,
    "CudaSharedMemoryRegister": _SHARED_MEMORY,
    "CudaSharedMemoryUnregister": _SHARED_MEMORY,
    "TraceSetting": "request tracing",
    "LogSettings": "log settings over the protocol: use `onnxc serve --log-level`",
}
_LOAD_PARAMETERS = ("config", "traffic", "rollback")
_FINAL_REQUESTED = "triton_enable_empty_final_response"
"""a stream request asking its last response to say so (Triton's triton_final_response)"""


@functools.cache
def health_service() -> tuple[ModuleType, ModuleType]:
    """(messages, services) of `grpc.health.v1.Health` (protos/health.proto, Triton's copy)."""
    directory = str(resources.files("onnxc.serving") / "protos")
    sys.path.append(directory)
    try:
        return grpc.protos_and_services("health.proto")
    finally:
        sys.path.remove(directory)


def _rpc(method):
    """Abort with a ServingError's status; log and answer INTERNAL for anything else."""

    @functools.wraps(method)
    async def handler(self, request, context):
        try:
            return await method(self, request, context)
        except grpc.aio.AbortError:
            raise
        except ServingError as error:
            await context.abort(grpc.StatusCode[error.grpc_code], error.message)
        except Exception as error:  # a bug must not take the server down
            logger.exception("gRPC %s failed", method.__name__)
            await context.abort(grpc.StatusCode.INTERNAL, _internal(method.__name__, error))

    return handler


def _internal(rpc: str, error: Exception) -> str:
    return f"internal error in {rpc}: {type(error).__name__}: {error}"


def _unsupported(rpc: str, what: str):
    async def handler(self, request, context):
        await context.abort(
            grpc.StatusCode.UNIMPLEMENTED,
            f"onnxc serve has no {what} ({rpc})")

    handler.__name__ = rpc
    return handler


def parse_traffic(model: str, text: str) -> dict[str, int]:
    """`"1:90,2:10"` -> {"1": 90, "2": 10} (the canary weights of a RepositoryModelLoad)."""
    weights: dict[str, int] = {}
    for entry in text.split(","):
        version, sep, weight = entry.strip().partition(":")
        weight = weight.strip()
        if not sep or not _number(version) or int(version) < 1 or not _number(weight):
            raise ServingError.invalid(
                f"model '{model}': traffic entry '{entry.strip()}' is not version:percent "
                f"(e.g. \"1:90,2:10\")")
        version = str(int(version))
        if version in weights:
            raise ServingError.invalid(
                f"model '{model}': traffic names version {version} twice")
        weights[version] = int(weight)
    return weights


def _number(text: str) -> bool:
    return text.isascii() and text.isdigit()


def _string_parameter(model: str, key: str, parameter) -> str:
    if parameter.WhichOneof("parameter_choice") != "string_param":
        raise ServingError.invalid(
            f"model '{model}': load parameter '{key}' must be a string parameter")
    return parameter.string_param


class _InferenceService:
    """`inference.GRPCInferenceService` over an InferenceServer."""

    def __init__(self, core: InferenceServer, messages: ModuleType):
        self.core = core
        self.messages = messages

    @_rpc
    async def ServerLive(self, request, context):
        return self.messages.ServerLiveResponse(live=self.core.live())

    @_rpc
    async def ServerReady(self, request, context):
        return self.messages.ServerReadyResponse(ready=self.core.ready())

    @_rpc
    async def ModelReady(self, request, context):
        ready = self.core.model_ready(request.name, request.version or None)
        return self.messages.ModelReadyResponse(ready=ready)

    @_rpc
    async def ServerMetadata(self, request, context):
        return json_format.ParseDict(self.core.server_metadata(),
                                     self.messages.ServerMetadataResponse())

    @_rpc
    async def ModelMetadata(self, request, context):
        metadata = self.core.model_metadata(request.name, request.version or None)
        return json_format.ParseDict(metadata, self.messages.ModelMetadataResponse())

    @_rpc
    async def ModelConfig(self, request, context):
        response = self.messages.ModelConfigResponse()
        response.config.CopyFrom(self.core.model_config_proto(request.name,
                                                              request.version or None))
        return response

    @_rpc
    async def ModelStatistics(self, request, context):
        statistics = self.core.statistics(request.name or None, request.version or None)
        return json_format.ParseDict(statistics, self.messages.ModelStatisticsResponse())

    @_rpc
    async def ModelInfer(self, request, context):
        return await self._infer(request)

    async def _infer(self, request):
        name, version, decoded = decode_request(request)
        answered = await self.core.infer(name, version, decoded)
        response = self.messages.ModelInferResponse()
        encode_response(answered, response)
        return response

    async def ModelStreamInfer(self, request_iterator, context):
        """Each request answered as it completes; a refusal is that response's error_message."""
        responses: asyncio.Queue = asyncio.Queue()
        slots = asyncio.Semaphore(_STREAM_IN_FLIGHT)
        tasks: set[asyncio.Task] = set()
        end = object()

        async def answer(request):
            try:
                answered = await self._infer(request)
                final = request.parameters.get(_FINAL_REQUESTED)
                if final is not None and final.bool_param:  # one response: it is the final one
                    answered.parameters["triton_final_response"].bool_param = True
                response = self.messages.ModelStreamInferResponse(infer_response=answered)
            except ServingError as error:
                response = self.messages.ModelStreamInferResponse(error_message=error.message)
            except Exception as error:  # one request's bug ends only itself
                logger.exception("gRPC ModelStreamInfer request failed")
                response = self.messages.ModelStreamInferResponse(
                    error_message=_internal("ModelStreamInfer", error))
            finally:
                slots.release()
            responses.put_nowait(response)

        async def read():
            try:
                async for request in request_iterator:
                    await slots.acquire()
                    task = asyncio.create_task(answer(request))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
                if tasks:
                    await asyncio.gather(*tasks)
            finally:
                responses.put_nowait(end)

        reader = asyncio.create_task(read())
        try:
            while (response := await responses.get()) is not end:
                yield response
            await reader  # a broken request stream ends the call with its error
        finally:
            reader.cancel()
            for task in list(tasks):
                task.cancel()

    @_rpc
    async def RepositoryIndex(self, request, context):
        index = self.core.repository_index(ready_only=request.ready)
        return json_format.ParseDict({"models": index},
                                     self.messages.RepositoryIndexResponse())

    @_rpc
    async def RepositoryModelLoad(self, request, context):
        """Load (with an optional "config" override), or onnxc's canary "traffic" / "rollback"."""
        model = request.model_name
        if not model:
            raise ServingError.invalid("the load request names no model (model_name is empty)")
        parameters = request.parameters
        unknown = sorted(set(parameters) - set(_LOAD_PARAMETERS))
        if unknown:
            raise ServingError.invalid(
                f"model '{model}': unsupported load parameter(s) {', '.join(unknown)} "
                f"(onnxc serve takes {', '.join(_LOAD_PARAMETERS)}; model files are read "
                f"from the repository)")
        if "traffic" in parameters and "rollback" in parameters:
            raise ServingError.invalid(
                f"model '{model}': a load request sets traffic or rolls back, not both")
        config = (_string_parameter(model, "config", parameters["config"])
                  if "config" in parameters else None)
        if config is not None or not {"traffic", "rollback"} & set(parameters):
            await self.core.load_model(model, config)
        if "traffic" in parameters:
            text = _string_parameter(model, "traffic", parameters["traffic"])
            self.core.set_traffic(model, parse_traffic(model, text))
        if "rollback" in parameters:
            version = _string_parameter(model, "rollback", parameters["rollback"])
            self.core.rollback(model, version or None)
        return self.messages.RepositoryModelLoadResponse()

    @_rpc
    async def RepositoryModelUnload(self, request, context):
        model = request.model_name
        if not model:
            raise ServingError.invalid(
                "the unload request names no model (model_name is empty)")
        unknown = sorted(set(request.parameters) - {"unload_dependents"})
        if unknown:
            raise ServingError.invalid(
                f"model '{model}': unsupported unload parameter(s) {', '.join(unknown)}")
        await self.core.unload_model(model)
        return self.messages.RepositoryModelUnloadResponse()


for _rpc_name, _what in _UNSUPPORTED.items():
    setattr(_InferenceService, _rpc_name, _unsupported(_rpc_name, _what))


class _HealthService:
    """`grpc.health.v1.Health`: SERVING once the core is ready (every loaded model warmed up)."""

    def __init__(self, core: InferenceServer, messages: ModuleType):
        self.core = core
        self.messages = messages

    @_rpc
    async def Check(self, request, context):
        if request.service not in ("", SERVICE_NAME):  # the health protocol's NOT_FOUND
            await context.abort(
                grpc.StatusCode.NOT_FOUND,
                f"unknown service '{request.service}' (this server has '{SERVICE_NAME}')")
        status = self.messages.HealthCheckResponse
        ready = self.core.live() and self.core.ready()
        return status(status=status.SERVING if ready else status.NOT_SERVING)


def build_grpc_server(core: InferenceServer, address: str, *,
                      max_message_bytes: int = 64 << 20) -> grpc.aio.Server:
    """A grpc.aio server on `address` ("host:port") serving `core`; the caller starts it.

    Created inside the event loop that runs `core`. SO_REUSEPORT is off, so a port already in
    use is an error instead of two servers sharing it.
    """
    messages, services = grpc_service()
    health_messages, health_services = health_service()
    server = grpc.aio.server(options=[
        ("grpc.max_receive_message_length", max_message_bytes),
        ("grpc.max_send_message_length", max_message_bytes),
        ("grpc.so_reuseport", 0),
    ])
    services.add_GRPCInferenceServiceServicer_to_server(_InferenceService(core, messages),
                                                        server)
    health_services.add_HealthServicer_to_server(_HealthService(core, health_messages), server)
    try:
        server.add_insecure_port(address)
    except RuntimeError as error:  # grpc's "Failed to bind"
        raise OSError(f"the gRPC server cannot listen on {address}: {error}") from None
    return server
