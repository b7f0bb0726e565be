"""Model tests run twice, as users meet the compiler: cold, then warm.

A test that takes the `cache_pass` fixture runs once per pass (tests/models/cache_passes.py):
cold compiles afresh and fills the suite's compile cache, warm compiles the same model again,
must be a cache hit, and must give bit-identical outputs. Both check their outputs against the
test's own reference, so an entry that loads but computes something else fails either way.
"""

from __future__ import annotations

import pytest

from tests.models.cache_passes import CACHE_PASSES, CachePass, case_id


def pytest_collection_modifyitems(items):
    """Each test's warm pass right after its cold pass (pytest would run every cold case
    first): what a test builds for both passes (its model, its reference outputs) is then
    made once and kept for one test at a time (see test_zoo_random_weights._case)."""
    def case_key(item):
        callspec = getattr(item, "callspec", None)
        if callspec is None or callspec.params.get("cache_pass") not in CACHE_PASSES:
            return None
        return case_id(item.nodeid, callspec.params["cache_pass"])

    first_seen: dict[str, int] = {}
    for index, item in enumerate(items):
        key = case_key(item)
        if key is not None:
            first_seen.setdefault(key, index)
    order = {id(item): (first_seen.get(case_key(item), index), index)
             for index, item in enumerate(items)}
    items.sort(key=lambda item: order[id(item)])


@pytest.fixture(params=CACHE_PASSES)
def cache_pass(request):
    state = CachePass(request.param, case_id(request.node.nodeid, request.param))
    yield state
    state.finish()
