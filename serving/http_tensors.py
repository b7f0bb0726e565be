"""The Open Inference Protocol's HTTP body <-> InferRequest / InferResponse.

A request body is a JSON object, or (binary tensors) a JSON header of
`Inference-Header-Content-Length` bytes followed by each binary input's raw bytes in the
order of `inputs`, each sized by its `binary_data_size` parameter; BYTES elements are a
4-byte little-endian length and the bytes. Responses mirror it, as tritonclient.http's
InferResult reads them. Every size is checked against shape x datatype before any array is
made, so a body cannot claim more than it holds; anything wrong is ServingError.invalid
naming the tensor and what was wrong.
"""

from __future__ import annotations

import json
import math
import struct
import zlib
from typing import Any

import numpy as np

from onnxc.serving.errors import ServingError
from onnxc.serving.messages import DATATYPES, InferRequest, InferResponse, datatype_of

HEADER_LENGTH = "Inference-Header-Content-Length"

_UNSUPPORTED_PARAMETERS = {
    "shared_memory_region": "shared-memory tensors are not supported by onnxc serve",
    "classification": "the classification extension is not supported by onnxc serve",
}


def decompress(body: bytes, encoding: str | None, limit: int) -> bytes:
    """The body under `Content-Encoding` gzip or deflate (zlib), refused past `limit` bytes
    once inflated (a small compressed body must not expand without bound)."""
    if not encoding or encoding.lower() == "identity":
        return body
    encoding = encoding.lower()
    if encoding not in ("gzip", "deflate"):
        raise ServingError.invalid(f"unsupported Content-Encoding '{encoding}' "
                                   f"(supported: gzip, deflate)")
    inflater = zlib.decompressobj(wbits=31 if encoding == "gzip" else 15)
    try:
        data = inflater.decompress(body, limit + 1)
    except zlib.error as err:
        raise ServingError.invalid(f"the request body is not valid {encoding} data: {err}")
    if len(data) > limit:
        raise ServingError.invalid(f"the request body inflates to more than the limit of {limit} bytes")
    if not inflater.eof:
        raise ServingError.invalid(f"the request body is truncated {encoding} data")
    return data


def header_length(value: str | None, body_size: int) -> int | None:
    """The JSON header's size from `Inference-Header-Content-Length` (None: all JSON)."""
    if value is None:
        return None
    text = value.strip()
    if not text.isdigit():
        raise ServingError.invalid(f"{HEADER_LENGTH} must be a non-negative integer, got "
                                   f"'{value[:40]}'")
    length = int(text)
    if length == 0 or length > body_size:
        raise ServingError.invalid(f"{HEADER_LENGTH} is {length} but the body has "
                                   f"{body_size} bytes: the JSON header must fit in it")
    return length


def _json_object(data: bytes | memoryview, what: str) -> dict[str, Any]:
    try:
        parsed = json.loads(bytes(data))
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise ServingError.invalid(f"malformed JSON in the {what}: {err}") from None
    if not isinstance(parsed, dict):
        raise ServingError.invalid(f"the {what} must be a JSON object, got "
                                   f"{type(parsed).__name__}")
    return parsed


def _parameters(entry: dict[str, Any], what: str) -> dict[str, Any]:
    parameters = entry.get("parameters", {})
    if not isinstance(parameters, dict):
        raise ServingError.invalid(f"{what}: 'parameters' must be a JSON object")
    for key, reason in _UNSUPPORTED_PARAMETERS.items():
        if parameters.get(key) not in (None, 0, ""):
            raise ServingError.invalid(f"{what}: {reason} (parameter '{key}')")
    return parameters


def _shape(entry: dict[str, Any], name: str) -> tuple[int, ...]:
    shape = entry.get("shape")
    if not isinstance(shape, list) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise ServingError.invalid(f"input '{name}': 'shape' must be a list of non-negative "
                                   f"integers, got {json.dumps(shape)[:80]}")
    return tuple(shape)


def _datatype(entry: dict[str, Any], name: str) -> str:
    datatype = entry.get("datatype")
    if not isinstance(datatype, str) or datatype not in DATATYPES:
        raise ServingError.invalid(f"input '{name}': unsupported datatype "
                                   f"{json.dumps(datatype)[:40]} (supported: "
                                   f"{', '.join(DATATYPES)})")
    return datatype


