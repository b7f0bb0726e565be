"""`onnxc serve`'s command line: what it refuses before serving, as one `error:` line."""

from __future__ import annotations

import re
import socket
import subprocess
import sys

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
