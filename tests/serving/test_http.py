"""`onnxc serve` over HTTP, end to end: tritonclient.http against a real server process.

Every endpoint, JSON and binary tensors both ways, every datatype kind, versions, the
repository calls, canary traffic and rollback, refusals (each a 400 with the reason,
the server staying up), 8 client threads at once, and a SIGTERM with requests in flight.
Raw requests (http.client) are used only where tritonclient cannot send the bad input.

Tolerances: dense's answers are float32 sums of 4 products plus a bias, compared with a
float64 reference at rtol 1e-5 / atol 1e-5 (a few float32 roundings); heavy's are 8 layers
of 256-term float32 dot products through tanh, at rtol 1e-4 / atol 1e-4 (the summation
order of onnxc's GEMM differs from numpy's). Everything else is exact.
"""

from __future__ import annotations

import gzip
import http.client
import json
import re
import signal
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from tests.serving.conftest import (
    HEAVY_WIDTH,
    ServeProcess,
    dense_weights,
    heavy_weights,
    serve_process,
)

httpclient = pytest.importorskip("tritonclient.http")
from tritonclient.http._utils import _get_inference_request
from tritonclient.utils import InferenceServerException

MAX_REQUEST_BYTES = 8 << 20


@pytest.fixture(scope="module")
def server(serving_repository, tmp_path_factory):
    """This module's server: explicit model control, a request limit of 8 MiB."""
    with serve_process(serving_repository, tmp_path_factory.mktemp("logs"),
                       "--model-control-mode", "explicit", "--load-model", "dense",
                       "--load-model", "types", "--load-model", "heavy",
                       "--max-request-bytes", str(MAX_REQUEST_BYTES)) as served:
        yield served


@pytest.fixture
def client(server):
    return httpclient.InferenceServerClient(server.http_url)


def _dense_answer(x: np.ndarray, version: str) -> np.ndarray:
    weight, bias = dense_weights(int(version))
    return (x.astype(np.float64) @ weight + bias).astype(np.float32)


def _input(name, array, datatype, binary=True):
    tensor = httpclient.InferInput(name, list(array.shape), datatype)
    tensor.set_data_from_numpy(array, binary_data=binary)
    return tensor


def _raw(server: ServeProcess, method: str, path: str, body: bytes | None = None,
         headers: dict | None = None) -> tuple[int, dict, bytes]:
    """(status, headers, body) of one raw HTTP request."""
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def _refused(server, path, body, headers=None, status=400):
    """The server's reason for refusing a raw request with `status`."""
    code, _, payload = _raw(server, "POST", path, body, headers)
    assert code == status, payload
    return json.loads(payload)["error"]


# -- health and metadata ---------------------------------------------------------------


def test_health_and_server_metadata(client):
    assert client.is_server_live() and client.is_server_ready()
    metadata = client.get_server_metadata()
    assert metadata["name"] == "onnxc"
    assert {"model_repository", "model_configuration", "statistics"} <= set(
        metadata["extensions"])


