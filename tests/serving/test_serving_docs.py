"""docs/serving.md stays true: its examples run as shown, and its tables name every flag,
HTTP route and metric the code has.

The quick start's scripts are taken from the page as they are (only the ports are changed
to free ones), run against a real `onnxc serve`, and their output compared with the
console block the page shows: words exactly, numbers to 1e-6 relative (the shown values
are printed float32 results; a different summation order in a future kernel may move the
last digit, not more).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import numpy as np

from onnxc.serving.http_app import build_app
from onnxc.serving.launcher import add_arguments
from onnxc.serving.statistics import _METRICS
from tests.serving.conftest import serve_process

PAGE = Path(__file__).resolve().parents[2] / "docs" / "serving.md"
NUMBER = re.compile(r"-?\d+\.\d*(?:e[-+]?\d+)?")


def _block(first_line: str) -> str:
    """The fenced block of the page whose first line is `first_line`."""
    blocks = re.findall(r"```(?:python|console)?\n(.*?)```", PAGE.read_text(), re.DOTALL)
    for block in blocks:
        if block.startswith(first_line):
            return block
    raise AssertionError(f"docs/serving.md has no block starting {first_line!r}")


def _same_output(shown: str, printed: str) -> None:
    assert NUMBER.sub("#", shown).split() == NUMBER.sub("#", printed).split(), printed
    np.testing.assert_allclose([float(n) for n in NUMBER.findall(printed)],
                               [float(n) for n in NUMBER.findall(shown)], rtol=1e-6)


def _run(script: str, cwd: Path) -> str:
    done = subprocess.run([sys.executable, "-c", script], cwd=cwd, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_quick_start_runs_as_shown(tmp_path):
    _run(_block("# make_repo.py"), tmp_path)
    with serve_process(tmp_path / "models", tmp_path, "--model-control-mode", "poll") as served:
        ports = {"127.0.0.1:8000": served.http_url, "127.0.0.1:8001": served.grpc_url}

        def ported(script: str) -> str:
            for default, actual in ports.items():
                script = script.replace(default, actual)
            return script

        shown = _block("$ python client.py").split("\n", 1)[1]
        _same_output(shown, _run(ported(_block("# client.py")), tmp_path))
        _run(ported(_block("# canary_grpc.py")), tmp_path)
        url = f"http://{served.http_url}/v2/repository/models/dense/traffic"
        with urllib.request.urlopen(url, timeout=30) as response:
            assert json.loads(response.read()) == {"weights": {"1": 100}}


def test_every_flag_route_and_metric_documented():
    page = PAGE.read_text()
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    flags = {f for action in parser._actions for f in action.option_strings
             if f.startswith("--")} - {"--help"}
    assert flags and not {f for f in flags if f"`{f}" not in page}, "flags not documented"
    # the page writes a route and its versioned twin as /v2/models/{m}[/versions/{v}]/...
    unversioned = page.replace("[/versions/{v}]", "")
    routes = {route.path.replace("/versions/{version}", "").replace("{model}", "{m}")
              for route in build_app(None).routes}
    assert not {r for r in routes if f"{r}`" not in unversioned}, "HTTP routes not documented"
    assert not {m for m in _METRICS if f"`{m}`" not in page}, "metrics not documented"
