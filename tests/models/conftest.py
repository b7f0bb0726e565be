"""Model tests run twice, as users meet the compiler: cold, then warm.

A test that takes the `cache_pass` fixture runs once per pass (tests/models/cache_passes.py):
cold compiles afresh and fills the suite's compile cache, warm compiles the same model again,
must be a cache hit, and must give bit-identical outputs. Both check their outputs against the
test's own reference, so an entry that loads but computes something else fails either way.
"""

from __future__ import annotations

import pytest

from tests.models.cache_passes import CACHE_PASSES, CachePass


@pytest.fixture(params=CACHE_PASSES)
def cache_pass(request):
    test_id = request.node.nodeid.replace(f"-{request.param}]", "]").replace(
        f"[{request.param}]", "")
    state = CachePass(request.param, test_id)
    yield state
    state.finish()
