"""The gRPC front end (serving/grpc_service.py, grpc_tensors.py) through tritonclient.grpc.

An in-process grpc.aio server on its own thread and loop serves a small fake InferenceServer
whose models compute exact answers (x + version, upper-cased strings, echo of any datatype), so
every RPC, both tensor encodings and every refusal are checked against known values; the fake
also has a model whose run raises a bug, to show it is answered INTERNAL without harm.
tritonclient registers its own compiled grpc_service.proto in protobuf's default pool; onnxc's
copy is byte-identical, so both live in this one process (test_both_protocol_copies_coexist).
"""

from __future__ import annotations

import asyncio
import queue
import struct
import threading

import grpc
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from tritonclient.grpc import service_pb2, service_pb2_grpc

from onnxc.serving.errors import ServingError
from onnxc.serving.grpc_service import build_grpc_server, health_service, parse_traffic
from onnxc.serving.messages import DATATYPES, InferResponse, datatype_of
from onnxc.serving.protocol_buffers import grpc_service, model_config
from tests.serving.grpc_helpers import UNKNOWN_MODEL, ServerThread, raw_request, refused

MAX_MESSAGE_BYTES = 1 << 20


class FakeCore:
    """The InferenceServer interface over three exact toy models and a buggy one."""

    def __init__(self):
        self.versions = {"add": ["1", "2"], "strings": ["1"], "echo": ["1"], "buggy": ["1"],
                         "stuck": ["1"]}
        self.weights = {"add": {"2": 100}}
        self.loaded_configs: list[tuple[str, str | None]] = []
        self.unloaded: list[str] = []
        self.is_ready = True
        self.stuck = 0
        """requests of `stuck` (it never answers) running now"""
        self.cancelled = 0

    def live(self):
        return True

    def ready(self):
        return self.is_ready

    def _versions(self, name, version):
        if name not in self.versions:
            raise ServingError.not_found(f"Request for unknown model: '{name}' is not found")
        if version is not None and version not in self.versions[name]:
            raise ServingError.not_found(f"model '{name}' has no version {version}")
        return self.versions[name]

    def server_metadata(self):
        return {"name": "onnxc", "version": "0.test",
                "extensions": ["model_repository", "statistics", "model_configuration"]}

    def model_metadata(self, name, version):
        self._versions(name, version)
        tensors = {"add": ([("x", "FP32", [-1, 3])], [("y", "FP32", [-1, 3])]),
                   "strings": ([("s", "BYTES", [-1])], [("upper", "BYTES", [-1])])}
        inputs, outputs = tensors.get(name, ([], []))
        return {"name": name, "versions": self.versions[name], "platform": "onnxc",
                "inputs": [dict(zip(("name", "datatype", "shape"), t)) for t in inputs],
                "outputs": [dict(zip(("name", "datatype", "shape"), t)) for t in outputs]}

    def model_config_proto(self, name, version):
        self._versions(name, version)
        config = model_config().ModelConfig(name=name, max_batch_size=8)
        config.input.add(name="x", data_type=model_config().TYPE_FP32, dims=[3])
        return config

    def model_ready(self, name, version):
        self._versions(name, version)
        return True

    async def infer(self, name, version, request):
        self._versions(name, version)
        if version is None:
            version = max(self.weights.get(name, {"1": 100}).items(), key=lambda kv: kv[1])[0]
        if name == "buggy":
            raise RuntimeError("a bug in the core")
        if name == "stuck":
            self.stuck += 1
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:  # cancelled, not dropped and garbage-collected
                self.cancelled += 1
                raise
            finally:
                self.stuck -= 1
        if name == "add":
            x = request.inputs.get("x")
            if x is None or x.dtype != np.float32 or x.ndim != 2 or x.shape[1] != 3:
                raise ServingError.invalid("model 'add' input 'x': expected FP32 [-1, 3]")
            outputs = {"y": x + np.float32(version)}
        elif name == "strings":
            outputs = {"upper": np.vectorize(bytes.upper, otypes=[object])(request.inputs["s"])}
        else:
            outputs = {f"out_{key}": value for key, value in request.inputs.items()}
        if request.requested_outputs is not None:
            missing = set(request.requested_outputs) - set(outputs)
            if missing:
                raise ServingError.invalid(f"model '{name}' has no output {sorted(missing)}")
            outputs = {key: outputs[key] for key in request.requested_outputs}
        return InferResponse(model_name=name, model_version=version, outputs=outputs,
                             id=request.id, parameters={"echoed": len(request.parameters)})

    def repository_index(self, ready_only=False):
        return [{"name": name, "version": v, "state": "READY", "reason": ""}
                for name, versions in self.versions.items() for v in versions]

    async def load_model(self, name, config_json=None):
        if name == "broken":
            raise ServingError.invalid("model 'broken' failed to load: no model file")
        self.loaded_configs.append((name, config_json))
        self.versions.setdefault(name, ["1"])

    async def unload_model(self, name):
        self._versions(name, None)
        self.unloaded.append(name)

    def set_traffic(self, name, weights):
        self._versions(name, None)
        self.weights[name] = weights

    def rollback(self, name, version=None):
        self._versions(name, None)
        self.weights[name] = {version or "1": 100}

    def statistics(self, name=None, version=None):
        names = [name] if name else list(self.versions)
        for each in names:
            self._versions(each, version)
        duration = {"count": 3, "ns": 3000}
        return {"model_stats": [
            {"name": each, "version": v, "last_inference": 17, "inference_count": 3,
             "execution_count": 2,
             "inference_stats": {key: duration for key in ("success", "fail", "queue",
                                                           "compute_input", "compute_infer",
                                                           "compute_output")},
             "batch_stats": [{"batch_size": 1, "compute_infer": duration}]}
            for each in names for v in ([version] if version else self.versions[each])]}


