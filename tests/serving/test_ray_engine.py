"""`onnxc serve --engine ray`: a real server process on Ray Serve, through tritonclient.

One module-scoped `onnxc serve REPO --engine ray --replicas 2` (Ray starts once: ~20-40 s
and ~1.5 GB on this machine) over a repository of `dense` versions 1 and 2 (batched,
dynamic_batching) and a model that fails to load. Answers are compared with the same
model compiled and run by onnxc in this process: bit for bit, since the replica runs the
same compiled code and a batch of a batch-separable model gives each request the bytes it
gets alone (serving/batch_execution.py). The last test stops the server and checks that
Ray went with it. Skipped when Ray Serve is not installed (it is an optional extra).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("ray.serve")
tritonhttp = pytest.importorskip("tritonclient.http")
tritongrpc = pytest.importorskip("tritonclient.grpc")

from tritonclient.utils import InferenceServerException

import onnxc
from onnxc.errors import InvalidArgumentError
from onnxc.serving import ray_engine
from onnxc.serving.errors import ServingError
from onnxc.serving.ray_ingress import REPLICA_PARAMETER
from onnxc.serving.ray_replica import ModelVersionReplica, VersionSpec
from tests.serving.conftest import DENSE_CONFIG, _dense, _save, serve_process
from tests.serving.core_models import gather_model

STOP_TIMEOUT_S = 60.0


def _write_repository(root: Path) -> Path:
    for version in (1, 2):
        _save(_dense(version), root / "dense" / str(version) / "model.onnx")
    (root / "dense" / "config.pbtxt").write_text(DENSE_CONFIG)
    (root / "broken" / "1").mkdir(parents=True)
    (root / "broken" / "1" / "model.onnx").write_bytes(b"this is not an onnx model")
    return root


@pytest.fixture(scope="module")
def ray_server(tmp_path_factory):
    repository = _write_repository(tmp_path_factory.mktemp("ray_repository"))
    with serve_process(repository, tmp_path_factory.mktemp("ray_logs"),
                       "--engine", "ray", "--replicas", "2") as served:
        served.repository = repository
        yield served


def _local(repository: Path, version: int, x: np.ndarray) -> dict[str, np.ndarray]:
    model = onnxc.compile(repository / "dense" / str(version) / "model.onnx", quiet=True)
    return dict(zip(model.output_names, model.run(None, {"x": x})))


def _http_infer(url: str, x: np.ndarray, version: str = "", binary: bool = True):
    client = tritonhttp.InferenceServerClient(url)
    tensor = tritonhttp.InferInput("x", list(x.shape), "FP32")
    tensor.set_data_from_numpy(x, binary_data=binary)
    return client.infer("dense", [tensor], model_version=version)


def test_http_infer_equals_onnxc_run(ray_server):
    """Each version answers what onnxc computes locally (JSON and binary tensors)."""
    x = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    for version in (1, 2):
        expected = _local(ray_server.repository, version, x)
        for binary in (True, False):
            result = _http_infer(ray_server.http_url, x, str(version), binary)
            assert result.get_response()["model_version"] == str(version)
            for name in ("y", "r"):
                np.testing.assert_array_equal(result.as_numpy(name), expected[name])


def test_grpc_infer_in_the_ingress(ray_server):
    """grpc_service runs in the ingress process: the same answer over gRPC."""
    x = np.random.default_rng(2).standard_normal((2, 4)).astype(np.float32)
    client = tritongrpc.InferenceServerClient(ray_server.grpc_url)
    tensor = tritongrpc.InferInput("x", [2, 4], "FP32")
    tensor.set_data_from_numpy(x)
    result = client.infer("dense", [tensor], model_version="1")
    np.testing.assert_array_equal(result.as_numpy("y"), _local(ray_server.repository, 1, x)["y"])


def test_requests_spread_over_both_replicas_and_batch(ray_server):
    """32 requests from 8 threads: both replicas of the version answer some, and the
    replicas' batches show in the statistics (fewer executions than requests)."""
    rng = np.random.default_rng(3)
    inputs = [rng.standard_normal((1, 4)).astype(np.float32) for _ in range(32)]
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda x: _http_infer(ray_server.http_url, x, "2"), inputs))
    replicas = {r.get_response()["parameters"][REPLICA_PARAMETER] for r in results}
    assert len(replicas) == 2, replicas
    weight_answers = _local(ray_server.repository, 2, np.concatenate(inputs))["y"]
    for row, result in enumerate(results):
        np.testing.assert_array_equal(result.as_numpy("y")[0], weight_answers[row])
    client = tritonhttp.InferenceServerClient(ray_server.http_url)
    (stats,) = client.get_inference_statistics("dense", "2")["model_stats"]
    assert stats["inference_stats"]["success"]["count"] >= 32
    assert stats["inference_count"] >= 32
    assert 0 < stats["execution_count"] < stats["inference_count"], stats