def test_model_metadata_config_and_readiness(client):
    metadata = client.get_model_metadata("dense")
    assert metadata["versions"] == ["1", "2"] and metadata["platform"] == "onnxc"
    assert metadata["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [-1, 4]}]
    assert [o["name"] for o in metadata["outputs"]] == ["y", "r"]
    assert client.get_model_metadata("dense", "1")["name"] == "dense"
    config = client.get_model_config("dense")
    assert config["max_batch_size"] == 8 and config["name"] == "dense"
    types = client.get_model_config("types", "1")  # derived from the model: no batching
    assert types.get("max_batch_size", 0) == 0
    assert [i["name"] for i in types["input"]] == ["n", "flag", "half", "u8"]
    assert client.is_model_ready("dense") and client.is_model_ready("dense", "1")
    assert not client.is_model_ready("dense", "3")
    assert not client.is_model_ready("nonexistent")
    with pytest.raises(InferenceServerException, match="unknown model 'nonexistent'") as caught:
        client.get_model_metadata("nonexistent")
    assert caught.value.status() == "400"
    with pytest.raises(InferenceServerException, match="version 7 is not loaded"):
        client.get_model_config("dense", "7")


def test_responses_not_held_back(client):
    """A response with a body is not held back by Nagle's algorithm waiting for the
    client's delayed ACK (40 ms on Linux, every request): the median of 21 metadata
    requests stays far under it (a plain request here takes about 1 ms)."""
    times = []
    for _ in range(21):
        started = time.perf_counter()
        client.get_model_metadata("dense")
        times.append(time.perf_counter() - started)
    assert sorted(times)[10] < 0.020, times


# -- inference -------------------------------------------------------------------------


@pytest.mark.parametrize("binary_in", [True, False], ids=["in-binary", "in-json"])
@pytest.mark.parametrize("binary_out", [True, False], ids=["out-binary", "out-json"])
@pytest.mark.parametrize("version", ["1", "2"])
def test_infer_dense(client, binary_in, binary_out, version):
    x = np.random.default_rng(int(version)).standard_normal((3, 4)).astype(np.float32)
    result = client.infer("dense", [_input("x", x, "FP32", binary_in)], model_version=version,
                          outputs=[httpclient.InferRequestedOutput("y", binary_out),
                                   httpclient.InferRequestedOutput("r", binary_out)],
                          request_id="req-1")
    response = result.get_response()
    assert (response["model_version"], response["id"]) == (version, "req-1")
    assert ("parameters" in response["outputs"][0]) == binary_out
    np.testing.assert_allclose(result.as_numpy("y"), _dense_answer(x, version),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(result.as_numpy("r"), np.maximum(x, 0))


def test_infer_default_version_and_output_subset(client):
    x = np.ones((1, 4), dtype=np.float32)
    result = client.infer("dense", [_input("x", x, "FP32")],
                          outputs=[httpclient.InferRequestedOutput("r")])
    assert [o["name"] for o in result.get_response()["outputs"]] == ["r"]
    assert result.as_numpy("y") is None
    np.testing.assert_array_equal(result.as_numpy("r"), x)
    assert result.get_response()["model_version"] == "2"  # no traffic set: the newest


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "json"])
def test_infer_every_datatype_kind(client, binary):
    rng = np.random.default_rng(3)
    feeds = {"n": (rng.integers(-2**40, 2**40, (2, 3)), "INT64"),
             "flag": (np.array([True, False, False, True]), "BOOL"),
             "half": (rng.standard_normal((2, 2)).astype(np.float16), "FP16"),
             "u8": (np.array([0, 1, 127, 128, 255], dtype=np.uint8), "UINT8")}
    result = client.infer("types", [_input(k, v, t, binary) for k, (v, t) in feeds.items()],
                          outputs=[httpclient.InferRequestedOutput(n, binary)
                                   for n in ("i", "nb", "h", "u")])
    expected = {"i": feeds["n"][0] + 1, "nb": ~feeds["flag"][0], "h": -feeds["half"][0],
                "u": feeds["u8"][0]}
    for name, want in expected.items():
        got = result.as_numpy(name)
        assert got.dtype == want.dtype, name
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "json"])
def test_infer_bytes(client, binary):
    client.load_model("strings")
    text = np.array(["alpha", "", "λ and more"], dtype=object)
    sent = np.array([t.encode() for t in text], dtype=object)
    result = client.infer("strings", [_input("text", sent, "BYTES", binary)],
                          outputs=[httpclient.InferRequestedOutput("s", binary)])
    got = result.as_numpy("s")
    # tritonclient reads binary BYTES as bytes and JSON ones as str
    assert got.tolist() == (sent if binary else text).tolist()


