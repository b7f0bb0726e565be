"""onnx's node suite, shard 3 of 4 (every fourth test, from the fourth), cold then warm:
see tests/models/node_suite.py."""

import pytest

from tests.models.node_suite import check_shard

pytestmark = pytest.mark.models


def test_node_suite_shard_3_gives_the_same_results_from_a_warm_cache(tmp_path, monkeypatch):
    check_shard(3, tmp_path, monkeypatch)
