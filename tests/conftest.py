"""Suite-wide setup: the tests get their own compile cache, never the user's ~/.cache/onnxc,
and OpenMP workers that sleep when idle."""

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
    # Threaded kernels: tests check results, not speed. Passive OpenMP workers sleep at once
    # instead of spinning, which keeps a CI box or a shared machine running several test
    # processes from losing whole scheduler slices per parallel region (runtime/threads.py).
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")


def pytest_unconfigure(config):
    if _cache_dir is not None:
        shutil.rmtree(_cache_dir, ignore_errors=True)
