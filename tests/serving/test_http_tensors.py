"""The HTTP tensor codec against tritonclient's own encoder and decoder.

Requests are built by tritonclient.http (InferInput.set_data_from_numpy and the body
_get_inference_request makes, the bytes a real client sends) and decoded by
onnxc.serving.http_tensors; responses are encoded by it and read back by tritonclient's
InferResult. Values must come back exactly (the codec never converts a value, only moves
bytes), so every comparison is exact.
"""

from __future__ import annotations

import gzip
import json
import zlib

import numpy as np
import pytest

from onnxc.serving.errors import ServingError
from onnxc.serving.http_tensors import decode_request, decompress, encode_response, header_length
from onnxc.serving.messages import InferResponse

httpclient = pytest.importorskip("tritonclient.http")
from tritonclient.http._utils import _get_inference_request

RNG = np.random.default_rng(7)

ARRAYS = {
    "FP32": RNG.standard_normal((2, 3)).astype(np.float32),
    "FP64": RNG.standard_normal((4,)).astype(np.float64),
    "FP16": RNG.standard_normal((3, 1)).astype(np.float16),
    "INT64": RNG.integers(-2**40, 2**40, (2, 2)).astype(np.int64),
    "INT32": RNG.integers(-2**31, 2**31 - 1, (5,)).astype(np.int32),
    "INT8": RNG.integers(-128, 127, (2, 2)).astype(np.int8),
    "UINT8": RNG.integers(0, 255, (3,)).astype(np.uint8),
    "UINT64": np.array([0, 2**63 + 5], dtype=np.uint64),
    "BOOL": np.array([[True, False, True]]),
    "BYTES": np.array([[b"alpha", b""], [b"\xce\xbb x", b"last one"]], dtype=object),
}


def _body(inputs, outputs=None, request_id=""):
    """The body and header length tritonclient.http sends for these inputs."""
    return _get_inference_request(
        inputs=inputs, request_id=request_id, outputs=outputs, sequence_id=0,
        sequence_start=False, sequence_end=False, priority=0, timeout=None,
        custom_parameters=None)


def _input(name, array, binary):
    tensor = httpclient.InferInput(name, list(array.shape),
                                   "BYTES" if array.dtype == object else
                                   {v: k for k, v in _DTYPES.items()}[array.dtype])
    tensor.set_data_from_numpy(array, binary_data=binary)
    return tensor


_DTYPES = {k: v.dtype for k, v in ARRAYS.items() if k != "BYTES"}


def _equal(got, want):
    assert got.shape == want.shape
    if want.dtype == object:
        assert got.dtype == object and got.tolist() == want.tolist()
    else:
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "json"])
@pytest.mark.parametrize("datatype", list(ARRAYS))
def test_request_from_tritonclient(datatype, binary):
    array = ARRAYS[datatype]
    body, json_size = _body([_input("x", array, binary)])
    assert (json_size is not None) == binary
    if isinstance(body, str):
        body = body.encode()
    request = decode_request(body, header_length(
        None if json_size is None else str(json_size), len(body)))
    _equal(request.inputs["x"], array)
    assert request.requested_outputs is None
    assert request.parameters == {"binary_data_output": True}


def test_mixed_inputs_outputs_and_id():
    arrays = {"a": ARRAYS["FP32"], "b": ARRAYS["BYTES"], "c": ARRAYS["INT8"]}
    inputs = [_input("a", arrays["a"], True), _input("b", arrays["b"], False),
              _input("c", arrays["c"], True)]
    outputs = [httpclient.InferRequestedOutput("y", binary_data=False),
               httpclient.InferRequestedOutput("z", binary_data=True)]
    body, json_size = _body(inputs, outputs, request_id="r-17")
    request = decode_request(body, json_size)
    for name, array in arrays.items():
        _equal(request.inputs[name], array)
    assert request.requested_outputs == ["y", "z"]
    assert request.binary_outputs == {"y": False, "z": True}
    assert request.id == "r-17"
    assert "binary_data_output" not in request.parameters


def test_nested_json_data():
    body = json.dumps({"inputs": [{"name": "x", "shape": [2, 2], "datatype": "INT32",
                                   "data": [[1, 2], [3, 4]]}]}).encode()
    _equal(decode_request(body).inputs["x"], np.array([[1, 2], [3, 4]], dtype=np.int32))


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "json"])
def test_response_read_by_tritonclient(binary):
    outputs = dict(ARRAYS)
    names = list(outputs)
    body, json_size = _body(
        [_input("x", ARRAYS["FP32"], True)],
        [httpclient.InferRequestedOutput(n, binary_data=binary) for n in names])
    request = decode_request(body, json_size)
    response = InferResponse("m", "3", outputs, id="abc")
    encoded, length = encode_response(response, request)
    assert (length is not None) == binary
    result = httpclient.InferResult.from_response_body(encoded, header_length=length)
    for name, array in outputs.items():
        if array.dtype == object and not binary:  # tritonclient reads JSON strings as str
            array = np.vectorize(bytes.decode, otypes=[object])(array)
        _equal(result.as_numpy(name), array)
    document = result.get_response()
    assert (document["model_name"], document["model_version"], document["id"]) == ("m", "3",
                                                                                   "abc")


