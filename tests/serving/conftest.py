"""A real `onnxc serve` process over a repository of tiny seeded models, for tritonclient.

`serving_repository` writes the repository (onnx.helper models, Triton config.pbtxt);
`serve_process` starts `onnxc serve` on free loopback ports and waits for
/v2/health/ready; `server` is one module-scoped process the HTTP and gRPC tests share
(urls for tritonclient.http and tritonclient.grpc, and the seeded weights to compute
expected answers with). Tests that stop their server start their own with `serve_process`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

OPSET = [helper.make_opsetid("", 17)]
READY_TIMEOUT_S = 180.0
"""compiling the repository's models cold on a shared 2-core machine, plus start-up"""

DENSE_IN, DENSE_OUT = 4, 3
HEAVY_WIDTH, HEAVY_LAYERS = 256, 8


def dense_weights(version: int) -> tuple[np.ndarray, np.ndarray]:
    """The seeded weights of `dense` version `version` (tests compute answers from them)."""
    rng = np.random.default_rng(100 + version)
    return (rng.standard_normal((DENSE_IN, DENSE_OUT)).astype(np.float32),
            rng.standard_normal(DENSE_OUT).astype(np.float32))


def _save(model: onnx.ModelProto, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def _dense(version: int) -> onnx.ModelProto:
    """y = x @ W + b and r = relu(x), x [batch, 4] FP32 (symbolic batch: batched in one run)."""
    weight, bias = dense_weights(version)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["xw"]),
         helper.make_node("Add", ["xw", "b"], ["y"]),
         helper.make_node("Relu", ["x"], ["r"])],
        "dense",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", DENSE_IN])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", DENSE_OUT]),
         helper.make_tensor_value_info("r", TensorProto.FLOAT, ["batch", DENSE_IN])],
        [numpy_helper.from_array(weight, "W"), numpy_helper.from_array(bias, "b")])
    return helper.make_model(graph, opset_imports=OPSET)


DENSE_CONFIG = """
name: "dense"
max_batch_size: 8
input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "y" data_type: TYPE_FP32 dims: [ 3 ] },
         { name: "r" data_type: TYPE_FP32 dims: [ 4 ] } ]
version_policy: { all { } }
dynamic_batching { max_queue_delay_microseconds: 2000 }
"""


def _types() -> onnx.ModelProto:
    """One output per datatype the protocol moves differently: i = n + 1 (INT64),
    nb = not(flag) (BOOL), h = -half (FP16), u = Identity(u8) (UINT8). Fixed shapes, no
    batching (max_batch_size 0, the config derived from the model)."""
    graph = helper.make_graph(
        [helper.make_node("Add", ["n", "one"], ["i"]),
         helper.make_node("Not", ["flag"], ["nb"]),
         helper.make_node("Neg", ["half"], ["h"]),
         helper.make_node("Identity", ["u8"], ["u"])],
        "types",
        [helper.make_tensor_value_info("n", TensorProto.INT64, [2, 3]),
         helper.make_tensor_value_info("flag", TensorProto.BOOL, [4]),
         helper.make_tensor_value_info("half", TensorProto.FLOAT16, [2, 2]),
         helper.make_tensor_value_info("u8", TensorProto.UINT8, [5])],
        [helper.make_tensor_value_info("i", TensorProto.INT64, [2, 3]),
         helper.make_tensor_value_info("nb", TensorProto.BOOL, [4]),
         helper.make_tensor_value_info("h", TensorProto.FLOAT16, [2, 2]),
         helper.make_tensor_value_info("u", TensorProto.UINT8, [5])],
        [numpy_helper.from_array(np.array(1, dtype=np.int64), "one")])
    return helper.make_model(graph, opset_imports=OPSET)


def _strings() -> onnx.ModelProto:
    """s = Identity(text): STRING tensors, the protocol's BYTES."""
    graph = helper.make_graph(
        [helper.make_node("Identity", ["text"], ["s"])], "strings",
        [helper.make_tensor_value_info("text", TensorProto.STRING, ["n"])],
        [helper.make_tensor_value_info("s", TensorProto.STRING, ["n"])])
    return helper.make_model(graph, opset_imports=OPSET)


STRINGS_CONFIG = """
name: "strings"
max_batch_size: 0
input [ { name: "text" data_type: TYPE_STRING dims: [ -1 ] } ]
output [ { name: "s" data_type: TYPE_STRING dims: [ -1 ] } ]
"""


def heavy_weights() -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    scale = 1 / np.sqrt(HEAVY_WIDTH)
    return [(rng.standard_normal((HEAVY_WIDTH, HEAVY_WIDTH)) * scale).astype(np.float32)
            for _ in range(HEAVY_LAYERS)]


