"""Run the lit/FileCheck suite (tests/lit) from pytest, so `pytest` alone covers everything.

`python -m lit.main` would exit 0 without running anything (the module has no __main__
guard), so lit's `main` is called explicitly, and the report must show passed tests.
"""

import re
import subprocess
import sys
from pathlib import Path

LIT_DIR = Path(__file__).resolve().parents[1] / "lit"
RUN_LIT = "import sys; from lit.main import main; sys.exit(main())"


def test_lit_suite():
    proc = subprocess.run(
        [sys.executable, "-c", RUN_LIT, "-sv", str(LIT_DIR)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    report = proc.stdout + proc.stderr
    passed = re.search(r"Passed\s*:\s*(\d+)", report)
    assert passed and int(passed.group(1)) > 0, f"lit ran no passing tests:\n{report}"
    assert proc.returncode == 0, f"lit failed:\n{report}"