def test_metrics_from_the_ingress(ray_server):
    """--metrics-port: the core's Triton metrics, served from the ingress process, count the
    requests the version answered."""
    x = np.ones((1, 4), np.float32)
    for _ in range(3):
        _http_infer(ray_server.http_url, x, "1")
    with urllib.request.urlopen(ray_server.metrics_url, timeout=30) as response:
        text = response.read().decode()
    (count,) = re.findall(r'^nv_inference_request_success\{model="dense",version="1"\} (\S+)$',
                          text, re.MULTILINE)
    assert float(count) >= 3


def test_metadata_index_and_refusals(ray_server):
    """The core's answers over Ray: metadata, the failed model in the index with its
    reason, a wrong shape refused with it, an unknown model 400."""
    client = tritonhttp.InferenceServerClient(ray_server.http_url)
    assert client.is_server_ready()
    metadata = client.get_model_metadata("dense", "1")
    assert metadata["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [-1, 4]}]
    rows = {(r["name"], r.get("version", "")): r for r in client.get_model_repository_index()}
    assert rows[("dense", "1")]["state"] == rows[("dense", "2")]["state"] == "READY"
    assert rows[("broken", "1")]["state"] == "UNAVAILABLE"
    assert "broken" in rows[("broken", "1")]["reason"]
    with pytest.raises(InferenceServerException, match=r"input 'x': shape \[2, 5\]"):
        _http_infer(ray_server.http_url, np.zeros((2, 5), np.float32))
    tensor = tritonhttp.InferInput("x", [1, 4], "FP32")
    tensor.set_data_from_numpy(np.zeros((1, 4), np.float32))
    with pytest.raises(InferenceServerException, match="unknown model 'nope'"):
        client.infer("nope", [tensor])


def test_model_control_refused_with_the_reason(ray_server):
    client = tritonhttp.InferenceServerClient(ray_server.http_url)
    with pytest.raises(InferenceServerException, match="not available with --engine ray"):
        client.load_model("dense")
    with pytest.raises(InferenceServerException, match="not available with --engine ray"):
        client.unload_model("dense")
    assert client.is_model_ready("dense", "2")


def test_canary_weights_route_between_deployments(ray_server):
    """Traffic split between the versions' deployments, then rollback to version 1."""
    _post(ray_server, "dense/traffic", {"weights": {"1": 50, "2": 50}})
    x = np.ones((1, 4), np.float32)
    seen = {_http_infer(ray_server.http_url, x).get_response()["model_version"]
            for _ in range(40)}
    assert seen == {"1", "2"}
    _post(ray_server, "dense/rollback", {"version": "1"})
    assert {_http_infer(ray_server.http_url, x).get_response()["model_version"]
            for _ in range(10)} == {"1"}


def _post(server, path: str, body: dict) -> None:
    request = urllib.request.Request(
        f"http://{server.http_url}/v2/repository/models/{path}", json.dumps(body).encode(),
        {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200


def _ray_processes(temp_dir: str) -> list[int]:
    """Processes whose command line names this server's Ray folder."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                if temp_dir.encode() in cmdline.read():
                    found.append(int(pid))
        except OSError:
            continue
    return found


def _logged_temp_dir(server) -> str:
    """Ray's folder from the `listening` log line (logged just after the application
    answers, so it may trail readiness a little: polled)."""
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while True:
        for line in server.log().splitlines():
            if line.startswith("{") and '"listening"' in line:
                return json.loads(line)["ray_temp_dir"]
        assert time.monotonic() < deadline, server.log()
        time.sleep(0.1)  # a log file has no event to wait on


def test_shutdown_stops_ray(ray_server):
    """SIGTERM: the process exits 0 and the Ray it started (raylet, workers) is gone."""
    temp_dir = _logged_temp_dir(ray_server)
    assert temp_dir and _ray_processes(temp_dir)
    assert ray_server.stop(STOP_TIMEOUT_S) == 0, ray_server.log()
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while _ray_processes(temp_dir):  # Ray's workers exit after the raylet: poll, no event
        assert time.monotonic() < deadline, f"Ray processes left: {_ray_processes(temp_dir)}"
        time.sleep(0.2)


# -- the engine's options, without Ray ------------------------------------------------------

def test_autoscale_and_replicas_options():
    assert ray_engine.parse_autoscale("1:4") == (1, 4)
    for bad in ("4", "4:1", "a:b", "-1:2", "0:0"):
        with pytest.raises(InvalidArgumentError, match="--autoscale"):
            ray_engine.parse_autoscale(bad)
    options = ray_engine.RayOptions("repo", autoscale=(0, 3))
    assert ray_engine.scaling(options)["autoscaling_config"]["max_replicas"] == 3
    assert ray_engine.scaling(ray_engine.RayOptions("repo", replicas=2)) == {"num_replicas": 2}
    with pytest.raises(InvalidArgumentError, match="exclude each other"):
        ray_engine.scaling(ray_engine.RayOptions("repo", replicas=2, autoscale=(1, 2)))


def test_version_specs_follow_the_policy(tmp_path):
    """One deployment per version the policy serves; a config that does not parse gives
    none (the ingress reports it)."""
    repository = _write_repository(tmp_path)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "config.pbtxt").write_text("max_batch_size: [")
    specs = ray_engine.version_specs(repository)
    assert [(s.model_name, s.version) for s in specs] == [
        ("broken", 1), ("dense", 1), ("dense", 2)]
    assert {ray_engine.deployment_name(s) for s in specs} == {
        "broken-v1", "dense-v1", "dense-v2"}


def test_poll_mode_refused():
    args = argparse.Namespace(repository="r", host="127.0.0.1", http_port=0, grpc_port=None,
                              replicas=None, autoscale=None, ray_address=None,
                              max_request_bytes=1, model_control_mode="poll")
    with pytest.raises(InvalidArgumentError, match="not available with --engine ray"):
        ray_engine.options_from_args(args)


def test_app_builder_for_serve_run_and_rayservice(tmp_path):
    """The builder a RayService imports: the ingress bound to one deployment per version,
    sized by its arguments; unknown arguments refused with the known ones."""
    app = ray_engine.app_builder({"repository": str(_write_repository(tmp_path)),
                                  "autoscale": "1:3"})
    ingress = app._bound_deployment
    assert ingress.name == ray_engine.INGRESS_NAME
    handles = ingress.init_args[1]
    assert sorted(handles) == ["broken/1", "dense/1", "dense/2"]
    deployment = handles["dense/2"]._bound_deployment
    assert deployment.name == "dense-v2"
    autoscaling = deployment._deployment_config.autoscaling_config
    assert (autoscaling.min_replicas, autoscaling.max_replicas) == (1, 3)
    with pytest.raises(InvalidArgumentError, match="repository="):
        ray_engine.app_builder({"repository": str(tmp_path), "replica": "2"})


def _gather_replica(tmp_path, pass_name: str) -> ModelVersionReplica:
    """A replica of the gather model; warm: a second replica, which finds the first one's
    code in the compile cache (as a second replica on a node does)."""
    folder = tmp_path / "gather"
    _save(gather_model(), folder / "1" / "model.onnx")
    spec = VersionSpec("gather", 1, str(folder / "1" / "model.onnx"), str(folder), None)
    replica = ModelVersionReplica(spec)
    return ModelVersionReplica(spec) if pass_name == "warm" else replica


@pytest.mark.parametrize("pass_name", ["cold", "warm"])
def test_replica_refuses_the_bad_request_of_a_batch_alone(tmp_path, pass_name):
    """A batch (what @serve.batch hands the replica) whose middle request has an index out
    of range: the others are answered, the bad one refused with onnxc's message, and the
    batch's timing rides on the first answer only (the ingress records it once)."""
    replica = _gather_replica(tmp_path, pass_name)
    assert replica.error == "" and replica.batching  # derived config: symbolic batch
    good = [np.array([0, 4], np.int64), np.array([2], np.int64)]
    answers = replica._run_batch([({"i": good[0]}, None, 0),
                                  ({"i": np.array([1, 7], np.int64)}, None, 0),
                                  ({"i": good[1]}, ["y"], 0)])
    (first, timing), (bad, no_timing), (second, _) = answers
    assert isinstance(bad, ServingError) and bad.status == "INVALID_ARGUMENT"
    assert "out of range" in bad.message and "model 'gather' version 1" in bad.message
    assert no_timing is None and timing.batch_sizes == (2, 2, 1)
    assert timing.errors[1] is bad and [e.requests for e in timing.executions] == [(0,), (2,)]
    for indices, result in zip(good, (first, second)):
        np.testing.assert_array_equal(result["y"], replica.model.run(None, {"i": indices})[0])


def test_replica_of_a_version_that_fails_to_load(tmp_path):
    """The replica stays up and says why; the ingress lists the version UNAVAILABLE."""
    (tmp_path / "1").mkdir()
    (tmp_path / "1" / "model.onnx").write_bytes(b"not onnx")
    replica = ModelVersionReplica(VersionSpec("bad", 1, str(tmp_path / "1" / "model.onnx"),
                                              str(tmp_path), None))
    config, error, _ = replica.describe()
    assert config == b"" and error.startswith("model 'bad' version 1: ")
    answer = asyncio.run(replica.infer({"x": np.zeros(1, np.float32)}, None))
    assert answer.status == "UNAVAILABLE" and answer.message == error