@pytest.fixture(scope="module")
def served():
    async def make_core():
        return FakeCore()

    server = ServerThread(make_core, max_message_bytes=MAX_MESSAGE_BYTES)
    yield server, server.core
    server.stop()


@pytest.fixture
def client(served):
    with grpcclient.InferenceServerClient(served[0].url) as client:
        yield client


@pytest.fixture
def stub(served):
    with grpc.insecure_channel(served[0].url) as channel:
        yield service_pb2_grpc.GRPCInferenceServiceStub(channel)


def test_both_protocol_copies_coexist():
    messages, _ = grpc_service()
    assert messages.ModelInferRequest is service_pb2.ModelInferRequest
    assert model_config().ModelConfig is grpcclient.model_config_pb2.ModelConfig


def test_health_and_metadata(client, served):
    assert client.is_server_live()
    assert client.is_server_ready()
    assert client.is_model_ready("add")
    assert client.is_model_ready("add", "2")
    metadata = client.get_server_metadata(as_json=True)
    assert metadata["name"] == "onnxc" and "statistics" in metadata["extensions"]
    model = client.get_model_metadata("add", as_json=True)
    assert model["versions"] == ["1", "2"] and model["platform"] == "onnxc"
    assert model["inputs"] == [{"name": "x", "datatype": "FP32", "shape": ["-1", "3"]}]
    config = client.get_model_config("add").config
    assert config.name == "add" and config.max_batch_size == 8
    assert list(config.input[0].dims) == [3]


def test_grpc_health_check(served):
    server, core = served
    messages, services = health_service()
    with grpc.insecure_channel(server.url) as channel:
        health = services.HealthStub(channel)
        assert health.Check(messages.HealthCheckRequest()).status == \
            messages.HealthCheckResponse.SERVING
        named = messages.HealthCheckRequest(service="inference.GRPCInferenceService")
        core.is_ready = False
        try:
            assert health.Check(named).status == messages.HealthCheckResponse.NOT_SERVING
        finally:
            core.is_ready = True
        refused(lambda: health.Check(messages.HealthCheckRequest(service="other")),
                 grpc.StatusCode.NOT_FOUND, "unknown service 'other'")


def test_unknown_model_is_not_found(client):
    x = grpcclient.InferInput("x", [1, 3], "FP32")
    x.set_data_from_numpy(np.zeros((1, 3), np.float32))
    refused(lambda: client.infer("nope", [x]), UNKNOWN_MODEL, "'nope'")
    refused(lambda: client.get_model_metadata("nope"), UNKNOWN_MODEL, "'nope'")
    refused(lambda: client.infer("add", [x], model_version="7"),
             UNKNOWN_MODEL, "no version 7")


