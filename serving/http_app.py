"""The Open Inference Protocol's HTTP/REST endpoints (and Triton's extensions) on Starlette.

Each endpoint translates: the body to an InferRequest (http_tensors) or a small JSON
object, one call into the InferenceServer, its answer back to JSON or binary tensors. A
ServingError becomes its status with `{"error": reason}`, as tritonclient reads it; any
other exception is a bug, logged with its traceback and answered 500 without the details,
and the server goes on. Request bodies are counted as they arrive, so one larger than
`max_request_bytes` is refused before it is held in memory.
"""

from __future__ import annotations

import asyncio
import functools
import gzip
import json
import logging
import zlib
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from onnxc.serving.errors import ServingError
from onnxc.serving.http_tensors import (
    HEADER_LENGTH,
    decode_request,
    decompress,
    encode_response,
    header_length,
)
from onnxc.serving.messages import InferRequest, InferResponse

log = logging.getLogger("onnxc.serving.http")

OFF_LOOP_BYTES = 1 << 20
"""bodies and answers larger than this (or compressed) are decoded and encoded on a worker
thread, so the event loop goes on answering other requests and health checks meanwhile"""

Handler = Callable[[Request], Awaitable[Response]]


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _endpoint(handler: Handler) -> Handler:
    """ServingError -> its status and reason; anything else -> a logged 500."""

    @functools.wraps(handler)
    async def guarded(request: Request) -> Response:
        try:
            return await handler(request)
        except ServingError as error:
            return _error(error.http_status, error.message)
        except ClientDisconnect:  # gone before its body arrived: nobody to answer
            return Response(status_code=400)
        except Exception:
            log.exception("internal error answering %s %s", request.method, request.url.path,
                          extra={"event": "internal_error", "path": request.url.path})
            return _error(500, "internal server error (logged by the server)")

    return guarded


def _too_large(limit: int) -> ServingError:
    return ServingError.invalid(f"the request body is larger than the limit of {limit} bytes "
                        f"(onnxc serve --max-request-bytes)")


async def read_body(request: Request, limit: int) -> bytes:
    """The whole body, refused as soon as Content-Length or the bytes received pass
    `limit` (so an oversized or lying client is never buffered past the limit)."""
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.strip().isdigit():
            raise ServingError.invalid(f"Content-Length must be an integer, got "
                                       f"'{declared[:40]}'")
        if int(declared) > limit:
            raise _too_large(limit)
    chunks, received = [], 0
    async for chunk in request.stream():
        received += len(chunk)
        if received > limit:
            raise _too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def _version(request: Request) -> str | None:
    return request.path_params.get("version")


class HttpApi:
    """The endpoints over one InferenceServer (`core`)."""

    def __init__(self, core: Any, max_request_bytes: int):
        self.core = core
        self.limit = max_request_bytes

    async def _json_body(self, request: Request) -> dict[str, Any]:
        """A small JSON object body (repository calls); empty means {}."""
        body = await read_body(request, self.limit)
        if not body.strip():
            return {}
        try:
            document = json.loads(body)
        except (UnicodeDecodeError, ValueError, RecursionError) as err:
            raise ServingError.invalid(f"malformed JSON in the request body: {err}") from None
        if not isinstance(document, dict):
            raise ServingError.invalid("the request body must be a JSON object")
        return document

    # -- health and metadata ------------------------------------------------------------

    async def server_metadata(self, request: Request) -> Response:
        return JSONResponse(self.core.server_metadata())

    async def live(self, request: Request) -> Response:
        return Response(status_code=200 if self.core.live() else 503)

    async def ready(self, request: Request) -> Response:
        return Response(status_code=200 if self.core.ready() else 503)

    async def model_metadata(self, request: Request) -> Response:
        return JSONResponse(self.core.model_metadata(request.path_params["model"],
                                                     _version(request)))

    async def model_ready(self, request: Request) -> Response:
        name, version = request.path_params["model"], _version(request)
        if self.core.model_ready(name, version):
            return Response(status_code=200)
        shown = f"model '{name}'" + (f" version {version}" if version else "")
        return _error(400, f"{shown} is not ready")

    async def model_config(self, request: Request) -> Response:
        return JSONResponse(self.core.model_config(request.path_params["model"],
                                                   _version(request)))

    async def statistics(self, request: Request) -> Response:
        return JSONResponse(self.core.statistics(request.path_params.get("model"),
                                                 _version(request)))

    # -- inference ----------------------------------------------------------------------

    async def infer(self, request: Request) -> Response:
        body = await read_body(request, self.limit)
        encoded_body = request.headers.get("content-encoding")
        size = request.headers.get(HEADER_LENGTH)
        if encoded_body or len(body) > OFF_LOOP_BYTES:  # parse a big body off the loop
            decoded = await asyncio.to_thread(self._decode, body, encoded_body, size)
        else:
            decoded = self._decode(body, encoded_body, size)
        answer = await self.core.infer(request.path_params["model"], _version(request),
                                       decoded)
        encoding = _response_encoding(request.headers.get("accept-encoding"))
        if encoding or sum(a.nbytes for a in answer.outputs.values()) > OFF_LOOP_BYTES:
            payload, headers = await asyncio.to_thread(_encode, answer, decoded, encoding)
        else:
            payload, headers = _encode(answer, decoded, encoding)
        return Response(payload, headers=headers)

    def _decode(self, body: bytes, encoding: str | None, size: str | None) -> InferRequest:
        body = decompress(body, encoding, self.limit)
        return decode_request(body, header_length(size, len(body)))

    # -- repository (Triton's extension, and onnxc's canary calls) ----------------------

    async def repository_index(self, request: Request) -> Response:
        ready = (await self._json_body(request)).get("ready", False)
        if not isinstance(ready, bool):
            raise ServingError.invalid("'ready' must be a boolean")
        return JSONResponse(self.core.repository_index(ready_only=ready))

    async def load(self, request: Request) -> Response:
        name = request.path_params["model"]
        parameters = (await self._json_body(request)).get("parameters", {})
        if not isinstance(parameters, dict):
            raise ServingError.invalid("'parameters' must be a JSON object")
        files = sorted(key for key in parameters if key.startswith("file:"))
        if files:
            raise ServingError.invalid(f"load of '{name}': file overrides ({', '.join(files)})"
                                       f" are not supported; put the files in the repository")
        config = parameters.get("config")
        if config is not None and not isinstance(config, str):
            raise ServingError.invalid(f"load of '{name}': the 'config' parameter must be a "
                                       f"string holding the model configuration as JSON")
        await self.core.load_model(name, config)
        log.info("model loaded", extra={"event": "load", "model": name,
                                        "config_override": config is not None})
        return Response(status_code=200)

    async def unload(self, request: Request) -> Response:
        name = request.path_params["model"]
        await self._json_body(request)  # checked, though unload_dependents has no meaning
        await self.core.unload_model(name)
        log.info("model unloaded", extra={"event": "unload", "model": name})
        return Response(status_code=200)

    async def traffic(self, request: Request) -> Response:
        """POST {"weights": {"1": 90, "2": 10}} sets the canary split; GET shows it."""
        name = request.path_params["model"]
        if request.method == "POST":
            weights = (await self._json_body(request)).get("weights")
            if not isinstance(weights, dict) or not all(
                    isinstance(v, int) and not isinstance(v, bool) for v in weights.values()):
                raise ServingError.invalid(
                    f"traffic of '{name}': the body must be {{\"weights\": {{version: "
                    f"percent, ...}}}} with integer percents")
            self.core.set_traffic(name, {str(k): v for k, v in weights.items()})
            log.info("traffic set", extra={"event": "traffic", "model": name,
                                           "weights": json.dumps(weights)})
        return JSONResponse({"weights": self.core.traffic(name)})

    async def rollback(self, request: Request) -> Response:
        """POST [{"version": "1"}]: all traffic to that version (default: the stable one)."""
        name = request.path_params["model"]
        version = (await self._json_body(request)).get("version")
        if version is not None and not isinstance(version, (str, int)):
            raise ServingError.invalid(f"rollback of '{name}': 'version' must be a string")
        self.core.rollback(name, None if version is None else str(version))
        log.info("rolled back", extra={"event": "rollback", "model": name,
                                       "version": "stable" if version is None else version})
        return JSONResponse({"weights": self.core.traffic(name)})


