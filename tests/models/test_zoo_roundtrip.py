"""`onnxc-opt` round-trips the graph-dialect IR of each of the nine model-zoo networks.

The importer's output is printed by `onnxc-opt model.onnx`; feeding that text back through
`onnxc-opt` (custom syntax) and through `--print-op-generic` and back must reproduce it exactly.
"""

import subprocess
import sys
from pathlib import Path

import pytest

from onnxc.zoo import ZOO_MODELS, zoo_path

OPT = [sys.executable, "-c", "from onnxc.tools.opt import main; main()"]


def _opt(args: list[str], text: str | None = None) -> str:
    proc = subprocess.run([*OPT, *args], input=text, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.models
@pytest.mark.parametrize("name", ZOO_MODELS)
def test_onnxc_opt_roundtrips_zoo_ir(name: str) -> None:
    printed = _opt([zoo_path(name)])
    assert "graph.conv" in printed and "func.func @main" in printed
    assert _opt([], printed) == printed
    generic = _opt(["--print-op-generic"], printed)
    assert '"graph.conv"' in generic
    assert _opt([], generic) == printed
    assert Path(zoo_path(name)).exists()
