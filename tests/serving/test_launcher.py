"""`onnxc serve`'s command line: what it refuses before serving, as one `error:` line."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.serving.conftest import free_port


def _serve(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "onnxc.tools.run", "serve", *args],
                          check=False, capture_output=True, text=True, timeout=120)


def test_missing_repository_refused(tmp_path):
    missing = tmp_path / "nothing"
    done = _serve(str(missing), "--http-port", "0", "--grpc-port", "-1", "--metrics-port", "-1")
    assert done.returncode == 1
    assert f"error: the model repository '{missing}' is not a directory" in done.stderr


@pytest.mark.parametrize("listener", ["--http-port", "--grpc-port", "--metrics-port"])
def test_port_in_use_refused(tmp_path, listener):
    """Whichever listener cannot bind, the command says which address and exits 1 (the
    listeners already started are stopped, not left running)."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        ports = {flag: str(free_port()) for flag in
                 ("--http-port", "--grpc-port", "--metrics-port")}
        ports[listener] = str(port)
        done = _serve(str(tmp_path), *(item for pair in ports.items() for item in pair))
    assert done.returncode == 1, done.stderr
    assert re.search(f"error: .*127.0.0.1:{port}", done.stderr), done.stderr


def test_bad_flags_refused(tmp_path):
    done = _serve(str(tmp_path), "--http-port", "70000")
    assert done.returncode == 2 and "70000 is not a port" in done.stderr
    done = _serve(str(tmp_path), "--model-control-mode", "sometimes")
    assert done.returncode == 2 and "invalid choice: 'sometimes'" in done.stderr


def test_sigterm_while_a_model_compiles_exits_at_once(tmp_path):
    """A SIGTERM during the start-up compile of a big model (the zoo ResNet-50, cold: a
    compile cache of its own) stops the server at once with exit 0, instead of after the
    compile (7 to 20 s here)."""
    from onnxc.tools.run import default_model_path

    (tmp_path / "repo" / "resnet" / "1").mkdir(parents=True)
    shutil.copy(default_model_path(), tmp_path / "repo" / "resnet" / "1" / "model.onnx")
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "onnxc.tools.run", "serve", str(tmp_path / "repo"),
             "--http-port", "0", "--grpc-port", "-1", "--metrics-port", "-1"],
            stdout=out, stderr=subprocess.STDOUT,
            env={**os.environ, "ONNXC_CACHE_DIR": str(tmp_path / "cache")})
    try:
        deadline = time.monotonic() + 60
        while '"event": "listening"' not in log.read_text():
            assert process.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        signalled = time.monotonic()
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0, log.read_text()
        assert time.monotonic() - signalled < 4, log.read_text()
        assert '"event": "start_abandoned"' in log.read_text()
    finally:
        process.kill()
        process.wait()


def test_port_zero_listens_on_free_ports_it_logs(tmp_path):
    """--http-port/--grpc-port/--metrics-port 0: each listener on a free port, named in the
    `listening` line, where it answers; --access-log: a JSON line per HTTP request."""
    import tritonclient.grpc as grpcclient
    import tritonclient.http as httpclient

    (tmp_path / "repo").mkdir()
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "onnxc.tools.run", "serve", str(tmp_path / "repo"),
             "--http-port", "0", "--grpc-port", "0", "--metrics-port", "0", "--access-log"],
            stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while '"event": "started"' not in log.read_text():
            assert process.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        listening = next(json.loads(line) for line in log.read_text().splitlines()
                         if '"event": "listening"' in line)
        ports = [listening[key] for key in ("http_port", "grpc_port", "metrics_port")]
        assert all(port > 0 for port in ports), listening
        assert httpclient.InferenceServerClient(f"127.0.0.1:{ports[0]}").is_server_ready()
        assert grpcclient.InferenceServerClient(f"127.0.0.1:{ports[1]}").is_server_live()
        with urllib.request.urlopen(f"http://127.0.0.1:{ports[2]}/metrics", timeout=10) as page:
            assert page.status == 200
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0, log.read_text()
        access = [json.loads(line) for line in log.read_text().splitlines()
                  if line.startswith("{") and "uvicorn.access" in line]
        assert any("GET /v2/health/ready" in entry["message"] for entry in access), access
    finally:
        process.kill()
        process.wait()
