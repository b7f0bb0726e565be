"""Concurrency: one CompiledModel run from many threads at once, one cache shared by processes.

Threads: ctypes drops the GIL for the native call and every in-flight run gets its own
arena (CompiledModel keeps a pool), so 8 threads running one model at once must give
exactly the outputs of serial runs. Processes: 4 compiles of one model into one cache dir,
started together behind a barrier, must leave one whole, loadable entry and no temp files.
"""

import multiprocessing as mp
import threading

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import onnxc
from onnxc.runtime import cache

N = 128  # big enough that a run lasts long enough for runs to overlap, even on a loaded
         # machine (48 once saw no overlap while another test process kept both cores busy)


def _mlp() -> onnx.ModelProto:
    """y = softmax(relu(x @ w1 + b1) @ w2): intermediates live in the arena, so two runs
    sharing one arena would corrupt each other."""
    rng = np.random.default_rng(0)
    w1 = (rng.standard_normal((N, N)) / np.sqrt(N)).astype(np.float32)
    b1 = rng.standard_normal(N).astype(np.float32)
    w2 = (rng.standard_normal((N, N)) / np.sqrt(N)).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"]),
        helper.make_node("Add", ["h", "b1"], ["hb"]),
        helper.make_node("Relu", ["hb"], ["r"]),
        helper.make_node("MatMul", ["r", "w2"], ["z"]),
        helper.make_node("Softmax", ["z"], ["y"], axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [N, N])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [N, N])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"),
         numpy_helper.from_array(w2, "w2")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _inputs(count: int) -> list[np.ndarray]:
    rng = np.random.default_rng(1)
    return [rng.standard_normal((N, N)).astype(np.float32) for _ in range(count)]


def test_eight_threads_match_serial_runs():
    model = onnxc.compile(_mlp(), cache_dir=False)
    xs = _inputs(8)
    serial = [model(x)[0] for x in xs]
    rounds = 40
    results: dict[int, list[np.ndarray]] = {}
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def worker(t: int) -> None:
        try:
            barrier.wait()
            # Each thread cycles through every input, so threads run different data at once.
            results[t] = [model(xs[(t + r) % 8])[0] for r in range(rounds)]
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors, errors
    for t in range(8):
        for r, out in enumerate(results[t]):
            np.testing.assert_array_equal(out, serial[(t + r) % 8], err_msg=f"thread {t} run {r}")
    # Runs overlapped (the GIL was released during native calls), each with its own arena,
    # and the pool never outgrows the number of simultaneous callers.
    assert 2 <= model.arena_count <= 8


def test_runs_after_threads_reuse_the_pool():
    model = onnxc.compile(_mlp(), cache_dir=False)
    x = _inputs(1)[0]
    expected = model(x)[0]
    threads = [threading.Thread(target=model, args=(x,)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    count = model.arena_count
    for _ in range(20):
        np.testing.assert_array_equal(model(x)[0], expected)
    assert model.arena_count == count  # serial runs take a free arena, make none


def _compile_in_child(path: str, cache_dir: str, barrier, queue) -> None:
    barrier.wait()
    model = onnxc.compile(path, cache_dir=cache_dir)
    queue.put((sorted(model.compile_seconds), model(_inputs(1)[0])[0]))


def test_four_processes_compiling_into_one_cache(tmp_path):
    path = tmp_path / "mlp.onnx"
    onnx.save(_mlp(), path)
    cache_dir = tmp_path / "cache"
    expected = onnxc.compile(_mlp(), cache_dir=False)(_inputs(1)[0])[0]
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(4)
    queue = ctx.Queue()
    procs = [ctx.Process(target=_compile_in_child, args=(str(path), str(cache_dir), barrier, queue))
             for _ in range(4)]
    for proc in procs:
        proc.start()
    outputs = [queue.get(timeout=240) for _ in procs]
    for proc in procs:
        proc.join(60)
        assert proc.exitcode == 0
    for _stages, y in outputs:
        np.testing.assert_array_equal(y, expected)
    entries = list(cache_dir.rglob("*.onnxc"))
    assert len(entries) == 1
    assert not list(cache_dir.rglob("*.tmp"))
    # Load the entry by its key (the file name): recomputing the key here could differ if
    # onnxc's source changed meanwhile, since the key hashes it.
    hit = cache.load(cache_dir, entries[0].stem)
    assert hit is not None
    np.testing.assert_array_equal(hit(_inputs(1)[0])[0], expected)
