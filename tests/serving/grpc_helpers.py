"""Shared by the gRPC tests: a grpc.aio server on its own thread and loop, refusal checks."""

from __future__ import annotations

import asyncio
import socket
import threading

import grpc
import numpy as np
import pytest
from tritonclient.grpc import service_pb2
from tritonclient.utils import InferenceServerException

from onnxc.serving.errors import ServingError
from onnxc.serving.grpc_service import build_grpc_server

UNKNOWN_MODEL = grpc.StatusCode[ServingError.not_found("").grpc_code]
"""the code of an unknown model or version (errors.py's mapping; Triton's core says
INVALID_ARGUMENT, "Request for unknown model: 'm' is not found")"""


class ServerThread:
    """build_grpc_server over the core `make_core()` builds, both on this thread's own loop
    (the core's asyncio objects belong to the loop that serves it)."""

    def __init__(self, make_core, max_message_bytes: int = 1 << 20):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"127.0.0.1:{self.port}"
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

        async def start():
            core = await make_core()
            server = build_grpc_server(core, self.url, max_message_bytes=max_message_bytes)
            await server.start()
            return core, server

        try:
            self.core, self.server = self.call(start())
        except BaseException:
            self._stop_loop()
            raise

    def call(self, coroutine, timeout: float = 120):
        """Run `coroutine` on the server's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=timeout)

    def stop(self) -> None:
        self.call(self.server.stop(None))
        if hasattr(self.core, "shutdown"):
            self.call(self.core.shutdown(drain_timeout_s=5))
        self._stop_loop()

    def _stop_loop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=30)
        self.loop.close()


def refused(call, code: grpc.StatusCode, *reason: str) -> str:
    """The message of the error `call()` ends in, checked to have `code` and each `reason`."""
    with pytest.raises((InferenceServerException, grpc.RpcError)) as info:
        call()
    error = info.value
    if isinstance(error, grpc.RpcError):
        status, message = str(error.code()), error.details()
    else:
        status, message = error.status(), error.message()
    assert status == str(code), message
    for part in reason:
        assert part in message, message
    return message


def raw_request(model, name, datatype, shape, raw, **extra):
    """A one-input ModelInferRequest with its tensor in raw_input_contents."""
    request = service_pb2.ModelInferRequest(model_name=model, **extra)
    request.inputs.add(name=name, datatype=datatype, shape=shape)
    request.raw_input_contents.append(raw)
    return request


CLIENT_SIDE = {grpc.StatusCode.INVALID_ARGUMENT, UNKNOWN_MODEL,
               grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.UNAVAILABLE}
"""the statuses a bad request may end in (never INTERNAL or UNKNOWN)"""
_DATATYPES = ["FP32", "INT32", "INT8", "BOOL", "FP16", "UINT64", "BYTES", "FP99", ""]
_FIELDS = ["fp32_contents", "int_contents", "bool_contents", "bytes_contents",
           "uint64_contents", "int64_contents"]


def random_request(rng: np.random.Generator, models: list[str], names: list[str]):
    """A seeded random, almost always malformed ModelInferRequest: model and input names
    from `models` / `names` or empty, random datatypes (some unknown), shapes (negative,
    huge), raw bytes or typed contents of random kinds and counts, requested outputs."""
    request = service_pb2.ModelInferRequest(
        model_name=str(rng.choice([*models, "nope", ""])),
        model_version=str(rng.choice(["", "1", "2", "x", "-1"])))
    raw = rng.random() < 0.5
    for _ in range(int(rng.integers(0, 3))):
        shape = [int(d) for d in rng.choice([-1, 0, 1, 2, 3, 2**40], rng.integers(0, 4))]
        tensor = request.inputs.add(name=str(rng.choice([*names, ""])),
                                    datatype=str(rng.choice(_DATATYPES)), shape=shape)
        if raw:
            request.raw_input_contents.append(rng.bytes(int(rng.integers(0, 40))))
            continue
        field = getattr(tensor.contents, str(rng.choice(_FIELDS)))
        count = int(rng.integers(0, 8))
        if field is tensor.contents.bytes_contents:
            field.extend(rng.bytes(3) for _ in range(count))
        elif field is tensor.contents.bool_contents:
            field.extend(bool(b) for b in rng.integers(0, 2, count))
        elif field is tensor.contents.fp32_contents:
            field.extend(rng.standard_normal(count).tolist())
        else:
            field.extend(int(v) for v in rng.integers(0, 2**31, count))
    if rng.random() < 0.2:
        request.outputs.add(name=str(rng.choice(["y", "z"])))
    return request