def _flatten(data: Any, name: str) -> list[Any]:
    """Row-major elements of `data`, flat or nested lists as the protocol allows."""
    if not isinstance(data, list):
        raise ServingError.invalid(f"input '{name}': 'data' must be a JSON array")
    if not any(isinstance(item, list) for item in data):
        return data
    flat: list[Any] = []
    stack = [iter(data)]
    while stack:
        for item in stack[-1]:
            if isinstance(item, list):
                stack.append(iter(item))
                break
            flat.append(item)
        else:
            stack.pop()
    return flat


def _from_json(data: Any, name: str, datatype: str, shape: tuple[int, ...]) -> np.ndarray:
    flat = _flatten(data, name)
    count = math.prod(shape)
    if len(flat) != count:
        raise ServingError.invalid(f"input '{name}': shape {list(shape)} holds {count} "
                                   f"elements but 'data' has {len(flat)}")
    if datatype == "BYTES":
        if not all(isinstance(item, str) for item in flat):
            raise ServingError.invalid(f"input '{name}': BYTES data must be JSON strings")
        array = np.empty(count, dtype=object)
        try:
            array[:] = [item.encode() for item in flat]
        except UnicodeEncodeError as err:  # a lone surrogate ("\ud800") is valid JSON
            raise ServingError.invalid(f"input '{name}': a BYTES string is not valid "
                                       f"Unicode: {err.reason}") from None
        return array.reshape(shape)
    target = DATATYPES[datatype]
    if target.kind in "biu":  # exact types: a float or a bool is not an integer here
        wanted = bool if target.kind == "b" else int
        if not all(type(value) is wanted for value in flat):
            kind = "booleans" if target.kind == "b" else "integers"
            raise ServingError.invalid(f"input '{name}': {datatype} data must be JSON {kind}")
        if target.kind != "b" and count:
            info = np.iinfo(target)
            if min(flat) < info.min or max(flat) > info.max:
                raise ServingError.invalid(f"input '{name}': a value is out of range for "
                                           f"{datatype} [{info.min}, {info.max}]")
        return np.array(flat, dtype=target).reshape(shape)
    values = np.array(flat)
    if count and values.dtype.kind not in "iuf":
        raise ServingError.invalid(f"input '{name}': {datatype} data must be JSON numbers")
    return values.astype(target).reshape(shape)


def _bytes_elements(raw: memoryview, count: int, name: str) -> np.ndarray:
    """`count` BYTES elements (4-byte little-endian length, then the bytes) filling `raw`."""
    offset, size = 0, len(raw)
    if 4 * count > size:  # before allocating: a shape must not claim more than the body holds
        raise ServingError.invalid(f"input '{name}': {count} BYTES elements need at least "
                                   f"{4 * count} bytes but binary_data_size is {size}")
    array = np.empty(count, dtype=object)
    for i in range(count):
        if offset + 4 > size:
            raise ServingError.invalid(f"input '{name}': binary BYTES data ends at element "
                                       f"{i} of {count} (no room for its 4-byte length)")
        (length,) = struct.unpack_from("<I", raw, offset)
        offset += 4
        if offset + length > size:
            raise ServingError.invalid(f"input '{name}': BYTES element {i} claims {length} "
                                       f"bytes but {size - offset} remain")
        array[i] = bytes(raw[offset:offset + length])
        offset += length
    if offset != size:
        raise ServingError.invalid(f"input '{name}': binary_data_size is {size} but its "
                                   f"{count} BYTES elements take {offset}")
    return array


def _from_binary(raw: memoryview, name: str, datatype: str,
                 shape: tuple[int, ...]) -> np.ndarray:
    count = math.prod(shape)
    if datatype == "BYTES":
        return _bytes_elements(raw, count, name).reshape(shape)
    dtype = DATATYPES[datatype].newbyteorder("<")
    expected = count * dtype.itemsize
    if len(raw) != expected:
        raise ServingError.invalid(f"input '{name}': binary_data_size is {len(raw)} bytes "
                                   f"but shape {list(shape)} of {datatype} needs {expected}")
    if datatype == "BOOL":
        return (np.frombuffer(raw, dtype=np.uint8) != 0).reshape(shape)
    return np.frombuffer(raw, dtype=dtype).reshape(shape)