def test_compressed_request_and_response(client):
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    for algorithm in ("gzip", "deflate"):
        result = client.infer("dense", [_input("x", x, "FP32")], model_version="1",
                              request_compression_algorithm=algorithm,
                              response_compression_algorithm=algorithm)
        np.testing.assert_allclose(result.as_numpy("y"), _dense_answer(x, "1"),
                                   rtol=1e-5, atol=1e-5)


def test_concurrent_clients(server):
    """8 threads, each its own client and inputs: every answer is its own request's."""
    def work(seed: int) -> int:
        client = httpclient.InferenceServerClient(server.http_url)
        rng = np.random.default_rng(seed)
        for i in range(20):
            x = rng.standard_normal((int(rng.integers(1, 5)), 4)).astype(np.float32)
            version = "1" if (seed + i) % 2 else "2"
            result = client.infer("dense", [_input("x", x, "FP32", binary=i % 3 != 0)],
                                  model_version=version)
            np.testing.assert_allclose(result.as_numpy("y"), _dense_answer(x, version),
                                       rtol=1e-5, atol=1e-5)
        return seed

    with ThreadPoolExecutor(8) as pool:
        assert sorted(pool.map(work, range(8))) == list(range(8))


# -- statistics, metrics, repository, canary -------------------------------------------


def test_statistics_and_metrics(client, server):
    x = np.zeros((2, 4), dtype=np.float32)
    before = client.get_inference_statistics("dense", "1")["model_stats"][0]
    client.infer("dense", [_input("x", x, "FP32")], model_version="1")
    after = client.get_inference_statistics("dense", "1")["model_stats"][0]
    assert (after["name"], after["version"]) == ("dense", "1")
    assert after["inference_count"] == before["inference_count"] + 2  # 2 samples
    everything = client.get_inference_statistics()["model_stats"]
    assert {("dense", "1"), ("dense", "2"), ("types", "1")} <= {
        (s["name"], s["version"]) for s in everything}
    assert {s["version"] for s in client.get_inference_statistics("dense")["model_stats"]} \
        == {"1", "2"}
    code, _, text = _raw_url(server.metrics_url)
    assert code == 200
    assert 'nv_inference_count{model="dense",version="1"}' in text


def _raw_url(url: str) -> tuple[int, dict, str]:
    import urllib.request

    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, dict(response.headers), response.read().decode()


def test_repository_index_load_unload(client):
    index = {(m["name"], m.get("version", "")): m for m in client.get_model_repository_index()}
    assert index[("dense", "1")]["state"] == "READY"
    assert any(name == "broken" for name, _ in index)
    with pytest.raises(InferenceServerException, match="failed to load 'broken'") as caught:
        client.load_model("broken")
    assert caught.value.status() == "400"
    assert client.is_server_live() and client.is_model_ready("dense")

    client.unload_model("types")
    assert not client.is_model_ready("types")
    with pytest.raises(InferenceServerException, match="'types' is not loaded"):
        client.infer("types", [_input("u8", np.zeros(5, np.uint8), "UINT8")])
    client.load_model("types")
    assert client.is_model_ready("types")


def test_load_with_config_override(client):
    """A config given with the load request replaces config.pbtxt (Triton's
    parameters.config), here serving only version 1 of dense; restored afterwards."""
    config = client.get_model_config("dense")
    config["version_policy"] = {"specific": {"versions": [1]}}
    try:
        client.load_model("dense", config=json.dumps(config))
        assert client.get_model_metadata("dense")["versions"] == ["1"]
    finally:
        client.load_model("dense")
    assert client.get_model_metadata("dense")["versions"] == ["1", "2"]
    with pytest.raises(InferenceServerException, match="config"):
        client.load_model("dense", config="{not json")


