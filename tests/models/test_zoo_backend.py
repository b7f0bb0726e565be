"""onnx's own BackendTest on the nine model-zoo networks it ships, run through onnxc.backend.

The suite feeds its inputs and compares against the expected outputs shipped with onnx, with
its own tolerances (rtol 1e-3, atol 1e-7). It writes its generated input files under
$ONNX_HOME, which we point at a temporary directory so CI leaves no state behind.
"""

import os
import tempfile

import onnx.backend.test
import pytest

import onnxc.backend

os.environ.setdefault("ONNX_HOME", tempfile.mkdtemp(prefix="onnxc-onnx-home-"))

ZOO_TESTS = (
    "bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50",
    "shufflenet", "squeezenet", "vgg19", "zfnet512",
)

backend_test = onnx.backend.test.BackendTest(onnxc.backend, __name__)
for _name in ZOO_TESTS:
    backend_test.include(rf"^test_{_name}_cpu$")

pytestmark = pytest.mark.models
# Only the real-model class: the other classes would add ~4000 skipped node tests here.
globals()["OnnxBackendRealModelTest"] = backend_test.test_cases["OnnxBackendRealModelTest"]
