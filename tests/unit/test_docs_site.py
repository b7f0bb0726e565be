"""The manual in docs/ builds as the mkdocs site without a warning (`mkdocs build --strict`):
a broken link, a page missing from the nav or a nav entry without its page fails here, in
the suite CI runs, rather than on the site later."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def build(config: Path, site_dir: Path) -> subprocess.CompletedProcess:
    """`mkdocs build --strict` of `config` into `site_dir` (never into the repository). Not
    with `-q`: that drops the warnings before --strict counts them, and the build passes."""
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config),
         "-d", str(site_dir)],
        check=False, capture_output=True, text=True, timeout=120, cwd=config.parent)


def test_docs_site_builds_without_warnings(tmp_path):
    pytest.importorskip("mkdocs", reason="mkdocs is not installed (it is in the test extra: "
                                          "python -m pip install -e '.[test]')")
    result = build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert result.returncode == 0, (
        "mkdocs build --strict failed (run `mkdocs build --strict -d /tmp/site` to see it):\n"
        + result.stdout + result.stderr)
    assert (tmp_path / "site" / "index.html").exists()


def test_a_broken_link_fails_the_build(tmp_path):
    """The check above is strict: a copy of the site with one link to a missing page fails."""
    pytest.importorskip("mkdocs", reason="mkdocs is not installed")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\nSee [nowhere](missing.md).\n", encoding="utf-8")
    config = tmp_path / "mkdocs.yml"
    config.write_text("site_name: t\ndocs_dir: docs\nnav:\n  - Home: index.md\n",
                      encoding="utf-8")
    result = build(config, tmp_path / "site")
    assert result.returncode != 0
    assert "missing.md" in result.stdout + result.stderr
