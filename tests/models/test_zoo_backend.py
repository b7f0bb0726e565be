"""onnx's own BackendTest on the nine model-zoo networks it ships, run through onnxc.backend.

The suite feeds its inputs and compares against the expected outputs shipped with onnx, with
its own tolerances (rtol 1e-3, atol 1e-7). It writes its generated input files under
$ONNX_HOME, which we point at a temporary directory so CI leaves no state behind. The nine
run twice: cold, then warm from the compile cache.
"""

import os
import tempfile
from unittest import mock

import onnx.backend.test
import pytest

import onnxc.backend
from tests.models.cache_passes import compile_warm

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
OnnxBackendRealModelTest = backend_test.test_cases["OnnxBackendRealModelTest"]

SLOW_NETS = ("densenet121", "inception_v2")
"""The two largest compiles (45-60 s each on a 2-core machine): with `-m slow`. Their random-
weight runs against onnxruntime (test_zoo_random_weights.py) stay in the default run; these
shipped models' weights are mostly constant, so the real-weight check adds little there."""
for _name in SLOW_NETS:
    _method = f"test_{_name}_cpu"
    setattr(OnnxBackendRealModelTest, _method,
            pytest.mark.slow(getattr(OnnxBackendRealModelTest, _method)))


class OnnxBackendRealModelWarmCacheTest(OnnxBackendRealModelTest):
    """The same nine again, every `prepare` answered from the compile cache (the class above
    filled it; run alone, each test fills it first): a hit must pass the suite's checks as
    the fresh compile did."""

    def setUp(self):
        patcher = mock.patch.object(onnxc.backend, "compile_model", compile_warm)
        patcher.start()
        self.addCleanup(patcher.stop)
