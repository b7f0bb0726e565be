"""onnx's node tests of the ai.onnx.ml tree ensembles (test_ai_onnx_ml_tree_ensemble_*:
opset 5's TreeEnsemble, a single tree and set membership) through onnxc.backend, one
process, a few seconds: each must pass (single_tree takes a double input)."""

from __future__ import annotations

import os
import re
import tempfile
import unittest

import onnx.backend.test
import pytest

import onnxc.backend

pytestmark = pytest.mark.models

NAMES = re.compile(r"^test_ai_onnx_ml_tree_ensemble\w*_cpu$")


def test_tree_ensemble_node_tests_pass() -> None:
    os.environ.setdefault("ONNX_HOME", tempfile.mkdtemp(prefix="onnxc-onnx-home-"))
    suite = onnx.backend.test.BackendTest(onnxc.backend, __name__)
    case = suite.test_cases["OnnxBackendNodeModelTest"]
    names = sorted(n for n in dir(case) if NAMES.match(n))
    assert len(names) >= 2, names  # onnx 1.23: set_membership, single_tree
    result = unittest.TestResult()
    unittest.TestSuite(case(n) for n in names).run(result)
    problems = [(str(t).split()[0], why.splitlines()[-1]) for t, why in
                (*result.errors, *result.failures)] + [(str(t).split()[0], why) for t, why in
                                                      result.skipped]
    assert not problems, problems
