"""Suite-wide setup: the tests get their own compile cache, never the user's ~/.cache/onnxc.

The cache is shared by the whole session, so a model compiled twice is a cache hit the
second time, as for users; the model tests run cold and then warm on purpose
(tests/models/conftest.py)."""

import os
import shutil
import tempfile

_cache_dir: str | None = None


def pytest_configure(config):
    """Point $ONNXC_CACHE_DIR (inherited by subprocesses and lit's RUN lines) at a fresh
    temporary directory for this session, so no test reads or writes a shared cache."""
    global _cache_dir
    _cache_dir = tempfile.mkdtemp(prefix="onnxc-test-cache-")
    os.environ["ONNXC_CACHE_DIR"] = _cache_dir
    # The model tests' warm pass needs every entry the cold pass stored (about 2 GB of
    # weights): no eviction in a cache that is deleted at the end anyway.
    os.environ["ONNXC_CACHE_MAX_MB"] = "65536"
    # Verify the loops-level IR before LLVM IR is emitted, which compiles skip by default
    # (onnxc/pipeline.py verify_loops): the suite is where onnxc's own bugs show.
    os.environ.setdefault("ONNXC_VERIFY_IR", "1")
    # This CPU's GEMM blocking recorded as the default, as if measured: the suite's code
    # must not depend on what a search under the suite's load would pick (the search and
    # its record are tested in tests/unit/test_gemm_tuning.py, in directories of their own)
    # ($ONNXC_TUNING_DIR: tests that point $ONNXC_CACHE_DIR elsewhere keep this record)
    from onnxc.runtime import gemm_tuning
    from onnxc.target import host_target

    os.environ["ONNXC_TUNING_DIR"] = os.path.join(_cache_dir, "tuning")

    gemm_tuning.save(gemm_tuning.record_path(host_target()), gemm_tuning.search(
        host_target(), measure=lambda blocking: 1.0 if blocking == gemm_tuning.DEFAULT else 2.0))


def pytest_unconfigure(config):
    if _cache_dir is not None:
        shutil.rmtree(_cache_dir, ignore_errors=True)
