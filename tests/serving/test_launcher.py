"""`onnxc serve`'s command line: what it refuses before serving, as one `error:` line."""

from __future__ import annotations

import socket
import subprocess
import sys

from tests.serving.conftest import free_port


def _serve(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "onnxc.tools.run", "serve", *args],
                          check=False, capture_output=True, text=True, timeout=120)


def test_missing_repository_refused(tmp_path):
    missing = tmp_path / "nothing"
    done = _serve(str(missing), "--http-port", "0", "--grpc-port", "-1", "--metrics-port", "-1")
    assert done.returncode == 1
    assert f"error: the model repository '{missing}' is not a directory" in done.stderr


def test_port_in_use_refused(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = _serve(str(tmp_path), "--http-port", str(port), "--grpc-port", "-1",
                      "--metrics-port", str(free_port()))
    assert done.returncode == 1
    assert f"error: cannot listen on 127.0.0.1:{port}: Address already in use" in done.stderr


def test_bad_flags_refused(tmp_path):
    done = _serve(str(tmp_path), "--http-port", "70000")
    assert done.returncode == 2 and "70000 is not a port" in done.stderr
    done = _serve(str(tmp_path), "--model-control-mode", "sometimes")
    assert done.returncode == 2 and "invalid choice: 'sometimes'" in done.stderr