def test_response_binary_by_default_when_no_outputs_named():
    body, json_size = _body([_input("x", ARRAYS["FP32"], False)])
    request = decode_request(body, json_size)
    encoded, length = encode_response(InferResponse("m", "1", {"y": ARRAYS["INT64"]}), request)
    assert length is not None
    _equal(httpclient.InferResult.from_response_body(encoded, header_length=length)
           .as_numpy("y"), ARRAYS["INT64"])


def test_response_json_refuses_non_utf8_bytes():
    request = decode_request(json.dumps({"inputs": []}).encode())
    with pytest.raises(ServingError, match="not UTF-8.*binary_data"):
        encode_response(InferResponse("m", "1", {"s": np.array([b"\xff"], dtype=object)}),
                        request)


def _json(document):
    return json.dumps(document).encode()


def _x(**fields):
    return {"inputs": [{"name": "x", "shape": [2], "datatype": "FP32", "data": [1, 2],
                        **fields}]}


BAD = [
    (b"{not json", None, "malformed JSON"),
    (b"[1, 2]", None, "must be a JSON object"),
    (b"\xff\xfe", None, "malformed JSON"),
    (_json({}), None, "must have 'inputs'"),
    (_json({"inputs": [{"shape": [1]}]}), None, r"inputs\[0\] must be an object with a 'name'"),
    (_json(_x(shape=[3])), None, r"shape \[3\] holds 3 elements but 'data' has 2"),
    (_json(_x(shape=[-1, 2])), None, "non-negative integers"),
    (_json(_x(datatype="BF16")), None, "unsupported datatype \"BF16\""),
    (_json(_x(data=["1", "2"])), None, "FP32 data must be JSON numbers"),
    (_json(_x(datatype="INT8", data=[1, 300])), None, r"out of range for INT8 \[-128, 127\]"),
    (_json(_x(datatype="INT32", data=[1.5, 2])), None, "INT32 data must be JSON integers"),
    (_json(_x(datatype="BOOL", data=[1, 0])), None, "BOOL data must be JSON booleans"),
    (_json(_x(datatype="BYTES", data=[1, 2])), None, "BYTES data must be JSON strings"),
    (b'{"inputs": [{"name": "x", "shape": [1], "datatype": "BYTES", "data": ["\\ud800"]}]}',
     None, "not valid Unicode: surrogates not allowed"),
    (_json({"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1.0]}],
            "id": 7}), None, "'id' must be a string"),
    (b"[" * 100_000, None, "malformed JSON"),
    (_json({"inputs": [{"name": "x", "shape": [1], "datatype": "FP32"}]}), None,
     "neither 'data' nor a binary_data_size"),
    (_json({"inputs": [_x()["inputs"][0]] * 2}), None, "input 'x' is given twice"),
    (_json(_x(parameters={"shared_memory_region": "r"})), None, "shared-memory"),
    (_json({**_x(), "outputs": [{"name": "y"}, {"name": "y"}]}), None, "requested twice"),
    (_json({**_x(), "outputs": [{"name": "y", "parameters": {"binary_data": "yes"}}]}), None,
     "binary_data must be a boolean"),
    (_json({**_x(), "outputs": [{"name": "y", "parameters": {"classification": 3}}]}), None,
     "classification"),
]


def _binary_x(size, payload, datatype="FP32", shape=(2,)):
    header = _json({"inputs": [{"name": "x", "shape": list(shape), "datatype": datatype,
                                "parameters": {"binary_data_size": size}}]})
    return header + payload, len(header)


BAD += [
    (*_binary_x(4, b"\0" * 4), r"binary_data_size is 4 bytes but shape \[2\] of FP32 needs 8"),
    (*_binary_x(8, b"\0" * 4), "runs past the 4 bytes of binary data"),
    (*_binary_x(8, b"\0" * 12), "4 bytes after the header are not claimed"),
    (*_binary_x(-1, b""), "binary_data_size must be a non-negative integer"),
    (*_binary_x(8, b"\5\0\0\0abc\0", "BYTES", (2,)), "claims 5 bytes but 4 remain"),
    (*_binary_x(4, b"\0" * 4, "BYTES", (10**12,)), "need at least"),
    (*_binary_x(8, b"\1\0\0\0a\0\0\0", "BYTES", (1,)), "its 1 BYTES elements take 5"),
]


@pytest.mark.parametrize("body,length,reason", BAD, ids=[r for _, _, r in BAD])
def test_bad_request_is_invalid_argument(body, length, reason):
    with pytest.raises(ServingError, match=reason) as caught:
        decode_request(body, length)
    assert caught.value.status == "INVALID_ARGUMENT" and caught.value.http_status == 400


