"""Seeded random bad requests against a real `onnxc serve`: refused, never a crash or a leak.

Each bad request is drawn from a list of kinds: malformed HTTP bodies sent raw over one
keep-alive http.client connection (garbage and truncated JSON, JSON of the wrong shape,
wrong names, shapes, datatypes and element counts, wrong binary_data_size, truncated and
garbage binary bodies, wrong Inference-Header-Content-Length, huge declared shapes, bad
gzip, unknown models and versions), well-formed but wrong requests through
tritonclient.http and tritonclient.grpc, and malformed ModelInferRequests through a raw
gRPC stub (raw contents of the wrong size or count, typed and raw at once, wrong typed
fields, huge or negative shapes). Every fourth request is a valid one whose answer is
checked exactly. Each refusal must be HTTP 400 (the protocol's INVALID_ARGUMENT and
NOT_FOUND both answer 400 over HTTP, as Triton does) or gRPC INVALID_ARGUMENT/NOT_FOUND,
with a reason; a 500, INTERNAL, another status or a dropped connection fails the test.

Memory: the server's VmRSS is read after a warm-up of the same size and kind mix (other
seeds) and again after the measured run; see RSS_SLACK_BYTES for the bound.
"""

from __future__ import annotations

import gzip
import http.client
import json
import time
from collections import Counter
from collections.abc import Callable

import grpc
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.grpc import service_pb2, service_pb2_grpc
from tritonclient.utils import InferenceServerException

from tests.serving.conftest import DENSE_IN, ServeProcess, dense_weights

RSS_SLACK_BYTES = 4 << 20
"""allowed growth of VmRSS from after the warm-up to after the run. The warm-up has already
grown every pool a request touches (Python's obmalloc arenas, glibc's per-thread malloc
arenas for uvicorn's and grpc's threads, the compiled models' arenas, tritonclient-sized
buffers), so what remains is allocator noise of a few hundred KiB; 4 MiB is that noise
with room, and is what 1,000 requests leaking 4 KiB each (or 10,000 leaking 420 bytes
each) would add, so a leak of a request's body or error message would cross it."""

Outcome = str
"""'ok' for a valid request answered right; else the HTTP status or gRPC code name"""

VALID_EVERY = 4