def decode_request(body: bytes, header_size: int | None = None) -> InferRequest:
    """An inference request body (`header_size`: the JSON header's length when binary
    tensors follow it) as an InferRequest; refused with the reason when malformed."""
    view = memoryview(body)
    header = view if header_size is None else view[:header_size]
    binary = view[len(header):]
    document = _json_object(header, "request body" if header_size is None
                            else "inference header")
    entries = document.get("inputs")
    if not isinstance(entries, list):
        raise ServingError.invalid("the request must have 'inputs', a JSON array")
    inputs: dict[str, np.ndarray] = {}
    offset = 0
    for position, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise ServingError.invalid(f"inputs[{position}] must be an object with a 'name'")
        name = entry["name"]
        if name in inputs:
            raise ServingError.invalid(f"input '{name}' is given twice")
        shape, datatype = _shape(entry, name), _datatype(entry, name)
        parameters = _parameters(entry, f"input '{name}'")
        size = parameters.get("binary_data_size")
        if size is None:
            if "data" not in entry:
                raise ServingError.invalid(f"input '{name}' has neither 'data' nor a "
                                           f"binary_data_size parameter")
            inputs[name] = _from_json(entry["data"], name, datatype, shape)
            continue
        if "data" in entry:
            raise ServingError.invalid(f"input '{name}' has both 'data' and binary_data_size")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise ServingError.invalid(f"input '{name}': binary_data_size must be a "
                                       f"non-negative integer, got {json.dumps(size)[:40]}")
        if offset + size > len(binary):
            raise ServingError.invalid(
                f"input '{name}': binary_data_size {size} at offset {offset} runs past the "
                f"{len(binary)} bytes of binary data after the header")
        inputs[name] = _from_binary(binary[offset:offset + size], name, datatype, shape)
        offset += size
    if offset != len(binary):
        raise ServingError.invalid(f"{len(binary) - offset} bytes after the header are not "
                                   f"claimed by any input's binary_data_size")
    request = InferRequest(inputs=inputs)
    _decode_outputs(document, request)
    request_id = document.get("id", "")
    if not isinstance(request_id, str):
        raise ServingError.invalid("the request 'id' must be a string")
    request.id = request_id
    request.parameters = dict(_parameters(document, "the request"))
    return request


def _decode_outputs(document: dict[str, Any], request: InferRequest) -> None:
    entries = document.get("outputs")
    if entries is None:
        return
    if not isinstance(entries, list):
        raise ServingError.invalid("'outputs' must be a JSON array")
    names: list[str] = []
    for position, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise ServingError.invalid(f"outputs[{position}] must be an object with a 'name'")
        name = entry["name"]
        if name in names:
            raise ServingError.invalid(f"output '{name}' is requested twice")
        names.append(name)
        binary = _parameters(entry, f"output '{name}'").get("binary_data")
        if binary is not None:
            if not isinstance(binary, bool):
                raise ServingError.invalid(f"output '{name}': binary_data must be a boolean")
            request.binary_outputs[name] = binary
    request.requested_outputs = names


def _bytes_element(value: Any) -> bytes:
    return value.encode() if isinstance(value, str) else bytes(value)


def _binary(array: np.ndarray, datatype: str) -> bytes:
    if datatype == "BYTES":
        parts = []
        for value in array.reshape(-1).tolist():
            data = _bytes_element(value)
            parts.append(struct.pack("<I", len(data)))
            parts.append(data)
        return b"".join(parts)
    return np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()


def _json_data(array: np.ndarray, name: str, datatype: str) -> list[Any]:
    flat = array.reshape(-1).tolist()
    if datatype != "BYTES":
        return flat
    try:
        return [value if isinstance(value, str) else bytes(value).decode() for value in flat]
    except UnicodeDecodeError:
        raise ServingError.invalid(f"output '{name}' holds bytes that are not UTF-8, which "
                                   f"JSON cannot carry: request it with binary_data") from None


def encode_response(response: InferResponse, request: InferRequest) -> tuple[bytes, int | None]:
    """(body, JSON header length or None when the body is all JSON) of a response, binary
    for the outputs the request asked so (binary_data, or binary_data_output)."""
    default_binary = request.parameters.get("binary_data_output") is True
    outputs, blobs = [], []
    for name, array in response.outputs.items():
        datatype = datatype_of(array.dtype)
        entry: dict[str, Any] = {"name": name, "datatype": datatype, "shape": list(array.shape)}
        if request.binary_outputs.get(name, default_binary):
            blob = _binary(array, datatype)
            blobs.append(blob)
            entry["parameters"] = {"binary_data_size": len(blob)}
        else:
            entry["data"] = _json_data(array, name, datatype)
        outputs.append(entry)
    document: dict[str, Any] = {"model_name": response.model_name,
                                "model_version": response.model_version}
    if response.id:
        document["id"] = response.id
    if response.parameters:
        document["parameters"] = response.parameters
    document["outputs"] = outputs
    header = json.dumps(document, separators=(",", ":")).encode()
    if not blobs:
        return header, None
    return b"".join([header, *blobs]), len(header)
