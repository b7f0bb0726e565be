"""InferenceServer driven directly (no HTTP, no gRPC): loading, metadata, request checks.

Models (tests/serving/core_models.py) are tiny onnx.helper graphs with seeded weights: an
MLP with a symbolic batch ("N", so max_batch_size is derived) and a fixed-shape model
(max_batch_size 0). Answers are compared with onnx.reference.ReferenceEvaluator (in the
test only) with rtol 1e-5, atol 1e-5: float32 sums of 8 products whose order may differ
from the reference's.
Each test runs its own event loop (asyncio.run) on a fresh repository in tmp_path;
models compile through the session's compile cache, so only the first compile pays.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import onnx
import pytest

from onnxc.serving.errors import ServingError
from onnxc.serving.messages import InferRequest
from onnxc.serving.server_core import InferenceServer
from tests.serving.core_models import (
    TOL,
    add_version,
    fixed_model,
    gather_model,
    mlp_model,
    reference,
    serve,
    single_sample_model,
    strings_model,
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """mlp (versions 1, 2; no config: derived), fixed (config.pbtxt), broken (garbage)."""
    add_version(tmp_path, "mlp", 1, mlp_model(1))
    add_version(tmp_path, "mlp", 2, mlp_model(2))
    add_version(tmp_path, "fixed", 1, fixed_model())
    (tmp_path / "fixed" / "config.pbtxt").write_text(
        'name: "fixed"\nmax_batch_size: 0\n'
        'input [ { name: "a" data_type: TYPE_FP32 dims: [2, 3] } ]\n'
        'instance_group [ { count: 2 kind: KIND_CPU } ]\n')
    (tmp_path / "broken" / "1").mkdir(parents=True)
    (tmp_path / "broken" / "1" / "model.onnx").write_bytes(b"not an onnx model")
    return tmp_path


def test_start_loads_the_repository_and_reports_the_broken_model(repo: Path) -> None:
    """A model that cannot load is in the index with its reason; the others serve."""
    async def body(server: InferenceServer):
        assert server.live() and server.ready()
        index = {(r["name"], r["version"]): r for r in server.repository_index()}
        assert index[("mlp", "2")]["state"] == "READY"
        assert ("mlp", "1") not in index  # default policy: latest 1
        assert index[("fixed", "1")]["state"] == "READY"
        assert index[("broken", "1")]["state"] == "UNAVAILABLE"
        assert index[("broken", "1")]["reason"]
        assert {r["name"] for r in server.repository_index(ready_only=True)} == {"mlp",
                                                                                  "fixed"}
        assert not server.model_ready("broken")
        with pytest.raises(ServingError) as error:
            await server.infer("broken", None, InferRequest({}))
        assert error.value.status == "UNAVAILABLE"
        meta = server.server_metadata()
        assert meta["name"] == "onnxc" and "model_repository" in meta["extensions"]
    serve(repo, body)


def test_metadata_and_config_derived_and_given(repo: Path) -> None:
    """The MLP's symbolic batch gives max_batch_size > 0 and -1 in the metadata; the
    fixed model's config is completed with the output it did not list."""
    async def body(server: InferenceServer):
        meta = server.model_metadata("mlp", None)
        assert meta["platform"] == "onnxc" and meta["versions"] == ["2"]
        assert meta["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [-1, 4]}]
        assert meta["outputs"] == [{"name": "y", "datatype": "FP32", "shape": [-1, 3]}]
        config = server.model_config("mlp", None)
        assert config["max_batch_size"] > 0 and config["name"] == "mlp"
        fixed = server.model_config("fixed", "1")
        assert [o["name"] for o in fixed["output"]] == ["sum", "prod"]
        assert fixed["instance_group"][0]["count"] == 2
        # Triton's JSON: every field, 64-bit integers as numbers (perf_analyzer reads them)
        assert fixed["max_batch_size"] == 0 and fixed["input"][0]["dims"] == [2, 3]
        assert config["input"][0]["dims"] == [4]
        assert server.model_config_proto("fixed", None).max_batch_size == 0
        assert server.model_metadata("fixed", "1")["inputs"][1]["shape"] == [2, 3]
        for bad in (("nope", None), ("mlp", "1"), ("mlp", "x")):
            with pytest.raises(ServingError) as error:
                server.model_metadata(*bad)
            assert error.value.status in ("NOT_FOUND", "INVALID_ARGUMENT")
    serve(repo, body)


def test_infer_matches_the_reference(repo: Path) -> None:
    """Batched and fixed models answer what onnx.reference computes."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    a, b = (rng.standard_normal((2, 3)).astype(np.float32) for _ in range(2))

    async def body(server: InferenceServer):
        response = await server.infer("mlp", None, InferRequest({"x": x}, id="r1"))
        assert (response.model_name, response.model_version, response.id) == ("mlp", "2",
                                                                               "r1")
        np.testing.assert_allclose(response.outputs["y"],
                                   reference(mlp_model(2), {"x": x})[0], **TOL)
        response = await server.infer("fixed", "1", InferRequest(
            {"a": a, "b": b}, requested_outputs=["prod"]))
        assert list(response.outputs) == ["prod"]
        np.testing.assert_allclose(response.outputs["prod"], a * b, **TOL)
    serve(repo, body)


def test_concurrent_requests_on_several_threads(repo: Path) -> None:
    """32 requests at once on the 2-thread fixed model each get their own answer."""
    rng = np.random.default_rng(4)
    feeds = [{"a": rng.standard_normal((2, 3)).astype(np.float32),
              "b": rng.standard_normal((2, 3)).astype(np.float32)} for _ in range(32)]

    async def body(server: InferenceServer):
        responses = await asyncio.gather(*(server.infer("fixed", None, InferRequest(f))
                                           for f in feeds))
        for feed, response in zip(feeds, responses):
            np.testing.assert_allclose(response.outputs["sum"], feed["a"] + feed["b"], **TOL)
    serve(repo, body)


BAD_REQUESTS = {
    "unknown input": ({"x": np.zeros((1, 4), np.float32), "z": np.zeros(1)}, None, "'z'"),
    "missing input": ({}, None, "missing input"),
    "wrong datatype": ({"x": np.zeros((1, 4), np.float64)}, None, "FP64"),
    "wrong shape": ({"x": np.zeros((1, 5), np.float32)}, None, "[1, 5]"),
    "no batch dim": ({"x": np.zeros((4,), np.float32)}, None, "shape"),
    "batch too big": ({"x": np.zeros((99, 4), np.float32)}, None, "max_batch_size"),
    "empty batch": ({"x": np.zeros((0, 4), np.float32)}, None, "batch size 0"),
    "unknown output": ({"x": np.zeros((1, 4), np.float32)}, ["nope"], "'nope'"),
}


@pytest.mark.parametrize("case", sorted(BAD_REQUESTS))
def test_bad_requests_are_refused_with_the_reason(repo: Path, case: str) -> None:
    """Each refusal is INVALID_ARGUMENT naming the model and what was wrong."""
    inputs, outputs, says = BAD_REQUESTS[case]

    async def body(server: InferenceServer):
        with pytest.raises(ServingError) as error:
            await server.infer("mlp", None, InferRequest(inputs, requested_outputs=outputs))
        assert error.value.status == "INVALID_ARGUMENT"
        assert "mlp" in error.value.message and says in error.value.message
        # the server still answers
        response = await server.infer("mlp", None,
                                      InferRequest({"x": np.ones((1, 4), np.float32)}))
        assert response.outputs["y"].shape == (1, 3)
    serve(repo, body)


def test_request_size_limit(repo: Path) -> None:
    async def body(server: InferenceServer):
        with pytest.raises(ServingError) as error:
            await server.infer("mlp", None, InferRequest({"x": np.ones((2, 4), np.float32)}))
        assert error.value.status == "INVALID_ARGUMENT" and "16" in error.value.message
    serve(repo, body, max_request_bytes=16)


def test_unknown_model_is_not_found(repo: Path) -> None:
    async def body(server: InferenceServer):
        with pytest.raises(ServingError) as error:
            await server.infer("nope", None, InferRequest({}))
        assert error.value.status == "NOT_FOUND"
        with pytest.raises(ServingError) as error:
            await server.infer("mlp", "7", InferRequest({}))
        assert error.value.status == "NOT_FOUND" and "version 7" in error.value.message
        # a name is one folder of the repository, never a path out of it
        (repo.parent / "outside" / "1").mkdir(parents=True, exist_ok=True)
        for name in ("../outside", "mlp/1", ".", "", "a\0b"):
            with pytest.raises(ServingError) as error:
                await server.infer(name, None, InferRequest({}))
            assert error.value.status == "NOT_FOUND"
            with pytest.raises(ServingError) as error:
                await server.load_model(name)
            assert error.value.status == "NOT_FOUND"
    serve(repo, body, model_control_mode="explicit", startup_models=["mlp"])


def test_explicit_mode_load_with_config_and_unload(repo: Path) -> None:
    """Explicit mode loads nothing at start; load_model with a JSON config (Triton's
    override) serves the versions it asks for; unload stops serving."""
    async def body(server: InferenceServer):
        assert server.repository_index(ready_only=True) == []
        config = {"max_batch_size": 2, "version_policy": {"all": {}}}
        await server.load_model("mlp", json.dumps(config))
        assert server.model_metadata("mlp")["versions"] == ["1", "2"]
        assert server.model_config("mlp")["max_batch_size"] == 2
        x = np.ones((1, 4), np.float32)
        one = await server.infer("mlp", "1", InferRequest({"x": x}))
        np.testing.assert_allclose(one.outputs["y"], reference(mlp_model(1), {"x": x})[0],
                                   **TOL)
        with pytest.raises(ServingError) as error:
            await server.load_model("broken")
        assert error.value.status == "INVALID_ARGUMENT" and "broken" in error.value.message
        await server.unload_model("mlp")
        assert not server.model_ready("mlp")
        with pytest.raises(ServingError) as error:
            await server.infer("mlp", None, InferRequest({"x": x}))
        assert error.value.status == "UNAVAILABLE"
        rows = [r for r in server.repository_index() if r["name"] == "mlp"]
        assert rows == [{"name": "mlp", "version": "", "state": "UNAVAILABLE",
                         "reason": "unloaded"}]
    serve(repo, body, model_control_mode="explicit")


def test_loaded_models_are_out_of_the_collectors_walks(repo: Path) -> None:
    """After a load the heap is frozen (gc.freeze: full collections no longer walk the
    compiled models, a pause in the p99); an unload unfreezes, collects and freezes again,
    so cyclic garbage frozen with the loaded models is still freed."""
    import gc
    import weakref

    class Node:
        pass

    async def body(server: InferenceServer):
        node = Node()
        node.me = node  # a cycle only the collector frees
        gone = weakref.ref(node)
        await server.load_model("mlp")
        assert gc.get_freeze_count() > 1000
        del node
        gc.collect()
        assert gone() is not None  # frozen with the rest: out of the collector's walks
        await server.unload_model("mlp")
        assert gone() is None
        assert gc.get_freeze_count() > 0
    try:
        serve(repo, body, model_control_mode="explicit")
    finally:
        gc.unfreeze()


def test_shutdown_refuses_new_requests(repo: Path) -> None:
    async def body(server: InferenceServer):
        await server.shutdown()
        assert not server.live() and not server.ready()
        with pytest.raises(ServingError) as error:
            await server.infer("mlp", None, InferRequest({"x": np.ones((1, 4), np.float32)}))
        assert error.value.status == "UNAVAILABLE"
    serve(repo, body)


def test_artifact_version_folder(tmp_path: Path) -> None:
    """A version folder holding an `onnxc compile` artifact loads with onnxc.load."""
    import onnxc

    onnxc.compile_artifact(mlp_model(1), tmp_path / "mlp" / "1" / "artifact", quiet=True)
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)

    async def body(server: InferenceServer):
        assert server.model_metadata("mlp")["inputs"][0]["shape"] == [-1, 4]
        response = await server.infer("mlp", None, InferRequest({"x": x}))
        np.testing.assert_allclose(response.outputs["y"],
                                   reference(mlp_model(1), {"x": x})[0], **TOL)
    serve(tmp_path, body)


def test_fixed_batch_of_one_runs_per_sample(tmp_path: Path) -> None:
    """max_batch_size 4 on a model compiled for x[1,4]: a request of 3 runs sample by
    sample and answers all 3 rows; concurrent requests are batched by the batcher."""
    add_version(tmp_path, "single", 1, single_sample_model())
    (tmp_path / "single" / "config.pbtxt").write_text(
        "max_batch_size: 4\ndynamic_batching { max_queue_delay_microseconds: 1000 }\n")
    xs = [np.arange(4 * n, dtype=np.float32).reshape(n, 4) for n in (3, 1, 2)]

    async def body(server: InferenceServer):
        assert server.model_metadata("single")["inputs"][0]["shape"] == [-1, 4]
        responses = await asyncio.gather(*(server.infer("single", None, InferRequest(
            {"x": x})) for x in xs))
        for x, response in zip(xs, responses):
            np.testing.assert_array_equal(response.outputs["y"], x * 2)
    serve(tmp_path, body)


def test_run_time_check_failure_is_invalid_argument(tmp_path: Path) -> None:
    """An index past the table fails onnxc's check inside the model: INVALID_ARGUMENT
    with onnxc's message; a request batched with it still gets its answer."""
    add_version(tmp_path, "gather", 1, gather_model())
    (tmp_path / "gather" / "config.pbtxt").write_text(
        "max_batch_size: 4\ndynamic_batching { max_queue_delay_microseconds: 20000 }\n")

    async def body(server: InferenceServer):
        good, bad = await asyncio.gather(
            server.infer("gather", None, InferRequest({"i": np.array([1, 4])})),
            server.infer("gather", None, InferRequest({"i": np.array([7])})),
            return_exceptions=True)
        np.testing.assert_array_equal(good.outputs["y"], [[2, 3], [8, 9]])
        assert isinstance(bad, ServingError) and bad.status == "INVALID_ARGUMENT"
        assert "out of range" in bad.message and "Gather" in bad.message
    serve(tmp_path, body)


def test_string_tensors_are_bytes(tmp_path: Path) -> None:
    """A string model's tensors are BYTES: object arrays of UTF-8 bytes in and out."""
    add_version(tmp_path, "strings", 1, strings_model())
    words = np.array([b"Hello", "Stra\xdfe".encode(), b""], dtype=object)

    async def body(server: InferenceServer):
        meta = server.model_metadata("strings")
        assert meta["inputs"][0]["datatype"] == meta["outputs"][0]["datatype"] == "BYTES"
        response = await server.infer("strings", None, InferRequest({"s": words}))
        assert response.outputs["lower"].tolist() == [b"hello", "stra\xdfe".encode(), b""]
    serve(tmp_path, body)


BAD_CONFIGS = {
    "unparsable": ("max_batch_size: [", "config.pbtxt"),
    "wrong dims": ('input [ { name: "x" data_type: TYPE_FP32 dims: [5] } ]', "dims [5]"),
    "wrong type": ('input [ { name: "x" data_type: TYPE_INT32 dims: [4] } ]', "INT32"),
    "unknown input": ('input [ { name: "q" data_type: TYPE_FP32 dims: [4] } ]', "'q'"),
    "other name": ('name: "other"', "'other'"),
    "failing warmup": (('model_warmup [ { name: "w" batch_size: 1 inputs { key: "x" '
                        'value: { data_type: TYPE_FP32 dims: [7] zero_data: true } } } ]'),
                       "warmup failed"),
    "warmup file outside": (('model_warmup [ { name: "w" batch_size: 1 inputs { key: "x" '
                             'value: { data_type: TYPE_FP32 dims: [4] input_data_file: '
                             '"../config.pbtxt" } } } ]'), "not a file name"),
    "model file outside": ('default_model_filename: "../../x.onnx"', "not a file name"),
}


@pytest.mark.parametrize("case", sorted(BAD_CONFIGS))
def test_bad_config_is_reported_and_others_serve(tmp_path: Path, case: str) -> None:
    text, says = BAD_CONFIGS[case]
    add_version(tmp_path, "mlp", 1, mlp_model(1))
    add_version(tmp_path, "fixed", 1, fixed_model())
    (tmp_path / "mlp" / "config.pbtxt").write_text(
        ("max_batch_size: 4\n" if case != "unparsable" else "") + text)

    async def body(server: InferenceServer):
        rows = [r for r in server.repository_index() if r["name"] == "mlp"]
        assert [r["state"] for r in rows] == ["UNAVAILABLE"] and says in rows[0]["reason"]
        assert server.model_ready("fixed") and server.ready()
    serve(tmp_path, body)


def test_configured_warmup_runs_before_ready(tmp_path: Path) -> None:
    """Triton's model_warmup (zero, random and file data, with count) runs on load: the
    version is ready and its statistics count no warmup run as a request."""
    add_version(tmp_path, "mlp", 1, mlp_model(1))
    (tmp_path / "mlp" / "warmup").mkdir()
    np.ones((2, 4), np.float32).tofile(tmp_path / "mlp" / "warmup" / "x.bin")
    samples = [("zero_data: true", 1), ("random_data: true", 3),
               ('input_data_file: "x.bin"', 2)]
    (tmp_path / "mlp" / "config.pbtxt").write_text("max_batch_size: 4\n" + "".join(
        f'model_warmup [ {{ name: "w{i}" batch_size: {batch} count: 2 inputs {{ key: "x" '
        f'value: {{ data_type: TYPE_FP32 dims: [4] {data} }} }} }} ]\n'
        for i, (data, batch) in enumerate(samples)))

    async def body(server: InferenceServer):
        assert server.model_ready("mlp", "1") and server.ready()
        (stats,) = server.statistics("mlp")["model_stats"]
        assert stats["inference_count"] == 0 and stats["execution_count"] == 0
    serve(tmp_path, body)


def test_shutdown_drains_in_flight_requests(repo: Path) -> None:
    """shutdown refuses new requests at once and returns after the one in flight got its
    answer."""
    import threading

    x = np.ones((1, 4), np.float32)

    async def body(server: InferenceServer):
        loaded = server.store.records["mlp"].versions[2]
        gate = threading.Event()
        loaded.executor.submit(gate.wait, 30)  # holds the version's only thread
        in_flight = asyncio.create_task(server.infer("mlp", None, InferRequest({"x": x})))
        while loaded.inflight == 0:
            await asyncio.sleep(0)
        closing = asyncio.create_task(server.shutdown(drain_timeout_s=30))
        await asyncio.sleep(0)
        with pytest.raises(ServingError) as error:
            await server.infer("mlp", None, InferRequest({"x": x}))
        assert error.value.status == "UNAVAILABLE" and not closing.done()
        gate.set()
        response = await in_flight
        await asyncio.wait_for(closing, 30)
        np.testing.assert_allclose(response.outputs["y"],
                                   reference(mlp_model(2), {"x": x})[0], **TOL)
    serve(repo, body)


def test_load_config_names_the_model_file(tmp_path: Path) -> None:
    """A load request's config is used whole: its default_model_filename picks the file
    (a path there is refused)."""
    folder = tmp_path / "mlp" / "1"
    folder.mkdir(parents=True)
    onnx.save(mlp_model(3), folder / "other.onnx")

    async def body(server: InferenceServer):
        with pytest.raises(ServingError):
            await server.load_model("mlp")  # no model.onnx
        await server.load_model("mlp", json.dumps({"default_model_filename": "other.onnx"}))
        x = np.ones((2, 4), np.float32)
        response = await server.infer("mlp", None, InferRequest({"x": x}))
        np.testing.assert_allclose(response.outputs["y"],
                                   reference(mlp_model(3), {"x": x})[0], **TOL)
        with pytest.raises(ServingError) as error:
            await server.load_model("mlp", json.dumps({"default_model_filename": "../x"}))
        assert "not a file name" in error.value.message
    serve(tmp_path, body, model_control_mode="explicit")


def test_second_load_is_a_compile_cache_hit(repo: Path) -> None:
    """Loading model.onnx goes through onnxc's compile cache: a second server's load of
    the same file is a hit, and answers bit-identically to the first (cold or warm)."""
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)

    async def body(server: InferenceServer):
        response = await server.infer("mlp", None, InferRequest({"x": x}))
        return response.outputs["y"], server.store.records["mlp"].versions[2].model.from_cache

    first, _ = serve(repo, body)
    second, hit = serve(repo, body)
    assert hit
    np.testing.assert_array_equal(first, second)