def test_infer_raw_fp32_and_versions(client):
    data = np.arange(6, dtype=np.float32).reshape(2, 3) / 4
    x = grpcclient.InferInput("x", list(data.shape), "FP32")
    x.set_data_from_numpy(data)
    for version, added in (("1", 1), ("2", 2), ("", 2)):  # "" routes by weight (2 in the fake)
        result = client.infer("add", [x], model_version=version, request_id="r7",
                              outputs=[grpcclient.InferRequestedOutput("y")])
        np.testing.assert_array_equal(result.as_numpy("y"), data + added)
        response = result.get_response()
        assert response.model_version == str(added) and response.id == "r7"
        assert response.outputs[0].datatype == "FP32"
        assert list(response.outputs[0].shape) == [2, 3]
        assert len(response.raw_output_contents) == 1


def test_infer_bytes_raw_round_trip(client):
    words = np.array([b"alpha", b"", "βeta".encode(), b"\x00bin\xff"], dtype=object)
    s = grpcclient.InferInput("s", [4], "BYTES")
    s.set_data_from_numpy(words)
    result = client.infer("strings", [s])
    assert list(result.as_numpy("upper")) == [w.upper() for w in words]


@pytest.mark.parametrize("datatype", [d for d in DATATYPES if d != "BYTES"])
def test_raw_round_trip_of_every_datatype(client, datatype):
    dtype = DATATYPES[datatype]
    data = (np.arange(6) % 2 == 1) if datatype == "BOOL" else np.arange(-3, 3) * 7 % 100
    data = data.astype(dtype).reshape(3, 2)
    tensor = grpcclient.InferInput("t", [3, 2], datatype)
    tensor.set_data_from_numpy(data)
    out = client.infer("echo", [tensor]).as_numpy("out_t")
    assert out.dtype == dtype
    np.testing.assert_array_equal(out, data)


_TYPED_VALUES = {
    "BOOL": [True, False], "INT8": [-128, 127], "INT16": [-32768, 7], "INT32": [-5, 2**31 - 1],
    "INT64": [-(2**63), 2**62], "UINT8": [0, 255], "UINT16": [65535, 1], "UINT32": [2**32 - 1, 0],
    "UINT64": [2**64 - 1, 3], "FP32": [0.5, -1.25], "FP64": [1e300, -2.5],
    "BYTES": [b"typed", b"\x00"],
}


@pytest.mark.parametrize("datatype", sorted(_TYPED_VALUES))
def test_typed_contents_of_every_datatype(stub, datatype):
    values = _TYPED_VALUES[datatype]
    request = service_pb2.ModelInferRequest(model_name="echo", id="typed")
    tensor = request.inputs.add(name="t", datatype=datatype, shape=[1, 2])
    field = {"BOOL": "bool", "INT8": "int", "INT16": "int", "INT32": "int", "INT64": "int64",
             "UINT8": "uint", "UINT16": "uint", "UINT32": "uint", "UINT64": "uint64",
             "FP32": "fp32", "FP64": "fp64", "BYTES": "bytes"}[datatype]
    getattr(tensor.contents, f"{field}_contents").extend(values)
    response = stub.ModelInfer(request)
    result = grpcclient.InferResult(response)
    out = result.as_numpy("out_t")
    assert response.outputs[0].datatype == datatype and out.shape == (1, 2)
    assert out.reshape(-1).tolist() == values


def _bad(stub, request, code, *reason):
    return refused(lambda: stub.ModelInfer(request), code, *reason)


def test_bad_raw_requests_are_invalid_argument(stub):
    invalid = grpc.StatusCode.INVALID_ARGUMENT
    _bad(stub, raw_request("add", "x", "FP32", [1, 3], b"\0" * 11), invalid,
         "'x'", "11 bytes", "needs 12")
    _bad(stub, raw_request("add", "x", "FP32", [1, -3], b""), invalid, "negative dimension")
    _bad(stub, raw_request("add", "x", "FP17", [1, 3], b"\0" * 12), invalid,
         "unknown datatype 'FP17'")
    _bad(stub, raw_request("add", "x", "FP32", [0, 2**62, 2**62], b""), invalid, "shape")
    two = raw_request("add", "x", "FP32", [1, 3], b"\0" * 12)
    two.inputs.add(name="x", datatype="FP32", shape=[1, 3])
    _bad(stub, two, invalid, "1 raw_input_contents for 2 inputs")
    two.raw_input_contents.append(b"\0" * 12)
    _bad(stub, two, invalid, "input 'x' is given twice")
    both = raw_request("add", "x", "FP32", [1, 3], b"\0" * 12)
    both.inputs[0].contents.fp32_contents.extend([1, 2, 3])
    _bad(stub, both, invalid, "contents must be empty")
    _bad(stub, service_pb2.ModelInferRequest(), invalid, "names no model")
    shared = raw_request("add", "x", "FP32", [1, 3], b"\0" * 12)
    shared.inputs[0].parameters["shared_memory_region"].string_param = "r"
    _bad(stub, shared, invalid, "no shared memory")
    twice = raw_request("add", "x", "FP32", [1, 3], b"\0" * 12)
    twice.outputs.add(name="y")
    twice.outputs.add(name="y")
    _bad(stub, twice, invalid, "output 'y' is requested twice")
    _bad(stub, raw_request("add", "x", "INT32", [1, 3], b"\0" * 12), invalid, "expected FP32")


