"""A canary rolled in at 10% and rolled back, under load, against a real `onnxc serve`.

The repository holds one model, `canary` (y = x @ W + b, a symbolic batch, dynamic
batching), with only version 1 at start; the config pins all traffic to version 1
(parameters traffic "1:100", as an operator would before rolling a version in) and serves
the latest two versions. The server runs in poll mode: version 2 is dropped into the
repository (renamed in whole, as a deployment would) and picked up without a restart.
Then 8 client threads (4 tritonclient.http, 4 tritonclient.grpc) send requests without a
version while the canary is set to 10% over HTTP and rolled back over gRPC.

Weights, biases and inputs are small integers, so every product and sum is an integer far
below 2**24 and exact in float32 whatever order the compiled kernel adds in: answers are
compared exactly, and the two versions' answers differ (checked per request).
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
import urllib.request
from dataclasses import dataclass

import numpy as np
import onnx
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from onnx import TensorProto, helper, numpy_helper
from tritonclient.grpc import service_pb2, service_pb2_grpc

from tests.serving.conftest import OPSET, ServeProcess, serve_process

MODEL = "canary"
THREADS = 8
STABLE_REQUESTS = 200
"""answered before the canary: all must be version 1 (traffic 1:100 with both loaded)"""
CANARY_REQUESTS = 1500
"""answered with the canary on; the binomial bound below is about 3 points at this n"""
AFTER_ROLLBACK_REQUESTS = 400
CANARY_PERCENT = 10
FALSE_FAILURE = 1e-6
"""two-sided probability that a correct 10% split falls outside the accepted interval"""
PHASE_TIMEOUT_S = 120.0
"""the longest a phase may take on a shared 2-core machine before the test fails"""

CONFIG = """
name: "canary"
max_batch_size: 8
input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "y" data_type: TYPE_FP32 dims: [ 3 ] } ]
version_policy: { latest { num_versions: 2 } }
dynamic_batching { max_queue_delay_microseconds: 500 }
parameters { key: "traffic" value: { string_value: "1:100" } }
"""


def weights(version: int) -> tuple[np.ndarray, np.ndarray]:
    """Version `version`'s seeded integer weights (exact in float32)."""
    rng = np.random.default_rng(200 + version)
    return (rng.integers(-4, 5, (4, 3)).astype(np.float32),
            rng.integers(-20, 21, 3).astype(np.float32))


def answer(x: np.ndarray, version: int) -> np.ndarray:
    weight, bias = weights(version)
    return x @ weight + bias


def model(version: int) -> onnx.ModelProto:
    weight, bias = weights(version)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["xw"]),
         helper.make_node("Add", ["xw", "b"], ["y"])],
        MODEL,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])],
        [numpy_helper.from_array(weight, "W"), numpy_helper.from_array(bias, "b")])
    built = helper.make_model(graph, opset_imports=OPSET)
    onnx.checker.check_model(built)
    return built


def binomial_interval(n: int, p: float, alpha: float) -> tuple[int, int]:
    """The central interval [lo, hi] of Binomial(n, p) outside which at most `alpha`
    of the probability lies (alpha/2 each side), from the exact pmf."""
    log_pmf = [math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
               + k * math.log(p) + (n - k) * math.log1p(-p) for k in range(n + 1)]
    pmf = [math.exp(v) for v in log_pmf]
    lo, tail = 0, 0.0
    while tail + pmf[lo] <= alpha / 2:
        tail += pmf[lo]
        lo += 1
    hi, tail = n, 0.0
    while tail + pmf[hi] <= alpha / 2:
        tail += pmf[hi]
        hi -= 1
    return lo, hi


@dataclass
class Served:
    protocol: str
    started: float
    ended: float
    version: str | None
    rows: int
    error: str | None = None
    ambiguous: bool = False
    """both versions give this input the same answer (the version check is vacuous)"""


