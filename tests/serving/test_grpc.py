"""gRPC end to end through tritonclient.grpc: the real InferenceServer over a repository.

The repository holds "add" (versions 1 and 2: y = x + version, exact in float32, a symbolic
batch and config.pbtxt with version_policy all) and "three" (y = x + 3, config derived from
the model) and "strings" (StringNormalizer to upper case, derived config). The server runs in explicit model-control mode with every
model loaded at start, on an in-process grpc.aio server with its own thread and loop; models
compile through the session's compile cache. Answers are exact, so they are compared exactly.
"""

from __future__ import annotations

import queue
import threading
from pathlib import Path

import grpc
import numpy as np
import onnx
import pytest
import tritonclient.grpc as grpcclient
from onnx import TensorProto, helper, numpy_helper
from tritonclient.grpc import service_pb2, service_pb2_grpc

from onnxc.serving.grpc_service import health_service
from onnxc.serving.server_core import InferenceServer
from tests.serving.grpc_helpers import (
    CLIENT_SIDE,
    UNKNOWN_MODEL,
    ServerThread,
    random_request,
    raw_request,
    refused,
)

ADD_CONFIG = """name: "add"
max_batch_size: 8
input [ { name: "x" data_type: TYPE_FP32 dims: [3] } ]
output [ { name: "y" data_type: TYPE_FP32 dims: [3] } ]
version_policy { all {} }
"""