def test_traffic_and_rollback(server, client):
    x = np.ones((1, 4), dtype=np.float32)

    def served_versions(n=30):
        return {client.infer("dense", [_input("x", x, "FP32")]).get_response()["model_version"]
                for _ in range(n)}

    path = "/v2/repository/models/dense"
    try:
        code, _, body = _raw(server, "POST", f"{path}/traffic",
                             json.dumps({"weights": {"1": 100, "2": 0}}).encode())
        assert code == 200 and json.loads(body)["weights"] == {"1": 100, "2": 0}
        assert served_versions() == {"1"}
        code, _, body = _raw(server, "POST", f"{path}/rollback", b'{"version": "2"}')
        assert code == 200 and json.loads(body)["weights"] == {"2": 100}
        assert served_versions() == {"2"}
        code, _, body = _raw(server, "GET", f"{path}/traffic")
        assert code == 200 and json.loads(body)["weights"] == {"2": 100}
        reason = _refused(server, f"{path}/traffic", b'{"weights": {"9": 100}}')
        assert "version 9" in reason
        assert "integer percents" in _refused(server, f"{path}/traffic", b'{"weights": 5}')
    finally:
        _raw(server, "POST", f"{path}/rollback", b'{"version": "2"}')


# -- refusals --------------------------------------------------------------------------


@pytest.mark.parametrize("inputs,reason", [
    ([("wrong", np.zeros((1, 4), np.float32), "FP32")], r"unknown input\(s\) \['wrong'\]"),
    ([("x", np.zeros((1, 5), np.float32), "FP32")], r"shape \[1, 5\], expected \[-1, 4\]"),
    ([("x", np.zeros((1, 4), np.int32), "INT32")], "datatype INT32, expected FP32"),
    ([("x", np.zeros((9, 4), np.float32), "FP32")], r"batch size 9 outside 1..8"),
], ids=["name", "shape", "dtype", "batch"])
def test_bad_inputs_refused(client, inputs, reason):
    with pytest.raises(InferenceServerException, match=reason) as caught:
        client.infer("dense", [_input(n, a, t) for n, a, t in inputs])
    assert caught.value.status() == "400"


def test_unknown_output_model_and_version_refused(client):
    x = _input("x", np.zeros((1, 4), np.float32), "FP32")
    with pytest.raises(InferenceServerException, match=r"unknown requested output\(s\)"):
        client.infer("dense", [x], outputs=[httpclient.InferRequestedOutput("nope")])
    with pytest.raises(InferenceServerException, match="unknown model 'nope'"):
        client.infer("nope", [x])
    with pytest.raises(InferenceServerException, match="version 5 is not loaded"):
        client.infer("dense", [x], model_version="5")


def _binary_body(size_claimed: int, payload: bytes) -> tuple[bytes, dict]:
    header = json.dumps({"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP32",
                                     "parameters": {"binary_data_size": size_claimed}}]})
    return header.encode() + payload, {"Inference-Header-Content-Length": str(len(header))}


INFER = "/v2/models/dense/infer"


@pytest.mark.parametrize("body,headers,reason", [
    (b'{"inputs": [', {}, "malformed JSON"),
    (b"[]", {}, "must be a JSON object"),
    (b'{"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP32", "data": [1, 2]}]}', {},
     r"shape \[1, 4\] holds 4 elements but 'data' has 2"),
    (*_binary_body(12, b"\0" * 12), r"binary_data_size is 12 bytes but shape \[1, 4\] of FP32"),
    (*_binary_body(16, b"\0" * 8), "runs past the 8 bytes"),
    (_binary_body(16, b"\0" * 16)[0], {"Inference-Header-Content-Length": "x1"},
     "must be a non-negative integer"),
    (_binary_body(16, b"\0" * 16)[0], {"Inference-Header-Content-Length": "100000"},
     "the JSON header must fit"),
    (b'{"inputs": []}', {"Content-Encoding": "gzip"}, "not valid gzip"),
], ids=["truncated-json", "not-object", "data-count", "byte-size", "past-end",
        "header-not-int", "header-too-long", "bad-gzip"])
