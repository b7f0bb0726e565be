"""InferenceServer versions: policies, poll mode, in-flight requests across a reload,
canary weights and rollback, per-version statistics.

Models and tolerances: tests/serving/core_models.py (answers within rtol 1e-5, atol 1e-5 of
onnx.reference: float32 sums of 8 products whose order may differ). Statistical checks
state their binomial bound where they make one.
"""

from __future__ import annotations

import asyncio
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest

from onnxc.serving.errors import ServingError
from onnxc.serving.messages import InferRequest
from onnxc.serving.server_core import InferenceServer
from tests.serving.core_models import (
    TOL,
    add_version,
    fixed_model,
    mlp_model,
    reference,
    serve,
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """mlp (versions 1, 2; no config: derived) and fixed (a given config)."""
    add_version(tmp_path, "mlp", 1, mlp_model(1))
    add_version(tmp_path, "mlp", 2, mlp_model(2))
    add_version(tmp_path, "fixed", 1, fixed_model())
    (tmp_path / "fixed" / "config.pbtxt").write_text('max_batch_size: 0\n')
    return tmp_path


@pytest.mark.parametrize(("policy", "served"), [
    ("", ["3"]), ("version_policy { latest { num_versions: 2 } }", ["2", "3"]),
    ("version_policy { all { } }", ["1", "2", "3"]),
    ("version_policy { specific { versions: [1, 3] } }", ["1", "3"])])
def test_version_policies(tmp_path: Path, policy: str, served: list[str]) -> None:
    for version in (1, 2, 3):
        add_version(tmp_path, "mlp", version, mlp_model(version))
    (tmp_path / "mlp" / "config.pbtxt").write_text(policy)

    async def body(server: InferenceServer):
        assert server.model_metadata("mlp")["versions"] == served
        x = np.ones((2, 4), np.float32)
        for version in served:
            response = await server.infer("mlp", version, InferRequest({"x": x}))
            np.testing.assert_allclose(response.outputs["y"], reference(
                mlp_model(int(version)), {"x": x})[0], **TOL)
    serve(tmp_path, body)


def test_poll_picks_up_new_removed_and_changed(repo: Path) -> None:
    """One poll at a time (poll_repository, what the background task runs): a new
    version, a new model, a changed config and removed folders take effect."""
    async def body(server: InferenceServer):
        assert server.model_metadata("mlp")["versions"] == ["2"]
        add_version(repo, "mlp", 3, mlp_model(3))
        add_version(repo, "late", 1, fixed_model())
        await server.poll_repository()
        assert server.model_metadata("mlp")["versions"] == ["3"]
        assert server.model_ready("late")
        (repo / "mlp" / "config.pbtxt").write_text(
            "max_batch_size: 2\nversion_policy { latest { num_versions: 2 } }\n")
        await server.poll_repository()
        assert server.model_metadata("mlp")["versions"] == ["2", "3"]
        assert server.model_config("mlp")["max_batch_size"] == 2
        shutil.rmtree(repo / "mlp" / "3")
        shutil.rmtree(repo / "late")
        await server.poll_repository()
        assert server.model_metadata("mlp")["versions"] == ["1", "2"]
        assert not server.model_ready("late")
        assert "late" not in {r["name"] for r in server.repository_index()}
        assert {s["name"] for s in server.statistics()["model_stats"]} == {"mlp", "fixed"}
        assert server.ready()
    serve(repo, body, model_control_mode="poll", poll_interval_s=3600)


def test_poll_task_runs_in_the_background(repo: Path) -> None:
    """With a short interval the server finds a new version by itself (waited for with a
    deadline, polling the metadata: no fixed sleep decides the outcome)."""
    async def body(server: InferenceServer):
        add_version(repo, "mlp", 5, mlp_model(5))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        while server.model_metadata("mlp")["versions"] != ["5"]:
            assert loop.time() < deadline, "poll did not load version 5 within 30 s"
            await asyncio.sleep(0.05)
    serve(repo, body, model_control_mode="poll", poll_interval_s=0.1)


def test_in_flight_request_finishes_on_its_version(repo: Path) -> None:
    """A request queued on version 2 when a poll replaces it by version 3 is answered by
    version 2; the reload waits for it before closing version 2, and new requests go to 3."""
    x = np.ones((1, 4), np.float32)

    async def body(server: InferenceServer):
        old = server.store.records["mlp"].versions[2]
        gate = threading.Event()
        old.executor.submit(gate.wait, 30)  # holds mlp v2's single thread
        in_flight = asyncio.create_task(server.infer("mlp", None, InferRequest({"x": x})))
        while old.inflight == 0:
            await asyncio.sleep(0)
        add_version(repo, "mlp", 3, mlp_model(3))
        poll = asyncio.create_task(server.poll_repository())
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        while server.model_metadata("mlp")["versions"] != ["3"]:
            assert loop.time() < deadline
            await asyncio.sleep(0.01)
        assert not poll.done() and not old.closed  # waiting for the request on v2
        new = await server.infer("mlp", None, InferRequest({"x": x}))
        assert new.model_version == "3"
        gate.set()
        answered = await in_flight
        await asyncio.wait_for(poll, 30)
        assert old.closed and answered.model_version == "2"
        np.testing.assert_allclose(answered.outputs["y"],
                                   reference(mlp_model(2), {"x": x})[0], **TOL)
    serve(repo, body, model_control_mode="poll", poll_interval_s=3600)


def test_load_is_refused_without_model_control(repo: Path) -> None:
    async def body(server: InferenceServer):
        with pytest.raises(ServingError) as error:
            await server.load_model("mlp")
        assert "model_control_mode" in error.value.message
    serve(repo, body)


def canary_repo(tmp_path: Path, traffic: str = "1:90,2:10") -> Path:
    for version in (1, 2):
        add_version(tmp_path, "mlp", version, mlp_model(version))
    (tmp_path / "mlp" / "config.pbtxt").write_text(
        "max_batch_size: 4\nversion_policy { all { } }\n"
        f'parameters {{ key: "traffic" value {{ string_value: "{traffic}" }} }}\n')
    return tmp_path


def test_canary_split_is_binomially_right(tmp_path: Path) -> None:
    """20,000 routings at 1:90,2:10 send 2,000 +- 212 to version 2: 5 standard deviations
    of Binomial(20000, 0.1) (sd = sqrt(20000 * 0.1 * 0.9) = 42.4), so a correct router
    fails this less than once in a million seeds."""
    async def body(server: InferenceServer):
        assert server.traffic("mlp") == {"1": 90, "2": 10}
        counts = {1: 0, 2: 0}
        for _ in range(20_000):
            loaded = server.store.route("mlp", None)
            loaded.release()
            counts[loaded.version] += 1
        assert abs(counts[2] - 2000) <= 212, counts
    serve(canary_repo(tmp_path), body)


def test_each_answer_is_from_the_version_that_served_it(tmp_path: Path) -> None:
    """Through infer, 400 requests split across the versions (2% <= share of v2 <= 20%:
    Binomial(400, 0.1) has sd 6, so 8..80 is over 5 sd wide); each answer equals that
    version's reference, and each version's statistics count exactly its requests."""
    rng = np.random.default_rng(5)
    xs = [rng.standard_normal((1 + i % 3, 4)).astype(np.float32) for i in range(400)]

    async def body(server: InferenceServer):
        responses = await asyncio.gather(*(server.infer("mlp", None, InferRequest({"x": x}))
                                           for x in xs))
        served = {"1": 0, "2": 0}
        for x, response in zip(xs, responses):
            served[response.model_version] += 1
            expected = reference(mlp_model(int(response.model_version)), {"x": x})[0]
            np.testing.assert_allclose(response.outputs["y"], expected, **TOL)
        assert 8 <= served["2"] <= 80, served
        stats = {s["version"]: s for s in server.statistics("mlp")["model_stats"]}
        for version, count in served.items():
            assert stats[version]["inference_stats"]["success"]["count"] == count
            assert stats[version]["inference_count"] == sum(
                x.shape[0] for x, r in zip(xs, responses) if r.model_version == version)
    serve(canary_repo(tmp_path), body)


def test_set_traffic_and_rollback(tmp_path: Path) -> None:
    """rollback() returns everything to the stable version (the majority before the last
    change) at once; rollback(v) to v; bad weights are refused."""
    x = np.ones((1, 4), np.float32)

    async def versions(server: InferenceServer, n: int = 50) -> set[str]:
        responses = await asyncio.gather(*(server.infer("mlp", None, InferRequest({"x": x}))
                                           for _ in range(n)))
        return {r.model_version for r in responses}

    async def body(server: InferenceServer):
        server.set_traffic("mlp", {"1": 50, "2": 50})
        assert server.traffic("mlp") == {"1": 50, "2": 50}
        assert await versions(server, 200) == {"1", "2"}  # each half: P(miss) = 2^-199
        server.rollback("mlp")
        assert server.traffic("mlp") == {"1": 100}
        assert await versions(server) == {"1"}
        server.rollback("mlp", "2")
        assert await versions(server) == {"2"}
        for bad in ({"3": 100}, {"1": -1}, {"1": 0}, {"x": 5}):
            with pytest.raises(ServingError) as error:
                server.set_traffic("mlp", bad)
            assert error.value.status == "INVALID_ARGUMENT"
        with pytest.raises(ServingError):
            server.rollback("mlp", "9")
        with pytest.raises(ServingError) as error:
            server.set_traffic("nope", {"1": 100})
        assert error.value.status == "NOT_FOUND"
    serve(canary_repo(tmp_path), body)


def test_rollback_under_load_loses_no_request(tmp_path: Path) -> None:
    """300 requests in flight while a 50:50 split is rolled back (to version 1: on a tie
    the older version is the stable one): every one is answered, by the version it
    reports, and after the rollback only version 1 answers."""
    rng = np.random.default_rng(6)
    xs = [rng.standard_normal((1, 4)).astype(np.float32) for _ in range(300)]

    async def body(server: InferenceServer):
        tasks = [asyncio.create_task(server.infer("mlp", None, InferRequest({"x": x})))
                 for x in xs]
        await asyncio.sleep(0)
        server.rollback("mlp")
        after = await server.infer("mlp", None, InferRequest({"x": xs[0]}))
        assert after.model_version == "1"
        responses = await asyncio.gather(*tasks)
        # routed before the rollback at 50:50: both versions served (P(not) = 2^-299)
        assert {r.model_version for r in responses} == {"1", "2"}
        for x, response in zip(xs, responses):
            np.testing.assert_allclose(response.outputs["y"], reference(
                mlp_model(int(response.model_version)), {"x": x})[0], **TOL)
    serve(canary_repo(tmp_path, "1:50,2:50"), body)


def test_statistics_and_metrics(repo: Path) -> None:
    """A success and a refusal are counted on the version that saw them, in the JSON and
    in Triton's metrics; batch_stats has the executed batch sizes."""
    from prometheus_client import generate_latest

    async def body(server: InferenceServer):
        await server.infer("mlp", None, InferRequest({"x": np.ones((3, 4), np.float32)}))
        with pytest.raises(ServingError):
            await server.infer("mlp", None, InferRequest({"x": np.ones((3, 5), np.float32)}))
        (stats,) = server.statistics("mlp", "2")["model_stats"]
        assert stats["inference_stats"]["success"]["count"] == 1
        assert stats["inference_stats"]["fail"]["count"] == 1
        assert stats["inference_count"] == 3 and stats["execution_count"] == 1
        assert [b["batch_size"] for b in stats["batch_stats"]] == [3]
        text = generate_latest(server.metrics_registry).decode()
        assert 'nv_inference_request_success{model="mlp",version="2"} 1.0' in text
        assert {s["name"] for s in server.statistics()["model_stats"]} == {"mlp", "fixed"}
        with pytest.raises(ServingError):
            server.statistics("nope")
    serve(repo, body)


def test_unload_waits_for_requests_in_flight(repo: Path) -> None:
    """unload_model stops routing at once (new requests UNAVAILABLE) and returns only
    after the request already running on the version got its answer."""
    x = np.ones((1, 4), np.float32)

    async def body(server: InferenceServer):
        await server.load_model("mlp")
        loaded = server.store.records["mlp"].versions[2]
        gate = threading.Event()
        loaded.executor.submit(gate.wait, 30)  # holds the version's only thread
        in_flight = asyncio.create_task(server.infer("mlp", None, InferRequest({"x": x})))
        while loaded.inflight == 0:
            await asyncio.sleep(0)
        unloading = asyncio.create_task(server.unload_model("mlp"))
        await asyncio.sleep(0)
        with pytest.raises(ServingError) as error:
            await server.infer("mlp", None, InferRequest({"x": x}))
        assert error.value.status == "UNAVAILABLE" and not unloading.done()
        gate.set()
        response = await in_flight
        await asyncio.wait_for(unloading, 30)
        assert loaded.closed and response.model_version == "2"
        np.testing.assert_allclose(response.outputs["y"],
                                   reference(mlp_model(2), {"x": x})[0], **TOL)
    serve(repo, body, model_control_mode="explicit")


def test_missing_repository_is_an_error(tmp_path: Path) -> None:
    from onnxc.errors import ModelLoadError

    with pytest.raises(ModelLoadError, match="not a directory"):
        serve(tmp_path / "nowhere", None)


@pytest.mark.parametrize(("traffic", "says"), [("1:90,x", "'x'"), ("1:50,7:50", "7")])
def test_bad_traffic_parameter_is_reported(tmp_path: Path, traffic: str, says: str) -> None:
    """A malformed traffic parameter, or one naming a version not loaded, is in the index;
    the versions still serve, to the highest version as without a split."""
    async def body(server: InferenceServer):
        rows = [r for r in server.repository_index() if r["state"] == "UNAVAILABLE"]
        assert len(rows) == 1 and "traffic" in rows[0]["reason"] and says in rows[0]["reason"]
        assert server.traffic("mlp") == {"2": 100}
        response = await server.infer("mlp", None, InferRequest({"x": np.ones((1, 4),
                                                                              np.float32)}))
        assert response.model_version == "2"
    serve(canary_repo(tmp_path, traffic), body)


def test_poll_applies_a_new_split_without_reloading(tmp_path: Path) -> None:
    """Editing only the traffic parameter of config.pbtxt changes the weights at the next
    poll; the versions are the same objects (not recompiled or warmed again)."""
    async def body(server: InferenceServer):
        before = dict(server.store.records["mlp"].versions)
        (tmp_path / "mlp" / "config.pbtxt").write_text(
            "max_batch_size: 4\nversion_policy { all { } }\n"
            'parameters { key: "traffic" value { string_value: "1:10,2:90" } }\n')
        await server.poll_repository()
        assert server.traffic("mlp") == {"1": 10, "2": 90}
        assert server.store.records["mlp"].versions == before
        assert all(server.store.records["mlp"].versions[v] is before[v] for v in before)
        config = server.model_config("mlp", "1")
        assert config["parameters"]["traffic"]["string_value"] == "1:10,2:90"
        server.rollback("mlp")  # the majority before this split: version 1 (90)
        assert server.traffic("mlp") == {"1": 100}
    serve(canary_repo(tmp_path), body, model_control_mode="poll", poll_interval_s=3600)