class Load:
    """THREADS client threads sending `canary` requests (no version) until stopped."""

    def __init__(self, server: ServeProcess):
        self.server = server
        self.records: list[Served] = []
        self.lock = threading.Condition()
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._run, args=(i,), daemon=True)
                        for i in range(THREADS)]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def finish(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(60)
        assert not any(thread.is_alive() for thread in self.threads)

    def wait_for(self, count: int) -> None:
        """Until `count` requests have been answered in all (or the phase times out)."""
        with self.lock:
            if not self.lock.wait_for(lambda: len(self.records) >= count, PHASE_TIMEOUT_S):
                pytest.fail(f"only {len(self.records)} of {count} requests answered in "
                            f"{PHASE_TIMEOUT_S} s")

    def _run(self, index: int) -> None:
        protocol = "http" if index < THREADS // 2 else "grpc"
        module = httpclient if protocol == "http" else grpcclient
        url = self.server.http_url if protocol == "http" else self.server.grpc_url
        client = module.InferenceServerClient(url)
        rng = np.random.default_rng(index)
        try:
            while not self.stop.is_set():
                rows = int(rng.integers(1, 4))
                x = rng.integers(-8, 9, (rows, 4)).astype(np.float32)
                tensor = module.InferInput("x", [rows, 4], "FP32")
                tensor.set_data_from_numpy(x)
                started = time.monotonic()
                try:
                    result = client.infer(MODEL, [tensor])
                except Exception as error:  # noqa: BLE001 - recorded: the test fails on any
                    record = Served(protocol, started, time.monotonic(), None, rows,
                                    f"{type(error).__name__}: {error}")
                else:
                    ended = time.monotonic()
                    response = result.get_response()
                    version = (response["model_version"] if protocol == "http"
                               else response.model_version)
                    record = Served(protocol, started, ended, version, rows,
                                    _wrong_answer(x, version, result.as_numpy("y")),
                                    np.array_equal(answer(x, 1), answer(x, 2)))
                with self.lock:
                    self.records.append(record)
                    self.lock.notify_all()
        finally:
            client.close()


def _wrong_answer(x: np.ndarray, version: str, y: np.ndarray | None) -> str | None:
    """None when `y` is exactly version `version`'s answer to `x`, else what is wrong."""
    if version not in ("1", "2"):
        return f"served by version {version!r}"
    expected = answer(x, int(version))
    if y is None or y.shape != expected.shape or not np.array_equal(y, expected):
        return f"version {version} answered {y!r}, expected {expected!r}"
    return None


@pytest.fixture(scope="module")
def canary_server(tmp_path_factory):
    """`onnxc serve` in poll mode over a repository with `canary` version 1 only; the
    staging folder (same file system) is where version 2 is written before its rename."""
    root = tmp_path_factory.mktemp("canary")
    repository, staging = root / "repository", root / "staging"
    folder = repository / MODEL
    (folder / "1").mkdir(parents=True)
    onnx.save(model(1), str(folder / "1" / "model.onnx"))
    (folder / "config.pbtxt").write_text(CONFIG)
    (staging / "2").mkdir(parents=True)
    onnx.save(model(2), str(staging / "2" / "model.onnx"))
    with serve_process(repository, root, "--model-control-mode", "poll",
                       "--poll-interval", "0.2") as served:
        yield served, folder, staging


def _http(server: ServeProcess, method: str, path: str, body: dict | None = None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"http://{server.http_url}{path}", data=data,
                                     method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def _wait_ready(server: ServeProcess, version: int) -> None:
    deadline = time.monotonic() + PHASE_TIMEOUT_S
    path = f"/v2/models/{MODEL}/versions/{version}/ready"
    while _http(server, "GET", path)[0] != 200:
        assert server.process.poll() is None, server.log()
        assert time.monotonic() < deadline, f"version {version} not loaded:\n{server.log()}"
        time.sleep(0.05)  # the poll interval is 0.2 s: no event reaches this process


def test_canary_at_10_percent_then_rollback_under_load(canary_server):
    """No request is lost or fails; each is answered exactly by the version it names; the
    canary share is within the exact binomial interval of Binomial(n, 0.1) holding all but
    FALSE_FAILURE (1e-6) of the probability (each routing is an independent seeded draw);
    every request started after the rollback returned is version 1; the per-version
    statistics count exactly what the clients saw."""
    server, folder, staging = canary_server
    assert _http(server, "GET", f"/v2/models/{MODEL}/versions/2/ready")[0] == 400
    os.rename(staging / "2", folder / "2")  # whole, as a deployment drops a version in
    _wait_ready(server, 2)
    status, body = _http(server, "GET", f"/v2/repository/models/{MODEL}/traffic")
    assert (status, json.loads(body)) == (200, {"weights": {"1": 100}})

    load = Load(server)
    load.start()
    try:
        load.wait_for(STABLE_REQUESTS)
        status, body = _http(server, "POST", f"/v2/repository/models/{MODEL}/traffic",
                             {"weights": {"1": 100 - CANARY_PERCENT, "2": CANARY_PERCENT}})
        canary_on = time.monotonic()
        assert (status, json.loads(body)) == (200, {"weights": {"1": 90, "2": 10}})
        with load.lock:
            answered = len(load.records)
        load.wait_for(answered + CANARY_REQUESTS + THREADS)

        channel = grpcclient.grpc.insecure_channel(server.grpc_url)
        request = service_pb2.RepositoryModelLoadRequest(model_name=MODEL)
        request.parameters["rollback"].string_param = ""  # the stable version: 1
        rollback_sent = time.monotonic()
        service_pb2_grpc.GRPCInferenceServiceStub(channel).RepositoryModelLoad(request)
        rollback_done = time.monotonic()
        channel.close()
        with load.lock:
            answered = len(load.records)
        load.wait_for(answered + AFTER_ROLLBACK_REQUESTS + THREADS)
    finally:
        load.finish()

    records = load.records
    failures = [r for r in records if r.error is not None]
    assert not failures, f"{len(failures)} of {len(records)} failed, e.g. {failures[:3]}"
    assert {r.protocol for r in records} == {"http", "grpc"}
    assert sum(r.ambiguous for r in records) <= len(records) // 100
    before = [r for r in records if r.ended < canary_on]
    canary = [r for r in records if r.started > canary_on and r.ended < rollback_sent]
    after = [r for r in records if r.started > rollback_done]
    assert {r.version for r in before} == {"1"}, "served before the canary"
    assert len(after) >= AFTER_ROLLBACK_REQUESTS
    assert {r.version for r in after} == {"1"}, "served after the rollback returned"
    n = len(canary)
    assert n >= CANARY_REQUESTS
    k = sum(r.version == "2" for r in canary)
    lo, hi = binomial_interval(n, CANARY_PERCENT / 100, FALSE_FAILURE)
    assert lo <= k <= hi, f"version 2 served {k} of {n} canary requests, not in [{lo}, {hi}]"
    print(f"\n{len(records)} requests; canary: version 2 served {k} of {n} "
          f"({100 * k / n:.1f}%, accepted [{lo}, {hi}]); {len(after)} after rollback")

    client = httpclient.InferenceServerClient(server.http_url)
    try:
        for version in ("1", "2"):
            stats = client.get_inference_statistics(MODEL, version)["model_stats"]
            assert [s["version"] for s in stats] == [version]
            served = [r for r in records if r.version == version]
            success = stats[0]["inference_stats"]["success"]["count"]
            assert success == len(served), f"version {version} statistics"
            assert stats[0]["inference_stats"]["fail"]["count"] == 0
            assert stats[0]["inference_count"] == sum(r.rows for r in served)
    finally:
        client.close()
    status, body = _http(server, "GET", f"/v2/repository/models/{MODEL}/traffic")
    assert (status, json.loads(body)) == (200, {"weights": {"1": 100}})


def test_binomial_interval():
    """The bound itself: Binomial(1500, 0.1) has mean 150 and sd 11.6; 1e-6 two-sided is
    about 4.9 sd, so the interval is near [95, 210] and excludes 0% and 20%."""
    lo, hi = binomial_interval(1500, 0.1, 1e-6)
    assert 90 <= lo <= 100 and 200 <= hi <= 215
    assert binomial_interval(10, 0.5, 0.5)[0] > 0


def test_canary_version_removed_under_load(canary_server):
    """The canary's folder taken out of the repository (poll mode) while it takes half the
    traffic: the requests it was running finish on it, none is lost or fails, and every
    request started once it is gone is served by version 1."""
    server, folder, staging = canary_server
    if not (folder / "2").exists():
        os.rename(staging / "2", folder / "2")
    _wait_ready(server, 2)
    status, _ = _http(server, "POST", f"/v2/repository/models/{MODEL}/traffic",
                      {"weights": {"1": 50, "2": 50}})
    assert status == 200
    load = Load(server)
    load.start()
    try:
        load.wait_for(STABLE_REQUESTS)
        os.rename(folder / "2", staging / "2")
        deadline = time.monotonic() + PHASE_TIMEOUT_S
        while _http(server, "GET", f"/v2/models/{MODEL}/versions/2/ready")[0] == 200:
            assert time.monotonic() < deadline, f"version 2 still served:\n{server.log()}"
            time.sleep(0.05)  # the poll interval is 0.2 s: no event reaches this process
        gone = time.monotonic()
        with load.lock:
            answered = len(load.records)
        load.wait_for(answered + AFTER_ROLLBACK_REQUESTS + THREADS)
    finally:
        load.finish()
    records = load.records
    failures = [r for r in records if r.error is not None]
    assert not failures, f"{len(failures)} of {len(records)} failed, e.g. {failures[:3]}"
    assert any(r.version == "2" for r in records if r.ended < gone)
    after = [r for r in records if r.started > gone]
    assert len(after) >= AFTER_ROLLBACK_REQUESTS and {r.version for r in after} == {"1"}
    status, body = _http(server, "GET", f"/v2/repository/models/{MODEL}/traffic")
    assert status == 200 and set(json.loads(body)["weights"]) == {"1"}
