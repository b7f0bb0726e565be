"""Parallel loops on onnxc's thread pool: thread-count detection, the outlined code run on 2
threads (which thread ran which chunk of iterations, via gettid), and the thread count through
compile/cache. The pool itself (claims, concurrency, a stopped helper): test_thread_pool.py."""

from __future__ import annotations

import ctypes
import os
import signal
import threading
import time

import numpy as np
import onnx
import pytest

import onnxc
from onnxc.compile_options import CompileOptions
from onnxc.errors import InvalidArgumentError
from onnxc.pipeline import loops_to_llvm_pipeline
from onnxc.runtime import cache, thread_pool, threads
from onnxc.runtime.jit import NativeModule
from tests.ir_helpers import jit_loops
from tests.single_op import single_op_model

needs_pool = pytest.mark.skipif(not thread_pool.supported(), reason="no thread pool here")

# ---------------------------------------------------------------- thread count detection


def _fake_cgroup(tmp_path, proc: str, files: dict[str, str]):
    root = tmp_path / "cgroup"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    proc_file = tmp_path / "proc_cgroup"
    proc_file.write_text(proc)
    return root, proc_file


def test_cgroup_v2_quota_is_found_up_the_tree(tmp_path):
    root, proc = _fake_cgroup(tmp_path, "0::/app/worker\n", {
        "app/cpu.max": "150000 100000\n",
        "app/worker/cpu.max": "max 100000\n",
    })
    assert threads.cgroup_cpu_limit(root, proc) == 1.5
    assert threads.available_cpus(root, proc) == min(2, len(_affinity()))


def test_cgroup_v2_unlimited_and_missing(tmp_path):
    root, proc = _fake_cgroup(tmp_path, "0::/\n", {"cpu.max": "max 100000\n"})
    assert threads.cgroup_cpu_limit(root, proc) is None
    assert threads.available_cpus(root, proc) == len(_affinity())
    assert threads.cgroup_cpu_limit(tmp_path / "absent", tmp_path / "absent") is None


def test_cgroup_v1_quota(tmp_path):
    root, proc = _fake_cgroup(tmp_path, "5:memory:/x\n3:cpu,cpuacct:/job\n", {
        "cpu,cpuacct/job/cpu.cfs_quota_us": "100000\n",
        "cpu,cpuacct/job/cpu.cfs_period_us": "100000\n",
        "cpu,cpuacct/cpu.cfs_quota_us": "-1\n",
        "cpu,cpuacct/cpu.cfs_period_us": "100000\n",
    })
    assert threads.cgroup_cpu_limit(root, proc) == 1.0
    assert threads.available_cpus(root, proc) == 1


def test_cgroup_smallest_limit_wins_and_rounds_up(tmp_path):
    root, proc = _fake_cgroup(tmp_path, "0::/a/b\n", {
        "a/cpu.max": "50000 100000\n", "a/b/cpu.max": "300000 100000\n",
    })
    assert threads.cgroup_cpu_limit(root, proc) == 0.5
    assert threads.available_cpus(root, proc) == 1  # never 0


def _affinity() -> set[int]:
    return os.sched_getaffinity(0)


def test_env_and_explicit_counts(monkeypatch):
    monkeypatch.setenv("ONNXC_NUM_THREADS", "3")
    assert threads.default_num_threads() == 3
    monkeypatch.setenv("ONNXC_NUM_THREADS", "zero")
    with pytest.raises(InvalidArgumentError, match="ONNXC_NUM_THREADS"):
        threads.default_num_threads()
    monkeypatch.delenv("ONNXC_NUM_THREADS")
    assert threads.default_num_threads() == threads.available_cpus()
    for bad in (0, -2, 1.5, True, threads.MAX_THREADS + 1):
        with pytest.raises(InvalidArgumentError, match="num_threads"):
            threads.resolve_num_threads(bad)
    assert threads.resolve_num_threads(1) == 1


# ---------------------------------------------------------------- outlined loops, run

# out[i] = 2 * x[i] for i in lb..ub, tid[i] = the kernel thread that ran iteration i, and
# `work` steps of a dependent float chain per iteration (so a sleeping worker has time to
# join). A marked inner loop (runs serially) and stack scratch hoisted to the entry
# (private per thread).
KERNEL = """
func.func private @gettid() -> i32
func.func @k(%x: memref<64xf32>, %out: memref<64xf32>, %tid: memref<64xi32>,
             %burn: memref<64xf32>, %lb: index, %ub: index, %work: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %two = arith.constant 2.0 : f32
  %decay = arith.constant 0.999 : f32
  %scratch = memref.alloca() : memref<4xf32>
  scf.for %i = %lb to %ub step %c1 {
    %t = func.call @gettid() : () -> i32
    memref.store %t, %tid[%i] : memref<64xi32>
    %a = memref.load %x[%i] : memref<64xf32>
    scf.for %j = %c0 to %c4 step %c1 {
      memref.store %a, %scratch[%j] : memref<4xf32>
    } {onnxc.parallel}
    %s = memref.load %scratch[%c1] : memref<4xf32>
    %b = arith.mulf %s, %two : f32
    memref.store %b, %out[%i] : memref<64xf32>
    %chain = scf.for %k = %c0 to %work step %c1 iter_args(%acc = %a) -> (f32) {
      %m = arith.mulf %acc, %decay : f32
      %n = arith.addf %m, %two : f32
      scf.yield %n : f32
    }
    memref.store %chain, %burn[%i] : memref<64xf32>
  } {onnxc.parallel}
  func.return
}
"""