def vm_rss(pid: int) -> int:
    """The process's resident set size in bytes (/proc/<pid>/status VmRSS)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS in /proc/{pid}/status")


def dense_input(rng: np.random.Generator, rows: int) -> np.ndarray:
    """Rows that are one-hot times a power of two: x @ W is then one exact product per
    output, so y = x @ W + b rounds once, as in numpy (exact comparison is sound)."""
    x = np.zeros((rows, DENSE_IN), np.float32)
    x[np.arange(rows), rng.integers(0, DENSE_IN, rows)] = 2.0 ** rng.integers(-3, 4, rows)
    return x


def dense_answer(x: np.ndarray, version: int) -> dict[str, np.ndarray]:
    weight, bias = dense_weights(version)
    return {"y": x @ weight + bias, "r": np.maximum(x, 0)}


def types_inputs(rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {"n": rng.integers(-1000, 1000, (2, 3)).astype(np.int64),
            "flag": rng.integers(0, 2, 4).astype(bool),
            "half": rng.standard_normal((2, 2)).astype(np.float16),
            "u8": rng.integers(0, 256, 5).astype(np.uint8)}


def types_answer(inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {"i": inputs["n"] + 1, "nb": ~inputs["flag"], "h": -inputs["half"],
            "u": inputs["u8"]}


DATATYPE = {np.dtype(np.float32): "FP32", np.dtype(np.int64): "INT64",
            np.dtype(bool): "BOOL", np.dtype(np.float16): "FP16",
            np.dtype(np.uint8): "UINT8", np.dtype(np.int32): "INT32",
            np.dtype(np.float64): "FP64"}


class Clients:
    """The four ways in: raw HTTP, tritonclient.http, tritonclient.grpc, a raw gRPC stub."""

    def __init__(self, server: ServeProcess):
        self.server = server
        self.conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
        self.http = httpclient.InferenceServerClient(server.http_url)
        self.grpc = grpcclient.InferenceServerClient(server.grpc_url)
        self.channel = grpc.insecure_channel(server.grpc_url)
        self.stub = service_pb2_grpc.GRPCInferenceServiceStub(self.channel)
        self.conn.connect()
        self.reconnects = 0
        """times the server had closed the keep-alive connection (none expected)"""

    def close(self) -> None:
        self.conn.close()
        self.http.close()
        self.grpc.close()
        self.channel.close()

    def raw(self, method: str, path: str, body: bytes | None = None,
            headers: dict | None = None) -> tuple[int, bytes]:
        """One request on the keep-alive connection; a dropped connection raises."""
        if self.conn.sock is None:
            self.reconnects += 1  # the server closed after its last answer
        self.conn.request(method, path, body=body, headers=headers or {})
        response = self.conn.getresponse()
        return response.status, response.read()

    def raw_refusal(self, method: str, path: str, body: bytes | None = None,
                    headers: dict | None = None) -> Outcome:
        status, payload = self.raw(method, path, body, headers)
        if status == 400:
            error = json.loads(payload).get("error")
            assert isinstance(error, str) and error, payload
        return str(status)


# -- bodies ------------------------------------------------------------------------------

def json_body(inputs: list[dict], outputs: list[dict] | None = None) -> bytes:
    document: dict = {"inputs": inputs}
    if outputs is not None:
        document["outputs"] = outputs
    return json.dumps(document).encode()


def json_tensor(name: str, array: np.ndarray) -> dict:
    return {"name": name, "shape": list(array.shape), "datatype": DATATYPE[array.dtype],
            "data": array.ravel().tolist()}


def binary_body(entries: list[tuple[str, list[int], str, bytes, int]]) -> tuple[bytes, dict]:
    """(name, shape, datatype, payload, claimed binary_data_size) per input."""
    header = json.dumps({"inputs": [
        {"name": n, "shape": s, "datatype": d, "parameters": {"binary_data_size": c}}
        for n, s, d, _, c in entries]}).encode()
    return (header + b"".join(p for *_, p, _ in entries),
            {"Inference-Header-Content-Length": str(len(header))})


def valid_dense_body(rng) -> bytes:
    return json_body([json_tensor("x", dense_input(rng, int(rng.integers(1, 9))))])


INFER = "/v2/models/dense/infer"

# -- bad requests: raw HTTP --------------------------------------------------------------


def http_garbage(c: Clients, rng) -> Outcome:
    body = rng.integers(0, 256, int(rng.integers(0, 400)), dtype=np.uint8).tobytes()
    return c.raw_refusal("POST", INFER, body)


def http_truncated_json(c: Clients, rng) -> Outcome:
    body = valid_dense_body(rng)
    return c.raw_refusal("POST", INFER, body[:int(rng.integers(0, len(body) - 1))])


def http_not_object(c: Clients, rng) -> Outcome:
    body = [b"[]", b"null", b"42", b'"inputs"', b"[" * 50000, b'{"inputs": 7}',
            b'{"inputs": [7]}', b'{"inputs": [{"name": "x"}]}', b'{}',
            b'{"inputs": [{"name": 1, "shape": [1, 4], "datatype": "FP32", "data": [0,0,0,0]}]}',
            b'{"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP32", "data": 3}]}',
            (b'{"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP32", '
             b'"data": [0, 0, 0, 0], "parameters": []}]}'),
            (b'{"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP32", '
             b'"data": ["a", null, {}, []]}]}'),
            (b'{"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP32", '
             b'"data": [0, 0, 0, 0]}], "outputs": 5}'),
            b'\xff\xfe{"inputs": []}']
    return c.raw_refusal("POST", INFER, body[int(rng.integers(0, len(body)))])


def http_wrong_shape_fields(c: Clients, rng) -> Outcome:
    shapes = [[-1, 4], [1.5, 4], ["1", 4], [True, 4], "1,4", None, [1, 4, 1], [1, 5], [0, 4],
              [9, 4], [4]]
    shape = shapes[int(rng.integers(0, len(shapes)))]
    count = 4 if not isinstance(shape, list) else int(np.prod(
        [d for d in shape if isinstance(d, int) and d >= 0] or [0]))
    body = json.dumps({"inputs": [{"name": "x", "shape": shape, "datatype": "FP32",
                                   "data": [0.0] * count}]}).encode()
    return c.raw_refusal("POST", INFER, body)


def http_data_count(c: Clients, rng) -> Outcome:
    rows = int(rng.integers(1, 9))
    count = rows * DENSE_IN + int(rng.choice([-3, -1, 1, 5]))
    body = json.dumps({"inputs": [{"name": "x", "shape": [rows, DENSE_IN],
                                   "datatype": "FP32", "data": [1.0] * max(count, 0)}]})
    return c.raw_refusal("POST", INFER, body.encode())


def http_wrong_name_or_type(c: Clients, rng) -> Outcome:
    x = dense_input(rng, 2)
    tensor = json_tensor("x", x)
    choice = int(rng.integers(0, 6))
    if choice == 0:
        tensor["name"] = str(rng.choice(["X", "y", "x ", "", "input"]))
    elif choice == 1:
        tensor["datatype"] = str(rng.choice(["INT32", "FP64", "FP99", "fp32", "BF16", ""]))
    elif choice == 2:
        tensor["data"] = [True] * 8
    elif choice == 3:  # a second, unknown input
        return c.raw_refusal("POST", INFER, json_body([tensor, json_tensor("z", x)]))
    elif choice == 4:
        return c.raw_refusal("POST", INFER, json_body([tensor], [{"name": "nope"}]))
    else:  # the types model given the wrong shapes
        inputs = types_inputs(rng)
        entries = [json_tensor(k, v) for k, v in inputs.items()]
        entries[0]["shape"], entries[0]["data"] = [3, 2, 1], entries[0]["data"]
        return c.raw_refusal("POST", "/v2/models/types/infer", json_body(entries))
    return c.raw_refusal("POST", INFER, json_body([tensor]))


def http_huge_shape(c: Clients, rng) -> Outcome:
    huge = [[2 ** int(rng.integers(31, 63)), DENSE_IN], [10 ** 6] * 6, [2 ** 62, 2 ** 62],
            [1] * 40, [2 ** 64, 4]][int(rng.integers(0, 5))]
    if rng.integers(0, 2):
        body = json.dumps({"inputs": [{"name": "x", "shape": huge, "datatype": "FP32",
                                       "data": [0.0] * 4}]}).encode()
        return c.raw_refusal("POST", INFER, body)
    body, headers = binary_body([("x", huge, "FP32", b"\0" * 16, 16)])
    return c.raw_refusal("POST", INFER, body, headers)


def http_binary_size(c: Clients, rng) -> Outcome:
    rows = int(rng.integers(1, 9))
    size = rows * DENSE_IN * 4
    claimed = size + int(rng.choice([-4, -1, 1, 4, 1000]))
    payload = b"\0" * max(claimed, 0)
    body, headers = binary_body([("x", [rows, DENSE_IN], "FP32", payload, claimed)])
    return c.raw_refusal("POST", INFER, body, headers)


def http_binary_truncated(c: Clients, rng) -> Outcome:
    rows = int(rng.integers(1, 9))
    payload = dense_input(rng, rows).tobytes()
    body, headers = binary_body([("x", [rows, DENSE_IN], "FP32", payload, len(payload))])
    cut = len(body) - int(rng.integers(1, len(payload) + 1))
    return c.raw_refusal("POST", INFER, body[:cut], headers)


def http_binary_garbage(c: Clients, rng) -> Outcome:
    body = rng.integers(0, 256, int(rng.integers(1, 400)), dtype=np.uint8).tobytes()
    headers = {"Inference-Header-Content-Length": str(int(rng.integers(1, len(body) + 1)))}
    return c.raw_refusal("POST", INFER, body, headers)


def http_header_length(c: Clients, rng) -> Outcome:
    payload = dense_input(rng, 1).tobytes()
    body, headers = binary_body([("x", [1, DENSE_IN], "FP32", payload, len(payload))])
    real = int(headers["Inference-Header-Content-Length"])
    headers["Inference-Header-Content-Length"] = str(rng.choice(
        ["0", "-5", "abc", "1e3", " ", str(len(body) + 1), str(10 ** 30), str(real - 1),
         str(real + 3), "0x10"]))
    return c.raw_refusal("POST", INFER, body, headers)


def http_encoding(c: Clients, rng) -> Outcome:
    body = valid_dense_body(rng)
    choice = int(rng.integers(0, 3))
    if choice == 0:
        return c.raw_refusal("POST", INFER, body, {"Content-Encoding": "gzip"})
    if choice == 1:
        return c.raw_refusal("POST", INFER, gzip.compress(body)[:-6],
                             {"Content-Encoding": "gzip"})
    return c.raw_refusal("POST", INFER, body, {"Content-Encoding": "br"})


def http_unknown_model(c: Clients, rng) -> Outcome:
    name = "".join(rng.choice(list("abcdefghij"), int(rng.integers(3, 12))))
    choice = int(rng.integers(0, 5))
    if choice == 0:
        return c.raw_refusal("POST", f"/v2/models/m{name}/infer", valid_dense_body(rng))
    if choice == 1:
        version = str(rng.choice([str(int(rng.integers(3, 10 ** 6))), name, "-1", "0"]))
        return c.raw_refusal("POST", f"/v2/models/dense/versions/{version}/infer",
                             valid_dense_body(rng))
    if choice == 2:
        return c.raw_refusal("GET", f"/v2/models/m{name}")
    if choice == 3:
        return c.raw_refusal("GET", f"/v2/models/dense/versions/{int(rng.integers(3, 99))}"
                             f"/config")
    return c.raw_refusal("GET", f"/v2/models/m{name}/stats")


# -- well formed but wrong: tritonclient --------------------------------------------------


def _client_refusal(call: Callable[[], object]) -> Outcome:
    try:
        call()
    except InferenceServerException as error:
        assert error.message(), error
        status = error.status() or ""
        return status.removeprefix("StatusCode.")
    return "accepted"


def _wrong_tensor(module, rng):
    choice = int(rng.integers(0, 4))
    x = dense_input(rng, int(rng.integers(1, 9)))
    if choice == 0:
        name, array = str(rng.choice(["X", "input", "r"])), x
    elif choice == 1:
        name, array = "x", np.zeros((int(rng.integers(1, 9)), int(rng.choice([3, 5]))),
                                    np.float32)
    elif choice == 2:
        name, array = "x", x.astype(rng.choice([np.int32, np.float64, np.float16]))
    else:
        name, array = "x", np.zeros((int(rng.integers(9, 40)), DENSE_IN), np.float32)
    tensor = module.InferInput(name, list(array.shape), DATATYPE[array.dtype])
    tensor.set_data_from_numpy(array)
    return tensor


def client_wrong(c: Clients, rng) -> Outcome:
    use_grpc = bool(rng.integers(0, 2))
    module, client = (grpcclient, c.grpc) if use_grpc else (httpclient, c.http)
    tensor = _wrong_tensor(module, rng)
    choice = int(rng.integers(0, 4))
    if choice == 0:
        return _client_refusal(lambda: client.infer("dense", [tensor]))
    if choice == 1:  # a right tensor to an unknown model or version
        good = module.InferInput("x", [1, DENSE_IN], "FP32")
        good.set_data_from_numpy(dense_input(rng, 1))
        if rng.integers(0, 2):
            return _client_refusal(lambda: client.infer("no_such_model", [good]))
        return _client_refusal(lambda: client.infer("dense", [good],
                                                    model_version=str(rng.integers(3, 99))))
    if choice == 2:
        good = module.InferInput("x", [1, DENSE_IN], "FP32")
        good.set_data_from_numpy(dense_input(rng, 1))
        wanted = [module.InferRequestedOutput(str(rng.choice(["nope", "x", "Y"])))]
        return _client_refusal(lambda: client.infer("dense", [good], outputs=wanted))
    return _client_refusal(lambda: client.infer("dense", [tensor], model_version="1"))


# -- malformed gRPC ------------------------------------------------------------------------


def grpc_raw(c: Clients, rng) -> Outcome:
    request = service_pb2.ModelInferRequest(model_name="dense")
    rows = int(rng.integers(1, 9))
    x = dense_input(rng, rows)
    tensor = request.inputs.add(name="x", datatype="FP32", shape=[rows, DENSE_IN])
    choice = int(rng.integers(0, 9))
    if choice == 0:  # raw bytes of the wrong length (never the right one by chance)
        payload = x.tobytes()
        cut, pad = int(rng.integers(0, len(payload))), int(rng.choice([0, 3, 64]))
        pad += cut + pad == len(payload)
        request.raw_input_contents.append(payload[:cut] + b"\0" * pad)
    elif choice == 1:  # more raw contents than inputs
        request.raw_input_contents.extend([x.tobytes(), x.tobytes()])
    elif choice == 2:  # typed and raw at once
        tensor.contents.fp32_contents.extend(x.ravel().tolist())
        request.raw_input_contents.append(x.tobytes())
    elif choice == 3:  # the wrong typed field
        tensor.contents.int_contents.extend([1] * x.size)
    elif choice == 4:  # the wrong element count
        tensor.contents.fp32_contents.extend([0.0] * (x.size + int(rng.choice([-1, 1, 7]))))
    elif choice == 5:
        tensor.datatype = str(rng.choice(["FP99", "", "float32", "STRING"]))
        request.raw_input_contents.append(x.tobytes())
    elif choice == 6:  # huge or negative shapes
        del tensor.shape[:]
        tensor.shape.extend([[2 ** 62, 4], [-1, 4], [2 ** 31, 2 ** 31], [1] * 40,
                             [-(2 ** 63), 4]][int(rng.integers(0, 5))])
        request.raw_input_contents.append(x.tobytes())
    elif choice == 7:  # no inputs at all, or an unnamed one
        if rng.integers(0, 2):
            del request.inputs[:]
        else:
            tensor.name = ""
            request.raw_input_contents.append(x.tobytes())
    else:  # unknown model or version
        request.raw_input_contents.append(x.tobytes())
        if rng.integers(0, 2):
            request.model_name = "no_such_model"
        else:
            request.model_version = str(rng.choice(["7", "abc", "-2"]))
    try:
        c.stub.ModelInfer(request, timeout=30)
    except grpc.RpcError as error:
        assert error.details(), error
        return error.code().name
    return f"accepted: {request}"[:2000]


BAD_KINDS: list[Callable[[Clients, np.random.Generator], Outcome]] = [
    http_garbage, http_truncated_json, http_not_object, http_wrong_shape_fields,
    http_data_count, http_wrong_name_or_type, http_huge_shape, http_binary_size,
    http_binary_truncated, http_binary_garbage, http_header_length, http_encoding,
    http_unknown_model, client_wrong, client_wrong, grpc_raw, grpc_raw, grpc_raw]
"""client_wrong and grpc_raw drawn thrice as often as one raw-HTTP kind: they hold
several kinds each, so HTTP raw, tritonclient and raw gRPC each get about a third"""
REFUSALS = {"400", "INVALID_ARGUMENT", "NOT_FOUND"}


# -- valid requests, answered exactly ------------------------------------------------------


def valid_request(c: Clients, rng) -> Outcome:
    choice = int(rng.integers(0, 4))
    if choice == 0:  # raw JSON over the same keep-alive connection
        x = dense_input(rng, int(rng.integers(1, 9)))
        version = int(rng.integers(1, 3))
        status, payload = c.raw("POST", f"/v2/models/dense/versions/{version}/infer",
                                json_body([json_tensor("x", x)]))
        assert status == 200, payload
        outputs = {o["name"]: np.array(o["data"], np.float32).reshape(o["shape"])
                   for o in json.loads(payload)["outputs"]}
        expected = dense_answer(x, version)
    elif choice in (1, 2):  # binary tensors through tritonclient, HTTP or gRPC
        module, client = (httpclient, c.http) if choice == 1 else (grpcclient, c.grpc)
        x = dense_input(rng, int(rng.integers(1, 9)))
        version = int(rng.integers(1, 3))
        tensor = module.InferInput("x", list(x.shape), "FP32")
        tensor.set_data_from_numpy(x)
        result = client.infer("dense", [tensor], model_version=str(version))
        outputs = {name: result.as_numpy(name) for name in ("y", "r")}
        expected = dense_answer(x, version)
    else:
        module, client = (httpclient, c.http) if rng.integers(0, 2) else (grpcclient, c.grpc)
        inputs = types_inputs(rng)
        tensors = []
        for name, array in inputs.items():
            tensor = module.InferInput(name, list(array.shape), DATATYPE[array.dtype])
            tensor.set_data_from_numpy(array)
            tensors.append(tensor)
        result = client.infer("types", tensors)
        expected = types_answer(inputs)
        outputs = {name: result.as_numpy(name) for name in expected}
    for name, value in expected.items():
        assert outputs[name].dtype == value.dtype and np.array_equal(outputs[name], value), (
            f"output {name}: {outputs[name]!r}, expected {value!r}")
    return "ok"


def run_mix(c: Clients, seed: int, bad_count: int) -> Counter:
    """`bad_count` bad requests with a valid one before every VALID_EVERY-th; the outcome
    counts by (kind, outcome). Fails at the first refusal of the wrong kind."""
    rng = np.random.default_rng(seed)
    outcomes: Counter = Counter()
    for index in range(bad_count):
        if index % VALID_EVERY == 0:
            outcomes["valid", valid_request(c, rng)] += 1
        kind = BAD_KINDS[int(rng.integers(0, len(BAD_KINDS)))]
        outcome = kind(c, rng)
        assert outcome in REFUSALS, (
            f"bad request {index} (seed {seed}, {kind.__name__}) answered {outcome}\n"
            f"{c.server.log()[-3000:]}")
        outcomes[kind.__name__, outcome] += 1
    return outcomes


@pytest.mark.parametrize("count", [  # 10,000 (twice, with the warm-up): 49 s here, more
    1000, pytest.param(10000, marks=pytest.mark.slow)], ids=["1k", "10k"])  # than its share
def test_random_bad_requests_refused_server_up_memory_flat(server, count):
    """`count` bad requests after a warm-up of `count` others: each refused 400 /
    INVALID_ARGUMENT / NOT_FOUND, valid ones between them answered exactly, the server
    still live and ready, no error logged, VmRSS within RSS_SLACK_BYTES of the warm-up's."""
    clients = Clients(server)
    pid = server.process.pid
    try:
        rss_start = vm_rss(pid)
        started = time.monotonic()
        warm = run_mix(clients, seed=1000 + count, bad_count=count)
        warm_s = time.monotonic() - started
        rss_warm = vm_rss(pid)
        outcomes = run_mix(clients, seed=count, bad_count=count)
        rss_after = vm_rss(pid)
        assert clients.http.is_server_live() and clients.http.is_server_ready()
        assert clients.grpc.is_server_ready()
    finally:
        clients.close()
    assert server.process.poll() is None
    log = server.log()
    assert '"level": "error"' not in log and "Traceback" not in log, log[-3000:]
    bad = sum(n for (kind, _), n in outcomes.items() if kind != "valid")
    assert bad == count and outcomes["valid", "ok"] == count // VALID_EVERY
    kinds = {kind for kind, _ in outcomes}
    assert kinds == {k.__name__ for k in BAD_KINDS} | {"valid"}, kinds
    assert sum(warm.values()) == sum(outcomes.values())
    assert clients.reconnects == 0, "the server closed a keep-alive connection"
    print(f"\n{count} bad + {count // VALID_EVERY} valid requests twice in "
          f"{2 * warm_s:.1f} s; VmRSS at start {rss_start / 2**20:.1f} MiB, after warm-up {rss_warm / 2**20:.1f} MiB, after run "
          f"{rss_after / 2**20:.1f} MiB ({(rss_after - rss_warm) / 2**10:+.0f} KiB); "
          f"HTTP reconnects {clients.reconnects}; outcomes "
          f"{dict(sorted(Counter(o for _, o in outcomes.elements()).items()))}")
    assert rss_after - rss_warm <= RSS_SLACK_BYTES, (
        f"VmRSS grew {(rss_after - rss_warm) / 2**20:.1f} MiB over {count} bad requests")

