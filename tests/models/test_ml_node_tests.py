"""onnx's node tests of the ai.onnx.ml preprocessing ops (ArrayFeatureExtractor, Binarizer,
LabelEncoder: the ones onnx ships) through onnxc.backend, one process, a few seconds: each
must pass (the whole node suite, tests/models/node_suite.py, counts them among the rest)."""

from __future__ import annotations

import os
import re
import tempfile
import unittest

import onnx.backend.test
import pytest

import onnxc.backend

pytestmark = pytest.mark.models

NAMES = re.compile(r"^test_(ai_onnx_ml_)?(array_feature_extractor|binarizer|label_encoder_\w+)"
                   r"_cpu$")


def _cases() -> tuple[type, list[str]]:
    os.environ.setdefault("ONNX_HOME", tempfile.mkdtemp(prefix="onnxc-onnx-home-"))
    suite = onnx.backend.test.BackendTest(onnxc.backend, __name__)
    case = suite.test_cases["OnnxBackendNodeModelTest"]
    return case, sorted(n for n in dir(case) if NAMES.match(n))


def test_ml_node_tests_pass() -> None:
    case, names = _cases()
    assert len(names) >= 6, names  # onnx 1.23: 1 + 1 + 4
    result = unittest.TestResult()
    unittest.TestSuite(case(n) for n in names).run(result)
    problems = [(str(t), why.splitlines()[-1]) for t, why in
                (*result.errors, *result.failures)] + [(str(t), why) for t, why in
                                                      result.skipped]
    assert not problems, problems