@pytest.mark.parametrize(("raw", "reason"), [
    (b"\x03\x00\x00\x00ab", "claims 3 bytes, only 2 remain"),
    (b"\x01\x00\x00\x00a\x01\x00", "ends before element 1"),
    (b"\x01\x00\x00\x00a\x00\x00\x00\x00!", "1 bytes left after the 2 BYTES elements"),
])
def test_malformed_raw_bytes_are_invalid_argument(stub, raw, reason):
    _bad(stub, raw_request("strings", "s", "BYTES", [2], raw),
         grpc.StatusCode.INVALID_ARGUMENT, "input 's'", reason)


def test_bad_typed_requests_are_invalid_argument(stub):
    invalid = grpc.StatusCode.INVALID_ARGUMENT

    def typed(datatype, shape, field, values):
        request = service_pb2.ModelInferRequest(model_name="echo")
        tensor = request.inputs.add(name="t", datatype=datatype, shape=shape)
        getattr(tensor.contents, field).extend(values)
        return request

    _bad(stub, typed("FP32", [2, 2], "fp32_contents", [1, 2, 3]), invalid,
         "3 values in fp32_contents", "holds 4")
    _bad(stub, typed("FP32", [2], "int_contents", [1, 2]), invalid,
         "sent in fp32_contents", "fills int_contents")
    _bad(stub, typed("INT8", [1], "int_contents", [300]), invalid, "outside INT8's range")
    _bad(stub, typed("FP16", [1], "fp32_contents", [1.0]), invalid,
         "FP16 has no typed contents field")
    _bad(stub, typed("FP32", [3], "fp32_contents", []), invalid, "0 values")


def test_raw_bool_bytes_other_than_1_are_true(stub):
    response = stub.ModelInfer(raw_request("echo", "b", "BOOL", [4], b"\x00\x01\x02\xff"))
    out = grpcclient.InferResult(response).as_numpy("out_b")
    assert out.tolist() == [False, True, True, True]
    assert response.raw_output_contents[0] == b"\x00\x01\x01\x01"


def test_requested_output_and_parameters(stub):
    request = raw_request("add", "x", "FP32", [1, 3], np.ones(3, np.float32).tobytes(),
                           model_version="1")
    request.outputs.add(name="y")
    request.parameters["priority"].int64_param = 2
    request.parameters["tag"].string_param = "t"
    response = stub.ModelInfer(request)
    assert [o.name for o in response.outputs] == ["y"]
    assert response.parameters["echoed"].int64_param == 2
    classify = raw_request("add", "x", "FP32", [1, 3], b"\0" * 12)
    classify.outputs.add(name="y").parameters["classification"].int64_param = 3
    _bad(stub, classify, grpc.StatusCode.INVALID_ARGUMENT, "no classification extension")


