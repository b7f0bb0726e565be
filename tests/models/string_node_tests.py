"""onnx's node tests of the string ops and string tensors through onnxc.backend (a small
filter of the suite tests/models/node_suite.py runs whole):

    python tests/models/string_node_tests.py            # prints each outcome
"""

from __future__ import annotations

import re
import sys
import unittest

import onnx.backend.test

import onnxc.backend

STRING_TESTS = re.compile(  # names of the string tests of onnx 1.23
    r"^test_(regex_full_match\w*|string\w*|strnorm\w*|label_encoder\w*|ai_onnx_ml_label\w*"
    r"|cast\w*STRING\w*|castlike\w*STRING\w*|equal_string\w*|identity_sequence"
    r"|\w*_string\w*)_cpu$")


def outcomes(names: re.Pattern) -> dict[str, str]:
    """Each node test whose name `names` matches, with its outcome: 'passed', or why not."""
    suite = onnx.backend.test.BackendTest(onnxc.backend, __name__)
    case = suite.test_cases["OnnxBackendNodeModelTest"]
    results = {}
    for name in sorted(n for n in dir(case) if names.match(n)):
        result = unittest.TestResult()
        case(name).run(result)
        problems = result.failures or result.errors
        if problems:
            lines = [x for x in problems[0][1].strip().splitlines() if x.strip()]
            results[name] = ("failed: " if result.failures else "error: ") + lines[-1][:200]
        elif result.skipped:
            results[name] = "skipped: " + result.skipped[0][1][:200]
        else:
            results[name] = "passed"
    return results


if __name__ == "__main__":
    for name, outcome in outcomes(STRING_TESTS).items():
        print(f"{name}: {outcome}")
    sys.exit(0)