def _heavy() -> onnx.ModelProto:
    """x [rows, 256] through 8 tanh(x @ W) layers: a request that takes a while when it
    has many rows (graceful-shutdown tests need requests in flight)."""
    nodes, names = [], "x"
    for layer in range(HEAVY_LAYERS):
        nodes += [helper.make_node("MatMul", [names, f"W{layer}"], [f"m{layer}"]),
                  helper.make_node("Tanh", [f"m{layer}"], [f"t{layer}"])]
        names = f"t{layer}"
    nodes.append(helper.make_node("Identity", [names], ["y"]))
    graph = helper.make_graph(
        nodes, "heavy",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["rows", HEAVY_WIDTH])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["rows", HEAVY_WIDTH])],
        [numpy_helper.from_array(w, f"W{i}") for i, w in enumerate(heavy_weights())])
    return helper.make_model(graph, opset_imports=OPSET)


HEAVY_CONFIG = """
name: "heavy"
max_batch_size: 0
input [ { name: "x" data_type: TYPE_FP32 dims: [ -1, 256 ] } ]
output [ { name: "y" data_type: TYPE_FP32 dims: [ -1, 256 ] } ]
instance_group [ { count: 2 } ]
"""


def write_repository(root: Path) -> Path:
    """dense (versions 1 and 2, batched), types (derived config), strings (not loaded at
    start: the BYTES test loads it), heavy (slow on big inputs), and `broken` (a model that fails to load: the others must still serve)."""
    for version in (1, 2):
        _save(_dense(version), root / "dense" / str(version) / "model.onnx")
    (root / "dense" / "config.pbtxt").write_text(DENSE_CONFIG)
    _save(_types(), root / "types" / "1" / "model.onnx")
    _save(_strings(), root / "strings" / "1" / "model.onnx")
    (root / "strings" / "config.pbtxt").write_text(STRINGS_CONFIG)
    _save(_heavy(), root / "heavy" / "1" / "model.onnx")
    (root / "heavy" / "config.pbtxt").write_text(HEAVY_CONFIG)
    (root / "broken" / "1").mkdir(parents=True)
    (root / "broken" / "1" / "model.onnx").write_bytes(b"this is not an onnx model")
    return root


@pytest.fixture(scope="session")
def serving_repository(tmp_path_factory) -> Path:
    return write_repository(tmp_path_factory.mktemp("repository"))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class ServeProcess:
    """A running `onnxc serve` and where to reach it."""

    process: subprocess.Popen
    http_port: int
    grpc_port: int
    metrics_port: int
    log_path: Path
    args: list[str] = field(default_factory=list)

    @property
    def http_url(self) -> str:
        """host:port, as tritonclient.http.InferenceServerClient(url=...) takes it"""
        return f"127.0.0.1:{self.http_port}"

    @property
    def grpc_url(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.metrics_port}/metrics"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self, timeout_s: float = 60.0) -> int:
        """SIGTERM, wait; SIGKILL if it does not stop. The exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


def _http_status(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return None


@contextlib.contextmanager
def serve_process(repository: Path, log_dir: Path, *extra: str) -> Iterator[ServeProcess]:
    """`onnxc serve repository` on free loopback ports, ready, stopped at the end."""
    ports = [free_port() for _ in range(3)]
    log_path = log_dir / f"serve-{ports[0]}.log"
    args = [sys.executable, "-m", "onnxc.tools.run", "serve", str(repository),
            "--http-port", str(ports[0]), "--grpc-port", str(ports[1]),
            "--metrics-port", str(ports[2]), *extra]
    with open(log_path, "wb") as log_file:
        process = subprocess.Popen(args, stdout=log_file, stderr=subprocess.STDOUT,
                                   env={**os.environ, "PYTHONUNBUFFERED": "1"})
    served = ServeProcess(process, *ports, log_path, args)
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        ready_url = f"http://{served.http_url}/v2/health/ready"
        while _http_status(ready_url) != 200:
            if process.poll() is not None:
                pytest.fail(f"onnxc serve exited with {process.returncode}:\n{served.log()}")
            if time.monotonic() > deadline:
                pytest.fail(f"onnxc serve not ready after {READY_TIMEOUT_S} s:\n{served.log()}")
            time.sleep(0.1)  # polling a readiness endpoint: there is no event to wait on
        yield served
    finally:
        served.stop()


@pytest.fixture(scope="module")
def server(serving_repository, tmp_path_factory) -> Iterator[ServeProcess]:
    """One `onnxc serve` for a test module (explicit model control, so the repository
    tests can load and unload; every model but `broken` loaded at start)."""
    with serve_process(serving_repository, tmp_path_factory.mktemp("logs"),
                       "--model-control-mode", "explicit", "--load-model", "dense",
                       "--load-model", "types", "--load-model", "heavy") as served:
        yield served