@pytest.mark.parametrize("value,size,reason", [
    ("abc", 10, "must be a non-negative integer"), ("-3", 10, "must be a non-negative"),
    ("0", 10, "must fit"), ("11", 10, "is 11 but the body has 10 bytes")])
def test_bad_header_length(value, size, reason):
    with pytest.raises(ServingError, match=reason):
        header_length(value, size)


def test_decompress():
    data = _json(_x())
    assert decompress(gzip.compress(data), "gzip", 1 << 20) == data
    assert decompress(zlib.compress(data), "deflate", 1 << 20) == data
    assert decompress(data, None, 1 << 20) == data
    with pytest.raises(ServingError, match="inflates to more than the limit of 1000") as caught:
        decompress(gzip.compress(b"\0" * 100_000), "gzip", 1000)
    assert caught.value.http_status == 400
    with pytest.raises(ServingError, match="not valid gzip"):
        decompress(b"plain", "gzip", 1000)
    with pytest.raises(ServingError, match="truncated"):
        decompress(gzip.compress(data)[:-12], "gzip", 1000)
    with pytest.raises(ServingError, match="unsupported Content-Encoding 'br'"):
        decompress(data, "br", 1000)


def _pick(rng, items):
    return items[int(rng.integers(0, len(items)))]


def _random_json_value(rng, depth=0):
    kind = int(rng.integers(0, 8 if depth < 3 else 5))
    if kind == 0:
        return None
    if kind == 1:
        return bool(rng.integers(0, 2))
    if kind == 2:
        return int(rng.integers(-2**62, 2**62)) * _pick(rng, [1, 10**10])
    if kind == 3:
        return float(rng.standard_normal())
    if kind == 4:
        return _pick(rng, ["x", "", "FP32", "BYTES", "INT8", "\u03bb"])
    if kind in (5, 6):
        return [_random_json_value(rng, depth + 1) for _ in range(int(rng.integers(0, 4)))]
    keys = ["name", "shape", "datatype", "data", "parameters", "binary_data_size",
            "binary_data", "binary_data_output", "inputs", "outputs", "id"]
    return {_pick(rng, keys): _random_json_value(rng, depth + 1)
            for _ in range(int(rng.integers(0, 4)))}


def _random_input(rng):
    """An input entry whose fields are each present or not, each of a plausible or a
    random value."""
    fields = {
        "name": lambda: _pick(rng, ["x", "y"]),
        "shape": lambda: [int(d) for d in rng.integers(-1, 4, int(rng.integers(0, 3)))],
        "datatype": lambda: _pick(rng, ["FP32", "INT8", "UINT64", "BOOL", "BYTES"]),
        "data": lambda: [rng.standard_normal(int(rng.integers(0, 7))).tolist(),
                         [bool(b) for b in rng.integers(0, 2, 3)],
                         [int(v) for v in rng.integers(-300, 300, 4)],
                         ["a", "bc"]][int(rng.integers(0, 4))],
        "parameters": lambda: {"binary_data_size": int(rng.integers(-1, 5))},
    }
    return {key: (make() if rng.random() < 0.8 else _random_json_value(rng))
            for key, make in fields.items() if rng.random() < 0.85}


def test_fuzzed_bodies_are_decoded_or_refused():
    """Mutated tritonclient bodies (bytes flipped, cut, the header length moved) and random
    JSON documents: decode_request answers an InferRequest or a ServingError, never another
    exception (which the server would report as a 500)."""
    rng = np.random.default_rng(99)
    seeds = [_body([_input("a", ARRAYS["FP32"], True), _input("b", ARRAYS["BYTES"], True),
                    _input("c", ARRAYS["INT8"], False)]),
             _body([_input("s", ARRAYS["BYTES"], False), _input("f", ARRAYS["BOOL"], True)])]
    decoded = refused = 0
    for i in range(3000):
        if i % 3 == 2:
            document = {"inputs": [_random_input(rng) for _ in range(2)],
                        "outputs": _random_json_value(rng), "parameters": _random_json_value(rng)}
            body, length = json.dumps(document).encode(), None
        else:
            body, length = seeds[i % 2]
            body, mutation = bytearray(body), int(rng.integers(0, 4))
            for _ in range(int(rng.integers(1, 4))):  # 0: in the tensor bytes, 1: anywhere
                at = int(rng.integers(length if mutation == 0 else 0, len(body)))
                body[at] = int(rng.integers(0, 256))
            if mutation == 2:
                body = body[:int(rng.integers(0, len(body)))]
            if mutation == 3:
                length = max(1, length + int(rng.integers(-3, 4)))
            body = bytes(body)
        try:
            decode_request(body, header_length(str(length), len(body))
                           if length is not None else None)
            decoded += 1
        except ServingError:
            refused += 1
    assert decoded > 50 and refused > 1000, (decoded, refused)
