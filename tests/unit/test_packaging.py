"""Every package directory must be listed in pyproject's [tool.setuptools] packages.

An unlisted nested package still imports in an editable install but is silently left out
of the wheel, so this is caught here instead of on a user's machine.
"""

from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[2]


def _setuptools_config() -> dict:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["tool"]["setuptools"]


def test_every_package_dir_is_listed():
    config = _setuptools_config()
    listed = set(config["packages"])
    missing = []
    for package, directory in config["package-dir"].items():
        root = ROOT / directory
        for init in sorted(root.rglob("__init__.py")):
            parts = init.parent.relative_to(root).parts
            name = ".".join((package, *parts))
            if name not in listed:
                missing.append(f"{name} ({init.parent.relative_to(ROOT)})")
    assert not missing, f"missing from [tool.setuptools].packages: {missing}"


def test_every_listed_package_exists():
    config = _setuptools_config()
    roots = config["package-dir"]
    for name in config["packages"]:
        # the longest mapped prefix decides where the package lives
        prefix = max((p for p in roots if name == p or name.startswith(p + ".")), key=len)
        rest = name[len(prefix):].lstrip(".").split(".") if name != prefix else []
        directory = ROOT / roots[prefix] / Path(*rest)
        assert (directory / "__init__.py").is_file(), f"{name}: no {directory}/__init__.py"


def test_tests_are_not_a_package():
    """xDSL installs a top-level `tests` package; ours must never be importable as one."""
    inits = sorted((ROOT / "tests").rglob("__init__.py"))
    assert not inits, f"tests/ must have no __init__.py files: {inits}"


def test_console_scripts():
    with open(ROOT / "pyproject.toml", "rb") as f:
        scripts = tomllib.load(f)["project"]["scripts"]
    assert scripts["onnxc-opt"] == "onnxc.tools.opt:main"
    assert scripts["onnxc"] == "onnxc.tools.run:main"
