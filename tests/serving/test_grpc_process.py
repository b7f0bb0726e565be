"""gRPC against a real `onnxc serve` process (conftest.py's `server`), through tritonclient.grpc.

What only the whole process shows: the launcher serves gRPC next to HTTP on the port it was
given, every datatype crosses the wire exactly, the dynamic batcher answers each of 8
threads its own rows, the health service reports readiness, and SIGTERM lets gRPC requests
in flight finish. `dense` answers are compared with numpy in float32 at rtol 1e-5 / atol 1e-6:
sums of 4 products that the compiled kernel may add in another order; the rest are exact.
"""

from __future__ import annotations

import queue
import threading

import grpc
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from tritonclient.grpc import service_pb2_grpc

from onnxc.serving.grpc_service import health_service
from tests.serving.conftest import HEAVY_WIDTH, dense_weights, serve_process
from tests.serving.grpc_helpers import CLIENT_SIDE, UNKNOWN_MODEL, random_request, refused

TOL = {"rtol": 1e-5, "atol": 1e-6}


@pytest.fixture
def client(server):
    with grpcclient.InferenceServerClient(server.grpc_url) as client:
        yield client


def _input(name: str, array: np.ndarray, datatype: str) -> grpcclient.InferInput:
    tensor = grpcclient.InferInput(name, list(array.shape), datatype)
    tensor.set_data_from_numpy(array)
    return tensor


def _dense(x: np.ndarray, version: int) -> np.ndarray:
    weight, bias = dense_weights(version)
    return x @ weight + bias


def test_process_serves_grpc_with_health(client, server):
    assert client.is_server_live() and client.is_server_ready()
    assert client.get_model_metadata("dense", as_json=True)["versions"] == ["1", "2"]
    messages, services = health_service()
    with grpc.insecure_channel(server.grpc_url) as channel:
        status = services.HealthStub(channel).Check(messages.HealthCheckRequest()).status
    assert status == messages.HealthCheckResponse.SERVING


def test_every_datatype_crosses_exactly(client):
    rng = np.random.default_rng(7)
    n = rng.integers(-(2**40), 2**40, (2, 3), dtype=np.int64)
    flag = np.array([True, False, False, True])
    half = rng.standard_normal((2, 2)).astype(np.float16)
    u8 = np.array([0, 1, 127, 128, 255], np.uint8)
    inputs = [_input("n", n, "INT64"), _input("flag", flag, "BOOL"),
              _input("half", half, "FP16"), _input("u8", u8, "UINT8")]
    result = client.infer("types", inputs)
    np.testing.assert_array_equal(result.as_numpy("i"), n + 1)
    np.testing.assert_array_equal(result.as_numpy("nb"), ~flag)
    np.testing.assert_array_equal(result.as_numpy("h"), -half)
    np.testing.assert_array_equal(result.as_numpy("u"), u8)
    assert {o.name: o.datatype for o in result.get_response().outputs} == \
        {"i": "INT64", "nb": "BOOL", "h": "FP16", "u": "UINT8"}
    client.load_model("strings")
    text = np.array([b"onnxc", "gr\xfc\xdfe".encode(), b"", b"nul\x00inside"], dtype=object)
    strings = client.infer("strings", [_input("text", text, "BYTES")])
    assert strings.as_numpy("s").tolist() == text.tolist()
    latin1 = np.array([b"\xff"], dtype=object)
    refused(lambda: client.infer("strings", [_input("text", latin1, "BYTES")]),
            grpc.StatusCode.INVALID_ARGUMENT, "input 'text'", "UTF-8")


def test_versions_and_refusals(client):
    x = np.random.default_rng(3).standard_normal((5, 4)).astype(np.float32)
    for version in (1, 2):
        result = client.infer("dense", [_input("x", x, "FP32")], model_version=str(version),
                              outputs=[grpcclient.InferRequestedOutput("y")])
        np.testing.assert_allclose(result.as_numpy("y"), _dense(x, version), **TOL)
        assert result.as_numpy("r") is None  # not requested
    refused(lambda: client.infer("dense", [_input("x", x[:, :3].copy(), "FP32")]),
            grpc.StatusCode.INVALID_ARGUMENT, "input 'x'", "shape")
    refused(lambda: client.infer("missing", [_input("x", x, "FP32")]),
            UNKNOWN_MODEL, "'missing'")
    refused(lambda: client.load_model("broken"), grpc.StatusCode.INVALID_ARGUMENT,
            "failed to load 'broken'")
    assert client.is_server_live()