def test_malformed_bodies_refused(server, body, headers, reason):
    assert re.search(reason, _refused(server, INFER, body, headers))


def test_oversized_requests_refused_before_read(server, client):
    """A declared Content-Length over the limit is answered 400 while the client is still
    to send the body; a chunked body (no length) is refused once the count passes it; a
    small gzip body is refused once it inflates past it."""
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    try:
        conn.putrequest("POST", INFER)
        conn.putheader("Content-Length", str(MAX_REQUEST_BYTES + 1))
        conn.endheaders(b"{")  # 1 byte of the promised 8 MiB
        response = conn.getresponse()
        assert response.status == 400
        assert "larger than the limit of 8388608 bytes" in json.loads(response.read())["error"]
    finally:
        conn.close()

    def chunks():
        for _ in range(MAX_REQUEST_BYTES // (1 << 20) + 2):
            yield b" " * (1 << 20)

    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    try:
        try:
            conn.request("POST", INFER, body=chunks(), encode_chunked=True)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server may answer and close before the client stops sending
        response = conn.getresponse()
        assert response.status == 400
    finally:
        conn.close()
    bomb = gzip.compress(b" " * (MAX_REQUEST_BYTES + 1))  # about 8 KiB on the wire
    reason = _refused(server, INFER, bomb, {"Content-Encoding": "gzip"}, status=400)
    assert "inflates to more than the limit of 8388608 bytes" in reason
    assert client.is_server_live()


def test_unknown_endpoint_and_method(server):
    code, _, body = _raw(server, "GET", "/v2/nothing/here")
    assert code == 404 and "no endpoint /v2/nothing/here" in json.loads(body)["error"]
    code, _, body = _raw(server, "GET", INFER)
    assert code == 405 and "GET is not allowed" in json.loads(body)["error"]


def test_server_survives_bad_input(client, server):
    """After every refusal above (run first in this module or not), clients that leave
    mid-body, and a burst of random bytes, the server answers correctly; nothing it was
    sent shows up as a 500 or an error in its log."""
    for _ in range(3):
        with socket.create_connection(("127.0.0.1", server.http_port), timeout=10) as sock:
            sock.sendall(b"POST /v2/models/dense/infer HTTP/1.1\r\nHost: x\r\n"
                         b"Content-Length: 1000\r\n\r\n{\"inputs\": [")
    rng = np.random.default_rng(11)
    for i in range(50):
        body = rng.integers(0, 256, int(rng.integers(0, 300)), dtype=np.uint8).tobytes()
        headers = {"Inference-Header-Content-Length": str(int(rng.integers(0, 400)))} \
            if i % 2 else {}
        code, _, payload = _raw(server, "POST", INFER, body, headers)
        assert code == 400, payload
    assert client.is_server_live() and client.is_server_ready()
    x = np.ones((1, 4), np.float32)
    np.testing.assert_allclose(
        client.infer("dense", [_input("x", x, "FP32")], model_version="1").as_numpy("y"),
        _dense_answer(x, "1"), rtol=1e-5, atol=1e-5)
    assert '"level": "error"' not in server.log()


def test_no_access_log_line_per_request(server, client):
    """Logs are JSON lines about the server's life (load, unload, errors), not one line per
    request (test_server_survives_bad_input alone sent 50)."""
    client.infer("dense", [_input("x", np.zeros((1, 4), np.float32), "FP32")])
    lines = [line for line in server.log().splitlines() if line.startswith("{")]
    assert lines and all(json.loads(line)["level"] for line in lines)
    assert not any("/infer" in line for line in lines)
    assert any(json.loads(line).get("event") == "listening" for line in lines)


# -- graceful shutdown -----------------------------------------------------------------


def _heavy_answer(x: np.ndarray) -> np.ndarray:
    value = x.astype(np.float64)
    for weight in heavy_weights():
        value = np.tanh(value @ weight)
    return value


class HeavyRequests:
    """Slow requests sent from threads, with the moment each body was written: 4 MiB
    bodies cannot be written without the server reading them, so once every one is
    `sent` the server holds them all. Bodies are the ones tritonclient.http builds; sent
    with http.client, whose `request` returns once the body is written (tritonclient gives
    no such moment)."""

    def __init__(self, served: ServeProcess, count: int = 6):
        rows = (4 << 20) // (4 * HEAVY_WIDTH)
        self.inputs = [np.random.default_rng(seed).standard_normal((rows, HEAVY_WIDTH))
                       .astype(np.float32) for seed in range(count)]
        self.port = served.http_port
        self.sent = [threading.Event() for _ in range(count)]
        self.results: list = [None] * count
        self.finished = [0.0] * count
        self.threads = [threading.Thread(target=self._send, args=(i,)) for i in range(count)]
        for thread in self.threads:
            thread.start()
        for event in self.sent:
            assert event.wait(60)

    def _send(self, i: int) -> None:
        body, json_size = _get_inference_request(
            inputs=[_input("x", self.inputs[i], "FP32")], request_id="", outputs=None,
            sequence_id=0, sequence_start=False, sequence_end=False, priority=0,
            timeout=None, custom_parameters=None)
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            conn.request("POST", "/v2/models/heavy/infer", body=body,
                         headers={"Inference-Header-Content-Length": str(json_size)})
            self.sent[i].set()
            response = conn.getresponse()
            payload = response.read()
            self.results[i] = (response.status, response.getheader(
                "Inference-Header-Content-Length"), payload)
        except (http.client.HTTPException, OSError) as error:
            self.sent[i].set()
            self.results[i] = (None, None, repr(error).encode())
        finally:
            self.finished[i] = time.monotonic()
            conn.close()

    def join(self) -> None:
        for thread in self.threads:
            thread.join(120)


def _log_events(served: ServeProcess) -> list[str | None]:
    return [json.loads(line).get("event") for line in served.log().splitlines()
            if line.startswith("{")]


def test_sigterm_drains_requests_in_flight(serving_repository, tmp_path):
    """SIGTERM once 6 slow requests are in the server: each gets its full, correct
    answer, the server exits 0 and stops listening."""
    with serve_process(serving_repository, tmp_path, "--model-control-mode", "explicit",
                       "--load-model", "heavy") as served:
        requests = HeavyRequests(served)
        started = time.monotonic()
        served.process.send_signal(signal.SIGTERM)
        requests.join()
        assert served.process.wait(60) == 0, served.log()
        assert max(requests.finished) > started  # the signal came with requests in flight
        for i, (status, length, payload) in enumerate(requests.results):
            assert status == 200, payload[:200]
            result = httpclient.InferResult.from_response_body(payload, header_length=int(length))
            np.testing.assert_allclose(result.as_numpy("y"), _heavy_answer(requests.inputs[i]),
                                       rtol=1e-4, atol=1e-4)
        events = _log_events(served)
        assert events.index("signal") < events.index("stopped"), events
        with pytest.raises(ConnectionRefusedError):
            _raw(served, "GET", "/v2/health/live")


def test_second_signal_exits_without_draining(serving_repository, tmp_path):
    """A second SIGTERM while requests drain exits 1 at once (not waiting for them)."""
    with serve_process(serving_repository, tmp_path, "--model-control-mode", "explicit",
                       "--load-model", "heavy") as served:
        requests = HeavyRequests(served, count=8)
        served.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 30
        while "signal" not in _log_events(served):  # the first one was handled
            assert time.monotonic() < deadline, served.log()
            time.sleep(0.01)
        served.process.send_signal(signal.SIGTERM)
        assert served.process.wait(60) == 1, served.log()
        requests.join()
        assert "forced_exit" in _log_events(served)
        assert any(status != 200 for status, _, _ in requests.results)