def _encode(answer: InferResponse, decoded: InferRequest,
            encoding: str | None) -> tuple[bytes, dict[str, str]]:
    """The response body (compressed when `encoding`) and its headers."""
    payload, json_size = encode_response(answer, decoded)
    headers = {"Content-Type": "application/json" if json_size is None
               else "application/octet-stream"}
    if json_size is not None:
        headers[HEADER_LENGTH] = str(json_size)
    if encoding == "gzip":
        payload = gzip.compress(payload, compresslevel=1)
    elif encoding == "deflate":
        payload = zlib.compress(payload, 1)
    if encoding:
        headers["Content-Encoding"] = encoding
    return payload, headers


def _response_encoding(accept: str | None) -> str | None:
    """gzip or deflate when the client lists it (as tritonclient's
    response_compression_algorithm does), else None."""
    if not accept:
        return None
    offered = {part.split(";")[0].strip().lower() for part in accept.split(",")}
    for encoding in ("gzip", "deflate"):
        if encoding in offered:
            return encoding
    return None


async def _http_exception(request: Request, error: Exception) -> Response:
    """Starlette's own refusals (no such route, wrong method) in the protocol's error form."""
    assert isinstance(error, HTTPException)
    detail = {404: f"no endpoint {request.url.path}",
              405: f"{request.method} is not allowed on {request.url.path}"}
    return _error(error.status_code, detail.get(error.status_code, str(error.detail)))


def build_app(core: Any, *, max_request_bytes: int = 64 << 20) -> Starlette:
    """The Starlette app serving `core` over the protocol's HTTP/REST binding."""
    api = HttpApi(core, max_request_bytes)
    model = "/v2/models/{model}"
    versioned = "/v2/models/{model}/versions/{version}"
    repository = "/v2/repository/models/{model}"
    get, post = ["GET"], ["POST"]
    routes = [
        ("/v2", api.server_metadata, get),
        ("/v2/health/live", api.live, get),
        ("/v2/health/ready", api.ready, get),
        ("/v2/models/stats", api.statistics, get),  # before {model} would match "stats"
        ("/v2/repository/index", api.repository_index, post),
        (f"{repository}/load", api.load, post),
        (f"{repository}/unload", api.unload, post),
        (f"{repository}/traffic", api.traffic, ["GET", "POST"]),
        (f"{repository}/rollback", api.rollback, post),
    ]
    for prefix in (model, versioned):
        routes += [
            (prefix, api.model_metadata, get),
            (f"{prefix}/ready", api.model_ready, get),
            (f"{prefix}/config", api.model_config, get),
            (f"{prefix}/stats", api.statistics, get),
            (f"{prefix}/infer", api.infer, post),
        ]
    return Starlette(
        routes=[Route(path, _endpoint(handler), methods=methods)
                for path, handler, methods in routes],
        exception_handlers={HTTPException: _http_exception})