def test_batched_answers_from_8_threads(server):
    """Requests from 8 threads meet in the dynamic batcher; each gets its own rows back."""
    errors = []

    def worker(index: int) -> None:
        rng = np.random.default_rng(index)
        with grpcclient.InferenceServerClient(server.grpc_url) as own:
            for _ in range(15):
                x = rng.standard_normal((int(rng.integers(1, 4)), 4)).astype(np.float32)
                result = own.infer("dense", [_input("x", x, "FP32")], model_version="2")
                if not np.allclose(result.as_numpy("y"), _dense(x, 2), **TOL) or \
                        not np.array_equal(result.as_numpy("r"), np.maximum(x, 0)):
                    errors.append(index)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors and not any(thread.is_alive() for thread in threads)


def test_stream(client):
    answers: queue.Queue = queue.Queue()
    client.start_stream(callback=lambda result, error: answers.put((result, error)))
    xs = {str(i): np.full((1, 4), i - 2, np.float32) for i in range(4)}
    try:
        for key, x in xs.items():
            client.async_stream_infer("dense", [_input("x", x, "FP32")], request_id=key)
        client.async_stream_infer("dense", [_input("x", xs["0"].astype(np.float64), "FP64")],
                                  request_id="bad")
        got, refusals = {}, []
        for _ in range(5):
            result, error = answers.get(timeout=60)
            if error is None:
                got[result.get_response().id] = result.as_numpy("r")
            else:
                refusals.append(error.message())
    finally:
        client.stop_stream()
    assert sorted(got) == sorted(xs)
    for key, r in got.items():
        np.testing.assert_array_equal(r, np.maximum(xs[key], 0))
    assert len(refusals) == 1 and "FP64" in refusals[0]


def test_sigterm_lets_grpc_requests_in_flight_finish(serving_repository, tmp_path):
    """4 slow requests on 2 instances: SIGTERM once the first is answered (the other three
    are then running or queued); all 4 are answered."""
    with serve_process(serving_repository, tmp_path, "--model-control-mode", "explicit",
                       "--load-model", "heavy") as served:
        x = np.random.default_rng(1).standard_normal((20000, HEAVY_WIDTH)).astype(np.float32)
        answers: queue.Queue = queue.Queue()
        with grpcclient.InferenceServerClient(served.grpc_url) as client:
            for _ in range(4):
                client.async_infer("heavy", [_input("x", x, "FP32")],
                                   callback=lambda result, error: answers.put((result, error)))
            results = [answers.get(timeout=120)]
            assert served.stop() == 0
            results += [answers.get(timeout=120) for _ in range(3)]
    assert [error for _, error in results] == [None] * 4
    assert all(result.as_numpy("y").shape == x.shape for result, _ in results)


def _rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


@pytest.mark.slow
def test_10000_random_bad_requests_leave_memory_flat(server):
    """10,000 seeded random malformed requests from 4 threads (after 2,000 to warm the
    allocator and protobuf's caches): every one refused with a client-side status, the
    server still answers, and its resident memory grows by less than 8 MiB (under 1 KiB a
    request: a leak of anything a request carries would show; below that is allocator noise)."""
    rounds = {"warm": 2000, "measured": 10000}
    unexpected = []

    def send(seed: int, count: int) -> None:
        rng = np.random.default_rng(seed)
        with grpc.insecure_channel(server.grpc_url) as channel:
            stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
            for _ in range(count):
                request = random_request(rng, ["dense", "types"], ["x", "n", "flag"])
                try:
                    stub.ModelInfer(request, timeout=60)
                except grpc.RpcError as error:
                    if error.code() not in CLIENT_SIDE:
                        unexpected.append((error.code(), error.details()))

    rss = {}
    for index, (phase, count) in enumerate(rounds.items()):
        threads = [threading.Thread(target=send, args=(10 * index + t, count // 4))
                   for t in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=600)
        rss[phase] = _rss_bytes(server.process.pid)
    assert not unexpected, unexpected[:5]
    assert rss["measured"] - rss["warm"] < 8 << 20, rss
    x = np.ones((1, 4), np.float32)
    with grpcclient.InferenceServerClient(server.grpc_url) as client:
        result = client.infer("dense", [_input("x", x, "FP32")], model_version="1")
    np.testing.assert_allclose(result.as_numpy("y"), _dense(x, 1), **TOL)