def _compile_kernel(num_threads: int) -> tuple[NativeModule, str]:
    return jit_loops(KERNEL, num_threads)


def _run(native: NativeModule, lb: int, ub: int, work: int = 0):
    fn = native.ctypes_function("k", None, *[ctypes.c_void_p] * 4, *[ctypes.c_int64] * 3)
    x = np.arange(64, dtype=np.float32)
    out = np.full(64, -1, np.float32)
    tid = np.zeros(64, np.int32)
    burn = np.zeros(64, np.float32)
    fn(x.ctypes.data, out.ctypes.data, tid.ctypes.data, burn.ctypes.data, lb, ub, work)
    expected = np.full(64, -1, np.float32)
    expected[lb:ub] = 2 * x[lb:ub]
    np.testing.assert_array_equal(out, expected)
    return tid[lb:ub]


def _two_threads_ran(native: NativeModule, lb: int, ub: int, chunk: int) -> bool:
    """Run lb..ub with 50k-step chains per iteration: each chunk on one thread, at most
    the caller and one worker; True if both took part."""
    tids = _run(native, lb, ub, work=50_000)
    chunks = tids.reshape(-1, chunk)
    assert (chunks == chunks[:, :1]).all()  # a chunk runs on one thread
    assert len(set(tids) - {threading.get_native_id()}) <= 1  # the caller and one worker
    return len(set(tids)) == 2


def test_one_thread_emits_no_pool_call():
    assert loops_to_llvm_pipeline(1)[0] == "outline-parallel-loops"
    native, llvm_ir = _compile_kernel(1)
    assert thread_pool.LAUNCH not in llvm_ir
    me = threading.get_native_id()
    assert set(_run(native, 0, 64)) == {me}


@needs_pool
def test_two_threads_share_the_loop_in_chunks():
    native, llvm_ir = _compile_kernel(2)
    assert llvm_ir.count(f"call void @\"{thread_pool.LAUNCH}\"") == 1  # inner: serial
    # 64 iterations = 16 chunks of 4; the helper may start late (asleep, busy machine) and
    # find the loop done, but joins within a few tries of 3 ms loops
    assert any(_two_threads_ran(native, 0, 64, 4) for _ in range(20))
    uneven = _run(native, 3, 8)  # 5 iterations, 5 chunks
    assert len(set(uneven)) <= 2
    me = threading.get_native_id()
    for lb, ub in [(5, 5), (7, 3), (9, 10)]:  # empty, negative, one iteration: no region
        assert set(_run(native, lb, ub)) <= {me}
    # reloaded from object code (the disk cache's path), the pool's symbols still resolve
    again = NativeModule.from_object(native.object_code())
    assert any(_two_threads_ran(again, 0, 64, 4) for _ in range(20))


@needs_pool
def test_forked_child_runs_parallel_loops_serially():
    """The pool's helpers do not survive fork(): the child runs its loops serially, and the
    parent keeps its helpers."""
    native, _ = _compile_kernel(2)
    assert any(_two_threads_ran(native, 0, 64, 4) for _ in range(20))  # the pool exists
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: report how many threads ran the loop, never return into pytest
        try:
            os.write(write, str(len(set(_run(native, 0, 64, work=50_000)))).encode())
        finally:
            os._exit(0)
    os.close(write)
    deadline = time.monotonic() + 60
    while os.waitpid(pid, os.WNOHANG) == (0, 0):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the forked child hung in a parallel region")
        time.sleep(0.01)
    assert os.read(read, 16) == b"1"
    os.close(read)
    assert any(_two_threads_ran(native, 0, 64, 4) for _ in range(20))


@needs_pool
def test_repeated_regions_stay_correct():
    native, _ = _compile_kernel(2)
    for n in range(1, 64, 7):
        _run(native, 0, n)


# ---------------------------------------------------------------- compile and cache


def _matmul_model(m: int = 64, k: int = 48, n: int = 40) -> onnx.ModelProto:
    w = np.random.default_rng(0).standard_normal((k, n)).astype(np.float32)
    return single_op_model("MatMul", {"x": (np.float32, [m, k])}, {"y": (np.float32, [m, n])},
                           initializers={"w": w}, opset=17, ir_version=10)


def test_cache_key_includes_num_threads():
    model = _matmul_model()
    keys = {cache.cache_key(model, CompileOptions(num_threads=t)) for t in (1, 2, 4)}
    assert len(keys) == 3
    assert cache.cache_key(model, CompileOptions()) == \
        cache.cache_key(model, CompileOptions(num_threads=1))


@needs_pool
def test_compile_with_two_threads_matches_one_and_survives_the_cache(tmp_path):
    model = _matmul_model()
    x = np.random.default_rng(1).standard_normal((64, 48)).astype(np.float32)
    one = onnxc.compile(model, num_threads=1, cache_dir=False)
    two = onnxc.compile(model, num_threads=2, cache_dir=tmp_path)
    assert (one.num_threads, two.num_threads) == (1, 2)
    expected = one.run(None, {"x": x})[0]
    np.testing.assert_allclose(two.run(None, {"x": x})[0], expected, rtol=1e-5, atol=1e-5)
    hit = onnxc.compile(model, num_threads=2, cache_dir=tmp_path)
    assert "import" not in hit.compile_seconds and hit.num_threads == 2
    np.testing.assert_allclose(hit.run(None, {"x": x})[0], expected, rtol=1e-5, atol=1e-5)