def test_oversized_message_is_resource_exhausted(stub):
    big = np.zeros((MAX_MESSAGE_BYTES // 12 + 1, 3), np.float32)
    request = raw_request("add", "x", "FP32", list(big.shape), big.tobytes())
    _bad(stub, request, grpc.StatusCode.RESOURCE_EXHAUSTED)


def test_core_bug_is_internal_and_server_stays_up(client, caplog):
    x = grpcclient.InferInput("x", [1], "FP32")
    x.set_data_from_numpy(np.zeros(1, np.float32))
    with caplog.at_level("ERROR", logger="onnxc.serving.grpc_service"):
        refused(lambda: client.infer("buggy", [x]), grpc.StatusCode.INTERNAL,
                 "RuntimeError: a bug in the core")
    assert any("a bug in the core" in (r.exc_text or "") or r.exc_info for r in caplog.records)
    assert client.is_server_live()


def test_statistics(client):
    stats = client.get_inference_statistics("add", "1", as_json=True)["model_stats"]
    assert [(s["name"], s["version"]) for s in stats] == [("add", "1")]
    assert stats[0]["inference_stats"]["success"] == {"count": "3", "ns": "3000"}
    assert stats[0]["batch_stats"][0]["batch_size"] == "1"
    every = client.get_inference_statistics(as_json=True)["model_stats"]
    assert {"add", "strings", "echo", "buggy"} <= {s["name"] for s in every}
    refused(lambda: client.get_inference_statistics("nope"), UNKNOWN_MODEL)


def test_repository_index_load_unload(client, served):
    core = served[1]
    index = client.get_model_repository_index(as_json=True)["models"]
    assert {"name": "add", "version": "2", "state": "READY"} in index
    client.load_model("extra", config='{"max_batch_size": 4}')
    assert core.loaded_configs[-1] == ("extra", '{"max_batch_size": 4}')
    client.load_model("extra")
    assert core.loaded_configs[-1] == ("extra", None)
    client.unload_model("extra")
    assert core.unloaded[-1] == "extra"
    refused(lambda: client.load_model("broken"), grpc.StatusCode.INVALID_ARGUMENT,
             "failed to load")
    refused(lambda: client.load_model("extra", config="{}", files={"file:1/model.onnx": b""}),
             grpc.StatusCode.INVALID_ARGUMENT, "unsupported load parameter(s) file:1/model.onnx")


def test_traffic_and_rollback_through_load(stub, served):
    core = served[1]
    loads = len(core.loaded_configs)
    request = service_pb2.RepositoryModelLoadRequest(model_name="add")
    request.parameters["traffic"].string_param = "1:90, 2:10"
    stub.RepositoryModelLoad(request)
    assert core.weights["add"] == {"1": 90, "2": 10}
    rollback = service_pb2.RepositoryModelLoadRequest(model_name="add")
    rollback.parameters["rollback"].string_param = "2"
    stub.RepositoryModelLoad(rollback)
    assert core.weights["add"] == {"2": 100}
    assert len(core.loaded_configs) == loads  # neither reloads the model
    wrong = service_pb2.RepositoryModelLoadRequest(model_name="add")
    wrong.parameters["traffic"].int64_param = 5
    refused(lambda: stub.RepositoryModelLoad(wrong), grpc.StatusCode.INVALID_ARGUMENT,
             "'traffic' must be a string")
    assert parse_traffic("m", "1:90,2:10") == {"1": 90, "2": 10}
    for text in ("1:90,1:10", "0:100", "a:1", "1=100", "1:-5", "\u00b2:100", "1:\u00b2"):
        with pytest.raises(ServingError, match="model 'm'"):
            parse_traffic("m", text)


def test_a_port_in_use_is_an_error(served):
    server = served[0]

    async def build_on_the_same_port():
        build_grpc_server(server.core, server.url, max_message_bytes=MAX_MESSAGE_BYTES)

    with pytest.raises(OSError, match=f"cannot listen on {server.url}"):
        server.call(build_on_the_same_port())


def test_unsupported_rpcs_are_unimplemented(client):
    for call, what in ((client.get_system_shared_memory_status, "no shared memory regions"),
                       (client.get_cuda_shared_memory_status, "no shared memory regions"),
                       (client.get_trace_settings, "no request tracing"),
                       (client.get_log_settings, "--log-level")):
        refused(call, grpc.StatusCode.UNIMPLEMENTED, what)


def test_concurrent_infers_from_8_threads(served):
    """8 threads x 25 requests, each with its own data: every answer is its own request's."""
    errors = []

    def worker(thread_index):
        with grpcclient.InferenceServerClient(served[0].url) as own:
            for i in range(25):
                data = np.full((1, 3), thread_index * 100 + i, np.float32)
                x = grpcclient.InferInput("x", [1, 3], "FP32")
                x.set_data_from_numpy(data)
                result = own.infer("add", [x], model_version="1")
                if not np.array_equal(result.as_numpy("y"), data + 1):
                    errors.append((thread_index, i))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors and not any(thread.is_alive() for thread in threads)


def test_stream_answers_each_request_and_reports_refusals(client):
    answers: queue.Queue = queue.Queue()
    client.start_stream(callback=lambda result, error: answers.put((result, error)))
    try:
        for i in range(6):
            x = grpcclient.InferInput("x", [1, 3], "FP32")
            x.set_data_from_numpy(np.full((1, 3), i, np.float32))
            client.async_stream_infer("add", [x], request_id=str(i), model_version="1")
        client.async_stream_infer("nope", [x], request_id="bad")
        bad = grpcclient.InferInput("x", [1, 3], "INT32")
        bad.set_data_from_numpy(np.zeros((1, 3), np.int32))
        client.async_stream_infer("add", [bad], request_id="bad2")
        x.set_data_from_numpy(np.full((1, 3), 6, np.float32))
        client.async_stream_infer("add", [x], request_id="6", model_version="1",
                                  enable_empty_final_response=True)
        results, refusals, final = {}, [], {}
        for _ in range(9):
            result, error = answers.get(timeout=30)
            if error is not None:
                refusals.append(error.message())
            else:
                response = result.get_response()
                results[response.id] = result.as_numpy("y")
                final[response.id] = response.parameters["triton_final_response"].bool_param
    finally:
        client.stop_stream()
    assert sorted(results) == [str(i) for i in range(7)]
    assert [key for key, flag in final.items() if flag] == ["6"]  # only where asked for
    for key, y in results.items():
        np.testing.assert_array_equal(y, np.full((1, 3), int(key) + 1, np.float32))
    assert len(refusals) == 2
    assert any("'nope'" in message for message in refusals)
    assert any("expected FP32" in message for message in refusals)


def test_cancelled_stream_cancels_its_requests_in_the_core(client, served):
    """A client that goes away mid-stream leaves nothing running for it in the core."""
    core = served[1]
    client.start_stream(callback=lambda result, error: None)
    x = grpcclient.InferInput("x", [1], "FP32")
    x.set_data_from_numpy(np.zeros(1, np.float32))
    for i in range(3):
        client.async_stream_infer("stuck", [x], request_id=str(i))
    assert _wait_for(lambda: core.stuck == 3), core.stuck
    cancelled = core.cancelled
    client.stop_stream(cancel_requests=True)
    assert _wait_for(lambda: core.stuck == 0), core.stuck
    assert core.cancelled == cancelled + 3
    assert client.is_server_live()


def test_cancelled_open_stream_cancels_its_requests_in_the_core(stub, served):
    """The same when the client cancels without closing its side of the stream first."""
    core = served[1]
    requests: queue.Queue = queue.Queue()
    call = stub.ModelStreamInfer(iter(requests.get, None))
    try:
        for i in range(3):
            requests.put(raw_request("stuck", "x", "FP32", [1], b"\0" * 4, id=str(i)))
        assert _wait_for(lambda: core.stuck == 3), core.stuck
        cancelled = core.cancelled
        call.cancel()
        assert _wait_for(lambda: core.stuck == 0), core.stuck
        assert core.cancelled == cancelled + 3
    finally:
        requests.put(None)


def _wait_for(condition, timeout_s: float = 30.0) -> bool:
    """Poll `condition` (state in another thread's loop: no event to wait on here)."""
    done = threading.Event()
    for _ in range(int(timeout_s / 0.01)):
        if condition():
            return True
        done.wait(0.01)
    return condition()


def test_aio_client(served):
    import tritonclient.grpc.aio as aioclient

    async def run():
        async with aioclient.InferenceServerClient(served[0].url) as client:
            x = aioclient.InferInput("x", [1, 3], "FP32")
            x.set_data_from_numpy(np.ones((1, 3), np.float32))
            result = await client.infer("add", [x], model_version="2")
            return await client.is_server_ready(), result.as_numpy("y")

    ready, y = asyncio.run(run())
    assert ready
    np.testing.assert_array_equal(y, np.full((1, 3), 3, np.float32))


def test_bytes_codec_unit():
    from onnxc.serving.grpc_tensors import decode_bytes_elements, encode_bytes_elements

    words = np.array([b"a", "ü", b""], dtype=object)
    raw = encode_bytes_elements(words)
    assert raw == struct.pack("<I", 1) + b"a" + struct.pack("<I", 2) + "ü".encode() + \
        struct.pack("<I", 0)
    assert decode_bytes_elements("m", "t", raw, 3).tolist() == [b"a", "ü".encode(), b""]
    assert datatype_of(words.dtype) == "BYTES"
