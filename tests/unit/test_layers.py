"""The layer contract (pyproject.toml `[tool.importlinter]`): no module imports upward.

import-linter finds packages through the import path; onnxc's editable install maps
`onnxc.dialects` & co. to top-level folders, which its scanner cannot follow, so the
package is assembled as a tree of links first: the contract is checked on the source
files themselves.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SUBPACKAGES = ("dialects", "frontend", "passes", "lowering", "runtime", "serving")

pytest.importorskip("importlinter", reason="import-linter is in the test extra")


def _package_tree(into: Path, real_dirs: tuple[str, ...] = ()) -> Path:
    """`into`/onnxc laid out as the installed package, each entry a link to the source;
    the subpackages in `real_dirs` are real folders of links (so a test may add a file)."""
    package = into / "onnxc"
    package.mkdir(parents=True)
    for entry in (ROOT / "src" / "onnxc").iterdir():
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry)
    for name in SUBPACKAGES:
        if name in real_dirs:
            (package / name).mkdir()
            for entry in (ROOT / name).iterdir():
                if entry.name != "__pycache__":
                    (package / name / entry.name).symlink_to(entry)
        else:
            (package / name).symlink_to(ROOT / name)
    shutil.copy(ROOT / "pyproject.toml", into / "pyproject.toml")
    return into


def _lint(tree: Path) -> subprocess.CompletedProcess:
    script = "import sys; from importlinter.cli import lint_imports_command; " \
             "sys.exit(lint_imports_command())"
    return subprocess.run([sys.executable, "-c", script, "--no-cache"], cwd=tree,
                          env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=300)


def test_no_module_imports_from_a_layer_above_it(tmp_path):
    result = _lint(_package_tree(tmp_path))
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "1 kept, 0 broken" in result.stdout


def test_an_upward_import_breaks_the_contract(tmp_path):
    tree = _package_tree(tmp_path, real_dirs=("dialects",))
    (tree / "onnxc" / "dialects" / "upward_probe.py").write_text(
        "def f():\n    from onnxc.lowering.graph_to_loops import kernels\n")
    result = _lint(tree)
    assert result.returncode != 0
    assert "onnxc.dialects is not allowed to import onnxc.lowering" in result.stdout
    assert "onnxc.dialects.upward_probe -> onnxc.lowering.graph_to_loops.kernels" in result.stdout