def add_model(version: int) -> onnx.ModelProto:
    """x[N,3] -> y = x + version."""
    constant = numpy_helper.from_array(np.full(3, version, np.float32), "c")
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "c"], ["y"])], "add",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])], [constant])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def strings_model() -> onnx.ModelProto:
    """s[N] strings -> upper[N], upper-cased."""
    graph = helper.make_graph(
        [helper.make_node("StringNormalizer", ["s"], ["upper"], case_change_action="UPPER")],
        "strings", [helper.make_tensor_value_info("s", TensorProto.STRING, ["N"])],
        [helper.make_tensor_value_info("upper", TensorProto.STRING, ["N"])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _save(repo: Path, name: str, version: int, model: onnx.ModelProto) -> None:
    folder = repo / name / str(version)
    folder.mkdir(parents=True)
    onnx.save(model, folder / "model.onnx")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    repo = tmp_path_factory.mktemp("repository")
    for version in (1, 2):
        _save(repo, "add", version, add_model(version))
    (repo / "add" / "config.pbtxt").write_text(ADD_CONFIG)
    _save(repo, "three", 1, add_model(3))
    _save(repo, "strings", 1, strings_model())
    server = _serve(repo)
    yield server
    server.stop()


def _serve(repo: Path) -> ServerThread:
    async def make_core():
        core = InferenceServer(repo, model_control_mode="explicit", startup_models=["*"])
        await core.start()
        return core

    return ServerThread(make_core, max_message_bytes=4 << 20)


@pytest.fixture
def client(served):
    with grpcclient.InferenceServerClient(served.url) as client:
        yield client


@pytest.fixture
def stub(served):
    with grpc.insecure_channel(served.url) as channel:
        yield service_pb2_grpc.GRPCInferenceServiceStub(channel)


def _x(data: np.ndarray) -> grpcclient.InferInput:
    x = grpcclient.InferInput("x", list(data.shape), "FP32")
    x.set_data_from_numpy(data)
    return x


def test_health_metadata_config(client, served):
    assert client.is_server_live() and client.is_server_ready()
    assert client.is_model_ready("add", "1") and client.is_model_ready("three")
    assert not client.is_model_ready("add", "3")
    assert client.get_server_metadata().name == "onnxc"
    metadata = client.get_model_metadata("add", as_json=True)
    assert metadata["versions"] == ["1", "2"]
    assert metadata["inputs"] == [{"name": "x", "datatype": "FP32", "shape": ["-1", "3"]}]
    assert client.get_model_config("three").config.max_batch_size > 0  # derived: batch N
    config = client.get_model_config("add", "2").config
    assert config.max_batch_size == 8 and config.version_policy.HasField("all")
    messages, services = health_service()
    with grpc.insecure_channel(served.url) as channel:
        status = services.HealthStub(channel).Check(messages.HealthCheckRequest()).status
    assert status == messages.HealthCheckResponse.SERVING


def test_infer_versions_raw_and_typed(client, stub):
    data = np.arange(12, dtype=np.float32).reshape(4, 3) / 8
    for version in ("1", "2"):
        result = client.infer("add", [_x(data)], model_version=version)
        np.testing.assert_array_equal(result.as_numpy("y"), data + int(version))
        assert result.get_response().model_version == version
    request = service_pb2.ModelInferRequest(model_name="add", model_version="1", id="typed")
    tensor = request.inputs.add(name="x", datatype="FP32", shape=[4, 3])
    tensor.contents.fp32_contents.extend(data.reshape(-1).tolist())
    response = stub.ModelInfer(request)
    assert response.id == "typed"
    np.testing.assert_array_equal(grpcclient.InferResult(response).as_numpy("y"), data + 1)


def test_infer_bytes_raw_and_typed(client, stub):
    assert client.get_model_metadata("strings", as_json=True)["inputs"][0]["datatype"] == \
        "BYTES"
    words = np.array([b"grpc", "\xe9-\xfc".encode(), b""], dtype=object)
    s = grpcclient.InferInput("s", [3], "BYTES")
    s.set_data_from_numpy(words)
    upper = client.infer("strings", [s]).as_numpy("upper")
    assert upper.tolist() == [b"GRPC", "\xc9-\xdc".encode(), b""]
    request = service_pb2.ModelInferRequest(model_name="strings")
    request.inputs.add(name="s", datatype="BYTES", shape=[2]).contents.bytes_contents.extend(
        [b"ab", b"c"])
    response = stub.ModelInfer(request)
    assert grpcclient.InferResult(response).as_numpy("upper").tolist() == [b"AB", b"C"]


def test_refusals_name_the_reason(client, stub):
    invalid = grpc.StatusCode.INVALID_ARGUMENT
    refused(lambda: client.infer("nope", [_x(np.zeros((1, 3), np.float32))]),
            UNKNOWN_MODEL, "'nope'")
    refused(lambda: client.infer("add", [_x(np.zeros((1, 3), np.float32))], model_version="9"),
            UNKNOWN_MODEL, "version 9")
    refused(lambda: client.infer("add", [_x(np.zeros((1, 4), np.float32))]), invalid,
            "input 'x'", "shape [1, 4]")
    refused(lambda: client.infer("add", [_x(np.zeros((9, 3), np.float32))]), invalid,
            "batch size 9")
    wrong = grpcclient.InferInput("x", [1, 3], "INT32")
    wrong.set_data_from_numpy(np.zeros((1, 3), np.int32))
    refused(lambda: client.infer("add", [wrong]), invalid, "datatype INT32, expected FP32")
    refused(lambda: stub.ModelInfer(raw_request("add", "x", "FP32", [1, 3], b"\0" * 13)),
            invalid, "13 bytes", "needs 12")
    refused(lambda: stub.ModelInfer(raw_request("strings", "s", "BYTES", [1], b"\x09\0\0\0")),
            invalid, "claims 9 bytes")
    request = raw_request("add", "x", "FP32", [1, 3], b"\0" * 12)
    request.outputs.add(name="z")
    refused(lambda: stub.ModelInfer(request), invalid, "unknown requested output(s) ['z']")
    assert client.is_server_live()


def test_statistics(client):
    """Triton's statistics message from the core's JSON: counts move with each request."""

    def version_1():
        return client.get_inference_statistics("add", "1").model_stats[0]

    before = version_1()
    data = np.ones((3, 3), np.float32)
    for _ in range(2):
        client.infer("add", [_x(data)], model_version="1")
    after = version_1()
    assert (after.name, after.version) == ("add", "1")
    assert after.inference_stats.success.count == before.inference_stats.success.count + 2
    assert after.inference_stats.success.ns > before.inference_stats.success.ns
    assert after.inference_count == before.inference_count + 6  # 2 requests of batch 3
    stats = client.get_inference_statistics("add", as_json=True)["model_stats"]
    assert sorted(s["version"] for s in stats) == ["1", "2"]
    refused(lambda: client.get_inference_statistics("nope"), UNKNOWN_MODEL)


def test_canary_traffic_and_rollback(stub, client):
    """Each default-routed answer is that of the version which served it; rollback is total."""

    def load(key, value):
        request = service_pb2.RepositoryModelLoadRequest(model_name="add")
        request.parameters[key].string_param = value
        stub.RepositoryModelLoad(request)

    data = np.ones((1, 3), np.float32)
    try:
        load("traffic", "1:50,2:50")
        served_by = []
        for _ in range(40):
            result = client.infer("add", [_x(data)])
            version = result.get_response().model_version
            np.testing.assert_array_equal(result.as_numpy("y"), data + int(version))
            served_by.append(version)
        assert set(served_by) == {"1", "2"}  # P(one version 40 times) = 2 * 2**-40
        load("rollback", "1")
        assert {client.infer("add", [_x(data)]).get_response().model_version
                for _ in range(10)} == {"1"}
        request = service_pb2.RepositoryModelLoadRequest(model_name="add")
        request.parameters["traffic"].string_param = "1:50,3:50"
        refused(lambda: stub.RepositoryModelLoad(request), grpc.StatusCode.INVALID_ARGUMENT,
                "version 3")
    finally:
        load("rollback", "2")
    assert client.infer("add", [_x(data)]).get_response().model_version == "2"


def test_repository_load_unload(client):
    index = client.get_model_repository_index(as_json=True)["models"]
    assert {(m["name"], m.get("version"), m.get("state")) for m in index} >= {
        ("add", "1", "READY"), ("add", "2", "READY"), ("three", "1", "READY")}
    client.unload_model("three")
    assert not client.is_model_ready("three")
    x = _x(np.ones((1, 3), np.float32))
    refused(lambda: client.infer("three", [x]), grpc.StatusCode.UNAVAILABLE, "not loaded")
    client.load_model("three")
    np.testing.assert_array_equal(client.infer("three", [x]).as_numpy("y"),
                                  np.full((1, 3), 4, np.float32))
    client.load_model("add", config='{"name": "add", "max_batch_size": 8, '
                                    '"version_policy": {"specific": {"versions": [1]}}}')
    try:
        assert client.get_model_metadata("add", as_json=True)["versions"] == ["1"]
    finally:
        client.load_model("add")
    assert client.get_model_metadata("add", as_json=True)["versions"] == ["1", "2"]
    refused(lambda: client.load_model("nope"), UNKNOWN_MODEL, "'nope'")
    refused(lambda: client.load_model("add", config="{not json"),
            grpc.StatusCode.INVALID_ARGUMENT, "config")


def test_concurrent_infers_from_8_threads(served):
    """8 threads x 20 requests with their own data and version: each answer is its own."""
    errors = []

    def worker(index):
        with grpcclient.InferenceServerClient(served.url) as own:
            for i in range(20):
                data = np.full((1 + i % 3, 3), index * 100 + i, np.float32)
                version = str(1 + index % 2)
                y = own.infer("add", [_x(data)], model_version=version).as_numpy("y")
                if not np.array_equal(y, data + int(version)):
                    errors.append((index, i))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors and not any(thread.is_alive() for thread in threads)


def test_stream(client):
    answers: queue.Queue = queue.Queue()
    client.start_stream(callback=lambda result, error: answers.put((result, error)))
    try:
        for i in range(5):
            client.async_stream_infer("add", [_x(np.full((2, 3), i, np.float32))],
                                      request_id=str(i), model_version="1")
        client.async_stream_infer("add", [_x(np.zeros((2, 5), np.float32))], request_id="bad")
        got, refusals = {}, []
        for _ in range(6):
            result, error = answers.get(timeout=60)
            if error is None:
                got[result.get_response().id] = result.as_numpy("y")
            else:
                refusals.append(error.message())
    finally:
        client.stop_stream()
    assert sorted(got) == ["0", "1", "2", "3", "4"]
    for key, y in got.items():
        np.testing.assert_array_equal(y, np.full((2, 3), int(key) + 1, np.float32))
    assert len(refusals) == 1 and "shape [2, 5]" in refusals[0]


def test_random_bad_requests_leave_the_server_up(stub, client, served):
    """400 seeded random requests (datatypes, shapes, raw and typed contents, names, versions,
    and bytes that are not a protobuf message at all), valid ones among them: each random one
    is answered or refused with a client-side status (never INTERNAL / UNKNOWN from onnxc's
    code), each valid one answered exactly, and the server still answers afterwards."""
    rng = np.random.default_rng(35)
    outcomes: dict[str, int] = {}
    for _ in range(400):
        if rng.random() < 0.15:  # a valid request among them, answered exactly
            data = rng.standard_normal((int(rng.integers(1, 9)), 3)).astype(np.float32)
            response = stub.ModelInfer(raw_request("add", "x", "FP32", list(data.shape),
                                                   data.tobytes(), model_version="2"))
            np.testing.assert_array_equal(grpcclient.InferResult(response).as_numpy("y"),
                                          data + 2)
            outcomes["OK"] = outcomes.get("OK", 0) + 1
            continue
        request = random_request(rng, ["add", "three"], ["x", "y"])
        try:
            stub.ModelInfer(request, timeout=30)
            outcomes["random OK"] = outcomes.get("random OK", 0) + 1
        except grpc.RpcError as error:
            assert error.code() in CLIENT_SIDE, (error.code(), error.details(), request)
            outcomes[error.code().name] = outcomes.get(error.code().name, 0) + 1
    with grpc.insecure_channel(served.url) as channel:
        garbage = channel.unary_unary("/inference.GRPCInferenceService/ModelInfer")
        with pytest.raises(grpc.RpcError):  # grpcio's own refusal of undecodable bytes
            garbage(b"\xff\x00 not a protobuf", timeout=30)
    assert outcomes.get("OK") and outcomes.get("INVALID_ARGUMENT") and \
        outcomes.get(UNKNOWN_MODEL.name)
    data = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(
        client.infer("add", [_x(data)], model_version="1").as_numpy("y"), data + 1)
