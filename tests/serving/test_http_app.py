"""http_app over a fake core, called as an ASGI app in-process: what the real core
cannot be made to do on demand (raise a bug, answer UNAVAILABLE) and how routes map to
core calls. End-to-end behaviour is in test_http.py against a real server."""

from __future__ import annotations

import asyncio
import json
import logging

import numpy as np

from onnxc.serving.errors import ServingError
from onnxc.serving.http_app import build_app
from onnxc.serving.messages import InferResponse


class FakeCore:
    """Records each call; `infer` does what `behaviour` says."""

    def __init__(self, behaviour):
        self.behaviour = behaviour
        self.calls: list[tuple] = []

    async def infer(self, name, version, request):
        self.calls.append(("infer", name, version))
        return self.behaviour(name, version, request)

    def statistics(self, name=None, version=None):
        self.calls.append(("statistics", name, version))
        return {"model_stats": []}

    def model_metadata(self, name, version=None):
        self.calls.append(("model_metadata", name, version))
        return {"name": name}

    def set_traffic(self, name, weights):
        self.calls.append(("set_traffic", name, weights))

    def traffic(self, name):
        return {"1": 100}


def _call(app, method: str, path: str, body: bytes = b"", headers=(),
          chunks: list[bytes] | None = None) -> tuple[int, bytes]:
    """One request through the ASGI app: (status, body); with `chunks`, a body of those
    pieces and no Content-Length (chunked transfer)."""
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": method, "path": path, "raw_path": path.encode(), "query_string": b"",
             "root_path": "", "scheme": "http", "server": ("127.0.0.1", 80),
             "client": ("127.0.0.1", 1234),
             "headers": [*([] if chunks else [(b"content-length", str(len(body)).encode())]),
                         *((k.lower().encode(), v.encode()) for k, v in headers)]}
    pieces = chunks or [body]
    messages = [{"type": "http.request", "body": piece, "more_body": i < len(pieces) - 1}
                for i, piece in enumerate(pieces)]
    sent: list[dict] = []

    async def receive():
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    return status, b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


BODY = json.dumps({"inputs": [{"name": "x", "shape": [1], "datatype": "FP32",
                               "data": [1.0]}]}).encode()


def _raises(error):
    def behaviour(*_):
        raise error
    return behaviour


def test_bug_in_core_is_a_logged_500_without_details(caplog):
    app = build_app(FakeCore(_raises(RuntimeError("secret detail"))))
    with caplog.at_level(logging.ERROR, logger="onnxc.serving.http"):
        status, body = _call(app, "POST", "/v2/models/m/infer", BODY)
    assert status == 500
    assert json.loads(body) == {"error": "internal server error (logged by the server)"}
    assert [str(r.exc_info[1]) for r in caplog.records if r.exc_info] == ["secret detail"]


def test_serving_errors_keep_their_status():
    app = build_app(FakeCore(_raises(ServingError.unavailable("queue of 'm' is full"))))
    status, body = _call(app, "POST", "/v2/models/m/versions/3/infer", BODY)
    assert (status, json.loads(body)) == (503, {"error": "queue of 'm' is full"})


def test_routes_reach_the_core_with_name_and_version():
    core = FakeCore(lambda name, version, request: InferResponse(
        name, version or "1", {"y": request.inputs["x"] * 2}))
    app = build_app(core)
    status, body = _call(app, "POST", "/v2/models/m/versions/3/infer", BODY)
    assert status == 200 and json.loads(body)["outputs"][0]["data"] == [2.0]
    assert _call(app, "GET", "/v2/models/stats")[0] == 200
    assert _call(app, "GET", "/v2/models/stats/versions/2")[0] == 200  # a model named "stats"
    assert _call(app, "GET", "/v2/models/m/versions/2/stats")[0] == 200
    status, body = _call(app, "POST", "/v2/repository/models/m/traffic",
                         b'{"weights": {"1": 90, "2": 10}}')
    assert status == 200 and json.loads(body) == {"weights": {"1": 100}}
    assert core.calls == [("infer", "m", "3"), ("statistics", None, None),
                          ("model_metadata", "stats", "2"), ("statistics", "m", "2"),
                          ("set_traffic", "m", {"1": 90, "2": 10})]


def test_load_refuses_file_overrides_and_bad_config():
    app = build_app(FakeCore(None))
    status, body = _call(app, "POST", "/v2/repository/models/m/load",
                         b'{"parameters": {"file:1/model.onnx": "AAAA"}}')
    assert status == 400 and "file overrides (file:1/model.onnx)" in json.loads(body)["error"]
    status, body = _call(app, "POST", "/v2/repository/models/m/load",
                         b'{"parameters": {"config": {"name": "m"}}}')
    assert status == 400 and "must be a string" in json.loads(body)["error"]


def test_request_limit_on_length_and_on_bytes_received():
    """Refused on a Content-Length over the limit, and without one once the chunks
    received pass it."""
    app = build_app(FakeCore(None), max_request_bytes=16)
    status, body = _call(app, "POST", "/v2/models/m/infer", np.zeros(17, np.uint8).tobytes())
    assert status == 400 and "limit of 16 bytes" in json.loads(body)["error"]
    chunks = [b"{" * 10, b" " * 10, b"more"]
    status, body = _call(app, "POST", "/v2/models/m/infer", chunks=chunks)
    assert status == 400 and "limit of 16 bytes" in json.loads(body)["error"]
    assert _call(app, "POST", "/v2/models/m/infer", chunks=[b"{", b"}"])[0] == 400  # no inputs
